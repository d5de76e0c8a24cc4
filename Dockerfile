# ctxgate image: `ctxgate` (default command: the proxy on 0.0.0.0:8080) and `ctxgate-mock` (the mock upstream).
#
#   docker build -t ctxgate .
#   docker run -p 8080:8080 -v ctxgate-data:/data -e CTXGATE_UPSTREAM_URL=https://api.openai.com/v1 ctxgate
#
# Build args (defaults pull from Docker Hub; CI passes locally made images, see docker/test.sh):
#   RUST_VERSION, DEBIAN_RELEASE  pin the toolchain and the Debian release of both stages;
#   BUILD_IMAGE                   the build stage's base: a Rust toolchain with gcc and libc6-dev;
#   RUNTIME_IMAGE                 the runtime stage's base: a small Debian.
ARG RUST_VERSION=1.95.0
ARG DEBIAN_RELEASE=bookworm
ARG BUILD_IMAGE=rust:${RUST_VERSION}-slim-${DEBIAN_RELEASE}
ARG RUNTIME_IMAGE=debian:${DEBIAN_RELEASE}-slim

FROM ${BUILD_IMAGE} AS build
WORKDIR /src
ENV CARGO_TERM_COLOR=never
# Dependencies first, from stub sources, so this layer is rebuilt only when Cargo.toml or Cargo.lock change (every
# [[bench]] Cargo.toml names gets a stub, or cargo refuses the manifest).
COPY Cargo.toml Cargo.lock ./
RUN mkdir -p src/bin benches \
    && echo 'fn main() {}' > src/main.rs \
    && echo 'fn main() {}' > src/bin/ctxgate-mock.rs \
    && touch src/lib.rs \
    && for bench in $(awk '/^\[\[bench\]\]/ { b = 1; next } b && /^name/ { gsub(/"/, "", $3); print $3; b = 0 }' Cargo.toml); do \
         echo 'fn main() {}' > "benches/$bench.rs"; done \
    && cargo build --release --locked --bins \
    && rm -rf src benches
COPY src ./src
COPY benches ./benches
# The stubs' artifacts may look newer than the real sources' copied timestamps: touch them so cargo rebuilds.
RUN touch src/main.rs src/lib.rs src/bin/ctxgate-mock.rs \
    && cargo build --release --locked --bins \
    && cp target/release/ctxgate target/release/ctxgate-mock /usr/local/bin/

FROM ${RUNTIME_IMAGE}
ARG UID=10001
RUN groupadd --system --gid "$UID" ctxgate \
    && useradd --system --uid "$UID" --gid ctxgate --home-dir /data --no-create-home --shell /usr/sbin/nologin ctxgate \
    && mkdir -p /data /etc/ctxgate \
    && chown ctxgate:ctxgate /data \
    && chmod 0700 /data
COPY --from=build /usr/local/bin/ctxgate /usr/local/bin/ctxgate-mock /usr/local/bin/
# The baked-in config; mount a file over it (or set CTXGATE_* variables, which win over the file) to change it.
COPY config/ctxgate.toml /etc/ctxgate/ctxgate.toml
WORKDIR /data
ENV CTXGATE_STORE_PATH=/data/ctxgate.redb
USER ctxgate
# The store: a named volume or a host directory writable by uid 10001.
VOLUME ["/data"]
EXPOSE 8080
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s --retries=3 \
    CMD ["ctxgate", "health", "--url", "http://127.0.0.1:8080/healthz"]
CMD ["ctxgate", "serve", "--config", "/etc/ctxgate/ctxgate.toml", "--listen", "0.0.0.0:8080"]

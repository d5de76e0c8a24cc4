#!/usr/bin/env bash
# Makes, without any container registry, the two base images the top-level Dockerfile is built from in CI:
#   ctxgate-ci/debian:<release>-minbase  a `debootstrap --variant=minbase` root, imported with `docker import`
#                                        (the runtime stage's base);
#   ctxgate-ci/rust:<version>-<release>  the same root plus gcc, libc6-dev, pkg-config and a copy of this machine's
#                                        Rust toolchain, plus the crates of Cargo.lock from `cargo vendor` with a
#                                        cargo config that builds offline from them (the build stage's base).
# Each image is made once and reused while it exists (its tag names what it holds: the release, the toolchain
# version, a hash of Cargo.lock). Prints the build args for the Dockerfile on its last two lines.
# Usage: docker/ci/base-images.sh   (root, a running dockerd; env DEBIAN_RELEASE, DEBIAN_MIRROR, CTXGATE_CI_CACHE)
set -euo pipefail
cd "$(dirname "$0")/../.."
RELEASE="${DEBIAN_RELEASE:-bookworm}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
CACHE="${CTXGATE_CI_CACHE:-/var/cache/ctxgate-ci}"
SYSROOT="$(rustc --print sysroot)"
RUST_VERSION="$(rustc --version | awk '{print $2}')"
LOCK_HASH="$(sha256sum Cargo.lock | cut -c1-12)"
RUNTIME_IMAGE="ctxgate-ci/debian:${RELEASE}-minbase"
TOOLCHAIN_IMAGE="ctxgate-ci/rust-toolchain:${RUST_VERSION}-${RELEASE}"
BUILD_IMAGE="ctxgate-ci/rust:${RUST_VERSION}-${RELEASE}-${LOCK_HASH}"

log() { printf '[base-images] %s\n' "$*" >&2; }
have_image() { docker image inspect "$1" >/dev/null 2>&1; }

mkdir -p "$CACHE"
ROOT="$CACHE/rootfs-$RELEASE"
if ! have_image "$RUNTIME_IMAGE" || ! have_image "$TOOLCHAIN_IMAGE"; then
  if [ ! -e "$ROOT/.complete" ]; then
    log "debootstrap --variant=minbase $RELEASE into $ROOT"
    rm -rf "$ROOT"
    debootstrap --variant=minbase "$RELEASE" "$ROOT" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
      || { tail -20 "$CACHE/debootstrap.log" >&2; exit 1; }
    rm -rf "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/lib/apt/lists/*
    touch "$ROOT/.complete"
  fi
fi
if ! have_image "$RUNTIME_IMAGE"; then
  log "docker import $RUNTIME_IMAGE"
  tar -C "$ROOT" --exclude=./.complete -c . | docker import -c 'CMD ["/bin/bash"]' - "$RUNTIME_IMAGE" >/dev/null
fi
if ! have_image "$TOOLCHAIN_IMAGE"; then
  log "$TOOLCHAIN_IMAGE: gcc, libc6-dev, pkg-config and the Rust toolchain $RUST_VERSION from $SYSROOT"
  docker rm -f ctxgate-ci-toolchain >/dev/null 2>&1 || true
  docker run --name ctxgate-ci-toolchain "$RUNTIME_IMAGE" bash -c \
    'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev pkg-config >/dev/null && rm -rf /var/lib/apt/lists/*'
  docker export ctxgate-ci-toolchain >"$CACHE/toolchain-root.tar"
  docker rm ctxgate-ci-toolchain >/dev/null
  # Append the toolchain (without its documentation) under /usr/local/rust to the exported root.
  tar -C "$SYSROOT" --exclude=./share/doc --transform 's,^\.,usr/local/rust,' -rf "$CACHE/toolchain-root.tar" .
  docker import \
    -c 'ENV PATH=/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'ENV CARGO_HOME=/usr/local/cargo' \
    -c 'CMD ["/bin/bash"]' \
    "$CACHE/toolchain-root.tar" "$TOOLCHAIN_IMAGE" >/dev/null
  rm -f "$CACHE/toolchain-root.tar"
fi
if ! have_image "$BUILD_IMAGE"; then
  log "$BUILD_IMAGE: the crates of Cargo.lock vendored, cargo offline"
  CTX="$(mktemp -d)"
  trap 'rm -rf "$CTX"' EXIT
  cargo vendor --locked --versioned-dirs "$CTX/vendor" >/dev/null 2>"$CACHE/vendor.log" \
    || { tail -20 "$CACHE/vendor.log" >&2; exit 1; }
  cat >"$CTX/config.toml" <<'TOML'
[source.crates-io]
replace-with = "vendored-sources"

[source.vendored-sources]
directory = "/usr/local/cargo/vendor"

[net]
offline = true
TOML
  cat >"$CTX/Dockerfile" <<DOCKERFILE
FROM $TOOLCHAIN_IMAGE
COPY vendor /usr/local/cargo/vendor
COPY config.toml /usr/local/cargo/config.toml
DOCKERFILE
  docker build -q -t "$BUILD_IMAGE" "$CTX" >/dev/null
fi
echo "BUILD_IMAGE=$BUILD_IMAGE"
echo "RUNTIME_IMAGE=$RUNTIME_IMAGE"

# The scale profile's Redis (docker/docker-compose.yml, profile `scale`): Debian's redis-server (7.0 on bookworm;
# ctxgate needs >= 7.0 for EXPIRETIME) on a plain Debian, so no registry image is needed. The settings ctxgate's
# store relies on (maxmemory with volatile-lru, append-only persistence) are the compose service's command.
#
#   docker build -f docker/scale/redis.Dockerfile -t ctxgate-redis docker/scale
#
# Build arg BASE_IMAGE: any Debian (default debian:bookworm-slim; CI passes the debootstrap image of
# docker/ci/base-images.sh).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /var/lib/redis \
    && chown redis:redis /var/lib/redis
USER redis
WORKDIR /var/lib/redis
VOLUME ["/var/lib/redis"]
EXPOSE 6379
HEALTHCHECK --interval=5s --timeout=3s --retries=5 CMD ["redis-cli", "ping"]
CMD ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--dir", "/var/lib/redis"]

# The scale profile's load balancer (docker/docker-compose.yml, profile `scale`): Debian's nginx on a plain Debian,
# with docker/scale/nginx.conf (round robin over the two ctxgate replicas, streaming unbuffered, HTTP/1.1 keepalive
# to the replicas).
#
#   docker build -f docker/scale/nginx.Dockerfile -t ctxgate-lb docker/scale
#
# Build arg BASE_IMAGE: any Debian (default debian:bookworm-slim; CI passes the debootstrap image of
# docker/ci/base-images.sh).
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nginx >/dev/null \
    && rm -rf /var/lib/apt/lists/* /etc/nginx/sites-enabled/* \
    && ln -sf /dev/stderr /var/log/nginx/error.log
COPY nginx.conf /etc/nginx/nginx.conf
EXPOSE 8080
# SIGQUIT: nginx's graceful stop (in-flight requests, streams included, finish first).
STOPSIGNAL SIGQUIT
HEALTHCHECK --interval=5s --timeout=3s --retries=5 CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8080"]
CMD ["nginx", "-g", "daemon off;"]

#!/usr/bin/env bash
# The image, really built and run, with no container registry: installs the engine and compose from Debian's
# packages (docker.io, docker-compose, debootstrap) when missing, starts dockerd when none answers, makes the base
# images locally (docker/ci/base-images.sh), builds the top-level Dockerfile with those as build args, brings the
# compose `demo` profile up, runs docker/smoke.sh against it, checks the container runs as non-root, that
# `docker compose stop` lets an in-flight stream finish, and that the store survives `down` + `up`, then tears the
# stack down. Run as root (CI does, from .ci/run). Images and the build cache stay in the engine for the next run.
#
# Environment: CTXGATE_CI_IMAGE (tag built, default ctxgate:ci), CTXGATE_CI_PORT_BASE (published ports are
# BASE+0 ctxgate, BASE+1 ctxgate-demo, BASE+10 mock; default 28080), DOCKERD_LOG (default /var/log/ctxgate-dockerd.log).
set -euo pipefail
cd "$(dirname "$0")/.."
T0=$SECONDS
step() { printf '\n=== [docker %4ds] %s\n' $((SECONDS - T0)) "$*"; }
die() { printf 'docker/test.sh: FAIL: %s\n' "$*" >&2; exit 1; }

IMAGE="${CTXGATE_CI_IMAGE:-ctxgate:ci}"
BASE_PORT="${CTXGATE_CI_PORT_BASE:-28080}"
export CTXGATE_IMAGE="$IMAGE"
export CTXGATE_PORT="$BASE_PORT"
export CTXGATE_DEMO_PORT=$((BASE_PORT + 1))
export CTXGATE_MOCK_PORT=$((BASE_PORT + 10))
export COMPOSE_PROJECT_NAME=ctxgate-ci
PROXY="http://127.0.0.1:$CTXGATE_PORT"
DEMO="http://127.0.0.1:$CTXGATE_DEMO_PORT"
MOCK="http://127.0.0.1:$CTXGATE_MOCK_PORT"

step "engine and compose from Debian's packages"
missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v docker-compose >/dev/null || missing+=(docker-compose)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
docker --version
docker-compose --version
COMPOSE=(docker-compose -f docker/docker-compose.yml --profile demo)

if ! docker info >/dev/null 2>&1; then
  step "starting dockerd"
  DOCKERD_LOG="${DOCKERD_LOG:-/var/log/ctxgate-dockerd.log}"
  nohup dockerd >"$DOCKERD_LOG" 2>&1 &
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { tail -20 "$DOCKERD_LOG" >&2; die "dockerd did not start"; }
fi
docker info --format 'engine {{.ServerVersion}}, storage {{.Driver}}, cgroup v{{.CgroupVersion}}'

step "base images (made locally: debootstrap minbase + docker import; build base with the machine's Rust toolchain and vendored crates)"
base_args="$(docker/ci/base-images.sh | grep -E '^(BUILD|RUNTIME)_IMAGE=')"
BUILD_IMAGE="$(sed -n 's/^BUILD_IMAGE=//p' <<<"$base_args")"
RUNTIME_IMAGE="$(sed -n 's/^RUNTIME_IMAGE=//p' <<<"$base_args")"
echo "BUILD_IMAGE=$BUILD_IMAGE RUNTIME_IMAGE=$RUNTIME_IMAGE"

step "docker build (the Dockerfile unchanged, only its base-image build args set)"
build_start=$SECONDS
docker build --build-arg "BUILD_IMAGE=$BUILD_IMAGE" --build-arg "RUNTIME_IMAGE=$RUNTIME_IMAGE" -t "$IMAGE" . \
  2>&1 | grep -vE '(Compiling|Downloaded|Downloading) [a-z]' || die "docker build failed"
docker image inspect "$IMAGE" >/dev/null || die "docker build failed"
echo "docker build took $((SECONDS - build_start)) s; image $(docker image inspect -f '{{.Size}}' "$IMAGE") bytes"

teardown() {
  local rc=$?
  step "teardown"
  if [ "$rc" -ne 0 ]; then
    "${COMPOSE[@]}" ps || true
    "${COMPOSE[@]}" logs --tail=40 || true
  fi
  "${COMPOSE[@]}" down -v --remove-orphans || true
  printf '\n=== docker/test.sh %s after %d s\n' "$([ "$rc" -eq 0 ] && echo passed || echo FAILED)" $((SECONDS - T0))
}
trap teardown EXIT

wait_healthy() {  # SERVICE URL: until URL answers 2xx and the engine reports the service's healthcheck healthy
  local service="$1" url="$2" id state=""
  id="$("${COMPOSE[@]}" ps -q "$service")"
  [ -n "$id" ] || die "$service is not running"
  for _ in $(seq 1 90); do
    state="$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}' "$id")"
    if [ "$state" = healthy ] && curl -sf "$url" >/dev/null; then
      echo "$service: healthy ($url)"
      return 0
    fi
    sleep 1
  done
  die "$service not healthy after 90 s (health: $state)"
}

step "docker-compose --profile demo up"
"${COMPOSE[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
"${COMPOSE[@]}" up -d
"${COMPOSE[@]}" ps
wait_healthy ctxgate "$PROXY/healthz"
wait_healthy ctxgate-demo "$DEMO/healthz"
wait_healthy mock "$MOCK/v1/models"

step "the containers run as a non-root user"
for service in ctxgate ctxgate-demo mock; do
  uid="$("${COMPOSE[@]}" exec -T "$service" sh -c "awk '/^Uid:/ {print \$2}' /proc/1/status")"
  user="$("${COMPOSE[@]}" exec -T "$service" id -un)"
  [ "$uid" != 0 ] || die "$service runs as root"
  echo "ok   $service: PID 1 runs as uid $uid ($user)"
done
owner="$("${COMPOSE[@]}" exec -T ctxgate-demo stat -c '%U %a' /data/ctxgate.redb)"
[ "${owner%% *}" = ctxgate ] || die "the store is owned by '$owner'"
echo "ok   the store /data/ctxgate.redb belongs to ctxgate, mode ${owner#* }"

step "docker/smoke.sh against the demo stack (ctxgate-demo in front of the mock)"
SMOKE_MOCK_URL="$MOCK" docker/smoke.sh "$DEMO" | tee /tmp/ctxgate-ci-smoke.out
HASH="$(grep -o '<<ctxzip:[0-9a-f]*' /tmp/ctxgate-ci-smoke.out | tail -n 1 | cut -d: -f2)"
[ -n "$HASH" ] || die "no marker hash in the smoke output"
step "docker/smoke.sh health checks against the default ctxgate (upstream ${CTXGATE_UPSTREAM_URL:-https://api.openai.com/v1}, not reachable here)"
for path in /healthz /readyz; do
  code="$(curl -s -o /dev/null -w '%{http_code}' "$PROXY$path")"
  [ "$code" = 200 ] || die "ctxgate $path answered $code"
  echo "ok   ctxgate $path: 200"
done

step "config: a file mounted over /etc/ctxgate/ctxgate.toml is read, CTXGATE_* variables win over it"
conf_dir="$(mktemp -d)"
printf '[server]\nnot_a_setting = 1\n' >"$conf_dir/ctxgate.toml"
chmod 0755 "$conf_dir"
chmod 0644 "$conf_dir/ctxgate.toml"
out="$(docker run --rm -v "$conf_dir/ctxgate.toml:/etc/ctxgate/ctxgate.toml:ro" "$IMAGE" 2>&1 || true)"
grep -q 'not_a_setting' <<<"$out" || die "the mounted config was not read: $out"
echo "ok   a mounted config is read (start refused: $(grep -o 'unknown.*not_a_setting[^ ]*' <<<"$out" | head -n 1))"
env_port=$((BASE_PORT + 2))
docker rm -f ctxgate-ci-env >/dev/null 2>&1 || true
docker run -d --name ctxgate-ci-env -e CTXGATE_SERVER_MAX_BODY_BYTES=1000 -p "127.0.0.1:$env_port:8080" "$IMAGE" >/dev/null
for _ in $(seq 1 30); do curl -sf "http://127.0.0.1:$env_port/healthz" >/dev/null && break; sleep 1; done
big="$(printf '{"model":"mock-ok","input":"%02000d"}' 0)"
code="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$env_port/v1/responses" -H 'content-type: application/json' -d "$big")"
docker rm -f ctxgate-ci-env >/dev/null
rm -rf "$conf_dir"
[ "$code" = 413 ] || die "CTXGATE_SERVER_MAX_BODY_BYTES=1000 did not apply: a 2 KB body got $code"
echo "ok   CTXGATE_SERVER_MAX_BODY_BYTES=1000 over the baked-in file: a 2 KB body gets 413"

step "docker-compose stop lets an in-flight stream finish"
curl -sN --max-time 60 "$DEMO/v1/responses" -H 'authorization: Bearer sk-smoke' -H 'content-type: application/json' \
  -d '{"model":"mock-slow","stream":true,"input":"a slow stream across a stop"}' >/tmp/ctxgate-ci-stream.out &
curl_pid=$!
sleep 1
grep -q '^event: response.created' /tmp/ctxgate-ci-stream.out || die "the slow stream had not started"
stop_start=$SECONDS
"${COMPOSE[@]}" stop ctxgate-demo
stop_secs=$((SECONDS - stop_start))
wait "$curl_pid" || die "the stream's curl failed"
last="$(grep '^event: ' /tmp/ctxgate-ci-stream.out | tail -n 1)"
deltas="$(grep -c '^event: response.output_text.delta' /tmp/ctxgate-ci-stream.out || true)"
[ "$last" = "event: response.completed" ] || die "the stream ended with '$last' ($deltas deltas), not response.completed"
exit_code="$(docker inspect -f '{{.State.ExitCode}}' "$("${COMPOSE[@]}" ps -q ctxgate-demo)")"
[ "$exit_code" = 0 ] || die "ctxgate-demo exited with $exit_code (killed after the grace period?)"
[ "$stop_secs" -lt 35 ] || die "stop took $stop_secs s, past the grace period"
echo "ok   stop took ${stop_secs} s; the in-flight stream got all $deltas deltas and response.completed; exit code 0"

step "the store survives docker-compose down && up (same named volume)"
"${COMPOSE[@]}" down
"${COMPOSE[@]}" up -d
wait_healthy ctxgate-demo "$DEMO/healthz"
code="$(curl -s -o /tmp/ctxgate-ci-original.out -w '%{http_code}' "$DEMO/v1/ctxzip/$HASH" -H 'authorization: Bearer sk-smoke')"
[ "$code" = 200 ] || die "after down && up, GET /v1/ctxzip/$HASH answered $code"
grep -q '^smoke run ' /tmp/ctxgate-ci-original.out || die "after down && up, the original of $HASH is not the smoke log"
echo "ok   after down && up, GET /v1/ctxzip/$HASH still answers the original ($(wc -c </tmp/ctxgate-ci-original.out) bytes)"

#!/usr/bin/env bash
# The image, really built and run, with no container registry: installs the engine and compose from Debian's
# packages (docker.io, docker-compose, debootstrap) when missing, starts dockerd when none answers, makes the base
# images locally (docker/ci/base-images.sh), builds the top-level Dockerfile with those as build args, brings the
# compose `demo` profile up, runs docker/smoke.sh against it, checks the container runs as non-root, that
# `docker compose stop` lets an in-flight stream finish, and that the store survives `down` + `up`; then brings the
# `scale` profile up (two replicas on one Redis behind nginx, Redis and nginx images built from the same local
# Debian base), runs docker/smoke.sh against the load balancer, checks round robin and that the replicas share the
# store, then tears everything down. Run as root (CI does, from .ci/run). Images and the build cache stay in the
# engine for the next run.
#
# Environment: CTXGATE_CI_IMAGE (tag built, default ctxgate:ci; the scale profile's images are tagged
# ctxgate-redis:<tag> and ctxgate-lb:<tag>), CTXGATE_CI_PORT_BASE (published ports are BASE+0 ctxgate, BASE+1
# ctxgate-demo, BASE+3 lb, BASE+4 and BASE+5 the replicas, BASE+10 mock; default 28080), CTXGATE_CI_PROJECT (compose
# project name, default ctxgate-ci), DOCKERD_LOG (default /var/log/ctxgate-dockerd.log).
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
export CTXGATE_SCALE_PORT=$((BASE_PORT + 3))
export CTXGATE_SCALE_1_PORT=$((BASE_PORT + 4))
export CTXGATE_SCALE_2_PORT=$((BASE_PORT + 5))
IMAGE_NAME="${IMAGE%%:*}"
IMAGE_TAG="${IMAGE##*:}"
[ "$IMAGE_TAG" != "$IMAGE" ] || IMAGE_TAG=latest
export CTXGATE_REDIS_IMAGE="$IMAGE_NAME-redis:$IMAGE_TAG"
export CTXGATE_LB_IMAGE="$IMAGE_NAME-lb:$IMAGE_TAG"
export COMPOSE_PROJECT_NAME="${CTXGATE_CI_PROJECT:-ctxgate-ci}"
PROXY="http://127.0.0.1:$CTXGATE_PORT"
DEMO="http://127.0.0.1:$CTXGATE_DEMO_PORT"
MOCK="http://127.0.0.1:$CTXGATE_MOCK_PORT"
LB="http://127.0.0.1:$CTXGATE_SCALE_PORT"
REPLICA_1="http://127.0.0.1:$CTXGATE_SCALE_1_PORT"
REPLICA_2="http://127.0.0.1:$CTXGATE_SCALE_2_PORT"

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
SCALE=(docker-compose -f docker/docker-compose.yml --profile scale)
# Every service of both profiles: for ps, logs and the final teardown.
ALL=(docker-compose -f docker/docker-compose.yml --profile demo --profile scale)

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

step "the scale profile's Redis and nginx images (Debian's packages on the same local base; cached after the first run)"
export CTXGATE_BASE_IMAGE="$RUNTIME_IMAGE"
for part in redis:redis nginx:lb; do
  dockerfile="docker/scale/${part%%:*}.Dockerfile"
  tag="$IMAGE_NAME-${part##*:}:$IMAGE_TAG"
  docker build -q --build-arg "BASE_IMAGE=$RUNTIME_IMAGE" -f "$dockerfile" -t "$tag" docker/scale >/dev/null 2>&1 \
    || docker build --build-arg "BASE_IMAGE=$RUNTIME_IMAGE" -f "$dockerfile" -t "$tag" docker/scale \
    || die "docker build of $dockerfile failed"
  echo "$tag: $(docker image inspect -f '{{.Size}}' "$tag") bytes"
done

teardown() {
  local rc=$?
  step "teardown"
  if [ "$rc" -ne 0 ]; then
    "${ALL[@]}" ps || true
    "${ALL[@]}" logs --tail=40 || true
  fi
  "${ALL[@]}" down -v --remove-orphans || true
  printf '\n=== docker/test.sh %s after %d s\n' "$([ "$rc" -eq 0 ] && echo passed || echo FAILED)" $((SECONDS - T0))
}
trap teardown EXIT

wait_healthy() {  # SERVICE [URL]: until URL (if given) answers 2xx and the engine reports the service healthy
  local service="$1" url="${2:-}" id state=""
  id="$("${ALL[@]}" ps -q "$service")"
  [ -n "$id" ] || die "$service is not running"
  for _ in $(seq 1 90); do
    state="$(docker inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{else}}none{{end}}' "$id")"
    if [ "$state" = healthy ] && { [ -z "$url" ] || curl -sf "$url" >/dev/null; }; then
      echo "$service: healthy${url:+ ($url)}"
      return 0
    fi
    sleep 1
  done
  die "$service not healthy after 90 s (health: $state)"
}

step "docker-compose --profile demo up"
"${ALL[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
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
docker rm -f -v ctxgate-ci-env >/dev/null 2>&1 || true
docker run -d --name ctxgate-ci-env -e CTXGATE_SERVER_MAX_BODY_BYTES=1000 -p "127.0.0.1:$env_port:8080" "$IMAGE" >/dev/null
for _ in $(seq 1 30); do curl -sf "http://127.0.0.1:$env_port/healthz" >/dev/null && break; sleep 1; done
big="$(printf '{"model":"mock-ok","input":"%02000d"}' 0)"
code="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$env_port/v1/responses" -H 'content-type: application/json' -d "$big")"
docker rm -f -v ctxgate-ci-env >/dev/null
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

step "docker-compose --profile scale up: two ctxgate replicas on one Redis behind nginx, in front of the mock"
"${COMPOSE[@]}" down
"${SCALE[@]}" up -d lb
"${SCALE[@]}" ps
wait_healthy redis
wait_healthy ctxgate-scale-1 "$REPLICA_1/readyz"
wait_healthy ctxgate-scale-2 "$REPLICA_2/readyz"
wait_healthy lb "$LB/readyz"
for service in ctxgate-scale-1 ctxgate-scale-2; do
  store="$("${SCALE[@]}" logs "$service" | grep -o 'store redis://[^ ,]*' | head -n 1 || true)"
  [ -n "$store" ] || die "$service did not log a Redis store at start"
  echo "ok   $service: ready on the shared store ($store)"
done

step "the load balancer: round robin over both replicas"
replicas="$(for _ in 1 2 3 4; do
  curl -s -o /dev/null -D - "$LB/healthz" | tr -d '\r' | sed -n 's/^[Xx]-[Cc]txgate-[Rr]eplica: //p'
done | sort -u)"
[ "$(grep -c . <<<"$replicas")" = 2 ] || die "4 requests through the load balancer reached: ${replicas:-none}"
echo "ok   4 requests through nginx reached both replicas ($(paste -sd ' ' <<<"$replicas"))"

step "docker/smoke.sh against the load balancer (each request may land on either replica)"
SMOKE_MOCK_URL="$MOCK" docker/smoke.sh "$LB"

step "the replicas share the store: compressed through replica 1, expanded and counted on replica 2"
run="scale-$(date +%s)-$$"
awk -v run="$run" 'BEGIN {
  printf "%s: deploy log follows\n", run
  for (i = 1; i <= 800; i++) printf "2026-01-01T00:00:%02d INFO deploy step %04d of %s finished in %d ms\n", i % 60, i, run, (i * 37) % 1000
}' >/tmp/ctxgate-ci-scale.log
scale_hash="$(sha256sum /tmp/ctxgate-ci-scale.log | cut -c1-12)"
{  # the log's characters are JSON-safe: the JSON string is the text itself, newlines escaped
  printf '{"model":"mock-ok","input":[{"role":"user","content":"%s: did the deploy finish?"},' "$run"
  printf '{"type":"function_call","call_id":"call_scale","name":"shell","arguments":"{\\"cmd\\":\\"cat deploy.log\\"}"},'
  printf '{"type":"function_call_output","call_id":"call_scale","output":"'
  awk '{ printf "%s\\n", $0 }' /tmp/ctxgate-ci-scale.log
  printf '"}]}'
} >/tmp/ctxgate-ci-scale.json
compressed="$(curl -s -o /dev/null -D - "$REPLICA_1/v1/responses" -H 'authorization: Bearer sk-scale' \
  -H 'content-type: application/json' --data-binary @/tmp/ctxgate-ci-scale.json \
  | tr -d '\r' | sed -n 's/^x-ctxgate-compressed: //p')"
[ "${compressed:-0}" -ge 1 ] || die "replica 1 did not compress the deploy log (x-ctxgate-compressed: '$compressed')"
code="$(curl -s -o /tmp/ctxgate-ci-scale.out -w '%{http_code}' "$REPLICA_2/v1/ctxzip/$scale_hash" -H 'authorization: Bearer sk-scale')"
[ "$code" = 200 ] || die "replica 2 answered $code for GET /v1/ctxzip/$scale_hash, compressed through replica 1"
cmp -s /tmp/ctxgate-ci-scale.out /tmp/ctxgate-ci-scale.log || die "replica 2 served another text for $scale_hash"
code="$(curl -s -o /dev/null -w '%{http_code}' "$REPLICA_2/v1/ctxzip/$scale_hash" -H 'authorization: Bearer sk-other')"
[ "$code" = 404 ] || die "another credential got $code for $scale_hash on replica 2, not 404"
echo "ok   compressed through replica 1, GET /v1/ctxzip/$scale_hash on replica 2 serves the original byte for byte ($(wc -c </tmp/ctxgate-ci-scale.log) B); another credential gets 404"
# The tenant's savings counters are the store's: replica 1 flushes its increments within a second.
compressions=0
for _ in $(seq 1 20); do
  compressions="$(curl -s "$REPLICA_2/v1/ctxzip/stats" -H 'authorization: Bearer sk-scale' \
    | grep -o '"totals":{[^}]*}' | grep -o '"compressions":[0-9]*' | cut -d: -f2 || true)"
  [ "${compressions:-0}" -ge 1 ] && break
  sleep 0.5
done
[ "${compressions:-0}" -ge 1 ] || die "replica 2's GET /v1/ctxzip/stats does not count replica 1's compression"
echo "ok   GET /v1/ctxzip/stats on replica 2 counts the compression made on replica 1 (compressions: $compressions)"
rm -f /tmp/ctxgate-ci-scale.log /tmp/ctxgate-ci-scale.json /tmp/ctxgate-ci-scale.out

#!/usr/bin/env bash
# Smoke tests against any running ctxgate, with curl only (plus coreutils, grep, sed, awk).
#
#   docker/smoke.sh BASE_URL            e.g. docker/smoke.sh http://127.0.0.1:8080
#
# One line per check ("ok   NAME: detail"); the first failure prints "FAIL NAME: why" and exits 1. Checks: health
# and readiness, a plain response, a streamed response (SSE events ending with response.completed), a large tool
# output that reaches the upstream compressed (x-ctxgate-* headers), its expansion through GET /v1/ctxzip/{hash}
# and POST /v1/ctxzip/expand, the fold of an over-budget transcript, and an upstream error passed through with its
# status. Every run uses fresh content (a run id), so it compresses and folds anew on a store that has seen others.
#
# Environment:
#   SMOKE_MOCK_URL      base URL of the ctxgate-mock behind the ctxgate (e.g. http://127.0.0.1:8090): also check,
#                       in the mock's record (/__mock/requests, cleared before those checks), what the upstream
#                       really received
#   SMOKE_API_KEY       the key sent as "Authorization: Bearer" (default sk-smoke; a client key in proxy-held mode)
#   SMOKE_MODEL         the model of the plain, streamed, compressed and folded requests (default mock-ok)
#   SMOKE_ERROR_MODEL   a model the upstream answers with an error (default mock-error-429) ...
#   SMOKE_ERROR_STATUS  ... and that error's status (default 429)
#   SMOKE_TIMEOUT       seconds allowed per request (default 60)
set -euo pipefail

BASE="${1:-}"
if [ -z "$BASE" ] || [ "$BASE" = "-h" ] || [ "$BASE" = "--help" ]; then
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
BASE="${BASE%/}"
MOCK="${SMOKE_MOCK_URL:-}"
MOCK="${MOCK%/}"
KEY="${SMOKE_API_KEY:-sk-smoke}"
MODEL="${SMOKE_MODEL:-mock-ok}"
ERROR_MODEL="${SMOKE_ERROR_MODEL:-mock-error-429}"
ERROR_STATUS="${SMOKE_ERROR_STATUS:-429}"
TIMEOUT="${SMOKE_TIMEOUT:-60}"
RUN="$(date +%s)-$$-${RANDOM}"

for tool in curl sha256sum awk grep sed; do
  command -v "$tool" >/dev/null || { echo "FAIL setup: $tool is not installed" >&2; exit 1; }
done
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
PASSED=0

ok() {
  PASSED=$((PASSED + 1))
  printf 'ok   %s: %s\n' "$1" "$2"
}
fail() {
  printf 'FAIL %s: %s\n' "$1" "$2" >&2
  for f in "$WORK"/last.*; do
    [ -s "$f" ] && { printf -- '--- %s (first 2000 bytes)\n' "${f##*/}" >&2; head -c 2000 "$f" >&2; echo >&2; }
  done
  printf 'smoke: %d passed, 1 failed\n' "$PASSED"
  exit 1
}

# call METHOD PATH [BODY_FILE] [EXTRA_CURL_ARGS...]: the response goes to last.body and last.headers; prints the
# status ("000" when the request itself failed).
call() {
  local method="$1" path="$2" body="${3:-}"
  shift 3 || shift $#
  local args=(-sS -o "$WORK/last.body" -D "$WORK/last.headers" -w '%{http_code}' --max-time "$TIMEOUT"
    -X "$method" -H "authorization: Bearer $KEY")
  [ -n "$body" ] && args+=(-H 'content-type: application/json' --data-binary "@$body")
  : >"$WORK/last.body"
  : >"$WORK/last.headers"
  curl "${args[@]}" "$@" "$BASE$path" 2>"$WORK/last.curl" || true
}

# header NAME: the value of response header NAME of the last call (empty when absent).
header() {
  grep -i "^$1:" "$WORK/last.headers" | tail -n 1 | cut -d: -f2- | tr -d ' \r' || true
}

expect_status() {
  local name="$1" want="$2" got="$3"
  [ "$got" = "$want" ] || fail "$name" "HTTP $got, expected $want ($(head -c 300 "$WORK/last.curl"))"
}

# mock_record: the mock's record of received requests into last.mock (needs SMOKE_MOCK_URL).
mock_record() {
  curl -sS --max-time "$TIMEOUT" -o "$WORK/last.mock" "$MOCK/__mock/requests" \
    || fail "mock record" "cannot read $MOCK/__mock/requests"
}

# --- health and readiness ---------------------------------------------------------------------------------------
status="$(call GET /healthz)"
expect_status healthz 200 "$status"
ok healthz "200"
status="$(call GET /readyz)"
expect_status readyz 200 "$status"
ok readyz "200 (store reachable)"

# --- a plain response -------------------------------------------------------------------------------------------
printf '{"model":"%s","input":"smoke %s: say hello"}' "$MODEL" "$RUN" >"$WORK/plain.json"
status="$(call POST /v1/responses "$WORK/plain.json")"
expect_status "plain response" 200 "$status"
grep -Eq '"object": ?"response"' "$WORK/last.body" || fail "plain response" "no response object"
grep -Eq '"status": ?"completed"' "$WORK/last.body" || fail "plain response" "status is not completed"
grep -Eq '"type": ?"output_text"' "$WORK/last.body" || fail "plain response" "no output_text"
ok "plain response" "200, status completed, $(wc -c <"$WORK/last.body") bytes"

# --- a streamed response ----------------------------------------------------------------------------------------
printf '{"model":"%s","stream":true,"input":"smoke %s: stream a hello"}' "$MODEL" "$RUN" >"$WORK/stream.json"
status="$(call POST /v1/responses "$WORK/stream.json" -N)"
expect_status "streamed response" 200 "$status"
grep -iq '^content-type: *text/event-stream' "$WORK/last.headers" || fail "streamed response" "not text/event-stream"
events="$(grep -c '^event: ' "$WORK/last.body" || true)"
first="$(grep -m1 '^event: ' "$WORK/last.body" | cut -c8- | tr -d '\r')"
last="$(grep '^event: ' "$WORK/last.body" | tail -n 1 | cut -c8- | tr -d '\r')"
deltas="$(grep -c '^event: response.output_text.delta' "$WORK/last.body" || true)"
[ "$first" = "response.created" ] || fail "streamed response" "first event is '$first', not response.created"
[ "$deltas" -ge 1 ] || fail "streamed response" "no response.output_text.delta event"
[ "$last" = "response.completed" ] || fail "streamed response" "last event is '$last', not response.completed"
ok "streamed response" "$events SSE events ($deltas text deltas), response.created … response.completed"

# --- a large tool output reaches the upstream compressed --------------------------------------------------------
# 1000 varied log lines (~70 KB), nothing that reads as an error, so it is compressible and left for the model to
# expand; the run id makes it new on every run. Characters are JSON-safe, so the JSON string is the text itself.
awk -v run="$RUN" 'BEGIN {
  printf "smoke run %s: service log follows\n", run
  for (i = 1; i <= 1000; i++) {
    lvl = (i % 97 == 0) ? "WARN" : "INFO"
    printf "2026-01-01T00:%02d:%02d %s worker-%d seq=%06d request %06d served in %d ms bytes=%d\n", (i / 60) % 60, i % 60, lvl, i % 7, i, i * 7919 % 1000000, (i * 37) % 1000, (i * 7919) % 65536
  }
}' >"$WORK/log.txt"
LOG_BYTES="$(wc -c <"$WORK/log.txt")"
HASH="$(sha256sum "$WORK/log.txt" | cut -c1-12)"
{
  printf '{"model":"%s","input":[' "$MODEL"
  printf '{"role":"user","content":"smoke %s: how many requests did the service serve?"},' "$RUN"
  printf '{"type":"function_call","call_id":"call_smoke","name":"shell","arguments":"{\\"cmd\\":\\"cat service.log\\"}"},'
  printf '{"type":"function_call_output","call_id":"call_smoke","output":"'
  awk '{ printf "%s\\n", $0 }' "$WORK/log.txt"
  printf '"}],"tools":[{"type":"function","name":"shell","description":"Run a shell command",'
  printf '"parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}}]}'
} >"$WORK/large.json"
[ -n "$MOCK" ] && { curl -sS --max-time "$TIMEOUT" -X DELETE "$MOCK/__mock/requests" >/dev/null \
  || fail "compressed tool output" "cannot clear the mock's record at $MOCK"; }
status="$(call POST /v1/responses "$WORK/large.json")"
expect_status "compressed tool output" 200 "$status"
compressed="$(header x-ctxgate-compressed)"
saved="$(header x-ctxgate-saved-tokens)"
[ "${compressed:-0}" -ge 1 ] 2>/dev/null || fail "compressed tool output" "x-ctxgate-compressed is '${compressed}', expected >= 1"
[ "${saved:-0}" -gt 0 ] 2>/dev/null || fail "compressed tool output" "x-ctxgate-saved-tokens is '${saved}', expected > 0"
detail="$LOG_BYTES B tool output; x-ctxgate-compressed: $compressed, x-ctxgate-saved-tokens: $saved"
if [ -n "$MOCK" ]; then
  mock_record
  grep -q "<<ctxzip:$HASH" "$WORK/last.mock" || fail "compressed tool output" "the upstream did not receive the marker <<ctxzip:$HASH"
  upstream_len="$(grep -o '"body_len": *[0-9]*' "$WORK/last.mock" | tail -n 1 | grep -o '[0-9]*$')"
  [ "${upstream_len:-0}" -gt 0 ] && [ "$upstream_len" -lt $((LOG_BYTES / 2)) ] \
    || fail "compressed tool output" "the upstream received $upstream_len bytes for a $LOG_BYTES B output"
  detail="$detail; the upstream received $upstream_len B with the marker"
fi
ok "compressed tool output" "$detail; marker <<ctxzip:$HASH>>"

# --- expansion through the side endpoints -----------------------------------------------------------------------
status="$(call GET "/v1/ctxzip/$HASH")"
expect_status "expand GET /v1/ctxzip/{hash}" 200 "$status"
grep -q "smoke run $RUN" "$WORK/last.body" || fail "expand GET /v1/ctxzip/{hash}" "the original's first line is missing"
grep -q "seq=000100 " "$WORK/last.body" || fail "expand GET /v1/ctxzip/{hash}" "line 100 of the original is missing"
ok "expand GET /v1/ctxzip/{hash}" "200, $(wc -c <"$WORK/last.body") bytes of the original"
printf '{"hash":"<<ctxzip:%s 1000_lines_offloaded>>","query":"seq=000700"}' "$HASH" >"$WORK/expand.json"
status="$(call POST /v1/ctxzip/expand "$WORK/expand.json")"
expect_status "expand POST /v1/ctxzip/expand" 200 "$status"
grep -q "seq=000700 " "$WORK/last.body" || fail "expand POST /v1/ctxzip/expand" "the queried line seq=000700 is missing"
ok "expand POST /v1/ctxzip/expand" "200, query seq=000700 found"

# --- fold of an over-budget transcript --------------------------------------------------------------------------
# 40 messages of ~1.2 KB (each under the compression threshold): ~12,000 estimated tokens against a budget of 3000.
{
  printf '{"model":"%s","input":[' "$MODEL"
  for i in $(seq 1 40); do
    role=user
    [ $((i % 2)) -eq 0 ] && role=assistant
    printf '{"role":"%s","content":"smoke %s turn %02d: ' "$role" "$RUN" "$i"
    for _ in $(seq 1 24); do printf 'the quick brown fox jumps over the lazy dog. '; done
    printf '"},'
  done
  printf '{"role":"user","content":"smoke %s: and now?"}]}' "$RUN"
} >"$WORK/fold.json"
[ -n "$MOCK" ] && { curl -sS --max-time "$TIMEOUT" -X DELETE "$MOCK/__mock/requests" >/dev/null \
  || fail "fold" "cannot clear the mock's record at $MOCK"; }
status="$(call POST /v1/responses "$WORK/fold.json" -H 'x-ctxgate-budget: 3000')"
expect_status fold 200 "$status"
fold="$(header x-ctxgate-fold)"
[ "$fold" = "applied" ] || fail fold "x-ctxgate-fold is '$fold', expected applied"
detail="$(wc -c <"$WORK/fold.json") B transcript, budget 3000: x-ctxgate-fold: $fold"
if [ -n "$MOCK" ]; then
  mock_record
  grep -q '"path": *"/v1/responses/compact"' "$WORK/last.mock" \
    || grep -q '"max_output_tokens"' "$WORK/last.mock" \
    || fail fold "the upstream received no fold call (compact or summary)"
  turn_len="$(grep -o '"body_len": *[0-9]*' "$WORK/last.mock" | tail -n 1 | grep -o '[0-9]*$')"
  [ "${turn_len:-0}" -gt 0 ] && [ "$turn_len" -lt "$(wc -c <"$WORK/fold.json")" ] \
    || fail fold "the upstream's turn was $turn_len B, not smaller than the transcript"
  detail="$detail; the upstream received a fold call and a $turn_len B turn"
fi
ok fold "$detail"

# --- an upstream error passes through with its status -----------------------------------------------------------
printf '{"model":"%s","input":"smoke %s: fail please"}' "$ERROR_MODEL" "$RUN" >"$WORK/error.json"
status="$(call POST /v1/responses "$WORK/error.json")"
expect_status "upstream error" "$ERROR_STATUS" "$status"
grep -Eq '"error": ?\{' "$WORK/last.body" || fail "upstream error" "no OpenAI error body"
ok "upstream error" "HTTP $status with the upstream's error body"

printf 'smoke: %d passed, 0 failed\n' "$PASSED"

#!/usr/bin/env bash
# Instructions per request inside ctxgate, counted by callgrind (repeatable on a noisy machine, unlike time).
#
# usage: scripts/bench/callgrind.sh BODY_FILE [N] [extra curl-style header, e.g. "x-ctxgate-bypass: 1"]
#
# Starts ctxgate-mock and ctxgate (under valgrind --tool=callgrind) from target/release (or $BIN), sends N (200)
# requests with BODY_FILE on one keep-alive connection after 20 warm-up requests, and prints the instructions
# ctxgate executed per request (counters zeroed before, dumped after the N requests) and the top functions
# (inclusive). With CG_STRACE=1 it runs ctxgate under `strace -c -f` instead and prints the syscall counts.
# CG_STORE=FILE starts ctxgate on a copy of that redb store (e.g. one holding the original a marker body names, to
# count an expand round that finds it; see BENCHMARKS.md). CG_CHUNK_DELAY_MS=N makes the mock space its SSE events N ms
# apart, as a model's generation does (each then reaches ctxgate in its own read).
set -euo pipefail
cd "$(dirname "$0")/../.."
BODY=$1
N=${2:-200}
HEADER=${3:-}
BIN=${BIN:-target/release}
CHUNK_DELAY=${CG_CHUNK_DELAY_MS:-0}
[[ $CHUNK_DELAY =~ ^[0-9]+$ ]] || { echo "CG_CHUNK_DELAY_MS must be a whole number of milliseconds" >&2; exit 2; }
TMP=$(mktemp -d /tmp/ctxgate-cg.XXXXXX)
# The sockets are closed before the ports are printed: `read` returns at the newline, and a mock started while
# python still holds its port cannot listen (the first request then gets a 502).
read -r MOCK_PORT GATE_PORT < <(python3 -c '
import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
ports=[x.getsockname()[1] for x in s]
[x.close() for x in s]
print(*ports, flush=True)')
# The mock keeps only its last requests when it can (an older build records everything).
MOCK_RECORD=()
MOCK_HELP=$("$BIN/ctxgate-mock" --help 2>/dev/null || true)
[[ $MOCK_HELP != *--record-last* ]] || MOCK_RECORD=(--record-last 16)
RUST_LOG=warn "$BIN/ctxgate-mock" --listen "127.0.0.1:$MOCK_PORT" --latency-ms 0 --chunk-delay-ms "$CHUNK_DELAY" \
  ${MOCK_RECORD[@]+"${MOCK_RECORD[@]}"} >"$TMP/mock.log" 2>&1 &
MOCK=$!
if [[ -n ${CG_STORE:-} ]]; then
  cp "$CG_STORE" "$TMP/store.redb" || { echo "CG_STORE: cannot copy $CG_STORE" >&2; exit 1; }
fi
if [[ ${CG_STRACE:-0} == 1 ]]; then
  WRAP=()
else
  WRAP=(valgrind --tool=callgrind --callgrind-out-file="$TMP/cg.%p" --dump-instr=no)
fi
env -u CTXGATE_LOG CTXGATE_LOG_LEVEL=warn ${WRAP[@]+"${WRAP[@]}"} "$BIN/ctxgate" serve --listen "127.0.0.1:$GATE_PORT" \
  --upstream "http://127.0.0.1:$MOCK_PORT/v1" --store "$TMP/store.redb" >"$TMP/gate.log" 2>&1 &
GATE=$!
trap 'kill $MOCK 2>/dev/null; kill -INT $GATE 2>/dev/null; sleep 2; kill -KILL $GATE 2>/dev/null; [[ -n ${CG_KEEP:-} ]] || rm -rf "$TMP"' EXIT
# Both must answer before the first request: ctxgate's health says nothing about the mock's socket (a first
# request sent before the mock listens gets a 502).
for _ in $(seq 600); do
  kill -0 "$MOCK" 2>/dev/null || { echo "ctxgate-mock did not start:" >&2; cat "$TMP/mock.log" >&2; exit 1; }
  curl -fs -o /dev/null "http://127.0.0.1:$MOCK_PORT/v1/models" && break
  sleep 0.1
done
for _ in $(seq 600); do curl -fs -o /dev/null "http://127.0.0.1:$GATE_PORT/healthz" && break; sleep 0.1; done
send() {
  python3 - "$GATE_PORT" "$BODY" "$1" "$HEADER" <<'PY'
import http.client, sys
port, body, n, header = int(sys.argv[1]), open(sys.argv[2], "rb").read(), int(sys.argv[3]), sys.argv[4]
h = {"content-type": "application/json", "authorization": "Bearer sk-bench"}
if header:
    k, v = header.split(":", 1)
    h[k.strip()] = v.strip()
c = http.client.HTTPConnection("127.0.0.1", port)
for _ in range(n):
    c.request("POST", "/v1/responses", body, h)
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
PY
}
send 20
if [[ ${CG_STRACE:-0} == 1 ]]; then
  # Attached to every thread of the running process, for the measured requests only.
  strace ${CG_STRACE_ARGS:--c} -f -o "$TMP/strace.txt" -p "$(ls /proc/$GATE/task | paste -sd,)" 2>/dev/null &
  STRACE=$!
  sleep 1
  send "$N"
  kill -INT "$STRACE"; wait "$STRACE" || true
  echo "syscalls for $N requests (body $BODY${HEADER:+, $HEADER}):"
  head -n 30 "$TMP/strace.txt"
  exit 0
fi
callgrind_control -z "$GATE" >/dev/null
send "$N"
callgrind_control -d "$GATE" >/dev/null
sleep 1
DUMP=$(ls -t "$TMP"/cg.* | head -n1)
total=$(callgrind_annotate "$DUMP" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1}')
echo "instructions per request: $((total / N))  ($total for $N requests, body $BODY${HEADER:+, $HEADER})"
callgrind_annotate --auto=no --threshold=99 ${CG_INCLUSIVE:+--inclusive=yes} "$DUMP" 2>/dev/null | sed -n '/file:function/,$p' | head -n "${CG_TOP:-40}" | cut -c1-200

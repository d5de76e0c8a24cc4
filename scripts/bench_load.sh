#!/usr/bin/env bash
# Load benchmark: the same Responses API requests sent straight to ctxgate-mock ("direct"), through one nginx
# hop ("nginx", the floor any proxy hop costs) and through ctxgate ("ctxgate"), non-streaming (JSON answer) and
# streaming (SSE answer), at 1 and 32 concurrent connections; plus ctxgate's and nginx's CPU time per request.
# Writes a markdown table to stdout and to BENCH_OUT. See BENCHMARKS.md for how to read it.
#
# Bodies (BENCH_SIZES):
#   10k, 1m         a turn whose one tool output pads the body to 10 KB / 1 MB
#   10k-marker      the 10 KB turn whose output ends with a real <<ctxzip:HASH NOTE>> marker an earlier turn left:
#                   ctxgate offers context_expand, the model (mock-ok) does not call it
#   10k-expand      the same with model mock-expand: through ctxgate one expansion round (two upstream calls),
#                   direct and through nginx the model's call itself
#   1m-transcript   a 1.1 MB agent transcript of 150 real tool outputs (the corpus, BENCH_CORPUS), the same turn
#                   repeated: ctxgate's compressed forms (and fold, if any) are reused
#
# Settings (environment):
#   BENCH_SECONDS=8          length of each measured wrk run
#   BENCH_WARMUP=2           length of the warm-up run before each measured run (results discarded)
#   BENCH_ROUNDS=1           repeat the whole matrix; the table then shows medians over the rounds
#   BENCH_SIZES="10k 10k-marker 10k-expand 1m 1m-transcript"   subsets, to re-run one configuration
#   BENCH_MODES="json sse"     modes from {json, sse},
#   BENCH_CONNS="1 32"         concurrencies (1..1000)
#   BENCH_NGINX_WORKERS=auto nginx worker_processes (auto = one per core, like ctxgate's tokio runtime)
#   BENCH_FORWARDED="10k-marker"   sizes (of BENCH_SIZES; default: 10k-marker if selected; "" = none) that also get
#                            a target "direct-fwd": the exact body ctxgate forwards (captured by the probe request)
#                            sent straight to the mock. ctxgate rewrites these bodies larger (context_expand tool
#                            and directive), so the mock works longer behind ctxgate; direct-fwd measures that share
#   BENCH_BYPASS=0           1 sends x-ctxgate-bypass: 1, so ctxgate's stages (compression, ...) leave the body alone
#                            and the upstream gets the same bytes through every target: the hop's cost alone
#   BENCH_MOCK_CHUNK_DELAY_MS=0  the mock's pause between SSE events (ms): 0 sends an answer's events at once; a
#                            real model's events are spaced by its generation, so each costs every hop a read and a write
#   BENCH_MOCK_SSE_WHOLE=0   1 makes the mock send each SSE answer as one chunk (events joined, --sse-whole), as an
#                            upstream behind a buffering hop does: what the relay pays per chunk, apart
#   BENCH_CORPUS             the tool outputs of 1m-transcript (default ../shared/corpus/tool_outputs)
#   BENCH_STORE_URL          ctxgate's store: a Redis URL (redis://…, redis+cluster://h1:p1,h2:p2,…; started by the
#                            caller, keys under a per-run prefix) instead of the default redb file in the temp dir
#   BENCH_REPLICAS=1         2 adds a target, "ctxgate-x2": a second nginx (scripts/bench/lb.conf.template,
#                            the scale profile's settings: round robin, keepalive, unbuffered) in front of the
#                            ctxgate above and a second ctxgate on the same store (needs BENCH_STORE_URL), so one
#                            replica and two behind a load balancer are measured in the same run
#   BENCH_BIN                a directory with prebuilt ctxgate and ctxgate-mock (e.g. an older build to compare);
#                            default: build them with cargo
#   BENCH_OUT=target/bench_load.md   the table; the raw per-run results go next to it as .tsv
#   BENCH_KEEP_TMP=1         keep the temp dir (bodies, configs, logs); it is always kept on failure
#   CARGO_TARGET_DIR         where the release binaries are built, as cargo itself reads it
#
# Exits non-zero, naming the run, if any request failed (socket error, timeout, non-2xx status or an answer of
# the wrong content type): a benchmark of failing requests measures nothing.
set -euo pipefail

ORIG_PWD=$PWD
cd "$(dirname "$0")/.."
ROOT=$PWD
BENCH_DIR=$ROOT/scripts/bench

BENCH_SECONDS=${BENCH_SECONDS:-8}
BENCH_MOCK_CHUNK_DELAY_MS=${BENCH_MOCK_CHUNK_DELAY_MS:-0}
BENCH_MOCK_SSE_WHOLE=${BENCH_MOCK_SSE_WHOLE:-0}
BENCH_WARMUP=${BENCH_WARMUP:-2}
BENCH_ROUNDS=${BENCH_ROUNDS:-1}
BENCH_SIZES=${BENCH_SIZES:-10k 10k-marker 10k-expand 1m 1m-transcript}
BENCH_MODES=${BENCH_MODES:-json sse}
BENCH_CONNS=${BENCH_CONNS:-1 32}
BENCH_NGINX_WORKERS=${BENCH_NGINX_WORKERS:-auto}
BENCH_BYPASS=${BENCH_BYPASS:-0}
BENCH_REPLICAS=${BENCH_REPLICAS:-1}
BENCH_OUT=${BENCH_OUT:-$ROOT/target/bench_load.md}
# A relative BENCH_OUT is taken relative to where the script was called from, not the repo root.
[[ $BENCH_OUT == /* ]] || BENCH_OUT=$ORIG_PWD/$BENCH_OUT

die() {
  echo "bench_load: $*" >&2
  exit 1
}
log() { echo "bench_load: $*" >&2; }

# --- arguments -------------------------------------------------------------------------------------------------

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }
in_range() { is_uint "$1" && (($1 >= $2 && $1 <= $3)); }
in_range "$BENCH_SECONDS" 1 3600 || die "BENCH_SECONDS must be an integer in 1..3600"
in_range "$BENCH_WARMUP" 0 3600 || die "BENCH_WARMUP must be an integer in 0..3600 (0 = no warm-up)"
in_range "$BENCH_MOCK_CHUNK_DELAY_MS" 0 1000 || die "BENCH_MOCK_CHUNK_DELAY_MS must be an integer in 0..1000"
[[ $BENCH_MOCK_SSE_WHOLE == 0 || $BENCH_MOCK_SSE_WHOLE == 1 ]] || die "BENCH_MOCK_SSE_WHOLE must be 0 or 1"
in_range "$BENCH_ROUNDS" 1 100 || die "BENCH_ROUNDS must be an integer in 1..100"
read -ra SIZES <<<"$BENCH_SIZES"
read -ra MODES <<<"$BENCH_MODES"
read -ra CONNS <<<"$BENCH_CONNS"
# Unset: 10k-marker, but only when it is measured at all, so BENCH_SIZES=10k alone still runs. Set: taken as given.
if [[ -z ${BENCH_FORWARDED+set} ]]; then
  BENCH_FORWARDED=""
  [[ " ${SIZES[*]} " != *" 10k-marker "* ]] || BENCH_FORWARDED=10k-marker
fi
read -ra FORWARDED_SIZES <<<"$BENCH_FORWARDED"
BENCH_CORPUS=${BENCH_CORPUS:-${CTXGATE_CORPUS:-$ROOT/../shared/corpus/tool_outputs}}
for s in "${SIZES[@]}"; do
  case $s in
    10k | 1m | 10k-marker | 10k-expand) ;;
    1m-transcript) [[ -d $BENCH_CORPUS ]] || die "1m-transcript needs the corpus: BENCH_CORPUS=$BENCH_CORPUS is not a directory" ;;
    *) die "BENCH_SIZES: unknown size '$s' (10k, 10k-marker, 10k-expand, 1m, 1m-transcript)" ;;
  esac
done
declare -A FWD=() # size → 1 for the sizes of BENCH_FORWARDED
for s in ${FORWARDED_SIZES[@]+"${FORWARDED_SIZES[@]}"}; do
  [[ " ${SIZES[*]} " == *" $s "* ]] || die "BENCH_FORWARDED: '$s' is not one of BENCH_SIZES (${SIZES[*]})"
  FWD[$s]=1
done
for m in "${MODES[@]}"; do [[ $m == json || $m == sse ]] || die "BENCH_MODES: unknown mode '$m' (json, sse)"; done
for c in "${CONNS[@]}"; do
  in_range "$c" 1 1000 || die "BENCH_CONNS: '$c' is not in 1..1000"
done
[[ $BENCH_NGINX_WORKERS == auto ]] || is_uint "$BENCH_NGINX_WORKERS" || die "BENCH_NGINX_WORKERS: auto or a number"
[[ $BENCH_BYPASS == 0 || $BENCH_BYPASS == 1 ]] || die "BENCH_BYPASS must be 0 or 1"
[[ $BENCH_REPLICAS == 1 || $BENCH_REPLICAS == 2 ]] || die "BENCH_REPLICAS must be 1 or 2"
((BENCH_REPLICAS == 1)) || [[ -n ${BENCH_STORE_URL:-} ]] ||
  die "BENCH_REPLICAS=2 needs BENCH_STORE_URL: two replicas share a Redis, not a redb file"
export BENCH_BYPASS # read by post.lua
((${#SIZES[@]} && ${#MODES[@]} && ${#CONNS[@]})) || die "empty BENCH_SIZES, BENCH_MODES or BENCH_CONNS"

# --- tools -----------------------------------------------------------------------------------------------------

# A fresh machine has neither wrk nor nginx; both are plain Debian packages. curl waits for the servers.
# nginx is looked up in /usr/sbin too, since that is not on every user's PATH.
NGINX=$(command -v nginx || true)
if [[ -z $NGINX && -x /usr/sbin/nginx ]]; then NGINX=/usr/sbin/nginx; fi
missing=()
command -v wrk >/dev/null || missing+=(wrk)
[[ -n $NGINX ]] || missing+=(nginx-light)
command -v curl >/dev/null || missing+=(curl)
if ((${#missing[@]})); then
  log "installing ${missing[*]}"
  SUDO=()
  ((EUID == 0)) || SUDO=(sudo)
  "${SUDO[@]}" apt-get update
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y wrk nginx-light curl
  NGINX=$(command -v nginx || echo /usr/sbin/nginx)
fi
command -v python3 >/dev/null || die "python3 is needed (body generation, report)"
command -v cargo >/dev/null || die "cargo is needed to build the binaries"

if [[ -n ${BENCH_BIN:-} ]]; then
  BIN=$BENCH_BIN
  log "using the binaries in $BIN"
else
  log "building release binaries"
  cargo build --release --bins
  BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release
fi
[[ $BIN == /* ]] || BIN=$ROOT/$BIN
[[ -x $BIN/ctxgate && -x $BIN/ctxgate-mock ]] || die "no binaries in $BIN"

# --- temp dir, servers, cleanup --------------------------------------------------------------------------------

TMP=$(mktemp -d "${TMPDIR:-/tmp}/ctxgate-bench.XXXXXX")
MOCK_PID="" NGINX_PID="" GATE_PID="" GATE2_PID="" LB_PID=""

cleanup() {
  local rc=$?
  # ctxgate first (it drains towards the mock), the mock last. TERM lets each shut down cleanly; anything still
  # alive after 10 s is killed so the script never hangs on exit.
  local pid
  for pid in "$LB_PID" "$GATE_PID" "$GATE2_PID" "$NGINX_PID" "$MOCK_PID"; do
    if [[ -n $pid ]]; then kill -TERM "$pid" 2>/dev/null || true; fi
  done
  for pid in "$LB_PID" "$GATE_PID" "$GATE2_PID" "$NGINX_PID" "$MOCK_PID"; do
    [[ -n $pid ]] || continue
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if ((rc == 0)) && [[ -z ${BENCH_KEEP_TMP:-} ]]; then
    rm -rf "$TMP"
  else
    log "temp dir (bodies, configs, server logs) kept: $TMP"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Free loopback ports, chosen by the kernel (bind to port 0) rather than hard-coded, so a second run or another
# service on the machine does not collide.
read -r MOCK_PORT NGINX_PORT GATE_PORT GATE2_PORT LB_PORT < <(python3 - <<'EOF'
import socket
socks = [socket.socket() for _ in range(5)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
)
MOCK_URL=http://127.0.0.1:$MOCK_PORT
NGINX_URL=http://127.0.0.1:$NGINX_PORT
GATE_URL=http://127.0.0.1:$GATE_PORT
GATE2_URL=http://127.0.0.1:$GATE2_PORT
LB_URL=http://127.0.0.1:$LB_PORT

# wait_http NAME PID URL: polls URL until it answers 2xx; fails with the server's log if it dies or takes > 30 s.
wait_http() {
  local name=$1 pid=$2 url=$3
  for _ in $(seq 300); do
    kill -0 "$pid" 2>/dev/null || { cat "$TMP/$name.log" >&2 || true; die "$name exited at start"; }
    curl -fsS -o /dev/null --max-time 1 "$url" 2>/dev/null && return 0
    sleep 0.1
  done
  cat "$TMP/$name.log" >&2 || true
  die "$name did not answer $url within 30 s"
}

log "generating bodies in $TMP"
python3 "$BENCH_DIR/gen_bodies.py" "$TMP" 10k=10240 1m=1048576

# The mock's own log level is RUST_LOG; warn keeps per-request logging (if any) out of the measurement. Latency
# and chunk delay are set explicitly so stray CTXGATE_MOCK_* variables cannot slow it down. It records only its
# last 16 requests (enough for the seed turn below), so its memory and copying stay flat; an older mock (BENCH_BIN)
# without the flag records everything, as it always did.
MOCK_RECORD=()
MOCK_HELP=$("$BIN/ctxgate-mock" --help 2>/dev/null || true)
[[ $MOCK_HELP != *--record-last* ]] || MOCK_RECORD=(--record-last 16)
if [[ $BENCH_MOCK_SSE_WHOLE == 1 ]]; then
  [[ $MOCK_HELP == *--sse-whole* ]] || die "BENCH_MOCK_SSE_WHOLE=1: this ctxgate-mock has no --sse-whole"
  MOCK_RECORD+=(--sse-whole)
fi
RUST_LOG=warn "$BIN/ctxgate-mock" --listen "127.0.0.1:$MOCK_PORT" --latency-ms 0 \
  --chunk-delay-ms "$BENCH_MOCK_CHUNK_DELAY_MS" ${MOCK_RECORD[@]+"${MOCK_RECORD[@]}"} >"$TMP/mock.log" 2>&1 &
MOCK_PID=$!
wait_http mock "$MOCK_PID" "$MOCK_URL/v1/models"

# nginx runs as the current user (the user line only matters when that is root: nginx would otherwise drop its
# workers to "nobody"), in the foreground (daemon off) so $! is the master, with pid file, error log and temp
# dirs inside $TMP (-p, -e) and no access log.
mkdir -p "$TMP/nginx-temp"
USER_LINE="# not root: workers run as the current user"
((EUID != 0)) || USER_LINE="user $(id -un) $(id -gn);"
sed -e "s|@TMP@|$TMP|g" -e "s|@MOCK_PORT@|$MOCK_PORT|g" -e "s|@NGINX_PORT@|$NGINX_PORT|g" \
  -e "s|@WORKERS@|$BENCH_NGINX_WORKERS|g" -e "s|@USER_LINE@|$USER_LINE|" \
  "$BENCH_DIR/nginx.conf.template" >"$TMP/nginx.conf"
"$NGINX" -q -t -p "$TMP" -e "$TMP/nginx-error.log" -c "$TMP/nginx.conf" || die "nginx rejected $TMP/nginx.conf"
"$NGINX" -p "$TMP" -e "$TMP/nginx-error.log" -c "$TMP/nginx.conf" >"$TMP/nginx.log" 2>&1 &
NGINX_PID=$!
wait_http nginx "$NGINX_PID" "$NGINX_URL/v1/models"

# CTXGATE_LOG would override the level with a full filter; warn keeps request logging out of the measurement.
STORE_ENV=()
if [[ -n ${BENCH_STORE_URL:-} ]]; then
  STORE_ENV=("CTXGATE_STORE_URL=$BENCH_STORE_URL" "CTXGATE_STORE_KEY_PREFIX=ctxgate-bench-$$:")
  log "store: $BENCH_STORE_URL"
fi
env -u CTXGATE_LOG CTXGATE_LOG_LEVEL=warn "${STORE_ENV[@]}" "$BIN/ctxgate" serve --listen "127.0.0.1:$GATE_PORT" \
  --upstream "$MOCK_URL/v1" --store "$TMP/ctxgate.redb" >"$TMP/ctxgate.log" 2>&1 &
GATE_PID=$!
wait_http ctxgate "$GATE_PID" "$GATE_URL/readyz"

# Two replicas: a second ctxgate on the same store (same key prefix), and a second nginx balancing over both.
LB_PIDS=()
TARGETS=(direct nginx ctxgate)
if ((BENCH_REPLICAS == 2)); then
  env -u CTXGATE_LOG CTXGATE_LOG_LEVEL=warn "${STORE_ENV[@]}" "$BIN/ctxgate" serve --listen "127.0.0.1:$GATE2_PORT" \
    --upstream "$MOCK_URL/v1" --store "$TMP/ctxgate2.redb" >"$TMP/ctxgate2.log" 2>&1 &
  GATE2_PID=$!
  wait_http ctxgate2 "$GATE2_PID" "$GATE2_URL/readyz"
  mkdir -p "$TMP/lb" "$TMP/lb-temp"
  sed -e "s|@TMP@|$TMP/lb|g" -e "s|@TEMP@|$TMP/lb-temp|g" -e "s|@GATE_PORT@|$GATE_PORT|g" \
    -e "s|@GATE2_PORT@|$GATE2_PORT|g" -e "s|@LB_PORT@|$LB_PORT|g" -e "s|@WORKERS@|$BENCH_NGINX_WORKERS|g" \
    -e "s|@USER_LINE@|$USER_LINE|" "$BENCH_DIR/lb.conf.template" >"$TMP/lb.conf"
  "$NGINX" -q -t -p "$TMP/lb" -e "$TMP/lb-error.log" -c "$TMP/lb.conf" || die "nginx rejected $TMP/lb.conf"
  "$NGINX" -p "$TMP/lb" -e "$TMP/lb-error.log" -c "$TMP/lb.conf" >"$TMP/lb.log" 2>&1 &
  LB_PID=$!
  wait_http lb "$LB_PID" "$LB_URL/readyz"
  LB_PIDS=("$LB_PID")
  for stat in /proc/[0-9]*/stat; do
    read -r line <"$stat" 2>/dev/null || continue
    read -ra f <<<"${line##*) }"
    [[ ${f[1]} == "$LB_PID" ]] && LB_PIDS+=("$(basename "$(dirname "$stat")")")
  done
  TARGETS+=(ctxgate-x2)
  log "two replicas on $BENCH_STORE_URL behind nginx at $LB_URL"
fi

# The marker bodies carry a real marker: one turn through ctxgate (stages on) compresses the 1 MB output and stores
# its original, and the marker the mock received is cut out of its record. The transcript comes from the corpus.
extra=()
for s in "${SIZES[@]}"; do
  case $s in
    10k-marker | 10k-expand) extra+=("$s=10240") ;;
    1m-transcript) extra+=("$s=1153434") ;;
  esac
done
if ((${#extra[@]})); then
  curl -fsS -o /dev/null --max-time 60 -X DELETE "$MOCK_URL/__mock/requests"
  curl -fsS -o /dev/null --max-time 60 "$GATE_URL/v1/responses" -H 'content-type: application/json' \
    -H 'authorization: Bearer sk-bench' --data-binary "@$TMP/1m-json.json" || die "seed turn through ctxgate failed"
  MARKER=$(curl -fsS --max-time 30 "$MOCK_URL/__mock/requests" | python3 -c '
import json, re, sys
bodies = [r.get("body") or "" for r in json.load(sys.stdin) if r.get("path") == "/v1/responses"]
m = [re.search(r"<<ctxzip:[0-9a-f]{12} [^>]*>>", b) for b in bodies]
print(next((x.group(0) for x in m if x), ""))')
  [[ -n $MARKER ]] || die "the seed turn left no marker (is compression on?)"
  log "marker for the marker bodies: $MARKER"
  python3 "$BENCH_DIR/gen_bodies.py" "$TMP" --marker "$MARKER" --corpus "$BENCH_CORPUS" "${extra[@]}"
fi

# The nginx processes whose CPU time is summed: the master and its workers (children of the master).
NGINX_PIDS=("$NGINX_PID")
for stat in /proc/[0-9]*/stat; do
  read -r line <"$stat" 2>/dev/null || continue
  read -ra f <<<"${line##*) }"
  [[ ${f[1]} == "$NGINX_PID" ]] && NGINX_PIDS+=("$(basename "$(dirname "$stat")")")
done
NGINX_WORKER_COUNT=$((${#NGINX_PIDS[@]} - 1))

# --- measurement -----------------------------------------------------------------------------------------------

CLK_TCK=$(getconf CLK_TCK)

# cpu_ticks PID...: utime + stime of the processes (all their threads), in clock ticks, from /proc/PID/stat.
# Fields are counted after the ")" that closes the command name, which may itself contain spaces.
cpu_ticks() {
  local total=0 pid line
  local -a f
  for pid in "$@"; do
    read -r line <"/proc/$pid/stat" || die "process $pid is gone"
    read -ra f <<<"${line##*) }"
    total=$((total + f[11] + f[12])) # fields 14 (utime) and 15 (stime); f[0] is field 3
  done
  echo "$total"
}

# The mock records every request body in memory (tests inspect them); at 1 MB a run would pile up gigabytes,
# so the recording is emptied before every run, outside the measured window.
clear_mock() { curl -fsS -o /dev/null --max-time 10 -X DELETE "$MOCK_URL/__mock/requests"; }

# run_wrk LABEL URL BODY MODE CONNS SECONDS: one wrk run POSTing the file BODY; sets the associative array R from
# its result line and fails the whole benchmark if any request failed.
declare -A R
run_wrk() {
  local label=$1 url=$2 body=$3 mode=$4 conns=$5 secs=$6 threads=1 out line kv
  # One wrk thread is enough for one connection; two (one per core) for 32 connections.
  if ((conns > 1)); then threads=2; fi
  if ! out=$(BENCH_BODY=$body BENCH_EXPECT=$mode \
    wrk -t"$threads" -c"$conns" -d"${secs}s" --timeout 10s -s "$BENCH_DIR/post.lua" "$url/v1/responses" 2>&1); then
    die "$label: wrk failed: $out"
  fi
  line=$(grep '^BENCH_RESULT ' <<<"$out") || die "$label: no result from wrk: $out"
  local -a kvs
  read -ra kvs <<<"${line#BENCH_RESULT }"
  R=()
  for kv in "${kvs[@]}"; do R[${kv%%=*}]=${kv#*=}; done
  local bad=0 k
  for k in err_connect err_read err_write err_timeout err_status non2xx badtype; do
    ((R[$k] == 0)) || bad=1
  done
  if ((bad || R[requests] == 0)); then
    die "$label: requests failed: $line $(grep '^BENCH_FIRST_ERROR ' <<<"$out" || true)"
  fi
}

# What the upstream receives through ctxgate: its stages may rewrite the body (compression shrinks large tool
# outputs), and then the mock does less work behind ctxgate than behind the other two targets. One probe request
# per body, its size as the mock recorded it, goes into the report next to the size sent. For the sizes of
# BENCH_FORWARDED the body of its last upstream call is kept as $size-$mode.fwd.json, for the target direct-fwd.
UPSTREAM=$TMP/upstream.tsv
printf 'size\tmode\tsent\treceived\n' >"$UPSTREAM"
for size in "${SIZES[@]}"; do
  for mode in "${MODES[@]}"; do
    clear_mock
    bypass=()
    ((BENCH_BYPASS == 0)) || bypass=(-H 'x-ctxgate-bypass: 1')
    curl -fsS -o /dev/null --max-time 30 "$GATE_URL/v1/responses" -H 'content-type: application/json' \
      -H 'authorization: Bearer sk-bench' "${bypass[@]}" --data-binary "@$TMP/$size-$mode.json" ||
      die "probe through ctxgate failed ($size $mode)"
    fwd=""
    [[ -z ${FWD[$size]:-} ]] || fwd=$TMP/$size-$mode.fwd.json
    # Prints the bytes of all upstream calls, and the recorded length of the last one (-1: none).
    probe=$(curl -fsS --max-time 30 "$MOCK_URL/__mock/requests" | python3 -c '
import json, sys
d = json.load(sys.stdin)
reqs = [r for r in (d if isinstance(d, list) else d.get("requests", [])) if r.get("path") == "/v1/responses"]
if sys.argv[1] and reqs:
    with open(sys.argv[1], "wb") as f:
        f.write((reqs[-1].get("body") or "").encode())
print(sum(r.get("body_len", 0) for r in reqs), reqs[-1].get("body_len", -1) if reqs else -1)' "$fwd")
    read -r received last_len <<<"$probe"
    if [[ -n $fwd ]]; then
      # The record's body is text: a body that is not valid UTF-8 would come back altered, and direct-fwd would
      # then measure other bytes than the ones ctxgate sent.
      [[ -f $fwd && $(wc -c <"$fwd") -eq $last_len ]] ||
        die "probe $size $mode: the forwarded body could not be captured intact ($last_len bytes recorded)"
      log "forwarded body $size $mode: $last_len bytes (sent $(wc -c <"$TMP/$size-$mode.json"))"
    fi
    printf '%s\t%s\t%s\t%s\n' "$size" "$mode" "$(wc -c <"$TMP/$size-$mode.json")" "$received" >>"$UPSTREAM"
  done
done

RESULTS=$TMP/results.tsv
printf 'round\tsize\tmode\tconns\ttarget\trequests\tseconds\trps\tp50_us\tp99_us\tcpu_us_per_req\n' >"$RESULTS"

declare -A URL=([direct]=$MOCK_URL [direct-fwd]=$MOCK_URL [nginx]=$NGINX_URL [ctxgate]=$GATE_URL [ctxgate-x2]=$LB_URL)
# One direct-fwd run per forwarded size on top of the targets every configuration gets.
runs=$((BENCH_ROUNDS * ${#MODES[@]} * ${#CONNS[@]} * (${#SIZES[@]} * ${#TARGETS[@]} + ${#FWD[@]})))
log "$runs runs of ${BENCH_SECONDS}s (+${BENCH_WARMUP}s warm-up each): about $((runs * (BENCH_SECONDS + BENCH_WARMUP + 1) / 60 + 1)) min"
# Noise check for the report: how much CPU the rest of the machine (a build, a test suite, a neighbour VM's
# steal) took while the matrix ran. machine_ticks: busy and steal ticks of all CPUs, from /proc/stat.
# own_ticks: what this benchmark used itself: the three servers, plus every reaped child of this shell (wrk,
# curl) as cutime + cstime (fields 16, 17) of /proc/$$/stat.
machine_ticks() {
  local _cpu user nice system _idle _iowait irq softirq steal _rest
  read -r _cpu user nice system _idle _iowait irq softirq steal _rest </proc/stat
  echo "$((user + nice + system + irq + softirq)) $steal"
}
own_ticks() {
  local line servers
  local -a f
  servers=$(cpu_ticks "$MOCK_PID" "$GATE_PID" "${NGINX_PIDS[@]}" ${GATE2_PID:+"$GATE2_PID"} ${LB_PIDS[@]+"${LB_PIDS[@]}"})
  read -r line <"/proc/$$/stat"
  read -ra f <<<"${line##*) }"
  echo "$((servers + f[13] + f[14]))"
}
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
read -r BUSY_BEFORE STEAL_BEFORE < <(machine_ticks)
OWN_BEFORE=$(own_ticks)
START_SECONDS=$SECONDS
n=0
for round in $(seq "$BENCH_ROUNDS"); do
  for size in "${SIZES[@]}"; do
    for mode in "${MODES[@]}"; do
      for conns in "${CONNS[@]}"; do
        # The targets of one configuration run back to back, so slow drifts of the machine (other
        # processes, thermal, a neighbour VM) hit them all alike and the differences stay meaningful.
        targets=("${TARGETS[@]}")
        [[ -z ${FWD[$size]:-} ]] || targets=(direct direct-fwd "${TARGETS[@]:1}")
        for target in "${targets[@]}"; do
          n=$((n + 1))
          label="round $round $size $mode c=$conns $target"
          body=$TMP/$size-$mode.json
          [[ $target != direct-fwd ]] || body=$TMP/$size-$mode.fwd.json
          clear_mock
          if ((BENCH_WARMUP > 0)); then
            # Warm-up: opens the connections and the proxies' upstream pools, faults in buffers, so the measured
            # run starts in steady state.
            run_wrk "$label (warm-up)" "${URL[$target]}" "$body" "$mode" "$conns" "$BENCH_WARMUP"
            clear_mock
          fi
          case $target in
            ctxgate) pids=("$GATE_PID") ;;
            # Both replicas: CPU per request of the ctxgate work, wherever it ran (the balancer's is nginx's).
            ctxgate-x2) pids=("$GATE_PID" "$GATE2_PID") ;;
            nginx) pids=("${NGINX_PIDS[@]}") ;;
            *) pids=() ;;
          esac
          ((${#pids[@]} == 0)) || before=$(cpu_ticks "${pids[@]}")
          run_wrk "$label" "${URL[$target]}" "$body" "$mode" "$conns" "$BENCH_SECONDS"
          cpu="-"
          if ((${#pids[@]})); then
            after=$(cpu_ticks "${pids[@]}")
            # ticks → µs, divided by the requests this run completed.
            cpu=$(((after - before) * 1000000 / CLK_TCK / R[requests]))
          fi
          printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$size" "$mode" "$conns" "$target" \
            "${R[requests]}" "${R[seconds]}" "${R[rps]}" "${R[p50_us]}" "${R[p99_us]}" "$cpu" >>"$RESULTS"
          log "[$n/$runs] $label: p50 ${R[p50_us]} µs, p99 ${R[p99_us]} µs, ${R[rps]} req/s, cpu ${cpu} µs/req"
        done
      done
    done
  done
done
clear_mock
read -r BUSY_AFTER STEAL_AFTER < <(machine_ticks)
OWN_AFTER=$(own_ticks)
# Percentages of the machine's whole capacity (all CPUs × wall time) over the matrix.
capacity=$(((SECONDS - START_SECONDS) * $(nproc) * CLK_TCK))
((capacity > 0)) || capacity=1
foreign=$((BUSY_AFTER - BUSY_BEFORE - (OWN_AFTER - OWN_BEFORE)))
((foreign > 0)) || foreign=0
FOREIGN_PCT=$((100 * foreign / capacity))
STEAL_PCT=$((100 * (STEAL_AFTER - STEAL_BEFORE) / capacity))

# --- report ----------------------------------------------------------------------------------------------------

commit=unknown
if git -C "$ROOT" rev-parse --short HEAD >/dev/null 2>&1; then
  commit=$(git -C "$ROOT" rev-parse --short HEAD)
  # The binaries are built from the work tree, which may differ from the commit.
  [[ -z $(git -C "$ROOT" status --porcelain --untracked-files=no) ]] || commit="$commit (+ uncommitted changes)"
fi
cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)
[[ -n $cpu_model ]] || cpu_model=$(uname -m)
mem=$(awk '/^MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)

REPORT=$TMP/report.md
{
  echo "### Run of $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "- commit: $commit"
  echo "- machine: $(nproc) CPUs ($cpu_model), $mem, Linux $(uname -r)"
  store_line="redb file in the run's temp dir"
  if [[ -n ${BENCH_STORE_URL:-} ]]; then store_line="$BENCH_STORE_URL (key prefix ctxgate-bench-$$:)"; fi
  ((BENCH_REPLICAS == 1)) || store_line="$store_line; target ctxgate-x2: two replicas on it behind nginx (round robin)"
  echo "- store: $store_line"
  echo "- noise: load average $LOAD_BEFORE before the runs; during them other processes used" \
    "$FOREIGN_PCT % of the machine's CPU and the hypervisor stole $STEAL_PCT % (0-5 % is a quiet machine)"
  echo "- tools: $(wrk -v 2>&1 | head -n1 | cut -d' ' -f1-2), $("$NGINX" -v 2>&1 | sed 's/.*: //')" \
    "(worker_processes $BENCH_NGINX_WORKERS = $NGINX_WORKER_COUNT), $(rustc --version 2>/dev/null || echo rustc ?)"
  rounds="1 round"
  ((BENCH_ROUNDS == 1)) || rounds="$BENCH_ROUNDS rounds (figures are medians over the rounds)"
  if ((BENCH_BYPASS)); then
    echo "- ctxgate stages: bypassed (x-ctxgate-bypass: 1 on every request): the hop alone"
  else
    echo "- ctxgate stages: as configured (config/ctxgate.toml); see the upstream-bytes column for rewritten bodies"
  fi
  echo "- runs: ${BENCH_SECONDS} s each after a ${BENCH_WARMUP} s warm-up per target, $rounds;" \
    "wrk -t1 at c=1, -t2 above; bodies 10 KB = 10240 B, 1 MB = 1048576 B; mock latency 0"
  echo
  python3 "$BENCH_DIR/report.py" "$RESULTS" "$UPSTREAM"
} >"$REPORT"

mkdir -p "$(dirname "$BENCH_OUT")"
cp "$REPORT" "$BENCH_OUT"
cp "$RESULTS" "${BENCH_OUT%.md}.tsv"
cp "$UPSTREAM" "${BENCH_OUT%.md}.upstream.tsv"
cat "$REPORT"
log "written: $BENCH_OUT (raw runs: ${BENCH_OUT%.md}.tsv)"

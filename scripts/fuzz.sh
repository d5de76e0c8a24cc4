#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets/) for a bounded time each: `scripts/fuzz.sh [SECONDS] [TARGET…]`
# (default 600 s, all targets). Seeds come from the team's development corpus (../shared/corpus/dev: tool outputs
# for the compressors, transcripts wrapped as request bodies and SSE streams built from them) when it is there, and
# from tests/fixtures otherwise. Needs cargo-fuzz (`cargo install cargo-fuzz`); the machine's stable toolchain is
# used with RUSTC_BOOTSTRAP=1 for the sanitizer flags. Prints one summary line per target (executions, crashes);
# crashing inputs are kept in fuzz/artifacts/TARGET/.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH="${1:-600}"
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then TARGETS=(compress repeats request_body sse stitch); fi
if ! command -v cargo-fuzz >/dev/null 2>&1; then
  echo "fuzz.sh: cargo-fuzz is not installed: cargo install cargo-fuzz" >&2
  exit 2
fi
DEV=../shared/corpus/dev
if [ -d "$DEV" ]; then
  OUTPUTS="$DEV/tool_outputs"; TRANSCRIPTS="$DEV/transcripts"
else
  echo "fuzz.sh: no development corpus at $DEV; seeding from tests/fixtures" >&2
  OUTPUTS=tests/fixtures/tool_outputs; TRANSCRIPTS=""
fi
export RUSTC_BOOTSTRAP=1
cargo fuzz build -O >/dev/null
python3 - "$OUTPUTS" "$TRANSCRIPTS" <<'PY'
import json, os, sys, glob
outputs, transcripts = sys.argv[1], sys.argv[2]
def seed(target, name, data):
    d = f"fuzz/corpus/{target}"; os.makedirs(d, exist_ok=True)
    open(f"{d}/seed-{name}", "wb").write(data)
for p in sorted(glob.glob(f"{outputs}/*")):
    if p.endswith((".tsv", ".md")): continue
    seed("compress", os.path.basename(p), open(p, "rb").read()[:131072])
for a, b in zip(sorted(glob.glob(f"{outputs}/*"))[::2], sorted(glob.glob(f"{outputs}/*"))[1::2]):
    if a.endswith((".tsv", ".md")) or b.endswith((".tsv", ".md")): continue
    first = open(a, "rb").read()[:32768]
    # An output, then the same output with a line changed: what a re-run looks like.
    seed("repeats", os.path.basename(a), first + b"\0" + first.replace(b"\n", b"\nchanged line\n", 1))
    seed("repeats", os.path.basename(b), first + b"\0" + open(b, "rb").read()[:32768])
items_sets = []
if transcripts:
    for p in sorted(glob.glob(f"{transcripts}/*.json")):
        items_sets.append((os.path.basename(p), json.load(open(p))))
else:
    items_sets.append(("fixture", [{"role": "user", "content": "hi"}]))
for name, items in items_sets:
    body = json.dumps({"model": "m", "stream": True, "input": items[:40]}).encode()
    seed("request_body", name, body[:131072])
    events = []
    for i, it in enumerate(items[:30]):
        data = json.dumps({"type": "response.output_item.done", "sequence_number": i, "output_index": i, "item": it})
        events.append(f"event: response.output_item.done\ndata: {data}\n\n")
    stream = ("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"r1\"}}\n\n"
              + "".join(events)
              + "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"r1\",\"output\":[]}}\n\n").encode()
    seed("sse", name, b"\x07" + stream[:131072])
    seed("stitch", name, stream[:131072])
PY
for t in "${TARGETS[@]}"; do
  mkdir -p "fuzz/artifacts/$t"
  log="fuzz/artifacts/$t/last-run.log"
  set +e
  cargo fuzz run -O "$t" -- -max_total_time="$SECONDS_EACH" -max_len=131072 -rss_limit_mb=4096 \
    -print_final_stats=1 >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  crashes=$(find "fuzz/artifacts/$t" -name 'crash-*' -o -name 'oom-*' -o -name 'timeout-*' | wc -l)
  echo "$t: ${SECONDS_EACH}s, $execs executions, exit $rc, $crashes crashing inputs kept"
done

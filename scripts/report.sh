#!/usr/bin/env bash
# The corpus report on the team's development corpus (../shared/corpus/dev beside the repository, or the folder
# given): tool outputs per kind, transcripts, and the turn-by-turn session replay, through the proxy's own stages.
# Extra arguments go to `ctxgate report` (e.g. --json, --no-replay, --config FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
CORPUS="${1:-../shared/corpus/dev}"
if [ ! -d "$CORPUS" ]; then
  echo "report.sh: no corpus at $CORPUS — the development corpus lives in ../shared/corpus/dev on the team's machines;" >&2
  echo "           pass another folder holding tool_outputs/ and/or transcripts/ as the first argument." >&2
  exit 2
fi
shift || true
cargo build --release --quiet --bin ctxgate
exec ./target/release/ctxgate report "$CORPUS" "$@"

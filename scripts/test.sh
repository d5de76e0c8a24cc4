#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: prepares the Python venv with the real `openai` SDK for the
# end-to-end tests (once), then `cargo test`. Extra arguments go to cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${CTXGATE_VENV:-.venv}"
if ! "$VENV/bin/python" -c "import openai" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "openai>=1.100"
fi
export CTXGATE_E2E_PYTHON="$PWD/$VENV/bin/python"
exec cargo test "$@"

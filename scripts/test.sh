#!/usr/bin/env bash
# Runs the whole test suite on a fresh machine: prepares the Python venv with the real `openai` and `openai-agents`
# SDKs for the end-to-end tests (once), then `cargo test`. Extra arguments go to cargo test.
# The Codex CLI end-to-end test needs `codex` on PATH (.ci/run installs it); without it, and outside CI, it skips.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${CTXGATE_VENV:-.venv}"
OPENAI_AGENTS_VERSION="0.24.0"
if ! "$VENV/bin/python" -c "import openai, agents, sys; sys.exit(agents.__version__ != '$OPENAI_AGENTS_VERSION')" 2>/dev/null; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "openai>=1.100" "openai-agents==$OPENAI_AGENTS_VERSION"
fi
export CTXGATE_E2E_PYTHON="$PWD/$VENV/bin/python"
exec cargo test "$@"

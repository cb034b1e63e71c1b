#!/usr/bin/env bash
# The project's test command (README, CI): installs what the tests need into .venv, then runs
#   1. the Python test suite (engine, CLI, checker, language server through pytest-lsp),
#   2. the Neovim end-to-end test (a second real LSP client), when nvim is installed,
#   3. the VS Code end-to-end test in code-server + Chromium, unless ROOTRANK_SKIP_VSCODE=1.
# Each step prints a closing "N passed, M failed" line; the script exits non-zero if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
status=0

if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv || exit 2
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]" || exit 2

echo "== pytest"
.venv/bin/python -m pytest -q -p no:cacheprovider || status=1

if command -v nvim >/dev/null 2>&1 && [ -f tests/nvim/run.sh ]; then
  echo "== neovim end-to-end"
  RR_PY="$PWD/.venv/bin/python" bash tests/nvim/run.sh || status=1
fi

if [ "${ROOTRANK_SKIP_VSCODE:-0}" != "1" ] && [ -f tests/vscode/run-e2e.sh ]; then
  echo "== VS Code end-to-end"
  RR_PY="$PWD/.venv/bin/python" bash tests/vscode/run-e2e.sh || status=1
fi
exit $status

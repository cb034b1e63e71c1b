#!/usr/bin/env bash
# The project's test command (README, CI): installs what the tests need into .venv, then runs
#   0. ruff and mypy over the package and the tests,
#   1. the Python test suite (engine, CLI, checker, language server through pytest-lsp),
#      and the Neovim end-to-end test (tests/nvim, a second real LSP client) when nvim is installed,
#   2. the VS Code extension's lint and unit tests, and its end-to-end test in a real VS Code
#      (code-server + Chromium, installed on first use), unless ROOTRANK_SKIP_VSCODE=1.
# Each step prints a closing "N passed, M failed" line; the script exits non-zero if any step failed.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
status=0

if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv || exit 2
fi
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[dev]" || exit 2
# Heavy libraries of the users' own environments, for the tests that run them for real (tests/heavy.py):
# the CPU build of torch (on disk here), and the extras in requirements-test-heavy.txt. Never package deps.
if [ "${ROOTRANK_SKIP_HEAVY:-0}" != "1" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check "torch==2.13.0" -r requirements-test-heavy.txt \
    || { echo "installing the heavy test libraries failed"; exit 2; }
  # The version matrix's second column (tests/stack/): transformers 4.57 on top of the same torch and peft; and
  # the DeepSpeed (0.19.3, 0.19.4) and Lightning (2.6.6) venvs of the facts tests (under a minute once cached).
  bash scripts/matrix-env.sh .venv || { echo "making the version-matrix environments failed"; exit 2; }
fi

echo "== ruff and mypy"
.venv/bin/ruff check -q server tests || status=1
.venv/bin/mypy --no-error-summary || status=1

echo "== pytest"
# Unbuffered, so a CI log cut short still shows how far the suite got.
# A hung test fails alone after ROOTRANK_TEST_TIMEOUT s (tests/conftest.py); the whole run is bounded too.
PYTHONUNBUFFERED=1 timeout -k 60 3000 .venv/bin/python -m pytest -q -p no:cacheprovider || status=1

if [ "${ROOTRANK_SKIP_VSCODE:-0}" != "1" ] && [ -f package.json ]; then
  echo "== VS Code extension: lint and unit tests"
  if npm ci --no-audit --no-fund --loglevel=error >/dev/null; then
    npm run -s lint || status=1
    npm test 2>&1 | tail -12 || status=1
  else
    echo "npm ci failed"; status=1
  fi
  echo "== VS Code end-to-end (real VS Code: code-server + Chromium)"
  RR_E2E_PYTHON="$PWD/.venv/bin/python" timeout 1200 bash tests/vscode/run-e2e.sh || status=1
fi
exit $status

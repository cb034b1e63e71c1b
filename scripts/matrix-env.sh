#!/usr/bin/env bash
# The version matrix's second environment: .venv-tf457, a venv whose own site-packages holds transformers 4.57
# (requirements-test-transformers4.txt) and whose .pth file adds the test venv's site-packages behind it, so
# torch, peft and accelerate are the test venv's. tests/stack/ runs the same checks with both interpreters.
# Usage: scripts/matrix-env.sh [TEST_VENV]   (default .venv); idempotent, a few seconds once cached.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-.venv}
env=.venv-tf457
if [ ! -x "$env/bin/python" ]; then
  "$base/bin/python" -m venv --without-pip "$env"
fi
site=$(echo "$env"/lib/python3*/site-packages)
if ! grep -qs '^Version: 4.57.6$' "$site"/transformers-4.57.6.dist-info/METADATA; then
  "$base/bin/python" -m pip install -q --disable-pip-version-check --no-deps --target "$site" \
    -r requirements-test-transformers4.txt
fi
"$base/bin/python" -c "import sys; print(next(p for p in sys.path if p.endswith('site-packages')))" \
  > "$site/rootrank-test-venv.pth"
"$env/bin/python" -c "import transformers; assert transformers.__version__ == '4.57.6', transformers.__version__"

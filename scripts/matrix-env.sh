#!/usr/bin/env bash
# The version matrix's second environment: .venv-tf457, a venv whose own site-packages holds transformers 4.57
# (requirements-test-transformers4.txt) and whose .pth file adds the test venv's site-packages behind it, so
# torch, peft and accelerate are the test venv's. tests/stack/ runs the same checks with both interpreters.
# The same way, one venv per library version that tests/stack/test_matrix.py runs for the DeepSpeed and
# Lightning facts (requirements-test-stack-extras.txt): .venv-ds0193 and .venv-ds0194 (DeepSpeed either side of
# the keyword-tensor change), .venv-lightning (Lightning 2.6.6).
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

# extra ENV SPEC...: a venv over the test venv whose own site-packages holds SPEC (pinned, --no-deps: the rest
# comes from the test venv); redone only when the recorded SPEC changes. DeepSpeed ships an sdist only: it is
# built without its C++/CUDA ops (DS_BUILD_OPS=0) against the test venv's torch (--no-build-isolation).
extra() {
  local env=$1; shift
  [ -x "$env/bin/python" ] || "$base/bin/python" -m venv --without-pip "$env"
  local site; site=$(echo "$env"/lib/python3*/site-packages)
  if [ "$(cat "$site/rootrank-spec.txt" 2>/dev/null)" != "$*" ]; then
    DS_BUILD_OPS=0 "$base/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation \
      --upgrade --target "$site" "$@"
    echo "$*" > "$site/rootrank-spec.txt"
  fi
  cp "$env_pth" "$site/rootrank-test-venv.pth"
}
# Building DeepSpeed's sdist without isolation needs setuptools' own bdist_wheel (>= 70.1) in the test venv.
"$base/bin/python" -c "import setuptools.command.bdist_wheel" 2>/dev/null \
  || "$base/bin/python" -m pip install -q --disable-pip-version-check "setuptools>=70.1"
env_pth=$(echo "$env"/lib/python3*/site-packages)/rootrank-test-venv.pth
mapfile -t ds < <(grep -Eo '^[a-z-]+==[^ ]+' requirements-test-stack-extras.txt | grep -v '^deepspeed==\|^lightning\|^torchmetrics')
extra .venv-ds0193 deepspeed==0.19.3 "${ds[@]}"
extra .venv-ds0194 deepspeed==0.19.4 "${ds[@]}"
mapfile -t lightning < <(grep -Eo '^(lightning|lightning-utilities|torchmetrics)==[^ ]+' requirements-test-stack-extras.txt)
extra .venv-lightning "${lightning[@]}"
.venv-ds0193/bin/python -c "import deepspeed; assert deepspeed.__version__ == '0.19.3', deepspeed.__version__"
.venv-ds0194/bin/python -c "import deepspeed; assert deepspeed.__version__ == '0.19.4', deepspeed.__version__"
.venv-lightning/bin/python -c "import lightning; assert lightning.__version__ == '2.6.6', lightning.__version__"

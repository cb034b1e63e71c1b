#!/usr/bin/env bash
# Fill bundled/ for the VS Code extension: the rootrank server and its pure-Python dependencies, so the
# .vsix works with nothing but a Python interpreter (>= 3.10) on the user's machine.
#   bundled/libs/       pygls, lsprotocol, attrs, cattrs, typing_extensions, exceptiongroup, PyYAML (pure Python)
#   bundled/rootrank/   server/rootrank, with rules/ copied to bundled/rootrank/rules (the wheel's layout)
# The extension runs `python -m rootrank lsp` with PYTHONPATH=bundled/libs:bundled (importStrategy useBundled).
# Needs network access to PyPI once; the libraries are reused while requirements-bundle.txt is unchanged.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
OUT=$ROOT/bundled
REQ=$ROOT/requirements-bundle.txt
stamp=$(sha256sum "$REQ" | cut -d' ' -f1)

if [ "$(cat "$OUT/libs/.stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$OUT/libs"
  # --implementation py + --no-deps: only pure-Python wheels qualify; --require-hashes: exactly the pinned files.
  "$PY" -m pip install --quiet --disable-pip-version-check --no-cache-dir --no-compile \
      --target "$OUT/libs" --implementation py --no-deps --require-hashes -r "$REQ"
  # PyYAML is built from its sdist: drop the optional C loader (its pure-Python loader is used instead)
  find "$OUT/libs" \( -name '*.so' -o -name '*.pyd' \) -delete
  rm -rf "$OUT/libs/bin"
  echo "$stamp" > "$OUT/libs/.stamp"
fi

rm -rf "$OUT/rootrank"
cp -r "$ROOT/server/rootrank" "$OUT/rootrank"
if [ -d "$ROOT/rules" ]; then cp -r "$ROOT/rules" "$OUT/rootrank/rules"; fi
find "$OUT" -name __pycache__ -type d -prune -exec rm -rf {} +

# smoke test: the bundled server imports with only the bundled paths (no site-packages)
PYTHONPATH="$OUT/libs:$OUT" "$PY" -S -c 'import pygls.lsp.server, lsprotocol.types, yaml, rootrank' \
  || { echo "bundle_libs: the bundled server does not import" >&2; exit 1; }
echo "bundle_libs: $(find "$OUT/libs" -maxdepth 1 -name '*.dist-info' | wc -l) libraries, rootrank $(find "$OUT/rootrank" -name '*.py' | wc -l) modules, $(find "$OUT/rootrank/rules" -name '*.yaml' 2>/dev/null | wc -l) rule files"

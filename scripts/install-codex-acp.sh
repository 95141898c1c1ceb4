#!/usr/bin/env bash
# Installs Codex's ACP adapter that tests/acp_agent_e2e/codex.rs runs as the `acp` provider's
# agent: npm's @agentclientprotocol/codex-acp at a pinned version, into
# ${XDG_CACHE_HOME:-~/.cache}/rawko-test/codex-acp-<version>. It brings Codex itself (the
# @openai/codex its package.json names, with the native build for this platform as an optional
# dependency, whose `codex app-server` the adapter starts), so nothing else is downloaded; no
# install script runs. A second run installs nothing. The last line of stdout is the adapter's
# entry point (run it with `node`):
#
#   RAWKO_CODEX_ACP=$(scripts/install-codex-acp.sh) cargo test -p rawko --test acp_agent_e2e codex
#
# Progress goes to stderr.
set -euo pipefail

CODEX_ACP_VERSION=2.6.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/rawko-test"
dir="$cache/codex-acp-$CODEX_ACP_VERSION"
package="$dir/node_modules/@agentclientprotocol/codex-acp"
entry="$package/dist/index.js"

# The platform package of @openai/codex that npm picks for this machine (its bin/codex.js looks
# for the same one).
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) platform=linux-x64 ;;
  Linux-aarch64 | Linux-arm64) platform=linux-arm64 ;;
  Darwin-x86_64) platform=darwin-x64 ;;
  Darwin-arm64) platform=darwin-arm64 ;;
  *) echo "error: no Codex build for $(uname -s) $(uname -m)" >&2; exit 1 ;;
esac

installed() {
  [ -f "$entry" ] && [ -d "$dir/node_modules/@openai/codex-$platform/vendor" ] &&
    grep -q "\"version\": \"$CODEX_ACP_VERSION\"" "$package/package.json"
}

if ! installed; then
  command -v npm >/dev/null 2>&1 || { echo "error: npm not found: install Node.js and npm" >&2; exit 1; }
  echo "==> installing codex-acp $CODEX_ACP_VERSION (npm @agentclientprotocol/codex-acp) into $dir" >&2
  started=$(date +%s)
  rm -rf "$dir"
  mkdir -p "$dir"
  echo '{"private":true}' > "$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --no-package-lock --ignore-scripts \
    --loglevel=error "@agentclientprotocol/codex-acp@$CODEX_ACP_VERSION" >&2
  installed || {
    echo "error: codex-acp $CODEX_ACP_VERSION did not install ($entry or Codex's $platform build is missing)" >&2
    exit 1
  }
  echo "==> installed in $(($(date +%s) - started))s ($(du -sh "$dir" | cut -f1))" >&2
fi
echo "$entry"

#!/usr/bin/env bash
# Installs the ACP adapter of Claude Code that tests/acp_agent_e2e/ runs as the `acp` provider's
# agent: npm's @zed-industries/claude-code-acp at a pinned version, into
# ${XDG_CACHE_HOME:-~/.cache}/rawko-test/claude-code-acp-<version>. It brings Claude Code itself
# (the Claude Agent SDK's bundled cli.js), so nothing else is downloaded; no install script runs.
# A second run installs nothing. The last line of stdout is the adapter's entry point (run it with
# `node`):
#
#   RAWKO_CLAUDE_ACP=$(scripts/install-claude-code-acp.sh) cargo test -p rawko --test acp_agent_e2e
#
# Progress goes to stderr.
set -euo pipefail

CLAUDE_CODE_ACP_VERSION=0.16.2
cache="${XDG_CACHE_HOME:-$HOME/.cache}/rawko-test"
dir="$cache/claude-code-acp-$CLAUDE_CODE_ACP_VERSION"
entry="$dir/node_modules/@zed-industries/claude-code-acp/dist/index.js"

installed() {
  [ -f "$entry" ] && [ -f "$dir/node_modules/@anthropic-ai/claude-agent-sdk/cli.js" ] &&
    grep -q "\"version\": \"$CLAUDE_CODE_ACP_VERSION\"" "$dir/node_modules/@zed-industries/claude-code-acp/package.json"
}

if ! installed; then
  command -v npm >/dev/null 2>&1 || { echo "error: npm not found: install Node.js and npm" >&2; exit 1; }
  echo "==> installing claude-code-acp $CLAUDE_CODE_ACP_VERSION (npm @zed-industries/claude-code-acp) into $dir" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  echo '{"private":true}' > "$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --no-package-lock --ignore-scripts \
    --loglevel=error "@zed-industries/claude-code-acp@$CLAUDE_CODE_ACP_VERSION" >&2
  installed || { echo "error: claude-code-acp $CLAUDE_CODE_ACP_VERSION did not install ($entry is missing)" >&2; exit 1; }
fi
echo "$entry"

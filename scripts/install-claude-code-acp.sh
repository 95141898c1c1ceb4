#!/usr/bin/env bash
# Installs the ACP adapter of Claude Code that tests/acp_agent_e2e/ runs as the `acp` provider's
# agent: npm's @agentclientprotocol/claude-agent-acp (formerly @zed-industries/claude-code-acp) at
# a pinned version, into ${XDG_CACHE_HOME:-~/.cache}/rawko-test/claude-agent-acp-<version>. It
# brings Claude Code itself (the Claude Agent SDK with its native `claude` for this platform), so
# nothing else is downloaded; no install script runs. A second run installs nothing. The last line
# of stdout is the adapter's entry point (run it with `node`):
#
#   RAWKO_CLAUDE_ACP=$(scripts/install-claude-code-acp.sh) cargo test -p rawko --test acp_agent_e2e
#
# Progress goes to stderr.
set -euo pipefail

CLAUDE_AGENT_ACP_VERSION=0.101.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/rawko-test"
dir="$cache/claude-agent-acp-$CLAUDE_AGENT_ACP_VERSION"
package="$dir/node_modules/@agentclientprotocol/claude-agent-acp"
entry="$package/dist/index.js"

installed() {
  [ -f "$entry" ] && [ -f "$dir/node_modules/@anthropic-ai/claude-agent-sdk/package.json" ] &&
    compgen -G "$dir/node_modules/@anthropic-ai/claude-agent-sdk-*/claude" >/dev/null &&
    grep -q "\"version\": \"$CLAUDE_AGENT_ACP_VERSION\"" "$package/package.json"
}

if ! installed; then
  command -v npm >/dev/null 2>&1 || { echo "error: npm not found: install Node.js and npm" >&2; exit 1; }
  echo "==> installing claude-agent-acp $CLAUDE_AGENT_ACP_VERSION (npm @agentclientprotocol/claude-agent-acp) into $dir" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  echo '{"private":true}' > "$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --no-package-lock --ignore-scripts \
    --loglevel=error "@agentclientprotocol/claude-agent-acp@$CLAUDE_AGENT_ACP_VERSION" >&2
  installed || { echo "error: claude-agent-acp $CLAUDE_AGENT_ACP_VERSION did not install ($entry or its Claude Code is missing)" >&2; exit 1; }
fi
echo "$entry"

#!/usr/bin/env bash
# Installs what tests/acp_sdk.rs drives `rawko acp` with: the official ACP TypeScript SDK
# (@agentclientprotocol/sdk, pinned by tests/acp_sdk/package-lock.json) into
# tests/acp_sdk/node_modules, with `npm ci` and no install scripts. A second run installs nothing
# while the lock file is unchanged. Needs Node.js 20 or later.
#
#   scripts/install-acp-sdk.sh && cargo test -p rawko --test acp_sdk
set -euo pipefail
dir="$(cd "$(dirname "$0")/.." && pwd)/tests/acp_sdk"
cd "$dir"
command -v node >/dev/null 2>&1 || { echo "error: node not found: install Node.js 20 or later" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || { echo "error: npm not found: install Node.js 20 or later" >&2; exit 1; }
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
stamp="node_modules/.rawko-lock-sha256"
want="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "ACP SDK already installed in $dir/node_modules" >&2
  exit 0
fi
npm ci --ignore-scripts --no-audit --no-fund >&2
echo "$want" > "$stamp"
echo "ACP SDK installed in $dir/node_modules" >&2

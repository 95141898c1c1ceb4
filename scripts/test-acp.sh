#!/usr/bin/env bash
# Drives `rawko acp` with the official ACP TypeScript SDK (tests/acp: its ClientSideConnection,
# pinned in tests/acp/package-lock.json). Installs the SDK once with `npm ci` (again only when the
# lock file changes). The rawko binary is $RAWKO_BIN, by default target/debug/rawko.
# The last line is `N passed, N failed`. `--install` only installs the SDK (the `acp` provider's
# fault tests in tests/acp_agent_e2e run tests/acp/fault-agent.mjs with it).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
dir="$repo/tests/acp"
command -v node >/dev/null 2>&1 || { echo "error: node not found: install Node.js 20 or later" >&2; exit 1; }
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
stamp="$dir/node_modules/.rawko-lock-$(sha256sum "$dir/package-lock.json" | cut -c1-16)"
if [ ! -e "$stamp" ]; then
  echo "==> npm ci in tests/acp (@agentclientprotocol/sdk)"
  (cd "$dir" && npm ci --ignore-scripts --no-progress >/dev/null)
  touch "$stamp"
fi
if [ "${1:-}" = --install ]; then
  exit 0
fi
bin="$(realpath -m "${RAWKO_BIN:-$repo/target/debug/rawko}")"
if [ ! -x "$bin" ]; then
  (cd "$repo" && cargo build -p rawko --locked)
fi
RAWKO_BIN="$bin" node "$dir/e2e.mjs" "$@"

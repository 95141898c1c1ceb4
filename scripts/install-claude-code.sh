#!/usr/bin/env bash
# Installs the Claude Code CLI that tests/claude_code_e2e/ runs: npm's @anthropic-ai/claude-code
# at a pinned version, into ${XDG_CACHE_HOME:-~/.cache}/rawko-test/claude-code-<version>. The npm
# package carries the native build for each platform as an optional dependency, so nothing else is
# downloaded, and no install script is run: the test uses the platform package's `claude` itself.
# A second run installs nothing. The last line of stdout is the path of the `claude` executable:
#
#   RAWKO_CLAUDE_BIN=$(scripts/install-claude-code.sh) cargo test -p rawko --test claude_code_e2e
#
# With a file argument, the path is also written to that file. Progress goes to stderr.
set -euo pipefail

CLAUDE_CODE_VERSION=2.1.330
cache="${XDG_CACHE_HOME:-$HOME/.cache}/rawko-test"
dir="$cache/claude-code-$CLAUDE_CODE_VERSION"

need() {
  command -v "$1" >/dev/null 2>&1 || { echo "error: $1 not found: $2" >&2; exit 1; }
}

# The platform package npm picks for this machine (claude-code's own install.cjs does the same).
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) platform=linux-x64 ;;
  Linux-aarch64 | Linux-arm64) platform=linux-arm64 ;;
  Darwin-x86_64) platform=darwin-x64 ;;
  Darwin-arm64) platform=darwin-arm64 ;;
  *) echo "error: no Claude Code build for $(uname -s) $(uname -m)" >&2; exit 1 ;;
esac
if [ "$(uname -s)" = Linux ] && ldd --version 2>&1 | grep -qi musl; then
  platform="$platform-musl"
fi
bin="$dir/node_modules/@anthropic-ai/claude-code-$platform/claude"

installed() {
  [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "^$CLAUDE_CODE_VERSION "
}

if ! installed; then
  need npm "install Node.js and npm (apt-get install npm)"
  echo "==> installing Claude Code $CLAUDE_CODE_VERSION (npm @anthropic-ai/claude-code) into $dir" >&2
  started=$(date +%s)
  rm -rf "$dir"
  mkdir -p "$dir"
  echo '{"private":true}' > "$dir/package.json"
  # --ignore-scripts: the postinstall only copies the platform binary over a placeholder (and
  # would need Node 22); --engine-strict=false for the same reason.
  npm install --prefix "$dir" --no-audit --no-fund --no-package-lock --ignore-scripts \
    --engine-strict=false --loglevel=error "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" >&2
  installed || {
    echo "error: Claude Code $CLAUDE_CODE_VERSION did not install: $bin is missing or is not version $CLAUDE_CODE_VERSION" >&2
    exit 1
  }
  echo "==> installed in $(($(date +%s) - started))s ($(du -sh "$dir" | cut -f1))" >&2
fi

if [ $# -gt 0 ]; then
  echo "$bin" > "$1"
fi
echo "$bin"

#!/usr/bin/env bash
# Peak memory, output and state of `rawko run` when an ACP agent floods it with 20 MiB of text in
# one turn (issue 30, part 3): the fault agent of tests/acp (scripts/test-acp.sh --install first).
#
#   scripts/measure-acp-flood.sh [RAWKO_BINARY]     (default: target/debug/rawko)
set -u
BIN=${1:-target/debug/rawko}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
FA=$(cd "$(dirname "$0")/.." && pwd)/tests/acp/fault-agent.mjs
ROOT=$(mktemp -d /tmp/rawko-flood-XXXXXX)
mkdir -p "$ROOT/home" "$ROOT/project" && echo hi >"$ROOT/project/README.md"
cd "$ROOT/project" || exit 1
start=$(date +%s)
HOME=$ROOT/home XDG_CONFIG_HOME=$ROOT/home/.config XDG_STATE_HOME=$ROOT/home/.local/state \
  XDG_RUNTIME_DIR=$ROOT/home/run \
  "$BIN" run "Say a lot" --provider acp --agent-command "node $FA flood" >"$ROOT/out.txt" 2>"$ROOT/err.txt" &
pid=$!
peak=0
while kill -0 $pid 2>/dev/null; do
  hwm=$(awk '/VmHWM/ {print $2}' /proc/$pid/status 2>/dev/null)
  [ -n "$hwm" ] && peak=$hwm
  sleep 0.2
done
wait $pid
rc=$?
echo "exit $rc after $(($(date +%s) - start)) s; peak RSS $((peak / 1024)) MiB; stdout $(($(stat -c %s "$ROOT/out.txt") / 1024)) KiB"
echo "state directory: $(($(du -sb "$ROOT/home/.local/state/rawko" | cut -f1) / 1024)) KiB"
rm -rf "$ROOT"

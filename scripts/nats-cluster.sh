#!/usr/bin/env bash
# A NATS JetStream cluster on loopback for the team tests (issue 37).
#
#   scripts/nats-cluster.sh start DIR [NODES]   # NODES: 3 (default) or 1
#   scripts/nats-cluster.sh stop DIR
#
# `start` writes DIR/n<i>.conf for each node (its own `server_name`, client, route and monitoring
# ports, store dir DIR/store-n<i>, pid file DIR/n<i>.pid, log DIR/n<i>.log), starts the nodes,
# waits until every node's /healthz says ok (JetStream has a meta leader: a fresh cluster needs all
# its nodes up for that), writes the client URLs to DIR/urls and prints them comma-separated on the
# last line of stdout. The ports are the first free run of ten from $RAWKO_NATS_PORT_BASE (default
# 14222): client base+i, routes base+3+i, monitoring base+6+i; nothing listens beyond 127.0.0.1.
# `stop` sends SIGTERM to every node by its pid file (a clean shutdown), waits for each to exit
# (SIGKILL after 10 s) and leaves DIR (logs, stores) for the caller to inspect or delete.
#
# The server is $RAWKO_NATS_SERVER, or the one scripts/install-nats.sh installs (pinned version).
# Progress goes to stderr.
set -euo pipefail

usage() { echo "usage: $0 start DIR [NODES] | stop DIR" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1
dir=$2

port_free() {
  python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as nats-server binds: TIME_WAIT is free
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
finally:
    s.close()
PY
}

healthy() { # healthy PORT: the node's monitoring endpoint says {"status":"ok"}
  python3 - "$1" <<'PY'
import sys, urllib.request
try:
    body = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/healthz", timeout=2).read()
except Exception:
    sys.exit(1)
sys.exit(0 if b'"ok"' in body else 1)
PY
}

stop_nodes() {
  local pidfile pid i
  for pidfile in "$dir"/n*.pid; do
    [ -f "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    if kill -TERM "$pid" 2>/dev/null; then
      for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && { echo "==> $pidfile: still running after 10 s, SIGKILL" >&2; kill -KILL "$pid" 2>/dev/null || true; }
    fi
    rm -f "$pidfile"
  done
}

case "$cmd" in
  start)
    nodes=${3:-3}
    case "$nodes" in 1 | 3) ;; *) echo "error: NODES must be 1 or 3" >&2; exit 2 ;; esac
    server=${RAWKO_NATS_SERVER:-$("$(dirname "$0")/install-nats.sh" | tail -n 1)}
    [ -x "$server" ] || { echo "error: no nats-server at $server" >&2; exit 1; }
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    # Ports, for base B: client B+i, route B+3+i, monitoring B+6+i (i = 0..2); B steps by 10.
    base=${RAWKO_NATS_PORT_BASE:-14222}
    for _ in $(seq 50); do
      ok=1
      for p in $(seq "$base" $((base + 9))); do port_free "$p" || { ok=0; break; }; done
      [ $ok = 1 ] && break
      base=$((base + 10))
    done
    [ $ok = 1 ] || { echo "error: no ten free ports from ${RAWKO_NATS_PORT_BASE:-14222}" >&2; exit 1; }
    routes=""
    for i in $(seq 0 $((nodes - 1))); do routes="$routes
    nats-route://127.0.0.1:$((base + 3 + i))"; done
    urls=""
    launched=""
    for i in $(seq 0 $((nodes - 1))); do
      n=$((i + 1))
      cluster=""
      if [ "$nodes" -gt 1 ]; then
        cluster="cluster {
  name: rawko-test
  listen: 127.0.0.1:$((base + 3 + i))
  routes: [$routes
  ]
}"
      fi
      cat > "$dir/n$n.conf" <<CONF
server_name: n$n
listen: 127.0.0.1:$((base + i))
http: 127.0.0.1:$((base + 6 + i))
pid_file: "$dir/n$n.pid"
jetstream {
  store_dir: "$dir/store-n$n"
  max_memory_store: 64MB
  max_file_store: 1GB
}
$cluster
CONF
      # The server itself, not a subshell: its own pid_file records the pid `stop` signals.
      nohup "$server" -c "$dir/n$n.conf" >> "$dir/n$n.log" 2>&1 < /dev/null &
      launched="$launched $!"
      urls="${urls:+$urls,}nats://127.0.0.1:$((base + i))"
    done
    echo "$urls" > "$dir/urls"
    echo "==> $nodes node(s) starting in $dir (client ports $base..$((base + nodes - 1)))" >&2
    started=$(date +%s)
    for i in $(seq 0 $((nodes - 1))); do
      until healthy $((base + 6 + i)); do
        pid=$(echo "$launched" | cut -d' ' -f$((i + 2)))
        if ! kill -0 "$pid" 2>/dev/null || [ $(($(date +%s) - started)) -ge 30 ]; then
          echo "error: node n$((i + 1)) exited or not healthy after 30 s; its log:" >&2
          tail -n 20 "$dir/n$((i + 1)).log" >&2
          stop_nodes
          exit 1
        fi
        sleep 0.2
      done
    done
    echo "==> JetStream ready in $(($(date +%s) - started))s" >&2
    echo "$urls"
    ;;
  stop)
    [ -d "$dir" ] || { echo "error: no directory $dir" >&2; exit 1; }
    stop_nodes
    echo "==> stopped the nodes of $dir" >&2
    ;;
  *) usage ;;
esac

#!/usr/bin/env bash
# The end-to-end test of rawko's team on NATS JetStream (issue 37, §3): a real three-node
# JetStream cluster on loopback (scripts/nats-cluster.sh), a bare git repository as the shared
# remote, three `rawko worker`s (one clone each), an attached editor (`rawko serve --nats`, driven
# by scripts/team/driver.py) that answers every approval 250 ms after its prompt, a second attached
# editor that answers none (`driver.py editor --silent`), and 100 scripted tasks
# (tests/team_fixture: a Write blocked in the first phase and asked of the editors, two Bash
# appends to trace.txt, two workflow_step moves). While the tasks run, one worker that holds tasks
# is killed with SIGKILL, and a few seconds later one NATS node is stopped. Then it checks: all
# 100 complete; each task's branch rawko/<taskId> on the remote holds out/result.txt and trace.txt
# with exactly one line per Bash call; no log has a tool_finished id twice; the editor was asked
# each approval once; the silent editor was asked them too (each at most once; all but those asked while the
# stopped node fails over), and every prompt it got was withdrawn after the first editor's answer
# (the first answer wins, the other face's prompt is withdrawn); the killed worker's tasks went
# on on another worker. And it measures: tasks per second through the team, p50/p99 from a blocked
# call (its tool_started record) to the editor's receipt of the prompt, p50/p99 from the first
# editor's answer to the silent editor's receipt of the withdrawal, and the time from the kill to
# the first record of each lost task's log written after it.
#
#   scripts/test-team.sh            # ends with `N passed, N failed`; exit 1 on any failure
#
# Environment:
#   RAWKO_BIN           the rawko binary (default target/debug/rawko, built if missing)
#   RAWKO_NATS_SERVER   nats-server (default: the one scripts/install-nats.sh installs)
#   RAWKO_TEAM_E2E=0    skip (says so); without a nats-server that can be installed it skips
#                       too, except under CI (CI=true), where it fails instead
#   RAWKO_TEAM_TASKS    how many tasks (default 100)
#   RAWKO_TEAM_ACK_WAIT the workers' --ack-wait in seconds (default: not given, the default 25)
#   RAWKO_TEAM_TIMEOUT  how long to wait for every task to finish, in seconds (default 600)
#   RAWKO_TEAM_FIGURES  where to write the figures as JSON (default <run dir>/figures.json)
#   RAWKO_TEAM_KEEP=1   keep the run's directory (logs, clones, cluster stores) even when all pass;
#                       it is always kept after a failure, and its path printed
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

if [ "${RAWKO_TEAM_E2E:-1}" = 0 ]; then
  echo "SKIPPED test-team: RAWKO_TEAM_E2E=0"
  exit 0
fi
ci=0
case "${CI:-}" in "" | 0 | false) ;; *) ci=1 ;; esac

tasks=${RAWKO_TEAM_TASKS:-100}
timeout_s=${RAWKO_TEAM_TIMEOUT:-600}
ack_wait=${RAWKO_TEAM_ACK_WAIT:-}
workers=3
max_tasks=4
workflow=team-e2e
fixture=$root/tests/team_fixture
script=$fixture/script.yaml
driver=$root/scripts/team/driver.py
# What every task's branch holds at the end (see tests/team_fixture/script.yaml).
expect_files='{"out/result.txt": "written by a team task\n", "trace.txt": "step 1\nstep 2\n"}'

now_ms() { python3 -c 'import time; print(int(time.time() * 1000))'; }
say() { echo "==> $*" >&2; }
# Copies stdin to stdout, each line prefixed with the time it was read (ms since the epoch).
stamp() {
  python3 -u -c 'import sys, time
for line in sys.stdin:
    sys.stdout.write("%d %s" % (time.time() * 1000, line))
    sys.stdout.flush()'
}

passed=0
failed=0
pass() { passed=$((passed + 1)); echo "PASS $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
# Ends the run early: the failure, the cleanup (trap), the count.
abort() {
  fail "$*"
  echo "$passed passed, $failed failed"
  exit 1
}

# -- the tools --------------------------------------------------------------------------------
command -v python3 >/dev/null 2>&1 || { echo "error: python3 not found" >&2; exit 1; }
command -v git >/dev/null 2>&1 || { echo "error: git not found" >&2; exit 1; }
rawko=${RAWKO_BIN:-$root/target/debug/rawko}
if [ ! -x "$rawko" ]; then
  say "building rawko (cargo build -p rawko)"
  cargo build -p rawko --locked >&2
fi
if ! "$rawko" worker --help >/dev/null 2>&1; then
  abort "$rawko has no \`worker\` command: $("$rawko" worker --help 2>&1 | head -n 1)"
fi
server=${RAWKO_NATS_SERVER:-}
if [ -z "$server" ]; then
  if ! server=$("$root/scripts/install-nats.sh" | tail -n 1) || [ ! -x "$server" ]; then
    if [ $ci = 1 ]; then
      abort "nats-server could not be installed (scripts/install-nats.sh), and under CI this test must not be skipped (RAWKO_TEAM_E2E=0 skips it)"
    fi
    echo "SKIPPED test-team: nats-server could not be installed. To run it: RAWKO_NATS_SERVER=/path/to/nats-server scripts/test-team.sh"
    exit 0
  fi
fi
export RAWKO_NATS_SERVER=$server

# -- the run's directory, and everything it starts stopped on exit -----------------------------
work=$(mktemp -d "${TMPDIR:-/tmp}/rawko-team.XXXXXX")
nats_dir=$work/nats
declare -A worker_pid=()
# The editors' drivers: the one that answers, the silent one.
driver_pid=""
driver2_pid=""
cleanup() {
  local rc=$? pid name i
  trap - EXIT INT TERM
  for pid in $driver_pid $driver2_pid; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in $driver_pid $driver2_pid; do
    for i in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  for name in "${!worker_pid[@]}"; do
    pid=${worker_pid[$name]}
    kill -TERM "$pid" 2>/dev/null || true
  done
  for name in "${!worker_pid[@]}"; do
    pid=${worker_pid[$name]}
    for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  if [ -d "$nats_dir" ]; then "$root/scripts/nats-cluster.sh" stop "$nats_dir" 2>/dev/null || true; fi
  if [ "$rc" = 0 ] && [ "$failed" = 0 ] && [ "${RAWKO_TEAM_KEEP:-0}" != 1 ]; then
    rm -rf "$work"
  else
    echo "(the run's directory is kept: $work)" >&2
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Each process group has a home of its own, so the user's config and task store are never read.
home_of() {
  local h=$work/homes/$1
  mkdir -p "$h/.config" "$h/.local/state" "$h/.cache" "$h/.pi/agent" "$h/run"
  chmod 700 "$h/run"
  echo "$h"
}
# run_as WHO CMD...: becomes CMD (exec, then env execs it) with WHO's home: call it in a subshell,
# `(run_as WHO CMD...) &`, and $! is CMD's own pid.
run_as() {
  local h
  h=$(home_of "$1")
  shift
  exec env HOME="$h" XDG_CONFIG_HOME="$h/.config" XDG_STATE_HOME="$h/.local/state" \
    XDG_CACHE_HOME="$h/.cache" PI_CODING_AGENT_DIR="$h/.pi/agent" XDG_RUNTIME_DIR="$h/run" \
    "$@"
}
# A client command (submit, tasks): from the submitter's clone, with a time limit.
client() {
  (cd "$work/clones/submit" && run_as submit timeout 60 "$rawko" "$@")
}
list_json() { client tasks list --nats "$urls" --json 2>>"$work/client.stderr"; }

say "run directory $work"

# -- the cluster -----------------------------------------------------------------------------
if urls=$("$root/scripts/nats-cluster.sh" start "$nats_dir" 3 2>"$work/nats-start.log" | tail -n 1) && [ -n "$urls" ]; then
  pass "a 3-node JetStream cluster on loopback is up ($urls)"
else
  cat "$work/nats-start.log" >&2
  abort "the 3-node cluster did not start (scripts/nats-cluster.sh start)"
fi

# -- the shared remote, and a clone per worker, the submitter and each editor ---------------
remote=$work/remote.git
(
  set -e
  git init -q --bare "$remote"
  seed=$work/seed
  git init -q "$seed"
  cd "$seed"
  printf '# team e2e\n\nThe repository the workers of scripts/test-team.sh share.\n' > README.md
  mkdir -p .rawko/workflows
  cp -R "$fixture/workflows/$workflow" .rawko/workflows/
  git add -A
  git -c user.name="rawko team test" -c user.email=team@rawko.invalid commit -q -m "the team test's project"
  git push -q "$remote" HEAD:refs/heads/main
  git --git-dir="$remote" symbolic-ref HEAD refs/heads/main
  for who in w1 w2 w3 submit editor editor2; do git clone -q "$remote" "$work/clones/$who"; done
) >"$work/git-setup.log" 2>&1 || { cat "$work/git-setup.log" >&2; abort "the bare remote and its clones could not be made"; }
pass "a bare remote with the workflow $workflow, and a clone per worker, the submitter and each editor"

# -- the attached editors: one answers every approval, the other (--silent) none --------------
# One after the other, each waited for until it watches the team's asks (a consumer of the asks
# bucket, seen on the nodes' monitoring endpoints): the first creates the team's buckets, so the
# second (and the workers after them) only opens them. Started at once on a fresh cluster, both
# create them, and one face was seen to start watching only 10 s later (rawko's NATS request
# timeout: concurrent creates of one replicated stream may go unanswered); a face that is not
# watching yet is not asked the approvals answered meanwhile.
editor_dir=$work/editor
editor2_dir=$work/editor2
monitors=()
for conf in "$nats_dir"/n*.conf; do
  monitors+=(--monitor "http://$(sed -n 's/^http: *//p' "$conf")")
done
# start_editor NAME PIDVAR WATCHERS WHAT [OPTION...]: starts `driver.py editor OPTION...` as NAME
# (its clone, its home, its --out $work/NAME, its stdout/stderr $work/NAME.driver.*), sets PIDVAR
# to its pid (for the cleanup), and waits until it is initialized and WATCHERS faces watch the
# asks bucket.
start_editor() {
  local name=$1 pidvar=$2 want=$3 what=$4 t0 n=0 started_pid
  shift 4
  t0=$(now_ms)
  (run_as "$name" python3 "$driver" editor "$@" --rawko "$rawko" --nats "$urls" \
    --workspace "$work/clones/$name" --out "$work/$name" </dev/null \
    >"$work/$name.driver.stdout" 2>"$work/$name.driver.stderr") &
  started_pid=$!
  printf -v "$pidvar" '%s' "$started_pid"
  for _ in $(seq 300); do
    if [ -f "$work/$name/ready" ]; then
      n=$(python3 "$driver" watchers "${monitors[@]}" 2>/dev/null || echo 0)
      [ "$n" -ge "$want" ] && break
    fi
    kill -0 "$started_pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -f "$work/$name/ready" ] && [ "$n" -ge "$want" ]; then
    pass "$what is initialized and watches the team's asks ($(($(now_ms) - t0)) ms after its start)"
  else
    tail -n 20 "$work/$name.driver.stderr" "$work/$name/driver.log" "$work/$name/serve.stderr" >&2 2>/dev/null || true
    abort "$what was not initialized and watching the team's asks within 30 s ($n of $want faces watch them)"
  fi
}
# The first answers each approval 250 ms after its prompt: long enough for the silent editor to be
# asked too (the two faces' watches differ by a few ms), short beside a task (seconds).
start_editor editor driver_pid 1 "the editor (rawko serve --nats, scripts/team/driver.py)" --answer-delay-ms 250
start_editor editor2 driver2_pid 2 "the silent editor (rawko serve --nats, scripts/team/driver.py editor --silent)" --silent

# -- the workers -----------------------------------------------------------------------------
for i in $(seq "$workers"); do
  name=w$i
  # Its stderr goes to NAME.log with each line stamped (ms since the epoch) as it is read.
  (run_as "$name" "$rawko" worker --nats "$urls" --workspace "$work/clones/$name" --name "$name" \
    --max-tasks "$max_tasks" ${ack_wait:+--ack-wait "$ack_wait"} </dev/null >"$work/$name.stdout" \
    2> >(stamp >"$work/$name.log")) &
  worker_pid[$name]=$!
  # Out of the job table, so that the kill -9 below is not reported as `Killed` on stderr.
  disown "$!"
done
ready=0
for _ in $(seq 300); do
  ready=0
  for i in $(seq "$workers"); do
    grep -q "rawko worker w$i: serving" "$work/w$i.log" 2>/dev/null && ready=$((ready + 1))
  done
  [ $ready = "$workers" ] && break
  for name in "${!worker_pid[@]}"; do
    kill -0 "${worker_pid[$name]}" 2>/dev/null || { tail -n 20 "$work/$name.log" >&2; abort "worker $name exited at start"; }
  done
  sleep 0.1
done
if [ $ready = "$workers" ]; then
  pass "$workers workers serve the repository ($(sed -n 's/.*serving //p' "$work/w1.log" | head -n 1))"
else
  tail -n 5 "$work"/w*.log >&2
  abort "only $ready of $workers workers said they were serving within 30 s"
fi

# -- the submissions: $tasks tasks, 8 at a time -------------------------------------------------
mkdir -p "$work/submit"
say "submitting $tasks tasks"
first_submit_ms=$(now_ms)
batch=()
for i in $(seq "$tasks"); do
  client submit "team task $i" --nats "$urls" --workflow "$workflow" --provider scripted \
    --script "$script" --json >"$work/submit/$i.json" 2>"$work/submit/$i.err" &
  batch+=($!)
  if [ ${#batch[@]} -ge 8 ] || [ "$i" = "$tasks" ]; then
    for pid in "${batch[@]}"; do wait "$pid" || true; done
    batch=()
  fi
done
submitted_ms=$(now_ms)
python3 - "$work/submit" "$tasks" >"$work/ids" <<'PY'
import json, sys
for i in range(1, int(sys.argv[2]) + 1):
    try:
        with open(f"{sys.argv[1]}/{i}.json") as f:
            print(json.load(f)["taskId"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
PY
n_ids=$(sort -u "$work/ids" | grep -c . || true)
if [ "$n_ids" = "$tasks" ]; then
  pass "$tasks tasks submitted with distinct ids in $(((submitted_ms - first_submit_ms) / 1000)) s (rawko submit --json)"
else
  for i in $(seq "$tasks"); do
    if ! grep -q taskId "$work/submit/$i.json" 2>/dev/null; then
      echo "submit $i: stdout $(head -c 300 "$work/submit/$i.json"); stderr $(tail -c 300 "$work/submit/$i.err")" >&2
      break
    fi
  done
  abort "only $n_ids distinct task ids from $tasks submissions"
fi

# -- kill -9 a worker that holds tasks, then stop a NATS node --------------------------------
# The victim: the worker holding the most tasks (by its own stderr: took/resumed, not yet ended)
# once a task has ended, when it holds 3 or more.
victim=""
worker_logs=()
for i in $(seq "$workers"); do worker_logs+=(--log "$work/w$i.log"); done
for _ in $(seq 300); do
  picked=$(python3 "$driver" busiest "${worker_logs[@]}" --min-finished 1 --min-held 3 2>/dev/null || true)
  if [ -n "$picked" ]; then
    victim=${picked%% *}
    break
  fi
  sleep 0.2
done
kill_ms=0
node_stop_ms=0
if [ -z "$victim" ]; then
  fail "a worker held 3 tasks or more, with one ended, within 60 s (nothing to kill): $(tail -n 3 "$work"/w*.log | tr '\n' ' ')"
else
  kill -KILL "${worker_pid[$victim]}"
  kill_ms=$(now_ms)
  for _ in $(seq 50); do kill -0 "${worker_pid[$victim]}" 2>/dev/null || break; sleep 0.1; done
  unset "worker_pid[$victim]"
  python3 "$driver" held --log "$work/$victim.log" >"$work/held" || true
  list_json >"$work/list-at-kill.json" || true
  say "killed worker $victim (SIGKILL) holding $(grep -c . "$work/held" || true) task(s): $(tr '\n' ' ' <"$work/held")"
  sleep 3
  node_pid=$(cat "$nats_dir/n1.pid")
  kill -TERM "$node_pid" || fail "NATS node n1 (pid $node_pid) could not be stopped"
  node_stop_ms=$(now_ms)
  say "stopped NATS node n1 (SIGTERM, pid $node_pid) $((node_stop_ms - kill_ms)) ms after the kill"
  for _ in $(seq 100); do kill -0 "$node_pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$node_pid" 2>/dev/null; then fail "NATS node n1 still runs 10 s after SIGTERM"; fi
fi

# -- wait until every task is finished -------------------------------------------------------
say "waiting for $tasks tasks to finish (at most $timeout_s s)"
start_wait=$(date +%s)
last_report=0
all_done=0
while :; do
  if list_json >"$work/list.json.tmp" 2>/dev/null; then
    mv "$work/list.json.tmp" "$work/list.json"
    if python3 "$driver" finished <"$work/list.json" && [ "$(python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); v=v.get("tasks",v) if isinstance(v,dict) else v; print(len(v))' "$work/list.json")" -ge "$tasks" ]; then
      all_done=1
      break
    fi
  fi
  elapsed=$(($(date +%s) - start_wait))
  if [ $((elapsed - last_report)) -ge 10 ]; then
    last_report=$elapsed
    if [ -f "$work/list.json" ]; then
      echo "    ${elapsed}s: $(python3 "$driver" progress <"$work/list.json" 2>&1); the editor was asked $(grep -c . "$editor_dir/asks.jsonl" 2>/dev/null || true) approvals, the silent one $(grep -c . "$editor2_dir/asks.jsonl" 2>/dev/null || true) ($(grep -c approvalWithdrawn "$editor2_dir/withdrawn.jsonl" 2>/dev/null || true) withdrawn)" >&2
    else
      echo "    ${elapsed}s: tasks list gives nothing yet" >&2
    fi
  fi
  [ "$elapsed" -ge "$timeout_s" ] && break
  sleep 2
done
if [ $all_done = 1 ]; then
  pass "all $tasks tasks finished ($(python3 "$driver" progress <"$work/list.json"))"
else
  fail "not every task finished within $timeout_s s: $(python3 "$driver" progress <"$work/list.json" 2>&1 || true)"
fi

# The editors end (shutdown, exit) and write their stats before the checks read them.
kill -TERM "$driver_pid" "$driver2_pid" 2>/dev/null || true
wait "$driver_pid" 2>/dev/null || true
wait "$driver2_pid" 2>/dev/null || true
driver_pid=""
driver2_pid=""

# -- the checks and the figures -----------------------------------------------------------
for name in w1 w2 w3; do
  if grep -n "panicked" "$work/$name.log" >/dev/null 2>&1; then
    fail "worker $name panicked: $(grep -m 1 panicked "$work/$name.log")"
  fi
done
if grep -q "panicked" "$editor_dir/serve.stderr" 2>/dev/null; then
  fail "rawko serve --nats panicked: $(grep -m 1 panicked "$editor_dir/serve.stderr")"
fi
if grep -q "panicked" "$editor2_dir/serve.stderr" 2>/dev/null; then
  fail "the silent editor's rawko serve --nats panicked: $(grep -m 1 panicked "$editor2_dir/serve.stderr")"
fi
figures=${RAWKO_TEAM_FIGURES:-$work/figures.json}
worker_logs=()
for i in $(seq "$workers"); do worker_logs+=(--worker-log "$work/w$i.log"); done
python3 "$driver" check --rawko "$rawko" --nats "$urls" --cwd "$work/clones/submit" \
  --remote "$remote" --run "$work" --ids "$work/ids" --list "$work/list.json" \
  --editor "$editor_dir" --silent-editor "$editor2_dir" --expect-files "$expect_files" --held "$work/held" \
  --victim "$victim" --kill-ms "$kill_ms" --node-stop-ms "$node_stop_ms" \
  --first-submit-ms "$first_submit_ms" --ack-wait "${ack_wait:-25}" --workers "$workers" \
  --max-tasks "$max_tasks" "${worker_logs[@]}" --figures "$figures" || true
if [ -f "$work/check-counts" ]; then
  read -r p f <"$work/check-counts"
  passed=$((passed + p))
  failed=$((failed + f))
else
  fail "scripts/team/driver.py check did not finish"
fi

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

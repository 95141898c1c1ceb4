#!/usr/bin/env python3
"""The Python side of scripts/test-team.sh (issue 37: rawko workers on NATS JetStream).
Python 3 standard library only.

    driver.py editor --rawko BIN --nats URLS --workspace DIR --out DIR
                      [--answer-delay-ms N | --silent]
        Runs `rawko serve --nats URLS --workspace DIR` as the team's attached editor: the LSP
        lifecycle (initialize, initialized; shutdown and exit on SIGTERM), every
        `rawko/approveToolCall` answered {"outcome": "allow_once"} at once, the other requests a
        server may send answered as an editor would (rawko/trustWorkspace: trusted,
        window/workDoneProgress/create, workspace/configuration, client/registerCapability, …).
        With --answer-delay-ms N each answer is sent N ms after the request arrived (a user who
        reads the prompt first). With --silent it answers no `rawko/approveToolCall` (a second
        face whose user looks away): each stays open until rawko withdraws it.
        Writes into DIR: `asks.jsonl` (one line per approval request, as it arrives: taskId,
        toolCallId, tool, requestId, receivedAt ms, and answeredAt ms, taken once the answer is
        written to rawko serve's stdin, unless --silent), `withdrawn.jsonl` (every
        `rawko/approvalWithdrawn` and `$/cancelRequest`, with the ms it was received at),
        `ready` once initialized, `stats.json` at the end (counts of every method, the tasks seen
        in rawko/status, the approval requests still open), `serve.stderr` (the server's stderr),
        `driver.log`.

    driver.py progress < tasks-list.json       one line: finished N/T, outcomes, states, workers
    driver.py busiest --log W1.log --log W2.log ... [--min-finished N] [--min-held N]
        from the workers' stderr (`took`, `resumed`, `ended` lines): prints `NAME HELD` for the
        worker holding the most tasks, when at least --min-finished tasks ended and it holds at
        least --min-held; nothing otherwise
    driver.py held --log NAME.log                    the ids of the tasks that worker holds
    driver.py finished < tasks-list.json             exit 0 when every task listed is finished
    driver.py watchers --monitor URL ...             how many faces watch the asks bucket (the
        consumers of KV_rawko-asks described `kv watch consumer`, by the nodes' /jsz)

    driver.py check --rawko BIN --nats URLS --remote GITDIR --run DIR ...
        The checks after the run (see `check` below); prints `PASS what` / `FAIL what: why` lines
        and the figures, writes them as JSON (--figures).

`tasks list --json` is read as the contract has it (a JSON array), or as `{"tasks": [...]}`.
"""

import argparse
import concurrent.futures
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request


def now_ms():
    return int(time.time() * 1000)


# ---------------------------------------------------------------------------------------------
# The editor: rawko serve --nats, driven over LSP framing
# ---------------------------------------------------------------------------------------------


class Editor:
    def __init__(self, args):
        self.args = args
        self.out = args.out
        os.makedirs(self.out, exist_ok=True)
        self.log_file = open(os.path.join(self.out, "driver.log"), "a", buffering=1)
        self.asks_file = open(os.path.join(self.out, "asks.jsonl"), "a", buffering=1)
        self.withdrawn_file = open(os.path.join(self.out, "withdrawn.jsonl"), "a", buffering=1)
        self.write_lock = threading.Lock()
        self.state_lock = threading.Lock()
        self.responses = {}
        self.response_cv = threading.Condition(self.state_lock)
        self.methods = {}
        self.status_tasks = set()
        self.finished_tasks = set()
        self.asks = 0
        self.withdrawn = 0
        self.cancelled = 0
        # --silent: the approval requests left unanswered and not yet withdrawn, by request id.
        self.open_asks = {}
        self.unknown_requests = []
        self.closed = None
        self.next_id = 1
        self.stopping = threading.Event()
        serve_err = open(os.path.join(self.out, "serve.stderr"), "ab")
        cmd = [args.rawko, "serve", "--nats", args.nats, "--workspace", args.workspace]
        self.log(f"starting {' '.join(cmd)}")
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=serve_err,
            cwd=args.workspace,
        )
        self.reader = threading.Thread(target=self.read_loop, daemon=True)
        self.reader.start()

    def log(self, text):
        stamp = time.strftime("%H:%M:%S", time.localtime()) + f".{now_ms() % 1000:03d}"
        self.log_file.write(f"{stamp} {text}\n")

    # --- framing ---

    def send(self, message):
        body = json.dumps(message, separators=(",", ":")).encode()
        frame = b"Content-Length: %d\r\n\r\n" % len(body) + body
        with self.write_lock:
            try:
                self.proc.stdin.write(frame)
                self.proc.stdin.flush()
            except (BrokenPipeError, ValueError, OSError) as e:
                self.log(f"cannot write to rawko serve: {e}")

    def read_frame(self, stream):
        """One frame's body, or None at the end of the stream."""
        length = None
        while True:
            line = stream.readline()
            if not line:
                return None
            line = line.rstrip(b"\r\n")
            if not line:
                if length is None:
                    raise ValueError("a frame without Content-Length")
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        body = b""
        while len(body) < length:
            chunk = stream.read(length - len(body))
            if not chunk:
                return None
            body += chunk
        return body

    def read_loop(self):
        stream = self.proc.stdout
        while True:
            try:
                body = self.read_frame(stream)
            except Exception as e:  # a broken frame: say so, stop reading
                self.close(f"bad frame from rawko serve: {e}")
                return
            received = now_ms()
            if body is None:
                self.close("end of rawko serve's stdout")
                return
            try:
                message = json.loads(body)
            except ValueError:
                self.log(f"not JSON: {body[:200]!r}")
                continue
            try:
                self.handle(message, received)
            except Exception as e:  # never let one message stop the editor
                self.log(f"error handling {str(message)[:200]}: {e!r}")

    def close(self, why):
        self.log(why)
        with self.state_lock:
            self.closed = why
            self.response_cv.notify_all()

    # --- messages ---

    def handle(self, message, received):
        method = message.get("method")
        if method is None:  # a response to one of ours
            with self.state_lock:
                self.responses[message.get("id")] = message
                self.response_cv.notify_all()
            return
        with self.state_lock:
            self.methods[method] = self.methods.get(method, 0) + 1
        params = message.get("params") or {}
        if "id" in message:
            self.request(message["id"], method, params, received)
        else:
            self.notification(method, params, received)

    def reply(self, rid, result):
        self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    def request(self, rid, method, params, received):
        if method == "rawko/approveToolCall":
            record = {
                "taskId": params.get("taskId"),
                "toolCallId": params.get("toolCallId"),
                "tool": params.get("tool"),
                "phase": params.get("phase"),
                "summary": params.get("summary"),
                "requestId": rid,
                "receivedAt": received,
            }
            with self.state_lock:
                self.asks += 1
            if self.args.silent:
                # Never answered: rawko withdraws it once another face's answer is the team's.
                with self.state_lock:
                    self.open_asks[json.dumps(rid)] = record
                self.asks_file.write(json.dumps(record) + "\n")
            elif self.args.answer_delay_ms > 0:
                # Off the reader thread, so the messages after it are read meanwhile.
                timer = threading.Timer(self.args.answer_delay_ms / 1000, self.answer, (rid, record))
                timer.daemon = True
                timer.start()
            else:
                self.answer(rid, record)
        elif method == "rawko/trustWorkspace":
            self.log(f"trustWorkspace {json.dumps(params)[:300]}: trusted")
            self.reply(rid, {"trusted": True})
        elif method == "workspace/configuration":
            self.reply(rid, [None for _ in params.get("items", [])])
        elif method in (
            "window/workDoneProgress/create",
            "client/registerCapability",
            "client/unregisterCapability",
            "workspace/codeLens/refresh",
            "workspace/inlayHint/refresh",
            "workspace/semanticTokens/refresh",
            "workspace/diagnostic/refresh",
        ):
            self.reply(rid, None)
        elif method == "window/showMessageRequest":
            self.log(f"showMessageRequest: {params.get('message')}")
            self.reply(rid, None)
        elif method == "window/showDocument":
            self.reply(rid, {"success": False})
        elif method == "workspace/applyEdit":
            self.reply(rid, {"applied": False, "failureReason": "the team test's editor applies no edits"})
        else:
            self.log(f"unknown request {method}: answered MethodNotFound")
            with self.state_lock:
                self.unknown_requests.append(method)
            self.send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {"code": -32601, "message": f"the team test's editor does not know {method}"},
                }
            )

    def answer(self, rid, record):
        self.reply(rid, {"outcome": "allow_once"})
        # Once the answer is written to (and flushed into) rawko serve's stdin.
        record["answeredAt"] = now_ms()
        self.asks_file.write(json.dumps(record) + "\n")

    def notification(self, method, params, received):
        if method == "rawko/status":
            task = params.get("taskId")
            if task:
                with self.state_lock:
                    self.status_tasks.add(task)
        elif method == "rawko/taskFinished":
            task = params.get("taskId")
            if task:
                with self.state_lock:
                    self.finished_tasks.add(task)
        elif method == "rawko/approvalWithdrawn":
            with self.state_lock:
                self.withdrawn += 1
            self.withdrawn_file.write(
                json.dumps({"kind": "approvalWithdrawn", "params": params, "at": received}) + "\n"
            )
        elif method == "$/cancelRequest":
            with self.state_lock:
                self.cancelled += 1
                self.open_asks.pop(json.dumps(params.get("id")), None)
            self.withdrawn_file.write(
                json.dumps({"kind": "cancelRequest", "params": params, "at": received}) + "\n"
            )
        elif method in ("window/showMessage", "window/logMessage"):
            self.log(f"{method} [{params.get('type')}]: {str(params.get('message'))[:500]}")

    def call(self, method, params, timeout):
        with self.state_lock:
            rid = self.next_id
            self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        with self.state_lock:
            while rid not in self.responses:
                left = deadline - time.monotonic()
                if self.closed or left <= 0:
                    raise RuntimeError(f"no answer to {method} ({self.closed or 'timed out'})")
                self.response_cv.wait(left)
            answer = self.responses.pop(rid)
        if "error" in answer:
            raise RuntimeError(f"{method} failed: {answer['error']}")
        return answer.get("result")

    def notify(self, method, params):
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    # --- lifecycle ---

    def initialize(self):
        uri = "file://" + os.path.abspath(self.args.workspace)
        result = self.call(
            "initialize",
            {
                "processId": os.getpid(),
                "clientInfo": {"name": "rawko-team-e2e", "version": "0"},
                "rootUri": uri,
                "workspaceFolders": [{"uri": uri, "name": "team"}],
                "capabilities": {"window": {"workDoneProgress": True}},
                "initializationOptions": {},
            },
            60,
        )
        self.notify("initialized", {})
        self.log(f"initialized: {json.dumps(result)[:300]}")
        with open(os.path.join(self.out, "ready"), "w") as f:
            f.write(f"{now_ms()}\n")

    def shutdown(self):
        if self.proc.poll() is None and not self.closed:
            try:
                self.call("shutdown", None, 10)
            except RuntimeError as e:
                self.log(f"shutdown: {e}")
            self.notify("exit", None)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.log("rawko serve did not exit 10 s after exit: SIGKILL")
            self.proc.kill()
            self.proc.wait()
        self.log(f"rawko serve exited with {self.proc.returncode}")

    def stats(self, exited_early):
        with self.state_lock:
            return {
                "asks": self.asks,
                "silent": bool(self.args.silent),
                "approvalsWithdrawn": self.withdrawn,
                "requestsCancelled": self.cancelled,
                # --silent: the approval requests never cancelled ($/cancelRequest) by the end.
                "openAsksAtEnd": sorted(self.open_asks.values(), key=lambda r: r["receivedAt"]),
                "methods": self.methods,
                "statusTasks": sorted(self.status_tasks),
                "finishedTasks": sorted(self.finished_tasks),
                "unknownRequests": self.unknown_requests,
                "serveExitedEarly": exited_early,
                "serveExitCode": self.proc.returncode,
                "closed": self.closed,
            }


def cmd_editor(args):
    editor = Editor(args)
    stop = threading.Event()

    def on_signal(signum, _frame):
        editor.log(f"signal {signum}: shutting down")
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        editor.initialize()
    except RuntimeError as e:
        editor.log(f"initialize: {e}")
        editor.proc.kill()
        editor.proc.wait()
        write_json(os.path.join(args.out, "stats.json"), editor.stats(True))
        print(f"driver: rawko serve did not initialize: {e}", file=sys.stderr)
        return 1
    exited_early = False
    while not stop.wait(0.2):
        if editor.proc.poll() is not None or editor.closed:
            exited_early = True
            editor.log(f"rawko serve went away (exit {editor.proc.poll()}, {editor.closed})")
            break
    editor.shutdown()
    write_json(os.path.join(args.out, "stats.json"), editor.stats(exited_early))
    return 1 if exited_early else 0


def write_json(path, value):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(value, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------------
# Reading `rawko tasks list --json`
# ---------------------------------------------------------------------------------------------


def task_list(text):
    value = json.loads(text)
    if isinstance(value, dict):
        value = value.get("tasks", [])
    if not isinstance(value, list):
        raise ValueError("tasks list --json is neither an array nor {tasks: [...]}")
    return value


def read_list_stdin():
    try:
        return task_list(sys.stdin.read())
    except ValueError as e:
        print(f"driver: cannot read the task list: {e}", file=sys.stderr)
        sys.exit(2)


def is_finished(task):
    return task.get("state") == "finished" or task.get("outcome") not in (None, "")


def cmd_progress(_args):
    tasks = read_list_stdin()
    done = [t for t in tasks if is_finished(t)]
    outcomes, states, workers = {}, {}, {}
    for t in tasks:
        if is_finished(t):
            o = t.get("outcome") or "?"
            outcomes[o] = outcomes.get(o, 0) + 1
        else:
            s = t.get("state") or "?"
            states[s] = states.get(s, 0) + 1
            if t.get("worker"):
                workers[t["worker"]] = workers.get(t["worker"], 0) + 1
    fmt = lambda d: ", ".join(f"{k} {v}" for k, v in sorted(d.items())) or "none"
    print(
        f"finished {len(done)}/{len(tasks)} ({fmt(outcomes)}); unfinished by state: {fmt(states)}; "
        f"held by worker: {fmt(workers)}"
    )


def parse_worker_log(path):
    """The task lines of a worker's stderr, as test-team.sh keeps it (each line prefixed with the
    ms it was read at): [(ms or None, kind, taskId, line)], kind one of took, resumed, ended,
    stopped (`task X was taken over by another worker: this one stopped it`), other."""
    events = []
    for line in read_lines(path):
        ms = None
        head, _, rest = line.partition(" ")
        if head.isdigit():
            ms, line = int(head), rest
        task = next((tok.rstrip(":,.;") for tok in line.split() if tok.startswith("task-")), None)
        if not task:
            continue
        words = f" {line} "
        if "taken over" in words or " stopped " in words:
            kind = "stopped"
        elif " settled " in words or words.startswith(" settled "):
            kind = "settled"
        elif " took " in words:
            kind = "took"
        elif " resumed " in words:
            kind = "resumed"
        elif " ended " in words:
            kind = "ended"
        else:
            kind = "other"
        events.append((ms, kind, task, line))
    return events


def worker_name(path):
    return os.path.basename(path).rsplit(".", 1)[0]


def holding(events):
    """The tasks a worker holds after these lines: taken or resumed, not ended or stopped."""
    held = []
    for _, kind, task, _ in events:
        if kind in ("took", "resumed") and task not in held:
            held.append(task)
        elif kind in ("ended", "stopped") and task in held:
            held.remove(task)
    return held


def cmd_busiest(args):
    ended = 0
    held = {}
    for path in args.log:
        events = parse_worker_log(path)
        ended += sum(1 for e in events if e[1] == "ended")
        held[worker_name(path)] = len(holding(events))
    if ended < args.min_finished or not held:
        return 0
    name, count = max(sorted(held.items()), key=lambda kv: kv[1])
    if count >= args.min_held:
        print(f"{name} {count}")
    return 0


def cmd_held(args):
    for task in holding(parse_worker_log(args.log)):
        print(task)
    return 0


def cmd_finished(_args):
    tasks = read_list_stdin()
    return 0 if tasks and all(is_finished(t) for t in tasks) else 1


def cmd_watchers(args):
    """How many watches follow a KV bucket: its stream's consumers described as a KV watch, as
    the nodes' monitoring endpoints (/jsz) list them, across every node that answers. Each face
    (`rawko serve --nats`, `rawko web --nats`) watches the asks bucket once it is connected, and
    nothing else does, so this counts the faces ready to be asked."""
    names = set()
    for base in args.monitor:
        url = base.rstrip("/") + "/jsz?consumers=true&config=true"
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                jsz = json.load(r)
        except (OSError, ValueError):
            continue
        for account in jsz.get("account_details") or []:
            for stream in account.get("stream_detail") or []:
                if stream.get("name") != args.stream:
                    continue
                for consumer in stream.get("consumer_detail") or []:
                    if (consumer.get("config") or {}).get("description") == args.description:
                        names.add(consumer.get("name"))
    print(len(names))
    return 0


# ---------------------------------------------------------------------------------------------
# The checks and figures after the run
# ---------------------------------------------------------------------------------------------


def percentile(values, p):
    """Nearest-rank percentile of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def read_lines(path):
    try:
        with open(path) as f:
            return [line.strip() for line in f if line.strip()]
    except FileNotFoundError:
        return []


def read_jsonl(path):
    out = []
    for line in read_lines(path):
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def git(remote, *args):
    r = subprocess.run(["git", "--git-dir", remote, *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr.strip()


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what, why=""):
        if ok:
            self.passed += 1
            print(f"PASS {what}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {what}: {why}", flush=True)
        return ok


def show_many(args, ids):
    """`rawko tasks show ID --nats URLS --json` of every id, 8 at a time; id → (json | error)."""
    os.makedirs(os.path.join(args.run, "show"), exist_ok=True)

    def one(task):
        cmd = [args.rawko, "tasks", "show", task, "--nats", args.nats, "--json"]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=args.cwd)
        except subprocess.TimeoutExpired:
            return task, f"`{' '.join(cmd)}` took more than 60 s"
        with open(os.path.join(args.run, "show", task + ".json"), "w") as f:
            f.write(r.stdout)
        if r.returncode != 0:
            return task, f"`{' '.join(cmd)}` exited {r.returncode}: {r.stderr.strip()[-300:]}"
        try:
            return task, json.loads(r.stdout)
        except ValueError as e:
            return task, f"`{' '.join(cmd)}` printed no JSON ({e}): {r.stdout[:200]}"

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        return dict(pool.map(one, ids))


def records_of(shown):
    records = shown.get("records")
    if not isinstance(records, list):
        return None
    return [r for r in records if isinstance(r, dict) and isinstance(r.get("event"), dict)]


def rel(ms, kill_ms):
    """A time, relative to the kill when there was one."""
    if not ms:
        return "at an unknown time"
    if not kill_ms:
        return f"at {ms}"
    d = ms - kill_ms
    return f"{abs(d) / 1000:.1f} s {'after' if d >= 0 else 'before'} the kill"


def first(items, n=5):
    items = list(items)
    more = f" … and {len(items) - n} more" if len(items) > n else ""
    return ", ".join(str(i) for i in items[:n]) + more


# The Bash calls of tests/team_fixture/script.yaml and the line each appends to trace.txt.
TRACE_CALLS = {"step 1": "call_4_1", "step 2": "call_5_1"}


def rerun_in_flight(task, got, held, logs):
    """Whether trace.txt differs from the expected only by a line of a call that was in flight
    when its worker was killed (the issue allows that call, and only it, to run again): the
    task was the killed worker's, the lines stay in order, and a doubled line's call was started
    twice in the task's log (before the kill and again after the takeover)."""
    if task not in held or logs.get(task) is None:
        return False
    starts = {}
    for r in logs[task]:
        e = r.get("event") or {}
        if e.get("type") == "tool_started":
            starts[e.get("id")] = starts.get(e.get("id"), 0) + 1
    lines = got.splitlines()
    if set(lines) != set(TRACE_CALLS) or lines != sorted(lines):
        return False
    doubled = [l for l in TRACE_CALLS if lines.count(l) > 1]
    return len(doubled) <= 1 and all(
        lines.count(l) <= starts.get(TRACE_CALLS[l], 0) for l in TRACE_CALLS
    )


def read_stats(directory):
    try:
        with open(os.path.join(directory, "stats.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def check_silent_editor(c, args, ids, answered_asks, figures):
    """The second editor (driver.py editor --silent) saw the same approvals and answered none:
    the first answer (the first editor's) won, and each prompt here was withdrawn after it
    (issue 37: "an approval is answered once — the first answer wins, every other face's prompt
    is withdrawn"). Returns [(answeredAt, ms from it to the withdrawal)] for the figures."""
    d = args.silent_editor
    asks = read_jsonl(os.path.join(d, "asks.jsonl"))
    notes = read_jsonl(os.path.join(d, "withdrawn.jsonl"))
    stats = read_stats(d)
    id_set = set(ids)
    answered = {}  # (task, call) → the first editor's earliest answeredAt
    for a in answered_asks:
        key = (a.get("taskId"), a.get("toolCallId"))
        at = a.get("answeredAt")
        if isinstance(at, int) and (key not in answered or at < answered[key]):
            answered[key] = at

    counts = {}
    for a in asks:
        key = (a.get("taskId"), a.get("toolCallId"))
        counts[key] = counts.get(key, 0) + 1
    again = [f"{t} {cid} asked {n} times" for (t, cid), n in counts.items() if n > 1]
    strangers = [f"{t} {cid}" for (t, cid) in counts if t not in id_set]
    not_write = [f"{a.get('taskId')} {a.get('tool')}" for a in asks if a.get("tool") != "Write"]
    asked_tasks = {t for (t, _) in counts if t in id_set}
    # A face is not asked a call whose answer is in the answers bucket already when its watcher
    # gets to it (`offer` reads the answers first). The first editor answers --answer-delay-ms
    # after its prompt (test-team.sh: 250 ms), far more than the two faces' watches differ by
    # while the cluster is whole (a few ms), so then the silent editor is asked every call. A
    # watch on the stopped node falls silent until the client notices, and the look for asks
    # every 5 s finds only those still unanswered: a call asked of the first editor in the 15 s
    # after the node stopped may be missed.
    stop = args.node_stop_ms
    in_failover = lambda at: bool(stop) and isinstance(at, int) and stop <= at <= stop + 15000
    missed = [a for a in answered_asks if (a.get("taskId"), a.get("toolCallId")) not in counts]
    missed_steady = [
        f"{a.get('taskId')} {a.get('toolCallId')} (asked of the first editor at {a.get('receivedAt')}, the node stopped at {stop})"
        for a in missed
        if not in_failover(a.get("receivedAt"))
    ]
    c.check(
        not again and not strangers and not not_write and not missed_steady,
        f"the silent editor was asked the tasks' blocked Writes, each at most once: {len(asked_tasks)} of "
        f"{len(ids)}, every one outside the node's failover ({len(missed)} missed, asked of the first "
        f"editor within 15 s after the node stopped)",
        f"{len(asks)} asks of {len(asked_tasks)} tasks; asked again: {first(again)}; other tasks: "
        f"{first(strangers)}; not the Write: {first(not_write)}; missed outside the failover: "
        f"{len(missed_steady)}: {first(missed_steady, 4)}",
    )

    withdrawn = {}  # (task, call) → [at, ...]
    cancelled = {}  # request id (as JSON) → [at, ...]
    for n in notes:
        params = n.get("params") or {}
        if n.get("kind") == "approvalWithdrawn":
            withdrawn.setdefault((params.get("taskId"), params.get("toolCallId")), []).append(n.get("at"))
        elif n.get("kind") == "cancelRequest":
            cancelled.setdefault(json.dumps(params.get("id")), []).append(n.get("at"))
    problems, latencies = [], []
    for a in asks:
        key = (a.get("taskId"), a.get("toolCallId"))
        name = f"{key[0]} {key[1]}"
        received = a.get("receivedAt")
        ats = sorted(t for t in withdrawn.get(key, []) if isinstance(t, int))
        after = [t for t in ats if isinstance(received, int) and t >= received]
        if not after:
            problems.append(f"{name}: asked at {received}, never withdrawn (approvalWithdrawn: {ats or 'none'})")
            continue
        at = after[0]
        if not cancelled.get(json.dumps(a.get("requestId"))):
            problems.append(f"{name}: approvalWithdrawn, but no $/cancelRequest of request {a.get('requestId')}")
        won = answered.get(key)
        if won is None:
            problems.append(f"{name}: withdrawn, but the first editor never answered it")
        elif at < won:
            problems.append(f"{name}: withdrawn {won - at} ms before the first editor's answer")
        else:
            latencies.append((won, at - won))
    asked_keys = set(counts)
    stray = [f"{t} {cid} ({len(v)})" for (t, cid), v in withdrawn.items() if (t, cid) not in asked_keys or len(v) > 1]
    open_at_end = [f"{r.get('taskId')} {r.get('toolCallId')}" for r in stats.get("openAsksAtEnd") or []]
    c.check(
        asks and not problems and not stray and not open_at_end,
        f"every prompt the silent editor got ({len(asks)}) was withdrawn after the first editor's answer "
        "(rawko/approvalWithdrawn for its taskId+toolCallId, and $/cancelRequest of its request); "
        "nothing else was withdrawn",
        f"{len(problems)} problems: {first(problems, 4)}; withdrawn though not asked, or twice: {first(stray)}; "
        f"still open when it ended: {first(open_at_end)}",
    )
    if stats:
        c.check(
            not stats.get("serveExitedEarly"),
            "the silent editor's rawko serve --nats stayed up to the end",
            f"it went away: {stats.get('closed')} (exit {stats.get('serveExitCode')})",
        )
    else:
        c.check(False, "the silent editor's stats.json is readable", "missing (did the driver end cleanly?)")
    figures["silentEditorAsked"] = len(asked_tasks)
    figures["silentEditorNotAsked"] = sorted(t for t in ids if t not in asked_tasks)
    figures["silentEditorMissedInFailover"] = len(missed) - len(missed_steady)
    return latencies


def cmd_check(args):
    c = Checks()
    ids = read_lines(args.ids)
    expected_files = json.loads(args.expect_files)
    held = read_lines(args.held) if args.held else []
    kill_ms = args.kill_ms
    figures = {
        "tasks": len(ids),
        "workers": args.workers,
        "maxTasksPerWorker": args.max_tasks,
        "ackWaitSeconds": args.ack_wait,
        "killedWorker": args.victim,
        "killedAt": kill_ms,
        "nodeStoppedAt": args.node_stop_ms,
        "firstSubmitAt": args.first_submit_ms,
    }

    # -- The final list: every task finished, complete. --
    try:
        with open(args.list) as f:
            listed = {t.get("taskId"): t for t in task_list(f.read())}
    except (OSError, ValueError) as e:
        listed = {}
        c.check(False, "tasks list --json is readable", str(e))
    missing = [i for i in ids if i not in listed]
    c.check(not missing, f"every submitted task is listed by `tasks list` ({len(ids)})", f"missing {first(missing)}")
    not_complete = [
        f"{i} ({listed[i].get('state')}/{listed[i].get('outcome')})"
        for i in ids
        if i in listed and listed[i].get("outcome") != "complete"
    ]
    c.check(
        not not_complete,
        f"all {len(ids)} tasks finished with outcome complete",
        f"{len(not_complete)} did not: {first(not_complete)}",
    )
    by_worker = {}
    for i in ids:
        w = (listed.get(i) or {}).get("worker") or "?"
        by_worker[w] = by_worker.get(w, 0) + 1
    figures["finishedByWorker"] = by_worker

    # -- The logs: no completed call twice, one approval per task. --
    shown = show_many(args, ids)
    unreadable = [f"{t}: {v}" for t, v in shown.items() if not isinstance(v, dict) or records_of(v) is None]
    c.check(
        not unreadable,
        "`tasks show ID --nats --json` gives every task's records",
        f"{len(unreadable)}: {first(unreadable, 3)}",
    )
    logs = {t: records_of(v) for t, v in shown.items() if isinstance(v, dict) and records_of(v) is not None}

    # -- Every task's branch on the shared remote holds its files. --
    bad_branch = []
    for task in ids:
        ref = f"refs/heads/rawko/{task}"
        rc, _, err = git(args.remote, "rev-parse", "--verify", "--quiet", ref + "^{commit}")
        if rc != 0:
            bad_branch.append(f"{task}: no branch rawko/{task}")
            continue
        for path, want in expected_files.items():
            rc, got, err = git(args.remote, "cat-file", "-p", f"{ref}:{path}")
            if rc != 0:
                bad_branch.append(f"{task}: {path} missing on rawko/{task}")
            elif got != want and not (path == "trace.txt" and rerun_in_flight(task, got, held, logs)):
                bad_branch.append(f"{task}: {path} is {got!r}, expected {want!r}")
    c.check(
        not bad_branch,
        f"every task's branch rawko/<taskId> on the remote holds {', '.join(expected_files)} as expected "
        "(trace.txt: each Bash call ran once, or twice only when it was in flight at the kill)",
        f"{len(bad_branch)} problems: {first(bad_branch)}",
    )

    not_whole = []
    for task, records in sorted(logs.items()):
        kinds = [r["event"].get("type") for r in records]
        if not records:
            not_whole.append(f"{task}: no records")
        elif kinds[0] != "started" or records[0].get("seq") != 1:
            not_whole.append(f"{task}: starts with {kinds[0]} (seq {records[0].get('seq')}), not started (seq 1)")
        elif "finished" not in kinds:
            not_whole.append(f"{task}: no finished record ({len(records)} records, the last {kinds[-1]})")
    c.check(
        not not_whole,
        "every task's log in JetStream is whole: from `started` (seq 1) to `finished`",
        f"{len(not_whole)} are not: {first(not_whole, 4)}",
    )
    twice, approvals_bad, seq_bad = [], [], []
    tool_started = {}  # (task, call id) → [at, ...]
    finished_at = {}
    for task, records in logs.items():
        seen = {}
        approvals = []
        last_seq = 0
        for r in records:
            e = r["event"]
            seq = r.get("seq")
            if isinstance(seq, int):
                if seq != last_seq + 1:
                    seq_bad.append(f"{task}: seq {seq} after {last_seq}")
                last_seq = seq
            kind = e.get("type")
            if kind == "tool_finished":
                seen[e.get("id")] = seen.get(e.get("id"), 0) + 1
            elif kind == "tool_started":
                tool_started.setdefault((task, e.get("id")), []).append(r.get("at"))
            elif kind == "approval":
                approvals.append((seq, e))
            elif kind == "finished":
                finished_at[task] = r.get("at")
        twice += [f"{task}: {cid} finished {n} times" for cid, n in seen.items() if n > 1]
        if len(approvals) != 1 or approvals[0][1].get("answer") != "allow_once":
            approvals_bad.append(
                f"{task}: {[(a.get('tool'), a.get('answer')) for _, a in approvals]}"
            )
        else:
            # The answer is recorded before its call starts running (and so before it finishes).
            seq, approval = approvals[0]
            done = [
                r.get("seq") for r in records
                if r["event"].get("type") == "tool_finished" and r["event"].get("id") == approval.get("id")
            ]
            if not done or not all(isinstance(d, int) and isinstance(seq, int) and seq < d for d in done):
                approvals_bad.append(f"{task}: the approval of {approval.get('id')} (seq {seq}) is not before its tool_finished ({done})")
    c.check(not twice, "no tool_finished id appears twice in any task's log (no completed call ran again)", first(twice))
    c.check(not seq_bad, "every task's records are numbered 1, 2, 3, … with no gap or repeat", first(seq_bad))
    c.check(
        not approvals_bad,
        "every task's log holds exactly one approval record, allow_once, before its call's tool_finished",
        f"{len(approvals_bad)}: {first(approvals_bad)}",
    )

    # -- The editor: every approval asked once, of the right call. --
    asks = read_jsonl(os.path.join(args.editor, "asks.jsonl"))
    counts = {}
    for a in asks:
        key = (a.get("taskId"), a.get("toolCallId"))
        counts[key] = counts.get(key, 0) + 1
    again = [f"{t} {cid} asked {n} times" for (t, cid), n in counts.items() if n > 1]
    asked_tasks = {t for (t, _) in counts}
    not_asked = [t for t in ids if t not in asked_tasks]
    strangers = [f"{t} {cid}" for (t, cid) in counts if t not in set(ids)]
    not_write = [f"{a.get('taskId')} {a.get('tool')}" for a in asks if a.get("tool") != "Write"]
    c.check(
        len(asks) == len(ids) and not again and not not_asked and not strangers and not not_write,
        f"the editor was asked exactly {len(ids)} approvals, one per task, each once (the blocked Write)",
        f"{len(asks)} asks; asked again: {first(again)}; never asked: {first(not_asked)}; "
        f"other tasks: {first(strangers)}; not the Write: {first(not_write)}",
    )
    stats = {}
    try:
        with open(os.path.join(args.editor, "stats.json")) as f:
            stats = json.load(f)
    except (OSError, ValueError):
        pass
    if stats:
        seen_status = set(stats.get("statusTasks", []))
        unseen = [t for t in ids if t not in seen_status]
        c.check(
            not unseen,
            "the editor (serve --nats) got rawko/status of every team task",
            f"{len(unseen)} never seen: {first(unseen)}",
        )
        c.check(
            not stats.get("serveExitedEarly"),
            "rawko serve --nats stayed up to the end",
            f"it went away: {stats.get('closed')} (exit {stats.get('serveExitCode')})",
        )
    else:
        c.check(False, "the editor's stats.json is readable", "missing (did the driver end cleanly?)")

    # -- The second, silent editor: asked too, never answers; its prompts are withdrawn. --
    withdraw_latencies = []  # (the first editor's answeredAt, ms from it to the withdrawal here)
    if args.silent_editor:
        withdraw_latencies = check_silent_editor(c, args, ids, asks, figures)

    # -- The workers' own account: who took what, and when. --
    worker_events = {worker_name(path): parse_worker_log(path) for path in args.worker_log or []}
    deliveries = {}  # task → [(ms, worker, kind)]
    stopped = []
    for name, events in worker_events.items():
        for ms, kind, task, _ in events:
            if kind in ("took", "resumed"):
                deliveries.setdefault(task, []).append((ms or 0, name, kind))
            elif kind == "stopped" and name != args.victim:
                stopped.append(f"{name} stopped {task} ({rel(ms, kill_ms)})")
            elif kind == "stopped":
                stopped.append(f"{name} (killed later) stopped {task} ({rel(ms, kill_ms)})")
    # A task of the killed worker whose log had ended before the kill (its last record stored,
    # the kill came before the worker acknowledged it) runs nowhere again: another worker only
    # settles it (`settled TASK`).
    def finished_before_kill(task):
        return any(
            (r.get("event") or {}).get("type") == "finished" and isinstance(r.get("at"), int) and r["at"] < kill_ms
            for r in logs.get(task) or []
        )

    settled = {
        task
        for name, events in worker_events.items()
        if name != args.victim
        for _, kind, task, _ in events
        if kind == "settled"
    }
    done_before = {t for t in held if finished_before_kill(t)}
    unsettled = sorted(done_before - settled)
    c.check(
        not unsettled,
        f"the killed worker's tasks whose log had ended before the kill ({len(done_before)}) were "
        "settled by another worker without running again",
        first(unsettled),
    )
    held = [t for t in held if t not in done_before]
    extra = []
    for task in ids:
        got = sorted(deliveries.get(task, []))
        want = 2 if task in held else 1
        if len(got) != want:
            extra.append(
                f"{task} taken {len(got)} times (expected {want}): "
                + "; ".join(f"{kind} by {w} {rel(ms, kill_ms)}" for ms, w, kind in got)
            )
    c.check(
        not extra and not stopped,
        "each task was taken by one worker at a time: once, or twice for the killed worker's "
        "(no duplicate delivery, no worker stopped a task because another took it over)",
        f"{len(extra)} tasks taken more often: {first(extra, 4)}; stopped lines: {first(stopped, 4)}",
    )

    # -- The killed worker's tasks went on elsewhere. --
    takeovers = {}
    takeovers_stderr = {}
    if args.victim:
        c.check(bool(held), f"the killed worker {args.victim} held tasks when it was killed", "it held none")
        problems = []
        for task in held:
            t = listed.get(task) or {}
            if t.get("worker") == args.victim:
                problems.append(f"{task}: still shows worker {args.victim}")
            if t.get("outcome") != "complete":
                problems.append(f"{task}: outcome {t.get('outcome')}")
            # The killed worker writes nothing after the kill: the first record after it is the
            # new worker's, going on with the task.
            reopened = [
                r.get("at")
                for r in logs.get(task) or []
                if isinstance(r.get("at"), int) and r["at"] >= kill_ms
            ]
            if not reopened:
                problems.append(f"{task}: no record after the kill")
            else:
                takeovers[task] = min(reopened) - kill_ms
            later = sorted(
                (ms, w, kind) for ms, w, kind in deliveries.get(task, []) if w != args.victim and ms >= kill_ms
            )
            if later:
                takeovers_stderr[task] = later[0][0] - kill_ms
            # A worker says `resumed` when the task's log holds records, `took` when it holds
            # none: a task the killed worker had taken but not yet begun (no record before the
            # kill) is taken afresh.
            begun = any(
                isinstance(r.get("at"), int) and r["at"] < kill_ms for r in logs.get(task) or []
            )
            want = ("resumed",) if begun else ("resumed", "took")
            if not any(kind in want for _, _, kind in later):
                problems.append(
                    f"{task}: no other worker's stderr says `{' or '.join(f'{k} {task}' for k in want)}` "
                    f"after the kill (it says: {', '.join(f'{k} by {w}' for _, w, k in later) or 'nothing'})"
                )
        c.check(
            held and not problems,
            f"the {len(held)} tasks the killed worker held were continued by another worker (resumed; taken afresh if the kill came before its first record) and completed",
            first(problems),
        )
        measured = takeovers or takeovers_stderr
        if measured:
            limit = args.ack_wait * 1000 + 5000
            slow = [f"{t} {ms} ms" for t, ms in measured.items() if ms > limit]
            c.check(
                not slow,
                f"each lost task went on elsewhere within the ack wait ({args.ack_wait} s) + 5 s after the kill",
                first(slow),
            )

    # -- Figures. --
    submitted_at = [t.get("submittedAt") for t in listed.values() if isinstance(t.get("submittedAt"), int)]
    start = args.first_submit_ms or (min(submitted_at) if submitted_at else None)
    ends = []
    end_source = "the `finished` records"
    for task in ids:
        at = finished_at.get(task)
        if not isinstance(at, int):
            at = (listed.get(task) or {}).get("updatedAt")
            end_source = "the `finished` records, else `tasks list`'s updatedAt"
        if isinstance(at, int):
            ends.append(at)
    if start and ends and len(ends) == len(ids):
        span = (max(ends) - start) / 1000
        figures["firstSubmitToLastFinishSeconds"] = round(span, 3)
        figures["tasksPerSecond"] = round(len(ids) / span, 3) if span > 0 else None
        figures["lastFinishFrom"] = end_source
    latencies = []
    steady, in_failover = [], []
    unmatched = 0
    for a in asks:
        starts = [s for s in tool_started.get((a.get("taskId"), a.get("toolCallId")), []) if isinstance(s, int)]
        received = a.get("receivedAt")
        before = [s for s in starts if isinstance(received, int) and s <= received]
        if before:
            latencies.append(received - max(before))
            # Asked while the stopped node's assets elect new leaders (up to ~15 s after).
            stop = args.node_stop_ms
            if isinstance(stop, int) and stop <= max(before) <= stop + 15000:
                in_failover.append(received - max(before))
            else:
                steady.append(received - max(before))
        else:
            unmatched += 1

    def summary(values):
        return {
            "count": len(values),
            "p50": percentile(values, 50),
            "p99": percentile(values, 99),
            "max": max(values),
            "mean": round(sum(values) / len(values), 1),
        } if values else None

    if latencies:
        figures["promptLatencyMs"] = dict(summary(latencies), unmatched=unmatched)
        figures["promptLatencyMsSteady"] = summary(steady)
        figures["promptLatencyMsInFailover"] = summary(in_failover)
    else:
        figures["promptLatencyMs"] = None
    if args.silent_editor:
        stop = args.node_stop_ms
        in_failover = [ms for at, ms in withdraw_latencies if stop and stop <= at <= stop + 15000]
        steady = [ms for at, ms in withdraw_latencies if not (stop and stop <= at <= stop + 15000)]
        figures["withdrawLatencyMs"] = summary([ms for _, ms in withdraw_latencies])
        figures["withdrawLatencyMsSteady"] = summary(steady)
        figures["withdrawLatencyMsInFailover"] = summary(in_failover)
    figures["takeoverMs"] = dict(sorted(takeovers.items()))
    figures["takeoverMsMax"] = max(takeovers.values()) if takeovers else None
    figures["takeoverMsFromWorkerStderr"] = dict(sorted(takeovers_stderr.items()))
    figures["takeoverMsFromWorkerStderrMax"] = max(takeovers_stderr.values()) if takeovers_stderr else None
    figures["heldByKilledWorker"] = held
    figures["approvalsWithdrawn"] = len(read_jsonl(os.path.join(args.editor, "withdrawn.jsonl")))
    write_json(args.figures, figures)

    print("---- figures")
    if figures.get("tasksPerSecond") is not None:
        print(
            f"throughput: {figures['tasksPerSecond']} tasks/s "
            f"({len(ids)} tasks, {figures['firstSubmitToLastFinishSeconds']} s from the first submit to the last finish "
            f"(from {end_source}); {args.workers} workers x {args.max_tasks} slots, one killed)"
        )
    else:
        print("throughput: not measured (not every task has a finish time)")
    p = figures["promptLatencyMs"]
    if p:
        print(
            f"blocked call -> editor's prompt (tool_started.at -> receipt by the editor): "
            f"p50 {p['p50']} ms, p99 {p['p99']} ms, max {p['max']} ms ({p['count']} prompts"
            + (f"; {unmatched} without a tool_started record before the prompt, left out" if unmatched else "")
            + ")"
        )
        for key, what in (
            ("promptLatencyMsSteady", "  outside the node's failover"),
            ("promptLatencyMsInFailover", "  blocked within 15 s after the node stopped"),
        ):
            q = figures.get(key)
            if q:
                print(f"{what}: p50 {q['p50']} ms, p99 {q['p99']} ms, max {q['max']} ms ({q['count']} prompts)")
    else:
        print(f"blocked call -> editor's prompt: not measured ({unmatched} prompts without a tool_started record)")
    if args.silent_editor:
        w = figures.get("withdrawLatencyMs")
        if w:
            print(
                f"first editor's answer -> the silent editor's prompt withdrawn (answer written to its "
                f"rawko serve -> rawko/approvalWithdrawn received by the other): p50 {w['p50']} ms, "
                f"p99 {w['p99']} ms, max {w['max']} ms ({w['count']} prompts; the silent editor was asked "
                f"{figures.get('silentEditorAsked')} of {len(ids)})"
            )
            for key, what in (
                ("withdrawLatencyMsSteady", "  outside the node's failover"),
                ("withdrawLatencyMsInFailover", "  answered within 15 s after the node stopped"),
            ):
                q = figures.get(key)
                if q:
                    print(f"{what}: p50 {q['p50']} ms, p99 {q['p99']} ms, max {q['max']} ms ({q['count']} prompts)")
        else:
            print("first editor's answer -> the silent editor's prompt withdrawn: not measured (no withdrawal matched)")
    if takeovers:
        each = ", ".join(f"{ms}" for _, ms in sorted(takeovers.items()))
        print(
            f"lost worker's task going on elsewhere (first record of its log after the kill): "
            f"max {figures['takeoverMsMax']} ms; each: {each} ms (ack wait {args.ack_wait} s)"
        )
    else:
        print("lost worker's task going on elsewhere (first record of its log after the kill): not measured")
    if takeovers_stderr:
        each = ", ".join(f"{ms}" for _, ms in sorted(takeovers_stderr.items()))
        print(
            f"  by the workers' stderr (first took/resumed by another worker after the kill): "
            f"max {figures['takeoverMsFromWorkerStderrMax']} ms; each: {each} ms"
        )
    print(f"tasks finished by worker: {', '.join(f'{k} {v}' for k, v in sorted(by_worker.items()))}")
    print(f"figures written to {args.figures}")
    with open(os.path.join(args.run, "check-counts"), "w") as f:
        f.write(f"{c.passed} {c.failed}\n")
    return 0 if c.failed == 0 else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("editor")
    e.add_argument("--rawko", required=True)
    e.add_argument("--nats", required=True)
    e.add_argument("--workspace", required=True)
    e.add_argument("--out", required=True)
    e.add_argument(
        "--answer-delay-ms",
        type=int,
        default=0,
        help="answer each rawko/approveToolCall this long after it arrived (default 0: at once)",
    )
    e.add_argument(
        "--silent",
        action="store_true",
        help="answer no rawko/approveToolCall: record each and keep it open until it is withdrawn",
    )
    sub.add_parser("progress")
    b = sub.add_parser("busiest")
    b.add_argument("--log", action="append", required=True, help="a worker's stderr (NAME.log)")
    b.add_argument("--min-finished", type=int, default=0)
    b.add_argument("--min-held", type=int, default=1)
    h = sub.add_parser("held")
    h.add_argument("--log", required=True, help="the worker's stderr")
    sub.add_parser("finished")
    w = sub.add_parser("watchers")
    w.add_argument("--monitor", action="append", required=True, help="a node's monitoring URL")
    w.add_argument("--stream", default="KV_rawko-asks")
    w.add_argument("--description", default="kv watch consumer")
    k = sub.add_parser("check")
    k.add_argument("--rawko", required=True)
    k.add_argument("--nats", required=True)
    k.add_argument("--cwd", required=True, help="where to run `rawko tasks show` (a clone)")
    k.add_argument("--remote", required=True, help="the bare repository, the workers' origin")
    k.add_argument("--run", required=True, help="the run's directory (show/ and check-counts go there)")
    k.add_argument("--ids", required=True, help="the submitted task ids, one a line")
    k.add_argument("--list", required=True, help="the last `tasks list --json`")
    k.add_argument("--editor", required=True, help="the editor driver's --out")
    k.add_argument("--silent-editor", help="the --out of a second editor driver run with --silent")
    k.add_argument("--expect-files", required=True, help='JSON {"path": "content", ...}')
    k.add_argument("--held", help="the ids the killed worker held, one a line")
    k.add_argument("--victim")
    k.add_argument("--kill-ms", type=int, default=0)
    k.add_argument("--node-stop-ms", type=int, default=0)
    k.add_argument("--first-submit-ms", type=int, default=0)
    k.add_argument("--ack-wait", type=int, default=30)
    k.add_argument("--workers", type=int, default=3)
    k.add_argument("--max-tasks", type=int, default=4)
    k.add_argument("--worker-log", action="append")
    k.add_argument("--figures", required=True)
    args = parser.parse_args()
    return {
        "editor": cmd_editor,
        "progress": cmd_progress,
        "busiest": cmd_busiest,
        "held": cmd_held,
        "finished": cmd_finished,
        "watchers": cmd_watchers,
        "check": cmd_check,
    }[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())

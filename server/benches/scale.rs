//! Benchmark of rawko at scale (issue 19): many scripted tasks over one `rawko serve` connection,
//! and many external sessions at once. It drives the real binary over real pipes (LSP framing)
//! and loopback HTTP, prints each figure on a line of its own beside the issue's target, and
//! checks what every task said (it completed, its `seq` ran from 1 without a gap, its approval was
//! asked once); it never asserts a time.
//!
//! Run: `cargo bench -p rawko --bench scale -- [MODE [N]]`, MODE one of
//! - `release` (N = 1,000): N tasks each wait on a blocked Write; the approvals are held until all
//!   wait, then answered at once. Targets: every task finished within 2 s of the release, ≥ 20,000
//!   notifications per second.
//! - `concurrent` (N = 10,000): N tasks through the nested starter workflow (Read, Grep,
//!   `workflow_step`, a blocked Write held until all wait, an early stop whose reminder comes at
//!   once). Targets: peak RSS ≤ 500 MB, ≤ 40 KB per waiting task.
//! - `leak` (N = 10,000): N short tasks one after another; RSS and open files after the first 100
//!   and after the last. Target: RSS within 10 %.
//! - `external` (N = 500): N new Claude Code sessions at once through `http` hooks, then through N
//!   `rawko hook` processes. Targets: http p99 ≤ 250 ms, nothing dropped.
//!
//! `RAWKO_SCALE_PAUSE=SECONDS` pauses while all tasks wait (for a profiler), `RAWKO_SCALE_LOG`
//! sets the server's `RAWKO_LOG` (default `warn`), `RAWKO_SCALE_SERVER_LOG=FILE` keeps its log, and
//! `RAWKO_SCALE_KEEP=1` keeps the workspace and state directory (their path is printed).
//!
//! Without a mode, all four at their default N. `cargo test --benches` (no `--bench` argument)
//! runs all four with a small N.

use std::collections::{HashMap, VecDeque};
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The `external` mode: many new Claude Code sessions at once. (A bench's root looks for its
/// modules beside it, where `external.rs` is another bench.)
#[path = "scale/external.rs"]
mod external;

const EXE: &str = env!("CARGO_BIN_EXE_rawko");

/// The longest wait for any one message: past it the bench reports a hang, not a slow run.
const PATIENCE: Duration = Duration::from_secs(1800);

/// How many `rawko/startTask` requests are in flight at once while tasks start.
const START_WINDOW: usize = 32;

/// What the fixture writes into the workspace besides the starter workflows: `gate`, one phase
/// that blocks Write; `quick`, one phase that allows everything; a small project; the scripts.
#[rustfmt::skip]
const FILES: &[(&str, &str)] = &[
    (".rawko/workflows/gate/workflow.yaml", "name: Gate\ncommandName: gate\ninitialMessage: \"Do {description}\"\nphases:\n  - work.md\n"),
    (".rawko/workflows/gate/work.md", "---\nid: work\nname: Work\nemoji: 🔒\ntools:\n  blacklist: [Write]\n---\nDo {description}; ask before writing.\n"),
    (".rawko/workflows/quick/workflow.yaml", "name: Quick\ncommandName: quick\ninitialMessage: \"Do {description}\"\nphases:\n  - only.md\n"),
    (".rawko/workflows/quick/only.md", "---\nid: only\nname: Only\nemoji: ⚡\n---\nDo {description}.\n"),
    ("README.md", "# greet\n\nSays hello.\n"),
    ("greet.sh", "#!/bin/sh\nname=\"${1:-world}\"\necho \"Hello, $name!\"\n"),
    ("scripts/release.yaml", RELEASE_SCRIPT),
    ("scripts/nested.yaml", NESTED_SCRIPT),
    ("scripts/short.yaml", SHORT_SCRIPT),
];

/// `release` (workflow `gate`): the blocked Write first, then the workflow's one step and the end.
const RELEASE_SCRIPT: &str = r#"
turns:
  - tool_calls: [{name: Write, input: {path: released.md, content: "released\n"}}]
  - tool_calls: [{name: workflow_step, input: {action: next}}]
  - text: "Done."
"#;

/// `concurrent` (workflow `feature`: Plan, Implement, Test, then the Review subworkflow's Static
/// Analysis and Peer Review): Plan reads, then its blocked Write waits for the editor; in
/// Implement the agent stops early (the reminder comes at once), then walks to the end.
/// tests/lsp_scale.rs runs the same script.
const NESTED_SCRIPT: &str = r#"
turns:
  - text: "Reading first."
    tool_calls: [{name: Read, input: {path: README.md}}, {name: Grep, input: {pattern: Hello}}]
  - tool_calls: [{name: Write, input: {path: PLAN.md, content: "1. shout\n"}}]
  - tool_calls: [{name: workflow_step, input: {action: next}}]
  - text: "I think that is all."
  - tool_calls: [{name: workflow_step, input: {action: next}}]
  - tool_calls: [{name: workflow_step, input: {action: next}}]
  - tool_calls: [{name: Grep, input: {pattern: name}}, {name: workflow_step, input: {action: next}}]
  - tool_calls: [{name: Read, input: {path: greet.sh}}, {name: workflow_step, input: {action: next}}]
  - text: "Done."
"#;

/// `leak` (workflow `quick`): a read and the workflow's one step, then the end.
const SHORT_SCRIPT: &str = r#"
turns:
  - tool_calls: [{name: Read, input: {path: README.md}}, {name: workflow_step, input: {action: next}}]
  - text: "Done."
"#;

/// A workspace and a home directory (the server's config, state and runtime files) in a
/// temporary directory.
struct Fixture {
    dir: tempfile::TempDir,
    ws: PathBuf,
    home: PathBuf,
}

impl Fixture {
    #[allow(clippy::print_stdout)]
    fn new() -> Fixture {
        let mut dir = tempfile::tempdir().expect("tempdir");
        if std::env::var_os("RAWKO_SCALE_KEEP").is_some() {
            dir.disable_cleanup(true);
            println!("  kept for inspection: {}", dir.path().display());
        }
        let (ws, home) = (dir.path().join("ws"), dir.path().join("home"));
        fs::create_dir_all(ws.join(".rawko")).expect("mkdir");
        fs::create_dir_all(&home).expect("mkdir");
        let ws = ws.canonicalize().expect("canonical workspace");
        let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("starter/workflows");
        let to = ws.join(".rawko/workflows");
        let copy = Command::new("cp").arg("-r").arg(&from).arg(&to).status();
        assert!(copy.is_ok_and(|s| s.success()), "cp -r {from:?} {to:?}");
        for (rel, content) in FILES {
            let path = ws.join(rel);
            fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            fs::write(path, content).expect("write");
        }
        Fixture { dir, ws, home }
    }

    /// A rawko command with HOME and the XDG directories under the fixture's home.
    fn rawko(&self, args: &[&str]) -> Command {
        let h = &self.home;
        let mut c = Command::new(EXE);
        c.args(args)
            .current_dir(h)
            .env("HOME", h)
            .env("XDG_CONFIG_HOME", h.join(".config"))
            .env("XDG_STATE_HOME", h.join(".local/state"))
            .env("XDG_RUNTIME_DIR", h.join("run"))
            .env("PI_CODING_AGENT_DIR", h.join(".pi/agent"))
            .env(
                "RAWKO_LOG",
                std::env::var("RAWKO_SCALE_LOG").unwrap_or_else(|_| "warn".to_owned()),
            )
            .env_remove("RUST_LOG");
        c
    }
}

/// What one task said so far.
#[derive(Default)]
struct Track {
    seq: u64,
    approvals: u32,
    reminders: u32,
    outcome: Option<String>,
}

/// The client's books: what came and what is still due.
#[derive(Default)]
struct Books {
    /// Responses not taken yet, with when they came.
    responses: HashMap<u64, (Instant, Value)>,
    tasks: HashMap<String, Track>,
    /// Approval requests not answered yet, while `hold` is on; otherwise each is allowed at once.
    held: Vec<Value>,
    hold: bool,
    /// Task notifications received in all, and tasks finished.
    notes: u64,
    finished: usize,
    problems: Vec<String>,
}

/// One `rawko serve` and a client of it. A reader thread parses the server's frames into a channel,
/// so the server never blocks on a full pipe; `wait_until` takes them and keeps the books.
struct Server {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<Value>,
    log: PathBuf,
    next_id: u64,
    b: Books,
}

impl Server {
    /// Starts `rawko serve` and initializes it with `options`.
    fn start(fx: &Fixture, options: Value) -> Server {
        // The server's log: in the fixture (shown when something hangs), or where
        // RAWKO_SCALE_SERVER_LOG says (kept, for RAWKO_SCALE_LOG=debug and the like).
        let log = std::env::var_os("RAWKO_SCALE_SERVER_LOG")
            .map_or_else(|| fx.dir.path().join("serve.log"), PathBuf::from);
        let mut child = fx
            .rawko(&["serve", "--workspace", &fx.ws.display().to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(fs::File::create(&log).expect("server log"))
            .spawn()
            .expect("spawn rawko serve");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::with_capacity(1 << 16, stdout);
            while let Some(body) = read_frame(&mut reader) {
                // A body that is not JSON comes as null: a problem for `handle`.
                let message = serde_json::from_slice(&body).unwrap_or(Value::Null);
                if tx.send(message).is_err() {
                    return;
                }
            }
        });
        let mut s = Server {
            child,
            stdin,
            rx,
            log,
            next_id: 0,
            b: Books::default(),
        };
        let uri = format!("file://{}", fx.ws.display());
        let r = s.call(
            "initialize",
            json!({"processId": std::process::id(), "rootUri": uri, "capabilities": {}, "initializationOptions": options}),
        );
        assert!(r.get("result").is_some(), "initialize: {r}");
        s.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
        s
    }

    fn send(&mut self, message: &Value) {
        let bytes = frame(message);
        self.stdin.write_all(&bytes).expect("write to rawko");
    }

    /// Sends a request; returns its id.
    fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The response to request `id` (the whole message: `result` or `error`), and when it came.
    fn response(&mut self, id: u64) -> (Instant, Value) {
        let what = format!("the response to request {id}");
        self.wait_until(&what, |b| b.responses.contains_key(&id));
        self.b.responses.remove(&id).expect("response")
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.response(id).1
    }

    /// Starts `n` scripted tasks, `START_WINDOW` requests in flight; returns their ids and when
    /// the starts were answered (from the first request, in order).
    fn start_tasks(
        &mut self,
        n: usize,
        workflow: &str,
        script: &str,
    ) -> (Vec<String>, Vec<Duration>) {
        let (started, mut in_flight, mut answered) = (Instant::now(), VecDeque::new(), Vec::new());
        for i in 0..n {
            if in_flight.len() >= START_WINDOW {
                answered.push(self.task_started(in_flight.pop_front().expect("in flight")));
            }
            in_flight.push_back(self.request("rawko/startTask", start_params(i, workflow, script)));
        }
        answered.extend(in_flight.into_iter().map(|id| self.task_started(id)));
        let (ids, mut times): (Vec<String>, Vec<Duration>) = answered
            .into_iter()
            .map(|(id, at)| (id, at - started))
            .unzip();
        times.sort();
        (ids, times)
    }

    fn task_started(&mut self, id: u64) -> (String, Instant) {
        let (at, r) = self.response(id);
        let id = r["result"]["taskId"].as_str();
        (
            id.unwrap_or_else(|| panic!("rawko/startTask failed: {r}"))
                .to_owned(),
            at,
        )
    }

    /// Takes messages until `done` holds; panics with the server's log when nothing comes for
    /// `PATIENCE` or the server stops talking.
    fn wait_until(&mut self, what: &str, done: impl Fn(&Books) -> bool) {
        while !done(&self.b) {
            match self.rx.recv_timeout(PATIENCE) {
                Ok(message) => self.handle(message),
                Err(e) => panic!(
                    "waiting for {what}: {e:?} ({} tasks seen, {} finished, {} approvals held)\n--- rawko's log (tail):\n{}",
                    self.b.tasks.len(),
                    self.b.finished,
                    self.b.held.len(),
                    tail(&fs::read_to_string(&self.log).unwrap_or_default(), 4000)
                ),
            }
        }
    }

    fn handle(&mut self, message: Value) {
        let b = &mut self.b;
        let method = message.get("method").and_then(Value::as_str);
        match (method, message.get("id")) {
            (None, Some(id)) => {
                if let Some(id) = id.as_u64() {
                    b.responses.insert(id, (Instant::now(), message));
                }
            }
            (Some("rawko/approveToolCall"), Some(id)) => {
                let task = message["params"]["taskId"].as_str().unwrap_or("?");
                let track = b.tasks.entry(task.to_owned()).or_default();
                track.approvals += 1;
                if track.approvals == 2 {
                    b.problems.push(format!("{task}: approval asked again"));
                }
                match b.hold {
                    true => b.held.push(id.clone()),
                    false => self.send(&allow_once(id)),
                }
            }
            (Some(_), Some(id)) => self.send(&json!({"jsonrpc": "2.0", "id": id, "result": null})),
            (Some(method), None) => {
                let p = &message["params"];
                let Some(task) = p["taskId"].as_str() else {
                    return;
                };
                b.notes += 1;
                let track = b.tasks.entry(task.to_owned()).or_default();
                let seq = p["seq"].as_u64().unwrap_or(0);
                let (last, wrong) = (track.seq, &mut b.problems);
                if seq != last + 1 {
                    wrong.push(format!("{task}: {method} seq {seq} after {last}"));
                }
                if track.outcome.is_some() {
                    wrong.push(format!("{task}: {method} after rawko/taskFinished"));
                }
                track.seq = seq;
                if method == "rawko/output" && p["kind"] == "reminder" {
                    track.reminders += 1;
                }
                if method == "rawko/taskFinished" {
                    track.outcome = Some(p["outcome"].as_str().unwrap_or("?").to_owned());
                    b.finished += 1;
                }
            }
            (None, None) => b.problems.push(format!("not a message: {message}")),
        }
    }

    /// Answers every held approval `allow_once`, in one write.
    fn release(&mut self) {
        self.b.hold = false;
        let held = std::mem::take(&mut self.b.held);
        let bytes: Vec<u8> = held.iter().flat_map(|id| frame(&allow_once(id))).collect();
        self.stdin.write_all(&bytes).expect("write to rawko");
    }

    /// Checks every task of `ids`: complete, asked `approvals` times, reminded if `reminded`;
    /// prints the verdict with the problems seen on the way. False when anything was wrong.
    #[allow(clippy::print_stdout)]
    fn check(&mut self, ids: &[String], approvals: u32, reminded: bool) -> bool {
        for id in ids {
            let wrong = match self.b.tasks.get(id) {
                None => format!("{id}: no notification"),
                Some(t) if t.outcome.as_deref() != Some("complete") => {
                    format!("{id}: outcome {:?}", t.outcome)
                }
                Some(t) if t.approvals != approvals => format!("{id}: {} approvals", t.approvals),
                Some(t) if reminded && t.reminders == 0 => format!("{id}: no reminder"),
                Some(_) => continue,
            };
            self.b.problems.push(wrong);
        }
        let problems = &self.b.problems;
        if problems.is_empty() {
            let reminder = if reminded { ", a reminder each" } else { "" };
            let n = ids.len();
            println!("  checks: ok ({n} tasks complete, seq from 1 without gaps, {approvals} approval(s) each{reminder})");
            return true;
        }
        println!("  checks: {} PROBLEMS, the first:", problems.len());
        for p in problems.iter().take(10) {
            println!("    {p}");
        }
        false
    }

    fn proc(&self, file: &str) -> String {
        fs::read_to_string(format!("/proc/{}/{file}", self.child.id())).unwrap_or_default()
    }

    /// A figure of /proc/PID/status in KB (`VmRSS:`, `VmHWM:`).
    fn kib(&self, field: &str) -> u64 {
        let status = self.proc("status");
        let value = status
            .lines()
            .find_map(|l| l.strip_prefix(field)?.split_whitespace().next());
        value.and_then(|v| v.parse().ok()).unwrap_or(0)
    }

    /// The server's CPU time so far (user + system) in seconds, at Linux's 100 ticks a second.
    fn cpu_secs(&self) -> f64 {
        let stat = self.proc("stat");
        let fields = stat.rsplit_once(')').map_or("", |(_, f)| f);
        // After the state letter: utime and stime are the 11th and 12th numbers.
        let numbers: Vec<f64> = fields
            .split_whitespace()
            .filter_map(|t| t.parse().ok())
            .collect();
        numbers
            .get(10..12)
            .map_or(0.0, |t| t.iter().sum::<f64>() / 100.0)
    }

    fn open_files(&self) -> usize {
        fs::read_dir(format!("/proc/{}/fd", self.child.id())).map_or(0, Iterator::count)
    }

    /// `rawko/serverStats` as one line, or why there is none.
    fn server_stats(&mut self) -> String {
        let r = self.call("rawko/serverStats", json!({}));
        match (r.get("result"), r["error"]["code"].as_i64()) {
            (Some(result), _) => result.to_string(),
            (None, Some(-32601)) => "not available".to_owned(),
            (None, _) => format!("error {}", r["error"]),
        }
    }

    /// `rawko/serverStats`'s result, if the server answers it.
    fn stats(&mut self) -> Option<Value> {
        self.call("rawko/serverStats", json!({}))
            .get("result")
            .cloned()
    }

    /// How many tasks `rawko/listTasks` lists, and how long it took.
    fn list_tasks(&mut self) -> (usize, Duration) {
        let t = Instant::now();
        let list = self.call("rawko/listTasks", json!({}));
        (
            list["result"]["tasks"].as_array().map_or(0, Vec::len),
            t.elapsed(),
        )
    }

    /// `shutdown` and `exit`; killed if still there after 30 s.
    fn stop(mut self) {
        self.request("shutdown", Value::Null);
        self.send(&json!({"jsonrpc": "2.0", "method": "exit"}));
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_params(i: usize, workflow: &str, script: &str) -> Value {
    json!({"description": format!("scale task {i}"), "workflow": workflow, "provider": "scripted", "script": script})
}

fn allow_once(id: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {"outcome": "allow_once"}})
}

fn frame(message: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(message).expect("json");
    let mut f = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    f.extend_from_slice(&body);
    f
}

/// One LSP frame's body; `None` at the end of the stream or on a broken frame.
fn read_frame(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let (mut length, mut line) = (None, String::new());
    while reader.read_line(&mut line).ok()? > 0 && line != "\r\n" {
        if let Some(n) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = n.trim().parse().ok();
        }
        line.clear();
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

/// `announceLatencyMicros` of a `rawko/serverStats` result: (upper bound in µs, count).
fn latency_counts(stats: &Value) -> Vec<(u64, u64)> {
    let buckets = stats["announceLatencyMicros"].as_array();
    let pair = |b: &Value| Some((b[0].as_u64()?, b[1].as_u64()?));
    buckets.map_or_else(Vec::new, |b| b.iter().filter_map(pair).collect())
}

/// The upper bound of the bucket that holds the `q` quantile of a histogram.
fn quantile(buckets: &[(u64, u64)], q: f64) -> u64 {
    let total: u64 = buckets.iter().map(|(_, n)| n).sum();
    let want = ((total as f64) * q).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (bound, n) in buckets {
        seen += n;
        if seen >= want {
            return *bound;
        }
    }
    0
}

/// A bucket's bound for people: `250 µs`, `4.0 ms`, `more than 60 s`.
fn bound_text(micros: u64) -> String {
    match micros {
        0 => "none".to_owned(),
        u64::MAX => "more than 60 s".to_owned(),
        m if m < 1000 => format!("{m} µs"),
        m => format!("{:.1} ms", m as f64 / 1000.0),
    }
}

fn tail(s: &str, max: usize) -> String {
    let count = s.chars().count();
    s.chars().skip(count.saturating_sub(max)).collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len().max(1) as f64 - 1.0) * p).round() as usize;
    sorted.get(i).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The mode's header: what runs, and on what machine.
#[allow(clippy::print_stdout)]
fn header(mode: &str, n: usize, what: &str) {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo.lines().find_map(|l| l.strip_prefix("model name"));
    let model = model.map_or("unknown CPU", |m| m.trim_start_matches([' ', '\t', ':']));
    println!("scale {mode} N={n} on {cpus} × {model} — {what}");
}

/// The two modes of `held`: name, what runs, workflow, script, countdown seconds.
#[rustfmt::skip]
const HELD: [(&str, &str, &str, &str, u32); 2] = [
    ("release", "N tasks held at a blocked Write, then all allowed at once", "gate", "scripts/release.yaml", 3),
    ("concurrent", "N nested-workflow tasks, a blocked Write held until all wait, an early stop", "feature", "scripts/nested.yaml", 0),
];

/// `release` and `concurrent`: N tasks each held at a blocked Write until all wait, then all
/// allowed at once. Prints the figures of both modes, with the targets of the one run.
#[allow(clippy::print_stdout)]
fn held(release: bool, n: usize) -> bool {
    let (mode, what, workflow, script, countdown) = HELD[usize::from(!release)];
    header(mode, n, what);
    let options = json!({"countdownTickMillis": 20, "countdownSeconds": countdown, "approvalTimeoutSeconds": 86400});
    let target = |t: &'static str, of_release: bool| if of_release == release { t } else { "" };
    let secs = |d: Duration| d.as_secs_f64();
    let fx = Fixture::new();
    let mut s = Server::start(&fx, options);
    let baseline = s.kib("VmRSS:");
    s.b.hold = true;
    let first = Instant::now();
    let (ids, times) = s.start_tasks(n, workflow, script);
    s.wait_until("every task's approval request", |b| b.held.len() >= n);
    let (all_waiting, cpu_waiting) = (first.elapsed(), s.cpu_secs());
    let (waiting, files) = (s.kib("VmRSS:"), s.open_files());
    pause_for_profiler(&s);
    let before = s.b.notes;
    let latency_before = s.stats().map(|v| latency_counts(&v)).unwrap_or_default();
    let released = Instant::now();
    s.release();
    s.wait_until("every task's rawko/taskFinished", |b| b.finished >= n);
    let (wall, after, total) = (released.elapsed(), s.b.notes - before, first.elapsed());
    let (starting, tenth) = (secs(times[n - 1]), (n / 10).max(1));
    let rate = n as f64 / starting;
    println!("  start rate: {rate:.0} tasks/s ({n} in {starting:.2} s)");
    let early = tenth as f64 / secs(times[tenth - 1]);
    let before_last = n.checked_sub(tenth + 1).map_or(0.0, |i| secs(times[i]));
    let late = tenth as f64 / (starting - before_last);
    println!("  start rate of the first and the last {tenth}: {early:.0} and {late:.0} tasks/s");
    println!("  first start → all waiting: {:.2} s", secs(all_waiting));
    let t = target(" (target ≤ 2 s)", true);
    println!("  release → last taskFinished: {:.3} s{t}", secs(wall));
    println!("  task notifications after the release: {after}");
    let (rate, t) = (after as f64 / secs(wall), target(" (target ≥ 20000)", true));
    println!("  notifications per second after the release: {rate:.0}{t}");
    println!("  first start → last taskFinished: {:.2} s", secs(total));
    let (rate, all) = (s.b.notes as f64 / secs(total), s.b.notes);
    println!("  notifications per second overall: {rate:.0} ({all} in all)");
    let cpu_after = s.cpu_secs() - cpu_waiting;
    let stats = s.stats().unwrap_or(Value::Null);
    let mut latency = latency_counts(&stats);
    for (bound, n) in &mut latency {
        *n -= latency_before
            .iter()
            .find(|(b, _)| b == bound)
            .map_or(0, |(_, m)| *m);
    }
    let t = target(" (target ≤ 5 ms)", true);
    println!(
        "  append → announce after the release: p50 ≤ {}, p99 ≤ {}{t}, max ≤ {} ({} announcements)",
        bound_text(quantile(&latency, 0.5)),
        bound_text(quantile(&latency, 0.99)),
        bound_text(quantile(&latency, 1.0)),
        latency.iter().map(|(_, n)| n).sum::<u64>()
    );
    let kb = |field: &str| stats[field].as_u64().unwrap_or(0) / 1024;
    println!(
        "  log writer backlog at its peak: {} KB; tasks that waited for it: {}; messages queued for the client at their peak: {} KB",
        kb("peakLogBacklogBytes"),
        stats["logBacklogWaits"].as_u64().unwrap_or(0),
        kb("peakOutgoingBytes")
    );
    println!(
        "  server CPU until all wait: {cpu_waiting:.2} s, after the release: {cpu_after:.2} s"
    );
    println!("  RSS after initialize: {baseline} KB");
    println!("  RSS while all {n} wait: {waiting} KB");
    println!("  open files while all {n} wait: {files}");
    let per_task = waiting.saturating_sub(baseline) as f64 / n as f64;
    let t = target(" (target ≤ 40 KB)", false);
    println!("  RSS per waiting task beyond initialize: {per_task:.1} KB{t}");
    let t = target(" (target ≤ 500 MB = 512000 KB)", false);
    println!("  peak RSS (VmHWM): {} KB{t}", s.kib("VmHWM:"));
    let ok = s.check(&ids, 1, !release);
    s.stop();
    ok
}

/// With `RAWKO_SCALE_PAUSE=SECONDS`, waits that long while every task waits (before the release),
/// saying so with the server's pid: time for a heap or CPU profiler to look at the server.
#[allow(clippy::print_stdout)]
fn pause_for_profiler(s: &Server) {
    let pause = std::env::var("RAWKO_SCALE_PAUSE").ok();
    if let Some(secs) = pause.and_then(|p| p.parse::<f64>().ok()) {
        println!("  all wait: pausing {secs} s (server pid {})", s.child.id());
        let _ = std::io::stdout().flush();
        std::thread::sleep(Duration::from_secs_f64(secs));
    }
}

fn release(n: usize) -> bool {
    held(true, n)
}

fn concurrent(n: usize) -> bool {
    held(false, n)
}

/// RSS, open files and `rawko/serverStats` after `k` tasks; returns the RSS.
#[allow(clippy::print_stdout)]
fn snapshot(s: &mut Server, k: usize) -> u64 {
    let (rss, files) = (s.kib("VmRSS:"), s.open_files());
    println!("  RSS after {k} tasks: {rss} KB");
    println!("  open files after {k} tasks: {files}");
    println!("  serverStats after {k}: {}", s.server_stats());
    rss
}

/// Short tasks one after another: what stays behind.
#[allow(clippy::print_stdout)]
fn leak(n: usize) -> bool {
    header("leak", n, "N short tasks one after another");
    let fx = Fixture::new();
    let mut s = Server::start(&fx, json!({"countdownTickMillis": 20}));
    let mark = n.min(100);
    let mut ids = Vec::with_capacity(n);
    let started = Instant::now();
    let mut at_mark = (0, Duration::ZERO);
    for i in 0..n {
        let id = s.request(
            "rawko/startTask",
            start_params(i, "quick", "scripts/short.yaml"),
        );
        ids.push(s.task_started(id).0);
        s.wait_until("the task's rawko/taskFinished", |b| b.finished > i);
        if i + 1 == mark {
            at_mark = (snapshot(&mut s, mark), started.elapsed());
        }
    }
    let total = started.elapsed();
    let ratio = snapshot(&mut s, n) as f64 / at_mark.0.max(1) as f64;
    println!("  RSS after {n} / after {mark}: {ratio:.3} (target ≤ 1.10)");
    println!("  time per task: {:.2} ms", ms(total) / n as f64);
    let later = ms(total - at_mark.1) / (n - mark).max(1) as f64;
    println!("  time per task after the first {mark}: {later:.2} ms");
    println!("  peak RSS (VmHWM): {} KB", s.kib("VmHWM:"));
    let (listed, took) = s.list_tasks();
    println!(
        "  rawko/listTasks: {listed} tasks in {:.1} ms (want {n})",
        ms(took)
    );
    let ok = s.check(&ids, 0, false) && listed == n;
    s.stop();
    ok
}

type Mode = (&'static str, fn(usize) -> bool, usize, usize);

/// The modes: name, run, N for `cargo bench`, N for `cargo test --benches`.
const MODES: [Mode; 4] = [
    ("release", release, 1_000, 20),
    ("concurrent", concurrent, 10_000, 20),
    ("leak", leak, 10_000, 120),
    ("external", external::external, 500, 10),
];

#[allow(clippy::print_stdout)]
fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this too: keep that run short.
    let quick = !argv.iter().any(|a| a == "--bench");
    let args: Vec<&str> = argv
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let n = args.get(1).map(|a| {
        let n = a.replace('_', "").parse::<usize>();
        n.unwrap_or_else(|_| panic!("N must be a number, not {a}"))
    });
    let chosen: Vec<&Mode> = MODES
        .iter()
        .filter(|m| args.first().is_none_or(|a| *a == m.0))
        .collect();
    if chosen.is_empty() {
        println!("usage: scale [release|concurrent|leak|external] [N]");
        std::process::exit(2);
    }
    let mut ok = true;
    for (_, run, full, small) in chosen {
        ok &= run(n.unwrap_or(if quick { *small } else { *full }).max(1));
    }
    if !ok {
        std::process::exit(1);
    }
}

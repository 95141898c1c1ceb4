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
    fn new() -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        let (ws, home) = (dir.path().join("ws"), dir.path().join("home"));
        fs::create_dir_all(ws.join(".rawko")).expect("mkdir");
        fs::create_dir_all(&home).expect("mkdir");
        let ws = ws.canonicalize().expect("canonical workspace");
        let starter = Path::new(env!("CARGO_MANIFEST_DIR")).join("starter/workflows");
        let copy = Command::new("cp")
            .arg("-r")
            .arg(starter)
            .arg(ws.join(".rawko/workflows"))
            .status();
        assert!(
            copy.is_ok_and(|s| s.success()),
            "copy the starter workflows"
        );
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
            .env("RAWKO_LOG", "warn")
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
    responses: HashMap<u64, Value>,
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
        let log = fx.dir.path().join("serve.log");
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
                let message = serde_json::from_slice(&body).unwrap_or_else(
                    |_| json!({"notJson": String::from_utf8_lossy(&body).into_owned()}),
                );
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
        self.stdin
            .write_all(&frame(message))
            .expect("write to rawko");
    }

    /// Sends a request; returns its id.
    fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// The response to request `id` (the whole message: `result` or `error`).
    fn response(&mut self, id: u64) -> Value {
        let what = format!("the response to request {id}");
        self.wait_until(&what, |b| b.responses.contains_key(&id));
        self.b.responses.remove(&id).expect("response")
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        self.response(id)
    }

    /// Starts `n` scripted tasks, `START_WINDOW` requests in flight; returns their ids and how
    /// long starting took.
    fn start_tasks(&mut self, n: usize, workflow: &str, script: &str) -> (Vec<String>, Duration) {
        let started = Instant::now();
        let mut ids = Vec::with_capacity(n);
        let mut in_flight = VecDeque::new();
        for i in 0..n {
            if in_flight.len() >= START_WINDOW {
                let id = in_flight.pop_front().expect("in flight");
                ids.push(self.task_started(id));
            }
            in_flight.push_back(self.request("rawko/startTask", start_params(i, workflow, script)));
        }
        while let Some(id) = in_flight.pop_front() {
            ids.push(self.task_started(id));
        }
        (ids, started.elapsed())
    }

    fn task_started(&mut self, id: u64) -> String {
        let r = self.response(id);
        let id = r["result"]["taskId"].as_str();
        id.unwrap_or_else(|| panic!("rawko/startTask failed: {r}"))
            .to_owned()
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
                    b.responses.insert(id, message);
                }
            }
            (Some("rawko/approveToolCall"), Some(id)) => {
                let task = message["params"]["taskId"].as_str().unwrap_or("?");
                let track = b.tasks.entry(task.to_owned()).or_default();
                track.approvals += 1;
                if track.approvals > 1 {
                    let n = track.approvals;
                    b.problems.push(format!("{task}: approval asked {n} times"));
                }
                if b.hold {
                    b.held.push(id.clone());
                } else {
                    let answer = allow_once(id);
                    self.send(&answer);
                }
            }
            (Some(_), Some(id)) => {
                let answer = json!({"jsonrpc": "2.0", "id": id, "result": null});
                self.send(&answer);
            }
            (Some(method), None) => {
                let p = &message["params"];
                let Some(task) = p["taskId"].as_str() else {
                    return;
                };
                b.notes += 1;
                let track = b.tasks.entry(task.to_owned()).or_default();
                let seq = p["seq"].as_u64().unwrap_or(0);
                if seq != track.seq + 1 {
                    let last = track.seq;
                    b.problems
                        .push(format!("{task}: {method} seq {seq} after {last}"));
                }
                if track.outcome.is_some() {
                    b.problems
                        .push(format!("{task}: {method} after rawko/taskFinished"));
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
            (None, None) => {
                let text: String = message.to_string().chars().take(200).collect();
                b.problems.push(format!("not a message: {text}"));
            }
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

    /// A figure of /proc/PID/status in KB (`VmRSS:`, `VmHWM:`).
    fn kib(&self, field: &str) -> u64 {
        let status = fs::read_to_string(format!("/proc/{}/status", self.child.id()));
        let status = status.unwrap_or_default();
        let value = status.lines().find_map(|l| l.strip_prefix(field));
        value
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0)
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
    let mut length = None;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse::<usize>().ok();
            }
        }
    }
    let mut body = vec![0; length?];
    reader.read_exact(&mut body).ok()?;
    Some(body)
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

/// `release` and `concurrent`: N tasks each held at a blocked Write until all wait, then all
/// allowed at once. Prints the figures of both modes, with the targets of the one run.
#[allow(clippy::print_stdout)]
fn held(release: bool, n: usize, workflow: &str, script: &str, options: Value) -> bool {
    let target = |t: &'static str, of_release: bool| if of_release == release { t } else { "" };
    let secs = |d: Duration| d.as_secs_f64();
    let fx = Fixture::new();
    let mut s = Server::start(&fx, options);
    let baseline = s.kib("VmRSS:");
    s.b.hold = true;
    let first = Instant::now();
    let (ids, starting) = s.start_tasks(n, workflow, script);
    s.wait_until("every task's approval request", |b| b.held.len() >= n);
    let all_waiting = first.elapsed();
    let waiting = s.kib("VmRSS:");
    let before = s.b.notes;
    let released = Instant::now();
    s.release();
    s.wait_until("every task's rawko/taskFinished", |b| b.finished >= n);
    let (wall, after, total) = (released.elapsed(), s.b.notes - before, first.elapsed());
    let (rate, starting) = (n as f64 / secs(starting), secs(starting));
    println!("  start rate: {rate:.0} tasks/s ({n} in {starting:.2} s)");
    println!("  first start → all waiting: {:.2} s", secs(all_waiting));
    let t = target(" (target ≤ 2 s)", true);
    println!("  release → last taskFinished: {:.3} s{t}", secs(wall));
    println!("  task notifications after the release: {after}");
    let (rate, t) = (after as f64 / secs(wall), target(" (target ≥ 20000)", true));
    println!("  notifications per second after the release: {rate:.0}{t}");
    println!("  first start → last taskFinished: {:.2} s", secs(total));
    let (rate, all) = (s.b.notes as f64 / secs(total), s.b.notes);
    println!("  notifications per second overall: {rate:.0} ({all} in all)");
    println!("  RSS after initialize: {baseline} KB");
    println!("  RSS while all {n} wait: {waiting} KB");
    let (per_task, t) = (
        waiting.saturating_sub(baseline) as f64 / n as f64,
        target(" (target ≤ 40 KB)", false),
    );
    println!("  RSS per waiting task beyond initialize: {per_task:.1} KB{t}");
    let t = target(" (target ≤ 500 MB = 512000 KB)", false);
    println!("  peak RSS (VmHWM): {} KB{t}", s.kib("VmHWM:"));
    let ok = s.check(&ids, 1, !release);
    s.stop();
    ok
}

fn release(n: usize) -> bool {
    let what = "N tasks held at a blocked Write, then all allowed at once";
    header("release", n, what);
    let options = json!({"countdownTickMillis": 20, "approvalTimeoutSeconds": 86400});
    held(true, n, "gate", "scripts/release.yaml", options)
}

fn concurrent(n: usize) -> bool {
    let what = "N nested-workflow tasks, a blocked Write held until all wait, an early stop";
    header("concurrent", n, what);
    let options =
        json!({"countdownTickMillis": 20, "countdownSeconds": 0, "approvalTimeoutSeconds": 86400});
    held(false, n, "feature", "scripts/nested.yaml", options)
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
    let mut at_mark = (0, 0, Duration::ZERO);
    for i in 0..n {
        let id = s.request(
            "rawko/startTask",
            start_params(i, "quick", "scripts/short.yaml"),
        );
        ids.push(s.task_started(id));
        s.wait_until("the task's rawko/taskFinished", |b| b.finished > i);
        if i + 1 == mark {
            at_mark = (s.kib("VmRSS:"), s.open_files(), started.elapsed());
            println!("  RSS after {mark} tasks: {} KB", at_mark.0);
            println!("  open files after {mark} tasks: {}", at_mark.1);
            println!("  serverStats after {mark}: {}", s.server_stats());
        }
    }
    let total = started.elapsed();
    let (rss, files) = (s.kib("VmRSS:"), s.open_files());
    println!("  RSS after {n} tasks: {rss} KB");
    println!("  open files after {n} tasks: {files}");
    println!("  serverStats after {n}: {}", s.server_stats());
    let ratio = rss as f64 / at_mark.0.max(1) as f64;
    println!("  RSS after {n} / after {mark}: {ratio:.3} (target ≤ 1.10)");
    println!("  time per task: {:.2} ms", ms(total) / n as f64);
    let later = ms(total - at_mark.2) / (n - mark).max(1) as f64;
    println!("  time per task after the first {mark}: {later:.2} ms");
    println!("  peak RSS (VmHWM): {} KB", s.kib("VmHWM:"));
    let (listed, took) = s.list_tasks();
    println!("  rawko/listTasks: {listed} tasks in {:.1} ms", ms(took));
    let mut ok = s.check(&ids, 0, false);
    if listed != n {
        println!("  listTasks PROBLEM: {listed} tasks listed, {n} run");
        ok = false;
    }
    s.stop();
    ok
}

/// A Claude Code hook input: the first event of a new session.
fn session_start(ws: &Path, session: &str) -> String {
    let cwd = ws.display().to_string();
    json!({"session_id": session, "transcript_path": "/tmp/transcript.jsonl", "cwd": cwd, "permission_mode": "default", "hook_event_name": "SessionStart", "source": "startup"}).to_string()
}

/// Whether a SessionStart answer (JSON) carries the first phase's context.
fn has_context(answer: &str) -> bool {
    serde_json::from_str::<Value>(answer.trim()).is_ok_and(|v| {
        let context = v["hookSpecificOutput"]["additionalContext"].as_str();
        context.is_some_and(|c| c.contains("Plan"))
    })
}

/// Runs `job(i)` for i in 0..n on n threads that start together; returns each one's latency or
/// why it failed.
fn all_at_once(
    n: usize,
    job: impl Fn(usize) -> Result<(), String> + Send + Sync + 'static,
) -> Vec<Result<Duration, String>> {
    let job = Arc::new(job);
    let barrier = Arc::new(Barrier::new(n));
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (job, barrier) = (job.clone(), barrier.clone());
            let thread = std::thread::Builder::new().stack_size(256 * 1024);
            let run = move || {
                barrier.wait();
                let start = Instant::now();
                job(i).map(|()| start.elapsed())
            };
            thread.spawn(run).expect("spawn a thread")
        })
        .collect();
    let joined = threads.into_iter().map(|t| t.join());
    joined
        .map(|r| r.unwrap_or_else(|_| Err("panicked".to_owned())))
        .collect()
}

#[allow(clippy::print_stdout)]
fn report_load(name: &str, target: &str, results: Vec<Result<Duration, String>>) -> bool {
    let n = results.len();
    let mut times: Vec<Duration> = results.iter().filter_map(|r| r.clone().ok()).collect();
    let failures: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    times.sort();
    let (p50, p99) = (ms(percentile(&times, 0.5)), ms(percentile(&times, 0.99)));
    let max = ms(times.last().copied().unwrap_or_default());
    println!("  {name}: p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms{target}");
    let failed = failures.len();
    println!("  {name}: dropped or failed: {failed} of {n} (target 0)");
    for f in failures.iter().take(5) {
        println!("    {f}");
    }
    failures.is_empty()
}

/// One `POST /hooks/SessionStart` on a connection of its own; Ok when answered 200 with context.
fn post_session_start(addr: &str, token: &str, body: &str) -> Result<(), String> {
    let mut c = std::net::TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    let _ = c.set_nodelay(true);
    let len = body.len();
    write!(c, "POST /hooks/SessionStart?workflow=feature HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n{body}").map_err(|e| format!("write: {e}"))?;
    let mut out = String::new();
    c.read_to_string(&mut out)
        .map_err(|e| format!("read: {e}"))?;
    let answer = out.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    if out.starts_with("HTTP/1.1 200") && has_context(answer) {
        return Ok(());
    }
    Err(out.chars().take(300).collect())
}

/// `rawko hook SessionStart` as Claude Code runs it; Ok when it exits 0 with context.
fn hook_session_start(fx: &Fixture, input: &str) -> Result<(), String> {
    let mut child = fx
        .rawko(&["hook", "SessionStart", "--workflow", "feature"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let stdin = child.stdin.take().expect("stdin");
    (&stdin)
        .write_all(input.as_bytes())
        .map_err(|e| format!("stdin: {e}"))?;
    drop(stdin);
    let out = child.wait_with_output().map_err(|e| format!("wait: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() && has_context(&stdout) {
        return Ok(());
    }
    Err(format!(
        "{} {stdout} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    ))
}

/// N new external sessions at once, through http hooks and then through `rawko hook`.
#[allow(clippy::print_stdout)]
fn external(n: usize) -> bool {
    header(
        "external",
        n,
        "N new Claude Code sessions at once (SessionStart)",
    );
    let fx = Arc::new(Fixture::new());
    let mut s = Server::start(&fx, json!({"countdownTickMillis": 20}));
    let endpoint_dir = fx.home.join("run/rawko");
    let deadline = Instant::now() + Duration::from_secs(30);
    let endpoint = loop {
        let entry = fs::read_dir(&endpoint_dir).ok().and_then(|mut d| d.next());
        if let Some(Ok(e)) = entry {
            break e.path();
        }
        assert!(Instant::now() < deadline, "no endpoint file");
        std::thread::sleep(Duration::from_millis(10));
    };
    let info: Value = serde_json::from_str(&fs::read_to_string(&endpoint).expect("endpoint"))
        .expect("endpoint JSON");
    let url = info["url"].as_str().expect("url");
    let addr = url.trim_start_matches("http://").to_owned();
    let token = info["token"].as_str().expect("token").to_owned();

    let ws = fx.ws.clone();
    let http = all_at_once(n, move |i| {
        let body = session_start(&ws, &format!("scale-http-{i}"));
        post_session_start(&addr, &token, &body).map_err(|e| format!("session {i}: {e}"))
    });
    let name = "http hook POST /hooks/SessionStart";
    let mut ok = report_load(name, " (target p99 ≤ 250 ms)", http);

    let shared = fx.clone();
    let hooks = all_at_once(n, move |i| {
        let input = session_start(&shared.ws, &format!("scale-hook-{i}"));
        hook_session_start(&shared, &input).map_err(|e| format!("session {i}: {e}"))
    });
    ok &= report_load("rawko hook SessionStart processes", "", hooks);

    let (listed, took) = s.list_tasks();
    println!(
        "  rawko/listTasks: {listed} tasks in {:.1} ms (want {})",
        ms(took),
        2 * n
    );
    println!("  peak RSS (VmHWM): {} KB", s.kib("VmHWM:"));
    ok &= listed == 2 * n;
    s.stop();
    ok
}

type Mode = (&'static str, fn(usize) -> bool, usize, usize);

/// The modes: name, run, N for `cargo bench`, N for `cargo test --benches`.
const MODES: [Mode; 4] = [
    ("release", release, 1_000, 20),
    ("concurrent", concurrent, 10_000, 20),
    ("leak", leak, 10_000, 120),
    ("external", external, 500, 10),
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

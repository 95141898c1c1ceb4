//! Benchmark of subagents (issue 36): what one subagent started by `delegate_to_subagents` costs,
//! through the real binary (`rawko serve` over real pipes, tasks persisted as usual).
//!
//! - time: a scripted orchestrator delegates N subagents (each plays one text turn) with
//!   `maxSubagents: 1`, so they run one after another; the time from the call's `tool_call`
//!   notification to its `tool_result`, divided by N, is one subagent's whole life: its task
//!   assembled, its log created and synced, its turn, its end recorded, its answer handed back.
//!   The same with `maxSubagents: 16` gives the time of 16 side by side.
//! - memory: P orchestrators each delegate 16 subagents that all wait (a 4 s turn); the server's
//!   RSS while all wait, minus its RSS with the orchestrators alone, divided by 16·P.
//!
//! Run: `cargo bench -p rawko --bench subagents` (`-- N P`; default 64 and 4). It prints figures
//! and asserts no time.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const EXE: &str = env!("CARGO_BIN_EXE_rawko");
const PATIENCE: Duration = Duration::from_secs(300);

struct Server {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<(Instant, Value)>,
    next_id: i64,
}

impl Server {
    fn start(ws: &Path, home: &Path, options: Value) -> Server {
        let mut child = Command::new(EXE)
            .arg("serve")
            .current_dir(ws)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("PI_CODING_AGENT_DIR", home.join(".pi"))
            .env("RAWKO_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("rawko serve");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut len = 0usize;
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let line = line.trim();
                    if line.is_empty() {
                        break;
                    }
                    if let Some(v) = line.strip_prefix("Content-Length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; len];
                if r.read_exact(&mut body).is_err() {
                    return;
                }
                let Ok(m) = serde_json::from_slice::<Value>(&body) else {
                    continue;
                };
                if tx.send((Instant::now(), m)).is_err() {
                    return;
                }
            }
        });
        let mut s = Server {
            child,
            stdin,
            rx,
            next_id: 0,
        };
        let uri = format!("file://{}", ws.display());
        s.request(
            "initialize",
            json!({"processId": null, "rootUri": uri, "capabilities": {}, "initializationOptions": options}),
        );
        s.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
        s
    }

    fn send(&mut self, m: &Value) {
        let body = m.to_string();
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).expect("write");
        self.stdin.flush().expect("flush");
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.until(|m| m["id"] == id && m.get("method").is_none()).1["result"].clone()
    }

    /// Reads until a message matches (answering nothing else); returns it with its arrival.
    fn until(&mut self, matches: impl Fn(&Value) -> bool) -> (Instant, Value) {
        loop {
            let (at, m) = self.rx.recv_timeout(PATIENCE).expect("rawko answered");
            if matches(&m) {
                return (at, m);
            }
        }
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn write(ws: &Path, rel: &str, content: &str) {
    let p = ws.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, content).expect("write");
}

/// A script: one `delegate_to_subagents` call of `n` workers, then the end.
fn script(n: usize, worker_delay_ms: u64) -> String {
    let tasks: Vec<String> = (0..n)
        .map(|i| format!("{{profile: worker, prompt: \"job {i}\"}}"))
        .collect();
    format!(
        "turns:\n  - tool_calls:\n      - {{id: fan, name: delegate_to_subagents, input: {{tasks: [{}]}}}}\n  - text: \"done\"\nsubagents:\n  worker:\n    - text: \"worked\"\n      delay_ms: {worker_delay_ms}\n",
        tasks.join(", ")
    )
}

fn start(s: &mut Server, script: &str) -> String {
    let r = s.request(
        "rawko/startTask",
        json!({"description": "fan out", "workflow": "fan", "provider": "scripted", "script": script}),
    );
    r["taskId"].as_str().expect("taskId").to_owned()
}

/// Milliseconds from the delegation's call to its result, for `n` subagents.
fn delegation_ms(ws: &Path, home: &Path, n: usize, at_once: u32) -> f64 {
    let mut chunks = Vec::new();
    // One call takes at most 16 tasks: more are more calls, one after another.
    let mut left = n;
    let mut i = 0;
    while left > 0 {
        let k = left.min(16);
        write(ws, &format!("scripts/t{i}.yaml"), &script(k, 0));
        chunks.push(format!("scripts/t{i}.yaml"));
        left -= k;
        i += 1;
    }
    let mut s = Server::start(
        ws,
        home,
        json!({"maxSubagents": at_once, "countdownTickMillis": 1}),
    );
    let mut total = Duration::ZERO;
    for chunk in &chunks {
        let task = start(&mut s, chunk);
        let (called, _) = s.until(|m| {
            m["method"] == "rawko/output"
                && m["params"]["taskId"] == task.as_str()
                && m["params"]["kind"] == "tool_call"
        });
        let (answered, m) = s.until(|m| {
            m["method"] == "rawko/output"
                && m["params"]["taskId"] == task.as_str()
                && m["params"]["kind"] == "tool_result"
        });
        assert!(
            m["params"]["text"]
                .as_str()
                .is_some_and(|t| t.matches(": done").count() >= 1),
            "{m}"
        );
        total += answered - called;
        s.until(|m| m["method"] == "rawko/taskFinished" && m["params"]["taskId"] == task.as_str());
    }
    total.as_secs_f64() * 1000.0
}

// A benchmark reports on stdout.
#[allow(clippy::print_stdout)]
fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(64);
    let parents: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(4);
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().canonicalize().expect("canonical");
    let (ws, home) = (root.join("ws"), root.join("home"));
    write(
        &ws,
        ".rawko/workflows/fan/workflow.yaml",
        "name: Fan\ncommandName: fan\ninitialMessage: \"{description}\"\nphases:\n  - work.md\n",
    );
    write(
        &ws,
        ".rawko/workflows/fan/work.md",
        "---\nid: work\nname: Work\nemoji: \"🔨\"\n---\nDelegate.\n",
    );
    write(
        &ws,
        ".pi/agents/worker.md",
        "---\nname: worker\n---\nYou work.\n",
    );
    std::fs::create_dir_all(&home).expect("home");

    let one_by_one = delegation_ms(&ws, &home, n, 1);
    println!(
        "subagents one after another (maxSubagents 1): {n} in {one_by_one:.0} ms, {:.2} ms per subagent started",
        one_by_one / n as f64
    );
    let side_by_side = delegation_ms(&ws, &home, n, 16);
    println!(
        "subagents 16 side by side (maxSubagents 16): {n} in {side_by_side:.0} ms, {:.2} ms per subagent",
        side_by_side / n as f64
    );

    // Memory: P parents × 16 waiting subagents.
    write(&ws, "scripts/wait.yaml", &script(16, 4000));
    let mut s = Server::start(
        &ws,
        &home,
        json!({"maxSubagents": 16, "countdownTickMillis": 1}),
    );
    // Warm: one whole delegation first, so the first task's one-time costs are not counted.
    write(&ws, "scripts/warm.yaml", &script(16, 0));
    let warm = start(&mut s, "scripts/warm.yaml");
    s.until(|m| m["method"] == "rawko/taskFinished" && m["params"]["taskId"] == warm.as_str());
    std::thread::sleep(Duration::from_millis(500));
    let before = s.rss_kib();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..parents {
        tasks.push(start(&mut s, "scripts/wait.yaml"));
    }
    // Every subagent running: 16 per parent said its first status.
    let mut running = 0;
    while running < 16 * parents {
        s.until(|m| {
            m["method"] == "rawko/status"
                && m["params"]["subagent"].is_object()
                && m["params"]["seq"] == 1
        });
        running += 1;
    }
    std::thread::sleep(Duration::from_millis(300));
    let during = s.rss_kib();
    assert!(
        started.elapsed() < Duration::from_millis(3800),
        "the subagents ended before the measure"
    );
    let live = 16 * parents;
    println!(
        "memory: RSS {before} KiB before, {during} KiB with {live} subagents waiting: {:.1} KiB per live subagent",
        during.saturating_sub(before) as f64 / live as f64
    );
    let mut left: std::collections::HashSet<String> = tasks.into_iter().collect();
    while !left.is_empty() {
        let (_, m) = s.until(|m| m["method"] == "rawko/taskFinished");
        if let Some(id) = m["params"]["taskId"].as_str() {
            left.remove(id);
        }
    }
}

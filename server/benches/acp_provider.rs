//! What the `acp` provider adds per agent message and per permission decision: the same agent
//! (tests/acp/fault-agent.mjs in its `chatty` mode: N message chunks, then M permission requests,
//! per prompt) driven by a bare client (this bench, answering every permission at once over the
//! agent's pipes) and by `rawko run --provider acp --yes` (each chunk streamed as task output,
//! each permission request decided as a tool call: hooks, the gate, the task log with its fsync).
//! Fixed costs (starting node, rawko, the session) differ between the two, so the figures are
//! slopes: (T(N) − T(0)) / N for messages and (T(M) − T(0)) / M for permissions, medians of the
//! runs, for each driver; the overhead is the difference.
//!
//! Needs `npm ci` in tests/acp (scripts/test-acp.sh --install).
//! Run: `cargo bench -p rawko --bench acp_provider` (`-- RUNS` to set the runs per point; 5).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const MESSAGES: usize = 2000;
const PERMISSIONS: usize = 200;

fn agent() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/acp");
    assert!(
        dir.join("node_modules/@agentclientprotocol/sdk").is_dir(),
        "run scripts/test-acp.sh --install first"
    );
    dir.join("fault-agent.mjs")
        .canonicalize()
        .expect("fault agent")
}

/// One prompt of `chatty n m` driven by a bare client: spawn to the prompt's answer.
fn bare(agent: &Path, ws: &Path, n: usize, m: usize) -> Duration {
    let started = Instant::now();
    let mut child = Command::new("node")
        .arg(agent)
        .args(["chatty", &n.to_string(), &m.to_string()])
        .current_dir(ws)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("node");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut send = |v: Value| {
        let mut line = serde_json::to_vec(&v).expect("json");
        line.push(b'\n');
        stdin.write_all(&line).expect("write");
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}}),
    );
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": ws, "mcpServers": []}}),
    );
    let mut session = None;
    let mut line = String::new();
    loop {
        line.clear();
        if stdout.read_line(&mut line).expect("read") == 0 {
            panic!("the agent closed its output");
        }
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if msg["id"] == 2 && session.is_none() {
            let id = msg["result"]["sessionId"].clone();
            session = Some(id.clone());
            send(
                json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": {"sessionId": id, "prompt": [{"type": "text", "text": "go"}]}}),
            );
        } else if msg["method"] == "session/request_permission" {
            send(
                json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"outcome": {"outcome": "selected", "optionId": "yes"}}}),
            );
        } else if msg["id"] == 3 {
            break;
        }
    }
    let took = started.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    took
}

/// The same prompt as a rawko task: `rawko run --provider acp --yes`, start to exit.
fn through_rawko(agent: &Path, root: &Path, n: usize, m: usize) -> Duration {
    let ws = root.join("project");
    let home = root.join("home");
    let cmd = format!("node {} chatty {n} {m}", agent.display());
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_rawko"))
        .args([
            "run",
            "go",
            "--provider",
            "acp",
            "--yes",
            "--agent-command",
            &cmd,
        ])
        .current_dir(&ws)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".state"))
        .env("XDG_RUNTIME_DIR", home.join(".run"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("rawko run");
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "rawko run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[allow(clippy::print_stdout)]
fn main() {
    let runs: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(5);
    let agent = agent();
    let root = tempfile::TempDir::new().expect("tempdir");
    let ws = root.path().join("project");
    std::fs::create_dir_all(&ws).expect("project");
    let point =
        |f: &dyn Fn(usize, usize) -> Duration, n, m| median((0..runs).map(|_| f(n, m)).collect());
    let bare_f = |n, m| bare(&agent, &ws, n, m);
    let rawko_f = |n, m| through_rawko(&agent, root.path(), n, m);
    let per = |t: Duration, t0: Duration, k: usize| {
        (t.as_secs_f64() - t0.as_secs_f64()).max(0.0) * 1e6 / k as f64
    };
    let (b0, bn, bm) = (
        point(&bare_f, 0, 0),
        point(&bare_f, MESSAGES, 0),
        point(&bare_f, 0, PERMISSIONS),
    );
    let (r0, rn, rm) = (
        point(&rawko_f, 0, 0),
        point(&rawko_f, MESSAGES, 0),
        point(&rawko_f, 0, PERMISSIONS),
    );
    let (bmsg, rmsg) = (per(bn, b0, MESSAGES), per(rn, r0, MESSAGES));
    let (bperm, rperm) = (per(bm, b0, PERMISSIONS), per(rm, r0, PERMISSIONS));
    println!("acp provider vs bare client, {runs} runs per point (medians), {MESSAGES} messages, {PERMISSIONS} permissions");
    println!(
        "  fixed (spawn, initialize, session, empty prompt): bare {:.1} ms, rawko run {:.1} ms",
        b0.as_secs_f64() * 1e3,
        r0.as_secs_f64() * 1e3
    );
    println!("  per agent message:       bare {bmsg:.1} µs, through rawko {rmsg:.1} µs, overhead {:.1} µs", rmsg - bmsg);
    println!("  per permission decision: bare {bperm:.1} µs, through rawko {rperm:.1} µs, overhead {:.1} µs", rperm - bperm);
}

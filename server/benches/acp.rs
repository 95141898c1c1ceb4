//! Benchmark of the ACP face beside the LSP face, in the same run and the same workspace, with
//! the scripted provider: `session/prompt` to the first `agent_message_chunk` (`rawko acp`, one
//! new session per sample) and `rawko/startTask` to the first `assistant_delta` output
//! (`rawko serve`, one new task per sample). Both over real pipes to the real binary.
//!
//! Run: `cargo bench -p rawko --bench acp` (`-- 200` for 200 samples of each; default 100).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How a face frames its messages on stdio.
#[derive(Clone, Copy, PartialEq)]
enum Framing {
    /// ACP: one JSON message per line.
    Lines,
    /// LSP: `Content-Length` headers.
    Headers,
}

struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    framing: Framing,
    next_id: u64,
}

impl Peer {
    fn spawn(args: &[&str], workspace: &Path, home: &Path, framing: Framing) -> Peer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rawko"))
            .args(args)
            .current_dir(workspace)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".state"))
            .env("XDG_RUNTIME_DIR", home.join(".run"))
            .env("PI_CODING_AGENT_DIR", home.join(".pi"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn rawko");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::with_capacity(1 << 16, child.stdout.take().expect("stdout"));
        Peer {
            child,
            stdin,
            stdout,
            framing,
            next_id: 0,
        }
    }

    fn send(&mut self, message: &Value) {
        let body = serde_json::to_vec(message).expect("json");
        match self.framing {
            Framing::Lines => {
                self.stdin.write_all(&body).expect("write");
                self.stdin.write_all(b"\n").expect("write");
            }
            Framing::Headers => {
                let header = format!("Content-Length: {}\r\n\r\n", body.len());
                self.stdin.write_all(header.as_bytes()).expect("write");
                self.stdin.write_all(&body).expect("write");
            }
        }
        self.stdin.flush().expect("flush");
    }

    fn read(&mut self) -> Value {
        match self.framing {
            Framing::Lines => {
                let mut line = String::new();
                loop {
                    line.clear();
                    let n = self.stdout.read_line(&mut line).expect("read");
                    assert!(n > 0, "rawko closed its stdout");
                    if !line.trim().is_empty() {
                        return serde_json::from_str(line.trim()).expect("a JSON line");
                    }
                }
            }
            Framing::Headers => {
                let mut length = None;
                let mut line = String::new();
                loop {
                    line.clear();
                    let n = self.stdout.read_line(&mut line).expect("read header");
                    assert!(n > 0, "rawko closed its stdout");
                    let trimmed = line.trim_end();
                    if trimmed.is_empty() {
                        break;
                    }
                    if let Some(v) = trimmed.strip_prefix("Content-Length: ") {
                        length = Some(v.parse::<usize>().expect("length"));
                    }
                }
                let mut body = vec![0u8; length.expect("Content-Length")];
                self.stdout.read_exact(&mut body).expect("read body");
                serde_json::from_slice(&body).expect("json body")
            }
        }
    }

    fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Reads until the response to `id`, answering the peer's own requests with an empty result.
    fn wait_response(&mut self, id: u64) -> Value {
        loop {
            let m = self.read();
            if m.get("method").is_some() && m.get("id").is_some() {
                self.send(&json!({"jsonrpc": "2.0", "id": m["id"], "result": {}}));
                continue;
            }
            if m["id"] == json!(id) && m.get("method").is_none() {
                assert!(m.get("error").is_none(), "error: {m}");
                return m["result"].clone();
            }
        }
    }

    /// Reads until a message satisfies `done`.
    fn wait_for(&mut self, done: impl Fn(&Value) -> bool) -> Value {
        loop {
            let m = self.read();
            if done(&m) {
                return m;
            }
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, content).expect("write");
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[allow(clippy::print_stdout)]
fn report(face: &str, what: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{face:>5}  {what:<44} p50 {:>7.2} ms   p99 {:>7.2} ms   max {:>7.2} ms   ({} samples)",
        ms(percentile(&samples, 0.50)),
        ms(percentile(&samples, 0.99)),
        ms(*samples.last().expect("samples")),
        samples.len()
    );
}

fn acp_samples(workspace: &Path, home: &Path, n: usize) -> Vec<Duration> {
    let mut acp = Peer::spawn(&["acp"], workspace, home, Framing::Lines);
    let id = acp.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}}),
    );
    acp.wait_response(id);
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let id = acp.request(
            "session/new",
            json!({"cwd": workspace.display().to_string(), "mcpServers": []}),
        );
        let session = acp.wait_response(id)["sessionId"].clone();
        let started = Instant::now();
        let prompt = acp.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "Say hello"}]}),
        );
        acp.wait_for(|m| {
            m["method"] == "session/update"
                && m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        });
        samples.push(started.elapsed());
        acp.wait_response(prompt);
    }
    samples
}

fn lsp_samples(workspace: &Path, home: &Path, n: usize) -> Vec<Duration> {
    let mut lsp = Peer::spawn(
        &["serve", "--workspace", &workspace.display().to_string()],
        workspace,
        home,
        Framing::Headers,
    );
    let id = lsp.request("initialize", json!({"capabilities": {}}));
    lsp.wait_response(id);
    lsp.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let id = lsp.request("rawko/startTask", json!({"description": "Say hello"}));
        let task = lsp.wait_response(id)["taskId"].clone();
        lsp.wait_for(|m| {
            m["method"] == "rawko/output"
                && m["params"]["taskId"] == task
                && m["params"]["kind"] == "assistant_delta"
        });
        samples.push(started.elapsed());
        lsp.wait_for(|m| m["method"] == "rawko/taskFinished" && m["params"]["taskId"] == task);
    }
    samples
}

#[allow(clippy::print_stdout)]
fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(100);
    let root = tempfile::tempdir().expect("temp dir");
    let workspace = root.path().join("project");
    let home = root.path().join("home");
    for d in [".config", ".state", ".run", ".pi"] {
        std::fs::create_dir_all(home.join(d)).expect("home");
    }
    write(
        &workspace,
        "s.yaml",
        "turns:\n  - text: \"Hello from the bench.\"\n",
    );
    write(
        &workspace,
        ".rawko/config.json",
        r#"{"providers": [{"name": "scripted", "script": "s.yaml"}]}"#,
    );
    println!("rawko acp vs rawko serve, scripted provider, {n} samples each (warm-up 5 each)");
    acp_samples(&workspace, &home, 5);
    lsp_samples(&workspace, &home, 5);
    report(
        "acp",
        "session/prompt → first agent_message_chunk",
        acp_samples(&workspace, &home, n),
    );
    report(
        "lsp",
        "rawko/startTask → first assistant_delta",
        lsp_samples(&workspace, &home, n),
    );
}

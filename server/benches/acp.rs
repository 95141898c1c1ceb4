//! Benchmark of `rawko acp` beside `rawko serve`, in the same run, over real pipes with the
//! scripted provider: ACP's `session/prompt` to the first `agent_message_chunk`, and the LSP
//! face's `rawko/startTask` to the first `assistant_delta` output (p50, p99). Each sample is a
//! new task (a new ACP session) whose one turn streams a line of text.
//!
//! Run: `cargo bench -p rawko --bench acp`.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Which framing a face speaks on its stdio.
#[derive(Clone, Copy, PartialEq)]
enum Framing {
    /// ACP: one JSON message per line.
    Lines,
    /// LSP: `Content-Length` headers.
    Headers,
}

struct Face {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    framing: Framing,
    next_id: u64,
}

impl Face {
    fn spawn(args: &[&str], framing: Framing, workspace: &Path, home: &Path) -> Face {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rawko"))
            .args(args)
            .current_dir(workspace)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".state"))
            .env("PI_CODING_AGENT_DIR", home.join(".pi"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn rawko");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::with_capacity(1 << 16, child.stdout.take().expect("stdout"));
        Face {
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
                let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
                frame.extend_from_slice(&body);
                self.stdin.write_all(&frame).expect("write");
            }
        }
        self.stdin.flush().expect("flush");
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        if self.framing == Framing::Lines {
            self.stdout.read_line(&mut line).expect("read line");
            return serde_json::from_str(&line).expect("json line");
        }
        let mut length = None;
        loop {
            line.clear();
            self.stdout.read_line(&mut line).expect("read header");
            let trimmed = line.trim_end();
            if trimmed.is_empty() {
                break;
            }
            if let Some(n) = trimmed.strip_prefix("Content-Length: ") {
                length = Some(n.parse::<usize>().expect("length"));
            }
        }
        let mut body = vec![0; length.expect("Content-Length")];
        self.stdout.read_exact(&mut body).expect("read body");
        serde_json::from_slice(&body).expect("json body")
    }

    /// Sends a request; returns its id.
    fn send_request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.response(id)
    }

    fn response(&mut self, id: u64) -> Value {
        loop {
            let message = self.read();
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return message;
            }
        }
    }

    fn stop(mut self) {
        if self.framing == Framing::Headers {
            let _ = self.request("shutdown", Value::Null);
            self.send(&json!({"jsonrpc": "2.0", "method": "exit"}));
        }
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `session/prompt` to the first `agent_message_chunk`, one new session per sample.
fn acp_samples(workspace: &Path, home: &Path, samples: usize) -> Vec<Duration> {
    let mut acp = Face::spawn(
        &["acp", "--script", "bench-script.yaml"],
        Framing::Lines,
        workspace,
        home,
    );
    let init = acp.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    assert!(init.get("result").is_some(), "{init}");
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let session = acp.request("session/new", json!({"cwd": workspace, "mcpServers": []}));
        let sid = session["result"]["sessionId"].clone();
        let start = Instant::now();
        let id = acp.send_request(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "stream"}]}),
        );
        let mut first = None;
        loop {
            let m = acp.read();
            if first.is_none() && m["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
                first = Some(start.elapsed());
            }
            if m.get("method").is_none() && m["id"] == json!(id) {
                assert_eq!(m["result"]["stopReason"], "end_turn", "{m}");
                break;
            }
        }
        times.push(first.expect("an agent_message_chunk"));
    }
    acp.stop();
    times
}

/// `rawko/startTask` to the first `assistant_delta` output, one task per sample.
fn lsp_samples(workspace: &Path, home: &Path, samples: usize) -> Vec<Duration> {
    let mut lsp = Face::spawn(
        &["serve", "--workspace", &workspace.display().to_string()],
        Framing::Headers,
        workspace,
        home,
    );
    let init = lsp.request(
        "initialize",
        json!({"processId": null, "rootUri": format!("file://{}", workspace.display()), "capabilities": {}}),
    );
    assert!(init.get("result").is_some(), "{init}");
    lsp.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let start = Instant::now();
        lsp.send_request(
            "rawko/startTask",
            json!({"description": "stream", "provider": "scripted", "script": "bench-script.yaml"}),
        );
        let mut first = None;
        loop {
            let m = lsp.read();
            if first.is_none()
                && m["method"] == "rawko/output"
                && m["params"]["kind"] == "assistant_delta"
            {
                first = Some(start.elapsed());
            }
            if m["method"] == "rawko/taskFinished" {
                break;
            }
        }
        times.push(first.expect("an assistant_delta output"));
    }
    lsp.stop();
    times
}

#[allow(clippy::print_stdout)]
fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this too: keep that run short.
    let quick = !std::env::args().any(|a| a == "--bench");
    let samples = if quick { 3 } else { 200 };
    let tmp = tempfile::tempdir().expect("tempdir");
    let workspace = std::fs::canonicalize(tmp.path())
        .expect("canonical")
        .join("ws");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&workspace).expect("mkdir");
    std::fs::create_dir_all(&home).expect("mkdir");
    std::fs::write(
        workspace.join("bench-script.yaml"),
        "turns:\n  - text: \"one two three four five six seven eight nine ten\"\n",
    )
    .expect("write script");

    let mut acp = acp_samples(&workspace, &home, samples);
    let mut lsp = lsp_samples(&workspace, &home, samples);
    acp.sort();
    lsp.sort();
    println!("prompt to first streamed text, scripted provider ({samples} tasks each)");
    println!(
        "  rawko acp   session/prompt → first agent_message_chunk: p50 {:.2} ms, p99 {:.2} ms",
        millis(percentile(&acp, 0.5)),
        millis(percentile(&acp, 0.99)),
    );
    println!(
        "  rawko serve rawko/startTask → first assistant_delta:    p50 {:.2} ms, p99 {:.2} ms",
        millis(percentile(&lsp, 0.5)),
        millis(percentile(&lsp, 0.99)),
    );
}

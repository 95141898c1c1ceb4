//! Benchmark of `rawko serve` over real pipes, with 50 workflows of 10 phases in the workspace:
//! spawn to initialize response, RSS after initialize, the round trip of a trivial custom request
//! (p50, p99), and notifications per second while a scripted task streams.
//!
//! Run: `cargo bench -p rawko --bench serve`. Targets (issue 3, this 2-core machine): round trip
//! p50 ≤ 10 µs, initialize ≤ 5 ms, RSS ≤ 8 MB.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn spawn(workspace: &Path, home: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rawko"))
            .args(["serve", "--workspace"])
            .arg(workspace)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".state"))
            .env("PI_CODING_AGENT_DIR", home.join(".pi"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn rawko serve");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::with_capacity(1 << 16, child.stdout.take().expect("stdout"));
        Server {
            child,
            stdin,
            stdout,
            next_id: 0,
        }
    }

    fn send(&mut self, message: &Value) {
        let body = serde_json::to_vec(message).expect("json");
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend_from_slice(&body);
        self.stdin.write_all(&frame).expect("write");
        self.stdin.flush().expect("flush");
    }

    fn read(&mut self) -> Value {
        let mut length = None;
        let mut line = String::new();
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

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.read();
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return message;
            }
        }
    }

    fn initialize(&mut self, workspace: &Path) -> Value {
        let response = self.request(
            "initialize",
            json!({"processId": null, "rootUri": format!("file://{}", workspace.display()), "capabilities": {}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
        response
    }

    fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// CPU time the server's main thread (where requests are served) has used, from the
    /// scheduler's nanosecond account in /proc (tick-based user/system times are too coarse).
    fn cpu_time(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/schedstat", self.child.id()))
            .unwrap_or_default();
        let nanos = stat
            .split_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0);
        Duration::from_nanos(nanos)
    }

    fn stop(mut self) {
        let _ = self.request("shutdown", Value::Null);
        self.send(&json!({"jsonrpc": "2.0", "method": "exit"}));
        let _ = self.child.wait();
    }
}

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, content).expect("write");
}

fn fifty_workflows(workspace: &Path) {
    for w in 0..50 {
        let mut yaml = format!("name: Workflow {w}\ncommandName: wf{w}\ninitialMessage: start {{description}}\nphases:\n");
        for p in 0..10 {
            yaml.push_str(&format!("  - p{p}.md\n"));
            write(
                workspace,
                &format!(".rawko/workflows/wf{w}/p{p}.md"),
                &format!("---\nid: p{p}\nname: Phase {p}\nemoji: 🔧\ntools:\n  blacklist: [Write]\n---\nDo step {p} of {{description}}.\n"),
            );
        }
        write(
            workspace,
            &format!(".rawko/workflows/wf{w}/workflow.yaml"),
            &yaml,
        );
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

#[allow(clippy::print_stdout)]
fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs this too: keep that run short.
    let quick = !std::env::args().any(|a| a == "--bench");
    let tmp = tempfile::tempdir().expect("tempdir");
    let workspace = tmp.path().join("ws");
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&workspace).expect("mkdir");
    std::fs::create_dir_all(&home).expect("mkdir");
    fifty_workflows(&workspace);

    // Spawn to initialize response.
    let runs = if quick { 2 } else { 30 };
    let mut init_times = Vec::new();
    for _ in 0..runs {
        let start = Instant::now();
        let mut server = Server::spawn(&workspace, &home);
        let response = server.initialize(&workspace);
        init_times.push(start.elapsed());
        assert!(response.get("result").is_some(), "{response}");
        server.stop();
    }
    init_times.sort();

    let mut server = Server::spawn(&workspace, &home);
    server.initialize(&workspace);
    let listed = server.request("rawko/listWorkflows", json!({}));
    let count = listed["result"]["workflows"].as_array().map_or(0, Vec::len);
    assert_eq!(count, 50, "{listed}");
    let rss = server.rss_kib();

    // Round trip of a trivial custom request.
    let warmup = if quick { 100 } else { 2_000 };
    let samples = if quick { 500 } else { 20_000 };
    for _ in 0..warmup {
        server.request("rawko/listTasks", json!({}));
    }
    let mut trips = Vec::with_capacity(samples);
    let cpu_before = server.cpu_time();
    for _ in 0..samples {
        let start = Instant::now();
        let r = server.request("rawko/listTasks", json!({}));
        trips.push(start.elapsed());
        debug_assert!(r.get("result").is_some());
    }
    let server_cpu = server.cpu_time().saturating_sub(cpu_before);
    trips.sort();

    // The floor for comparison: the same round trip through `cat`, which only copies its pipe.
    let mut cat = Command::new("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn cat");
    let mut cat_in = cat.stdin.take().expect("stdin");
    let mut cat_out = cat.stdout.take().expect("stdout");
    let ping = br#"{"jsonrpc":"2.0","id":1,"method":"rawko/listTasks","params":{}}"#;
    let mut pong = vec![0u8; ping.len()];
    let mut floor = Vec::with_capacity(samples);
    for i in 0..warmup + samples {
        let start = Instant::now();
        cat_in.write_all(ping).expect("write cat");
        cat_out.read_exact(&mut pong).expect("read cat");
        if i >= warmup {
            floor.push(start.elapsed());
        }
    }
    drop(cat_in);
    let _ = cat.wait();
    floor.sort();

    // Notifications per second: a scripted task without a workflow that streams text and calls
    // a cheap tool every turn.
    let turns = if quick { 50 } else { 2_000 };
    let mut script = String::from("turns:\n");
    for _ in 0..turns {
        script.push_str("  - text: \"one two three four five six seven eight nine ten \"\n    tool_calls:\n      - {name: workflow_step, input: {action: status}}\n");
    }
    script.push_str("  - text: done\n");
    write(&workspace, "bench-script.yaml", &script);
    let start = Instant::now();
    let started = server.request(
        "rawko/startTask",
        json!({"description": "stream", "provider": "scripted", "script": "bench-script.yaml"}),
    );
    assert!(started.get("result").is_some(), "{started}");
    let mut notifications = 0u64;
    loop {
        let message = server.read();
        if message.get("method").is_some() {
            notifications += 1;
        }
        if message["method"] == "rawko/taskFinished" {
            assert_eq!(message["params"]["outcome"], "complete", "{message}");
            break;
        }
    }
    let elapsed = start.elapsed();
    server.stop();

    println!("rawko serve benchmark (50 workflows of 10 phases in the workspace)");
    println!(
        "  spawn → initialize response: p50 {:.2} ms, min {:.2} ms, max {:.2} ms ({runs} runs)",
        init_times[init_times.len() / 2].as_secs_f64() * 1e3,
        init_times[0].as_secs_f64() * 1e3,
        init_times[init_times.len() - 1].as_secs_f64() * 1e3,
    );
    println!(
        "  RSS after initialize and listWorkflows: {:.2} MB ({rss} KiB)",
        rss as f64 / 1024.0
    );
    println!(
        "  round trip rawko/listTasks: p50 {:.1} µs, p99 {:.1} µs, min {:.1} µs ({samples} samples)",
        micros(percentile(&trips, 0.5)),
        micros(percentile(&trips, 0.99)),
        micros(trips[0]),
    );
    println!(
        "  the same round trip through `cat` (the pipes' floor here): p50 {:.1} µs, p99 {:.1} µs",
        micros(percentile(&floor, 0.5)),
        micros(percentile(&floor, 0.99)),
    );
    println!(
        "  server CPU per round trip (main thread, user + kernel): {:.1} µs",
        micros(server_cpu) / samples as f64
    );
    println!(
        "  notifications: {notifications} in {:.1} ms = {:.0} per second",
        elapsed.as_secs_f64() * 1e3,
        notifications as f64 / elapsed.as_secs_f64()
    );
}

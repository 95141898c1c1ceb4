//! Benchmark of rawko in front of an external agent: `rawko hook PreToolUse` end to end (a new
//! process per call, as Claude Code runs it: read stdin, find the endpoint, one HTTP round trip to
//! `rawko serve`, the phase gate, the answer), beside a bare process spawn; and the `http` hook
//! path (`POST /hooks/PreToolUse` on a kept-alive-free connection), which needs no process.
//!
//! Run: `cargo bench -p rawko --bench external`. Target (issue 9, this 2-core machine):
//! `rawko hook PreToolUse` p50 ≤ 2 ms.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

fn frame(v: &Value) -> Vec<u8> {
    let body = serde_json::to_vec(v).unwrap();
    let mut f = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    f.extend_from_slice(&body);
    f
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

#[allow(clippy::print_stdout)]
fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    println!(
        "{name:<44} n={:<5} p50 {:>9.3} ms   p99 {:>9.3} ms",
        samples.len(),
        percentile(&samples, 0.5).as_secs_f64() * 1e3,
        percentile(&samples, 0.99).as_secs_f64() * 1e3
    );
}

fn hook_input(ws: &Path, id: usize) -> String {
    json!({
        "session_id": "bench-session",
        "cwd": ws.display().to_string(),
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": ws.join("README.md").display().to_string()},
        "tool_use_id": format!("toolu_{id}"),
    })
    .to_string()
}

#[allow(clippy::print_stdout)]
fn main() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::write(ws.join("README.md"), "# bench\n").unwrap();
    let starter = Path::new(env!("CARGO_MANIFEST_DIR")).join("starter/workflows");
    copy_dir(&starter, &ws.join(".rawko/workflows"));
    let exe = env!("CARGO_BIN_EXE_rawko");
    let envs = |c: &mut Command| {
        c.env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".state"))
            .env("XDG_RUNTIME_DIR", home.join("run"));
    };
    let mut serve = Command::new(exe);
    serve.args(["serve", "--workspace"]).arg(&ws);
    envs(&mut serve);
    let mut server = serve
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let stdout = server.stdout.take().unwrap();
    // Drain the server's notifications on a thread of their own.
    std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut line = String::new();
        let mut len = 0usize;
        loop {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let t = line.trim_end();
            if let Some(n) = t.strip_prefix("Content-Length: ") {
                len = n.parse().unwrap_or(0);
            } else if t.is_empty() {
                let mut body = vec![0; len];
                if r.read_exact(&mut body).is_err() {
                    return;
                }
            }
        }
    });
    stdin
        .write_all(&frame(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}})))
        .unwrap();
    stdin
        .write_all(&frame(
            &json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
        ))
        .unwrap();
    stdin.flush().unwrap();
    let endpoint_dir = home.join("run/rawko");
    let deadline = Instant::now() + Duration::from_secs(10);
    let endpoint = loop {
        if let Some(e) = std::fs::read_dir(&endpoint_dir)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(Result::ok)
        {
            break e.path();
        }
        assert!(Instant::now() < deadline, "no endpoint file");
        std::thread::sleep(Duration::from_millis(10));
    };
    let info: Value = serde_json::from_str(&std::fs::read_to_string(&endpoint).unwrap()).unwrap();

    let run_hook = |args: &[&str], input: &str| -> (Duration, i32, String) {
        let start = Instant::now();
        let mut c = Command::new(exe);
        c.arg("hook").args(args);
        envs(&mut c);
        let mut child = c
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (
            start.elapsed(),
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // The session starts under the feature workflow (Plan allows Read).
    let start = json!({"session_id": "bench-session", "cwd": ws.display().to_string(), "hook_event_name": "SessionStart", "source": "startup"}).to_string();
    let (_, code, err) = run_hook(&["SessionStart", "--workflow", "feature"], &start);
    assert_eq!(code, 0, "{err}");

    let n = 300;
    for i in 0..20 {
        run_hook(&["PreToolUse"], &hook_input(&ws, i));
    }
    let mut hook = Vec::with_capacity(n);
    for i in 0..n {
        let (t, code, err) = run_hook(&["PreToolUse"], &hook_input(&ws, 100 + i));
        assert_eq!(code, 0, "{err}");
        hook.push(t);
    }
    let mut bare = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        let mut child = Command::new("/bin/true")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdin.take());
        child.wait_with_output().unwrap();
        bare.push(start.elapsed());
    }
    let mut version = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        Command::new(exe)
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .unwrap();
        version.push(start.elapsed());
    }

    // The http hook path.
    let addr = info["url"]
        .as_str()
        .unwrap()
        .trim_start_matches("http://")
        .to_owned();
    let token = info["token"].as_str().unwrap().to_owned();
    let mut http = Vec::with_capacity(2000);
    for i in 0..2000 {
        let body = hook_input(&ws, 10_000 + i);
        let start = Instant::now();
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        s.set_nodelay(true).unwrap();
        write!(s, "POST /hooks/PreToolUse HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        http.push(start.elapsed());
        assert!(out.starts_with(b"HTTP/1.1 200"));
    }

    println!("rawko in front of an external agent ({n} calls each; Read in the Plan phase)");
    report("bare process spawn (/bin/true, piped stdio)", bare);
    report("rawko --version (process start of rawko)", version);
    report("rawko hook PreToolUse, end to end", hook);
    report("http hook: POST /hooks/PreToolUse", http);
    let _ = server.kill();
    let _ = server.wait();
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

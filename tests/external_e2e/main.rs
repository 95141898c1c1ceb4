//! rawko in front of an external agent: a recorded sequence of Claude Code hook inputs played
//! through the real `rawko hook` command against a running `rawko serve`, whose fake editor
//! answers the approvals; plus the failure cases (no server, a bad token, malformed input), the
//! `http` hook path, `rawko mcp` and `rawko hook install --claude`.

#[path = "../support/mod.rs"]
mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use support::{is_note, Editor, Project, TIMEOUT};
use tempfile::TempDir;

mod endpoint;
mod hooks;
mod runtime_dir;
mod sessions;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn rawko_hook(home: &Path, args: &[&str], input: &str) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rawko"))
        .arg("hook")
        .args(args)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_RUNTIME_DIR", home.join("run"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start rawko hook");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn input(ws: &Path, event: &str, extra: Value) -> String {
    let mut v = json!({
        "session_id": "0b6d7f1e-claude-session",
        "transcript_path": "/tmp/transcript.jsonl",
        "cwd": ws.display().to_string(),
        "permission_mode": "default",
        "hook_event_name": event,
    });
    for (k, val) in extra.as_object().unwrap() {
        v[k] = val.clone();
    }
    v.to_string()
}

/// Waits until the server has written its endpoint file.
fn wait_endpoint(home: &Path) {
    let dir = home.join("run/rawko");
    for _ in 0..500 {
        // The endpoint file itself, not the temporary file it is written to before its rename.
        let written = std::fs::read_dir(&dir).is_ok_and(|d| {
            d.filter_map(Result::ok)
                .any(|e| e.path().extension().is_some_and(|x| x == "json"))
        });
        if written {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the endpoint file never appeared in {}", dir.display());
}

/// A raw HTTP POST to the endpoint; returns the status line and body.
fn post(info: &Value, path: &str, body: &str, with_token: bool) -> String {
    use std::io::Read;
    let addr = info["url"]
        .as_str()
        .unwrap()
        .trim_start_matches("http://")
        .to_owned();
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    let auth = if with_token {
        format!(
            "Authorization: Bearer {}\r\n",
            info["token"].as_str().unwrap()
        )
    } else {
        String::new()
    };
    write!(s, "POST {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// Runs `rawko hook` on a thread and fails the test when it has not answered within `limit`:
/// a hook that hangs would keep Claude Code waiting for its own 600 s timeout.
fn rawko_hook_within(home: &Path, args: &[&str], input: String, limit: Duration) -> Run {
    let (tx, rx) = std::sync::mpsc::channel();
    let home = home.to_owned();
    let owned: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    std::thread::spawn(move || {
        let args: Vec<&str> = owned.iter().map(String::as_str).collect();
        let _ = tx.send(rawko_hook(&home, &args, &input));
    });
    rx.recv_timeout(limit)
        .unwrap_or_else(|_| panic!("`rawko hook {args:?}` did not answer within {limit:?}"))
}

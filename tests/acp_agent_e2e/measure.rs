//! Measuring a real agent's session from inside it, and what an agent leaves running.
//!
//! [`Tap`] runs the agent under tap.mjs, which passes the ACP lines between rawko and the agent
//! unchanged and logs when each message went which way; [`Tap::report`] gives the session's wall
//! time and the decision latency of each permission request: from the moment the agent sent
//! `session/request_permission` to the moment rawko's answer reached it (the gate, hooks, the
//! durable log and, for a blocked call, the editor's answer included). Performance is reported,
//! never asserted.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A log of the ACP messages of an agent's session, in a directory the agent may write
/// (`sandbox.agentWrite`).
pub(crate) struct Tap {
    dir: tempfile::TempDir,
}

impl Tap {
    pub(crate) fn new() -> Tap {
        Tap {
            dir: tempfile::TempDir::new().expect("the tap's directory"),
        }
    }

    /// The directory the agent writes the log in: give it in `sandbox.agentWrite`.
    pub(crate) fn dir(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("acp.jsonl")
    }

    /// The agent's command (`program`, `args`) run under the tap: `node tap.mjs LOG PROGRAM ARGS…`.
    pub(crate) fn wrap(&self, program: &str, args: &[String]) -> (String, Vec<String>) {
        let tap = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/acp_agent_e2e/tap.mjs");
        let tap = tap.canonicalize().expect("tap.mjs");
        let mut all = vec![
            tap.display().to_string(),
            self.log().display().to_string(),
            program.to_owned(),
        ];
        all.extend(args.iter().cloned());
        ("node".to_owned(), all)
    }

    /// The session's figures, a line each: `agent` names it, `task` is the task's wall time as
    /// the editor saw it (startTask to taskFinished).
    pub(crate) fn report(&self, agent: &str, task: Duration) -> String {
        let log = std::fs::read_to_string(self.log()).unwrap_or_default();
        let lines: Vec<Value> = log
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let time = |v: &Value| v["t"].as_f64().unwrap_or_default();
        let first = lines.iter().map(time).fold(f64::INFINITY, f64::min);
        let last = lines.iter().map(time).fold(0.0, f64::max);
        let mut decisions = Vec::new();
        for (i, asked) in lines.iter().enumerate() {
            let method = asked["method"].as_str().unwrap_or_default();
            if asked["from"] != "agent" || asked["id"].is_null() || method.is_empty() {
                continue;
            }
            let answer = lines[i + 1..].iter().find(|a| {
                a["from"] == "client"
                    && a["response"] == true
                    && a["id"] == asked["id"]
                    && a["pid"] == asked["pid"]
            });
            if let Some(answer) = answer {
                let what = match method {
                    "session/request_permission" => {
                        format!("permission {}", asked["tool"].as_str().unwrap_or("?"))
                    }
                    other => other.to_owned(),
                };
                decisions.push((
                    method == "session/request_permission",
                    what,
                    time(answer) - time(asked),
                ));
            }
        }
        let mut permissions: Vec<f64> = decisions.iter().filter(|d| d.0).map(|d| d.2).collect();
        permissions.sort_by(f64::total_cmp);
        let median = permissions
            .get(permissions.len() / 2)
            .copied()
            .unwrap_or_default();
        let max = permissions.last().copied().unwrap_or_default();
        let each: Vec<String> = decisions
            .iter()
            .map(|(_, what, ms)| format!("{what}: {ms:.1} ms"))
            .collect();
        format!(
            "{agent}: task {:.2} s (startTask → taskFinished); agent session {:.2} s (its first ACP message → its last, {} processes); decision latency (the agent's request → rawko's answer, measured at the agent's stdio): {} permission requests, median {median:.1} ms, max {max:.1} ms; each: {}",
            task.as_secs_f64(),
            (last - first).max(0.0) / 1000.0,
            {
                let mut pids: Vec<String> = lines.iter().map(|l| l["pid"].to_string()).collect();
                pids.sort();
                pids.dedup();
                pids.len()
            },
            permissions.len(),
            each.join("; ")
        )
    }
}

/// The processes still running for workspace `ws` (in it, or naming it: the agent, what it
/// started, its `rawko mcp`), other than `except` (the rawko server), once they had `within` to
/// end: `pid command line` each.
pub(crate) fn processes_left(ws: &Path, except: u32, within: Duration) -> Vec<String> {
    let deadline = Instant::now() + within;
    loop {
        let left = processes_in(ws, except);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn processes_in(ws: &Path, except: u32) -> Vec<String> {
    let me = std::process::id();
    let named = ws.to_string_lossy().into_owned();
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == except || pid == me {
            continue;
        }
        let dir = entry.path();
        let cmdline = std::fs::read(dir.join("cmdline"))
            .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
            .unwrap_or_default();
        if cmdline.is_empty() {
            // A zombie, or gone.
            continue;
        }
        let in_ws = std::fs::read_link(dir.join("cwd")).is_ok_and(|c| c.starts_with(ws));
        if in_ws || cmdline.contains(&named) {
            out.push(format!("{pid} {}", cmdline.trim()));
        }
    }
    out
}

/// The processes other than `except` (the rawko server) and this test whose environment has
/// `HOME=home`: everything a server started with its own home started, still running (`pid
/// command line` each).
pub(crate) fn started_with_home(home: &Path, except: u32) -> Vec<String> {
    let wanted = format!("HOME={}", home.display()).into_bytes();
    let me = std::process::id();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == except || pid == me {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ.split(|b| *b == 0).any(|v| v == wanted.as_slice()) {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            out.push(format!(
                "{pid} {}",
                String::from_utf8_lossy(&cmdline).replace('\0', " ").trim()
            ));
        }
    }
    out
}

/// [`started_with_home`] once they had `within` to end.
pub(crate) fn left_with_home(home: &Path, except: u32, within: Duration) -> Vec<String> {
    let deadline = Instant::now() + within;
    loop {
        let left = started_with_home(home, except);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

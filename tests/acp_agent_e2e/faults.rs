//! The `acp` provider against a misbehaving agent: tests/acp/fault-agent.mjs, written with the
//! official TypeScript SDK's AgentSideConnection, run by `rawko run --provider acp
//! --agent-command …`. It crashes, hangs, writes garbage, and asks for paths outside the
//! workspace; rawko fails the task with a message that names the agent (and its stderr), or
//! refuses what leads outside, and never hangs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The fault agent, or `None` (with a note) when its SDK is not installed (`npm ci` in
/// tests/acp: scripts/test-acp.sh --install does it, and scripts/test.sh runs that first).
#[allow(clippy::print_stderr)]
pub(crate) fn fault_agent(test: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/acp");
    let agent = dir.join("fault-agent.mjs").canonicalize().ok()?;
    if dir.join("node_modules/@agentclientprotocol/sdk").is_dir() {
        return Some(agent);
    }
    let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
    assert!(
        !ci,
        "{test}: tests/acp/node_modules is missing under CI: run scripts/test-acp.sh --install"
    );
    eprintln!("SKIPPED {test}: run scripts/test-acp.sh --install first (npm ci in tests/acp)");
    None
}

pub(crate) struct Place {
    _tmp: tempfile::TempDir,
    pub(crate) root: PathBuf,
    pub(crate) ws: PathBuf,
}

impl Place {
    /// A project, with `config` as the user's `~/.config/rawko/config.json` (a workspace's
    /// `providers` would need the workspace trusted first).
    pub(crate) fn new(config: serde_json::Value) -> Place {
        let tmp = tempfile::TempDir::new().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        let ws = root.join("project");
        let user_config = root.join("home/.config/rawko");
        std::fs::create_dir_all(&user_config).expect("mkdir");
        std::fs::create_dir_all(&ws).expect("mkdir");
        std::fs::write(user_config.join("config.json"), config.to_string()).expect("config");
        std::fs::write(ws.join("README.md"), "a project\n").expect("readme");
        Place {
            _tmp: tmp,
            root,
            ws,
        }
    }

    /// The user's `~/.config/rawko/config.json` here, to write another one.
    pub(crate) fn user_config(&self) -> PathBuf {
        self.root.join("home/.config/rawko/config.json")
    }

    /// `rawko run TASK ARGS…` here, killed if it has not ended within `limit`.
    pub(crate) fn run(&self, args: &[&str], limit: Duration) -> (Output, Duration) {
        self.run_with(args, &[], limit)
    }

    /// [`Place::run`] with more environment variables.
    pub(crate) fn run_with(
        &self,
        args: &[&str],
        env: &[(&str, &str)],
        limit: Duration,
    ) -> (Output, Duration) {
        let home = self.root.join("home");
        let started = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_rawko"))
            .envs(env.iter().copied())
            .arg("run")
            .args(args)
            .current_dir(&self.ws)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("XDG_RUNTIME_DIR", home.join("run"))
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start rawko run");
        // Read as it comes: a run that says more than a pipe holds must not stall on it.
        let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
            std::thread::spawn(move || {
                let mut bytes = Vec::new();
                if let Some(mut pipe) = pipe {
                    let _ = pipe.read_to_end(&mut bytes);
                }
                bytes
            })
        };
        let stdout = read(child.stdout.take().map(|p| Box::new(p) as _));
        let stderr = read(child.stderr.take().map(|p| Box::new(p) as _));
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if started.elapsed() > limit {
                let _ = child.kill();
                let status = child.wait().expect("wait");
                let out = Output {
                    status,
                    stdout: stdout.join().unwrap_or_default(),
                    stderr: stderr.join().unwrap_or_default(),
                };
                panic!("rawko run did not end within {limit:?}:\n{}", text(&out));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let took = started.elapsed();
        let out = Output {
            status,
            stdout: stdout.join().unwrap_or_default(),
            stderr: stderr.join().unwrap_or_default(),
        };
        (out, took)
    }
}

pub(crate) fn text(out: &Output) -> String {
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub(crate) fn command(agent: &Path, mode: &str) -> String {
    format!("node {} {mode}", agent.display())
}

#[test]
fn an_agent_that_crashes_fails_the_task_naming_it_with_its_stderr() {
    let Some(agent) = fault_agent("crash") else {
        return;
    };
    let place = Place::new(serde_json::json!({}));
    let cmd = command(&agent, "crash");
    let (out, _) = place.run(
        &["Do it", "--provider", "acp", "--agent-command", &cmd],
        Duration::from_secs(60),
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains(&format!("the agent `{cmd}`")), "{all}");
    assert!(
        all.contains("fault-agent: boom, something broke inside"),
        "the agent's stderr tail: {all}"
    );
    assert!(all.contains("Starting."), "what it said before: {all}");
}

#[test]
fn an_agent_that_hangs_fails_the_task_at_its_stall_limit() {
    let Some(agent) = fault_agent("hang") else {
        return;
    };
    let place = Place::new(serde_json::json!({
        "providers": [{"name": "acp", "command": "node", "args": [agent, "hang"], "stallSeconds": 2}],
    }));
    let (out, took) = place.run(&["Do it", "--provider", "acp"], Duration::from_secs(60));
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(all.contains("sent nothing for 2 s"), "{all}");
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

#[test]
fn garbage_from_the_agent_does_not_break_the_task() {
    let Some(agent) = fault_agent("malformed") else {
        return;
    };
    let place = Place::new(serde_json::json!({}));
    let cmd = command(&agent, "malformed");
    let (out, _) = place.run(
        &["Do it", "--provider", "acp", "--agent-command", &cmd],
        Duration::from_secs(60),
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("Still here after the garbage."), "{all}");
}

#[test]
fn paths_outside_the_workspace_are_refused_even_when_the_user_allows_everything() {
    let Some(agent) = fault_agent("outside") else {
        return;
    };
    let place = Place::new(serde_json::json!({}));
    let outside = place.root.join("outside.txt");
    let cmd = format!("{} {}", command(&agent, "outside"), outside.display());
    let (out, _) = place.run(
        &[
            "Do it",
            "--provider",
            "acp",
            "--agent-command",
            &cmd,
            "--yes",
        ],
        Duration::from_secs(60),
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(
        all.contains("read /etc/hostname: REFUSED"),
        "the read outside: {all}"
    );
    assert!(
        all.contains(&format!("write {}: REFUSED", outside.display())),
        "the write outside: {all}"
    );
    assert!(
        all.contains(r#"permission: {"outcome":"selected","optionId":"no"}"#),
        "the permission for a path outside: {all}"
    );
    assert!(!outside.exists(), "nothing was written outside");
}

#[test]
fn a_missing_agent_and_a_missing_command_are_clear_errors() {
    let place = Place::new(serde_json::json!({}));
    let (out, _) = place.run(
        &[
            "Do it",
            "--provider",
            "acp",
            "--agent-command",
            "no-such-agent-anywhere --acp",
        ],
        Duration::from_secs(60),
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains("the agent `no-such-agent-anywhere --acp` cannot be started"),
        "{all}"
    );
    let (out, _) = place.run(&["Do it", "--provider", "acp"], Duration::from_secs(60));
    let all = text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(
        all.contains("provider \"acp\" needs the agent's command"),
        "{all}"
    );
}

/// Interrupting the task (the editor's `rawko/interrupt`) sends the agent `session/cancel`: the
/// agent stops its turn, and the task waits for the user.
#[test]
fn an_interrupt_cancels_the_agents_prompt() {
    let Some(agent) = fault_agent("slow") else {
        return;
    };
    let project = crate::support::Project::empty();
    let mut ed = crate::support::Editor::spawn(&project.ws);
    // The user's providers (the editor's settings): a workspace's would need trust first. The
    // agent writes cancelled.txt itself: it can load its session, so rawko gives it the workspace
    // to write in a phase that allows writing.
    ed.initialize(
        serde_json::json!({"providers": [{"name": "acp", "command": "node",
        "args": [agent, "slow"], "env": {"FAULT_LOAD": "1"}}]}),
    );
    let started = ed
        .request(
            "rawko/startTask",
            serde_json::json!({"description": "Go slowly", "provider": "acp"}),
        )
        .expect("startTask");
    let task = started["taskId"].as_str().expect("taskId").to_owned();
    ed.wait_for("the agent's first line", Duration::from_secs(30), |m| {
        crate::support::is_note(m, "rawko/output", &task)
            && m["params"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("Waiting for cancel."))
    });
    ed.request("rawko/interrupt", serde_json::json!({"taskId": task}))
        .expect("interrupt");
    let marker = project.ws.join("cancelled.txt");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !marker.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        marker.exists(),
        "the agent got no session/cancel\n{}",
        ed.stderr()
    );
    ed.wait_for(
        "the task waiting for the user",
        Duration::from_secs(10),
        |m| crate::support::is_note(m, "rawko/status", &task) && m["params"]["state"] == "blocked",
    );
}

/// A task whose rawko was killed resumes its agent's session with `session/load` (the session id is
/// in the task's log), not a new session primed with the conversation; what the agent replays of
/// the old session is not shown again.
#[test]
fn a_resumed_task_loads_its_agents_session() {
    let Some(agent) = fault_agent("remember") else {
        return;
    };
    let project = crate::support::Project::empty();
    project.write(
        ".rawko/workflows/two/workflow.yaml",
        "name: Two\ncommandName: two\ninitialMessage: \"{description}\"\nphases:\n  - one.md\n  - two.md\n",
    );
    project.write(
        ".rawko/workflows/two/one.md",
        "---\nid: one\nname: One\nemoji: \"1️⃣\"\n---\nFirst.\n",
    );
    project.write(
        ".rawko/workflows/two/two.md",
        "---\nid: two\nname: Two\nemoji: \"2️⃣\"\n---\nSecond.\n",
    );
    project.write(
        ".rawko/config.json",
        &serde_json::json!({"countdownSeconds": 60}).to_string(),
    );
    // The user's providers (the editor's settings): a workspace's would need trust first.
    let providers = serde_json::json!({"providers": [{"name": "acp", "command": "node", "args": [agent, "remember"]}]});
    let home = tempfile::TempDir::new().expect("home");
    let mut ed = crate::support::Editor::spawn_in(&project.ws, home.path());
    ed.initialize(providers.clone());
    let started = ed
        .request(
            "rawko/startTask",
            serde_json::json!({"description": "Remember me", "provider": "acp", "workflow": "two"}),
        )
        .expect("startTask");
    let task = started["taskId"].as_str().expect("taskId").to_owned();
    ed.wait_for(
        "the countdown after the first turn",
        Duration::from_secs(30),
        |m| crate::support::is_note(m, "rawko/countdown", &task),
    );
    ed.kill9();
    let first: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(project.ws.join("prompts.log"))
            .expect("prompts.log")
            .lines()
            .next()
            .expect("a prompt"),
    )
    .expect("json");
    let session = first["sessionId"].as_str().expect("session").to_owned();

    let mut ed = crate::support::Editor::spawn_in(&project.ws, home.path());
    ed.initialize(providers);
    ed.request("rawko/resumeTask", serde_json::json!({"taskId": task}))
        .expect("resumeTask");
    // The resumed task counts down again; a message from the user goes on at once.
    ed.wait_for(
        "the countdown after the resume",
        Duration::from_secs(30),
        |m| crate::support::is_note(m, "rawko/countdown", &task),
    );
    ed.request(
        "rawko/sendMessage",
        serde_json::json!({"taskId": task, "text": "Go on now"}),
    )
    .expect("sendMessage");
    ed.wait_for(
        "the turn in the loaded session",
        Duration::from_secs(30),
        |m| {
            crate::support::is_note(m, "rawko/output", &task)
                && m["params"]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("Loaded and going on."))
        },
    );
    assert_eq!(
        std::fs::read_to_string(project.ws.join("loaded.txt"))
            .ok()
            .as_deref(),
        Some(session.as_str()),
        "the agent loaded the task's session"
    );
    let log = std::fs::read_to_string(project.ws.join("prompts.log")).expect("prompts.log");
    let last: serde_json::Value =
        serde_json::from_str(log.lines().last().expect("a prompt")).expect("json");
    assert_eq!(last["sessionId"], session.as_str());
    assert!(
        !last["text"]
            .as_str()
            .unwrap_or_default()
            .contains("interrupted and resumed"),
        "a loaded session is not primed again: {last}"
    );
    let shown = ed.notifications(&task);
    assert!(
        !shown.iter().any(|n| n["params"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("REPLAYED OLD TEXT"))),
        "the agent's replay is not shown again"
    );
    ed.request("rawko/cancelTask", serde_json::json!({"taskId": task}))
        .expect("cancel");
}

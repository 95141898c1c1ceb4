//! rawko in front of an external agent: a recorded sequence of Claude Code hook inputs played
//! through the real `rawko hook` command against a running `rawko serve`, whose fake editor
//! answers the approvals; plus the failure cases (no server, a bad token, malformed input), the
//! `http` hook path, `rawko mcp` and `rawko hook install --claude`.

mod support;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use support::{is_note, Editor, Project, TIMEOUT};
use tempfile::TempDir;

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
        if std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some()) {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("the endpoint file never appeared in {}", dir.display());
}

#[test]
fn a_claude_code_session_is_gated_by_the_workflow_with_approvals_and_reminders() {
    let home = TempDir::new().unwrap();
    let project = Project::with_starter();
    let ws = project.ws.clone();
    let mut ed = Editor::spawn_in(&ws, home.path());
    ed.initialize(json!({"countdownTickMillis": 20, "approvalTimeoutSeconds": 20}));
    wait_endpoint(home.path());
    let h = home.path();

    // SessionStart starts the task under the feature workflow and gets the phase context.
    let r = rawko_hook(
        h,
        &["SessionStart", "--workflow", "feature"],
        &input(&ws, "SessionStart", json!({"source": "startup"})),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out: Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout));
    let context = out["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(context.contains("Plan"), "{context}");
    let status = ed.wait_for("the external task's status", TIMEOUT, |m| {
        m["method"] == "rawko/status"
            && m["params"]["taskId"]
                .as_str()
                .is_some_and(|t| t.starts_with("ext-"))
    });
    let task = status["params"]["taskId"].as_str().unwrap().to_owned();

    let r = rawko_hook(
        h,
        &["UserPromptSubmit"],
        &input(
            &ws,
            "UserPromptSubmit",
            json!({"prompt": "Add a --shout flag"}),
        ),
    );
    assert_eq!(r.code, 0);
    assert!(r.stdout.contains("additionalContext"));

    // Read is allowed in Plan: no decision, Claude Code's own rules apply.
    let r = rawko_hook(
        h,
        &["PreToolUse"],
        &input(
            &ws,
            "PreToolUse",
            json!({"tool_name": "Read", "tool_input": {"file_path": ws.join("README.md").display().to_string()}, "tool_use_id": "toolu_01"}),
        ),
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, ""), "{}", r.stderr);
    let r = rawko_hook(
        h,
        &["PostToolUse"],
        &input(
            &ws,
            "PostToolUse",
            json!({"tool_name": "Read", "tool_input": {"file_path": "README.md"}, "tool_use_id": "toolu_01", "tool_response": {"content": "# greet"}}),
        ),
    );
    assert_eq!(r.code, 0);

    // A writing Bash command in Plan is blocked; the editor denies it.
    ed.set_approval_policy(|_| Some("reject_once"));
    let r = rawko_hook(
        h,
        &["PreToolUse"],
        &input(
            &ws,
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_input": {"command": "echo hi > notes.txt"}, "tool_use_id": "toolu_02"}),
        ),
    );
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stderr.contains("Plan"), "{}", r.stderr);

    // A Write, allowed once in the editor: Claude Code is told allow.
    ed.set_approval_policy(|_| Some("allow_once"));
    let r = rawko_hook(
        h,
        &["PreToolUse"],
        &input(
            &ws,
            "PreToolUse",
            json!({"tool_name": "Write", "tool_input": {"file_path": ws.join("PLAN.md").display().to_string(), "content": "plan"}, "tool_use_id": "toolu_03"}),
        ),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out: Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(out["hookSpecificOutput"]["permissionDecision"], "allow");
    let approvals = ed.approval_requests();
    assert_eq!(approvals.len(), 2);
    assert_eq!(approvals[1]["params"]["tool"], "Write");
    assert_eq!(approvals[1]["params"]["taskId"], json!(task));

    // Stop while the workflow is active: the countdown runs in the editor, then the reminder.
    let r = rawko_hook(
        h,
        &["Stop"],
        &input(
            &ws,
            "Stop",
            json!({"stop_hook_active": false, "last_assistant_message": "Here is the plan."}),
        ),
    );
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(r.stderr.to_lowercase().contains("plan"), "{}", r.stderr);
    ed.wait_for("the countdown", TIMEOUT, |m| {
        is_note(m, "rawko/countdown", &task)
    });

    // The agent moves the phase itself (the MCP tool's path): Implement now allows the write.
    let endpoint = std::fs::read_dir(h.join("run/rawko"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let meta = std::fs::metadata(&endpoint).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let info: Value = serde_json::from_str(&std::fs::read_to_string(&endpoint).unwrap()).unwrap();
    let step = post(&info, "/", &json!({"jsonrpc": "2.0", "id": 1, "method": "rawko.workflowStep", "params": {"action": "next"}}).to_string(), true);
    assert!(step.contains("Implement"), "{step}");
    ed.set_approval_policy(|_| Some("reject_once"));
    let r = rawko_hook(
        h,
        &["PreToolUse"],
        &input(
            &ws,
            "PreToolUse",
            json!({"tool_name": "Edit", "tool_input": {"file_path": ws.join("greet.sh").display().to_string(), "old_string": "a", "new_string": "b"}, "tool_use_id": "toolu_04"}),
        ),
    );
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, ""),
        "Edit is allowed in Implement: {}",
        r.stderr
    );
    assert_eq!(ed.approval_requests().len(), 2, "no new approval");

    // The http hook path answers the same way, in JSON.
    let body = input(
        &ws,
        "PreToolUse",
        json!({"tool_name": "Read", "tool_input": {"file_path": "README.md"}, "tool_use_id": "toolu_05"}),
    );
    let answer = post(&info, "/hooks/PreToolUse", &body, true);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(answer.split("\r\n\r\n").nth(1).unwrap().trim(), "{}");
    // Without the token: refused.
    let refused = post(&info, "/hooks/PreToolUse", &body, false);
    assert!(
        refused.contains("401") || refused.contains("token"),
        "{refused}"
    );

    let r = rawko_hook(
        h,
        &["SessionEnd"],
        &input(&ws, "SessionEnd", json!({"reason": "other"})),
    );
    assert_eq!(r.code, 0);
    let end = ed.wait_for("the task's end", TIMEOUT, |m| {
        is_note(m, "rawko/taskFinished", &task)
    });
    assert_eq!(end["params"]["outcome"], "cancelled");
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

#[test]
fn without_a_server_the_hook_fails_open_or_closed_and_says_so() {
    let home = TempDir::new().unwrap();
    let project = Project::empty();
    let i = input(
        &project.ws,
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
    );
    let r = rawko_hook(home.path(), &["PreToolUse"], &i);
    assert_eq!(r.code, 0);
    assert!(
        r.stderr.contains("no rawko server is running") && r.stderr.contains("fail-open"),
        "{}",
        r.stderr
    );
    let r = rawko_hook(home.path(), &["PreToolUse", "--fail-closed"], &i);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("blocked (fail-closed)"), "{}", r.stderr);
    let r = rawko_hook(home.path(), &["PreToolUse", "--fail-closed"], "{not json");
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("not JSON"), "{}", r.stderr);
}

#[test]
fn a_bad_token_is_refused_and_malformed_input_is_answered() {
    let home = TempDir::new().unwrap();
    let project = Project::with_starter();
    let mut ed = Editor::spawn_in(&project.ws, home.path());
    ed.initialize(json!({}));
    wait_endpoint(home.path());
    let h = home.path();
    // No session id: a note, not a crash; the server keeps serving.
    let r = rawko_hook(
        h,
        &["PreToolUse"],
        &json!({"cwd": project.ws.display().to_string()}).to_string(),
    );
    assert_eq!(r.code, 0);
    assert!(r.stderr.contains("no session_id"), "{}", r.stderr);
    // A wrong token in the file: refused, and the hook says so.
    let file = std::fs::read_dir(h.join("run/rawko"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut info: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    info["token"] = json!("not-the-token");
    std::fs::write(&file, info.to_string()).unwrap();
    let i = input(
        &project.ws,
        "PreToolUse",
        json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
    );
    let r = rawko_hook(h, &["PreToolUse", "--fail-closed"], &i);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("refused the token"), "{}", r.stderr);
    assert!(ed.request("rawko/listTasks", json!({})).is_ok());
}

#[test]
fn install_writes_claude_settings_and_mcp_and_uninstall_removes_them() {
    let home = TempDir::new().unwrap();
    let project = Project::empty();
    project.write(
        ".claude/settings.local.json",
        r#"{"permissions": {"allow": ["Bash(ls)"]}}"#,
    );
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rawko"))
            .args(args)
            .arg("--workspace")
            .arg(&project.ws)
            .env("HOME", home.path())
            .output()
            .unwrap()
    };
    let out = run(&["hook", "install", "--claude", "--workflow", "feature"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path(".claude/settings.local.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(s["permissions"]["allow"][0], "Bash(ls)");
    let cmd = s["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(cmd.ends_with("hook PreToolUse --workflow feature"), "{cmd}");
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(project.path(".mcp.json")).unwrap()).unwrap();
    assert_eq!(m["mcpServers"]["rawko"]["args"], json!(["mcp"]));
    let out = run(&["hook", "install", "--claude", "--uninstall"]);
    assert!(out.status.success());
    let s: Value = serde_json::from_str(
        &std::fs::read_to_string(project.path(".claude/settings.local.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(s, json!({"permissions": {"allow": ["Bash(ls)"]}}));
    let out = run(&["hook", "install"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn rawko_mcp_lists_and_forwards_the_workflow_tools() {
    let home = TempDir::new().unwrap();
    let project = Project::with_starter();
    let mut ed = Editor::spawn_in(&project.ws, home.path());
    ed.initialize(json!({}));
    wait_endpoint(home.path());
    // A session under the feature workflow.
    let r = rawko_hook(
        home.path(),
        &["SessionStart", "--workflow", "feature"],
        &input(&project.ws, "SessionStart", json!({"source": "startup"})),
    );
    assert_eq!(r.code, 0);
    let mut child = Command::new(env!("CARGO_BIN_EXE_rawko"))
        .arg("mcp")
        .arg("--workspace")
        .arg(&project.ws)
        .env("HOME", home.path())
        .env("XDG_RUNTIME_DIR", home.path().join("run"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "workflow_status", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "workflow_step", "arguments": {"action": "next"}}}),
    ];
    for m in &messages {
        writeln!(stdin, "{m}").unwrap();
    }
    let stdout = child.stdout.take().unwrap();
    let lines = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut got = Vec::new();
        for line in std::io::BufReader::new(stdout).lines() {
            let line = line.unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            let done = v["id"] == 4;
            got.push(v);
            if done {
                break;
            }
        }
        got
    })
    .join()
    .unwrap();
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    let tools: Vec<&str> = lines[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        tools,
        vec!["workflow_step", "workflow_status", "workflow_start"]
    );
    let status = lines[2]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(status.contains("Plan"), "{status}");
    let step = lines[3]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(step.contains("Implement"), "{step}");
}

#[test]
fn a_session_without_a_workflow_waits_until_the_editor_picks_one() {
    let home = TempDir::new().unwrap();
    let project = Project::with_starter();
    let ws = project.ws.clone();
    let mut ed = Editor::spawn_in(&ws, home.path());
    ed.initialize(json!({"countdownTickMillis": 20}));
    wait_endpoint(home.path());
    let h = home.path();
    let r = rawko_hook(
        h,
        &["UserPromptSubmit"],
        &input(
            &ws,
            "UserPromptSubmit",
            json!({"prompt": "tidy the README"}),
        ),
    );
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, ""),
        "no workflow, no context: {}",
        r.stderr
    );
    let status = ed.wait_for("the external task", TIMEOUT, |m| {
        m["method"] == "rawko/status"
            && m["params"]["taskId"]
                .as_str()
                .is_some_and(|t| t.starts_with("ext-"))
    });
    let task = status["params"]["taskId"].as_str().unwrap().to_owned();
    // The status says so in a field, so the editor can offer a workflow without guessing.
    assert!(status["params"].get("workflow").is_none(), "{status}");
    // Any tool is fine and the agent may stop: nothing gates it yet.
    let r = rawko_hook(
        h,
        &["PreToolUse"],
        &input(
            &ws,
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}, "tool_use_id": "t1"}),
        ),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = rawko_hook(
        h,
        &["Stop"],
        &input(&ws, "Stop", json!({"stop_hook_active": false})),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The editor picks the workflow; from now on it gates.
    let bad = ed.request(
        "rawko/setWorkflow",
        json!({"taskId": task, "workflow": "nope"}),
    );
    assert_eq!(bad.unwrap_err()["code"], -32004);
    let ok = ed
        .request(
            "rawko/setWorkflow",
            json!({"taskId": task, "workflow": "feature"}),
        )
        .unwrap();
    assert_eq!(ok["text"], "Started the Feature workflow.");
    let status = ed.wait_for("the status naming the workflow", TIMEOUT, |m| {
        m["method"] == "rawko/status"
            && m["params"]["taskId"] == json!(task)
            && m["params"]["workflow"] == "feature"
    });
    assert_eq!(status["params"]["workflowName"], "Feature", "{status}");
    let detail = ed
        .request("rawko/getTask", json!({"taskId": task}))
        .unwrap();
    assert_eq!(
        detail["task"]["workflow"], "feature",
        "getTask names it too"
    );
    let again = ed.request(
        "rawko/setWorkflow",
        json!({"taskId": task, "workflow": "feature"}),
    );
    assert_eq!(again.unwrap_err()["code"], -32003);
    ed.set_approval_policy(|_| Some("reject_once"));
    let r = rawko_hook(
        h,
        &["PreToolUse"],
        &input(
            &ws,
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}, "tool_use_id": "t2"}),
        ),
    );
    assert_eq!(r.code, 2, "a writing command in Plan: {}", r.stdout);
    let r = rawko_hook(
        h,
        &["Stop"],
        &input(&ws, "Stop", json!({"stop_hook_active": false})),
    );
    assert_eq!(r.code, 2, "the workflow is not done");
}

#[test]
fn a_session_goes_on_where_it_was_after_rawko_restarts() {
    let home = TempDir::new().unwrap();
    let project = Project::with_starter();
    let ws = project.ws.clone();
    let h = home.path();
    let mut ed = Editor::spawn_in(&ws, h);
    ed.initialize(json!({}));
    wait_endpoint(h);
    let r = rawko_hook(
        h,
        &["SessionStart", "--workflow", "feature"],
        &input(&ws, "SessionStart", json!({"source": "startup"})),
    );
    assert_eq!(r.code, 0);
    let endpoint = std::fs::read_dir(h.join("run/rawko"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let info: Value = serde_json::from_str(&std::fs::read_to_string(&endpoint).unwrap()).unwrap();
    let step = post(&info, "/", &json!({"jsonrpc": "2.0", "id": 1, "method": "rawko.workflowStep", "params": {"action": "next"}}).to_string(), true);
    assert!(step.contains("Implement"), "{step}");
    ed.kill9();
    std::fs::remove_file(&endpoint).unwrap();

    let mut ed = Editor::spawn_in(&ws, h);
    ed.initialize(json!({}));
    wait_endpoint(h);
    ed.set_approval_policy(|_| Some("reject_once"));
    // Still in Implement: an Edit needs no approval.
    let r = rawko_hook(
        h,
        &["PreToolUse"],
        &input(
            &ws,
            "PreToolUse",
            json!({"tool_name": "Edit", "tool_input": {"file_path": ws.join("greet.sh").display().to_string(), "old_string": "a", "new_string": "b"}, "tool_use_id": "toolu_9"}),
        ),
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, ""), "{}", r.stderr);
    assert!(ed.approval_requests().is_empty());
    let status = ed.wait_for("the resumed task", TIMEOUT, |m| {
        m["method"] == "rawko/status"
            && m["params"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("Implement"))
    });
    assert!(status["params"]["taskId"]
        .as_str()
        .unwrap()
        .starts_with("ext-"));
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

#[test]
fn after_the_reminder_cap_the_agent_may_stop_and_no_hook_call_hangs() {
    let home = TempDir::new().unwrap();
    let project = Project::with_starter();
    let ws = project.ws.clone();
    let mut ed = Editor::spawn_in(&ws, home.path());
    ed.initialize(json!({"countdownTickMillis": 10, "maxReminders": 2}));
    wait_endpoint(home.path());
    let h = home.path();
    let limit = Duration::from_secs(20);
    let stop = || {
        input(
            &ws,
            "Stop",
            json!({"stop_hook_active": true, "last_assistant_message": "Done, I think."}),
        )
    };
    let r = rawko_hook_within(
        h,
        &["SessionStart", "--workflow", "feature"],
        input(&ws, "SessionStart", json!({"source": "startup"})),
        limit,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Two reminders: the agent is sent on.
    for n in 1..=2 {
        let r = rawko_hook_within(h, &["Stop"], stop(), limit);
        assert_eq!(r.code, 2, "reminder {n}: {} {}", r.stdout, r.stderr);
    }
    // The third stop is past the cap: the agent may stop, and the task waits on the user.
    let r = rawko_hook_within(h, &["Stop"], stop(), limit);
    assert_eq!(r.code, 0, "past the cap: {} {}", r.stdout, r.stderr);
    let blocked = ed.wait_for("the task waiting on the user", TIMEOUT, |m| {
        m["method"] == "rawko/status" && m["params"]["state"] == "blocked"
    });
    let reason = blocked["params"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("maxReminders is 2"), "{blocked}");
    let task = blocked["params"]["taskId"].as_str().unwrap().to_owned();
    // Any later hook event is answered at once.
    let r = rawko_hook_within(h, &["Stop"], stop(), Duration::from_secs(5));
    assert_eq!(r.code, 0, "{} {}", r.stdout, r.stderr);
    // A new prompt from the user sends the agent on, with the reminders counted afresh.
    let r = rawko_hook_within(
        h,
        &["UserPromptSubmit"],
        input(
            &ws,
            "UserPromptSubmit",
            json!({"prompt": "Please finish the plan"}),
        ),
        limit,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    ed.wait_for("the task running again", TIMEOUT, |m| {
        is_note(m, "rawko/status", &task) && m["params"]["state"] == "running"
    });
    let r = rawko_hook_within(h, &["Stop"], stop(), limit);
    assert_eq!(r.code, 2, "the reminders count afresh: {}", r.stdout);
    // The session ends: the task is cancelled, and a late event is answered at once.
    let r = rawko_hook_within(
        h,
        &["SessionEnd"],
        input(&ws, "SessionEnd", json!({"reason": "other"})),
        limit,
    );
    assert_eq!(r.code, 0);
    ed.wait_for("the task's end", TIMEOUT, |m| {
        is_note(m, "rawko/taskFinished", &task)
    });
    for event in ["Stop", "PreToolUse"] {
        let r = rawko_hook_within(
            h,
            &[event],
            input(
                &ws,
                event,
                json!({"tool_name": "Write", "tool_input": {"file_path": "x", "content": ""}, "tool_use_id": "toolu_late"}),
            ),
            Duration::from_secs(5),
        );
        assert_eq!(r.code, 0, "{event} after the end: {}", r.stderr);
    }
}

#[test]
fn a_server_without_an_editor_gates_hooks_and_lets_claude_code_ask_its_user() {
    let home = TempDir::new().unwrap();
    let project = Project::with_starter();
    let ws = project.ws.clone();
    // `rawko serve` as a user starts it in a terminal: no editor ever sends initialize.
    let _serve = Editor::spawn_in(&ws, home.path());
    wait_endpoint(home.path());
    let h = home.path();
    let limit = Duration::from_secs(20);
    let r = rawko_hook_within(
        h,
        &["SessionStart", "--workflow", "feature"],
        input(&ws, "SessionStart", json!({"source": "startup"})),
        limit,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("additionalContext"), "{}", r.stdout);
    // Read is allowed in Plan: no decision.
    let r = rawko_hook_within(
        h,
        &["PreToolUse"],
        input(
            &ws,
            "PreToolUse",
            json!({"tool_name": "Read", "tool_input": {"file_path": ws.join("README.md").display().to_string()}, "tool_use_id": "toolu_r"}),
        ),
        limit,
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, ""), "{}", r.stderr);
    // A Write in Plan needs an approval nobody here can give: Claude Code asks its own user.
    for (id, tool, tool_input) in [
        (
            "toolu_w",
            "Write",
            json!({"file_path": ws.join("PLAN.md").display().to_string(), "content": "x"}),
        ),
        (
            "toolu_m",
            "MultiEdit",
            json!({"file_path": ws.join("README.md").display().to_string(), "edits": [{"old_string": "a", "new_string": "b"}]}),
        ),
    ] {
        let r = rawko_hook_within(
            h,
            &["PreToolUse"],
            input(
                &ws,
                "PreToolUse",
                json!({"tool_name": tool, "tool_input": tool_input, "tool_use_id": id}),
            ),
            limit,
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
        let out: Value =
            serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout));
        assert_eq!(
            out["hookSpecificOutput"]["permissionDecision"], "ask",
            "{out}"
        );
        let why = out["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap_or_default();
        assert!(why.contains(tool) && why.contains("Plan"), "{why}");
    }
}

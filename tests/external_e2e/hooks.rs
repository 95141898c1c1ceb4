//! The hook path: a Claude Code session gated by the workflow, the failure cases, install and
//! `rawko mcp`.

use super::*;

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

    // The session ends: its task is suspended (a later `claude --resume` goes on with it) until
    // the user cancels it in the editor.
    let r = rawko_hook(
        h,
        &["SessionEnd"],
        &input(&ws, "SessionEnd", json!({"reason": "other"})),
    );
    assert_eq!(r.code, 0);
    ed.wait_for("the suspended task", TIMEOUT, |m| {
        is_note(m, "rawko/status", &task)
            && m["params"]["state"] == "blocked"
            && m["params"]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("suspended"))
    });
    ed.request("rawko/cancelTask", json!({"taskId": task}))
        .unwrap();
    let end = ed.wait_for("the task's end", TIMEOUT, |m| {
        is_note(m, "rawko/taskFinished", &task)
    });
    assert_eq!(end["params"]["outcome"], "cancelled");
}

/// What Claude Code reports but rawko does not decide on, as it reaches the editor: a
/// notification, a refused permission (neither fires in `claude -p`, so the real-CLI scenarios
/// cannot show them), a subagent, and a compaction's SubagentStop, which is no subagent and not
/// the agent stopping.
#[test]
fn notifications_refusals_and_subagents_are_shown_in_the_editor() {
    let home = TempDir::new().unwrap();
    let project = Project::with_starter();
    let ws = project.ws.clone();
    let mut ed = Editor::spawn_in(&ws, home.path());
    ed.initialize(json!({"countdownTickMillis": 20, "maxReminders": 0}));
    wait_endpoint(home.path());
    let h = home.path();
    let r = rawko_hook(
        h,
        &["Notification", "--workflow", "feature"],
        &input(
            &ws,
            "Notification",
            json!({"message": "Claude needs your permission to use Bash", "notification_type": "permission_prompt", "title": "Permission"}),
        ),
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, ""), "{}", r.stderr);
    let shown = ed.wait_for("the notification", TIMEOUT, |m| {
        m["method"] == "rawko/output"
            && m["params"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("Claude needs your permission to use Bash"))
    });
    assert_eq!(shown["params"]["kind"], "hook_output", "{shown}");
    let task = shown["params"]["taskId"].as_str().unwrap().to_owned();
    let r = rawko_hook(
        h,
        &["PermissionDenied"],
        &input(
            &ws,
            "PermissionDenied",
            json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf x"}, "tool_use_id": "toolu_d", "reason": "the auto mode classifier refused it"}),
        ),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let refused = ed.wait_for("the refusal", TIMEOUT, |m| {
        is_note(m, "rawko/output", &task)
            && m["params"]["text"]
                .as_str()
                .is_some_and(|t| t.contains("the auto mode classifier refused it"))
    });
    assert_eq!(refused["params"]["kind"], "error", "{refused}");
    // A subagent starts (it gets the phase's context) and stops; a compaction's SubagentStop
    // (no agent type) shows nothing.
    let r = rawko_hook(
        h,
        &["SubagentStart"],
        &input(
            &ws,
            "SubagentStart",
            json!({"agent_id": "a17", "agent_type": "Explore"}),
        ),
    );
    assert!(r.stdout.contains("additionalContext"), "{}", r.stdout);
    for agent_type in ["", "Explore"] {
        let r = rawko_hook(
            h,
            &["SubagentStop"],
            &input(
                &ws,
                "SubagentStop",
                json!({"agent_id": "a17", "agent_type": agent_type, "stop_hook_active": false, "last_assistant_message": "done"}),
            ),
        );
        assert_eq!((r.code, r.stdout.as_str()), (0, ""), "{}", r.stderr);
    }
    let subagents: Vec<Value> = ed
        .notifications(&task)
        .into_iter()
        .filter(|m| m["params"]["kind"] == "subagent")
        .collect();
    let subagents = if subagents.len() < 2 {
        ed.wait_for("the subagent's stop", TIMEOUT, |m| {
            is_note(m, "rawko/output", &task)
                && m["params"]["kind"] == "subagent"
                && m["params"]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("stopped"))
        });
        ed.notifications(&task)
            .into_iter()
            .filter(|m| m["params"]["kind"] == "subagent")
            .collect()
    } else {
        subagents
    };
    assert_eq!(subagents.len(), 2, "{subagents:#?}");
    for s in &subagents {
        assert_eq!(
            (&s["params"]["agent"], &s["params"]["agentId"]),
            (&json!("Explore"), &json!("a17")),
            "{s}"
        );
    }
    // Neither SubagentStop was taken for the agent's stop: no reminder, no giving up.
    let stops: Vec<Value> = ed
        .notifications(&task)
        .into_iter()
        .filter(|m| {
            m["params"]["kind"] == "reminder"
                || m["params"]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("giving up"))
        })
        .collect();
    assert!(stops.is_empty(), "{stops:#?}");
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
    project.write(".rawko/config.json", r#"{"maxReminders": 12}"#);
    let out = run(&["hook", "install", "--claude", "--workflow", "feature"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Claude Code lets a Stop hook block at most 8 times in a row: the 12 is said to be out of
    // reach.
    let warning = String::from_utf8_lossy(&out.stderr);
    assert!(
        warning.contains("maxReminders is 12") && warning.contains("at most 8"),
        "{warning}"
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

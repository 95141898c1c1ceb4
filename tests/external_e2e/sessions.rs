//! Sessions: waiting for a workflow, restarts, the reminder cap, a server without an editor and a
//! workflow that does not exist.

use super::*;

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
    // And that it is an external agent's session, so no editor reads the task id for it.
    assert_eq!(status["params"]["external"], true, "{status}");
    assert_eq!(status["params"]["externalAgent"], "claude", "{status}");
    assert_eq!(
        status["params"]["externalAgentName"], "Claude Code",
        "{status}"
    );
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
    // The session ends: the task is suspended until the user cancels it in the editor, and a
    // late event is answered at once.
    let r = rawko_hook_within(
        h,
        &["SessionEnd"],
        input(&ws, "SessionEnd", json!({"reason": "other"})),
        limit,
    );
    assert_eq!(r.code, 0);
    ed.wait_for("the suspended task", TIMEOUT, |m| {
        is_note(m, "rawko/status", &task)
            && m["params"]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("suspended"))
    });
    ed.request("rawko/cancelTask", json!({"taskId": task}))
        .unwrap();
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

#[test]
fn a_session_whose_workflow_does_not_exist_is_told_so_once() {
    let home = TempDir::new().unwrap();
    let project = Project::with_starter();
    let ws = project.ws.clone();
    let mut ed = Editor::spawn_in(&ws, home.path());
    ed.initialize(json!({}));
    wait_endpoint(home.path());
    let h = home.path();
    let r = rawko_hook(
        h,
        &["SessionStart", "--workflow", "nope"],
        &input(&ws, "SessionStart", json!({"source": "startup"})),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out: Value =
        serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout));
    let message = out["systemMessage"].as_str().unwrap_or_default();
    assert!(
        message.contains("no workflow \"nope\"") && message.contains("available: feature"),
        "{out}"
    );
    // Told once: the next answer is plain.
    let r = rawko_hook(
        h,
        &["UserPromptSubmit", "--workflow", "nope"],
        &input(&ws, "UserPromptSubmit", json!({"prompt": "hi"})),
    );
    assert!(!r.stdout.contains("systemMessage"), "{}", r.stdout);
}

/// A session that ends (SessionEnd) suspends its task, and the reason the editor shows names the
/// agent and the command that resumes it: each agent resumes with its own CLI (Codex's SessionEnd
/// is answered as Claude Code's). The session's next event wakes the task, saying so.
#[test]
fn a_suspended_session_names_its_agent_and_how_to_resume_it() {
    let home = TempDir::new().unwrap();
    let project = Project::with_starter();
    let ws = project.ws.clone();
    let mut ed = Editor::spawn_in(&ws, home.path());
    ed.initialize(json!({"countdownTickMillis": 20}));
    wait_endpoint(home.path());
    let h = home.path();
    let agents = [
        (
            "--claude",
            "claude-sess-1",
            "SessionStart",
            "Claude Code",
            "claude --resume claude-sess-1",
        ),
        (
            "--codex",
            "codex-sess-1",
            "UserPromptSubmit",
            "Codex",
            "codex exec resume codex-sess-1",
        ),
        (
            "--gemini",
            "gemini-sess-1",
            "BeforeAgent",
            "Gemini CLI",
            "gemini --resume gemini-sess-1",
        ),
    ];
    for (flag, session, next, name, resume) in agents {
        let event = |event: &str, extra: Value| {
            let mut v: Value = serde_json::from_str(&input(&ws, event, extra)).unwrap();
            v["session_id"] = json!(session);
            v.to_string()
        };
        let r = rawko_hook(
            h,
            &["SessionStart", flag, "--workflow", "feature"],
            &event("SessionStart", json!({"source": "startup"})),
        );
        assert_eq!(r.code, 0, "{flag}: {}", r.stderr);
        let r = rawko_hook(
            h,
            &["SessionEnd", flag],
            &event("SessionEnd", json!({"reason": "exit"})),
        );
        assert_eq!(r.code, 0, "{flag}: {}", r.stderr);
        let suspended = ed.wait_for(&format!("the {name} task suspended"), TIMEOUT, |m| {
            m["method"] == "rawko/status"
                && m["params"]["state"] == "blocked"
                && m["params"]["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains(&format!("the {name} session ended")))
        });
        let task = suspended["params"]["taskId"].as_str().unwrap().to_owned();
        let reason = suspended["params"]["reason"].as_str().unwrap();
        assert!(reason.starts_with("suspended: "), "{reason}");
        assert!(reason.contains("(exit)"), "{reason}");
        assert!(reason.contains(resume), "{name}: {reason}");
        // The same session's next event (the resumed run): the task goes on.
        let r = rawko_hook(
            h,
            &[next, flag],
            &event(next, json!({"source": "resume", "prompt": "go on"})),
        );
        assert_eq!(r.code, 0, "{flag}: {}", r.stderr);
        ed.wait_for(&format!("the {name} task resumed"), TIMEOUT, |m| {
            is_note(m, "rawko/status", &task)
                && m["params"]["state"] != "blocked"
                && m["params"]["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains(&format!("the {name} session resumed")))
        });
    }
}

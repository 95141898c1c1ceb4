//! Scenarios: the rest of Claude Code's hook surface that matters for the rails: its permission
//! requests, failed calls and turns, subagents, compaction, and a session that ends and resumes.

use super::*;

/// The editor's `rawko/output` notifications so far.
fn outputs(ed: &mut Editor) -> Vec<Value> {
    ed.received()
        .into_iter()
        .filter(|m| m["method"] == "rawko/output")
        .map(|m| m["params"].clone())
        .collect()
}

/// The `rawko/status` notifications so far.
fn statuses(ed: &mut Editor) -> Vec<Value> {
    ed.received()
        .into_iter()
        .filter(|m| m["method"] == "rawko/status")
        .map(|m| m["params"].clone())
        .collect()
}

/// Claude Code's own rules ask its user first (PermissionRequest) about a Read outside the
/// workspace and a Bash it was not told to allow. rawko answers with its decision: the Read is
/// refused, with the reason, as rawko refuses it for its own tools (before, nobody answered and
/// the model heard only that permission was not granted); the Bash, which the phase allows, is
/// the user's to allow in the editor, and runs.
#[test]
fn a_permission_request_is_answered_with_rawkos_decision() {
    let outside = TempDir::new().expect("a folder outside the workspace");
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "SECRET-OUTSIDE\n").unwrap();
    let path = secret.display().to_string();
    let Some(mut s) = Scenario::new(
        "permission-request",
        Options {
            config: Some(json!({"maxReminders": 0})),
            ..Options::workflow("blacklisted")
        },
        move |_| {
            turns(vec![
                Turn::tool("Read", json!({"file_path": path})),
                Turn::tool(
                    "Bash",
                    // Read-only for rawko's gate, but not a command Claude Code lets run unasked.
                    json!({"command": "awk 'BEGIN { print \"PERMITTED-BASH\" }'", "description": "Say it"}),
                ),
                Turn::text("Done."),
            ])
        },
    ) else {
        return;
    };
    s.ed.set_approval_policy(answer_all_but_mcp("allow_once"));
    // Neither Read nor Bash is allowed in Claude Code's own rules: it asks about both.
    s.start_with(
        "Read the secret.",
        &["--allowedTools", "Write,Edit,mcp__rawko__workflow_step"],
        &[],
    );
    let outcome = s.wait(RUN_TIMEOUT, |_, _| None);
    s.print_timings();
    let result = s.api.result_of("Read", |_| true);
    assert!(
        result.as_ref().is_some_and(|r| r.is_error
            && r.text.contains("outside the workspace")
            && !r.text.contains("SECRET-OUTSIDE")),
        "{}",
        s.failure(&format!(
            "rawko should answer Claude Code's PermissionRequest for a Read outside the workspace \
             with behavior deny and its reason, which the model is told; it was told {result:?}"
        ))
    );
    let bash = s.api.result_of("Bash", |_| true);
    assert!(
        bash.as_ref()
            .is_some_and(|r| !r.is_error && r.text.contains("PERMITTED-BASH")),
        "{}",
        s.failure(&format!(
            "the Bash the phase allows and the user allowed in the editor should run; the model was told {bash:?}"
        ))
    );
    let asked: Vec<String> =
        s.ed.approval_requests()
            .iter()
            .map(|a| format!("{} {}", a["params"]["tool"], a["params"]["reason"]))
            .collect();
    assert!(
        asked.len() == 1 && asked[0].contains("Bash") && asked[0].contains("permission rules"),
        "{}",
        s.failure(&format!(
            "only the Bash should reach the editor, saying Claude Code's rules ask: {asked:?}"
        ))
    );
    assert!(
        outcome.is_ok_and(|st| st.success()),
        "{}",
        s.failure("claude's exit")
    );
}

/// A Read of a file that is not there fails (PostToolUseFailure): the editor shows the call's
/// result as an error, not as a call that ran. A turn the API refuses (StopFailure) is shown as an
/// error line.
#[test]
fn a_failed_call_and_a_failed_turn_are_shown_as_failures() {
    let Some(mut s) = Scenario::new(
        "failures",
        Options {
            config: Some(json!({"maxReminders": 0})),
            ..Options::workflow("gated")
        },
        |f| {
            move |r: &Request| {
                if r.tool_results().is_empty() {
                    Turn::tool("Read", json!({"file_path": f.at("missing.txt")}))
                } else {
                    Turn::api_error(400, "invalid_request_error", "FAKE-API-REFUSAL")
                }
            }
        },
    ) else {
        return;
    };
    s.ed.set_approval_policy(answer_all_but_mcp("allow_once"));
    s.start("Read missing.txt.");
    let _ = s.wait(RUN_TIMEOUT, |_, _| None);
    s.print_timings();
    let read = s.api.result_of("Read", |_| true);
    assert!(
        read.as_ref().is_some_and(|r| r.is_error),
        "{}",
        s.failure(&format!("the Read of a missing file should fail: {read:?}"))
    );
    let id = s.api.tool_calls().first().map(|c| c.0.clone());
    // Wait a moment for the hooks' notes to reach the editor.
    let deadline = Instant::now() + Duration::from_secs(5);
    let (failed, error_line) = loop {
        let out = outputs(&mut s.ed);
        let failed = out.iter().any(|o| {
            o["kind"] == "tool_result" && o["tool"] == "Read" && o["isError"] == json!(true)
        });
        let error_line = out.iter().any(|o| {
            o["kind"] == "error"
                && o["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("turn ended with an error"))
        });
        if (failed && error_line) || Instant::now() > deadline {
            break (failed, error_line);
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let shown: Vec<String> = outputs(&mut s.ed)
        .iter()
        .filter(|o| o["kind"] != "assistant_delta")
        .map(|o| format!("{} {} {} {}", o["kind"], o["tool"], o["isError"], o["text"]))
        .collect();
    assert!(
        failed,
        "{}",
        s.failure(&format!(
            "the editor should show the failed Read ({id:?}) as a failed call (PostToolUseFailure); it showed {shown:#?}"
        ))
    );
    assert!(
        error_line,
        "{}",
        s.failure(&format!(
            "the editor should show the turn the API refused (StopFailure) as an error; it showed {shown:#?}"
        ))
    );
}

/// The subagent tool (`Agent`): the subagent gets the phase's context (SubagentStart), its calls
/// are gated under the same phase (they come with the parent's session_id), the editor is told of
/// the subagent (type and id), and its stop is not the agent stopping early.
#[test]
fn a_subagent_gets_the_phase_context_is_gated_and_is_shown() {
    const SUB: &str = "SUBAGENT-TASK-MARKER";
    let Some(mut s) = Scenario::new(
        "subagent",
        Options {
            config: Some(json!({"maxReminders": 0})),
            // Review: Write and Edit are blacklisted, the subagent tool is not.
            ..Options::workflow("blacklisted")
        },
        |f| {
            let mut main_turn = 0;
            move |r: &Request| {
                // The subagent's requests carry its prompt in their first message.
                let first = r.body["messages"][0].to_string();
                if first.contains(SUB) {
                    return if r.tool_results().is_empty() {
                        Turn::tool(
                            "Write",
                            json!({"file_path": f.at("sub.txt"), "content": "from the subagent\n"}),
                        )
                    } else {
                        Turn::text("Subagent done.")
                    };
                }
                main_turn += 1;
                match main_turn {
                    1 => Turn::tool(
                        "Agent",
                        json!({"description": "look around", "prompt": format!("{SUB}: write sub.txt"), "subagent_type": "general-purpose", "run_in_background": false}),
                    ),
                    _ => Turn::text("Done."),
                }
            }
        },
    ) else {
        return;
    };
    s.ed.set_approval_policy(answer_all_but_mcp("reject_once"));
    s.start_with(
        "Use a subagent.",
        &[
            "--allowedTools",
            &format!("{},Agent,Task", claude_code::ALLOWED_TOOLS),
        ],
        &[],
    );
    let outcome = s.wait(RUN_TIMEOUT, |_, _| None);
    s.print_timings();
    let sub_requests: Vec<Request> = s
        .api
        .main_requests()
        .into_iter()
        .filter(|r| r.body["messages"][0].to_string().contains(SUB))
        .collect();
    assert!(
        !sub_requests.is_empty(),
        "{}",
        s.failure("the subagent should have asked the model")
    );
    assert!(
        sub_requests[0].mentions(PLAN_MARKER),
        "{}",
        s.failure("the subagent's first request should carry the Review phase's context (SubagentStart's additionalContext)")
    );
    let asked = s.approved_tools();
    assert_eq!(
        asked,
        ["Write"],
        "{}",
        s.failure("the subagent's Write in the Review phase should reach the editor")
    );
    assert_eq!(
        s.read("sub.txt"),
        None,
        "{}",
        s.failure("sub.txt was written")
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    let shown = loop {
        let shown: Vec<Value> = outputs(&mut s.ed)
            .into_iter()
            .filter(|o| o["kind"] == "subagent")
            .collect();
        if shown.len() >= 2 || Instant::now() > deadline {
            break shown;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        shown.len() >= 2
            && shown.iter().all(|o| o["agent"] == "general-purpose"
                && o["agentId"].as_str().is_some_and(|id| !id.is_empty())),
        "{}",
        s.failure(&format!(
            "the editor should be told that the subagent started and stopped, with its type and id: {shown:#?}"
        ))
    );
    // The subagent's stop is not the agent's: no reminder is sent because of it.
    let reminded: Vec<usize> = s
        .api
        .main_requests()
        .iter()
        .filter(|r| r.last_text().contains(REMINDER))
        .map(|r| r.index)
        .collect();
    assert!(
        reminded.is_empty(),
        "{}",
        s.failure(&format!("maxReminders is 0, yet requests {reminded:?} carried a reminder: a subagent's stop was taken for the agent's"))
    );
    assert!(
        outcome.is_ok_and(|st| st.success()),
        "{}",
        s.failure("claude's exit")
    );
}

/// A compaction (triggered offline: a small `CLAUDE_CODE_AUTO_COMPACT_WINDOW` and a large reported
/// input): rawko records it (PreCompact, PostCompact), and the phase context comes back after it
/// (SessionStart `compact`).
#[test]
fn the_phase_context_comes_back_after_a_compaction() {
    let Some(mut s) = Scenario::new(
        "compaction",
        Options {
            config: Some(json!({"maxReminders": 0})),
            ..Options::workflow("gated")
        },
        |f| {
            turns(vec![
                Turn::tool("Read", json!({"file_path": f.at("a.txt")})).with_input_tokens(150_000),
                Turn::tool("Read", json!({"file_path": f.at("a.txt")})).with_input_tokens(150_000),
                Turn::text("Done."),
            ])
        },
    ) else {
        return;
    };
    s.ed.set_approval_policy(answer_all_but_mcp("allow_once"));
    // A model of a 200k window (Claude Code leaves a 1M one to the API), compacting at 100k.
    s.start_with(
        "Read a.txt twice.",
        &["--model", "claude-sonnet-4-5"],
        &[("CLAUDE_CODE_AUTO_COMPACT_WINDOW", "100000")],
    );
    let status = s.wait(RUN_TIMEOUT, |_, _| None);
    s.print_timings();
    let hooks = s.claude().hook_timings();
    let ran = |event: &str| hooks.iter().any(|t| t.hook.starts_with(event));
    // (PreCompact and PostCompact are not timed in the debug log: the editor's notes show them.)
    assert!(
        ran("SessionStart:compact"),
        "{}",
        s.failure(&format!(
            "Claude Code should have compacted (and run SessionStart compact); {status:?}"
        ))
    );
    // The first main request after the compaction carries the phase's context again.
    let main = s.api.main_requests();
    let after: Vec<&Request> = main.iter().skip(1).collect();
    assert!(
        after.iter().any(|r| r.mentions(PLAN_MARKER)),
        "{}",
        s.failure("a request after the compaction should carry the Plan phase's context")
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    let notes = loop {
        let notes: Vec<String> = outputs(&mut s.ed)
            .iter()
            .filter_map(|o| o["text"].as_str().map(str::to_owned))
            .filter(|t| t.contains("compact"))
            .collect();
        if notes.len() >= 2 || Instant::now() > deadline {
            break notes;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        notes
            .iter()
            .any(|t| t.contains("compacts its conversation"))
            && notes
                .iter()
                .any(|t| t.contains("compacted its conversation")),
        "{}",
        s.failure(&format!(
            "the editor should show the compaction: {notes:#?}"
        ))
    );
}

/// Every `claude -p` exit ends its session (SessionEnd). The task is suspended, not cancelled: the
/// same session resumed (`claude -p --resume`) goes on under its workflow where it was, with the
/// phase's context, and so it does after `rawko serve` restarted (the task is in the store).
#[test]
fn a_session_that_ends_is_suspended_and_resumes_under_its_workflow() {
    let Some(mut s) = Scenario::new(
        "resume",
        Options {
            config: Some(json!({"maxReminders": 0})),
            ..Options::workflow("gated")
        },
        |f| {
            let f = f.clone();
            move |r: &Request| {
                // A fresh prompt (no tool result last): what its run does; else stop.
                let answered = r.last_message()["content"]
                    .as_array()
                    .is_some_and(|c| c.iter().any(|b| b["type"] == "tool_result"));
                if answered {
                    Turn::text("Stopping for now.")
                } else if r.mentions("SECOND-RUN") || r.mentions("THIRD-RUN") {
                    Turn::tool(
                        "Write",
                        json!({"file_path": f.at("resumed.txt"), "content": "resumed\n"}),
                    )
                } else {
                    Turn::tool(STEP, json!({"action": "next"}))
                }
            }
        },
    ) else {
        return;
    };
    s.ed.set_approval_policy(answer_all_but_mcp("reject_once"));
    let first = s.run("FIRST-RUN: plan, then move on.", |_, _| None);
    s.print_timings();
    s.ended_well(&first);
    let session = s.claude().result().unwrap()["session_id"]
        .as_str()
        .expect("claude's result names its session")
        .to_owned();
    // Suspended: blocked, saying so, and not finished.
    let suspended =
        s.ed.wait_for("the suspended status", Duration::from_secs(10), |m| {
            m["method"] == "rawko/status"
                && m["params"]["state"] == "blocked"
                && m["params"]["reason"]
                    .as_str()
                    .is_some_and(|t| t.contains("suspended"))
        });
    let task = suspended["params"]["taskId"].as_str().unwrap().to_owned();
    let finished =
        s.ed.received()
            .into_iter()
            .any(|m| m["method"] == "rawko/taskFinished");
    assert!(
        !finished,
        "{}",
        s.failure("the session's end should suspend its task, not end it")
    );

    // The same session, resumed: the Implement phase's context, and its Write allowed without
    // asking (Implement allows writing).
    let requests_before = s.api.main_requests().len();
    s.start_with("SECOND-RUN: implement.", &["--resume", &session], &[]);
    let second = s.wait(RUN_TIMEOUT, |_, _| None);
    s.print_timings();
    let resumed: Vec<Request> = s.api.main_requests().split_off(requests_before);
    assert!(
        resumed
            .first()
            .is_some_and(|r| r.mentions(IMPLEMENT_MARKER)),
        "{}",
        s.failure(&format!(
            "the resumed session should go on in Implement, with its context ({second:?})"
        ))
    );
    assert_eq!(
        s.read("resumed.txt").as_deref(),
        Some("resumed\n"),
        "{}",
        s.failure("Implement allows writing: the resumed session's Write should run")
    );
    assert!(
        s.approved_tools().is_empty(),
        "{}",
        s.failure("nothing in the resumed session needed an approval")
    );
    let running_again = statuses(&mut s.ed).iter().any(|st| {
        st["taskId"] == json!(task) && st["reason"].as_str().is_some_and(|t| t.contains("resumed"))
    });
    assert!(
        running_again,
        "{}",
        s.failure("the editor should see the task go on when the session resumed")
    );

    // rawko serve restarts; the session resumes again: its task comes back from the store.
    std::fs::remove_file(s.project.path("resumed.txt")).unwrap();
    let home = s.home.path().to_owned();
    s.ed = Editor::spawn_in(&s.project.ws, &home);
    s.ed.set_approval_policy(answer_all_but_mcp("reject_once"));
    s.ed.initialize(json!({"countdownTickMillis": 20, "approvalTimeoutSeconds": 30}));
    assert!(wait_endpoint(&home, Duration::from_secs(10)));
    let requests_before = s.api.main_requests().len();
    s.start_with("THIRD-RUN: implement again.", &["--resume", &session], &[]);
    let third = s.wait(RUN_TIMEOUT, |_, _| None);
    s.print_timings();
    let resumed: Vec<Request> = s.api.main_requests().split_off(requests_before);
    assert!(
        resumed
            .first()
            .is_some_and(|r| r.mentions(IMPLEMENT_MARKER)),
        "{}",
        s.failure(&format!(
            "after a restart the resumed session should still be in Implement ({third:?})"
        ))
    );
    assert_eq!(
        s.read("resumed.txt").as_deref(),
        Some("resumed\n"),
        "{}",
        s.failure("after the restart, Implement still allows the Write")
    );
}

/// Claude Code in plan mode (`--permission-mode plan`, `permission_mode` in each hook input): a
/// Write the phase blocks and the user allows in the editor is not answered `allow`, which would
/// let it past plan mode. rawko is at most as permissive as Claude Code's own mode: the Write is
/// left to plan mode, and nothing is written.
#[test]
fn in_plan_mode_an_approval_in_the_editor_does_not_widen_what_claude_code_allows() {
    let Some(mut s) = Scenario::new(
        "plan-mode",
        Options {
            config: Some(json!({"maxReminders": 0})),
            ..Options::workflow("gated")
        },
        |f| {
            turns(vec![
                Turn::tool(
                    "Write",
                    json!({"file_path": f.at("planned.txt"), "content": "no\n"}),
                ),
                Turn::text("Done."),
            ])
        },
    ) else {
        return;
    };
    s.ed.set_approval_policy(answer_all_but_mcp("allow_once"));
    s.start_with("Write planned.txt.", &["--permission-mode", "plan"], &[]);
    let status = s.wait(RUN_TIMEOUT, |_, _| None);
    s.print_timings();
    assert_eq!(
        s.approved_tools(),
        ["Write"],
        "{}",
        s.failure(&format!(
            "the Plan phase blocks the Write: the editor is asked ({status:?})"
        ))
    );
    let debug = std::fs::read_to_string(&s.claude().debug_log).unwrap_or_default();
    assert!(
        !debug.contains("returned permissionDecision: allow"),
        "{}",
        s.failure("in plan mode rawko must not answer allow")
    );
    assert_eq!(
        s.read("planned.txt"),
        None,
        "{}",
        s.failure("plan mode changes nothing: planned.txt was written")
    );
}

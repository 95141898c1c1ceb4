//! Scenarios: the real Claude Code driven through a workflow.

use super::*;

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------

/// (a) the phase context reaches the model; (c) a Stop while the workflow is active sends the
/// agent on with the reminder, and the agent moves the workflow itself with
/// `mcp__rawko__workflow_step` (through `rawko mcp`) until it is complete, then may stop; (d) the
/// session ends with claude's JSON result. The editor refuses every approval, and none should be
/// asked for: `workflow_step` is always allowed, whatever the phase's tool list says.
#[test]
fn context_reminders_and_workflow_step_take_a_session_through_the_workflow() {
    let Some(mut s) = Scenario::new("workflow", Options::workflow("gated"), |f| {
        turns(vec![
            Turn::tool("Read", json!({"file_path": f.at("a.txt")})),
            Turn::text("Here is my plan: change a.txt."),
            Turn::tool(STEP, json!({"action": "next"})),
            Turn::tool(
                "Write",
                json!({"file_path": f.at("impl.txt"), "content": "implemented\n"}),
            ),
            Turn::text("Implemented."),
            Turn::tool(STEP, json!({"action": "next"})),
            Turn::text("All done."),
        ])
    }) else {
        return;
    };
    s.ed.set_approval_policy(|_| Some("reject_once"));
    // Nothing here needs an approval: the first one ends the run (and fails the test below).
    let outcome = s.run("Change a.txt, following the workflow.", |ed, _| {
        let asked = ed.approval_requests();
        asked.first().map(|a| {
            format!(
                "stopped at the first approval request ({} in the {} phase)",
                a["params"]["tool"], a["params"]["phase"]
            )
        })
    });
    s.print_timings();
    let main = s.api.main_requests();

    // (a) SessionStart's and UserPromptSubmit's additionalContext both reach the model.
    let first = &main[0];
    assert!(
        first.count(PLAN_MARKER) >= 2,
        "{}",
        s.failure(&format!(
            "the first model request should carry the Plan phase's context from both SessionStart \
             and UserPromptSubmit; it mentions {PLAN_MARKER} {} times",
            first.count(PLAN_MARKER)
        ))
    );
    let asked: Vec<String> =
        s.ed.approval_requests()
            .iter()
            .map(|a| format!("{} in {}", a["params"]["tool"], a["params"]["phase"]))
            .collect();
    assert!(
        asked.is_empty(),
        "{}",
        s.failure(&format!(
            "rawko asked the editor to approve {asked:?}: workflow_step ({STEP}) must always be \
             allowed, whatever the phase's tool list says, and Implement allows the Write"
        ))
    );
    // (c) The first stop: the reminder, with the phase's instructions.
    let reminded = |i: usize, marker: &str| {
        main.get(i)
            .is_some_and(|r| r.last_text().contains(REMINDER) && r.last_text().contains(marker))
    };
    assert!(
        reminded(2, PLAN_MARKER),
        "{}",
        s.failure(
            "the request after the first stop should carry rawko's reminder for the Plan phase"
        )
    );
    let steps: Vec<_> = s
        .api
        .tool_calls()
        .into_iter()
        .filter(|c| c.0 == STEP)
        .map(|c| c.2)
        .collect();
    let step = |i: usize| steps.get(i).cloned().flatten();
    assert!(
        step(0).is_some_and(|r| !r.is_error && r.text.contains("Implement")),
        "{}",
        s.failure(&format!(
            "the first workflow_step should move to Implement; its result: {:?}",
            step(0)
        ))
    );
    assert_eq!(
        s.read("impl.txt").as_deref(),
        Some("implemented\n"),
        "{}",
        s.failure("Implement allows writing: Claude Code should have written impl.txt")
    );
    assert!(
        reminded(5, IMPLEMENT_MARKER),
        "{}",
        s.failure("the request after the second stop should carry the reminder for Implement")
    );
    assert!(
        step(1).is_some_and(|r| !r.is_error && r.text.to_lowercase().contains("complete")),
        "{}",
        s.failure(&format!(
            "the second workflow_step should complete the workflow; its result: {:?}",
            step(1)
        ))
    );
    // (d) Done: the agent may stop, and claude ends with its result.
    let result = s.ended_well(&outcome);
    assert_eq!(
        main.len(),
        7,
        "{}",
        s.failure(
            "once the workflow is complete the agent may stop: no reminder after \"All done.\""
        )
    );
    assert_eq!(
        result["result"],
        "All done.",
        "{}",
        s.failure("claude's result")
    );
    assert!(
        s.api.script_errors().is_empty(),
        "{}",
        s.failure("the script failed")
    );
}

/// The calls of the approval scenarios: reads (which pass), then every way Claude Code writes a
/// file, then the workflow's two steps and a stop.
fn writes(f: &Files) -> Vec<Turn> {
    vec![
        // Two calls in one reply: Claude Code runs them (and their hooks) together.
        Turn::tool("Read", json!({"file_path": f.at("a.txt")}))
            .then_tool("Read", json!({"file_path": f.at("n.ipynb")})),
        Turn::tool(
            "Write",
            json!({"file_path": f.at("new.txt"), "content": "new\n"}),
        ),
        Turn::tool(
            "Edit",
            json!({"file_path": f.at("a.txt"), "old_string": "hello", "new_string": "bye"}),
        ),
        Turn::tool(
            "MultiEdit",
            json!({"file_path": f.at("a.txt"), "edits": [{"old_string": "hello", "new_string": "multi"}]}),
        ),
        Turn::tool(
            "NotebookEdit",
            json!({"notebook_path": f.at("n.ipynb"), "cell_id": "c1", "new_source": "print(2)", "edit_mode": "replace"}),
        ),
        Turn::tool(
            "Bash",
            json!({"command": "echo x > shell.txt", "description": "Write shell.txt"}),
        ),
        Turn::tool(STEP, json!({"action": "next"})),
        Turn::tool(STEP, json!({"action": "next"})),
        Turn::text("Done."),
    ]
}

/// Whether this Claude Code has a MultiEdit tool: recent ones answer a call of it with "No such
/// tool available" and run no hook.
fn has_multiedit(s: &Scenario) -> bool {
    s.api
        .result_of("MultiEdit", |_| true)
        .is_some_and(|r| !r.text.contains("No such tool available"))
}

/// The tools that must reach the editor as approvals, in call order.
fn expected_approvals(s: &Scenario, order: &[&str]) -> Vec<String> {
    let multiedit = has_multiedit(s);
    order
        .iter()
        .filter(|t| **t != "MultiEdit" || multiedit)
        .map(|t| (*t).to_owned())
        .collect()
}

/// (b) In a read-only (whitelist) phase, Read passes and every write goes to the editor; the
/// editor refuses, Claude Code is told why and nothing changes on disk.
#[test]
fn writes_in_a_read_only_phase_are_refused_in_the_editor_and_change_nothing() {
    let Some(mut s) = Scenario::new("deny", Options::workflow("gated"), |f| turns(writes(&f)))
    else {
        return;
    };
    s.ed.set_approval_policy(answer_all_but_mcp("reject_once"));
    let outcome = s.run("Tidy the project.", |_, _| None);
    s.print_timings();
    assert_eq!(
        s.approved_tools(),
        expected_approvals(&s, &["Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"]),
        "{}",
        s.failure("every write in the Plan phase, and only those, should reach the editor")
    );
    for a in s.ed.approval_requests() {
        assert_eq!(a["params"]["phase"], "Plan", "{a}");
    }
    for (tool, input, result) in s.api.tool_calls() {
        let Some(result) = result else { continue };
        match tool.as_str() {
            "Read" => assert!(!result.is_error, "{}", s.failure(&format!("Read {input}: {result:?}"))),
            "Write" | "Edit" | "NotebookEdit" | "Bash" => assert!(
                result.is_error && result.text.contains("Plan"),
                "{}",
                s.failure(&format!(
                    "{tool} was refused: Claude Code should tell the model so, with rawko's reason; it said {result:?}"
                ))
            ),
            _ => {}
        }
    }
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("hello\n"),
        "{}",
        s.failure("a.txt changed")
    );
    assert_eq!(
        s.read("n.ipynb").as_deref(),
        Some(NOTEBOOK),
        "{}",
        s.failure("n.ipynb changed")
    );
    assert_eq!(
        s.read("new.txt"),
        None,
        "{}",
        s.failure("new.txt was written")
    );
    assert_eq!(
        s.read("shell.txt"),
        None,
        "{}",
        s.failure("shell.txt was written")
    );
    // (d) The session ends with its result.
    s.ended_well(&outcome);
}

/// (b) The same writes, allowed once in the editor: Claude Code really writes them.
#[test]
fn writes_allowed_in_the_editor_are_carried_out_by_claude_code() {
    let Some(mut s) = Scenario::new("allow", Options::workflow("gated"), |f| turns(writes(&f)))
    else {
        return;
    };
    s.ed.set_approval_policy(answer_all_but_mcp("allow_once"));
    let outcome = s.run("Tidy the project.", |_, _| None);
    s.print_timings();
    assert_eq!(
        s.approved_tools(),
        expected_approvals(&s, &["Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"]),
        "{}",
        s.failure("every write in the Plan phase, and only those, should reach the editor")
    );
    for (tool, input, result) in s.api.tool_calls() {
        if tool == "MultiEdit" && !has_multiedit(&s) {
            continue;
        }
        let result =
            result.unwrap_or_else(|| panic!("{}", s.failure(&format!("{tool} got no result"))));
        assert!(
            !result.is_error,
            "{}",
            s.failure(&format!(
                "{tool} {input} was allowed and should have run: {result:?}"
            ))
        );
    }
    assert_eq!(
        s.read("new.txt").as_deref(),
        Some("new\n"),
        "{}",
        s.failure("Write")
    );
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("bye\n"),
        "{}",
        s.failure("Edit")
    );
    assert_eq!(
        s.read("shell.txt").as_deref(),
        Some("x\n"),
        "{}",
        s.failure("Bash")
    );
    let notebook: Value = serde_json::from_str(&s.read("n.ipynb").unwrap_or_default())
        .unwrap_or_else(|e| panic!("{}", s.failure(&format!("n.ipynb is not JSON: {e}"))));
    let source = &notebook["cells"][0]["source"];
    assert!(
        source == "print(2)" || source == &json!(["print(2)"]),
        "{}",
        s.failure(&format!(
            "NotebookEdit should have replaced the cell: {notebook}"
        ))
    );
    // (d) The session ends with its result.
    s.ended_well(&outcome);
}

/// (b) A blacklist phase (`blacklist: [Write, Edit]`) covers every tool that edits files:
/// MultiEdit and NotebookEdit too, and a shell write.
#[test]
fn a_blacklist_of_write_and_edit_covers_every_edit_tool() {
    let Some(mut s) = Scenario::new("blacklist", Options::workflow("blacklisted"), |f| {
        turns(writes(&f))
    }) else {
        return;
    };
    s.ed.set_approval_policy(answer_all_but_mcp("reject_once"));
    let outcome = s.run("Review the project.", |_, _| None);
    s.print_timings();
    assert_eq!(
        s.approved_tools(),
        expected_approvals(&s, &["Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"]),
        "{}",
        s.failure(
            "with Write and Edit blacklisted, every tool that edits files (MultiEdit and NotebookEdit \
             too) and a writing shell command should reach the editor"
        )
    );
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("hello\n"),
        "{}",
        s.failure("a.txt changed")
    );
    assert_eq!(
        s.read("n.ipynb").as_deref(),
        Some(NOTEBOOK),
        "{}",
        s.failure(
            "n.ipynb changed: NotebookEdit got through a phase that blacklists Write and Edit"
        )
    );
    assert_eq!(
        s.read("new.txt"),
        None,
        "{}",
        s.failure("new.txt was written")
    );
    assert_eq!(
        s.read("shell.txt"),
        None,
        "{}",
        s.failure("shell.txt was written")
    );
    // (d) The session ends with its result.
    s.ended_well(&outcome);
}

/// A model that keeps stopping more often than `maxReminders` allows: rawko gives up reminding,
/// and the Stop hook still answers, so the session ends (rather than Claude Code waiting out its
/// 600 s hook timeout).
#[test]
fn more_stops_than_max_reminders_still_end_the_session() {
    const MAX_REMINDERS: usize = 2;
    let Some(mut s) = Scenario::new(
        "max-reminders",
        Options {
            config: Some(json!({"maxReminders": MAX_REMINDERS})),
            ..Options::workflow("gated")
        },
        |_| |_: &Request| Turn::text("I am done."),
    ) else {
        return;
    };
    s.ed.set_approval_policy(|_| Some("reject_once"));
    let outcome = s.run("Say you are done.", |_, _| None);
    s.print_timings();
    s.ended_well(&outcome);
    let reminders = s
        .api
        .main_requests()
        .iter()
        .filter(|r| r.last_text().contains(REMINDER))
        .count();
    assert_eq!(
        reminders,
        MAX_REMINDERS,
        "{}",
        s.failure("the agent should be reminded maxReminders times, then allowed to stop")
    );
    // Every stop the model was sent on from is answered with the reminder, the first one too.
    let first = &s.api.main_requests()[1];
    assert!(
        first.last_text().contains(REMINDER),
        "{}",
        s.failure(&format!(
            "the first stop should be answered with rawko's reminder; the model was told: {}",
            first.last_text()
        ))
    );
}

/// `rawko serve` whose editor never sent `initialize`: the hooks must still find it, and a Write
/// the phase blocks must not pass silently. With nobody to approve it, in `claude -p` (nobody at
/// the session either), rawko defers the call (`permissionDecision: "defer"`): claude stops with
/// it (`tool_deferred`) and writes nothing. Once an editor is there, `claude -p --resume` asks
/// rawko again, the editor allows it, and the Write runs.
#[test]
fn a_server_without_an_editor_does_not_let_a_blocked_write_pass() {
    let Some(mut s) = Scenario::new(
        "no-editor",
        Options {
            config: Some(json!({"maxReminders": 1, "countdownSeconds": 0})),
            initialize: false,
            ..Options::workflow("gated")
        },
        |f| {
            turns(vec![
                Turn::tool(
                    "Write",
                    json!({"file_path": f.at("new.txt"), "content": "new\n"}),
                ),
                Turn::text("Stopping."),
            ])
        },
    ) else {
        return;
    };
    let endpoint = wait_endpoint(s.home.path(), Duration::from_secs(5));
    s.start("Write new.txt.");
    let status = s.wait(RUN_TIMEOUT, |_, _| None);
    s.print_timings();
    let note = format!("(endpoint file written by the editor-less server: {endpoint})");
    let written = s.read("new.txt");
    let result = s.api.result_of("Write", |_| true);
    assert_eq!(
        written,
        None,
        "{}",
        s.failure(&format!(
            "a Write the Plan phase blocks went through with no editor to approve it {note}; \
             the model was told {result:?}"
        ))
    );
    let debug = std::fs::read_to_string(&s.claude().debug_log).unwrap_or_default();
    assert!(
        debug.contains("returned permissionDecision: defer"),
        "{}",
        s.failure(&format!(
            "rawko should defer the Write in claude -p, with nobody to ask {note}"
        ))
    );
    let claude_result = s.claude().result().unwrap_or_default();
    assert!(
        status.is_ok() && claude_result["stop_reason"] == "tool_deferred",
        "{}",
        s.failure(&format!(
            "claude -p should stop with the deferred Write: {status:?}"
        ))
    );
    let session = claude_result["session_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();

    // An editor comes; the session resumes: the deferred Write is asked about, allowed, and runs.
    s.ed.initialize(json!({"countdownTickMillis": 20, "approvalTimeoutSeconds": 30}));
    s.ed.set_approval_policy(answer_all_but_mcp("allow_once"));
    s.start_with("Go on.", &["--resume", &session], &[]);
    let resumed = s.wait(RUN_TIMEOUT, |_, _| None);
    s.print_timings();
    assert_eq!(
        s.approved_tools(),
        ["Write"],
        "{}",
        s.failure(&format!(
            "the resumed session should ask the editor about the deferred Write ({resumed:?})"
        ))
    );
    assert_eq!(
        s.read("new.txt").as_deref(),
        Some("new\n"),
        "{}",
        s.failure("the Write the editor allowed should have run")
    );
}

//! Approval of blocked tool calls.

use super::*;

// ---------------------------------------------------------------------------------------------
// Approval of blocked tool calls
// ---------------------------------------------------------------------------------------------

/// Runs WRITE_IN_PLAN with the editor answering `outcome`; returns the approval request, the
/// Write's tool_call and tool_result.
fn write_in_plan(outcome: &'static str) -> (Project, Editor, String, Value, Value, Value) {
    let project = Project::with_starter();
    let script = project.script("write", WRITE_IN_PLAN);
    let mut ed = serve(&project, fast());
    ed.set_approval_policy(move |_| Some(outcome));
    let task = start(&mut ed, &script);
    let approval = wait_approval(&mut ed, &task);
    let call = wait_output(&mut ed, &task, "tool_call", |p| p["tool"] == "Write");
    let result = wait_output(&mut ed, &task, "tool_result", |p| p["tool"] == "Write");
    (project, ed, task, approval, call, result)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[test]
fn a_blocked_write_asks_the_editor_with_tool_input_phase_reason_and_options() {
    let before = now_ms();
    let (_project, _ed, task, approval, call, _) = write_in_plan("reject_once");
    let after = now_ms();
    let p = &approval["params"];
    assert_eq!(p["summary"], "Write PLAN.md (9 bytes)", "{p}");
    // The default approval timeout, and the deadline it sets.
    assert_eq!(p["timeoutSeconds"], 120, "{p}");
    let expires = p["expiresAt"].as_u64().unwrap_or_default();
    assert!(
        (before + 120_000..=after + 120_000).contains(&expires),
        "expiresAt {expires} is 120 s after the request ({before}..{after})"
    );
    assert_eq!(p["taskId"], json!(task));
    assert_eq!(p["toolCallId"], call["toolCallId"], "{p}\n{call}");
    assert_eq!(p["tool"], "Write");
    assert_eq!(
        p["input"],
        // Claude Code's field names, whatever the model wrote (this script says `path`).
        json!({"file_path": "PLAN.md", "content": "1. shout\n"})
    );
    assert_eq!(p["phase"], "Plan");
    let reason = p["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("Write") && reason.contains("Plan"),
        "the reason names the tool and the phase: {reason:?}"
    );
    assert_eq!(p["options"], json!(OPTIONS));
    // What the timeout does, in the server's words, so no client writes its own.
    assert_eq!(
        p["timeoutText"], "denied once if there is no answer within 120 s",
        "{p}"
    );
    assert_eq!(p["timeoutLabel"], "denied in", "{p}");
}

#[test]
fn a_status_says_the_state_class_the_breadcrumb_levels_and_the_state_words() {
    let project = Project::with_starter();
    let script = project.script("write", WRITE_IN_PLAN);
    let mut ed = serve(&project, fast());
    ed.set_approval_policy(|_| Some("reject_once"));
    let task = start(&mut ed, &script);
    let waiting = wait_note(&mut ed, &task, "rawko/status", "waiting_approval", |p| {
        p["state"] == "waiting_approval"
    });
    assert_eq!(waiting["stateClass"], "waiting", "{waiting}");
    assert_eq!(waiting["external"], false, "{waiting}");
    assert_eq!(
        waiting["breadcrumbLevels"],
        json!(["Feature", "📋 Plan [1/4]"]),
        "{waiting}"
    );
    assert_eq!(waiting["stateText"], " — waiting for approval", "{waiting}");
    assert_eq!(
        waiting["actions"],
        json!(["reset", "interrupt", "cancel", "message"]),
        "{waiting}"
    );
    assert_eq!(
        waiting["text"],
        format!(
            "{}{}",
            waiting["breadcrumbText"].as_str().unwrap_or_default(),
            waiting["stateText"].as_str().unwrap_or_default()
        ),
        "text is the breadcrumb and the state words"
    );
    let running = wait_note(&mut ed, &task, "rawko/status", "running again", |p| {
        p["state"] == "running"
    });
    assert_eq!(running["stateClass"], "busy", "{running}");
    assert_eq!(running["stateText"], "", "{running}");
    let listed = ed
        .request("rawko/listTasks", json!({}))
        .expect("rawko/listTasks answers");
    let summary = &listed["tasks"][0];
    assert_eq!(summary["taskId"], json!(task), "{listed}");
    assert!(
        ["busy", "waiting", "finished"].contains(&summary["stateClass"].as_str().unwrap_or("")),
        "{summary}"
    );
    assert_eq!(summary["external"], false, "{summary}");
    assert_eq!(summary["breadcrumbLevels"][0], "Feature", "{summary}");
    assert!(summary["actions"].is_array(), "{summary}");
}

#[test]
fn a_blocked_write_allowed_once_runs() {
    let (project, mut ed, task, _, _, result) = write_in_plan("allow_once");
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(
        std::fs::read_to_string(project.path("PLAN.md")).expect("PLAN.md written"),
        "1. shout\n"
    );
    // The task waited for the answer, then went on.
    let waiting = wait_status(&mut ed, &task, "waiting_approval");
    let running = wait_note(&mut ed, &task, "rawko/status", "running again", |p| {
        p["state"] == "running" && seq(p) > seq(&waiting)
    });
    assert!(seq(&running) < seq(&result), "{running}\n{result}");
}

#[test]
fn a_blocked_write_rejected_once_does_not_run_and_the_agent_is_told_why() {
    let (project, mut ed, task, approval, _, result) = write_in_plan("reject_once");
    assert!(!project.path("PLAN.md").exists(), "PLAN.md must not exist");
    assert_eq!(result["isError"], true, "{result}");
    let reason = approval["params"]["reason"].as_str().unwrap_or_default();
    assert!(
        text(&result).contains(reason),
        "the tool result carries the block reason {reason:?}: {result}"
    );
    assert!(lower(text(&result)).contains("blocked"), "{result}");
    // The agent goes on with its next turn.
    wait_output(&mut ed, &task, "tool_call", |p| p["tool"] == "Read");
}

#[test]
fn allow_always_is_remembered_for_the_rest_of_the_task() {
    let project = Project::with_starter();
    let script = project.script(
        "always",
        r#"
turns:
  - tool_calls:
      - {name: Write, input: {path: a.md, content: "a"}}
  - tool_calls:
      - {name: Write, input: {path: b.md, content: "b"}}
  - text: "Both written."
    tool_calls:
      - {name: Read, input: {path: b.md}}
"#,
    );
    let mut ed = serve(&project, fast());
    ed.set_approval_policy(|_| Some("allow_always"));
    let task = start(&mut ed, &script);
    let first = wait_output(&mut ed, &task, "tool_result", |p| p["tool"] == "Write");
    let second = wait_output(&mut ed, &task, "tool_result", |p| p["tool"] == "Write");
    wait_output(&mut ed, &task, "tool_result", |p| p["tool"] == "Read");
    assert_eq!(first["isError"], false, "{first}");
    assert_eq!(second["isError"], false, "{second}");
    assert!(project.path("a.md").exists() && project.path("b.md").exists());
    let asked: Vec<Value> = ed
        .approval_requests()
        .into_iter()
        .filter(|a| a["params"]["taskId"] == json!(task))
        .collect();
    assert_eq!(asked.len(), 1, "asked once only: {asked:?}");
    assert_eq!(asked[0]["params"]["input"]["file_path"], "a.md");
    let waits = notes_of(&ed.notifications(&task), "rawko/status", None)
        .into_iter()
        .filter(|s| s["state"] == "waiting_approval")
        .count();
    assert_eq!(waits, 1, "the task waited for approval once");
}

#[test]
fn an_unanswered_approval_times_out_as_rejected_and_the_task_goes_on() {
    let project = Project::with_starter();
    let script = project.script(
        "late",
        r#"
turns:
  - tool_calls:
      - {name: Write, input: {path: late.md, content: "too late"}}
  - text: "Carrying on without the file."
    tool_calls:
      - {name: Read, input: {path: README.md}}
"#,
    );
    let mut ed = serve(
        &project,
        json!({"countdownTickMillis": 20, "approvalTimeoutSeconds": 0.3}),
    );
    // The editor never answers.
    let task = start(&mut ed, &script);
    let approval = wait_approval(&mut ed, &task);
    // A timeout configured only on the server still reaches the client, rounded up to 1 s.
    assert_eq!(approval["params"]["timeoutSeconds"], 1, "{approval}");
    let expires = approval["params"]["expiresAt"].as_u64().unwrap_or_default();
    assert!(
        expires <= now_ms() + 300,
        "expiresAt {expires} is 0.3 s after the request"
    );
    let status = wait_note(&mut ed, &task, "rawko/status", "a reason", |p| {
        p["state"] == "running" && p.get("reason").is_some()
    });
    let reason = lower(status["reason"].as_str().unwrap_or_default());
    assert!(
        reason.contains("no answer") && reason.contains("write"),
        "the status says no answer came for Write: {status}"
    );
    // The withdrawn request is named by its tool call too, for a client that cannot see the
    // JSON-RPC id `$/cancelRequest` names.
    let withdrawn = wait_note(
        &mut ed,
        &task,
        "rawko/approvalWithdrawn",
        "the approval",
        |_| true,
    );
    assert_eq!(
        withdrawn["toolCallId"], approval["params"]["toolCallId"],
        "{withdrawn}"
    );
    let result = wait_output(&mut ed, &task, "tool_result", |p| p["tool"] == "Write");
    assert_eq!(result["isError"], true, "{result}");
    assert!(!project.path("late.md").exists(), "late.md must not exist");
    let next = wait_output(&mut ed, &task, "tool_call", |p| p["tool"] == "Read");
    assert!(seq(&next) > seq(&result));
}

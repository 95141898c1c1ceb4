//! Cancel.

use super::*;

// ---------------------------------------------------------------------------------------------
// Cancel
// ---------------------------------------------------------------------------------------------

/// Cancels `task`, sees it end as cancelled, then a second cancel is a state conflict.
fn cancel_and_check(ed: &mut Editor, task: &str) {
    assert_eq!(
        ed.request("rawko/cancelTask", json!({"taskId": task})),
        Ok(json!({}))
    );
    let status = wait_status(ed, task, "cancelled");
    let finished = wait_finished(ed, task);
    assert_eq!(finished["outcome"], "cancelled", "{finished}");
    assert!(seq(&status) < seq(&finished));
    let notes = ed.notifications(task);
    assert_eq!(
        notes.last().map(|m| &m["method"]),
        Some(&json!("rawko/taskFinished")),
        "taskFinished is the last notification"
    );
    let again = assert_error(
        ed.request("rawko/cancelTask", json!({"taskId": task})),
        -32003,
    );
    assert!(
        lower(again["message"].as_str().unwrap_or_default()).contains("ended")
            || lower(again["message"].as_str().unwrap_or_default()).contains("finished"),
        "{again}"
    );
}

#[test]
fn cancel_while_an_approval_is_pending_ends_the_task() {
    let project = Project::with_starter();
    let script = project.script("write", WRITE_IN_PLAN);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    wait_approval(&mut ed, &task);
    wait_status(&mut ed, &task, "waiting_approval");
    cancel_and_check(&mut ed, &task);
    assert!(!project.path("PLAN.md").exists());
}

#[test]
fn cancel_during_a_slow_model_turn_ends_the_task_at_once() {
    let project = Project::with_starter();
    let script = project.script(
        "slow",
        "turns:\n  - text: \"Too slow to be seen.\"\n    delay_ms: 60000\n",
    );
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    wait_output(&mut ed, &task, "context_injected", |_| true);
    cancel_and_check(&mut ed, &task);
    let notes = ed.notifications(&task);
    assert!(
        notes_of(&notes, "rawko/output", Some("assistant_delta")).is_empty(),
        "the turn never played: {notes:#?}"
    );
}

#[test]
fn a_message_to_a_finished_task_is_a_state_conflict() {
    let project = Project::with_starter();
    let script = project.script("slow", "turns:\n  - text: \"Slow.\"\n    delay_ms: 60000\n");
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    assert_eq!(
        ed.request("rawko/cancelTask", json!({"taskId": task})),
        Ok(json!({}))
    );
    wait_finished(&mut ed, &task);
    assert_error(
        ed.request(
            "rawko/sendMessage",
            json!({"taskId": task, "text": "hello?"}),
        ),
        -32003,
    );
    assert_error(
        ed.request("rawko/step", json!({"taskId": task, "action": "status"})),
        -32003,
    );
}

//! Countdown and reminder.

use super::*;

// ---------------------------------------------------------------------------------------------
// Countdown and reminder
// ---------------------------------------------------------------------------------------------

/// The agent stops during Plan, then (after the reminder or the user) goes on.
const STOPS_EARLY: &str = r#"
turns:
  - text: "I think that is all."
  - text: "Back to the plan."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "Plan done."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
"#;

#[test]
fn an_agent_that_stops_early_gets_a_countdown_then_a_reminder() {
    let project = Project::with_starter();
    let script = project.script("stops", STOPS_EARLY);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    let next_turn = wait_output(&mut ed, &task, "tool_call", |p| p["tool"] == "Read");
    let notes = ed.notifications(&task);
    let at = |method: &str, pred: &dyn Fn(&Value) -> bool| -> u64 {
        notes
            .iter()
            .find(|m| m["method"] == method && pred(&m["params"]))
            .map(|m| seq(&m["params"]))
            .unwrap_or_else(|| panic!("no {method} of that kind in {notes:#?}"))
    };
    let countdown_status = at("rawko/status", &|p| p["state"] == "countdown");
    let ticks: Vec<Value> = notes_of(&notes, "rawko/countdown", None);
    let seconds: Vec<u64> = ticks
        .iter()
        .map(|t| t["secondsLeft"].as_u64().unwrap_or(99))
        .collect();
    assert_eq!(seconds.get(..3), Some(&[3, 2, 1][..]), "{ticks:?}");
    assert!(text(&ticks[0]).contains("3s"), "{}", ticks[0]);
    let reminder = notes_of(&notes, "rawko/output", Some("reminder"));
    assert_eq!(reminder.len(), 1, "one reminder: {reminder:?}");
    let reminder = &reminder[0];
    assert!(
        text(reminder).contains("📋 Plan") && lower(text(reminder)).contains("still active"),
        "{reminder}"
    );
    let second_context = notes_of(&notes, "rawko/output", Some("context_injected"))
        .get(1)
        .map(seq)
        .expect("a context for the next turn");
    assert!(countdown_status < seq(&ticks[0]));
    assert!(seq(&ticks[0]) < seq(&ticks[1]) && seq(&ticks[1]) < seq(&ticks[2]));
    assert!(seq(ticks.last().expect("ticks")) < seq(reminder));
    assert!(seq(reminder) < second_context && second_context < seq(&next_turn));
}

#[test]
fn the_countdown_ticks_three_two_one_then_the_reminder_follows() {
    // docs/protocol.md: 3, 2, 1 by default; the reminder follows the tick of 1.
    let project = Project::with_starter();
    let script = project.script("stops", STOPS_EARLY);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    wait_output(&mut ed, &task, "reminder", |_| true);
    let ticks = notes_of(&ed.notifications(&task), "rawko/countdown", None);
    let seconds: Vec<Value> = ticks.iter().map(|t| t["secondsLeft"].clone()).collect();
    assert_eq!(seconds, [json!(3), json!(2), json!(1)]);
    let labels: Vec<&str> = ticks
        .iter()
        .map(|t| t["label"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        labels,
        [
            "⏳ Auto-continuing in 3s",
            "⏳ Auto-continuing in 2s",
            "⏳ Auto-continuing in 1s"
        ]
    );
    for tick in &ticks {
        let label = tick["label"].as_str().unwrap_or_default();
        assert!(
            text(tick).starts_with(label),
            "the text has the label: {tick}"
        );
    }
}

#[test]
fn interrupting_the_countdown_blocks_the_task_until_the_user_speaks() {
    let project = Project::with_starter();
    let script = project.script("stops", STOPS_EARLY);
    let mut ed = serve(&project, json!({"countdownTickMillis": SLOW_TICK_MILLIS}));
    let task = start(&mut ed, &script);
    wait_note(&mut ed, &task, "rawko/countdown", "3s left", |p| {
        p["secondsLeft"] == 3
    });
    assert_eq!(
        ed.request("rawko/interrupt", json!({"taskId": task})),
        Ok(json!({}))
    );
    let blocked = wait_status(&mut ed, &task, "blocked");
    assert!(blocked.get("reason").is_some(), "{blocked}");
    let summary = ed
        .request("rawko/getTask", json!({"taskId": task}))
        .expect("getTask");
    assert_eq!(summary["task"]["state"], "blocked");

    assert_eq!(
        ed.request(
            "rawko/sendMessage",
            json!({"taskId": task, "text": "Go on with the plan."})
        ),
        Ok(json!({}))
    );
    let next_turn = wait_output(&mut ed, &task, "tool_call", |p| p["tool"] == "Read");
    let running = wait_note(&mut ed, &task, "rawko/status", "running again", |p| {
        p["state"] == "running" && seq(p) > seq(&blocked)
    });
    assert!(seq(&running) < seq(&next_turn));
    let notes = ed.notifications(&task);
    assert!(
        notes_of(&notes, "rawko/output", Some("reminder")).is_empty(),
        "no reminder after an interrupt: {notes:#?}"
    );
}

#[test]
fn a_message_during_the_countdown_stops_it_and_becomes_the_next_turn() {
    let project = Project::with_starter();
    let script = project.script("stops", STOPS_EARLY);
    let mut ed = serve(&project, json!({"countdownTickMillis": SLOW_TICK_MILLIS}));
    let task = start(&mut ed, &script);
    let tick = wait_note(&mut ed, &task, "rawko/countdown", "3s left", |p| {
        p["secondsLeft"] == 3
    });
    assert_eq!(
        ed.request(
            "rawko/sendMessage",
            json!({"taskId": task, "text": "Please keep planning."})
        ),
        Ok(json!({}))
    );
    let running = wait_note(&mut ed, &task, "rawko/status", "running again", |p| {
        p["state"] == "running" && seq(p) > seq(&tick)
    });
    let next_turn = wait_output(&mut ed, &task, "tool_call", |p| p["tool"] == "Read");
    assert!(seq(&running) < seq(&next_turn));
    let notes = ed.notifications(&task);
    assert!(
        notes_of(&notes, "rawko/output", Some("reminder")).is_empty(),
        "no reminder after the user spoke: {notes:#?}"
    );
    let ticks = notes_of(&notes, "rawko/countdown", None);
    assert_eq!(ticks.len(), 1, "the countdown stopped: {ticks:?}");
}

#[test]
fn interrupt_during_a_turn_stops_it_and_a_second_interrupt_is_a_state_conflict() {
    // docs/protocol.md: rawko/interrupt stops a countdown or the current turn; it fails with
    // -32003 when the task is already interrupted.
    let project = Project::with_starter();
    let script = project.script(
        "slow",
        "turns:\n  - text: \"Thinking hard.\"\n    delay_ms: 60000\n  - text: \"Back again.\"\n",
    );
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    wait_output(&mut ed, &task, "context_injected", |_| true);
    assert_eq!(
        ed.request("rawko/interrupt", json!({"taskId": task})),
        Ok(json!({}))
    );
    let blocked = wait_status(&mut ed, &task, "blocked");
    // What the task accepts now, so no client tests the state's name: a resume, no interrupt.
    assert_eq!(
        blocked["actions"],
        json!(["resume", "reset", "cancel", "message"]),
        "{blocked}"
    );
    assert_error(
        ed.request("rawko/interrupt", json!({"taskId": task})),
        -32003,
    );
    let detail = ed
        .request("rawko/getTask", json!({"taskId": task}))
        .expect("getTask");
    assert_eq!(detail["task"]["state"], "blocked", "{detail}");
    assert_eq!(detail["task"]["actions"], blocked["actions"], "{detail}");
    // The interrupted turn's text never came: the next turn is the second one.
    assert_eq!(
        ed.request("rawko/resumeTask", json!({"taskId": task})),
        Ok(json!({}))
    );
    wait_output(&mut ed, &task, "assistant_delta", |p| {
        p["text"].as_str().unwrap_or_default().contains("Back")
    });
}

#[test]
fn a_task_offers_the_commands_it_accepts_and_no_others() {
    // docs/protocol.md, TaskAction: a client offers the commands in `actions` and no others.
    let project = Project::with_starter();
    let script = project.script(
        "slow",
        "turns:\n  - text: \"Thinking hard.\"\n    delay_ms: 60000\n",
    );
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    wait_output(&mut ed, &task, "context_injected", |_| true);
    let listed = ed
        .request("rawko/listTasks", json!({}))
        .expect("rawko/listTasks answers");
    assert_eq!(
        listed["tasks"][0]["actions"],
        json!(["reset", "interrupt", "cancel", "message"]),
        "{listed}"
    );
    assert_eq!(
        ed.request("rawko/cancelTask", json!({"taskId": task})),
        Ok(json!({}))
    );
    let cancelled = wait_status(&mut ed, &task, "cancelled");
    assert_eq!(cancelled["actions"], json!(["reset"]), "{cancelled}");
    assert_error(
        ed.request("rawko/cancelTask", json!({"taskId": task})),
        -32003,
    );
    assert_error(
        ed.request("rawko/resumeTask", json!({"taskId": task})),
        -32003,
    );
}

#[test]
fn an_agent_that_keeps_stopping_fails_at_the_reminder_limit() {
    let project = Project::with_starter();
    let script = project.script(
        "lazy",
        r#"
turns:
  - text: "Done, I think."
  - text: "Still done."
  - text: "Really done."
  - text: "Done for good."
  - text: "Nothing more to do."
"#,
    );
    let mut ed = serve(
        &project,
        json!({"countdownTickMillis": 20, "maxReminders": 2}),
    );
    let task = start(&mut ed, &script);
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "failed", "{finished}");
    let summary = finished["summary"].as_str().unwrap_or_default();
    assert!(
        lower(summary).contains("reminder") && summary.contains('2'),
        "the summary names the limit of 2 reminders: {summary:?}"
    );
    let notes = ed.notifications(&task);
    let failed = notes_of(&notes, "rawko/status", None)
        .into_iter()
        .find(|s| s["state"] == "failed")
        .expect("a failed status");
    let reason = failed["reason"].as_str().unwrap_or_default();
    assert!(lower(reason).contains("reminder"), "{failed}");
    assert_eq!(
        notes_of(&notes, "rawko/output", Some("reminder")).len(),
        2,
        "two reminders were sent"
    );
}

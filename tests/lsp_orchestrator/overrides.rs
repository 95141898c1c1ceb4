//! 6. Overrides.

use super::*;

// ---------------------------------------------------------------------------------------------
// 6. Overrides
// ---------------------------------------------------------------------------------------------

#[test]
fn force_agent_during_a_run_stops_it_and_the_forced_agent_runs_next() {
    let project = project_with_starter_agents();
    let script = project.script(
        "forced",
        &format!(
            r#"
turns:
  - text: "The planner's slow plan."
    delay_ms: {SLOW_MS}
  - text: "Reviewing."
    tool_calls:
      - {{id: f1, name: Bash, input: {{command: "touch reviewed.txt"}}}}
  - text: "Approved after the override."
"#
        ),
    );
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script, json!({}));
    wait_task(&mut ed, &task, "the planner's run", |d| {
        d["state"] == "running"
            && history(d)
                .iter()
                .any(|h| h["event"] == "machine:AGENT_SELECTED")
    });

    // An agent nobody defined is refused, naming the agents there are.
    let unknown = assert_error(
        ed.request(
            "rawko/forceAgent",
            json!({"taskId": task, "agent": "nobody"}),
        ),
        -32602,
    );
    let message = unknown["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("nobody") && message.contains("reviewer"),
        "{unknown}"
    );

    let started = Instant::now();
    assert_eq!(
        ed.request(
            "rawko/forceAgent",
            json!({"taskId": task, "agent": "reviewer"}),
        ),
        Ok(json!({}))
    );
    let finished = wait_finished(&mut ed, &task);
    assert!(
        started.elapsed() < Duration::from_millis(SLOW_MS / 2),
        "the planner's turn was not stopped"
    );
    assert_eq!(finished["outcome"], "complete", "{finished}");
    assert_eq!(finished["summary"], "Approved after the override.");
    // The task has finished: overrides no longer apply.
    assert_error(
        ed.request(
            "rawko/forceAgent",
            json!({"taskId": task, "agent": "reviewer"}),
        ),
        -32003,
    );
    assert_error(
        ed.request("rawko/skipStep", json!({"taskId": task})),
        -32003,
    );
    let notes = ed.notifications(&task);
    assert!(
        !streamed(&notes).contains("slow plan"),
        "the stopped turn's text was shown: {}",
        streamed(&notes)
    );
    // The forced agent's taking over was announced, once.
    let handoffs = notes_of(&notes, "rawko/output", Some("handoff"));
    assert_eq!(handoffs.len(), 1, "{handoffs:#?}");
    assert_eq!(text(&handoffs[0]), "── handoff: planner → reviewer ──");
    assert_eq!(handoffs[0]["agent"], "reviewer");
    // The reviewer ran: its Bash filter refused `touch`.
    let touch = tool_result(&notes, "f1");
    assert_eq!(
        text(&touch),
        "Command 'touch' is not allowed for agent reviewer"
    );

    let history = history(&get_task(&mut ed, &task));
    let shown = show_history(&history);
    let forced = history
        .iter()
        .find(|h| h["event"] == "machine:FORCE_AGENT")
        .unwrap_or_else(|| panic!("no FORCE_AGENT:\n{shown}"));
    assert_eq!(forced["stateBefore"], "executing", "{shown}");
    assert_eq!(forced["stateAfter"], "executing", "{shown}");
    let machine = machine_entries(&history);
    let at = machine
        .iter()
        .position(|h| h["event"] == "machine:FORCE_AGENT")
        .expect("FORCE_AGENT");
    let next: Vec<&str> = machine[at + 1..]
        .iter()
        .filter_map(|h| h["event"].as_str())
        .collect();
    assert_eq!(
        next,
        ["machine:AGENT_COMPLETE", "machine:ARBITER_DECISION"],
        "the forced agent's run, then the end:\n{shown}"
    );
    assert!(
        detail_of(forced).contains("reviewer"),
        "FORCE_AGENT should name the forced agent: {forced}\nhistory:\n{shown}"
    );
}

#[test]
fn skip_step_moves_a_workflow_task_to_its_next_phase() {
    let project = project();
    project.add_starter_workflows();
    let script = project.script(
        "skipped",
        &format!(
            r#"
turns:
  - text: "A plan that never ends."
    delay_ms: {SLOW_MS}
  - text: "Implementing."
    tool_calls:
      - {{id: i1, name: Write, input: {{path: shout.txt, content: "HELLO"}}}}
  - text: "Waiting for the user."
    delay_ms: {SLOW_MS}
"#
        ),
    );
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script, json!({"workflow": "feature"}));
    wait_note(
        &mut ed,
        &task,
        "rawko/output",
        "the Plan phase's context",
        |p| p["kind"] == "context_injected",
    );
    let started = Instant::now();
    assert_eq!(
        ed.request("rawko/skipStep", json!({"taskId": task})),
        Ok(json!({}))
    );
    let status = wait_note(&mut ed, &task, "rawko/status", "the Implement phase", |p| {
        text(p) == "Feature > 🛠️ Implement [2/4]"
    });
    assert_eq!(
        status["breadcrumb"],
        json!([{"name": "Feature", "phaseName": "Implement", "emoji": "🛠️", "index": 2, "total": 4}])
    );
    // The agent goes on in Implement, where Write runs without asking.
    let write = wait_note(&mut ed, &task, "rawko/output", "the Write result", |p| {
        p["kind"] == "tool_result" && p["toolCallId"] == "i1"
    });
    assert_eq!(write["isError"], false, "{write}");
    assert!(project.path("shout.txt").exists());
    assert!(
        started.elapsed() < Duration::from_millis(SLOW_MS / 2),
        "the Plan turn was not stopped"
    );
    assert!(ed.approval_requests().is_empty());

    let detail = get_task(&mut ed, &task);
    assert_eq!(detail["breadcrumbText"], "Feature > 🛠️ Implement [2/4]");
    let history = history(&detail);
    let shown = show_history(&history);
    let skip = history
        .iter()
        .position(|h| h["event"] == "machine:SKIP_STEP")
        .unwrap_or_else(|| panic!("no SKIP_STEP:\n{shown}"));
    assert_eq!(history[skip]["stateBefore"], "executing", "{shown}");
    assert_eq!(history[skip]["stateAfter"], "selecting", "{shown}");
    assert!(
        history[..skip]
            .iter()
            .any(|h| h["event"] == "phase" && detail_of(h).contains("Implement")),
        "the phase change comes with the skip:\n{shown}"
    );
    assert!(
        history[skip..]
            .iter()
            .any(|h| h["event"] == "machine:AGENT_SELECTED"),
        "the arbiter selects again after the skip:\n{shown}"
    );

    ed.request("rawko/cancelTask", json!({"taskId": task}))
        .expect("cancelTask");
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "cancelled", "{finished}");
    let err = assert_error(
        ed.request("rawko/skipStep", json!({"taskId": task})),
        -32003,
    );
    assert!(
        err["message"]
            .as_str()
            .is_some_and(|m| m.contains("cancelled")),
        "{err}"
    );
}

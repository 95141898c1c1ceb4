//! 1. Agents without a workflow hand the task over by their transitions.

use super::*;

// ---------------------------------------------------------------------------------------------
// 1. Agents without a workflow hand the task over by their transitions
// ---------------------------------------------------------------------------------------------

#[test]
fn without_a_workflow_the_starter_agents_run_planner_developer_tester_reviewer_then_complete() {
    let project = project_with_starter_agents();
    let script = project.script("four", FOUR_AGENTS_SCRIPT);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script, json!({}));
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "complete", "{finished}");
    // The reviewer's onSuccess is `complete`: its last words are the summary.
    assert_eq!(
        finished["summary"], "Approved: the change is small and tested.",
        "{finished}"
    );
    let notes = ed.notifications(&task);
    assert_eq!(
        streamed(&notes),
        "Plan: add the flag to greet.sh and a test.Implemented the flag.All tests pass.Approved: the change is small and tested."
    );

    let detail = get_task(&mut ed, &task);
    assert_eq!(detail["state"], "complete", "{detail:#}");
    assert!(detail.get("workflow").is_none(), "{detail:#}");
    assert_eq!(detail["breadcrumb"], json!([]), "{detail:#}");
    let history = history(&detail);
    let shown = show_history(&history);
    let machine = machine_entries(&history);
    let steps: Vec<String> = machine.iter().map(transition).collect();
    let handover = [
        "AGENT_COMPLETE executing→evaluating [agentSucceeded]",
        "ARBITER_DECISION evaluating→executing [shouldSelectMode]",
    ];
    let mut expected = vec![
        "START_TASK idle→selecting",
        "AGENT_SELECTED selecting→executing",
    ];
    for _ in 0..3 {
        expected.extend(handover);
    }
    expected.extend([
        "AGENT_COMPLETE executing→evaluating [agentSucceeded]",
        "ARBITER_DECISION evaluating→complete [isComplete]",
    ]);
    assert_eq!(steps, expected, "history:\n{shown}");

    // Who ran: the planner was selected first, then each decision named the next agent.
    let selected = &machine[1];
    assert!(
        detail_of(selected).contains("planner"),
        "the first AGENT_SELECTED should name the planner: {selected}\nhistory:\n{shown}"
    );
    let decisions: Vec<&Value> = machine
        .iter()
        .filter(|h| h["guard"] == "shouldSelectMode")
        .collect();
    for (decision, agent) in decisions.iter().zip(["developer", "tester", "reviewer"]) {
        assert!(
            detail_of(decision).contains(agent),
            "the decision should name {agent}: {decision}\nhistory:\n{shown}"
        );
    }
}

#[test]
fn get_task_while_an_agent_runs_shows_that_agent_in_the_history() {
    let project = project_with_starter_agents();
    let script = project.script(
        "slow-planner",
        &format!("turns:\n  - text: \"Still reading.\"\n    delay_ms: {SLOW_MS}\n"),
    );
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script, json!({}));
    let detail = wait_task(&mut ed, &task, "the planner's run", |d| {
        history(d)
            .iter()
            .any(|h| h["event"] == "machine:AGENT_SELECTED")
    });
    assert_eq!(detail["state"], "running", "{detail:#}");
    let history = history(&detail);
    let shown = show_history(&history);
    let last = machine_entries(&history)
        .pop()
        .expect("a machine transition");
    assert_eq!(last["event"], "machine:AGENT_SELECTED", "history:\n{shown}");
    assert_eq!(last["stateBefore"], "selecting", "history:\n{shown}");
    assert_eq!(last["stateAfter"], "executing", "history:\n{shown}");
    assert!(
        history.iter().any(|h| detail_of(h).contains("planner")),
        "the history of a running task should say which agent runs (the planner):\n{shown}"
    );
    ed.request("rawko/cancelTask", json!({"taskId": task}))
        .expect("cancelTask");
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "cancelled", "{finished}");
}

//! 4. Limits.

use super::*;

// ---------------------------------------------------------------------------------------------
// 4. Limits
// ---------------------------------------------------------------------------------------------

#[test]
fn an_agent_stopped_at_its_turn_limit_hands_over_by_on_max_iterations() {
    let project = project();
    project.write(
        ".rawko/agents/looper.yaml",
        "name: looper\nsystemPrompt: Keep looking around.\ntransitions:\n  onSuccess: complete\n  onMaxIterations: closer\nlimits:\n  maxIterations: 2\n",
    );
    project.write(
        ".rawko/agents/closer.yaml",
        "name: closer\nsystemPrompt: Wrap up.\ntools:\n  blocked: [Bash]\ntransitions:\n  onSuccess: complete\n",
    );
    let script = project.script(
        "looper",
        r#"
turns:
  - tool_calls:
      - {id: l1, name: Bash, input: {command: "echo one >> ledger.txt"}}
  - tool_calls:
      - {id: l2, name: Bash, input: {command: "echo two >> ledger.txt"}}
  - tool_calls:
      - {id: l3, name: Bash, input: {command: "echo three >> ledger.txt"}}
  - text: "Closed after the limit."
"#,
    );
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script, json!({"agent": "looper"}));
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "complete", "{finished}");
    assert_eq!(finished["summary"], "Closed after the limit.", "{finished}");
    // The looper made two turns; the third call was the closer's, which may not use Bash.
    let ledger = std::fs::read_to_string(project.path("ledger.txt")).unwrap_or_default();
    assert_eq!(ledger, "one\ntwo\n");
    let notes = ed.notifications(&task);
    let third = tool_result(&notes, "l3");
    assert_eq!(third["isError"], true, "{third}");
    assert!(
        text(&third).contains("not available to agent closer"),
        "{third}"
    );

    let history = history(&get_task(&mut ed, &task));
    let shown = show_history(&history);
    let limit_at = history
        .iter()
        .position(|h| h["event"] == "agent_limit")
        .unwrap_or_else(|| panic!("no agent_limit entry:\n{shown}"));
    assert!(
        detail_of(&history[limit_at]).contains("looper")
            && detail_of(&history[limit_at]).contains('2'),
        "{}",
        history[limit_at]
    );
    let after: Vec<&Value> = history[limit_at..]
        .iter()
        .filter(|h| {
            h["event"]
                .as_str()
                .is_some_and(|e| e.starts_with("machine:"))
        })
        .collect();
    assert!(after.len() >= 2, "history:\n{shown}");
    assert_eq!(after[0]["event"], "machine:AGENT_COMPLETE", "{shown}");
    assert_eq!(after[0]["guard"], "agentSucceeded", "{shown}");
    assert_eq!(after[1]["event"], "machine:ARBITER_DECISION", "{shown}");
    assert_eq!(after[1]["guard"], "shouldSelectMode", "{shown}");
    assert_eq!(after[1]["stateAfter"], "executing", "{shown}");
    let last = machine_entries(&history).pop().expect("a transition");
    assert_eq!(last["guard"], "isComplete", "{shown}");
}

#[test]
fn the_task_iteration_limit_completes_a_task_whose_agents_keep_handing_over() {
    let project = project();
    project.write(
        ".rawko/agents/ping.yaml",
        "name: ping\nsystemPrompt: Ping.\ntransitions:\n  onSuccess: pong\n",
    );
    project.write(
        ".rawko/agents/pong.yaml",
        "name: pong\nsystemPrompt: Pong.\ntransitions:\n  onSuccess: ping\n",
    );
    let script = project.script(
        "pingpong",
        "turns:\n  - text: \"Ping.\"\n  - text: \"Pong.\"\n  - text: \"Ping again.\"\n  - text: \"Pong again.\"\n",
    );
    let mut ed = serve(
        &project,
        json!({"countdownTickMillis": 20, "maxIterations": 2}),
    );
    let task = start(&mut ed, &script, json!({"agent": "ping"}));
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "complete", "{finished}");
    // MAX_ITERATIONS_SUMMARY in server/src/machine/transition.rs.
    assert_eq!(finished["summary"], "Max iterations reached", "{finished}");
    let notes = ed.notifications(&task);
    assert_eq!(streamed(&notes), "Ping.Pong.", "two agent runs, no third");

    let history = history(&get_task(&mut ed, &task));
    let shown = show_history(&history);
    let machine = machine_entries(&history);
    let last = machine.last().expect("a transition");
    assert_eq!(last["event"], "machine:ARBITER_DECISION", "{shown}");
    assert_eq!(last["stateBefore"], "evaluating", "{shown}");
    assert_eq!(last["stateAfter"], "complete", "{shown}");
    assert_eq!(last["guard"], "maxIterationsReached", "{shown}");
    assert_eq!(
        machine
            .iter()
            .filter(|h| h["stateAfter"] == "executing")
            .count(),
        2,
        "two runs:\n{shown}"
    );
}

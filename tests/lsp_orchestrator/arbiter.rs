//! 5. The model arbiter.

use super::*;

// ---------------------------------------------------------------------------------------------
// 5. The model arbiter
// ---------------------------------------------------------------------------------------------

fn model_arbiter() -> Value {
    json!({
        "countdownTickMillis": 20,
        "arbiter": {"type": "model", "provider": "scripted", "script": "arbiter.yaml"},
    })
}

#[test]
fn a_model_arbiter_chooses_the_agent_and_completes_the_task_with_its_summary() {
    let project = project_with_starter_agents();
    project.write(
        "arbiter.yaml",
        r#"
turns:
  - text: '{"decision":"SELECT_MODE","mode":"developer","reason":"a small change needs no plan"}'
  - text: '{"decision":"COMPLETE","summary":"The flag is in; nothing else to do."}'
"#,
    );
    let script = project.script(
        "developer",
        r#"
turns:
  - text: "Adding the flag."
    tool_calls:
      - {id: t1, name: Bash, input: {command: "touch shout.flag"}}
  - text: "Implemented the flag."
"#,
    );
    let mut ed = serve(&project, model_arbiter());
    let task = start(&mut ed, &script, json!({}));
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "complete", "{finished}");
    assert_eq!(
        finished["summary"], "The flag is in; nothing else to do.",
        "the summary is the arbiter's: {finished}"
    );
    // The developer ran (the planner, the default agent, may not run `touch`).
    let notes = ed.notifications(&task);
    let touch = tool_result(&notes, "t1");
    assert_eq!(touch["isError"], false, "{touch}");
    assert!(project.path("shout.flag").exists());
    let completion = notes_of(&notes, "rawko/output", Some("completion"));
    assert!(
        completion
            .iter()
            .any(|c| text(c).contains("The flag is in; nothing else to do.")),
        "{completion:#?}"
    );

    // The deterministic arbiter would have gone on to the tester; this one completed.
    let history = history(&get_task(&mut ed, &task));
    let shown = show_history(&history);
    let steps: Vec<String> = machine_entries(&history).iter().map(transition).collect();
    assert_eq!(
        steps,
        [
            "START_TASK idle→selecting",
            "AGENT_SELECTED selecting→executing",
            "AGENT_COMPLETE executing→evaluating [agentSucceeded]",
            "ARBITER_DECISION evaluating→complete [isComplete]",
        ],
        "history:\n{shown}"
    );
}

#[test]
fn an_unparseable_arbiter_answer_fails_the_task_naming_it() {
    let project = project_with_starter_agents();
    project.write(
        "arbiter.yaml",
        r#"
turns:
  - text: '{"decision":"SELECT_MODE","mode":"developer","reason":"start coding"}'
  - text: "Sure, let me think…"
"#,
    );
    let script = project.script("developer", "turns:\n  - text: \"Implemented.\"\n");
    let mut ed = serve(&project, model_arbiter());
    let task = start(&mut ed, &script, json!({}));
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "failed", "{finished}");
    let summary = finished["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("unparseable arbiter answer"),
        "the summary should name the unparseable answer: {finished}"
    );
    let notes = ed.notifications(&task);
    let errors = notes_of(&notes, "rawko/output", Some("error"));
    assert!(
        errors
            .iter()
            .any(|e| text(e).contains("unparseable arbiter answer")),
        "{errors:#?}"
    );

    let detail = get_task(&mut ed, &task);
    assert_eq!(detail["state"], "failed", "{detail:#}");
    let history = history(&detail);
    let shown = show_history(&history);
    let last = machine_entries(&history).pop().expect("a transition");
    // ARBITER_ERROR → error_handling (not recoverable, one failure of three) → failed.
    assert_eq!(last["event"], "machine:ARBITER_ERROR", "{shown}");
    assert_eq!(last["stateBefore"], "evaluating", "{shown}");
    assert_eq!(last["stateAfter"], "failed", "{shown}");
    assert!(
        last.get("guard").is_none(),
        "neither maxFailuresReached nor isRecoverableError: {last}"
    );
}

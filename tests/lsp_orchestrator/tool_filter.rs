//! 2. An agent's tool filter.

use super::*;

// ---------------------------------------------------------------------------------------------
// 2. An agent's tool filter
// ---------------------------------------------------------------------------------------------

#[test]
fn the_planner_may_not_write_nor_run_commands_outside_its_bash_filter() {
    let project = project_with_starter_agents();
    let script = project.script(
        "planner-tools",
        r#"
turns:
  - text: "Looking around."
    tool_calls:
      - {id: w1, name: Write, input: {path: plan.md, content: "the plan"}}
      - {id: b1, name: Bash, input: {command: "touch planner-was-here.txt"}}
      - {id: b2, name: Bash, input: {command: "ls"}}
  - text: "Plan: add the flag."
  - text: "Implemented."
  - text: "Tests pass."
  - text: "Approved."
"#,
    );
    let mut ed = serve(&project, fast());
    // An approval request would be answered "allow": the filter must refuse before any gate.
    ed.set_approval_policy(|_| Some("allow_once"));
    let task = start(&mut ed, &script, json!({}));
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "complete", "{finished}");
    let notes = ed.notifications(&task);

    let write = tool_result(&notes, "w1");
    assert_eq!(write["isError"], true, "{write}");
    assert_eq!(write["tool"], "Write", "{write}");
    assert!(
        text(&write).contains("the tool \"Write\" is not available to agent planner"),
        "{write}"
    );
    assert!(
        !project.path("plan.md").exists(),
        "the planner wrote a file"
    );

    let touch = tool_result(&notes, "b1");
    assert_eq!(touch["isError"], true, "{touch}");
    assert_eq!(
        text(&touch),
        "Command 'touch' is not allowed for agent planner",
        "{touch}"
    );
    assert!(
        !project.path("planner-was-here.txt").exists(),
        "a refused command ran"
    );

    let ls = tool_result(&notes, "b2");
    assert_eq!(ls["isError"], false, "{ls}");
    assert!(text(&ls).contains("README.md"), "{ls}");
    assert!(text(&ls).contains("greet.sh"), "{ls}");

    assert!(
        ed.approval_requests().is_empty(),
        "no approval is asked for a call the agent may not make: {:?}",
        ed.approval_requests()
    );
    // The calls were reported before their results, as any call is.
    let calls = notes_of(&notes, "rawko/output", Some("tool_call"));
    let ids: Vec<&str> = calls
        .iter()
        .filter_map(|c| c["toolCallId"].as_str())
        .collect();
    assert_eq!(ids, ["w1", "b1", "b2"]);
}

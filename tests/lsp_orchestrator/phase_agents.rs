//! 3. A workflow phase that names its agent.

use super::*;

// ---------------------------------------------------------------------------------------------
// 3. A workflow phase that names its agent
// ---------------------------------------------------------------------------------------------

/// A two-phase workflow whose second phase is the reviewer's, with a writer and a reviewer agent.
fn handover_project() -> Project {
    let project = project();
    project.write(
        ".rawko/workflows/handover/workflow.yaml",
        "name: Handover\ncommandName: handover\ninitialMessage: \"Do this: {description}\"\nphases:\n  - draft.md\n  - review.md\n",
    );
    project.write(
        ".rawko/workflows/handover/draft.md",
        "---\nid: draft\nname: Draft\nemoji: ✏️\n---\nWrite the first draft of: {description}\n",
    );
    project.write(
        ".rawko/workflows/handover/review.md",
        "---\nid: review\nname: Review\nemoji: 🔎\nagent: reviewer\ntools:\n  whitelist: [Read, Bash]\n---\nReview the draft; change nothing.\n",
    );
    project.write(
        ".rawko/agents/writer.yaml",
        "name: writer\nsystemPrompt: You write drafts.\ntransitions:\n  onSuccess: reviewer\n",
    );
    project.write(
        ".rawko/agents/reviewer.md",
        "---\nname: reviewer\ntools:\n  bashFilter:\n    allowedCommands: [ls, cat]\ntransitions:\n  onSuccess: complete\n  onFailure: writer\n---\n\n# Reviewer\n\n## System Prompt\n\nYou review drafts.\n",
    );
    project
}

#[test]
fn a_phase_with_an_agent_hands_the_task_to_that_agent_and_its_gate_still_applies() {
    let project = handover_project();
    let script = project.script(
        "handover",
        r#"
turns:
  - text: "Drafting."
    tool_calls:
      - {id: d1, name: Write, input: {path: draft.md, content: "draft"}}
  - tool_calls:
      - {id: s1, name: workflow_step, input: {action: next}}
  - text: "The draft is written."
  - text: "Reviewing."
    tool_calls:
      - {id: r1, name: Write, input: {path: review.md, content: "notes"}}
      - {id: r2, name: Bash, input: {command: "touch reviewed.txt"}}
      - {id: r3, name: Bash, input: {command: "cat draft.md"}}
  - tool_calls:
      - {id: s2, name: workflow_step, input: {action: next}}
  - text: "Reviewed: the draft is fine."
"#,
    );
    let mut ed = serve(&project, fast());
    ed.set_approval_policy(|_| Some("reject_once"));
    let task = start(
        &mut ed,
        &script,
        json!({"workflow": "handover", "agent": "writer"}),
    );
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "complete", "{finished}");
    let notes = ed.notifications(&task);

    // The writer drafted in the Draft phase, which restricts nothing.
    assert_eq!(tool_result(&notes, "d1")["isError"], false);
    assert_eq!(
        std::fs::read_to_string(project.path("draft.md"))
            .ok()
            .as_deref(),
        Some("draft")
    );
    // The Review phase's status came.
    let statuses = notes_of(&notes, "rawko/status", None);
    assert!(
        statuses
            .iter()
            .any(|s| text(s).starts_with("Handover > 🔎 Review [2/2]")),
        "{statuses:#?}"
    );

    // The reviewer ran the Review phase: its own Bash filter refused `touch`...
    let touch = tool_result(&notes, "r2");
    assert_eq!(touch["isError"], true, "{touch}");
    assert_eq!(
        text(&touch),
        "Command 'touch' is not allowed for agent reviewer"
    );
    assert!(!project.path("reviewed.txt").exists());
    assert_eq!(tool_result(&notes, "r3")["isError"], false);
    let cat = tool_result(&notes, "r3");
    assert!(text(&cat).starts_with("draft"), "{cat}");

    // ...and the phase's whitelist still gated Write: the editor was asked, and said no.
    let approvals = ed.approval_requests();
    assert_eq!(approvals.len(), 1, "{approvals:#?}");
    let asked = &approvals[0]["params"];
    assert_eq!(asked["taskId"], json!(task));
    assert_eq!(asked["tool"], "Write");
    assert_eq!(asked["toolCallId"], "r1");
    assert_eq!(asked["phase"], "Review");
    let write = tool_result(&notes, "r1");
    assert_eq!(write["isError"], true, "{write}");
    assert!(text(&write).contains("Review"), "{write}");
    assert!(!project.path("review.md").exists(), "a rejected Write ran");

    // The history: the phase changed, then the arbiter selected the reviewer.
    let history = history(&get_task(&mut ed, &task));
    let shown = show_history(&history);
    let phase_at = history
        .iter()
        .position(|h| h["event"] == "phase" && detail_of(h).contains("Review"))
        .unwrap_or_else(|| panic!("no phase change to Review:\n{shown}"));
    let selected: Vec<&Value> = history[phase_at..]
        .iter()
        .filter(|h| h["event"] == "machine:AGENT_SELECTED")
        .collect();
    assert_eq!(
        selected.len(),
        1,
        "one selection after the phase change:\n{shown}"
    );
    assert_eq!(selected[0]["stateBefore"], "selecting");
    assert_eq!(selected[0]["stateAfter"], "executing");
    assert!(
        detail_of(selected[0]).contains("reviewer"),
        "the selection after the phase change should name the reviewer: {}\nhistory:\n{shown}",
        selected[0]
    );
}

#[test]
fn a_new_agent_taking_over_is_announced_by_one_handoff_line_naming_it() {
    let project = handover_project();
    let script = project.script(
        "handoff",
        r#"
turns:
  - tool_calls:
      - {id: s1, name: workflow_step, input: {action: next}}
  - text: "The draft is written."
  - tool_calls:
      - {id: s2, name: workflow_step, input: {action: next}}
  - text: "Reviewed."
"#,
    );
    let mut ed = serve(&project, fast());
    let task = start(
        &mut ed,
        &script,
        json!({"workflow": "handover", "agent": "writer"}),
    );
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "complete", "{finished}");
    let notes = ed.notifications(&task);
    // The writer started (no handoff for the first agent); the reviewer took over once.
    let handoffs = notes_of(&notes, "rawko/output", Some("handoff"));
    assert_eq!(handoffs.len(), 1, "{handoffs:#?}");
    assert_eq!(text(&handoffs[0]), "── handoff: writer → reviewer ──");
    assert_eq!(handoffs[0]["agent"], "reviewer");
    // It comes between the writer's last words and the reviewer's first.
    let order: Vec<String> = notes
        .iter()
        .filter(|m| m["method"] == "rawko/output")
        .filter_map(|m| match m["params"]["kind"].as_str() {
            Some("handoff") => Some("handoff".to_owned()),
            Some("assistant_delta") => Some(text(&m["params"]).to_owned()),
            _ => None,
        })
        .collect();
    let at = |what: &str| {
        order
            .iter()
            .position(|o| o.contains(what))
            .unwrap_or_else(|| panic!("no {what:?} in {order:?}"))
    };
    assert!(at("written.") < at("handoff"), "{order:?}");
    assert!(at("handoff") < at("Reviewed"), "{order:?}");
}

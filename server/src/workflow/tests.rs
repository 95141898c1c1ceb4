//! Tests of the pure workflow core: navigation rules, the gate, the texts and the persisted
//! record. Sets are built in memory from a compact description, so each test shows the shape it
//! exercises.

use std::path::PathBuf;

use expect_test::{expect, Expect};
use indexmap::IndexMap;
use serde_json::json;

use super::definition::*;
use super::gate::{check, GateDecision};
use super::persist::{RecordError, WorkflowRecord};
use super::state::{CancelOutcome, Movement, NavError, PathSegment, WorkflowState};
use super::step::{execute, parse_input, ResultType, StepAction};
use super::texts::{breadcrumb_text, iso_timestamp, resolve_template, session_name};

/// One workflow: key, name and entries; an entry `@key` is a subworkflow, anything else a phase
/// whose id is the entry and whose name is the entry capitalised.
struct Wf<'a> {
    key: &'a str,
    name: &'a str,
    entries: &'a [&'a str],
    loopable: bool,
    show: Show,
}

fn wf<'a>(key: &'a str, name: &'a str, entries: &'a [&'a str]) -> Wf<'a> {
    Wf {
        key,
        name,
        entries,
        loopable: true,
        show: Show::User,
    }
}

fn phase(id: &str) -> PhaseDefinition {
    let mut name = id.to_owned();
    if let Some(first) = name.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    PhaseDefinition {
        id: id.to_owned(),
        name,
        emoji: "🔹".to_owned(),
        tools: None,
        available_profiles: Vec::new(),
        agent: None,
        instructions: format!("Do {id}."),
        file: PathBuf::from(format!("/wf/{id}.md")),
    }
}

fn definition(w: &Wf<'_>) -> WorkflowDefinition {
    WorkflowDefinition {
        key: w.key.to_owned(),
        name: w.name.to_owned(),
        command_name: w.key.to_owned(),
        initial_message: "Start: {description}".to_owned(),
        phases: w
            .entries
            .iter()
            .map(|e| match e.strip_prefix('@') {
                Some(k) => PhaseEntry::Subworkflow(k.to_owned()),
                None => PhaseEntry::Phase(phase(e)),
            })
            .collect(),
        show: w.show,
        loopable: w.loopable,
        session_name_prefix: "Workflow: ".to_owned(),
        session_name_max_length: 50,
        role_instruction: None,
        advance_reminder: None,
        block_reason_template: None,
        completion_message: None,
        not_done_reminder: None,
        dir: PathBuf::from(format!("/wf/{}", w.key)),
        root: WorkflowRoot {
            kind: RootKind::Project,
            path: PathBuf::from("/wf"),
        },
        fingerprint: format!("fp-{}", w.key),
    }
}

fn set_of(workflows: &[Wf<'_>]) -> WorkflowSet {
    let mut map = IndexMap::new();
    for w in workflows {
        map.insert(w.key.to_owned(), definition(w));
    }
    WorkflowSet::from_map(map)
}

fn start(set: &WorkflowSet, key: &str) -> WorkflowState {
    WorkflowState::start(set, key, "Ship it", "task-1", 1_700_000_000_000).expect("start")
}

/// The path as `key:index` pairs, the innermost last.
fn path(state: &WorkflowState) -> String {
    state
        .current_path
        .iter()
        .map(|s| format!("{}:{}", s.workflow_key, s.phase_index))
        .collect::<Vec<_>>()
        .join(" / ")
}

fn crumb(state: &WorkflowState, set: &WorkflowSet) -> String {
    state
        .resolve(set)
        .map(|a| a.breadcrumb_text())
        .unwrap_or_else(|| "(inactive)".to_owned())
}

/// Calls `next` until DONE and lists every position visited, with how it was reached.
fn walk(set: &WorkflowSet, key: &str) -> Vec<String> {
    let mut state = start(set, key);
    let mut seen = vec![format!("start  {}  ({})", crumb(&state, set), path(&state))];
    for _ in 0..50 {
        let step = state.advance(set).expect("advance");
        let how = match step.movement {
            Movement::Advanced => "next",
            Movement::Entered => "enter",
            Movement::Exited => "exit",
            Movement::Done => "done",
        };
        if step.movement == Movement::Done {
            seen.push(format!(
                "done   after {} (step {})",
                step.from, step.state.global_step_count
            ));
            assert!(!step.state.active);
            return seen;
        }
        state = step.state;
        seen.push(format!(
            "{how:<6} {}  ({})",
            crumb(&state, set),
            path(&state)
        ));
    }
    panic!("workflow {key} never finished");
}

fn check_walk(set: &WorkflowSet, key: &str, expect: Expect) {
    expect.assert_eq(&walk(set, key).join("\n"));
}

#[test]
fn linear_workflow_runs_to_done() {
    let set = set_of(&[wf("lin", "Linear", &["a", "b", "c"])]);
    check_walk(
        &set,
        "lin",
        expect![[r#"
            start  Linear > 🔹 A [1/3]  (lin:0)
            next   Linear > 🔹 B [2/3]  (lin:1)
            next   Linear > 🔹 C [3/3]  (lin:2)
            done   after C (step 3)"#]],
    );
}

#[test]
fn subworkflow_as_first_phase_is_entered_at_start() {
    let set = set_of(&[
        wf("root", "Root", &["@sub", "z"]),
        wf("sub", "Sub", &["a", "b"]),
    ]);
    check_walk(
        &set,
        "root",
        expect![[r#"
            start  Root > Sub [1/2] > 🔹 A [1/2]  (root:0 / sub:0)
            next   Root > Sub [1/2] > 🔹 B [2/2]  (root:0 / sub:1)
            exit   Root > 🔹 Z [2/2]  (root:1)
            done   after Z (step 3)"#]],
    );
}

#[test]
fn subworkflow_as_parents_last_phase_finishes_the_workflow() {
    let set = set_of(&[
        wf("root", "Root", &["a", "@sub"]),
        wf("sub", "Sub", &["b", "c"]),
    ]);
    check_walk(
        &set,
        "root",
        expect![[r#"
            start  Root > 🔹 A [1/2]  (root:0)
            enter  Root > Sub [2/2] > 🔹 B [1/2]  (root:1 / sub:0)
            next   Root > Sub [2/2] > 🔹 C [2/2]  (root:1 / sub:1)
            done   after C (step 3)"#]],
    );
}

#[test]
fn three_levels_deep_enter_and_pop_out_of_all() {
    let set = set_of(&[
        wf("root", "Release", &["a", "@l1", "z"]),
        wf("l1", "Review", &["b", "@l2"]),
        wf("l2", "Checks", &["c", "d"]),
    ]);
    check_walk(
        &set,
        "root",
        expect![[r#"
            start  Release > 🔹 A [1/3]  (root:0)
            enter  Release > Review [2/3] > 🔹 B [1/2]  (root:1 / l1:0)
            enter  Release > Review [2/3] > Checks [2/2] > 🔹 C [1/2]  (root:1 / l1:1 / l2:0)
            next   Release > Review [2/3] > Checks [2/2] > 🔹 D [2/2]  (root:1 / l1:1 / l2:1)
            exit   Release > 🔹 Z [3/3]  (root:2)
            done   after Z (step 5)"#]],
    );
}

#[test]
fn nested_first_entries_are_entered_in_one_move() {
    let set = set_of(&[
        wf("root", "Root", &["a", "@l1"]),
        wf("l1", "One", &["@l2"]),
        wf("l2", "Two", &["@l3"]),
        wf("l3", "Three", &["x"]),
    ]);
    check_walk(
        &set,
        "root",
        expect![[r#"
            start  Root > 🔹 A [1/2]  (root:0)
            enter  Root > One [2/2] > Two [1/1] > Three [1/1] > 🔹 X [1/1]  (root:1 / l1:0 / l2:0 / l3:0)
            done   after X (step 2)"#]],
    );
}

#[test]
fn a_finished_subworkflow_leads_straight_into_the_next_one() {
    let set = set_of(&[
        wf("root", "Root", &["@s1", "@s2"]),
        wf("s1", "First", &["a"]),
        wf("s2", "Second", &["b"]),
    ]);
    check_walk(
        &set,
        "root",
        expect![[r#"
            start  Root > First [1/2] > 🔹 A [1/1]  (root:0 / s1:0)
            exit   Root > Second [2/2] > 🔹 B [1/1]  (root:1 / s2:0)
            done   after B (step 2)"#]],
    );
}

#[test]
fn loop_inside_a_subworkflow_resets_only_that_scope() {
    let set = set_of(&[
        wf("root", "Root", &["a", "@sub", "z"]),
        wf("sub", "Sub", &["b", "c", "d"]),
    ]);
    let mut s = start(&set, "root");
    for _ in 0..3 {
        s = s.advance(&set).unwrap().state;
    }
    assert_eq!(path(&s), "root:1 / sub:2");
    let looped = s.loop_scope(&set).unwrap();
    assert_eq!(path(&looped), "root:1 / sub:0");
    assert_eq!(looped.global_step_count, s.global_step_count + 1);
    assert_eq!(crumb(&looped, &set), "Root > Sub [2/3] > 🔹 B [1/3]");
}

#[test]
fn loop_at_the_root_enters_a_leading_subworkflow() {
    let set = set_of(&[wf("root", "Root", &["@sub", "z"]), wf("sub", "Sub", &["a"])]);
    let s = start(&set, "root").advance(&set).unwrap().state;
    assert_eq!(path(&s), "root:1");
    let looped = s.loop_scope(&set).unwrap();
    assert_eq!(path(&looped), "root:0 / sub:0");
}

#[test]
fn loop_is_refused_when_the_innermost_scope_is_not_loopable() {
    let mut sub = wf("sub", "Sub", &["b", "c"]);
    sub.loopable = false;
    let set = set_of(&[wf("root", "Root", &["a", "@sub"]), sub]);
    let inside = start(&set, "root").advance(&set).unwrap().state;
    assert_eq!(inside.loop_scope(&set), Err(NavError::NotLoopable));
    // The root is loopable, and only the innermost scope's setting counts.
    assert!(start(&set, "root").loop_scope(&set).is_ok());

    let result = execute(Some(&inside), &set, StepAction::Loop);
    assert_eq!(result.result_type, ResultType::Error);
    assert_eq!(result.text, "⚠️ Looping is disabled for this workflow.");
    assert!(result.state.is_none());
}

#[test]
fn loop_in_a_non_loopable_root_is_refused_even_if_subworkflows_loop() {
    let mut root = wf("root", "Root", &["a", "@sub"]);
    root.loopable = false;
    let set = set_of(&[root, wf("sub", "Sub", &["b"])]);
    let s = start(&set, "root");
    assert_eq!(s.loop_scope(&set), Err(NavError::NotLoopable));
    let inside = s.advance(&set).unwrap().state;
    assert!(inside.loop_scope(&set).is_ok());
}

#[test]
fn cancel_takes_two_calls() {
    let set = set_of(&[wf("lin", "Linear", &["a", "b"])]);
    let s = start(&set, "lin");
    let CancelOutcome::ConfirmationNeeded(armed) = s.cancel().unwrap() else {
        panic!("first cancel must ask for confirmation");
    };
    assert!(armed.active && armed.cancel_pending);
    let CancelOutcome::Cancelled(done) = armed.cancel().unwrap() else {
        panic!("second cancel must cancel");
    };
    assert!(!done.active && done.cancelled && !done.completion_notified);
    assert_eq!(done.cancel(), Err(NavError::NotActive));
}

#[test]
fn another_move_between_the_two_cancels_disarms_the_confirmation() {
    let set = set_of(&[wf("lin", "Linear", &["a", "b", "c"])]);
    let first = execute(Some(&start(&set, "lin")), &set, StepAction::Cancel);
    assert_eq!(first.result_type, ResultType::Cancel);
    assert!(first
        .text
        .starts_with("⚠️ **Confirm cancellation** of workflow \"Ship it\"?"));
    let armed = first.state.unwrap();
    let moved = execute(Some(&armed), &set, StepAction::Next).state.unwrap();
    let again = execute(Some(&moved), &set, StepAction::Cancel);
    assert!(
        again.text.contains("Confirm cancellation"),
        "{}",
        again.text
    );
    let done = execute(again.state.as_ref(), &set, StepAction::Cancel);
    assert_eq!(done.text, "Workflow cancelled: \"Ship it\"");
    assert!(done.state.unwrap().cancelled);
}

#[test]
fn the_confirmation_is_never_persisted() {
    let set = set_of(&[wf("lin", "Linear", &["a"])]);
    let CancelOutcome::ConfirmationNeeded(armed) = start(&set, "lin").cancel().unwrap() else {
        panic!()
    };
    let record = WorkflowRecord::new(&armed, &set);
    let back = WorkflowRecord::from_json(&record.to_json()).unwrap();
    assert!(!back.state.cancel_pending);
}

#[test]
fn next_after_done_says_there_is_no_active_workflow() {
    let set = set_of(&[wf("lin", "Linear", &["a"])]);
    let done = start(&set, "lin").advance(&set).unwrap();
    assert_eq!(done.movement, Movement::Done);
    assert_eq!(done.to, None);
    assert_eq!(done.state.advance(&set), Err(NavError::NotActive));
    let result = execute(Some(&done.state), &set, StepAction::Next);
    assert_eq!(
        result.text,
        "No active workflow. Use /workflow {name} {description} to start one."
    );
    assert!(result.state.is_none());
    assert_eq!(
        execute(None, &set, StepAction::Loop).text,
        "No active workflow to loop."
    );
    assert_eq!(
        execute(None, &set, StepAction::Cancel).text,
        "No active workflow to cancel."
    );
}

#[test]
fn step_tool_next_texts() {
    let set = set_of(&[
        wf("root", "Root", &["a", "@sub", "z"]),
        wf("sub", "Review", &["b"]),
    ]);
    let s = start(&set, "root");
    let entered = execute(Some(&s), &set, StepAction::Next);
    expect![[r#"
        ✓ Entered subworkflow 'Review': A → 🔹 B
        Previous: A | Current: 🔹 B | Next: DONE

        **What to do in B:**
        Do b."#]]
    .assert_eq(&entered.text);
    let exited = execute(entered.state.as_ref(), &set, StepAction::Next);
    expect![[r#"
        ✓ Exited subworkflow, returning to Root: B → 🔹 Z
        Previous: B | Current: 🔹 Z | Next: DONE

        **What to do in Z:**
        Do z."#]]
    .assert_eq(&exited.text);
    let done = execute(exited.state.as_ref(), &set, StepAction::Next);
    assert_eq!(done.result_type, ResultType::Complete);
    assert_eq!(
        done.text,
        "✓ Advanced: Z → DONE\n\n🎉 **All phases complete!**"
    );
    assert!(!done.state.unwrap().active);
}

#[test]
fn step_tool_status_and_loop_texts() {
    let set = set_of(&[
        wf("root", "Root", &["a", "@sub"]),
        wf("sub", "Review", &["b", "c"]),
    ]);
    let s = start(&set, "root").advance(&set).unwrap().state;
    let s = s.advance(&set).unwrap().state;
    let status = execute(Some(&s), &set, StepAction::Status);
    assert!(status.state.is_none());
    expect![[r#"
        **Workflow:** Root (root)
        **Task ID:** task-1
        **Description:** Ship it
        **Path:** Root > Review
        **Phase:** 🔹 C [2/2] (step 2)
        **Started:** 2023-11-14T22:13:20.000Z

        **What to do:**
        Do c.

        **Available profiles:** (none)"#]]
    .assert_eq(&status.text);
    let looped = execute(Some(&s), &set, StepAction::Loop);
    expect![[r#"
        🔄 Looped 'Review' back to: 🔹 B

        **What to do in B:**
        Do b."#]]
    .assert_eq(&looped.text);
}

#[test]
fn step_tool_input_is_checked() {
    assert_eq!(
        parse_input(&json!({"action": "next"})),
        Ok(StepAction::Next)
    );
    assert_eq!(
        parse_input(&json!({"action": "loop", "summary": "x"})),
        Ok(StepAction::Loop)
    );
    assert_eq!(
        parse_input(&json!({"action": "jump"})),
        Err("Unknown action: jump".to_owned())
    );
    assert!(parse_input(&json!({}))
        .unwrap_err()
        .contains("needs an \"action\""));
    assert!(parse_input(&json!({"action": 3}))
        .unwrap_err()
        .contains("must be a string"));
    assert!(parse_input(&json!("next")).is_err());
}

#[test]
fn starting_checks_the_workflow() {
    let mut sub = wf("sub", "Sub", &["a"]);
    sub.show = Show::Workflows;
    let set = set_of(&[wf("root", "Root", &["@sub"]), sub]);
    assert_eq!(
        WorkflowState::start(&set, "nope", "", "t", 0),
        Err(NavError::UnknownWorkflow("nope".to_owned()))
    );
    assert_eq!(
        WorkflowState::start(&set, "sub", "", "t", 0),
        Err(NavError::SubworkflowOnly("sub".to_owned()))
    );
    let s = WorkflowState::start(&set, "root", "d", "t", 5).unwrap();
    assert!(s.active && !s.cancelled && !s.completion_notified);
    assert_eq!(s.global_step_count, 0);
    assert_eq!((s.task_id.as_str(), s.started_at), ("t", 5));
}

#[test]
fn a_state_that_no_longer_fits_is_stale_not_a_panic() {
    let set = set_of(&[wf("lin", "Linear", &["a", "b"])]);
    let mut s = start(&set, "lin");
    s.current_path[0].phase_index = 7;
    assert!(s.resolve(&set).is_none());
    assert_eq!(s.advance(&set), Err(NavError::Stale("lin".to_owned())));
    assert_eq!(
        check(Some(&s), &set, "Write", &NO_INPUT),
        GateDecision::Allow
    );
    let status = execute(Some(&s), &set, StepAction::Status);
    assert_eq!(status.result_type, ResultType::Error);
    s.current_path = vec![PathSegment {
        workflow_key: "gone".to_owned(),
        phase_index: 0,
    }];
    assert!(s.resolve(&set).is_none());
    assert_eq!(
        execute(Some(&s), &set, StepAction::Next).text,
        "Workflow definition 'lin' not found."
    );
}

#[test]
fn a_foreign_state_pointing_at_a_subworkflow_entry_is_understood() {
    // pi-workflows' loop leaves the path on a subworkflow entry without entering it.
    let set = set_of(&[
        wf("root", "Root", &["@sub", "z"]),
        wf("sub", "Sub", &["a", "b"]),
    ]);
    let mut s = start(&set, "root");
    s.current_path.truncate(1);
    assert_eq!(crumb(&s, &set), "Root > Sub [1/2] > 🔹 A [1/2]");
    let next = s.advance(&set).unwrap();
    assert_eq!(path(&next.state), "root:0 / sub:1");
    assert_eq!(next.from, "A");
}

// ── Gate ──

static NO_INPUT: serde_json::Value = serde_json::Value::Null;

fn gated_set(tools: Option<ToolPolicy>) -> WorkflowSet {
    let w = wf("wf", "Flow", &["read"]);
    let mut def = definition(&w);
    if let PhaseEntry::Phase(p) = &mut def.phases[0] {
        p.tools = tools;
        p.name = "Research".to_owned();
    }
    WorkflowSet::from_map(IndexMap::from([("wf".to_owned(), def)]))
}

#[test]
fn gate_whitelist_blacklist_and_case() {
    let white = gated_set(Some(ToolPolicy::Whitelist(vec![
        "Read".into(),
        "grep".into(),
    ])));
    let s = start(&white, "wf");
    assert!(check(Some(&s), &white, "Read", &NO_INPUT).is_allowed());
    assert!(check(Some(&s), &white, "read", &NO_INPUT).is_allowed());
    assert!(check(Some(&s), &white, "GREP", &NO_INPUT).is_allowed());
    assert!(!check(Some(&s), &white, "Write", &NO_INPUT).is_allowed());
    assert!(check(Some(&s), &white, "workflow_step", &NO_INPUT).is_allowed());
    assert!(check(Some(&s), &white, "Workflow_Step", &NO_INPUT).is_allowed());

    let black = gated_set(Some(ToolPolicy::Blacklist(vec![
        "Write".into(),
        "Bash".into(),
    ])));
    let s = start(&black, "wf");
    assert!(check(Some(&s), &black, "Read", &NO_INPUT).is_allowed());
    assert!(!check(Some(&s), &black, "bash", &NO_INPUT).is_allowed());
    assert!(!check(Some(&s), &black, "WRITE", &NO_INPUT).is_allowed());

    let open = gated_set(None);
    let s = start(&open, "wf");
    assert!(check(Some(&s), &open, "Anything", &NO_INPUT).is_allowed());
    assert!(check(None, &open, "Write", &NO_INPUT).is_allowed());
}

#[test]
fn gate_block_reason_default_and_template() {
    let set = gated_set(Some(ToolPolicy::Whitelist(vec!["Read".into()])));
    let s = start(&set, "wf");
    expect![[r#"
        Block { reason: "[workflow] The tool \"Write\" is blocked during the Research phase.\nRefer to the current phase instructions for allowed tools and approaches.\nWhen finished, call workflow_step to advance to the next phase.", phase: "Research" }"#]]
    .assert_eq(&format!("{:?}", check(Some(&s), &set, "Write", &NO_INPUT)));

    let mut set = gated_set(Some(ToolPolicy::Blacklist(vec![
        "Write".into(),
        "Edit".into(),
    ])));
    let mut def = set.get("wf").unwrap().clone();
    def.block_reason_template = Some(
        "{workflowName}/{phaseName}: no {toolName}; you may use {allowedTools}. {unknown}".into(),
    );
    set = WorkflowSet::from_map(IndexMap::from([("wf".to_owned(), def)]));
    let s = start(&set, "wf");
    let GateDecision::Block { reason, .. } = check(Some(&s), &set, "Edit", &NO_INPUT) else {
        panic!("Edit must be blocked")
    };
    assert_eq!(
        reason,
        "Flow/Research: no Edit; you may use all except: Write, Edit. {unknown}"
    );
}

#[test]
fn gate_follows_the_phase() {
    let mut set = set_of(&[wf("wf", "Flow", &["plan", "build"])]);
    let mut def = set.get("wf").unwrap().clone();
    if let PhaseEntry::Phase(p) = &mut def.phases[0] {
        p.tools = Some(ToolPolicy::Whitelist(vec!["Read".into()]));
    }
    set = WorkflowSet::from_map(IndexMap::from([("wf".to_owned(), def)]));
    let s = start(&set, "wf");
    assert!(!check(Some(&s), &set, "Write", &NO_INPUT).is_allowed());
    let s = s.advance(&set).unwrap().state;
    assert!(check(Some(&s), &set, "Write", &NO_INPUT).is_allowed());
}

// ── Gate: rule patterns and the shell ──

/// A one-phase workflow whose phase is called `name` and carries `tools`.
fn phase_set(name: &str, tools: Option<ToolPolicy>) -> WorkflowSet {
    let w = wf("wf", "Flow", &["p"]);
    let mut def = definition(&w);
    if let PhaseEntry::Phase(p) = &mut def.phases[0] {
        p.tools = tools;
        p.name = name.to_owned();
    }
    WorkflowSet::from_map(IndexMap::from([("wf".to_owned(), def)]))
}

fn white(rules: &[&str]) -> Option<ToolPolicy> {
    Some(ToolPolicy::Whitelist(
        rules.iter().map(|r| ToolRule::parse(r).expect(r)).collect(),
    ))
}

fn black(rules: &[&str]) -> Option<ToolPolicy> {
    Some(ToolPolicy::Blacklist(
        rules.iter().map(|r| ToolRule::parse(r).expect(r)).collect(),
    ))
}

fn bash(set: &WorkflowSet, command: &str) -> GateDecision {
    let s = start(set, "wf");
    check(Some(&s), set, "Bash", &json!({ "command": command }))
}

fn file_call(set: &WorkflowSet, tool: &str, input: serde_json::Value) -> GateDecision {
    let s = start(set, "wf");
    check(Some(&s), set, tool, &input)
}

fn reason(decision: GateDecision) -> String {
    match decision {
        GateDecision::Block { reason, .. } => reason,
        GateDecision::Allow => panic!("expected a block"),
    }
}

#[test]
fn read_only_whitelist_blocks_writing_bash() {
    let set = phase_set("Plan", white(&["Read", "Grep", "Bash"]));
    for command in [
        "cat > x",
        "echo hi | tee f",
        "sed -i s/a/b/ f.txt",
        "git commit -m x",
        "npm install",
        "ls && rm -rf x",
        "bash -c 'touch x'",
        "echo $(rm x)",
    ] {
        assert!(
            !bash(&set, command).is_allowed(),
            "{command:?} must be blocked"
        );
    }
    for command in [
        "ls",
        "git status",
        "cargo test",
        "grep -r x src | head",
        "cat > /dev/null",
    ] {
        assert!(bash(&set, command).is_allowed(), "{command:?} must run");
    }
    // The tool name is case-insensitive, the reason names the command, the reason and the phase.
    let s = start(&set, "wf");
    let decision = check(
        Some(&s),
        &set,
        "bash",
        &json!({"command": "sed -i s/a/b/ f.txt"}),
    );
    assert_eq!(
        decision,
        GateDecision::Block {
            reason: "[workflow] \"sed -i s/a/b/ f.txt\" writes files (sed -i edits in place), and the Plan phase does not allow writing.".to_owned(),
            phase: "Plan".to_owned(),
        }
    );
    assert_eq!(
        reason(bash(&set, "ls\ncat > notes.md <<EOF\nhello\nEOF")),
        "[workflow] \"ls …\" writes files (> writes to notes.md), and the Plan phase does not allow writing."
    );
    // Other tools keep the plain rules.
    assert!(check(Some(&s), &set, "Read", &json!({"path": "a"})).is_allowed());
    assert!(!check(Some(&s), &set, "Write", &json!({"path": "a"})).is_allowed());
}

#[test]
fn a_bash_rule_in_the_whitelist_lets_that_command_write() {
    let set = phase_set("Plan", white(&["Read", "Bash", "Bash(git commit*)"]));
    assert!(bash(&set, "git commit -m x").is_allowed());
    assert!(bash(&set, "git commit --amend --no-edit").is_allowed());
    assert!(bash(&set, "git status && git commit -m x").is_allowed());
    assert!(bash(&set, "ls").is_allowed());
    assert!(!bash(&set, "rm -rf x").is_allowed());
    assert!(!bash(&set, "git push").is_allowed());
    assert_eq!(
        reason(bash(&set, "git commit -m x && rm -rf x")),
        "[workflow] \"git commit -m x && rm -rf x\" writes files (rm removes files), and the Plan phase does not allow writing."
    );

    // Only patterns, no plain `Bash`: every part of the command must match one.
    let set = phase_set(
        "Plan",
        white(&["Read", "Bash(git commit*)", "Bash(git status)"]),
    );
    assert!(bash(&set, "git commit -m x").is_allowed());
    assert!(bash(&set, "git status; git commit -m x").is_allowed());
    assert!(!bash(&set, "ls").is_allowed());
    assert!(!bash(&set, "rm -rf x").is_allowed());
    assert_eq!(
        reason(bash(&set, "git commit -m x && rm -rf x")),
        "[workflow] \"rm -rf x\" (part of \"git commit -m x && rm -rf x\") is not a command the Plan phase allows; it allows Bash only as Bash(git commit*), Bash(git status)."
    );

    // Claude Code's prefix form.
    let set = phase_set("Plan", white(&["Bash(npm run test:*)"]));
    assert!(bash(&set, "npm run test").is_allowed());
    assert!(bash(&set, "npm run test -- --watch=false").is_allowed());
    assert!(!bash(&set, "npm run testing").is_allowed());

    // Inline interpreters count as writing unless the phase allows them by name.
    let set = phase_set("Plan", white(&["Bash", "Bash(python3 -c *)"]));
    assert!(bash(&set, "python3 -c 'print(1)'").is_allowed());
    assert!(!bash(&set, "node -e 'console.log(1)'").is_allowed());
}

#[test]
fn path_rules_match_the_calls_path() {
    let set = phase_set("Docs", white(&["Read", "Edit(docs/**)"]));
    for path in [
        "docs/a.md",
        "./docs/a.md",
        "docs/sub/b.md",
        "docs",
        "x/../docs/a.md",
    ] {
        let call = file_call(
            &set,
            "Edit",
            json!({"path": path, "old_text": "a", "new_text": "b"}),
        );
        assert!(call.is_allowed(), "Edit of {path:?} must run");
    }
    assert!(file_call(&set, "edit", json!({"file_path": "docs/a.md"})).is_allowed());
    for path in [
        "src/b.rs",
        "docs.md",
        "docs/../src/b.rs",
        "../docs/a.md",
        "/ws/docs/a.md",
    ] {
        let call = file_call(&set, "Edit", json!({"path": path}));
        assert!(!call.is_allowed(), "Edit of {path:?} must be blocked");
    }
    assert_eq!(
        reason(file_call(&set, "Edit", json!({"path": "src/b.rs"}))),
        "[workflow] Edit of \"src/b.rs\" is blocked during the Docs phase, which allows Edit only as Edit(docs/**)."
    );
    assert_eq!(
        reason(file_call(&set, "Edit", json!({}))),
        "[workflow] Edit without a path is blocked during the Docs phase, which allows Edit only as Edit(docs/**)."
    );
    // Write is not listed at all: the usual reason.
    assert!(
        reason(file_call(&set, "Write", json!({"path": "docs/a.md"})))
            .starts_with("[workflow] The tool \"Write\" is blocked during the Docs phase.")
    );

    let set = phase_set("Docs", white(&["Read", "Write(*.md)"]));
    for path in ["a.md", "docs/a.md", "./deep/er/c.md"] {
        assert!(
            file_call(&set, "Write", json!({"path": path})).is_allowed(),
            "{path:?}"
        );
    }
    for path in ["src/b.rs", "a.md.rs", "md"] {
        assert!(
            !file_call(&set, "Write", json!({"path": path})).is_allowed(),
            "{path:?}"
        );
    }
    // Writing is allowed only for some paths, so writing Bash commands are not.
    let set = phase_set("Docs", white(&["Bash", "Write(*.md)", "Edit"]));
    assert!(!bash(&set, "echo x > notes.md").is_allowed());

    let set = phase_set("Code", white(&["Read(src/**)", "Read(/Cargo.toml)"]));
    assert!(file_call(&set, "Read", json!({"path": "src/lib.rs"})).is_allowed());
    assert!(file_call(&set, "Read", json!({"path": "Cargo.toml"})).is_allowed());
    assert!(!file_call(&set, "Read", json!({"path": "server/Cargo.toml"})).is_allowed());
    assert!(!file_call(&set, "Read", json!({"path": ".env"})).is_allowed());
}

#[test]
fn a_blacklist_of_write_and_edit_also_blocks_writing_bash() {
    let set = phase_set("Review", black(&["Write", "Edit"]));
    assert!(!bash(&set, "rm -rf x").is_allowed());
    assert!(!bash(&set, "cat > x").is_allowed());
    assert!(!bash(&set, "git commit -m x").is_allowed());
    assert!(bash(&set, "ls").is_allowed());
    assert!(bash(&set, "cargo test 2>&1 | tail").is_allowed());
    assert!(!file_call(&set, "Write", json!({"path": "a"})).is_allowed());
    assert!(file_call(&set, "Read", json!({"path": "a"})).is_allowed());
    assert_eq!(
        reason(bash(&set, "rm -rf x")),
        "[workflow] \"rm -rf x\" writes files (rm removes files), and the Review phase does not allow writing."
    );
    // Either one is enough.
    let set = phase_set("Review", black(&["Write"]));
    assert!(!bash(&set, "touch x").is_allowed());
    assert!(file_call(&set, "Edit", json!({"path": "a"})).is_allowed());

    // Patterns in a blacklist block what they match, and only that.
    let set = phase_set("Review", black(&["Bash(rm *)", "Read(secrets/**)"]));
    assert!(!bash(&set, "rm -rf x").is_allowed());
    assert!(!bash(&set, "ls && rm x").is_allowed());
    assert!(bash(&set, "ls").is_allowed());
    assert!(
        bash(&set, "touch x").is_allowed(),
        "Write and Edit are allowed here"
    );
    assert_eq!(
        reason(bash(&set, "ls && rm x")),
        "[workflow] \"ls && rm x\" matches Bash(rm *), which the Review phase blocks."
    );
    assert!(!file_call(&set, "Read", json!({"path": "secrets/key"})).is_allowed());
    assert!(!file_call(&set, "Read", json!({"path": "/home/me/ws/secrets/key"})).is_allowed());
    assert!(file_call(&set, "Read", json!({"path": "src/key.rs"})).is_allowed());

    // A blacklisted Edit pattern restricts writing, so writing Bash is blocked too.
    let set = phase_set("Review", black(&["Edit(src/**)"]));
    assert!(!file_call(&set, "Edit", json!({"path": "src/a.rs"})).is_allowed());
    assert!(file_call(&set, "Edit", json!({"path": "docs/a.md"})).is_allowed());
    assert!(!bash(&set, "sed -i s/a/b/ docs/a.md").is_allowed());
}

#[test]
fn every_way_of_editing_is_an_edit_to_the_gate() {
    // Claude Code's MultiEdit and NotebookEdit, and pi's lower-case names, are what a rule for
    // Edit or Write stands for.
    for list in [&["Write", "Edit"][..], &["write", "edit"][..]] {
        let set = phase_set("Review", black(list));
        for (tool, input) in [
            ("MultiEdit", json!({"file_path": "/ws/a.rs", "edits": []})),
            (
                "NotebookEdit",
                json!({"notebook_path": "/ws/a.ipynb", "new_source": "x"}),
            ),
            ("edit", json!({"path": "a.rs"})),
            ("write", json!({"path": "a.rs"})),
            ("Edit", json!({"file_path": "a.rs"})),
        ] {
            assert!(
                !file_call(&set, tool, input).is_allowed(),
                "{tool} with blacklist {list:?}"
            );
        }
        assert!(file_call(&set, "Read", json!({"file_path": "a.rs"})).is_allowed());
        assert!(file_call(&set, "read", json!({"path": "a.rs"})).is_allowed());
    }
    // A whitelist of Edit lets MultiEdit run; one of MultiEdit does not let Edit run.
    let set = phase_set("Build", white(&["Read", "Edit"]));
    assert!(file_call(&set, "MultiEdit", json!({"file_path": "a"})).is_allowed());
    assert!(!file_call(&set, "find", json!({"pattern": "*"})).is_allowed());
    let set = phase_set("Build", white(&["MultiEdit", "find"]));
    assert!(!file_call(&set, "Edit", json!({"file_path": "a"})).is_allowed());
    assert!(file_call(&set, "Glob", json!({"pattern": "*"})).is_allowed());
    // Path patterns read Claude Code's fields too.
    let set = phase_set("Docs", black(&["Edit(src/**)"]));
    assert!(!file_call(&set, "MultiEdit", json!({"file_path": "src/a.rs"})).is_allowed());
    assert!(!file_call(
        &set,
        "NotebookEdit",
        json!({"notebook_path": "src/a.ipynb"})
    )
    .is_allowed());
    assert!(file_call(&set, "MultiEdit", json!({"file_path": "docs/a.md"})).is_allowed());
}

#[test]
fn no_tool_list_or_full_write_access_lets_everything_run() {
    let set = phase_set("Build", None);
    for command in ["rm -rf x", "git commit -m x", "npm install", "cat > x"] {
        assert!(bash(&set, command).is_allowed(), "{command:?}");
    }
    assert!(file_call(&set, "Edit", json!({"path": "/etc/passwd"})).is_allowed());
    let s = start(&set, "wf");
    assert!(check(None, &set, "Bash", &json!({"command": "rm -rf x"})).is_allowed());
    assert!(check(Some(&s), &set, "Anything", &json!(null)).is_allowed());

    let set = phase_set("Build", white(&["Read", "Write", "Edit", "Bash"]));
    assert!(bash(&set, "rm -rf x").is_allowed());
    let set = phase_set("Build", black(&["WebFetch"]));
    assert!(bash(&set, "rm -rf x").is_allowed());
    // workflow_step always runs, even under an empty whitelist.
    let set = phase_set("Build", white(&[]));
    let s = start(&set, "wf");
    assert!(check(Some(&s), &set, "workflow_step", &json!({"action": "next"})).is_allowed());
}

#[test]
fn shell_blocks_use_the_block_reason_template() {
    let set = phase_set("Plan", white(&["Read", "Bash"]));
    let mut def = set.get("wf").unwrap().clone();
    def.block_reason_template =
        Some("{phaseName}: no {toolName} here (only {allowedTools}).".into());
    let set = WorkflowSet::from_map(IndexMap::from([("wf".to_owned(), def)]));
    let s = start(&set, "wf");
    assert_eq!(
        reason(check(Some(&s), &set, "bash", &json!({"command": "npm install"}))),
        "Plan: no Bash here (only Read, Bash).\n\"npm install\" writes files (npm install changes installed packages), and the Plan phase does not allow writing."
    );
    assert_eq!(
        reason(check(Some(&s), &set, "Write", &json!({"path": "a"}))),
        "Plan: no Write here (only Read, Bash)."
    );
}

#[test]
fn tool_rules_parse_and_report_errors() {
    let ok = [
        ("Read", "Read", None),
        ("  bash  ", "bash", None),
        ("Bash(git status*)", "Bash", Some("git status*")),
        ("Bash( npm test )", "Bash", Some("npm test")),
        ("Bash(echo (a))", "Bash", Some("echo (a)")),
        ("Edit(docs/**)", "Edit", Some("docs/**")),
        ("Write(*.md)", "Write", Some("*.md")),
        ("mcp__fs__read(src/**)", "mcp__fs__read", Some("src/**")),
    ];
    for (text, tool, pattern) in ok {
        let rule = ToolRule::parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
        assert_eq!((rule.tool(), rule.pattern()), (tool, pattern), "{text:?}");
        assert_eq!(rule.source(), text.trim());
    }
    let bad = [
        ("", "the rule is empty"),
        ("Bash(", "it must end with `)` after the pattern"),
        ("Bash(ls) x", "it must end with `)` after the pattern"),
        ("Bash)", "it has a `)` but no `(`"),
        ("(ls)", "it has no tool name before `(`"),
        (
            "Bash()",
            "the pattern is empty; write `Bash` alone for every use of the tool",
        ),
        ("Edit(src/[)", "unclosed character class; missing ']'"),
        (
            "Edit({a,b)",
            "unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)",
        ),
    ];
    for (text, message) in bad {
        assert_eq!(
            ToolRule::parse(text)
                .map_err(|e| e.to_string())
                .map(|r| r.source().to_owned()),
            Err(message.to_owned()),
            "{text:?}"
        );
    }
    // Rules compare, print and serialise as written.
    let rule = ToolRule::from("Bash(git commit*)");
    assert_eq!(rule, "Bash(git commit*)");
    assert_eq!(
        format!("{rule:?} {rule}"),
        "\"Bash(git commit*)\" Bash(git commit*)"
    );
    assert_eq!(
        serde_json::to_value(&rule).unwrap(),
        json!("Bash(git commit*)")
    );
    assert_eq!(
        ToolPolicy::Blacklist(vec!["Write".into(), rule]).describe(),
        "all except: Write, Bash(git commit*)"
    );
    // A hand-built rule with a broken pattern matches nothing.
    let broken = ToolRule::from("Edit(src/[)");
    assert!(!broken.matches_path("src/[") && !broken.is_plain());
}

// ── Texts ──

#[test]
fn templates_keep_what_they_do_not_know() {
    let vars = [("a", "1"), ("long_name2", "2")];
    let cases = [
        ("{a}", "1"),
        ("x{a}y{a}", "x1y1"),
        ("{long_name2}", "2"),
        ("{b}", "{b}"),
        ("{a b}", "{a b}"),
        ("{}", "{}"),
        ("{", "{"),
        ("a}", "a}"),
        ("{{a}}", "{1}"),
        ("{a", "{a"),
        ("é{a}ü", "é1ü"),
        ("{A}", "{A}"),
    ];
    for (template, want) in cases {
        assert_eq!(
            resolve_template(template, &vars),
            want,
            "template {template:?}"
        );
    }
}

#[test]
fn breadcrumb_shows_every_level_and_one_emoji() {
    let set = set_of(&[
        wf("release", "Release Pipeline", &["build", "@review", "ship"]),
        wf("review", "Code Review", &["static", "peer"]),
    ]);
    let mut def = set.get("review").unwrap().clone();
    if let PhaseEntry::Phase(p) = &mut def.phases[0] {
        p.name = "Static Analysis".to_owned();
        p.emoji = "🔍".to_owned();
    }
    let mut map: IndexMap<String, WorkflowDefinition> =
        set.iter().map(|d| (d.key.clone(), d.clone())).collect();
    map.insert("review".to_owned(), def);
    let set = WorkflowSet::from_map(map);
    let s = start(&set, "release").advance(&set).unwrap().state;
    let active = s.resolve(&set).unwrap();
    assert_eq!(
        active.breadcrumb_text(),
        "Release Pipeline > Code Review [2/3] > 🔍 Static Analysis [1/2]"
    );
    assert_eq!(breadcrumb_text("X", &[]), "X");
}

#[test]
fn context_prompt_of_a_nested_phase() {
    let set = set_of(&[
        wf("root", "Release", &["a", "@l1", "z"]),
        wf("l1", "Review", &["b", "@l2"]),
        wf("l2", "Checks", &["c", "d"]),
    ]);
    let mut map: IndexMap<String, WorkflowDefinition> =
        set.iter().map(|d| (d.key.clone(), d.clone())).collect();
    let root = map.get_mut("root").unwrap();
    root.role_instruction =
        Some("Role for {workflowName} ({workflowKey}), task {taskId}: {description}.".into());
    root.advance_reminder =
        Some("Then go to {nextPhaseName}; step {globalStepCount}; {toolName}; {mystery}".into());
    let l2 = map.get_mut("l2").unwrap();
    if let PhaseEntry::Phase(p) = &mut l2.phases[1] {
        p.instructions =
            "Phase {phaseId} ({phaseName}) after {previousPhaseName}, path {breadcrumbPath}, blocked {blockedToolsList}.".into();
        p.tools = Some(ToolPolicy::Blacklist(vec!["Write".into(), "Edit".into()]));
        p.available_profiles = vec!["linter".into(), "typer".into()];
    }
    if let PhaseEntry::Phase(p) = &mut map.get_mut("root").unwrap().phases[0] {
        p.available_profiles = vec!["planner".into(), "linter".into()];
    }
    let set = WorkflowSet::from_map(map);
    let mut s = start(&set, "root");
    for _ in 0..3 {
        s = s.advance(&set).unwrap().state;
    }
    let active = s.resolve(&set).unwrap();
    expect![[r#"
        [Workflow path: Release > Review > Checks ▸ 🔹 D]

        Role for Release (root), task task-1: Ship it.

        **Task:** Ship it
        **Task ID:** task-1
        **Current Phase:** 🔹 D
        **Progress:** Step 3 (2/2 in current scope)

        **All Steps:**
          1. 🔹 A
          2. 🔹 B
          3. 🔹 C
        ▶ 4. 🔹 D
          5. 🔹 Z

        **What to do in this phase:**
        Phase d (D) after C, path Release > Review > Checks, blocked Write, Edit.

        **Available subagent profiles for this phase:** linter, typer
        **All profiles:** planner, linter, typer

        Then go to DONE; step 3; workflow_step; {mystery}"#]]
    .assert_eq(&active.context_prompt(&set));
}

#[test]
fn context_prompt_of_a_linear_phase_uses_the_defaults() {
    let set = set_of(&[wf("lin", "Linear", &["a", "b"])]);
    let s = start(&set, "lin");
    expect![[r#"
        [Workflow path: Linear ▸ 🔹 A]

        You are the ORCHESTRATOR for this workflow. You must NOT use the edit or write tools directly. All implementation work must be delegated to subagents via the delegate_to_subagents tool. Follow the phase instructions precisely.

        **Task:** Ship it
        **Task ID:** task-1
        **Current Phase:** 🔹 A
        **Progress:** Step 0 (1/2 phases)

        **All Steps:**
        ▶ 1. 🔹 A
          2. 🔹 B

        **What to do in this phase:**
        Do a.

        **Available subagent profiles for this phase:** (none)
        **All profiles:** 

        When you finish this phase, call the workflow_step tool with action='next' to advance to the next phase. If you need to restart the current scope from the beginning, use action='loop'."#]]
    .assert_eq(&s.resolve(&set).unwrap().context_prompt(&set));
}

#[test]
fn not_done_reminder_and_finished_messages() {
    let set = set_of(&[wf("lin", "Linear", &["a", "b"])]);
    let s = start(&set, "lin");
    expect![[r#"
        ⚠️ The Linear is still active. Current phase: 🔹 A.

        You must NOT stop yet. The workflow requires you to complete the current phase and call workflow_step to advance.

        Current phase instructions:
        Do a.

        Continue working on the current phase and call workflow_step when done."#]]
    .assert_eq(&s.resolve(&set).unwrap().not_done_reminder(&set));

    let def = set.get("lin").unwrap();
    let done = s.advance(&set).unwrap().state.advance(&set).unwrap().state;
    expect![[r#"
        ✅ **Linear Complete**

        **Task:** Ship it
        **Task ID:** task-1
        **Phases completed:** 2"#]]
    .assert_eq(&super::texts::finished_message(def, &set, &done));
    let CancelOutcome::Cancelled(cancelled) = s.cancel().unwrap().into_state().cancel().unwrap()
    else {
        panic!()
    };
    expect![[r#"
        ❌ **Linear Cancelled**

        **Task:** Ship it
        **Task ID:** task-1"#]]
    .assert_eq(&super::texts::finished_message(def, &set, &cancelled));
    assert_eq!(
        super::texts::initial_message(def, &set, "fix the bug"),
        "Start: fix the bug"
    );
}

impl CancelOutcome {
    fn into_state(self) -> WorkflowState {
        match self {
            CancelOutcome::ConfirmationNeeded(s) | CancelOutcome::Cancelled(s) => s,
        }
    }
}

#[test]
fn session_name_is_cut_with_an_ellipsis() {
    let set = set_of(&[wf("lin", "Linear", &["a"])]);
    let mut def = set.get("lin").unwrap().clone();
    def.session_name_max_length = 5;
    assert_eq!(session_name(&def, "short"), "Workflow: short");
    assert_eq!(session_name(&def, "longer one"), "Workflow: longe…");
    assert_eq!(session_name(&def, "ééééééé"), "Workflow: ééééé…");
}

#[test]
fn iso_timestamps() {
    assert_eq!(iso_timestamp(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(iso_timestamp(951_782_400_000), "2000-02-29T00:00:00.000Z");
    assert_eq!(iso_timestamp(1_795_306_418_123), "2026-11-22T00:13:38.123Z");
    assert_eq!(iso_timestamp(-1), "1969-12-31T23:59:59.999Z");
}

// ── Persistence ──

#[test]
fn record_round_trips_and_names_its_definitions() {
    let set = set_of(&[
        wf("root", "Root", &["a", "@sub"]),
        wf("sub", "Sub", &["b", "@deep"]),
        wf("deep", "Deep", &["c"]),
        wf("other", "Other", &["x"]),
    ]);
    let s = start(&set, "root").advance(&set).unwrap().state;
    let record = WorkflowRecord::new(&s, &set);
    let keys: Vec<&str> = record.definitions.iter().map(|d| d.key.as_str()).collect();
    assert_eq!(keys, ["deep", "root", "sub"]);
    let json = record.to_json();
    assert!(json.starts_with("{\"version\":1,"), "{json}");
    assert!(json.contains("\"currentPath\":[{\"workflowKey\":\"root\",\"phaseIndex\":1}"));
    let back = WorkflowRecord::from_json(&json).unwrap();
    assert_eq!(back, record);
    assert!(back.changed_definitions(&set).is_empty());

    let mut changed = set.get("sub").unwrap().clone();
    changed.fingerprint = "edited".to_owned();
    let mut map: IndexMap<String, WorkflowDefinition> =
        set.iter().map(|d| (d.key.clone(), d.clone())).collect();
    map.insert("sub".to_owned(), changed);
    map.shift_remove("deep");
    assert_eq!(
        back.changed_definitions(&WorkflowSet::from_map(map)),
        ["deep", "sub"]
    );
}

#[test]
fn bad_records_are_clear_errors() {
    let set = set_of(&[wf("lin", "Linear", &["a"])]);
    let good = WorkflowRecord::new(&start(&set, "lin"), &set).to_json();
    let cases: Vec<(String, &str)> = vec![
        ("not json".into(), "not valid JSON"),
        ("[]".into(), "no \"version\""),
        ("{}".into(), "no \"version\""),
        (
            good.replace("\"version\":1", "\"version\":2"),
            "has version 2, but this rawko reads version 1",
        ),
        (
            good.replace("\"version\":1", "\"version\":\"1\""),
            "has version \"1\"",
        ),
        (
            good.replace("\"active\":true", "\"active\":\"yes\""),
            "is invalid",
        ),
        (
            good.replace(
                "\"currentPath\":[{\"workflowKey\":\"lin\",\"phaseIndex\":0}]",
                "\"currentPath\":[]",
            ),
            "currentPath is empty",
        ),
        (
            good.replace("\"phaseIndex\":0", "\"phaseIndex\":-1"),
            "is invalid",
        ),
        (
            good.replace(
                "\"workflowKey\":\"lin\",\"phaseIndex\"",
                "\"workflowKey\":\"x\",\"phaseIndex\"",
            ),
            "currentPath starts at \"x\"",
        ),
        (
            good.replace("{\"version\":1,", "{\"version\":1,\"extra\":1,"),
            "is invalid",
        ),
        (
            good.replace(",\"definitions\":", ",\"nodefs\":"),
            "is invalid",
        ),
    ];
    for (text, want) in cases {
        let err = WorkflowRecord::from_json(&text).expect_err(&text);
        let shown = err.to_string();
        assert!(shown.contains(want), "{text}\n→ {shown}\nwanted {want}");
        assert!(matches!(
            err,
            RecordError::Json(_)
                | RecordError::MissingVersion
                | RecordError::UnknownVersion { .. }
                | RecordError::Invalid(_)
        ));
    }
}

//! The texts: templates, breadcrumbs, context prompts, messages, session names and timestamps.

use super::*;

// ── Texts ──

#[test]
fn the_default_block_reason_is_its_template_filled_in() {
    for (tool, phase) in [
        ("Write", "Plan"),
        ("", ""),
        ("mcp__x__{toolName}", "Phase {phaseName} é"),
    ] {
        let vars = [("toolName", tool), ("phaseName", phase)];
        assert_eq!(
            crate::workflow::texts::default_block_reason(tool, phase),
            resolve_template(crate::workflow::texts::DEFAULT_BLOCK_REASON, &vars)
        );
    }
}

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
    .assert_eq(&super::super::texts::finished_message(def, &set, &done));
    let CancelOutcome::Cancelled(cancelled) = s.cancel().unwrap().into_state().cancel().unwrap()
    else {
        panic!()
    };
    expect![[r#"
        ❌ **Linear Cancelled**

        **Task:** Ship it
        **Task ID:** task-1"#]]
    .assert_eq(&super::super::texts::finished_message(
        def, &set, &cancelled,
    ));
    assert_eq!(
        super::super::texts::initial_message(def, &set, "fix the bug"),
        "Start: fix the bug"
    );
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

#[test]
fn the_prompt_marks_the_step_the_outline_counts_at_every_position() {
    use crate::workflow::state::flat_index;
    // A subworkflow used twice, nested two deep: the prompt finds its mark while listing the
    // steps, and must land where the outline counts.
    let set = set_of(&[
        wf("root", "Release", &["a", "@l1", "b", "@l1", "z"]),
        wf("l1", "Review", &["c", "@l2", "d"]),
        wf("l2", "Checks", &["e", "f"]),
    ]);
    let marked = |state: &WorkflowState| -> String {
        let prompt = state.resolve(&set).unwrap().context_prompt(&set);
        let marks: Vec<&str> = prompt.lines().filter(|l| l.starts_with('▶')).collect();
        assert_eq!(marks.len(), 1, "{prompt}");
        marks[0].to_owned()
    };
    let mut state = start(&set, "root");
    let mut seen = 0;
    loop {
        let n = flat_index(&set, &state.current_path) + 1;
        assert!(
            marked(&state).starts_with(&format!("▶ {n}. ")),
            "{:?}: {}",
            state.current_path,
            marked(&state)
        );
        seen += 1;
        let next = state.advance(&set).unwrap();
        if next.movement == Movement::Done {
            break;
        }
        state = next.state;
    }
    assert_eq!(seen, 11);
    // A state another tool wrote may point at a subworkflow entry: its first phase is current.
    let mut legacy = start(&set, "root");
    legacy.current_path = vec![PathSegment {
        workflow_key: "root".into(),
        phase_index: 3,
    }];
    assert_eq!(marked(&legacy), "▶ 7. 🔹 C");
}

#[test]
fn the_default_role_and_reminder_name_no_variable() {
    // The prompt copies them as they are, without resolving them.
    let vars = [("workflowName", "W"), ("phaseName", "P"), ("toolName", "T")];
    for default in [
        crate::workflow::texts::DEFAULT_ROLE_INSTRUCTION,
        crate::workflow::texts::DEFAULT_ADVANCE_REMINDER,
    ] {
        assert!(!default.contains('{'), "{default}");
        assert_eq!(resolve_template(default, &vars), default);
    }
}

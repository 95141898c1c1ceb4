//! The outline a client draws (`rawko/getTask`'s `phases`): order, depth, indexes, breadcrumbs
//! and marks; and the state at any phase (`rawko/phasePrompt`).

use super::*;
use crate::workflow::outline::{
    flat_index, outline, state_at, Mark, NodeKind, OutlineNode, Progress,
};

/// Release: Plan, Code Review (Static, Deep (Inspect)), Ship.
fn nested() -> WorkflowSet {
    set_of(&[
        wf("release", "Release", &["plan", "@review", "ship"]),
        wf("review", "Code Review", &["static", "@deep"]),
        wf("deep", "Deep", &["inspect"]),
    ])
}

fn render(nodes: &[OutlineNode]) -> String {
    nodes
        .iter()
        .map(|n| {
            let index = n.index.map_or("-".to_owned(), |i| i.to_string());
            format!(
                "{}{} {index} {} | {}",
                "  ".repeat(n.depth),
                mark(n.mark),
                n.name,
                n.breadcrumb_text
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn mark(m: Mark) -> char {
    match m {
        Mark::Done => '✓',
        Mark::Current => '▶',
        Mark::Todo => '○',
    }
}

fn marks(set: &WorkflowSet, state: &WorkflowState) -> String {
    let def = set.get(&state.workflow_key).unwrap();
    outline(set, def, Progress::of(state, set))
        .iter()
        .map(|n| mark(n.mark))
        .collect()
}

#[test]
fn flattens_depth_first_with_scopes_indexes_and_breadcrumbs() {
    let set = nested();
    let def = set.get("release").unwrap();
    let nodes = outline(&set, def, Progress::default());
    expect![[r#"
        ○ 0 Plan | Release > 🔹 Plan [1/3]
        ○ - Code Review | Release > Code Review [2/3]
          ○ 1 Static | Release > Code Review [2/3] > 🔹 Static [1/2]
          ○ - Deep | Release > Code Review [2/3] > Deep [2/2]
            ○ 2 Inspect | Release > Code Review [2/3] > Deep [2/2] > 🔹 Inspect [1/1]
        ○ 3 Ship | Release > 🔹 Ship [3/3]"#]]
    .assert_eq(&render(&nodes));
    assert_eq!(nodes[0].emoji, "🔹");
    assert_eq!(nodes[1].kind, NodeKind::Scope);
    assert_eq!(nodes[1].emoji, "");
    assert_eq!(nodes[2].kind, NodeKind::Phase);
}

#[test]
fn each_phase_breadcrumb_is_the_one_the_task_shows_there() {
    let set = nested();
    let def = set.get("release").unwrap();
    let nodes = outline(&set, def, Progress::default());
    let mut state = start(&set, "release");
    for node in nodes.iter().filter(|n| n.kind == NodeKind::Phase) {
        assert_eq!(node.breadcrumb_text, crumb(&state, &set));
        assert_eq!(node.index, Some(flat_index(&set, &state.current_path)));
        state = state.advance(&set).unwrap().state;
    }
}

#[test]
fn marks_follow_the_state_and_scopes_follow_their_phases() {
    let set = nested();
    let mut state = start(&set, "release");
    // Plan, [Code Review], Static, [Deep], Inspect, Ship
    assert_eq!(marks(&set, &state), "▶○○○○○");
    state = state.advance(&set).unwrap().state;
    assert_eq!(Progress::of(&state, &set).current, Some(1));
    assert_eq!(marks(&set, &state), "✓▶▶○○○");
    state = state.advance(&set).unwrap().state;
    assert_eq!(marks(&set, &state), "✓▶✓▶▶○");
    state = state.advance(&set).unwrap().state;
    assert_eq!(marks(&set, &state), "✓✓✓✓✓▶");
    let done = state.advance(&set).unwrap();
    assert_eq!(done.movement, Movement::Done);
    assert_eq!(Progress::of(&done.state, &set), Progress::ALL_DONE);
    assert_eq!(marks(&set, &done.state), "✓✓✓✓✓✓");
}

#[test]
fn looping_a_scope_marks_its_phases_to_do_again() {
    let set = nested();
    let mut state = start(&set, "release");
    state = state.advance(&set).unwrap().state;
    state = state.advance(&set).unwrap().state;
    assert_eq!(marks(&set, &state), "✓▶✓▶▶○");
    state = state.loop_scope(&set).unwrap();
    assert_eq!(marks(&set, &state), "✓▶✓▶▶○");
    let mut state = start(&set, "release");
    state = state.advance(&set).unwrap().state;
    state = state.advance(&set).unwrap().state;
    state = state.advance(&set).unwrap().state;
    state = state.loop_scope(&set).unwrap();
    assert_eq!(marks(&set, &state), "▶○○○○○");
}

#[test]
fn a_cancelled_workflow_keeps_what_was_done_and_has_no_current_phase() {
    let set = nested();
    let state = start(&set, "release").advance(&set).unwrap().state;
    let cancelled = state
        .cancel()
        .unwrap()
        .into_state()
        .cancel()
        .unwrap()
        .into_state();
    assert!(cancelled.cancelled);
    assert_eq!(
        Progress::of(&cancelled, &set),
        Progress {
            done: 1,
            current: None
        }
    );
    assert_eq!(marks(&set, &cancelled), "✓○○○○○");
}

#[test]
fn a_state_that_no_longer_fits_marks_nothing() {
    let set = nested();
    let mut state = start(&set, "release");
    state.current_path[0].phase_index = 99;
    assert_eq!(Progress::of(&state, &set), Progress::default());
    assert_eq!(marks(&set, &state), "○○○○○○");
}

#[test]
fn a_workflow_without_subworkflows_is_a_flat_list() {
    let set = set_of(&[wf("flat", "Flat", &["a", "b"])]);
    let def = set.get("flat").unwrap();
    expect![[r#"
        ✓ 0 A | Flat > 🔹 A [1/2]
        ▶ 1 B | Flat > 🔹 B [2/2]"#]]
    .assert_eq(&render(&outline(
        &set,
        def,
        Progress {
            done: 1,
            current: Some(1),
        },
    )));
}

#[test]
fn state_at_walks_like_the_preview_and_refuses_a_bad_index() {
    let set = nested();
    let def = set.get("release").unwrap();
    let inspect = state_at(&set, def, 2, "the task", "task-9", 5).unwrap();
    let active = inspect.resolve(&set).unwrap();
    assert_eq!(active.current_phase.name, "Inspect");
    assert_eq!(inspect.global_step_count, 2);
    assert_eq!(inspect.task_id, "task-9");
    assert_eq!(inspect.task_description, "the task");
    assert_eq!(
        active.breadcrumb_text(),
        outline(&set, def, Progress::default())[4].breadcrumb_text
    );
    assert!(active.context_prompt(&set).contains("**Task:** the task"));
    assert_eq!(
        state_at(&set, def, 0, "t", "id", 0).unwrap(),
        start_with(&set, "release", "t", "id", 0)
    );
    assert!(state_at(&set, def, 3, "t", "id", 0).is_some());
    assert!(state_at(&set, def, 4, "t", "id", 0).is_none());
    assert!(state_at(&set, def, usize::MAX, "t", "id", 0).is_none());
}

fn start_with(set: &WorkflowSet, key: &str, d: &str, id: &str, at: i64) -> WorkflowState {
    WorkflowState::start(set, key, d, id, at).unwrap()
}

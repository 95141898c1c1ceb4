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

mod gate;
mod navigation;
mod outline;
mod persist;
mod texts;
mod yaml;

static NO_INPUT: serde_json::Value = serde_json::Value::Null;

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
        subagent_tools: Default::default(),
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
        sources: Vec::new(),
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

impl CancelOutcome {
    fn into_state(self) -> WorkflowState {
        match self {
            CancelOutcome::ConfirmationNeeded(s) | CancelOutcome::Cancelled(s) => s,
        }
    }
}

//! The machine's transitions as data: one row per (state, event, guard) → target, drawn as a
//! Mermaid state diagram. Tests replay every row against [`Machine::transition`] and check every
//! transition the code takes against the rows, so the chart cannot drift from the code.
//!
//! [`Machine::transition`]: super::Machine::transition

use super::guards::{
    AGENT_SUCCEEDED, IS_COMPLETE, IS_RECOVERABLE_ERROR, MAX_FAILURES_REACHED,
    MAX_ITERATIONS_REACHED, SHOULD_RETRY, SHOULD_SELECT_MODE,
};
use super::transition::State;

/// One transition of the chart. Rows with the same `from` and `event` are tried in table order,
/// like XState's guarded transition arrays; a row without a guard is the fallback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransitionRow {
    pub from: State,
    /// The event's name; `None` for an eventless transition (XState `always`), taken as soon as
    /// `from` is entered.
    pub event: Option<&'static str>,
    pub guard: Option<&'static str>,
    pub to: State,
}

const fn on(from: State, event: &'static str, to: State) -> TransitionRow {
    TransitionRow {
        from,
        event: Some(event),
        guard: None,
        to,
    }
}

const fn guarded(
    from: State,
    event: &'static str,
    guard: &'static str,
    to: State,
) -> TransitionRow {
    TransitionRow {
        from,
        event: Some(event),
        guard: Some(guard),
        to,
    }
}

const fn always(guard: Option<&'static str>, to: State) -> TransitionRow {
    TransitionRow {
        from: State::ErrorHandling,
        event: None,
        guard,
        to,
    }
}

use State::{Cancelled, Complete, ErrorHandling, Evaluating, Executing, Failed, Idle, Selecting};

/// Every transition of the machine.
pub const TRANSITIONS: &[TransitionRow] = &[
    on(Idle, "START_TASK", Selecting),
    on(Idle, "CANCEL", Cancelled),
    on(Idle, "RESET", Idle),
    on(Selecting, "AGENT_SELECTED", Executing),
    on(Selecting, "AGENT_SELECTION_FAILED", ErrorHandling),
    on(Selecting, "FORCE_AGENT", Executing),
    on(Selecting, "PLAN_UPDATED", Selecting),
    on(Selecting, "CANCEL", Cancelled),
    on(Selecting, "RESET", Idle),
    on(Executing, "AGENT_MESSAGE", Executing),
    on(Executing, "AGENT_TOOL_CALL", Executing),
    on(Executing, "AGENT_TOOL_RESULT", Executing),
    on(Executing, "PLAN_UPDATED", Executing),
    guarded(Executing, "AGENT_COMPLETE", AGENT_SUCCEEDED, Evaluating),
    on(Executing, "AGENT_COMPLETE", ErrorHandling),
    on(Executing, "AGENT_ERROR", ErrorHandling),
    on(Executing, "FORCE_AGENT", Executing),
    on(Executing, "SKIP_STEP", Selecting),
    on(Executing, "CANCEL", Cancelled),
    on(Executing, "RESET", Idle),
    guarded(Evaluating, "ARBITER_DECISION", IS_COMPLETE, Complete),
    guarded(
        Evaluating,
        "ARBITER_DECISION",
        MAX_ITERATIONS_REACHED,
        Complete,
    ),
    guarded(
        Evaluating,
        "ARBITER_DECISION",
        SHOULD_SELECT_MODE,
        Executing,
    ),
    guarded(Evaluating, "ARBITER_DECISION", SHOULD_RETRY, Selecting),
    on(Evaluating, "ARBITER_DECISION", Selecting),
    on(Evaluating, "ARBITER_ERROR", ErrorHandling),
    on(Evaluating, "FORCE_AGENT", Executing),
    on(Evaluating, "SKIP_STEP", Selecting),
    on(Evaluating, "RETRY", Selecting),
    on(Evaluating, "PLAN_UPDATED", Evaluating),
    on(Evaluating, "CANCEL", Cancelled),
    on(Evaluating, "RESET", Idle),
    always(Some(MAX_FAILURES_REACHED), Failed),
    always(Some(IS_RECOVERABLE_ERROR), Selecting),
    always(None, Failed),
    on(Complete, "RESET", Idle),
    on(Failed, "RETRY", Selecting),
    on(Failed, "RESET", Idle),
    on(Cancelled, "RESET", Idle),
];

/// `true` when the state named `state` (`"executing"`) has a transition on `event`
/// (`"FORCE_AGENT"`): what the faces ask before they send an override, so the rule is the chart's.
pub fn accepts(state: &str, event: &str) -> bool {
    TRANSITIONS
        .iter()
        .any(|row| row.from.name() == state && row.event == Some(event))
}

/// The chart as a Mermaid `stateDiagram-v2`: `error_handling` is drawn as a choice, each row
/// is one arrow labelled `EVENT [guard]`, and the final states lead to `[*]`.
pub fn mermaid() -> String {
    let mut out = String::from("stateDiagram-v2\n");
    out.push_str("    state error_handling <<choice>>\n");
    out.push_str("    [*] --> idle\n");
    for row in TRANSITIONS {
        let label = match (row.event, row.guard) {
            (Some(event), Some(guard)) => format!("{event} [{guard}]"),
            (Some(event), None) => event.to_owned(),
            (None, Some(guard)) => format!("[{guard}]"),
            (None, None) => "[else]".to_owned(),
        };
        out.push_str(&format!("    {} --> {} : {label}\n", row.from, row.to));
    }
    for state in State::ALL.into_iter().filter(|s| s.is_final()) {
        out.push_str(&format!("    {state} --> [*]\n"));
    }
    out
}

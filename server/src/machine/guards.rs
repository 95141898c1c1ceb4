//! The machine's guards (SPEC-0003 `guards`), one function each, and their names as the
//! transition records and the chart show them (XState's camelCase names).

use super::context::{ArbiterDecision, Context, RECOVERABLE_CODES};

pub const IS_COMPLETE: &str = "isComplete";
pub const SHOULD_RETRY: &str = "shouldRetry";
pub const SHOULD_SELECT_MODE: &str = "shouldSelectMode";
pub const MAX_ITERATIONS_REACHED: &str = "maxIterationsReached";
pub const MAX_FAILURES_REACHED: &str = "maxFailuresReached";
pub const IS_RECOVERABLE_ERROR: &str = "isRecoverableError";
/// Splits AGENT_COMPLETE by its `success` flag (rawko's: SPEC-0003 had onDone / onError).
pub const AGENT_SUCCEEDED: &str = "agentSucceeded";

/// The arbiter says the task is done.
pub fn is_complete(decision: &ArbiterDecision) -> bool {
    matches!(decision, ArbiterDecision::Complete { .. })
}

/// The arbiter asks for another selection.
pub fn should_retry(decision: &ArbiterDecision) -> bool {
    matches!(decision, ArbiterDecision::Retry { .. })
}

/// The arbiter named the next agent itself, so no second selection is needed (rawko-sdk's
/// shortcut).
pub fn should_select_mode(decision: &ArbiterDecision) -> bool {
    matches!(decision, ArbiterDecision::SelectMode { .. })
}

/// The task has used up its agent runs.
pub fn max_iterations_reached(context: &Context) -> bool {
    context.iteration_count >= context.max_iterations
}

/// Too many failures in a row.
pub fn max_failures_reached(context: &Context) -> bool {
    context.consecutive_failures >= context.max_failures
}

/// The last error is a transient provider error that a new attempt may get past.
pub fn is_recoverable_error(context: &Context) -> bool {
    context
        .last_error
        .as_ref()
        .is_some_and(|e| RECOVERABLE_CODES.contains(&e.code.as_str()))
}

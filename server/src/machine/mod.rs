//! The orchestrator state machine (rawko-sdk SPEC-0003) as a pure transition function: given an
//! event and the time, [`Machine::transition`] returns the next machine, the [`Effect`]s the engine
//! must run (ask the arbiter, run or stop an agent, finish the task) and a [`TransitionRecord`].
//!
//! Pure (architecture invariant 1): no tokio, no clock, no I/O. The engine owns one machine per
//! task, passes `now` in, runs the effects and feeds their answers back as events. Whatever a
//! state does not handle leaves the machine unchanged and is reported (`handled: false`), never a
//! panic; in particular an answer that arrives after the machine moved on is simply not handled.
//!
//! # Transitions
//!
//! [`TRANSITIONS`] lists them as data and [`mermaid`] draws them; tests keep both true to the
//! code. "Spec" marks SPEC-0003, "sdk" rawko-sdk's implementation, "rawko" additions made here.
//!
//! - `idle` —START_TASK→ `selecting` (spec): task, `startedAt = now`, `iterationCount = 0`,
//!   `consecutiveFailures = 0`; also clears history, messages and lastError (sdk).
//! - `selecting` —AGENT_SELECTED→ `executing` (spec): currentAgent and lastArbiterDecision.
//! - `selecting` —AGENT_SELECTION_FAILED→ `error_handling` (spec): lastError; it also counts as a
//!   failure (rawko), so an arbiter that keeps failing with a recoverable code cannot loop forever.
//! - entering `executing`: `iterationCount + 1` (spec), `executionStartedAt = now` and the
//!   messages cleared (rawko); effect `RunAgent`.
//! - `executing` —AGENT_MESSAGE→ itself: the text joins `messages` (the newest 200 are kept);
//!   —AGENT_TOOL_CALL / AGENT_TOOL_RESULT→ itself, nothing to remember (sdk: callback events).
//! - `executing` —AGENT_COMPLETE [agentSucceeded]→ `evaluating` (spec onDone):
//!   `consecutiveFailures = 0`, a `success` history entry; effect `Evaluate`.
//! - `executing` —AGENT_COMPLETE (success false)→ `error_handling` (rawko): like AGENT_ERROR with
//!   the error `agent_failed` and the output as its message.
//! - `executing` —AGENT_ERROR→ `error_handling` (spec onError): lastError, consecutive and total
//!   failures + 1, a `failure` history entry.
//! - `evaluating` —ARBITER_DECISION→ guards in the sdk's order (the spec tried shouldRetry before
//!   maxIterationsReached): [isComplete] → `complete`; [maxIterationsReached] → `complete` with the
//!   decision `COMPLETE "Max iterations reached"`; [shouldSelectMode] → `executing` with that agent
//!   (sdk: no second selection); [shouldRetry] → `selecting`; otherwise (CONTINUE) → `selecting`.
//!   Each stores the decision as lastArbiterDecision.
//! - `evaluating` —ARBITER_ERROR→ `error_handling` (spec): lastError; counts as a failure (rawko).
//! - `error_handling` is transient (spec `always`), resolved within the same transition:
//!   [maxFailuresReached] (`consecutiveFailures >= maxFailures`, configurable as in the sdk) →
//!   `failed`; [isRecoverableError] (`rate_limited`, `network_error`) → `selecting`; otherwise →
//!   `failed`. The record's `to` is where it ended, `via` says it passed `error_handling`.
//! - CANCEL from `idle`, `selecting`, `evaluating` and `executing` → `cancelled` (spec: from
//!   `executing` only).
//! - RESET from every state → `idle` with a fresh context that keeps the limits and the default
//!   agent (rawko; the spec declared the event without a handler).
//! - FORCE_AGENT from `selecting`, `executing` and `evaluating` → `executing` with that agent
//!   (rawko). From `executing` it re-enters: the running agent is stopped first.
//! - SKIP_STEP from `executing` and `evaluating` → `selecting` (rawko): the plan's current step is
//!   marked skipped and the plan moves to the next step.
//! - RETRY from `evaluating` → `selecting`, and from `failed` → `selecting` with
//!   `consecutiveFailures = 0`; lastError and the history stay, so the arbiter sees what failed
//!   (rawko).
//! - PLAN_UPDATED from `selecting`, `executing` and `evaluating` → the same state with the new
//!   plan (rawko: the spec's `planUpdates`, as an event so that it is logged like every change).
//! - `complete`, `failed` and `cancelled` are final (they emit `Finish`); they handle only RESET,
//!   and `failed` also RETRY.
//!
//! Leaving `executing` before the agent finished (CANCEL, FORCE_AGENT, SKIP_STEP, RESET) emits
//! `AbortAgent` first and, except for RESET, records the run as `cancelled` in the history. The
//! engine must drop whatever a stopped run or a superseded arbiter call still sends.

mod chart;
mod context;
mod event;
pub mod guards;
mod transition;

pub use chart::{accepts, mermaid, TransitionRow, TRANSITIONS};
pub use context::{
    ArbiterDecision, Context, ExecutionEntry, ExecutionResult, MachineError, Plan, PlanStep,
    StepStatus, AGENT_FAILED, DEFAULT_MAX_FAILURES, DEFAULT_MAX_ITERATIONS, MAX_MESSAGES,
    RECOVERABLE_CODES,
};
pub use event::{Effect, Event, TaskOutcome};
pub use transition::{
    Machine, MachineConfig, Outcome, State, TransitionRecord, MAX_ITERATIONS_SUMMARY,
};

#[cfg(test)]
mod tests;

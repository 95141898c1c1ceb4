//! What the orchestrator machine remembers about a task (rawko-sdk SPEC-0003's `RawkoContext`,
//! without the live objects): the task, the current agent, the plan, the history of agent runs,
//! the failure counters, the limits and the arbiter's last decision.
//!
//! Everything here is plain data that serialises to camelCase JSON, so a snapshot of a task is
//! the machine written out as it is. Times are milliseconds since the Unix epoch, given to the
//! machine by the engine.

use serde::{Deserialize, Serialize};

/// The default of [`Context::max_iterations`] (SPEC-0003).
pub const DEFAULT_MAX_ITERATIONS: u32 = 50;
/// The default of [`Context::max_failures`] (SPEC-0003 hard-codes 3; rawko-sdk makes it a setting).
pub const DEFAULT_MAX_FAILURES: u32 = 3;
/// [`Context::messages`] keeps at most this many of the newest messages.
pub const MAX_MESSAGES: usize = 200;

/// The error code the machine gives an agent run that ended with `success: false`.
pub const AGENT_FAILED: &str = "agent_failed";
/// Provider error codes after which the task goes on with a new selection (SPEC-0003's
/// `isRecoverableError`). Every other code fails the task.
pub const RECOVERABLE_CODES: [&str; 2] = ["rate_limited", "network_error"];

/// An error as the machine sees it: a short machine-readable code and a message for people.
///
/// Codes are provider codes (`rate_limited`, `network_error`, `auth_error`, …) or the engine's
/// own (`tool_failure`, `arbiter_error`, `selection_failed`, [`AGENT_FAILED`], …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineError {
    pub code: String,
    pub message: String,
}

impl MachineError {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        MachineError {
            code: code.into(),
            message: message.into(),
        }
    }
}

/// What the arbiter decided (SPEC-0003 `ArbiterDecision`), tagged by `type` as on the wire of
/// rawko-sdk: `{"type": "SELECT_MODE", "mode": "coder", "reason": "…"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "SCREAMING_SNAKE_CASE",
    rename_all_fields = "camelCase"
)]
pub enum ArbiterDecision {
    /// Run the agent `mode` next.
    SelectMode { mode: String, reason: String },
    /// Go on: select the next agent.
    Continue { reason: String },
    /// The task is done.
    Complete { summary: String },
    /// Try again: select again, usually after a poor result.
    Retry { reason: String },
}

impl ArbiterDecision {
    /// The decision's `type` as it is serialised.
    pub fn name(&self) -> &'static str {
        match self {
            ArbiterDecision::SelectMode { .. } => "SELECT_MODE",
            ArbiterDecision::Continue { .. } => "CONTINUE",
            ArbiterDecision::Complete { .. } => "COMPLETE",
            ArbiterDecision::Retry { .. } => "RETRY",
        }
    }

    /// The agent a SELECT_MODE decision names.
    pub fn mode(&self) -> Option<&str> {
        match self {
            ArbiterDecision::SelectMode { mode, .. } => Some(mode),
            _ => None,
        }
    }
}

/// How one agent run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionResult {
    Success,
    Failure,
    /// Stopped from outside: CANCEL, FORCE_AGENT or SKIP_STEP while the agent ran.
    Cancelled,
}

/// One agent run in the task's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionEntry {
    pub agent: String,
    pub started_at: i64,
    pub completed_at: Option<i64>,
    pub result: ExecutionResult,
    /// The agent's final output (also kept for a failed run, when it reported one).
    pub output: Option<String>,
    /// The error's message, for a failed run.
    pub error: Option<String>,
}

/// Where a plan step stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    InProgress,
    Complete,
    Failed,
    Skipped,
}

/// One step of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanStep {
    /// 0-based.
    pub index: usize,
    pub description: String,
    pub status: StepStatus,
    pub agent_used: Option<String>,
}

/// A plan made by a planning agent (SPEC-0003's shape; SPEC-0010's richer plan lives elsewhere).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    pub steps: Vec<PlanStep>,
    pub current_step_index: usize,
    pub is_complete: bool,
}

impl Plan {
    /// Marks the current step skipped and moves on to the next one; the plan is complete once
    /// the index passes the last step. Does nothing to a plan that is already past its end.
    pub fn skip_current(&mut self) {
        let Some(step) = self.steps.get_mut(self.current_step_index) else {
            return;
        };
        step.status = StepStatus::Skipped;
        self.current_step_index += 1;
        self.is_complete = self.current_step_index >= self.steps.len();
    }
}

/// The machine's extended state. Missing fields take their defaults when read, so snapshots
/// written before a field existed still load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Context {
    /// The user's task, as given to START_TASK.
    pub task: String,
    /// When START_TASK arrived.
    pub started_at: Option<i64>,
    /// The agent that runs, or ran last.
    pub current_agent: Option<String>,
    pub plan: Option<Plan>,
    /// Every agent run of the task, the oldest first.
    pub history: Vec<ExecutionEntry>,
    /// The agent's messages streamed during the current run; the newest [`MAX_MESSAGES`].
    pub messages: Vec<String>,
    /// Failures since the last successful agent run. Reaching `max_failures` fails the task.
    pub consecutive_failures: u32,
    pub total_failures: u32,
    pub last_error: Option<MachineError>,
    pub last_arbiter_decision: Option<ArbiterDecision>,
    pub max_iterations: u32,
    /// Agent runs started, counted when `executing` is entered.
    pub iteration_count: u32,
    pub max_failures: u32,
    /// The agent the arbiter falls back to; the machine only carries it.
    pub default_agent: Option<String>,
    /// When the current (or last) agent run started.
    pub execution_started_at: Option<i64>,
}

impl Default for Context {
    fn default() -> Self {
        Context {
            task: String::new(),
            started_at: None,
            current_agent: None,
            plan: None,
            history: Vec::new(),
            messages: Vec::new(),
            consecutive_failures: 0,
            total_failures: 0,
            last_error: None,
            last_arbiter_decision: None,
            max_iterations: DEFAULT_MAX_ITERATIONS,
            iteration_count: 0,
            max_failures: DEFAULT_MAX_FAILURES,
            default_agent: None,
            execution_started_at: None,
        }
    }
}

impl Context {
    /// Appends a streamed message, dropping the oldest beyond [`MAX_MESSAGES`].
    pub(super) fn push_message(&mut self, text: &str) {
        if self.messages.len() >= MAX_MESSAGES {
            let excess = self.messages.len() + 1 - MAX_MESSAGES;
            self.messages.drain(..excess);
        }
        self.messages.push(text.to_owned());
    }

    /// Records the end of the current agent run in the history.
    pub(super) fn record_execution(
        &mut self,
        now: i64,
        result: ExecutionResult,
        output: Option<String>,
        error: Option<String>,
    ) {
        self.history.push(ExecutionEntry {
            agent: self.current_agent.clone().unwrap_or_default(),
            started_at: self.execution_started_at.unwrap_or(now),
            completed_at: Some(now),
            result,
            output,
            error,
        });
    }

    /// Counts a failure and remembers its error.
    pub(super) fn count_failure(&mut self, error: MachineError) {
        self.consecutive_failures += 1;
        self.total_failures += 1;
        self.last_error = Some(error);
    }
}

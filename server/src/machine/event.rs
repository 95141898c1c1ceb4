//! What goes into the machine (events, SPEC-0003's `RawkoEvent` plus PLAN_UPDATED) and what comes
//! out of it (effects: the work the engine must start because of a transition).

use serde::{Deserialize, Serialize};

use super::context::{ArbiterDecision, MachineError, Plan};

/// An event for the machine, tagged by `type` with SPEC-0003's names:
/// `{"type": "AGENT_TOOL_RESULT", "id": "t1", "isError": false}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "SCREAMING_SNAKE_CASE",
    rename_all_fields = "camelCase"
)]
pub enum Event {
    // Lifecycle.
    StartTask {
        task: String,
    },
    Cancel,
    Reset,

    // Agent selection (the arbiter's answer to `Effect::SelectAgent`).
    AgentSelected {
        agent: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        decision: Option<ArbiterDecision>,
    },
    AgentSelectionFailed {
        error: MachineError,
    },

    // Execution (the running agent, after `Effect::RunAgent`).
    AgentMessage {
        text: String,
    },
    AgentToolCall {
        id: String,
        name: String,
    },
    AgentToolResult {
        id: String,
        is_error: bool,
    },
    AgentComplete {
        success: bool,
        output: String,
    },
    AgentError {
        error: MachineError,
    },

    // The arbiter's evaluation (its answer to `Effect::Evaluate`).
    ArbiterDecision {
        decision: ArbiterDecision,
    },
    ArbiterError {
        error: MachineError,
    },

    // Manual overrides.
    ForceAgent {
        agent: String,
    },
    SkipStep,
    Retry,

    /// rawko's addition: the plan was made or changed (SPEC-0003 carried this as the agent
    /// result's `planUpdates`). As an event it lands in the task's log like every other change.
    PlanUpdated {
        plan: Plan,
    },
}

impl Event {
    /// The event's `type` as it is serialised, e.g. `"AGENT_COMPLETE"`.
    pub fn name(&self) -> &'static str {
        match self {
            Event::StartTask { .. } => "START_TASK",
            Event::Cancel => "CANCEL",
            Event::Reset => "RESET",
            Event::AgentSelected { .. } => "AGENT_SELECTED",
            Event::AgentSelectionFailed { .. } => "AGENT_SELECTION_FAILED",
            Event::AgentMessage { .. } => "AGENT_MESSAGE",
            Event::AgentToolCall { .. } => "AGENT_TOOL_CALL",
            Event::AgentToolResult { .. } => "AGENT_TOOL_RESULT",
            Event::AgentComplete { .. } => "AGENT_COMPLETE",
            Event::AgentError { .. } => "AGENT_ERROR",
            Event::ArbiterDecision { .. } => "ARBITER_DECISION",
            Event::ArbiterError { .. } => "ARBITER_ERROR",
            Event::ForceAgent { .. } => "FORCE_AGENT",
            Event::SkipStep => "SKIP_STEP",
            Event::Retry => "RETRY",
            Event::PlanUpdated { .. } => "PLAN_UPDATED",
        }
    }
}

/// How a finished task ended (the protocol's `taskFinished.outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskOutcome {
    Complete,
    Failed,
    Cancelled,
}

/// Work the engine must do because of a transition, in the order given. The machine never does
/// it itself; the answers come back as events.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Effect {
    /// Ask the arbiter to select the next agent; answer with AGENT_SELECTED or
    /// AGENT_SELECTION_FAILED.
    SelectAgent,
    /// Start `agent` on the task; stream AGENT_MESSAGE / AGENT_TOOL_CALL / AGENT_TOOL_RESULT and
    /// end with AGENT_COMPLETE or AGENT_ERROR.
    RunAgent { agent: String },
    /// Ask the arbiter to evaluate the last run; answer with ARBITER_DECISION or ARBITER_ERROR.
    Evaluate,
    /// Stop the running agent. The engine must drop whatever the stopped run still sends: after
    /// FORCE_AGENT the machine could not tell it from the new run's events.
    AbortAgent,
    /// The task finished: tell the user.
    Finish {
        outcome: TaskOutcome,
        summary: String,
    },
}

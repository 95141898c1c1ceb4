//! Types that methods of both directions share: the task id, the task's state and the breadcrumb.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The id of a task, as `rawko/startTask` returned it. Opaque to clients: compare it, never parse it.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct TaskId(pub String);

impl TaskId {
    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for TaskId {
    fn from(id: String) -> Self {
        TaskId(id)
    }
}

impl From<&str> for TaskId {
    fn from(id: &str) -> Self {
        TaskId(id.to_owned())
    }
}

/// Where a task stands, as the status bar shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// The agent is working: a model turn, a tool or a hook is running.
    Running,
    /// A tool call was blocked by the phase's tools and waits for the user's answer to
    /// `rawko/approveToolCall`.
    WaitingApproval,
    /// The agent stopped before the workflow was done; the auto-continue countdown runs and
    /// `rawko/interrupt` can stop it.
    Countdown,
    /// The task cannot go on by itself and waits for the user: a message, a resume, or a decision
    /// after a limit was reached or a countdown was interrupted.
    Blocked,
    /// Found unfinished when rawko started (it, the editor or the machine stopped while the task
    /// ran); `rawko/resumeTask` continues it from its last recorded step.
    Interrupted,
    /// The workflow finished and the task is done.
    Complete,
    /// The task stopped for good on an error or an exhausted limit.
    Failed,
    /// The user cancelled the task.
    Cancelled,
}

impl TaskState {
    /// `true` for the states a task never leaves: complete, failed, cancelled.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            TaskState::Complete | TaskState::Failed | TaskState::Cancelled
        )
    }

    /// The class of the state, which clients go by instead of lists of states.
    pub fn class(self) -> StateClass {
        match self {
            TaskState::Running | TaskState::Countdown => StateClass::Busy,
            TaskState::WaitingApproval | TaskState::Blocked | TaskState::Interrupted => {
                StateClass::Waiting
            }
            TaskState::Complete | TaskState::Failed | TaskState::Cancelled => StateClass::Finished,
        }
    }
}

/// The external agent an external session fronts (rawko in front of it through its hooks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExternalAgent {
    /// Claude Code (`rawko hook install --claude`).
    Claude,
    /// Gemini CLI (`rawko hook install --gemini`).
    Gemini,
    /// Codex CLI (`rawko hook install --codex`).
    Codex,
}

impl ExternalAgent {
    /// The agent's name for people: `Claude Code`, `Gemini CLI`, `Codex`.
    pub fn display_name(self) -> &'static str {
        match self {
            ExternalAgent::Claude => "Claude Code",
            ExternalAgent::Gemini => "Gemini CLI",
            ExternalAgent::Codex => "Codex",
        }
    }
}

/// What a task's state means for the user, so a client needs no list of states: the task works
/// by itself, waits for the user, or has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StateClass {
    /// The task goes on by itself: `running`, and `countdown` (which `rawko/interrupt` can stop).
    Busy,
    /// The task waits for the user: an approval (`waiting_approval`), a message (`blocked`) or a
    /// resume (`interrupted`).
    Waiting,
    /// The task has ended and sends nothing more: `complete`, `failed`, `cancelled`.
    Finished,
}

/// A command a task accepts in the state it is in, named after the client → server method that
/// sends it, so a client offers exactly these instead of testing state names. rawko refuses the
/// others with a conflict error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TaskAction {
    /// `rawko/resumeTask`: the task stopped (`blocked`, or `interrupted` by a restart) and goes on.
    Resume,
    /// `rawko/retry`: the task runs again from where it failed (`failed`, `interrupted`).
    Retry,
    /// `rawko/reset`: the task starts its workflow over.
    Reset,
    /// `rawko/interrupt`: stops a countdown or the current turn.
    Interrupt,
    /// `rawko/cancelTask`: ends the task for good.
    Cancel,
    /// `rawko/sendMessage`: a message for the agent.
    Message,
    /// `rawko/setWorkflow`: starts a workflow in a task that runs none yet.
    SetWorkflow,
}

/// A subagent: a task that another task's `delegate_to_subagents` call started, shown under
/// that task. Absent for every other task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubagentInfo {
    /// The task that delegated (the orchestrator).
    pub parent_task_id: TaskId,
    /// The id of the parent's `delegate_to_subagents` call, as its `rawko/output` names it.
    pub tool_call_id: String,
    /// The subagent's place among that call's tasks, from 0.
    pub index: u32,
    /// The profile it runs (an agent file's name), e.g. `reviewer`.
    pub profile: String,
    /// Its name to show: the task's `name` when the call gave one, else the profile.
    pub name: String,
    /// The label to show, e.g. `reviewer (subagent of task-1795-1)`.
    pub label: String,
    /// The parent's phase the subagent works in: its `index` in the parent's
    /// `TaskDetail.phases`; absent when the parent runs no workflow.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub phase_index: Option<u32>,
}

/// One level of the breadcrumb `Feature > 🧪 Test [3/4]`: the top-level workflow first, then each
/// subworkflow the task is inside.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BreadcrumbItem {
    /// The name of the workflow (or subworkflow) at this level.
    pub name: String,
    /// The name of the current entry at this level: the phase's name at the innermost level, the
    /// subworkflow's name above it.
    pub phase_name: String,
    /// The current phase's emoji at the innermost level; empty for subworkflow levels.
    pub emoji: String,
    /// The 1-based position of the current entry among this level's phases.
    pub index: u32,
    /// How many phases this level has.
    pub total: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_has_the_class_its_meaning_gives() {
        use StateClass::*;
        use TaskState::*;
        let classes = [
            (Running, Busy),
            (Countdown, Busy),
            (WaitingApproval, Waiting),
            (Blocked, Waiting),
            (Interrupted, Waiting),
            (Complete, Finished),
            (Failed, Finished),
            (Cancelled, Finished),
        ];
        for (state, class) in classes {
            assert_eq!(state.class(), class, "{state:?}");
            assert_eq!(state.is_final(), class == Finished, "{state:?}");
        }
        assert_eq!(
            serde_json::to_value(Waiting).unwrap(),
            serde_json::json!("waiting")
        );
    }

    #[test]
    fn actions_are_named_after_their_methods() {
        let names = serde_json::to_value([
            TaskAction::Resume,
            TaskAction::Retry,
            TaskAction::Reset,
            TaskAction::Interrupt,
            TaskAction::Cancel,
            TaskAction::Message,
            TaskAction::SetWorkflow,
        ])
        .unwrap();
        assert_eq!(
            names,
            serde_json::json!([
                "resume",
                "retry",
                "reset",
                "interrupt",
                "cancel",
                "message",
                "setWorkflow"
            ])
        );
    }
}

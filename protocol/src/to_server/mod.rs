//! Client → server requests: what an editor asks of rawko. Each method is an uninhabited `enum`
//! implementing [`Request`], with its own `Params` and `Result` structs next to it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::files::Show;
use crate::types::TaskId;
use crate::Request;

mod tasks;
pub use tasks::*;

/// Lists the workflows rawko found in its workflow directories.
#[derive(Debug)]
pub enum ListWorkflows {}

impl Request for ListWorkflows {
    type Params = ListWorkflowsParams;
    type Result = ListWorkflowsResult;
    const METHOD: &'static str = "rawko/listWorkflows";
}

/// The params of `rawko/listWorkflows`: none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListWorkflowsParams {}

/// The result of `rawko/listWorkflows`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListWorkflowsResult {
    /// Every valid workflow, in the order the workflow directories gave them.
    pub workflows: Vec<WorkflowSummary>,
}

/// One workflow as `rawko/listWorkflows` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowSummary {
    /// The workflow's key: the name of its directory. `rawko/startTask` takes it as `workflow`.
    pub key: String,
    /// The workflow's display name (`name` in `workflow.yaml`).
    pub name: String,
    /// The short name users type to start it (`commandName` in `workflow.yaml`); empty for
    /// subworkflow-only workflows that have none.
    pub command_name: String,
    /// How many phases a task goes through: the concrete phases, a subworkflow counted by its own phases.
    pub phase_count: u32,
    /// How many entries the workflow's own phase list has, a subworkflow counting as one: what
    /// the breadcrumb's first `[i/N]` counts.
    pub outer_phase_count: u32,
    /// Whether users may start it (`user`) or it only runs inside another workflow (`workflows`).
    pub show: Show,
    /// The directory the workflow was loaded from.
    pub source: String,
}

/// Starts a task: the agent begins work on `description`, guided by a workflow.
#[derive(Debug)]
pub enum StartTask {}

impl Request for StartTask {
    type Params = StartTaskParams;
    type Result = StartTaskResult;
    const METHOD: &'static str = "rawko/startTask";
}

/// The params of `rawko/startTask`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StartTaskParams {
    /// What the user wants done, in their words.
    pub description: String,
    /// The key of the workflow to run; the configured default when absent.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub workflow: Option<String>,
    /// The agent to run phases that name none; the configured default when absent.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub agent: Option<String>,
    /// The provider to use (e.g. `anthropic`, `openai`, `scripted`); the configured default when
    /// absent.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub provider: Option<String>,
    /// The model to ask; the provider's default when absent.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub model: Option<String>,
    /// With provider `scripted`: the path of the script of model turns to replay.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub script: Option<String>,
}

/// The result of `rawko/startTask`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StartTaskResult {
    /// The new task's id; every later message about the task carries it.
    pub task_id: TaskId,
}

/// Cancels a task. The task ends with outcome `cancelled`.
#[derive(Debug)]
pub enum CancelTask {}

impl Request for CancelTask {
    type Params = CancelTaskParams;
    type Result = CancelTaskResult;
    const METHOD: &'static str = "rawko/cancelTask";
}

/// The params of `rawko/cancelTask`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskParams {
    /// The task to cancel.
    pub task_id: TaskId,
}

/// The result of `rawko/cancelTask`: empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskResult {}

/// Moves a task through its workflow by hand, as the agent's `workflow_step` tool does.
#[derive(Debug)]
pub enum Step {}

impl Request for Step {
    type Params = StepParams;
    type Result = StepResult;
    const METHOD: &'static str = "rawko/step";
}

/// What `rawko/step` does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepAction {
    /// Advance to the next phase (entering or leaving subworkflows as needed).
    Next,
    /// Go back to the start of the current scope, if the workflow is loopable.
    Loop,
    /// Change nothing; describe where the task stands.
    Status,
}

/// The params of `rawko/step`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepParams {
    /// The task to move.
    pub task_id: TaskId,
    /// What to do.
    pub action: StepAction,
}

/// The result of `rawko/step`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepResult {
    /// What happened, as the agent would be told (Markdown).
    pub text: String,
}

/// Stops a running auto-continue countdown: the reminder is not sent and the task waits for the
/// user.
#[derive(Debug)]
pub enum Interrupt {}

impl Request for Interrupt {
    type Params = InterruptParams;
    type Result = InterruptResult;
    const METHOD: &'static str = "rawko/interrupt";
}

/// The params of `rawko/interrupt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InterruptParams {
    /// The task whose countdown to stop.
    pub task_id: TaskId,
}

/// The result of `rawko/interrupt`: empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InterruptResult {}

/// Sends the user's message to a task's agent, as the next user turn.
#[derive(Debug)]
pub enum SendMessage {}

impl Request for SendMessage {
    type Params = SendMessageParams;
    type Result = SendMessageResult;
    const METHOD: &'static str = "rawko/sendMessage";
}

/// The params of `rawko/sendMessage`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageParams {
    /// The task to talk to.
    pub task_id: TaskId,
    /// The message.
    pub text: String,
}

/// The result of `rawko/sendMessage`: empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageResult {}

/// Resumes a task that stopped: after a restart of rawko or the machine, or one that is blocked.
/// Steps whose completion was recorded are not run again.
#[derive(Debug)]
pub enum ResumeTask {}

impl Request for ResumeTask {
    type Params = ResumeTaskParams;
    type Result = ResumeTaskResult;
    const METHOD: &'static str = "rawko/resumeTask";
}

/// The params of `rawko/resumeTask`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResumeTaskParams {
    /// The task to resume.
    pub task_id: TaskId,
}

/// The result of `rawko/resumeTask`: empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResumeTaskResult {}

/// Starts a workflow in a task that runs none yet: an external agent's session (Claude Code
/// through `rawko hook`) that began without `--workflow` and without a configured
/// `defaultWorkflow`. Fails with `-32003` when the task already runs a workflow or has ended, and
/// with `-32004` when no workflow has that key.
#[derive(Debug)]
pub enum SetWorkflow {}

impl Request for SetWorkflow {
    type Params = SetWorkflowParams;
    type Result = SetWorkflowResult;
    const METHOD: &'static str = "rawko/setWorkflow";
}

/// The params of `rawko/setWorkflow`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetWorkflowParams {
    /// The task.
    pub task_id: TaskId,
    /// The key (or command name) of the workflow to start.
    pub workflow: String,
}

/// The result of `rawko/setWorkflow`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetWorkflowResult {
    /// What happened, ready to show, e.g. `Started the Feature workflow.`
    pub text: String,
}

/// Makes a named agent run the task from its next turn on, overriding the arbiter's choice.
#[derive(Debug)]
pub enum ForceAgent {}

impl Request for ForceAgent {
    type Params = ForceAgentParams;
    type Result = ForceAgentResult;
    const METHOD: &'static str = "rawko/forceAgent";
}

/// The params of `rawko/forceAgent`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForceAgentParams {
    /// The task.
    pub task_id: TaskId,
    /// The name of the agent to run.
    pub agent: String,
}

/// The result of `rawko/forceAgent`: empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForceAgentResult {}

/// Skips the step the task is on and goes on with the next one.
#[derive(Debug)]
pub enum SkipStep {}

impl Request for SkipStep {
    type Params = SkipStepParams;
    type Result = SkipStepResult;
    const METHOD: &'static str = "rawko/skipStep";
}

/// The params of `rawko/skipStep`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkipStepParams {
    /// The task.
    pub task_id: TaskId,
}

/// The result of `rawko/skipStep`: empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkipStepResult {}

/// Runs the step that failed once more.
#[derive(Debug)]
pub enum Retry {}

impl Request for Retry {
    type Params = RetryParams;
    type Result = RetryResult;
    const METHOD: &'static str = "rawko/retry";
}

/// The params of `rawko/retry`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryParams {
    /// The task.
    pub task_id: TaskId,
}

/// The result of `rawko/retry`: empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryResult {}

/// Resets the task's failure and iteration counts so that a task stopped by a limit can go on.
#[derive(Debug)]
pub enum Reset {}

impl Request for Reset {
    type Params = ResetParams;
    type Result = ResetResult;
    const METHOD: &'static str = "rawko/reset";
}

/// The params of `rawko/reset`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResetParams {
    /// The task.
    pub task_id: TaskId,
}

/// The result of `rawko/reset`: empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResetResult {}

/// Loads every workflow afresh and reports what is wrong with them, without starting anything.
#[derive(Debug)]
pub enum ValidateWorkflows {}

impl Request for ValidateWorkflows {
    type Params = ValidateWorkflowsParams;
    type Result = ValidateWorkflowsResult;
    const METHOD: &'static str = "rawko/validateWorkflows";
}

/// The params of `rawko/validateWorkflows`: none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValidateWorkflowsParams {}

/// The result of `rawko/validateWorkflows`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ValidateWorkflowsResult {
    /// Every problem found; empty when all workflows are valid.
    pub diagnostics: Vec<WorkflowDiagnostic>,
}

/// What the server holds right now: tasks, open files, memory and the log writer's work. For
/// finding a leak, sizing a machine, and the benchmarks.
#[derive(Debug)]
pub enum ServerStats {}

impl Request for ServerStats {
    type Params = ServerStatsParams;
    type Result = ServerStatsResult;
    const METHOD: &'static str = "rawko/serverStats";
}

/// The params of `rawko/serverStats`: none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatsParams {}

/// The result of `rawko/serverStats`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServerStatsResult {
    /// Tasks the server holds in memory: those whose actor has not ended (an ended task is read
    /// from the store).
    pub tasks_in_memory: u64,
    /// External agents' sessions the server knows (one entry per session).
    pub external_sessions: u64,
    /// Requests to the client still waiting for an answer (approvals, trust).
    pub pending_client_requests: u64,
    /// Tasks alive in the server's async runtime (each running task is one, plus the server's
    /// own).
    pub runtime_tasks: u64,
    /// File descriptors the process has open (Linux; 0 elsewhere).
    pub open_files: u64,
    /// Task logs the log writer holds open.
    pub open_logs: u64,
    /// Batches the log writer has written, records in them, and syncs it made.
    pub log_batches: u64,
    pub log_records: u64,
    pub log_syncs: u64,
    /// The resident memory of the process, now and at its peak, in bytes (Linux; 0 elsewhere).
    pub rss_bytes: u64,
    pub peak_rss_bytes: u64,
    /// Bytes queued for the log writer now (records, snapshots, the announcements behind them),
    /// and the most there ever were: past a bound, tasks wait for the writer before their next
    /// model turn or tool call.
    pub log_backlog_bytes: u64,
    pub peak_log_backlog_bytes: u64,
    /// Times a task waited for the log writer's backlog to go down.
    pub log_backlog_waits: u64,
    /// Bytes of messages queued for the client (not yet written to it), and the most there ever
    /// were.
    pub outgoing_bytes: u64,
    pub peak_outgoing_bytes: u64,
    /// How long announcements waited from being queued, just after the records they follow,
    /// until those records were durable and they went out: `[upper bound in µs, count]` for
    /// each bucket with any, since the server started (the last bound is
    /// 18446744073709551615: anything longer).
    pub announce_latency_micros: Vec<[u64; 2]>,
}

/// How bad a [`WorkflowDiagnostic`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// The workflow cannot be used; it was skipped.
    Error,
    /// The workflow loads, but something is probably not what its author meant.
    Warning,
}

/// A problem in a workflow file, placed so an editor can show it in its problems list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowDiagnostic {
    /// The file the problem is in.
    pub path: String,
    /// The 1-based line, when the parser knows it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub line: Option<u32>,
    /// The 1-based column, when the parser knows it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub column: Option<u32>,
    /// How bad it is.
    pub severity: Severity,
    /// The key of the workflow the problem belongs to, when there is one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub workflow: Option<String>,
    /// What is wrong, in one line.
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc_examples::check_request;

    #[test]
    fn list_workflows() {
        check_request::<ListWorkflows>();
    }

    #[test]
    fn start_task() {
        check_request::<StartTask>();
    }

    #[test]
    fn cancel_task() {
        check_request::<CancelTask>();
    }

    #[test]
    fn step() {
        check_request::<Step>();
    }

    #[test]
    fn interrupt() {
        check_request::<Interrupt>();
    }

    #[test]
    fn send_message() {
        check_request::<SendMessage>();
    }

    #[test]
    fn list_tasks() {
        check_request::<ListTasks>();
    }

    #[test]
    fn get_task() {
        check_request::<GetTask>();
    }

    #[test]
    fn phase_prompt() {
        check_request::<PhasePrompt>();
    }

    #[test]
    fn phase_diff() {
        check_request::<PhaseDiff>();
    }

    #[test]
    fn resume_task() {
        check_request::<ResumeTask>();
    }

    #[test]
    fn rewind_task() {
        check_request::<RewindTask>();
    }

    #[test]
    fn set_workflow() {
        check_request::<SetWorkflow>();
    }

    #[test]
    fn force_agent() {
        check_request::<ForceAgent>();
    }

    #[test]
    fn skip_step() {
        check_request::<SkipStep>();
    }

    #[test]
    fn retry() {
        check_request::<Retry>();
    }

    #[test]
    fn reset() {
        check_request::<Reset>();
    }

    #[test]
    fn validate_workflows() {
        check_request::<ValidateWorkflows>();
        check_request::<ServerStats>();
    }

    #[test]
    fn optional_fields_are_left_out_when_absent() {
        let params = StartTaskParams {
            description: "fix the bug".to_owned(),
            workflow: None,
            agent: None,
            provider: None,
            model: None,
            script: None,
        };
        assert_eq!(
            serde_json::to_value(&params).unwrap(),
            serde_json::json!({"description": "fix the bug"})
        );
    }

    #[test]
    fn unknown_step_action_is_rejected() {
        let err = serde_json::from_value::<StepParams>(
            serde_json::json!({"taskId": "t1", "action": "cancel"}),
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("unknown variant `cancel`"),
            "{err}"
        );
    }
}

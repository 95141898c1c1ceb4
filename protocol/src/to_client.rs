//! Server → client methods: what rawko tells or asks the editor about a task. The notifications
//! carry a per-task `seq` that starts at 1 and grows by one with every notification of that task,
//! so a client orders them by it and notices gaps.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::types::{
    BreadcrumbItem, ExternalAgent, StateClass, SubagentInfo, TaskAction, TaskId, TaskState,
};
use crate::{Notification, Request};

/// Asks the user whether a tool call that the current phase blocks may run anyway.
///
/// A request with no answer within the approval timeout (default 120 s) counts as `reject_once`.
#[derive(Debug)]
pub enum ApproveToolCall {}

impl Request for ApproveToolCall {
    type Params = ApproveToolCallParams;
    type Result = ApproveToolCallResult;
    const METHOD: &'static str = "rawko/approveToolCall";
}

/// A choice the user is offered for a blocked tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalOption {
    /// Let this one call run.
    AllowOnce,
    /// Let this tool run for the rest of the task without asking again.
    AllowAlways,
    /// Refuse this call; the agent is told why.
    RejectOnce,
    /// Refuse this tool for the rest of the task without asking again.
    RejectAlways,
}

impl ApprovalOption {
    /// Every option, in the order a client should offer them.
    pub const ALL: [ApprovalOption; 4] = [
        ApprovalOption::AllowOnce,
        ApprovalOption::AllowAlways,
        ApprovalOption::RejectOnce,
        ApprovalOption::RejectAlways,
    ];
}

/// The user's answer to `rawko/approveToolCall`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalOutcome {
    /// Let this one call run.
    AllowOnce,
    /// Let this tool run for the rest of the task without asking again.
    AllowAlways,
    /// Refuse this call; the agent is told why.
    RejectOnce,
    /// Refuse this tool for the rest of the task without asking again.
    RejectAlways,
    /// The user dismissed the question without choosing, or the task ended meanwhile; the call
    /// does not run.
    Cancelled,
}

impl From<ApprovalOption> for ApprovalOutcome {
    fn from(option: ApprovalOption) -> Self {
        match option {
            ApprovalOption::AllowOnce => ApprovalOutcome::AllowOnce,
            ApprovalOption::AllowAlways => ApprovalOutcome::AllowAlways,
            ApprovalOption::RejectOnce => ApprovalOutcome::RejectOnce,
            ApprovalOption::RejectAlways => ApprovalOutcome::RejectAlways,
        }
    }
}

/// The params of `rawko/approveToolCall`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApproveToolCallParams {
    /// The task whose agent made the call.
    pub task_id: TaskId,
    /// The id of the tool call, as `rawko/output` notifications of kind `tool_call` name it.
    pub tool_call_id: String,
    /// The tool's name, e.g. `Write`.
    pub tool: String,
    /// The tool call's input, as the agent sent it.
    pub input: serde_json::Value,
    /// The name of the phase that blocks the tool.
    pub phase: String,
    /// Why the call was blocked, as the agent is told it (the text written for the model).
    pub reason: String,
    /// The human-facing reason, ready to show the user, e.g. `Write is blocked in the Plan phase
    /// (allowed: Read, Glob, Grep)`, or `a PreToolUse hook asks: <why>`.
    pub detail: String,
    /// The choices to offer, in order.
    pub options: Vec<ApprovalOption>,
    /// The call in one line, ready to show, e.g. `Write notes.md (12 bytes)`.
    pub summary: String,
    /// When the request counts as `reject_once` if it has no answer: milliseconds since the Unix
    /// epoch.
    pub expires_at: u64,
    /// The approval timeout: how many seconds the request waits in all (rounded up).
    pub timeout_seconds: u64,
    /// What happens when the request gets no answer, ready to show, e.g. `denied once if there
    /// is no answer within 120 s`.
    pub timeout_text: String,
    /// The words before the time left in a live countdown to `expiresAt`, e.g. `denied in` (as
    /// in `denied in 1:05`).
    pub timeout_label: String,
    /// Set when a subagent made the call: who it is (`label`, e.g. `reviewer (subagent of
    /// task-1795-1)`, which `detail` also starts with).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub subagent: Option<SubagentInfo>,
}

/// rawko withdrew a `rawko/approveToolCall` it had sent: the approval timed out, or the task
/// stopped waiting for it (cancelled, or it ended). The client closes the question about that
/// tool call; rawko also sends `$/cancelRequest` for the request, which names it by its JSON-RPC
/// id, and a `rawko/status` says why.
#[derive(Debug)]
pub enum ApprovalWithdrawn {}

impl Notification for ApprovalWithdrawn {
    type Params = ApprovalWithdrawnParams;
    const METHOD: &'static str = "rawko/approvalWithdrawn";
}

/// The params of `rawko/approvalWithdrawn`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalWithdrawnParams {
    /// The task whose approval was withdrawn.
    pub task_id: TaskId,
    /// The `toolCallId` of the withdrawn `rawko/approveToolCall`.
    pub tool_call_id: String,
}

/// The result of `rawko/approveToolCall`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApproveToolCallResult {
    /// One of the offered options, or `cancelled`.
    pub outcome: ApprovalOutcome,
}

/// Asks the user whether to trust the workspace. Hooks in `<workspace>/.rawko/config.json` (and
/// AutoAgent's `.autoagent/config.json`) run commands, and its `providers`, `arbiter` and
/// `apiKeys` choose what runs and where requests and keys go, so rawko uses them only in a
/// workspace the user trusts; trust is recorded with a hash of them, and a change is asked about
/// again.
#[derive(Debug)]
pub enum TrustWorkspace {}

impl Request for TrustWorkspace {
    type Params = TrustWorkspaceParams;
    type Result = TrustWorkspaceResult;
    const METHOD: &'static str = "rawko/trustWorkspace";
}

/// The params of `rawko/trustWorkspace`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustWorkspaceParams {
    /// The workspace folder whose `.rawko/config.json` (or `.autoagent/config.json`) defines hooks
    /// or settings that need trust.
    pub workspace: String,
    /// The hooks, one line each, e.g. `PreToolUse [Bash]: ./check.sh`.
    pub hooks: Vec<String>,
    /// The settings that choose what runs or where keys go (`providers`, `arbiter`, `apiKeys`),
    /// one line each with the command a provider runs and the base URL it sends the key to, e.g.
    /// `provider anthropic at http://127.0.0.1:8080`; a key's value is never shown, only the
    /// provider it is for.
    #[serde(default)]
    pub settings: Vec<String>,
    /// `true` when the workspace was trusted before and its hooks or settings changed since.
    pub changed: bool,
}

/// The result of `rawko/trustWorkspace`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustWorkspaceResult {
    /// Whether the user trusts the workspace; its hooks run only when `true`.
    pub trusted: bool,
}

/// rawko withdrew a `rawko/trustWorkspace` it had sent: the question got no answer within the
/// approval timeout, and the workspace is not trusted. The client closes its question about
/// that workspace; rawko also sends `$/cancelRequest` for the request.
#[derive(Debug)]
pub enum TrustWithdrawn {}

impl Notification for TrustWithdrawn {
    type Params = TrustWithdrawnParams;
    const METHOD: &'static str = "rawko/trustWithdrawn";
}

/// The params of `rawko/trustWithdrawn`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustWithdrawnParams {
    /// The `workspace` of the withdrawn `rawko/trustWorkspace`.
    pub workspace: String,
}

/// The task's state, breadcrumb and status line changed.
#[derive(Debug)]
pub enum Status {}

impl Notification for Status {
    type Params = StatusParams;
    const METHOD: &'static str = "rawko/status";
}

/// The params of `rawko/status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatusParams {
    /// The task.
    pub task_id: TaskId,
    /// The notification's place among the task's notifications, from 1.
    pub seq: u64,
    /// Where the task stands now.
    pub state: TaskState,
    /// The breadcrumb, outermost workflow first; empty when the task runs no workflow.
    pub breadcrumb: Vec<BreadcrumbItem>,
    /// The status line to show, e.g. `Feature > 🧪 Test [3/4]`.
    pub text: String,
    /// The key of the workflow the task runs; absent when it runs none (e.g. an external agent's
    /// session that began without one).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub workflow: Option<String>,
    /// The display name of that workflow, e.g. `Feature`; absent when the task runs none.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub workflow_name: Option<String>,
    /// Where the task is, without its state: the breadcrumb as one line (`Feature > 🧪 Test
    /// [3/4]`), the workflow's name once the workflow finished, or the task's description when it
    /// runs no workflow. `text` is this line with the state added.
    pub breadcrumb_text: String,
    /// Why the state changed, when that is worth telling (e.g. an approval timed out).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub reason: Option<String>,
    /// The current concrete phase's `index` in `rawko/getTask`'s `TaskDetail.phases`; absent when
    /// the task runs no workflow or the workflow has finished.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub phase_index: Option<u32>,
    /// How many concrete phases are done: a phase whose `index` is below it is done, the one at
    /// `phaseIndex` is current, the others are to do. Every phase is done once the workflow
    /// finished (then it is 4294967295); a cancelled task's phases from where it stopped on are
    /// to do. Absent when the task runs no workflow.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub phases_done: Option<u32>,
    /// What the state means for the user: the task works, waits for the user, or has ended.
    pub state_class: StateClass,
    /// `true` when the task is an external agent's session (Claude Code through `rawko hook`).
    pub external: bool,
    /// Which external agent the session fronts (`claude`, `gemini`); absent for rawko's own tasks.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub external_agent: Option<ExternalAgent>,
    /// That agent's name for people (`Claude Code`, `Gemini CLI`), for the status and the task
    /// list to show as it is; absent for rawko's own tasks.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub external_agent_name: Option<String>,
    /// `breadcrumbText` as its levels, outermost first, for a client that shortens or joins
    /// them its own way: `["Feature", "Review [3/4]", "🔎 Check [1/2]"]`; one level when the
    /// task runs no workflow or has finished it.
    pub breadcrumb_levels: Vec<String>,
    /// The commands the task accepts now, each named after the method that sends it (`resume`
    /// is `rawko/resumeTask`, `message` is `rawko/sendMessage`, …): a client offers these and no
    /// others, instead of testing state names.
    pub actions: Vec<TaskAction>,
    /// The state as words to show after `breadcrumbText`, e.g. ` — waiting for approval`; empty
    /// while the task runs. `text` is `breadcrumbText` followed by it.
    pub state_text: String,
    /// Set when the task is a subagent: its parent, profile and label; absent for every other
    /// task. A client shows such a task under its parent.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub subagent: Option<SubagentInfo>,
}

/// The auto-continue countdown ticks: sent once a second while it runs.
#[derive(Debug)]
pub enum Countdown {}

impl Notification for Countdown {
    type Params = CountdownParams;
    const METHOD: &'static str = "rawko/countdown";
}

/// The params of `rawko/countdown`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CountdownParams {
    /// The task.
    pub task_id: TaskId,
    /// The notification's place among the task's notifications, from 1.
    pub seq: u64,
    /// Whole seconds until the reminder is sent; 1 on the last tick.
    pub seconds_left: u32,
    /// The text to show, e.g. `⏳ Auto-continuing in 3s — interrupt to stop`.
    pub text: String,
    /// The countdown alone, without the hint, for a client that says its own way to stop it:
    /// e.g. `⏳ Auto-continuing in 3s`.
    pub label: String,
}

/// Something for the task's output panel: the agent's text, tool calls and results, injected
/// context, reminders, hook output.
#[derive(Debug)]
pub enum Output {}

impl Notification for Output {
    type Params = OutputParams;
    const METHOD: &'static str = "rawko/output";
}

/// What a `rawko/output` notification carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputKind {
    /// A piece of the agent's text, to append to what came before.
    AssistantDelta,
    /// The agent calls a tool.
    ToolCall,
    /// A tool call's result.
    ToolResult,
    /// The phase's context that rawko put before the agent's turn.
    ContextInjected,
    /// A reminder rawko sent because the agent stopped before the workflow was done.
    Reminder,
    /// What a hook printed.
    HookOutput,
    /// The workflow's completion message.
    Completion,
    /// An error the user should see (a provider error, a failed hook, a broken workflow).
    Error,
    /// Another agent takes the task over (selected or forced; not sent for the first agent):
    /// `text` is a one-line separator such as `── handoff: planner → developer ──`, `agent` the
    /// new agent.
    Handoff,
    /// A subagent of an external agent (Claude Code's `Agent` tool) started or stopped: `agent`
    /// is its type, `agentId` its id; show it under the task's session.
    Subagent,
}

/// The params of `rawko/output`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OutputParams {
    /// The task.
    pub task_id: TaskId,
    /// The notification's place among the task's notifications, from 1.
    pub seq: u64,
    /// What this is.
    pub kind: OutputKind,
    /// The text to show (Markdown for the agent's text).
    pub text: String,
    /// With `tool_call` and `tool_result`: the id of the tool call.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tool_call_id: Option<String>,
    /// With `tool_call` and `tool_result`: the tool's name.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tool: Option<String>,
    /// With `tool_call`: the tool call's input.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub input: Option<serde_json::Value>,
    /// With `tool_result`: `true` when the tool failed or the call was blocked.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub is_error: Option<bool>,
    /// With `handoff`: the agent that takes over; with `subagent`: the subagent's type.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub agent: Option<String>,
    /// With `subagent`: the subagent's id, as the external agent names it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub agent_id: Option<String>,
}

/// The task ended. It is the task's last notification.
#[derive(Debug)]
pub enum TaskFinished {}

impl Notification for TaskFinished {
    type Params = TaskFinishedParams;
    const METHOD: &'static str = "rawko/taskFinished";
}

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskOutcome {
    /// The workflow finished.
    Complete,
    /// The task stopped on an error or an exhausted limit.
    Failed,
    /// The user cancelled the task.
    Cancelled,
}

/// The params of `rawko/taskFinished`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskFinishedParams {
    /// The task.
    pub task_id: TaskId,
    /// The notification's place among the task's notifications, from 1.
    pub seq: u64,
    /// How the task ended.
    pub outcome: TaskOutcome,
    /// What was done, or why it failed, for people (Markdown).
    pub summary: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc_examples::{check_notification, check_request};

    #[test]
    fn approve_tool_call() {
        check_request::<ApproveToolCall>();
    }

    #[test]
    fn trust_workspace() {
        check_request::<TrustWorkspace>();
    }

    #[test]
    fn status() {
        check_notification::<Status>();
    }

    #[test]
    fn countdown() {
        check_notification::<Countdown>();
    }

    #[test]
    fn output() {
        check_notification::<Output>();
    }

    #[test]
    fn approval_withdrawn() {
        check_notification::<ApprovalWithdrawn>();
    }

    #[test]
    fn trust_withdrawn() {
        check_notification::<TrustWithdrawn>();
    }

    #[test]
    fn task_finished() {
        check_notification::<TaskFinished>();
    }

    #[test]
    fn every_option_is_also_an_outcome() {
        for option in ApprovalOption::ALL {
            let as_option = serde_json::to_value(option).unwrap();
            let as_outcome = serde_json::to_value(ApprovalOutcome::from(option)).unwrap();
            assert_eq!(as_option, as_outcome);
        }
        assert_eq!(
            serde_json::to_value(ApprovalOutcome::Cancelled).unwrap(),
            serde_json::json!("cancelled")
        );
    }
}

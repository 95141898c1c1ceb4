//! The local endpoint's messages: what an external agent's side of rawko (`rawko hook`, run by
//! the agent's hooks, and `rawko mcp`, the agent's MCP server) sends to the rawko that runs its
//! task, as JSON-RPC 2.0 over HTTP on loopback with the endpoint's token. The server answers them
//! in one place (`server/src/endpoint/`), for an editor's server (external agents' sessions) and
//! for the `acp` provider's task (its agent's `rawko mcp`). [`ENDPOINT_METHODS`] lists them, and
//! `protocol/schema/endpoint.*.json` are their schemas.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::methods::{Direction, MethodInfo};
use crate::types::{ExternalAgent, TaskState};
use crate::Request;

/// `rawko.hook`: one hook event of an external agent (Claude Code, Gemini CLI, Codex), answered
/// as the hook's command answers it, in that agent's format.
#[derive(Debug)]
pub enum Hook {}

impl Request for Hook {
    type Params = HookParams;
    type Result = HookResult;
    const METHOD: &'static str = "rawko.hook";
}

/// The event and the agent's own hook input.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookParams {
    /// The hook event's name (`PreToolUse`, `Stop`, …).
    #[serde(default)]
    pub event: String,
    /// The JSON the agent gave the hook on its stdin, unchanged.
    #[serde(default)]
    pub input: Value,
    /// The workflow a new session starts in (`rawko hook --workflow KEY`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    /// The agent whose hook this is (`rawko hook --gemini` sends `gemini`, `--codex` `codex`); absent for Claude
    /// Code, which is what older `rawko hook`s mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<ExternalAgent>,
    /// The agent runs with nobody at it to ask (Claude Code's print mode, `claude -p`, which
    /// sets `CLAUDE_CODE_SESSION_ATTENDED=0` for its hooks): a call rawko can ask nobody about
    /// is deferred (PreToolUse `defer`), so the session stops there and goes on when resumed,
    /// rather than being refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unattended: bool,
}

/// What the hook's command exits with and writes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookResult {
    /// The exit status (2 blocks, for the events that can be blocked).
    #[serde(default)]
    pub exit_code: i32,
    /// What the command writes to stdout (the hook's JSON answer, when there is one).
    #[serde(default)]
    pub stdout: String,
    /// What the command writes to stderr (the reason of a block, a note).
    #[serde(default)]
    pub stderr: String,
}

/// `rawko.workflowStep`: the agent's `workflow_step` tool.
#[derive(Debug)]
pub enum WorkflowStep {}

impl Request for WorkflowStep {
    type Params = WorkflowStepParams;
    type Result = ToolAnswer;
    const METHOD: &'static str = "rawko.workflowStep";
}

/// The step and the session it is for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowStepParams {
    /// `next`, `loop` or `status`; anything else is refused by the task with the list.
    #[serde(default = "status")]
    pub action: String,
    /// The agent's session; without it, the newest unfinished external session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

fn status() -> String {
    "status".to_owned()
}

/// `rawko.workflowStatus`: the agent's `workflow_status` tool.
#[derive(Debug)]
pub enum WorkflowStatus {}

impl Request for WorkflowStatus {
    type Params = SessionParams;
    type Result = ToolAnswer;
    const METHOD: &'static str = "rawko.workflowStatus";
}

/// The session a tool is for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionParams {
    /// The agent's session; without it, the newest unfinished external session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// `rawko.workflowStart`: the agent's `workflow_start` tool.
#[derive(Debug)]
pub enum WorkflowStart {}

impl Request for WorkflowStart {
    type Params = WorkflowStartParams;
    type Result = ToolAnswer;
    const METHOD: &'static str = "rawko.workflowStart";
}

/// The workflow to start.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowStartParams {
    /// The workflow's key or command name.
    #[serde(default)]
    pub workflow: String,
    /// The agent's session; without it, the newest unfinished external session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// `rawko.mcpConnected`: `rawko mcp` says the agent listed its tools.
#[derive(Debug)]
pub enum McpConnected {}

impl Request for McpConnected {
    type Params = SessionParams;
    type Result = Ok;
    const METHOD: &'static str = "rawko.mcpConnected";
}

/// `rawko.ping`: whether the endpoint answers.
#[derive(Debug)]
pub enum Ping {}

impl Request for Ping {
    type Params = Value;
    type Result = Ok;
    const METHOD: &'static str = "rawko.ping";
}

/// An answer that only says it was taken.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Ok {
    /// Always true.
    pub ok: bool,
}

/// What a workflow tool answers the agent: a text, or the task's status.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolAnswer {
    /// False when the tool failed: `text` says why, and the agent is shown it as an error.
    pub ok: bool,
    /// The text the agent is shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `rawko.workflowStatus` of an editor's server: where the session's task is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<SessionStatus>,
}

impl ToolAnswer {
    /// A tool that answered `text`.
    pub fn done(text: impl Into<String>) -> ToolAnswer {
        ToolAnswer {
            ok: true,
            text: Some(text.into()),
            status: None,
        }
    }

    /// A tool that failed, saying why.
    pub fn failed(why: impl Into<String>) -> ToolAnswer {
        ToolAnswer {
            ok: false,
            text: Some(why.into()),
            status: None,
        }
    }
}

/// Where an external session's task is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatus {
    /// The task that stands for the session.
    pub task_id: String,
    /// Its state.
    pub state: TaskState,
    /// The workflow it runs, when it runs one.
    pub workflow: Option<String>,
    /// The breadcrumb as one line.
    pub breadcrumb: String,
    /// The status text the editor shows.
    pub text: String,
}

/// Every method of the local endpoint (all requests, sent to the server).
pub const ENDPOINT_METHODS: &[MethodInfo] = &[
    MethodInfo::request::<Hook>(Direction::ClientToServer),
    MethodInfo::request::<WorkflowStep>(Direction::ClientToServer),
    MethodInfo::request::<WorkflowStatus>(Direction::ClientToServer),
    MethodInfo::request::<WorkflowStart>(Direction::ClientToServer),
    MethodInfo::request::<McpConnected>(Direction::ClientToServer),
    MethodInfo::request::<Ping>(Direction::ClientToServer),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_messages_read_as_the_senders_of_older_rawkos_write_them() {
        let step: WorkflowStepParams = serde_json::from_value(serde_json::json!({})).unwrap();
        assert_eq!(step.action, "status");
        let hook: HookParams = serde_json::from_value(
            serde_json::json!({"event": "Stop", "input": {"a": 1}, "workflow": null}),
        )
        .unwrap();
        assert_eq!(hook.event, "Stop");
        assert_eq!(hook.workflow, None);
        // Without an agent, the hook is Claude Code's.
        assert_eq!(hook.agent, None);
        let gemini: HookParams = serde_json::from_value(
            serde_json::json!({"event": "BeforeTool", "input": {}, "agent": "gemini"}),
        )
        .unwrap();
        assert_eq!(gemini.agent, Some(ExternalAgent::Gemini));
        let codex: HookParams = serde_json::from_value(
            serde_json::json!({"event": "PreToolUse", "input": {}, "agent": "codex"}),
        )
        .unwrap();
        assert_eq!(codex.agent, Some(ExternalAgent::Codex));
        let answer: ToolAnswer =
            serde_json::from_value(serde_json::json!({"ok": false, "text": "no"})).unwrap();
        assert_eq!(answer, ToolAnswer::failed("no"));
        assert_eq!(
            serde_json::to_value(HookResult {
                exit_code: 2,
                stdout: String::new(),
                stderr: "blocked".into()
            })
            .unwrap(),
            serde_json::json!({"exitCode": 2, "stdout": "", "stderr": "blocked"})
        );
    }
}

//! Answering what the agent waits for (a permission request, an `fs/*` or `terminal/create`
//! request, rawko's MCP tool, a write rawko makes for it) from the result of its call in the task.

use agent_client_protocol::v1::schema::{
    CreateTerminalResponse, PermissionOption, ReadTextFileResponse, RequestPermissionOutcome,
    RequestPermissionResponse, TerminalId, WriteTextFileResponse,
};
use agent_client_protocol::{Error, ErrorCode};
use tokio::sync::oneshot;

use super::calls::{choose, missing_beneath, terminal_result};
use super::from_agent::Reply;
use super::AcpAgentProvider;
use crate::provider::{ToolCall, ToolResult};
use crate::sandbox::WorkspaceAccess;

/// A request of the agent waiting for the task's decision on its call.
pub(super) enum Pending {
    Permission {
        responder: Reply<RequestPermissionResponse>,
        options: Vec<PermissionOption>,
        call: ToolCall,
        /// When the agent asked (the decision's latency is logged).
        asked: std::time::Instant,
    },
    /// The file it asked for.
    Read(Reply<ReadTextFileResponse>, std::path::PathBuf),
    Write(Reply<WriteTextFileResponse>),
    Terminal(Reply<CreateTerminalResponse>),
    Step(oneshot::Sender<(String, bool)>),
    /// rawko makes the agent's approved write its process could not make ([`super::carry`]).
    Carry(ToolCall),
}

pub(super) fn refuse<T: agent_client_protocol::JsonRpcResponse>(responder: Reply<T>, why: &str) {
    let _ = responder.respond_with_error(Error::new(ErrorCode::INVALID_REQUEST, why.to_owned()));
}

/// What rawko answered a request of an agent that was ended before it got the answer, for its
/// next prompt.
pub(super) fn answered(pending: &Pending, result: &ToolResult, access: WorkspaceAccess) -> String {
    let what = match pending {
        Pending::Permission { call, .. } => format!("permission request for {}", call.name),
        Pending::Read(..) => "fs/read_text_file request".to_owned(),
        Pending::Write(_) => "fs/write_text_file request".to_owned(),
        Pending::Terminal(_) => "terminal/create request".to_owned(),
        Pending::Step(_) => format!("{} call", crate::workflow::step::TOOL_NAME),
        Pending::Carry(call) => format!("{} call (which rawko was making for you)", call.name),
    };
    format!(
        "rawko restarted you with the workspace {} for the new phase before it could answer your {what}; the answer{}: {}",
        match access {
            WorkspaceAccess::ReadOnly => "read-only",
            _ => "writable",
        },
        if result.is_error { " (an error)" } else { "" },
        crate::clip::clip_bytes(&result.content, 4000)
    )
}

impl AcpAgentProvider {
    /// Answers what a request of the agent was waiting for, from its call's result.
    pub(super) fn answer(&mut self, pending: Pending, result: &ToolResult) {
        match pending {
            Pending::Permission {
                responder,
                options,
                call,
                asked,
            } => {
                let allow = !result.is_error;
                tracing::debug!(
                    "answered the agent's permission request for {} in {} us ({})",
                    call.name,
                    asked.elapsed().as_micros(),
                    if allow { "allowed" } else { "refused" }
                );
                if allow {
                    self.grants.allowed(&call, &self.command.cwd);
                    self.approved_own(&call);
                } else {
                    self.grants.refused(&call.id);
                    self.refusals.push(format!(
                        "rawko refused your {} call: {}",
                        call.name, result.content
                    ));
                }
                let _ = responder.respond(RequestPermissionResponse::new(choose(&options, allow)));
            }
            Pending::Read(responder, path) => {
                if missing_beneath(&path, &self.command.cwd, result) {
                    // What Zed answers for a file of the project that is not on disk.
                    let _ = responder.respond(ReadTextFileResponse::new(String::new()));
                } else if result.is_error {
                    refuse(responder, &result.content);
                } else {
                    let _ = responder.respond(ReadTextFileResponse::new(result.content.clone()));
                }
            }
            Pending::Write(responder) => {
                if result.is_error {
                    refuse(responder, &result.content);
                } else {
                    let _ = responder.respond(WriteTextFileResponse::new());
                }
            }
            Pending::Terminal(responder) => match terminal_result(&result.content) {
                Some(finished) => {
                    let id = result.tool_call_id.clone();
                    self.terminals.insert(id.clone(), finished);
                    let _ = responder.respond(CreateTerminalResponse::new(TerminalId::new(id)));
                }
                None => refuse(responder, &result.content),
            },
            Pending::Step(reply) => {
                let _ = reply.send((result.content.clone(), result.is_error));
            }
            Pending::Carry(call) => self.carried(&call, result),
        }
    }

    pub(super) fn refuse_pending(&mut self, pending: Pending, why: &str) {
        match pending {
            Pending::Permission { responder, .. } => {
                let _ = responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Cancelled,
                ));
            }
            Pending::Read(r, _) => refuse(r, why),
            Pending::Write(r) => refuse(r, why),
            Pending::Terminal(r) => refuse(r, why),
            Pending::Step(reply) => {
                let _ = reply.send((why.to_owned(), true));
            }
            Pending::Carry(_) => {}
        }
    }
}

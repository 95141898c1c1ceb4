//! What the agent's connection (`agent.rs`) hands the prompt turn (`turn.rs`) in order: the
//! agent's updates and requests with the responder of each, rawko's MCP tool calls (`mcp.rs`),
//! and notes (`asking.rs`). The modules that send them and the one that handles them all use
//! this, and it uses none of them.

use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, CreateTerminalResponse, KillTerminalRequest, KillTerminalResponse,
    ReadTextFileRequest, ReadTextFileResponse, ReleaseTerminalRequest, ReleaseTerminalResponse,
    RequestPermissionRequest, RequestPermissionResponse, SessionUpdate, TerminalOutputRequest,
    TerminalOutputResponse, WaitForTerminalExitRequest, WaitForTerminalExitResponse,
    WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::Responder;
use tokio::sync::oneshot;

/// How the SDK answers a request of the agent.
pub(super) type Reply<T> = Responder<T, agent_client_protocol::V1>;

/// Something the agent sent, for the turn to handle in order. (A few per turn on a channel: not
/// worth boxing each request.)
#[allow(clippy::large_enum_variant)]
pub(super) enum FromAgent {
    Update(Box<SessionUpdate>),
    Permission(RequestPermissionRequest, Reply<RequestPermissionResponse>),
    Read(ReadTextFileRequest, Reply<ReadTextFileResponse>),
    Write(WriteTextFileRequest, Reply<WriteTextFileResponse>),
    CreateTerminal(CreateTerminalRequest, Reply<CreateTerminalResponse>),
    Output(TerminalOutputRequest, Reply<TerminalOutputResponse>),
    Wait(
        WaitForTerminalExitRequest,
        Reply<WaitForTerminalExitResponse>,
    ),
    Kill(KillTerminalRequest, Reply<KillTerminalResponse>),
    Release(ReleaseTerminalRequest, Reply<ReleaseTerminalResponse>),
    /// rawko's MCP tool, called through `rawko mcp`: `workflow_step` with this action.
    Step {
        action: String,
        reply: oneshot::Sender<(String, bool)>,
    },
    /// The agent's text in this prompt turn reached `agent.rs`'s `TEXT_CAP`: the rest is dropped.
    TextCut,
    /// Something rawko tells the task about the agent (it left the mode that asks).
    Note(String),
    /// The connection ended: the agent exited or closed its output (why).
    Closed(String),
}

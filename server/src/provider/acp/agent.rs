//! The agent's process and rawko's ACP client connection to it: started in a process group of its
//! own, `initialize`d with the `fs` and `terminal` capabilities, a session opened in the workspace
//! with rawko's MCP server, and everything the agent sends queued for the turn ([`FromAgent`]).

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, CreateTerminalRequest, CreateTerminalResponse, EnvVariable,
    FileSystemCapabilities, Implementation, InitializeRequest, KillTerminalRequest,
    KillTerminalResponse, LoadSessionRequest, McpServer, McpServerStdio, NewSessionRequest,
    PromptResponse, ReadTextFileRequest, ReadTextFileResponse, ReleaseTerminalRequest,
    ReleaseTerminalResponse, RequestPermissionRequest, RequestPermissionResponse, SessionId,
    SessionNotification, SessionUpdate, TerminalOutputRequest, TerminalOutputResponse,
    WaitForTerminalExitRequest, WaitForTerminalExitResponse, WriteTextFileRequest,
    WriteTextFileResponse,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, ByteStreams, Client, Responder};
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, oneshot};

use super::{mcp, AgentCommand, START_LIMIT};

/// The most of the agent's stderr kept for messages.
const STDERR_TAIL: usize = 2048;

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
    /// The connection ended: the agent exited or closed its output (why).
    Closed(String),
}

/// The running agent, its session and what it sends.
pub(super) struct Running {
    pub cx: ConnectionTo<Agent>,
    pub session: SessionId,
    pub inbox: mpsc::UnboundedReceiver<FromAgent>,
    /// The prompt turn in flight: its answer, or why there is none.
    pub prompt: Option<oneshot::Receiver<Result<PromptResponse, String>>>,
    pid: Option<i32>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    mcp: mcp::Endpoint,
    connection: tokio::task::JoinHandle<()>,
    _child: tokio::process::Child,
}

impl Running {
    /// The last lines the agent wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        let bytes: Vec<u8> = self
            .stderr
            .lock()
            .map(|t| t.iter().copied().collect())
            .unwrap_or_default();
        String::from_utf8_lossy(&bytes).trim().to_owned()
    }

    /// How the agent's process ended, if it has.
    pub fn exited(&mut self) -> Option<String> {
        let status = self._child.try_wait().ok()??;
        Some(
            match (
                status.code(),
                std::os::unix::process::ExitStatusExt::signal(&status),
            ) {
                (Some(code), _) => format!("exited with exit code {code}"),
                (None, Some(signal)) => format!("was killed by signal {signal}"),
                _ => "exited".to_owned(),
            },
        )
    }

    /// Sends `session/prompt` with `blocks`; its answer arrives on [`Running::prompt`].
    pub fn send_prompt(&mut self, blocks: Vec<agent_client_protocol::v1::schema::ContentBlock>) {
        let (tx, rx) = oneshot::channel();
        let sent = self
            .cx
            .send_request(agent_client_protocol::v1::schema::PromptRequest::new(
                self.session.clone(),
                blocks,
            ))
            .block_task();
        tokio::spawn(async move {
            let _ = tx.send(sent.await.map_err(|e| e.to_string()));
        });
        self.prompt = Some(rx);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.connection.abort();
        // The agent and everything it started: its process group.
        if let Some(pid) = self.pid {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// Starts the agent, connects, initializes and opens the session: `load` again when the agent can
/// load sessions (the answer's second value says it did), else a new one.
pub(super) async fn start(
    command: &AgentCommand,
    load: Option<&str>,
) -> Result<(Running, bool), String> {
    let (tx, inbox) = mpsc::unbounded_channel();
    let endpoint = mcp::Endpoint::start(tx.clone())
        .await
        .map_err(|e| format!("cannot start rawko's MCP endpoint for it: {e}"))?;
    let mut child = tokio::process::Command::new(&command.program)
        .args(&command.args)
        .envs(&command.env)
        .current_dir(&command.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot be started: {e}"))?;
    let pid = child.id().and_then(|p| i32::try_from(p).ok());
    let stderr = Arc::new(Mutex::new(VecDeque::new()));
    if let Some(mut err) = child.stderr.take() {
        let tail = stderr.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                if let Ok(mut t) = tail.lock() {
                    t.extend(&buf[..n]);
                    let over = t.len().saturating_sub(STDERR_TAIL);
                    t.drain(..over);
                }
            }
        });
    }
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err("has no stdin or stdout to talk ACP over".to_owned());
    };
    use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};
    let transport = ByteStreams::new(stdin.compat_write(), stdout.compat());
    let (cx_tx, cx_rx) = oneshot::channel();
    let connection = tokio::spawn(connect(transport, tx, cx_tx));
    let mut running = Running {
        cx: match tokio::time::timeout(START_LIMIT, cx_rx).await {
            Ok(Ok(cx)) => cx,
            _ => return Err("did not connect".to_owned()),
        },
        session: SessionId::new(""),
        inbox,
        prompt: None,
        pid,
        stderr,
        mcp: endpoint,
        connection,
        _child: child,
    };
    let init = InitializeRequest::new(ProtocolVersion::V1)
        .client_capabilities(
            ClientCapabilities::new()
                .fs(FileSystemCapabilities::new()
                    .read_text_file(true)
                    .write_text_file(true))
                .terminal(true),
        )
        .client_info(Implementation::new("rawko", env!("CARGO_PKG_VERSION")));
    let request = running.cx.send_request(init).block_task();
    let can_load = match tokio::time::timeout(START_LIMIT, request).await {
        Ok(Ok(response)) => response.agent_capabilities.load_session,
        Ok(Err(e)) => return Err(format!("refused initialize: {e}")),
        Err(_) => {
            return Err(format!(
                "did not answer initialize within {} s",
                START_LIMIT.as_secs()
            ))
        }
    };
    let rawko =
        std::env::current_exe().map_err(|e| format!("cannot be given rawko's MCP server: {e}"))?;
    let mcp = McpServerStdio::new("rawko", rawko)
        .args(vec![
            "mcp".to_owned(),
            "--workspace".to_owned(),
            command.cwd.to_string_lossy().into_owned(),
        ])
        .env(vec![
            EnvVariable::new(mcp::URL_VAR, running.mcp.url.clone()),
            EnvVariable::new(mcp::TOKEN_VAR, running.mcp.token.clone()),
        ]);
    let servers = vec![McpServer::Stdio(mcp)];
    if let Some(id) = load.filter(|_| can_load) {
        let request = LoadSessionRequest::new(id.to_owned(), command.cwd.clone())
            .mcp_servers(servers.clone());
        let request = running.cx.send_request(request).block_task();
        match tokio::time::timeout(START_LIMIT, request).await {
            Ok(Ok(_)) => {
                running.session = SessionId::new(id);
                // What the agent replayed of the session is the task's past already.
                let mut kept = Vec::new();
                while let Ok(message) = running.inbox.try_recv() {
                    if !matches!(message, FromAgent::Update(_)) {
                        kept.push(message);
                    }
                }
                if !kept.is_empty() {
                    tracing::debug!(
                        "the agent asked {} things while loading its session",
                        kept.len()
                    );
                }
                return Ok((running, true));
            }
            Ok(Err(e)) => {
                tracing::info!("the agent cannot load session {id} ({e}); a new one starts")
            }
            Err(_) => {
                tracing::info!("the agent did not load session {id} in time; a new one starts")
            }
        }
    }
    let new = NewSessionRequest::new(command.cwd.clone()).mcp_servers(servers);
    let request = running.cx.send_request(new).block_task();
    match tokio::time::timeout(START_LIMIT, request).await {
        Ok(Ok(response)) => running.session = response.session_id,
        Ok(Err(e)) => return Err(format!("refused session/new: {e}")),
        Err(_) => {
            return Err(format!(
                "did not answer session/new within {} s",
                START_LIMIT.as_secs()
            ))
        }
    }
    Ok((running, false))
}

/// The client side of the connection: every message of the agent goes to `tx`, in order.
async fn connect<T>(
    transport: T,
    tx: mpsc::UnboundedSender<FromAgent>,
    cx_tx: oneshot::Sender<ConnectionTo<Agent>>,
) where
    T: agent_client_protocol::ConnectTo<Client> + 'static,
{
    macro_rules! queue {
        ($ty:ty, $variant:ident) => {{
            let tx = tx.clone();
            async move |request: $ty, responder, _cx| {
                if let Err(mpsc::error::SendError(FromAgent::$variant(_, responder))) =
                    tx.send(FromAgent::$variant(request, responder))
                {
                    return responder.respond_with_error(agent_client_protocol::Error::new(
                        agent_client_protocol::ErrorCode::INTERNAL_ERROR,
                        "rawko's task has ended",
                    ));
                }
                Ok(())
            }
        }};
    }
    let updates = tx.clone();
    let result = Client
        .v1()
        .name("rawko")
        .on_receive_notification(
            async move |notification: SessionNotification, _cx| {
                let _ = updates.send(FromAgent::Update(Box::new(notification.update)));
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            queue!(RequestPermissionRequest, Permission),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            queue!(ReadTextFileRequest, Read),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            queue!(WriteTextFileRequest, Write),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            queue!(CreateTerminalRequest, CreateTerminal),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            queue!(TerminalOutputRequest, Output),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            queue!(WaitForTerminalExitRequest, Wait),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            queue!(KillTerminalRequest, Kill),
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            queue!(ReleaseTerminalRequest, Release),
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let _ = cx_tx.send(cx);
            std::future::pending::<Result<(), agent_client_protocol::Error>>().await
        })
        .await;
    let why = match result {
        Ok(()) => "closed the connection".to_owned(),
        Err(e) => format!("ended the connection ({e})"),
    };
    let _ = tx.send(FromAgent::Closed(why));
}

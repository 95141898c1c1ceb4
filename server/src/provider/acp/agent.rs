//! The agent's process and rawko's ACP client connection to it: started through rawko's sandbox
//! helper (confined as [`super::confine`] plans; everything it starts ends with it),
//! `initialize`d with the `fs` and `terminal` capabilities, a session opened (or loaded) in the
//! workspace with rawko's MCP server, and what the agent sends that rawko uses queued for the turn
//! ([`FromAgent`]), its text only up to the turn's cap ([`TEXT_CAP`]).

use std::collections::VecDeque;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AuthMethod, AuthenticateRequest, ClientCapabilities, ContentBlock, CreateTerminalRequest,
    EnvVariable, FileSystemCapabilities, Implementation, InitializeRequest, KillTerminalRequest,
    LoadSessionRequest, McpServer, McpServerStdio, NewSessionRequest, PromptResponse,
    ReadTextFileRequest, ReleaseTerminalRequest, RequestPermissionRequest, ResumeSessionRequest,
    SessionId, SessionNotification, SessionUpdate, TerminalOutputRequest,
    WaitForTerminalExitRequest, WriteTextFileRequest,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Agent, ByteStreams, Client};
use tokio::io::AsyncReadExt;
use tokio::sync::{mpsc, oneshot};

use super::asking::{Asking, Keeper};
use super::from_agent::FromAgent;
use super::{auth, confine, mcp, AgentCommand, START_LIMIT};
use crate::sandbox::{self, Supervised, WorkspaceAccess};

/// The most of the agent's stderr kept for messages.
const STDERR_TAIL: usize = 2048;

/// The most text of one prompt turn of the agent that rawko takes: past it, the agent's text is
/// dropped as it arrives (never queued or kept), and the turn says so once.
pub(super) const TEXT_CAP: usize = 1 << 20;

/// How long the agent and what it started get between SIGTERM and SIGKILL when it is ended.
const GRACE: Duration = Duration::from_secs(2);
/// How long what the agent left running may go on after the agent itself exited.
const LINGER: Duration = Duration::from_millis(300);

/// How much more text the prompt turn in flight may bring; shared with the connection's handler,
/// which drops what is past it.
struct TextBudget {
    left: AtomicUsize,
    cut: AtomicBool,
}

impl TextBudget {
    fn new() -> Self {
        TextBudget {
            left: AtomicUsize::new(TEXT_CAP),
            cut: AtomicBool::new(false),
        }
    }

    fn reset(&self) {
        self.left.store(TEXT_CAP, Ordering::Relaxed);
        self.cut.store(false, Ordering::Relaxed);
    }

    /// Cuts `text` to what is left of the budget and spends it; true when this cut it first.
    fn spend(&self, text: &mut String) -> bool {
        let left = self.left.load(Ordering::Relaxed);
        if text.len() <= left {
            self.left.store(left - text.len(), Ordering::Relaxed);
            return false;
        }
        let mut end = left;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        self.left.store(0, Ordering::Relaxed);
        !self.cut.swap(true, Ordering::Relaxed)
    }
}

/// How the agent can open its session again in a new process (its `agentCapabilities`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reopen {
    Load,
    Resume,
    No,
}

/// The running agent, its session and what it sends.
pub(super) struct Running {
    pub cx: ConnectionTo<Agent>,
    pub session: SessionId,
    pub inbox: mpsc::UnboundedReceiver<FromAgent>,
    /// The prompt turn in flight: its answer, or why there is none.
    pub prompt: Option<oneshot::Receiver<Result<PromptResponse, String>>>,
    /// The access to the workspace Landlock gives it; `None`: it runs unconfined.
    pub access: Option<WorkspaceAccess>,
    /// How it can open its session again in a new process.
    pub reopen: Reopen,
    /// The ways it offers to log in (`initialize`), for when it asks for a login.
    auth_methods: Vec<AuthMethod>,
    /// How long the agent has had the prompt in flight so far (rawko's own time not counted).
    pub turn_used: Duration,
    budget: Arc<TextBudget>,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    mcp: mcp::Endpoint,
    /// The mode that keeps it asking, held and put back.
    keeper: Arc<Keeper>,
    connection: tokio::task::JoinHandle<()>,
    /// The agent's process: dropping it ends the agent and everything it started.
    process: Supervised,
}

impl Running {
    /// The last lines the agent wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        tail_of(&self.stderr)
    }

    /// Whether the agent has connected to rawko's MCP server (`rawko mcp` listed its tools, or
    /// called one).
    pub fn mcp_connected(&self) -> bool {
        self.mcp.connected()
    }

    /// How the agent's process ended, if it has.
    pub fn exited(&mut self) -> Option<String> {
        how_ended(&mut self.process)
    }

    /// Sends `session/prompt` with `blocks`; its answer arrives on [`Running::prompt`].
    pub fn send_prompt(&mut self, blocks: Vec<agent_client_protocol::v1::schema::ContentBlock>) {
        let (tx, rx) = oneshot::channel();
        self.budget.reset();
        self.turn_used = Duration::ZERO;
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

/// The last lines of a stderr kept by the reader of [`start`].
fn tail_of(stderr: &Mutex<VecDeque<u8>>) -> String {
    let bytes: Vec<u8> = stderr
        .lock()
        .map(|t| t.iter().copied().collect())
        .unwrap_or_default();
    // The helper's word that it ended what the agent left running is not the agent's.
    let text = String::from_utf8_lossy(&bytes);
    let marker = String::from_utf8_lossy(sandbox::LEFT_RUNNING);
    text.replace(marker.as_ref(), "").trim().to_owned()
}

/// How a process ended, if it has.
fn how_ended(process: &mut Supervised) -> Option<String> {
    let status = process.child().try_wait().ok()??;
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

/// Why the agent did not get going: `why`, or, when its process has ended (given a moment),
/// how, with the end of its stderr; a program the helper could not run at all (its exit codes
/// 126 and 127) "cannot be started", in the helper's words.
async fn not_started(
    process: &mut Supervised,
    stderr: &Mutex<VecDeque<u8>>,
    why: String,
) -> String {
    let mut ended = None;
    for _ in 0..20 {
        ended = how_ended(process);
        if ended.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let Some(ended) = ended else {
        return why;
    };
    // Its stderr a moment to arrive.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let tail = tail_of(stderr);
    let code = process
        .child()
        .try_wait()
        .ok()
        .flatten()
        .and_then(|s| s.code());
    if process.is_helper() && matches!(code, Some(126 | 127)) {
        if let Some(line) = tail.lines().last() {
            let line = line.strip_prefix("rawko: cannot start ").unwrap_or(line);
            return format!("cannot be started: {line}");
        }
    }
    if tail.is_empty() {
        format!("{why}: it {ended}")
    } else {
        format!("{why}: it {ended}; its stderr ends with:\n{tail}")
    }
}

impl Running {
    /// Ends the agent and everything it started at once (SIGKILL, no grace): it must do nothing
    /// more with the access it had. Dropping it afterwards only reaps.
    pub(super) fn kill_now(&mut self) {
        self.connection.abort();
        if let Some(helper) = self.process.child().id() {
            // Below the helper, as it would end them itself, but without the grace; a few passes
            // catch what was forked meanwhile.
            for _ in 0..3 {
                let below = sandbox::exec::descendants(helper);
                if below.is_empty() {
                    break;
                }
                for pid in below {
                    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
                }
            }
        }
        self.process.kill();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // The agent and everything it started end with `process` (the helper ends them all).
        self.connection.abort();
    }
}

/// Starts the agent as `plan` has it (confined with `access` to the workspace when the plan has
/// rules), connects and initializes it. Its session is opened with [`Running::open`].
pub(super) async fn start(
    command: &AgentCommand,
    plan: &confine::Plan,
    access: WorkspaceAccess,
) -> Result<Running, String> {
    let (tx, inbox) = mpsc::unbounded_channel();
    let endpoint = mcp::Endpoint::start(tx.clone())
        .await
        .map_err(|e| format!("cannot start rawko's MCP endpoint for it: {e}"))?;
    let (mut cmd, helper) = sandbox::program_command(
        command.program.clone().into(),
        command.args.iter().map(Into::into).collect(),
        plan.rules.clone(),
        GRACE,
        LINGER,
    );
    cmd.envs(&command.env)
        .current_dir(&command.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = &plan.temp_dir {
        // Its own temporary directory, the one under the task's it may write.
        cmd.env("TMPDIR", dir);
    }
    let mut process =
        Supervised::spawn(cmd, helper, GRACE).map_err(|e| format!("cannot be started: {e}"))?;
    let child = process.child();
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
    let budget = Arc::new(TextBudget::new());
    let keeper = Keeper::new(tx.clone());
    let connection = tokio::spawn(connect(
        transport,
        tx,
        cx_tx,
        budget.clone(),
        keeper.clone(),
    ));
    let cx = match tokio::time::timeout(START_LIMIT, cx_rx).await {
        Ok(Ok(cx)) => cx,
        _ => return Err(not_started(&mut process, &stderr, "did not connect".to_owned()).await),
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
    let request = cx.send_request(init).block_task();
    let (reopen, auth_methods) = match tokio::time::timeout(START_LIMIT, request).await {
        Ok(Ok(response)) => {
            let caps = response.agent_capabilities;
            let reopen = if caps.load_session {
                Reopen::Load
            } else if caps.session_capabilities.resume.is_some() {
                Reopen::Resume
            } else {
                Reopen::No
            };
            (reopen, response.auth_methods)
        }
        Ok(Err(e)) => {
            let why = format!(
                "refused initialize: {}",
                e.to_string().lines().next().unwrap_or_default()
            );
            return Err(not_started(&mut process, &stderr, why).await);
        }
        Err(_) => {
            return Err(format!(
                "did not answer initialize within {} s",
                START_LIMIT.as_secs()
            ))
        }
    };
    Ok(Running {
        cx,
        session: SessionId::new(""),
        inbox,
        prompt: None,
        access: plan.rules.is_some().then_some(access),
        reopen,
        auth_methods,
        turn_used: Duration::ZERO,
        budget,
        stderr,
        mcp: endpoint,
        keeper,
        connection,
        process,
    })
}

impl Running {
    /// Opens the agent's session: `load` again when the agent can open sessions again (the
    /// answer says it did), else a new one; then puts it in the mode that asks
    /// ([`super::modes`]), which the answer says too.
    pub(super) async fn open(
        &mut self,
        command: &AgentCommand,
        load: Option<&str>,
    ) -> Result<(bool, Asking), String> {
        let rawko = std::env::current_exe()
            .map_err(|e| format!("cannot be given rawko's MCP server: {e}"))?;
        let mcp = McpServerStdio::new("rawko", rawko)
            .args(vec![
                "mcp".to_owned(),
                "--workspace".to_owned(),
                command.cwd.to_string_lossy().into_owned(),
            ])
            .env(vec![
                EnvVariable::new(mcp::URL_VAR, self.mcp.url.clone()),
                EnvVariable::new(mcp::TOKEN_VAR, self.mcp.token.clone()),
            ]);
        let servers = vec![McpServer::Stdio(mcp)];
        let mut logged_in = false;
        if let Some(id) = load.filter(|_| self.reopen != Reopen::No) {
            let mut answer = self.reopen_request(command, id, &servers).await;
            if let Ok(Err(e)) = &answer {
                if auth::required(e) {
                    self.log_in().await?;
                    logged_in = true;
                    answer = self.reopen_request(command, id, &servers).await;
                }
            }
            match answer {
                Ok(Ok((modes, config))) => {
                    self.session = SessionId::new(id);
                    // What the agent replayed of the session is the task's past already.
                    let mut kept = 0;
                    while let Ok(message) = self.inbox.try_recv() {
                        if !matches!(
                            message,
                            FromAgent::Update(_) | FromAgent::TextCut | FromAgent::Note(_)
                        ) {
                            kept += 1;
                        }
                    }
                    if kept > 0 {
                        tracing::debug!("the agent asked {kept} things while loading its session");
                    }
                    let asking = self
                        .keeper
                        .start(&self.cx, &self.session, modes.as_ref(), config.as_deref())
                        .await;
                    return Ok((true, asking));
                }
                Ok(Err(e)) => {
                    tracing::info!("the agent cannot load session {id} ({e}); a new one starts")
                }
                Err(_) => {
                    tracing::info!("the agent did not load session {id} in time; a new one starts")
                }
            }
        }
        let mut answer = self.new_request(command, &servers).await;
        if let Ok(Err(e)) = &answer {
            if auth::required(e) && !logged_in {
                self.log_in().await?;
                answer = self.new_request(command, &servers).await;
            }
        }
        let (modes, config) = match answer {
            Ok(Ok(response)) => {
                self.session = response.session_id;
                (response.modes, response.config_options)
            }
            Ok(Err(e)) if auth::required(&e) => {
                // Logged in, it still asks.
                let method = auth::api_key_method(&self.auth_methods);
                let still = format!("it still asks for a login afterwards ({})", e.message);
                return Err(auth::cannot_log_in(
                    &self.auth_methods,
                    method.map(|m| (m, still.as_str())),
                ));
            }
            Ok(Err(e)) => return Err(format!("refused session/new: {e}")),
            Err(_) => {
                return Err(format!(
                    "did not answer session/new within {} s",
                    START_LIMIT.as_secs()
                ))
            }
        };
        let asking = self
            .keeper
            .start(&self.cx, &self.session, modes.as_ref(), config.as_deref())
            .await;
        Ok((false, asking))
    }
}

impl Running {
    /// `session/load` or `session/resume` of session `id`, as the agent offers.
    async fn reopen_request(
        &self,
        command: &AgentCommand,
        id: &str,
        servers: &[McpServer],
    ) -> Result<
        Result<
            (
                Option<agent_client_protocol::v1::schema::SessionModeState>,
                Option<Vec<agent_client_protocol::v1::schema::SessionConfigOption>>,
            ),
            agent_client_protocol::Error,
        >,
        tokio::time::error::Elapsed,
    > {
        if self.reopen == Reopen::Load {
            let request = LoadSessionRequest::new(id.to_owned(), command.cwd.clone())
                .mcp_servers(servers.to_vec());
            let request = self.cx.send_request(request).block_task();
            tokio::time::timeout(START_LIMIT, request)
                .await
                .map(|r| r.map(|r| (r.modes, r.config_options)))
        } else {
            let request = ResumeSessionRequest::new(id.to_owned(), command.cwd.clone())
                .mcp_servers(servers.to_vec());
            let request = self.cx.send_request(request).block_task();
            tokio::time::timeout(START_LIMIT, request)
                .await
                .map(|r| r.map(|r| (r.modes, r.config_options)))
        }
    }

    /// `session/new` in the workspace.
    async fn new_request(
        &self,
        command: &AgentCommand,
        servers: &[McpServer],
    ) -> Result<
        Result<agent_client_protocol::v1::schema::NewSessionResponse, agent_client_protocol::Error>,
        tokio::time::error::Elapsed,
    > {
        let new = NewSessionRequest::new(command.cwd.clone()).mcp_servers(servers.to_vec());
        let request = self.cx.send_request(new).block_task();
        tokio::time::timeout(START_LIMIT, request).await
    }

    /// Logs the agent in with the API key method it offers (it reads the key from its
    /// environment); `Err` says why it cannot be and what the user can do.
    async fn log_in(&self) -> Result<(), String> {
        let Some(method) = auth::api_key_method(&self.auth_methods) else {
            return Err(auth::cannot_log_in(&self.auth_methods, None));
        };
        let request = AuthenticateRequest::new(method.id().clone());
        let request = self.cx.send_request(request).block_task();
        match tokio::time::timeout(START_LIMIT, request).await {
            Ok(Ok(_)) => {
                tracing::info!("logged the agent in with its {} method", method.id().0);
                Ok(())
            }
            Ok(Err(e)) => Err(auth::cannot_log_in(
                &self.auth_methods,
                Some((method, &e.message)),
            )),
            Err(_) => Err(format!(
                "did not answer authenticate within {} s",
                START_LIMIT.as_secs()
            )),
        }
    }
}

/// The client side of the connection: every message of the agent goes to `tx`, in order.
async fn connect<T>(
    transport: T,
    tx: mpsc::UnboundedSender<FromAgent>,
    cx_tx: oneshot::Sender<ConnectionTo<Agent>>,
    budget: Arc<TextBudget>,
    keeper: Arc<Keeper>,
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
            async move |notification: SessionNotification, cx: ConnectionTo<Agent>| {
                // Only what the turn uses is queued: the agent's text up to the cap, its tool
                // calls. (Thoughts, plans and commands are dropped here, as they come; a mode
                // the agent left is put back at once.)
                let update = match notification.update {
                    SessionUpdate::CurrentModeUpdate(mode) => {
                        keeper.mode_now(&cx, &mode.current_mode_id.0);
                        return Ok(());
                    }
                    SessionUpdate::ConfigOptionUpdate(config) => {
                        keeper.config_now(&cx, &config.config_options);
                        return Ok(());
                    }
                    SessionUpdate::AgentMessageChunk(mut chunk) => {
                        let ContentBlock::Text(text) = &mut chunk.content else {
                            return Ok(());
                        };
                        let cut = budget.spend(&mut text.text);
                        if !text.text.is_empty() {
                            let _ = updates.send(FromAgent::Update(Box::new(
                                SessionUpdate::AgentMessageChunk(chunk),
                            )));
                        }
                        if cut {
                            let _ = updates.send(FromAgent::TextCut);
                        }
                        return Ok(());
                    }
                    update @ (SessionUpdate::ToolCall(_) | SessionUpdate::ToolCallUpdate(_)) => {
                        update
                    }
                    _ => return Ok(()),
                };
                let _ = updates.send(FromAgent::Update(Box::new(update)));
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

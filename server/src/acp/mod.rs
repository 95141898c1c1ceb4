//! The ACP face: `rawko acp` serves one client (Zed, JetBrains, Neovim, Emacs agent panels) over
//! stdio with the Agent Client Protocol v1 (newline-delimited JSON-RPC), on the protocol's official
//! Rust SDK (`agent-client-protocol`). docs/acp.md names every mapping.
//!
//! Like the other faces it builds no task itself: the sessions of one folder share its task
//! service ([`Tasks`], opened for the first session's `cwd`, one per folder), each with a route
//! of its own for its tasks' events; a session's first prompt starts a task, later prompts are
//! the user's messages, and the task's events become `session/update`s (`map.rs`, pure and
//! table-tested). A blocked call is asked with `session/request_permission` in a task of its own,
//! so nothing else waits for the user.

mod client_io;
mod lifecycle;
mod map;

/// The old side of a Write's diff, shared with the web face's approvals.
pub(crate) use map::current_text_in;
mod options;
mod outbox;
mod outgoing;
mod session;
mod sessions;
#[cfg(test)]
mod tests;
mod transport;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommandsUpdate, CancelNotification, CloseSessionRequest,
    Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest, LoadSessionRequest,
    LoadSessionResponse, NewSessionRequest, PromptCapabilities, PromptRequest, PromptResponse,
    ResumeSessionRequest, ResumeSessionResponse, SessionCapabilities, SessionCloseCapabilities,
    SessionListCapabilities, SessionResumeCapabilities, SessionUpdate,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse, StopReason,
};
use agent_client_protocol::{Agent, Client, Error, ErrorCode};
use tokio::sync::oneshot;

use crate::engine::tasks::{StartRequest, TaskError, Tasks};
use session::Session;

type Connection = agent_client_protocol::v1::ConnectionTo<Client>;

/// What `rawko acp` was started with.
#[derive(Debug, Clone, Default)]
pub struct AcpOptions {
    /// `--workspace`: serves this folder whatever `cwd` the client names.
    pub workspace: Option<PathBuf>,
    /// The provider, model, script and base URL each task is started with (as `rawko run`'s).
    pub provider: Option<String>,
    pub model: Option<String>,
    pub script: Option<PathBuf>,
    pub base_url: Option<String>,
    /// The mode a new session starts in: a workflow key [default: the `defaultWorkflow` setting].
    pub workflow: Option<String>,
}

/// The face: the sessions of the one client.
struct Face {
    options: AcpOptions,
    /// What the client said at `initialize` it can do for rawko's tools (files, terminals).
    offers: Mutex<crate::tools::ClientOffers>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// The task service of each folder open sessions name (canonical), and how many of them
    /// name it: one service per folder, shared by its sessions, closed with the last one.
    services: Mutex<HashMap<PathBuf, (Arc<Tasks>, usize)>>,
    next: AtomicU64,
}

/// Runs the face on stdin/stdout until the client closes it.
pub fn serve_stdio(options: AcpOptions) -> std::io::Result<()> {
    // One thread: a task's events and the client's messages are handled in the order they come.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let face = Arc::new(Face {
            options,
            offers: Mutex::default(),
            sessions: Mutex::new(HashMap::new()),
            services: Mutex::new(HashMap::new()),
            next: AtomicU64::new(1),
        });
        let (stdin, stdout) = stdio();
        let serve = serve(face.clone(), stdin, stdout);
        use tokio::signal::unix::{signal, SignalKind};
        match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut int), Ok(mut term)) => tokio::select! {
                () = serve => {},
                _ = int.recv() => {},
                _ = term.recv() => {},
            },
            _ => serve.await,
        }
        // The folders' session records end with `rawko acp` (or with their last session).
        let services: Vec<Arc<Tasks>> = face
            .services
            .lock()
            .map(|s| s.values().map(|(tasks, _)| tasks.clone()).collect())
            .unwrap_or_default();
        for tasks in services {
            tasks.end_session(None).await;
        }
    });
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    Ok(())
}

/// Serves the client on `input`/`output` until it closes the connection. The lines are read
/// with a bound and bad ones answered there (`transport.rs`); the SDK gets the rest.
async fn serve(
    face: Arc<Face>,
    input: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    output: impl tokio::io::AsyncWrite + Unpin + Send + 'static,
) {
    let transport = transport::lines(input, output);
    // Each handler owns a reference to the face.
    let f = || face.clone();
    let (f_init, f_new, f_load, f_resume, f_close, f_list) = (f(), f(), f(), f(), f(), f());
    let (f_prompt, f_mode, f_option, f_cancel) = (f(), f(), f(), f());
    let result = Agent
        .v1()
        .name("rawko")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                if let Ok(mut offers) = f_init.offers.lock() {
                    *offers = client_io::offers(&request.client_capabilities);
                }
                responder.respond(initialize(&request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| match f_new
                .new_session(request, cx)
                .await
            {
                Ok((response, session)) => {
                    responder.respond(response)?;
                    session.notify(SessionUpdate::AvailableCommandsUpdate(
                        AvailableCommandsUpdate::new(map::available_commands()),
                    ));
                    Ok(())
                }
                Err(e) => responder.respond_with_error(e),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                // The replay is sent before the answer, as ACP asks: from a task of its own.
                let face = f_load.clone();
                tokio::spawn(async move {
                    let opened = face
                        .reopen(&request.session_id.0, &request.cwd, true, cx)
                        .await;
                    match opened {
                        Ok(session) => {
                            let response = LoadSessionResponse::new()
                                .modes(session.modes())
                                .config_options(session.config_options());
                            let _ = responder.respond(response);
                            session.notify(SessionUpdate::AvailableCommandsUpdate(
                                AvailableCommandsUpdate::new(map::available_commands()),
                            ));
                        }
                        Err(e) => {
                            let _ = responder.respond_with_error(e);
                        }
                    }
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ResumeSessionRequest, responder, cx| match f_resume
                .reopen(&request.session_id.0, &request.cwd, false, cx)
                .await
            {
                Ok(session) => {
                    let response = ResumeSessionResponse::new()
                        .modes(session.modes())
                        .config_options(session.config_options());
                    responder.respond(response)?;
                    session.notify(SessionUpdate::AvailableCommandsUpdate(
                        AvailableCommandsUpdate::new(map::available_commands()),
                    ));
                    Ok(())
                }
                Err(e) => responder.respond_with_error(e),
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CloseSessionRequest, responder, _cx| {
                let face = f_close.clone();
                tokio::spawn(async move {
                    let _ = responder.respond_with_result(face.close(&request.session_id.0).await);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, _cx| {
                let face = f_list.clone();
                tokio::spawn(async move {
                    let _ = responder.respond_with_result(face.list(request).await);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, _cx| {
                // The turn lasts until the task ends it: answered from a task of its own. A
                // `$/cancel_request` of the prompt cancels its turn, as `session/cancel` does.
                let face = f_prompt.clone();
                let cancellation = responder.cancellation();
                tokio::spawn(async move {
                    let session_id = request.session_id.0.to_string();
                    let turn = face.prompt(request);
                    tokio::pin!(turn);
                    let result = tokio::select! {
                        result = &mut turn => result,
                        () = cancellation.cancelled() => {
                            face.cancel(&session_id);
                            turn.await
                        }
                    };
                    let _ = responder.respond_with_result(result);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| {
                let face = f_mode.clone();
                tokio::spawn(async move {
                    let _ = responder.respond_with_result(face.set_mode(request).await);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, _cx| {
                let face = f_option.clone();
                tokio::spawn(async move {
                    let _ = responder.respond_with_result(face.set_config_option(request).await);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                f_cancel.cancel(&notification.session_id.0);
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await;
    if let Err(e) = result {
        tracing::warn!("the ACP connection ended: {e}");
    }
}

/// `initialize`: rawko, protocol v1, what a prompt may hold.
fn initialize(_request: &InitializeRequest) -> InitializeResponse {
    InitializeResponse::new(ProtocolVersion::V1)
        .agent_capabilities(
            AgentCapabilities::new()
                // A session whose task this machine keeps loads (docs/acp.md), or resumes
                // without the replay; the sessions of a workspace are listed; a session closes.
                .load_session(true)
                .session_capabilities(
                    SessionCapabilities::new()
                        .list(SessionListCapabilities::new())
                        .resume(SessionResumeCapabilities::new())
                        .close(SessionCloseCapabilities::new()),
                )
                .prompt_capabilities(PromptCapabilities::new().embedded_context(true)),
        )
        .agent_info(
            Implementation::new("rawko", env!("CARGO_PKG_VERSION")).title("rawko".to_owned()),
        )
}

/// A task service error as the client receives it.
fn task_error(e: TaskError) -> Error {
    let code = match &e {
        TaskError::Invalid(_)
        | TaskError::UnknownAgent(_)
        | TaskError::UnknownWorkflow(_)
        | TaskError::CannotStart(_) => ErrorCode::INVALID_PARAMS,
        TaskError::UnknownTask(_) => ErrorCode::RESOURCE_NOT_FOUND,
        TaskError::Conflict(_) => ErrorCode::INVALID_REQUEST,
        TaskError::Internal(_) => ErrorCode::INTERNAL_ERROR,
    };
    Error::new(code, crate::clip::clip_message(&e.to_string()).into_owned())
}

fn invalid_params(message: impl Into<String>) -> Error {
    Error::new(ErrorCode::INVALID_PARAMS, message.into())
}

fn env(key: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(key)
}

impl Face {
    fn session(&self, id: &str) -> Result<Arc<Session>, Error> {
        self.sessions
            .lock()
            .ok()
            .and_then(|s| s.get(id).cloned())
            .ok_or_else(|| invalid_params(format!("unknown session \"{}\"", crate::clip::clip(id))))
    }

    /// `session/prompt`: the first prompt starts the task, later ones are messages to it; the
    /// turn ends when the task waits for the user or ends (`map::turn_end`), or is cancelled.
    async fn prompt(&self, request: PromptRequest) -> Result<PromptResponse, Error> {
        let session = self.session(&request.session_id.0)?;
        let note = session
            .state
            .lock()
            .ok()
            .and_then(|mut s| s.untrusted_note.take());
        if let Some(note) = note {
            session.message(format!("⚠️ rawko: {note}\n"));
        }
        let text = map::prompt_text(&request.prompt);
        if let Some(command) = map::slash_command(&text) {
            session.command(command).await;
            return Ok(PromptResponse::new(StopReason::EndTurn));
        }
        // A cancel's interrupt is acknowledged by the task first (at most a few seconds).
        let interrupting = session
            .state
            .lock()
            .ok()
            .and_then(|s| s.interrupting.as_ref().map(|w| w.subscribe()));
        if let Some(mut acked) = interrupting {
            let _ = tokio::time::timeout(
                std::time::Duration::from_secs(5),
                acked.wait_for(|done| *done),
            )
            .await;
            if let Ok(mut state) = session.state.lock() {
                state.interrupting = None;
            }
        }
        let (tx, rx) = oneshot::channel();
        let (running, mode) = {
            let mut state = session.state.lock().map_err(|_| Error::internal_error())?;
            if state.turn.as_ref().is_some_and(|t| !t.is_closed()) {
                return Err(Error::new(
                    ErrorCode::INVALID_REQUEST,
                    "a prompt turn is already running in this session; cancel it first",
                ));
            }
            state.turn = Some(tx);
            (session.running_task(&state), state.mode.clone())
        };
        let running = match running {
            Some(id) => Some(id),
            None => session.resume_stored().await,
        };
        let result = match running {
            Some(id) => session.tasks.send_message(&id, text),
            None => {
                // The provider the user chose among several, else the one `rawko acp` was given.
                let o = &self.options;
                let (provider, model, script, base_url) = match session.model_choice() {
                    Some(c) => (
                        Some(c.spec.name.clone()),
                        c.spec.model.clone(),
                        c.spec.script.clone(),
                        c.spec.base_url.clone(),
                    ),
                    None => (
                        o.provider.clone(),
                        o.model.clone(),
                        o.script.clone(),
                        o.base_url.clone(),
                    ),
                };
                session
                    .tasks
                    .start_with(
                        StartRequest {
                            description: text,
                            workflow: map::mode_workflow(&session.set, &mode).ok().flatten(),
                            agent: None,
                            provider,
                            model,
                            script,
                            base_url,
                            agent_command: None,
                        },
                        session.route.clone(),
                    )
                    .await
                    .map(drop)
            }
        };
        if let Err(e) = result {
            if let Ok(mut state) = session.state.lock() {
                state.turn = None;
            }
            return Err(task_error(e));
        }
        Ok(PromptResponse::new(rx.await.unwrap_or(StopReason::EndTurn)))
    }

    /// `session/set_mode`: the workflow the next task runs; a task that runs none yet starts it.
    async fn set_mode(
        &self,
        request: SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, Error> {
        let session = self.session(&request.session_id.0)?;
        let mode = request.mode_id.0.to_string();
        map::mode_workflow(&session.set, &mode).map_err(invalid_params)?;
        self.choose_workflow(&session, mode, true).await?;
        Ok(SetSessionModeResponse::new())
    }

    /// `session/set_config_option`: the workflow (as `set_mode`) or the provider and model the
    /// next task runs with; answered with every option as it stands.
    async fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let session = self.session(&request.session_id.0)?;
        let choice = options::choice(
            &request.config_id.0,
            &request.value,
            &session.set,
            &session.models,
        )
        .map_err(invalid_params)?;
        match choice {
            options::Choice::Workflow(mode) => self.choose_workflow(&session, mode, false).await?,
            options::Choice::Model(value) => {
                if let Ok(mut state) = session.state.lock() {
                    state.model = Some(value);
                }
            }
        }
        Ok(SetSessionConfigOptionResponse::new(
            session.config_options(),
        ))
    }

    /// The session's workflow becomes `mode` (checked): a running task that runs none yet starts
    /// it now; one already in a workflow keeps it (an error says how to end it).
    async fn choose_workflow(
        &self,
        session: &Session,
        mode: String,
        tell_options: bool,
    ) -> Result<(), Error> {
        let key = map::mode_workflow(&session.set, &mode).map_err(invalid_params)?;
        let running = session
            .state
            .lock()
            .ok()
            .and_then(|s| session.running_task(&s));
        if let Some(id) = running {
            let Some(key) = key else {
                return Err(Error::new(
                    ErrorCode::INVALID_REQUEST,
                    "the task runs its workflow; /cancel-workflow ends it, or a new session starts without one",
                ));
            };
            let text = session
                .tasks
                .set_workflow(&id, &key)
                .await
                .map_err(task_error)?;
            session.message(format!("\n{text}\n"));
        }
        session.set_mode(mode, tell_options);
        Ok(())
    }

    /// `session/cancel`: the turn ends `cancelled` at once, and the task stops its turn and
    /// waits for the next prompt.
    fn cancel(&self, session_id: &str) {
        let Ok(session) = self.session(session_id) else {
            return;
        };
        let (turn, running) = match session.state.lock() {
            Ok(mut state) => (state.turn.take(), session.running_task(&state)),
            Err(_) => return,
        };
        if let Some(id) = running {
            let blocked = session
                .tasks
                .handle(&id)
                .is_some_and(|h| h.state() == crate::engine::TaskState::Blocked);
            if !blocked {
                match session.tasks.interrupt(&id) {
                    Ok(()) => {
                        if let Ok(mut state) = session.state.lock() {
                            state.interrupting = Some(tokio::sync::watch::Sender::new(false));
                        }
                    }
                    Err(e) => tracing::debug!("cancel: {e}"),
                }
            }
        }
        if let Some(turn) = turn {
            let _ = turn.send(StopReason::Cancelled);
        }
    }
}

type Reader = Box<dyn tokio::io::AsyncRead + Unpin + Send>;
type Writer = Box<dyn tokio::io::AsyncWrite + Unpin + Send>;

/// stdin and stdout: non-blocking pipes when they are pipes, tokio's stdio otherwise.
fn stdio() -> (Reader, Writer) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let stdin: Reader = match std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Receiver::from_owned_fd)
    {
        Ok(rx) => Box::new(rx),
        Err(_) => Box::new(tokio::io::stdin()),
    };
    let stdout: Writer = match std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Sender::from_owned_fd)
    {
        Ok(tx) => Box::new(tx),
        Err(_) => Box::new(tokio::io::stdout()),
    };
    (stdin, stdout)
}

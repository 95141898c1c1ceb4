//! The ACP face: `rawko acp` serves one client (Zed, JetBrains, Neovim, Emacs agent panels) over
//! stdio with the Agent Client Protocol v1 (newline-delimited JSON-RPC), on the protocol's official
//! Rust SDK (`agent-client-protocol`). docs/acp.md names every mapping.
//!
//! Like the other faces it builds no task itself: each ACP session has its own task service
//! ([`Tasks`], for the session's `cwd`), its first prompt starts a task, later prompts are the
//! user's messages, and the task's events become `session/update`s (`map.rs`, pure and
//! table-tested). A blocked call is asked with `session/request_permission` in a task of its own,
//! so nothing else waits for the user.

mod client_io;
mod map;
mod outgoing;
mod sessions;
#[cfg(test)]
mod tests;
mod transport;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, AvailableCommandsUpdate, CancelNotification, ContentBlock, ContentChunk,
    CurrentModeUpdate, Implementation, InitializeRequest, InitializeResponse, LoadSessionRequest,
    LoadSessionResponse, NewSessionRequest, NewSessionResponse, PromptCapabilities, PromptRequest,
    PromptResponse, SessionNotification, SessionUpdate, SetSessionModeRequest,
    SetSessionModeResponse, StopReason,
};
use agent_client_protocol::{Agent, Client, Error, ErrorCode};
use tokio::sync::oneshot;

use crate::engine::tasks::{Place, Sink, StartRequest, TaskError, Tasks};
use crate::workflow::WorkflowSet;

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
    next: AtomicU64,
}

/// One ACP session: its task service, the workflows it offers as modes, the task it runs.
struct Session {
    id: String,
    cx: Connection,
    workspace: PathBuf,
    set: Arc<WorkflowSet>,
    tasks: Arc<Tasks>,
    state: Mutex<SessionState>,
    /// The terminals Bash calls ran in, by tool call id (shown in the call's last update).
    terminals: client_io::Terminals,
    /// The pumps of the session's tasks, which a request to the client waits for.
    outbox: outgoing::Outbox,
}

#[derive(Default)]
struct SessionState {
    /// The mode: a workflow key or [`map::NO_WORKFLOW`].
    mode: String,
    /// The task the session runs (the last one started).
    task: Option<String>,
    /// The prompt turn waiting for its end.
    turn: Option<oneshot::Sender<StopReason>>,
    /// A cancel interrupted the task, whose "waiting for you" status has not come yet: it ends
    /// the cancelled turn, not the next one (the task announces it once it is on disk, which may
    /// be after the next prompt came).
    interrupting: Option<tokio::sync::watch::Sender<bool>>,
    /// What the workspace's untrusted config leaves out, said once, before the first prompt's
    /// answer (the client shows nothing of rawko's stderr).
    untrusted_note: Option<String>,
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
        let sessions: Vec<Arc<Session>> = face
            .sessions
            .lock()
            .map(|s| s.values().cloned().collect())
            .unwrap_or_default();
        for session in sessions {
            session.tasks.end_session(None).await;
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
    let (f0, f1, f2, f3, f4, f5) = (
        face.clone(),
        face.clone(),
        face.clone(),
        face.clone(),
        face.clone(),
        face.clone(),
    );
    let result = Agent
        .v1()
        .name("rawko")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                if let Ok(mut offers) = f0.offers.lock() {
                    *offers = client_io::offers(&request.client_capabilities);
                }
                responder.respond(initialize(&request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                let face = f1.clone();
                match face.new_session(request, cx).await {
                    Ok((response, session)) => {
                        responder.respond(response)?;
                        session.notify(SessionUpdate::AvailableCommandsUpdate(
                            AvailableCommandsUpdate::new(map::available_commands()),
                        ));
                        Ok(())
                    }
                    Err(e) => responder.respond_with_error(e),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                // The replay is sent before the answer, as ACP asks: from a task of its own.
                let face = f5.clone();
                tokio::spawn(async move {
                    match face.load_session(request, cx).await {
                        Ok((response, session)) => {
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
            async move |request: PromptRequest, responder, _cx| {
                // The turn lasts until the task ends it: answered from a task of its own.
                let face = f2.clone();
                tokio::spawn(async move {
                    let _ = responder.respond_with_result(face.prompt(request).await);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| {
                let face = f3.clone();
                tokio::spawn(async move {
                    let _ = responder.respond_with_result(face.set_mode(request).await);
                });
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, _cx| {
                f4.cancel(&notification.session_id.0);
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
                // A session whose task this machine keeps loads (docs/acp.md).
                .load_session(true)
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

    /// `session/new`: the session's workspace is its `cwd` (or `--workspace`), with its settings,
    /// trust, workflows (the modes) and a task service of its own.
    async fn new_session(
        &self,
        request: NewSessionRequest,
        cx: Connection,
    ) -> Result<(NewSessionResponse, Arc<Session>), Error> {
        let id = format!(
            "acp-{}-{}-{}",
            crate::clock::now_millis(),
            std::process::id(),
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        let session = self
            .open_session(
                id.clone(),
                &request.cwd,
                request.mcp_servers.len(),
                None,
                cx,
            )
            .await?;
        let response = NewSessionResponse::new(id).modes(session.modes());
        Ok((response, session))
    }

    /// `session/load`: a session of an earlier `rawko acp` whose task this machine keeps. Its
    /// conversation and where it stands are replayed as updates; the next prompt resumes an
    /// unfinished task with the prompt as a message (a finished one: a new task starts).
    async fn load_session(
        &self,
        request: LoadSessionRequest,
        cx: Connection,
    ) -> Result<(LoadSessionResponse, Arc<Session>), Error> {
        let id = request.session_id.0.to_string();
        let not_found = || {
            Error::new(
                ErrorCode::RESOURCE_NOT_FOUND,
                format!("unknown session \"{}\"", crate::clip::clip(&id)),
            )
        };
        if self.session(&id).is_ok() {
            return Err(Error::new(
                ErrorCode::INVALID_REQUEST,
                format!("session \"{}\" is already open", crate::clip::clip(&id)),
            ));
        }
        let store = crate::store::state_dir(env).ok_or_else(not_found)?;
        let task_id = sessions::task_of(&store, &id).ok_or_else(not_found)?;
        let session = self
            .open_session(
                id.clone(),
                &request.cwd,
                request.mcp_servers.len(),
                None,
                cx,
            )
            .await?;
        let snapshot = session.tasks.get(&task_id).await.map_err(task_error)?;
        if let Ok(mut state) = session.state.lock() {
            state.task = Some(task_id.clone());
            if let Some(key) = &snapshot.workflow {
                state.mode = key.clone();
            }
        }
        // The conversation as it was (the prompts, the agent's text, its tool calls and their
        // results), then where the task stands (its status line and plan).
        // Drawn from the task's own (pinned) workflows, not this folder's.
        let task_set = session.tasks.task_definitions(&task_id).await;
        let summary = map::replay(&snapshot, &task_set);
        let summary = match session.tasks.conversation(&task_id).await {
            Ok(conversation) => {
                for update in sessions::replay_updates(&conversation.messages, &session.workspace) {
                    session.notify(update);
                }
                // The conversation began with the description: the summary need not repeat it.
                summary.into_iter().skip(1).collect()
            }
            Err(e) => {
                tracing::warn!("session/load: the conversation of {task_id} cannot be read: {e}");
                summary
            }
        };
        for update in summary {
            session.notify(update);
        }
        Ok((LoadSessionResponse::new().modes(session.modes()), session))
    }

    /// A session for `cwd` (or `--workspace`): its settings, trust, workflows (the modes) and a
    /// task service of its own, whose tasks' events go to this session.
    async fn open_session(
        &self,
        id: String,
        cwd: &std::path::Path,
        mcp_servers: usize,
        mode: Option<String>,
        cx: Connection,
    ) -> Result<Arc<Session>, Error> {
        let workspace = match &self.options.workspace {
            Some(w) => w.clone(),
            None if cwd.is_absolute() => cwd.to_path_buf(),
            None => {
                return Err(invalid_params(format!(
                    "cwd must be an absolute path, not \"{}\"",
                    crate::clip::clip_path(cwd)
                )))
            }
        };
        if !workspace.is_dir() {
            return Err(invalid_params(format!(
                "cwd \"{}\" is not a directory",
                crate::clip::clip_path(&workspace)
            )));
        }
        if mcp_servers > 0 {
            tracing::info!(
                "the client offers {mcp_servers} MCP server(s); rawko's tasks do not use them yet"
            );
        }
        let workspace = std::fs::canonicalize(&workspace).unwrap_or(workspace);
        let (place, problems) = Place::load(workspace.clone(), None, &env);
        for p in &problems {
            tracing::warn!("rawko config: {p}");
        }
        use crate::hooks::trust;
        let trust = trust::check(
            trust::store_path(env).as_deref(),
            &place.workspace,
            place.settings.trust_section().as_ref(),
        );
        // No question can be asked here: an untrusted workspace's hooks and settings that need
        // trust are left out, and the session says so.
        let untrusted_note = match place.settings.untrusted_text(&place.workspace) {
            Some(left_out) if !trust.allows() => {
                let note = format!(
                    "{left_out}: {} (`rawko trust` in it trusts it)",
                    trust.reason()
                );
                tracing::warn!("{note}");
                Some(note)
            }
            _ => None,
        };
        let default_mode = mode
            .or_else(|| self.options.workflow.clone())
            .or_else(|| place.settings.default_workflow.clone());
        let roots = place.workflow_roots.clone();
        let set = Arc::new(
            tokio::task::spawn_blocking(move || crate::workflow::load(&roots).workflows)
                .await
                .unwrap_or_default(),
        );
        let mode = match default_mode {
            Some(key) => match map::mode_workflow(&set, &key) {
                Ok(_) => key,
                Err(why) => {
                    tracing::warn!("{why}; the session starts without a workflow");
                    map::NO_WORKFLOW.to_owned()
                }
            },
            None => map::NO_WORKFLOW.to_owned(),
        };
        let store = crate::store::state_dir(env);
        let offers = self.offers.lock().map(|o| *o).unwrap_or_default();
        let editor_bound = place.settings.editor_request_timeout;
        let terminals = client_io::Terminals::default();
        let outbox = outgoing::Outbox::new(store.is_some());
        let session = Arc::new_cyclic(|me: &Weak<Session>| {
            let me = me.clone();
            let store_dir = store.clone();
            let sink: Sink = Arc::new(move |task_id, events| {
                if let Some(session) = me.upgrade() {
                    if let Ok(mut state) = session.state.lock() {
                        state.task = Some(task_id.clone());
                    }
                    if let Some(store) = &store_dir {
                        if let Err(e) = sessions::record(store, &session.id, &task_id) {
                            tracing::warn!(
                                "cannot record the session's task (no session/load): {e}"
                            );
                        }
                    }
                    outgoing::start_pump(session, task_id, events);
                }
            });
            let tasks = Tasks::new(place, store, sink);
            tasks.set_trust(Some(trust.allows()));
            tasks.record_session("acp");
            if offers != crate::tools::ClientOffers::default() {
                tasks.set_client_io(Some(Arc::new(client_io::AcpClientIo {
                    cx: cx.clone(),
                    session_id: id.clone(),
                    offers,
                    terminals: terminals.clone(),
                    outbox: outbox.clone(),
                    bound: editor_bound,
                })));
            }
            Session {
                id: id.clone(),
                cx,
                terminals,
                outbox,
                workspace,
                set,
                tasks,
                state: Mutex::new(SessionState {
                    mode,
                    untrusted_note,
                    ..SessionState::default()
                }),
            }
        });
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.insert(id, session.clone());
        }
        Ok(session)
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
                let options = &self.options;
                session
                    .tasks
                    .start(StartRequest {
                        description: text,
                        workflow: map::mode_workflow(&session.set, &mode).ok().flatten(),
                        agent: None,
                        provider: options.provider.clone(),
                        model: options.model.clone(),
                        script: options.script.clone(),
                        base_url: options.base_url.clone(),
                        agent_command: None,
                    })
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
        if let Ok(mut state) = session.state.lock() {
            state.mode = mode.clone();
        }
        session.notify(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
            mode,
        )));
        Ok(SetSessionModeResponse::new())
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

impl Session {
    fn notify(&self, update: SessionUpdate) {
        if let Err(e) = self
            .cx
            .send_notification(SessionNotification::new(self.id.clone(), update))
        {
            tracing::debug!("cannot send a session update: {e}");
        }
    }

    fn message(&self, text: String) {
        self.notify(SessionUpdate::AgentMessageChunk(ContentChunk::new(
            ContentBlock::from(text),
        )));
    }

    /// The session's modes, the current one marked.
    fn modes(&self) -> agent_client_protocol::v1::schema::SessionModeState {
        let mode = self
            .state
            .lock()
            .map(|s| s.mode.clone())
            .unwrap_or_else(|_| map::NO_WORKFLOW.to_owned());
        map::modes(&self.set, &mode)
    }

    /// A loaded session's task, found unfinished in the store, going on again; its id.
    async fn resume_stored(&self) -> Option<String> {
        let id = self.state.lock().ok()?.task.clone()?;
        if self.tasks.handle(&id).is_some() {
            return None;
        }
        match self.tasks.resume(&id).await {
            Ok(_) => Some(id),
            Err(e) => {
                tracing::debug!("the session's task does not resume: {e}");
                None
            }
        }
    }

    /// The session's task, if it has not ended.
    fn running_task(&self, state: &SessionState) -> Option<String> {
        let id = state.task.clone()?;
        let handle = self.tasks.handle(&id)?;
        (!handle.state().is_finished()).then_some(id)
    }

    /// A slash command: its answer is shown, and the turn ends.
    async fn command(&self, command: map::SlashCommand) {
        let running = self.state.lock().ok().and_then(|s| self.running_task(&s));
        let Some(id) = running else {
            self.message("No task is running: your next prompt starts one.\n".to_owned());
            return;
        };
        let answer = match command {
            map::SlashCommand::Step(action) => self.tasks.step(&id, action).await,
            map::SlashCommand::Interrupt => self
                .tasks
                .interrupt(&id)
                .map(|()| "Interrupted: the task waits for your next message.".to_owned()),
        };
        match answer {
            Ok(text) => self.message(format!("{text}\n")),
            Err(e) => self.message(format!("⚠️ {e}\n")),
        }
    }

    /// The task's events ended the turn (`finished`: the task ended). The interrupt of a cancel
    /// ends the cancelled turn, which has ended already.
    fn turn_ended(&self, task_id: &str, reason: StopReason, finished: bool) {
        let acked = self
            .state
            .lock()
            .ok()
            .and_then(|mut s| s.interrupting.take());
        match acked {
            Some(acked) if !finished => {
                acked.send_replace(true);
            }
            Some(acked) => {
                acked.send_replace(true);
                self.end_turn(task_id, reason);
            }
            None => self.end_turn(task_id, reason),
        }
    }

    /// Ends the prompt turn, if one is running.
    fn end_turn(&self, task_id: &str, reason: StopReason) {
        let turn = match self.state.lock() {
            Ok(mut state) if state.task.as_deref() == Some(task_id) => state.turn.take(),
            _ => None,
        };
        if let Some(turn) = turn {
            let _ = turn.send(reason);
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

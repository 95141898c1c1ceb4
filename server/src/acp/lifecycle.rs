//! How ACP sessions of `rawko acp` begin and end: `session/new` opens one for a workspace (the
//! folder's task service, opened by the first session of that folder and shared by the others,
//! with its settings, trust and workflows; a route of the session's own for its tasks' events
//! and its client's files and terminals), `session/load` and
//! `session/resume` open a recorded one again (with and without the replay of its
//! conversation), `session/close` ends one, and `session/list` shows a workspace's sessions.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};

use agent_client_protocol::v1::schema::{
    CloseSessionResponse, ListSessionsRequest, ListSessionsResponse, NewSessionRequest,
    NewSessionResponse, SessionInfo, StopReason,
};
use agent_client_protocol::{Error, ErrorCode};

use super::session::{Session, SessionState};
use super::{
    client_io, env, invalid_params, map, options, outgoing, sessions, task_error, Connection, Face,
};
use crate::engine::tasks::{Opening, Route, Sink, Tasks};

impl Face {
    /// `session/new`: the session's workspace is its `cwd` (or `--workspace`), with its settings,
    /// trust, workflows (the modes) and task service, shared with the other sessions there.
    pub(super) async fn new_session(
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
        let response = NewSessionResponse::new(id)
            .modes(session.modes())
            .config_options(session.config_options());
        Ok((response, session))
    }

    /// `session/load` (`replay`) and `session/resume`: a session of this or an earlier `rawko
    /// acp` whose task this machine keeps. With `replay` its conversation and where it stands
    /// are replayed as updates first. The next prompt resumes an unfinished task with the prompt
    /// as a message (after a finished one, a new task starts).
    pub(super) async fn reopen(
        &self,
        id: &str,
        cwd: &std::path::Path,
        replay: bool,
        cx: Connection,
    ) -> Result<Arc<Session>, Error> {
        let not_found = || {
            Error::new(
                ErrorCode::RESOURCE_NOT_FOUND,
                format!("unknown session \"{}\"", crate::clip::clip(id)),
            )
        };
        if self.session(id).is_ok() {
            return Err(Error::new(
                ErrorCode::INVALID_REQUEST,
                format!("session \"{}\" is already open", crate::clip::clip(id)),
            ));
        }
        let store = crate::store::state_dir(env).ok_or_else(not_found)?;
        let task_id = sessions::task_of(&store, id).ok_or_else(not_found)?;
        let session = self.open_session(id.to_owned(), cwd, 0, None, cx).await?;
        let snapshot = session.tasks.get(&task_id).await.map_err(task_error)?;
        if let Ok(mut state) = session.state.lock() {
            state.task = Some(task_id.clone());
            if let Some(key) = &snapshot.workflow {
                state.mode = key.clone();
            }
        }
        if replay {
            self.replay(&session, &task_id, &snapshot).await;
        }
        Ok(session)
    }

    /// The conversation of a loaded session's task as it was (the prompts, the agent's text, its
    /// tool calls and their results), then where the task stands (its status line and plan),
    /// drawn from the task's own (pinned) workflows, not this folder's.
    async fn replay(
        &self,
        session: &Session,
        task_id: &str,
        snapshot: &crate::engine::TaskSnapshot,
    ) {
        let task_set = session.tasks.task_definitions(task_id).await;
        let summary = map::replay(snapshot, &task_set);
        let summary = match session.tasks.conversation(task_id).await {
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
    }

    /// `session/close`: the session's turn ends as with `session/cancel`, its unfinished task
    /// is cancelled (nothing would show it any more), and the session is forgotten here with its
    /// route; it stays in `session/list` and can be loaded again. The last session of a folder
    /// to close ends the folder's session record (AutoAgent's Stop hooks run then); the other
    /// sessions' tasks go on meanwhile.
    pub(super) async fn close(&self, id: &str) -> Result<CloseSessionResponse, Error> {
        let session = self
            .sessions
            .lock()
            .ok()
            .and_then(|mut s| s.remove(id))
            .ok_or_else(|| {
                Error::new(
                    ErrorCode::RESOURCE_NOT_FOUND,
                    format!("unknown session \"{}\"", crate::clip::clip(id)),
                )
            })?;
        let (turn, running) = match session.state.lock() {
            Ok(mut state) => (state.turn.take(), session.running_task(&state)),
            Err(_) => (None, None),
        };
        if let Some(turn) = turn {
            let _ = turn.send(StopReason::Cancelled);
        }
        if let Some(task) = running {
            if let Err(e) = session.tasks.cancel(&task) {
                tracing::debug!("session/close: {e}");
            }
        }
        session.tasks.release(&session.route);
        if self.leave_service(&session.workspace) {
            session.tasks.end_session(None).await;
        }
        Ok(CloseSessionResponse::new())
    }

    /// `session/list`: the sessions of a workspace (`cwd`, else `--workspace`, else the folder
    /// `rawko acp` runs in) that ran a task, newest first, a page at a time.
    pub(super) async fn list(
        &self,
        request: ListSessionsRequest,
    ) -> Result<ListSessionsResponse, Error> {
        let workspace = match (&request.cwd, &self.options.workspace) {
            (Some(cwd), _) if !cwd.is_absolute() => {
                return Err(invalid_params(format!(
                    "cwd must be an absolute path, not \"{}\"",
                    crate::clip::clip_path(cwd)
                )))
            }
            (Some(cwd), _) => cwd.clone(),
            (None, Some(w)) => w.clone(),
            (None, None) => std::env::current_dir().map_err(|e| {
                Error::new(ErrorCode::INTERNAL_ERROR, format!("no working folder: {e}"))
            })?,
        };
        let workspace = std::fs::canonicalize(&workspace).unwrap_or(workspace);
        let Some(store) = crate::store::state_dir(env) else {
            return Ok(ListSessionsResponse::new(Vec::new()));
        };
        // A task that runs here is newer than its snapshot on disk.
        let live: HashMap<String, crate::engine::TaskSnapshot> = self
            .sessions
            .lock()
            .map(|s| {
                s.values()
                    .filter_map(|session| {
                        let task = session.state.lock().ok()?.task.clone()?;
                        let handle = session.tasks.handle(&task)?;
                        Some((session.id.clone(), handle.snapshot()))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let all = tokio::task::spawn_blocking(move || sessions::listed(&store, &workspace, &live))
            .await
            .unwrap_or_default();
        let (page, next) = sessions::page(all, request.cursor.as_deref(), sessions::PAGE)
            .map_err(invalid_params)?;
        let infos = page
            .into_iter()
            .map(|s| {
                SessionInfo::new(s.id, s.cwd)
                    .title(map::session_title(&s.title))
                    .updated_at(crate::workflow::texts::iso_timestamp(s.updated_at))
            })
            .collect();
        Ok(ListSessionsResponse::new(infos).next_cursor(next))
    }

    /// The task service of `workspace` (canonical), opened now if no open session names that
    /// folder; counted as held by one more session.
    fn join_service(&self, workspace: &std::path::Path) -> Arc<Tasks> {
        let Ok(mut services) = self.services.lock() else {
            return Self::open_service(workspace);
        };
        let (tasks, sessions) = services
            .entry(workspace.to_path_buf())
            .or_insert_with(|| (Self::open_service(workspace), 0));
        *sessions += 1;
        tasks.clone()
    }

    fn open_service(workspace: &std::path::Path) -> Arc<Tasks> {
        let opening = Opening::new(workspace.to_path_buf(), &env).records_session("acp");
        let opened = Tasks::open(opening);
        for p in &opened.found.problems {
            tracing::warn!("rawko config: {p}");
        }
        opened.tasks
    }

    /// A session of `workspace` closed: whether it was the last, whose service is then closed.
    fn leave_service(&self, workspace: &std::path::Path) -> bool {
        let Ok(mut services) = self.services.lock() else {
            return false;
        };
        let Some((_, sessions)) = services.get_mut(workspace) else {
            return false;
        };
        *sessions = sessions.saturating_sub(1);
        if *sessions > 0 {
            return false;
        }
        services.remove(workspace);
        true
    }

    /// A session for `cwd` (or `--workspace`): its folder's task service (with its settings,
    /// trust and workflows, the modes), and a route of its own for its tasks' events.
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
        let tasks = self.join_service(&workspace);
        let place = tasks.place();
        // No question can be asked here: an untrusted workspace's hooks and settings that need
        // trust are left out, and the session says so.
        let trust = tasks.trust_found();
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
        let set = tasks.workflows().await;
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
        let outbox = super::outbox::Outbox::new(store.is_some());
        let session = Arc::new_cyclic(|me: &Weak<Session>| {
            let me = me.clone();
            let store_dir = store.clone();
            let sink: Sink = Arc::new(move |task_id, events| {
                if let Some(session) = me.upgrade() {
                    // A subagent of the session's task is shown as a tool call of its own;
                    // the session's task stays its parent.
                    let subagent = session
                        .tasks
                        .handle(&task_id)
                        .and_then(|h| h.snapshot().subagent);
                    if let Some(of) = subagent {
                        outgoing::start_subagent_pump(session, task_id, of, events);
                        return;
                    }
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
            // The configured providers to choose from, unless `rawko acp` was given its own.
            let o = &self.options;
            let models = if o.provider.is_some() || o.script.is_some() || o.model.is_some() {
                Vec::new()
            } else {
                options::model_choices(&tasks.settings().providers)
            };
            let client_io: Option<Arc<dyn crate::tools::ClientIo>> =
                (offers != crate::tools::ClientOffers::default()).then(|| {
                    Arc::new(client_io::AcpClientIo {
                        cx: cx.clone(),
                        session_id: id.clone(),
                        offers,
                        terminals: terminals.clone(),
                        outbox: outbox.clone(),
                        bound: editor_bound,
                    }) as Arc<dyn crate::tools::ClientIo>
                });
            Session {
                id: id.clone(),
                cx,
                terminals,
                outbox,
                workspace,
                set,
                tasks,
                route: Route::new(sink).with_client_io(client_io),
                models,
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
}

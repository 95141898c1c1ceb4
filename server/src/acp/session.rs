//! One ACP session of `rawko acp`: its workspace's task service, the workflows it offers (as
//! modes and as the `workflow` config option), the providers it offers (the `model` option), the
//! task it runs and the prompt turn waiting for that task. What it tells the client outside the
//! task's own events (its title, its options as the server changes them) is sent from here.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    ConfigOptionUpdate, ContentBlock, ContentChunk, CurrentModeUpdate, SessionConfigOption,
    SessionInfoUpdate, SessionModeState, SessionNotification, SessionUpdate, StopReason,
};
use tokio::sync::oneshot;

use super::{client_io, map, options, outbox, Connection};
use crate::engine::tasks::{Route, Tasks};
use crate::workflow::WorkflowSet;

/// One ACP session: its folder's task service (shared with the other sessions there), the route
/// its tasks' events take to it, the workflows it offers as modes, the task it runs.
pub(super) struct Session {
    pub(super) id: String,
    pub(super) cx: Connection,
    pub(super) workspace: PathBuf,
    pub(super) set: Arc<WorkflowSet>,
    pub(super) tasks: Arc<Tasks>,
    /// Where the tasks the session starts send their events, and its client's files and
    /// terminals for their tools.
    pub(super) route: Route,
    pub(super) state: Mutex<SessionState>,
    /// The terminals Bash calls ran in, by tool call id (shown in the call's last update).
    pub(super) terminals: client_io::Terminals,
    /// The pumps of the session's tasks, which a request to the client waits for.
    pub(super) outbox: outbox::Outbox,
    /// The configured providers the user can choose from (none with one or none configured, or
    /// when `rawko acp` was started with its own).
    pub(super) models: Vec<options::ModelChoice>,
}

#[derive(Default)]
pub(super) struct SessionState {
    /// The mode: a workflow key or [`map::NO_WORKFLOW`].
    pub(super) mode: String,
    /// The task the session runs (the last one started).
    pub(super) task: Option<String>,
    /// The prompt turn waiting for its end.
    pub(super) turn: Option<oneshot::Sender<StopReason>>,
    /// A cancel interrupted the task, whose "waiting for you" status has not come yet: it ends
    /// the cancelled turn, not the next one (the task announces it once it is on disk, which may
    /// be after the next prompt came).
    pub(super) interrupting: Option<tokio::sync::watch::Sender<bool>>,
    /// What the workspace's untrusted config leaves out, said once, before the first prompt's
    /// answer (the client shows nothing of rawko's stderr).
    pub(super) untrusted_note: Option<String>,
    /// The provider the next task runs with: a [`options::ModelChoice`]'s value.
    pub(super) model: Option<String>,
}

impl Session {
    pub(super) fn notify(&self, update: SessionUpdate) {
        if let Err(e) = self
            .cx
            .send_notification(SessionNotification::new(self.id.clone(), update))
        {
            tracing::debug!("cannot send a session update: {e}");
        }
    }

    pub(super) fn message(&self, text: String) {
        self.notify(SessionUpdate::AgentMessageChunk(ContentChunk::new(
            ContentBlock::from(text),
        )));
    }

    /// The mode: a workflow key or [`map::NO_WORKFLOW`].
    pub(super) fn mode(&self) -> String {
        self.state
            .lock()
            .map(|s| s.mode.clone())
            .unwrap_or_else(|_| map::NO_WORKFLOW.to_owned())
    }

    /// The session's modes, the current one marked.
    pub(super) fn modes(&self) -> SessionModeState {
        map::modes(&self.set, &self.mode())
    }

    /// The session's config options, with their current values.
    pub(super) fn config_options(&self) -> Vec<SessionConfigOption> {
        let model = self.state.lock().ok().and_then(|s| s.model.clone());
        options::config_options(&self.set, &self.mode(), &self.models, model.as_deref())
    }

    /// The provider the next task runs with, when the user chose one of several.
    pub(super) fn model_choice(&self) -> Option<&options::ModelChoice> {
        let chosen = self.state.lock().ok().and_then(|s| s.model.clone());
        match chosen {
            Some(value) => self.models.iter().find(|c| c.value == value),
            None => self.models.first(),
        }
    }

    /// Sets the mode and tells the client, both ways (`current_mode_update` for the clients of
    /// modes; `config_option_update`, unless the client set it through the option itself).
    pub(super) fn set_mode(&self, mode: String, tell_options: bool) {
        if let Ok(mut state) = self.state.lock() {
            state.mode = mode.clone();
        }
        self.notify(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
            mode,
        )));
        if tell_options {
            self.options_changed();
        }
    }

    /// Tells the client the options as they stand now.
    pub(super) fn options_changed(&self) {
        self.notify(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(
            self.config_options(),
        )));
    }

    /// A task of the session started (or resumed): the session's title is its description, and
    /// its options show the task's workflow.
    pub(super) fn task_started(&self, task_id: &str) {
        let Some(task) = self.tasks.handle(task_id).map(|h| h.snapshot()) else {
            return;
        };
        self.notify(SessionUpdate::SessionInfoUpdate(
            SessionInfoUpdate::new()
                .title(map::session_title(&task.description))
                .updated_at(crate::workflow::texts::iso_timestamp(task.updated_at)),
        ));
        let workflow = task
            .workflow
            .clone()
            .unwrap_or_else(|| map::NO_WORKFLOW.to_owned());
        if workflow != self.mode() {
            self.set_mode(workflow, false);
        }
        self.options_changed();
    }

    /// A task of the session ended. A workflow that ran to its end or was cancelled is over: the
    /// session is back without one (a failed task keeps it, for the next try).
    pub(super) fn task_finished(&self, task_id: &str, outcome: crate::engine::Outcome) {
        let current = self
            .state
            .lock()
            .is_ok_and(|s| s.task.as_deref() == Some(task_id));
        self.notify(SessionUpdate::SessionInfoUpdate(
            SessionInfoUpdate::new().updated_at(crate::workflow::texts::iso_timestamp(
                crate::clock::now_millis(),
            )),
        ));
        if current && outcome != crate::engine::Outcome::Failed && self.mode() != map::NO_WORKFLOW {
            self.set_mode(map::NO_WORKFLOW.to_owned(), true);
        }
    }

    /// A loaded session's task, found unfinished in the store, going on again; its id.
    pub(super) async fn resume_stored(&self) -> Option<String> {
        let id = self.state.lock().ok()?.task.clone()?;
        if self.tasks.handle(&id).is_some() {
            return None;
        }
        match self.tasks.resume_with(&id, self.route.clone()).await {
            Ok(_) => Some(id),
            Err(e) => {
                tracing::debug!("the session's task does not resume: {e}");
                None
            }
        }
    }

    /// The session's task, if it has not ended.
    pub(super) fn running_task(&self, state: &SessionState) -> Option<String> {
        let id = state.task.clone()?;
        let handle = self.tasks.handle(&id)?;
        (!handle.state().is_finished()).then_some(id)
    }

    /// A slash command: its answer is shown, and the turn ends.
    pub(super) async fn command(&self, command: map::SlashCommand) {
        if let map::SlashCommand::Rewind(phase) = &command {
            return self.rewind(phase).await;
        }
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
            map::SlashCommand::Rewind(_) => return,
        };
        match answer {
            Ok(text) => self.message(format!("{text}\n")),
            Err(e) => self.message(format!("⚠️ {e}\n")),
        }
    }

    /// `/rewind PHASE`: the session's task (finished or not) and its files back to the start of
    /// the phase; the next prompt resumes it from there.
    async fn rewind(&self, phase: &str) {
        let Some(id) = self.state.lock().ok().and_then(|s| s.task.clone()) else {
            self.message("No task in this session yet: there is nothing to rewind.\n".to_owned());
            return;
        };
        if phase.is_empty() {
            self.message(
                "Say which phase: /rewind PHASE (its id such as implement, its name or its number)\n"
                    .to_owned(),
            );
            return;
        }
        let done = match self.tasks.resolve_phase(&id, phase).await {
            Ok(index) => self.tasks.rewind(&id, index, false, false).await,
            Err(e) => Err(e),
        };
        match done {
            Ok(done) if done.rewound => {
                let mut text = format!("{}\n", done.text);
                for change in &done.changes {
                    text.push_str(&format!("- {} {}\n", change.action.as_str(), change.path));
                }
                text.push_str(&format!(
                    "Your next prompt resumes the task from {}.\n",
                    done.phase
                ));
                self.message(text);
            }
            Ok(done) => self.message(format!("⚠️ {}\n", done.text)),
            Err(e) => self.message(format!("⚠️ {e}\n")),
        }
    }

    /// The task's events ended the turn (`finished`: the task ended). The interrupt of a cancel
    /// ends the cancelled turn, which has ended already.
    pub(super) fn turn_ended(&self, task_id: &str, reason: StopReason, finished: bool) {
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
    pub(super) fn end_turn(&self, task_id: &str, reason: StopReason) {
        let turn = match self.state.lock() {
            Ok(mut state) if state.task.as_deref() == Some(task_id) => state.turn.take(),
            _ => None,
        };
        if let Some(turn) = turn {
            let _ = turn.send(reason);
        }
    }
}

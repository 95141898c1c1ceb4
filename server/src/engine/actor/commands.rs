//! Commands while the task waits: [`Control::wait`] awaits any future while serving
//! [`TaskCommand`]s, the editor's steps and `setWorkflow`, and the waits for the user.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::oneshot;

use super::{Control, Stop};
use crate::engine::log::LogEvent;
use crate::engine::pins::PinnedWorkflows;
use crate::engine::{TaskCommand, TaskState};
use crate::machine;
use crate::workflow::step::{self, ResultType, StepAction};
use crate::workflow::WorkflowState;

impl Control {
    /// Awaits `fut` while serving commands. Steps are answered at once; messages are queued
    /// (or end the wait, with `stop_for_user`); cancel, interrupt and overrides end the wait.
    pub(in crate::engine) async fn wait<T>(
        &mut self,
        fut: impl Future<Output = T>,
        stop_for_user: bool,
    ) -> Result<T, Stop> {
        tokio::pin!(fut);
        loop {
            tokio::select! {
                biased;
                command = self.channels.commands.recv() => {
                    match command {
                        // Every handle is gone: nobody can see or steer the task any more.
                        None => return Err(Stop::Cancel),
                        Some(TaskCommand::Cancel) => return Err(Stop::Cancel),
                        Some(TaskCommand::Interrupt) => return Err(Stop::Interrupt),
                        Some(TaskCommand::SendMessage(text)) if self.external.is_some() => {
                            // An external agent's prompt (UserPromptSubmit): its model has it
                            // already. It is recorded, the reminders count afresh, and a task
                            // waiting on the user goes on; it is not handed back to the agent.
                            self.record("message", None, None, Some(text.clone()));
                            self.log(LogEvent::UserMessage {
                                text,
                                source: "user".to_owned(),
                            });
                            self.not_done.reminders_in_row = 0;
                            if stop_for_user {
                                return Err(Stop::Message);
                            }
                        }
                        Some(TaskCommand::SendMessage(text)) => {
                            self.record("message", None, None, Some(text.clone()));
                            self.pending.messages.push_back(text);
                            if stop_for_user {
                                return Err(Stop::Message);
                            }
                        }
                        Some(TaskCommand::Step { action, reply }) => {
                            let changed = self.user_step(action, reply);
                            if changed && stop_for_user {
                                return Err(Stop::Stepped);
                            }
                        }
                        Some(TaskCommand::Resume) => {
                            if stop_for_user {
                                self.pending.messages.push_back("Continue.".to_owned());
                                return Err(Stop::Message);
                            }
                        }
                        Some(TaskCommand::ExternalSession { ended, text }) => {
                            self.external_session(ended, text);
                        }
                        Some(TaskCommand::Override(event)) => return Err(Stop::Override(event)),
                        Some(TaskCommand::SetWorkflow { key, pinned, reply }) => {
                            let answer = self.set_workflow(&key, pinned);
                            self.reply_when_durable(reply, answer);
                        }
                    }
                }
                out = &mut fut => return Ok(out),
            }
        }
    }

    /// The external agent's session ended (the task is suspended: blocked, saying why, and not
    /// cancelled, so `claude --resume` goes on under the workflow) or came back.
    fn external_session(&mut self, ended: bool, text: String) {
        if self.external.is_none() || self.state.is_finished() {
            return;
        }
        if ended {
            if self.suspended_from.is_none() {
                self.suspended_from = Some(self.state);
            }
            self.record("session_ended", None, None, Some(text.clone()));
            self.set_status(TaskState::Blocked, Some(text), "session_ended");
        } else if let Some(state) = self.suspended_from.take() {
            self.record("session_resumed", None, None, Some(text.clone()));
            self.set_status(state, Some(text), "session_resumed");
        }
    }

    /// Starts workflow `key` in a task that runs none yet; `pinned` are its definitions, pinned
    /// by the task service (logged before the workflow's first record).
    pub(super) fn set_workflow(
        &mut self,
        key: &str,
        pinned: Option<Arc<PinnedWorkflows>>,
    ) -> Result<String, String> {
        if let Some(w) = &self.pos.workflow {
            return Err(format!(
                "this task already runs workflow \"{}\"",
                w.workflow_key
            ));
        }
        let key = self
            .pos
            .set
            .find(key)
            .map_or_else(|| key.to_owned(), |d| d.key.clone());
        let state = WorkflowState::start(
            &self.pos.set,
            &key,
            &self.description,
            &self.id,
            crate::engine::now_millis(),
        )
        .map_err(|e| e.to_string())?;
        let name = self
            .pos
            .set
            .get(&state.workflow_key)
            .map_or_else(|| key.clone(), |d| d.name.clone());
        if let Some(pinned) = pinned {
            self.log(LogEvent::Pinned {
                workflows: Some(pinned.digest.clone()),
                agents: None,
                reason: "workflow set".to_owned(),
            });
            self.pins.workflows = Some(pinned);
        }
        self.log(LogEvent::Workflow {
            state: state.clone(),
        });
        self.pos.workflow = Some(state);
        let inv = self.phase_invocation(crate::hooks::HookEvent::PhaseEnter);
        self.queue_hook(inv);
        self.record("workflow", None, None, Some(format!("started {name}")));
        let state = self.state;
        self.set_status(state, None, "workflow");
        Ok(format!("Started the {name} workflow."))
    }

    /// A step asked for by the editor (`rawko/step`). Returns whether the workflow changed.
    pub(super) fn user_step(
        &mut self,
        action: StepAction,
        reply: oneshot::Sender<Result<String, String>>,
    ) -> bool {
        let Some(state) = self.pos.workflow.clone() else {
            let _ = reply.send(Err("this task runs without a workflow".to_owned()));
            return false;
        };
        let result = step::execute(Some(&state), &self.pos.set, action);
        let changed = self.apply_step(&state, result.state.clone(), "step");
        let answer = match result.result_type {
            ResultType::Error => Err(result.text),
            _ => Ok(result.text),
        };
        self.reply_when_durable(reply, answer);
        changed
    }

    /// Answers a face's command once what the command logged is durable (invariant 6): the
    /// answer reaches people and agents, who act on it.
    fn reply_when_durable(
        &self,
        reply: oneshot::Sender<Result<String, String>>,
        answer: Result<String, String>,
    ) {
        match &self.persist.files {
            Some(files) => files.then(move || {
                let _ = reply.send(answer);
            }),
            None => {
                let _ = reply.send(answer);
            }
        }
    }

    /// Takes a new workflow state from a step: logged, and a phase change announced. Returns
    /// whether the phase (or activity) changed.
    pub(super) fn apply_step(
        &mut self,
        old: &WorkflowState,
        new: Option<WorkflowState>,
        source: &str,
    ) -> bool {
        let Some(new) = new else { return false };
        let moved = new.current_path != old.current_path
            || new.active != old.active
            || new.global_step_count != old.global_step_count;
        if new != *old {
            self.log(LogEvent::Workflow { state: new.clone() });
        }
        let phase_moved = new.current_path != old.current_path || new.active != old.active;
        if phase_moved && old.active {
            let inv = self.phase_invocation(crate::hooks::HookEvent::PhaseExit);
            self.queue_hook(inv);
        }
        self.pos.workflow = Some(new);
        if phase_moved {
            let now = self.pos.workflow.as_ref();
            if now.is_some_and(|w| w.active) {
                let inv = self.phase_invocation(crate::hooks::HookEvent::PhaseEnter);
                self.queue_hook(inv);
            } else if now.is_some_and(|w| !w.cancelled) {
                let inv = self.invocation(crate::hooks::HookEvent::WorkflowComplete);
                self.queue_hook(inv);
            }
        }
        if moved {
            self.not_done.reminders_in_row = 0;
            let (_, text) = self.breadcrumb();
            self.record("phase", None, None, Some(format!("{source}: {text}")));
            let state = self.state;
            self.set_status(state, None, "phase");
        }
        moved
    }

    /// After an interrupt: waits until the user sends a message, resumes, steps, or cancels.
    pub(super) async fn wait_for_user(&mut self) -> Result<(), machine::Event> {
        let reason = match self.hook_state.halt_reason.take() {
            Some(why) => format!("stopped by a hook: {why}"),
            None => "interrupted by the user".to_owned(),
        };
        self.wait_for_user_because(reason).await
    }

    /// Waits until the user sends a message, resumes, steps, or cancels; the status says why.
    pub(super) async fn wait_for_user_because(
        &mut self,
        reason: String,
    ) -> Result<(), machine::Event> {
        self.log(LogEvent::Interrupted);
        self.set_status(TaskState::Blocked, Some(reason), "interrupted");
        loop {
            match self.wait(std::future::pending::<()>(), true).await {
                Ok(()) => {}
                Err(Stop::Interrupt) => {}
                Err(Stop::Message) => {
                    self.set_status(TaskState::Running, None, "resumed");
                    return Ok(());
                }
                Err(Stop::Stepped) => {
                    if self.pos.workflow.as_ref().is_some_and(|w| !w.active) {
                        self.set_status(TaskState::Running, None, "resumed");
                        return Ok(());
                    }
                }
                Err(stop) => return Err(Self::stop_event(stop)),
            }
        }
    }
}

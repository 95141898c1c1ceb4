//! What the task tells: events (redacted), its log, its history and snapshot, its status, and
//! its end.

use super::Control;
use crate::engine::log::LogEvent;
use crate::engine::{
    now_millis, Crumb, HistoryItem, Outcome, OutputKind, TaskEvent, TaskSnapshot, TaskState,
    WorkflowName,
};
use crate::workflow::outline::Progress;
use crate::workflow::texts;

impl Control {
    pub(in crate::engine) fn emit(&self, mut event: TaskEvent) {
        if !self.secrets.is_empty() {
            let s = &self.secrets;
            match &mut event {
                TaskEvent::Status {
                    text,
                    reason,
                    breadcrumb_text,
                    ..
                } => {
                    s.scrub(text);
                    s.scrub(breadcrumb_text);
                    if let Some(r) = reason {
                        s.scrub(r);
                    }
                }
                TaskEvent::Countdown { text, label, .. } => {
                    s.scrub(text);
                    s.scrub(label);
                }
                TaskEvent::Output { text, input, .. } => {
                    s.scrub(text);
                    if let Some(i) = input {
                        s.scrub_value(i);
                    }
                }
                TaskEvent::Approval(request) => {
                    s.scrub_value(&mut request.input);
                    s.scrub(&mut request.reason);
                    s.scrub(&mut request.detail);
                    s.scrub(&mut request.summary);
                }
                TaskEvent::Handoff { agent, text } => {
                    s.scrub(agent);
                    s.scrub(text);
                }
                TaskEvent::Subagent { text, .. } => s.scrub(text),
                TaskEvent::Finished { summary, .. } => s.scrub(summary),
                TaskEvent::Usage { .. } => {}
            }
        }
        // The face may have gone (the editor closed); the task still runs to its end.
        match &self.persist.files {
            // Told once every event logged before it is durable (invariant 6).
            Some(files) => {
                let events = self.channels.events.clone();
                files.then(move || {
                    let _ = events.send(event);
                });
            }
            None => {
                let _ = self.channels.events.send(event);
            }
        }
    }

    /// Waits until every event logged so far is durable: before rawko answers an external agent,
    /// which acts on the answer at once.
    pub(in crate::engine) async fn durable(&self) {
        if let Some(files) = &self.persist.files {
            files.flush().await;
        }
    }

    /// Appends an event to the task's log (on disk before anything is announced).
    pub(super) fn log(&mut self, event: LogEvent) {
        let Some(files) = &mut self.persist.files else {
            return;
        };
        if let LogEvent::Workflow { state } = &event {
            // Every move is logged before it is taken: the position is still the old one.
            self.checkpointing
                .note_move(self.pos.workflow.as_ref(), state);
        }
        let value = match serde_json::to_value(&event) {
            Ok(mut v) => {
                self.secrets.scrub_value(&mut v);
                v
            }
            Err(e) => {
                tracing::error!("cannot serialise a log event: {e}");
                return;
            }
        };
        let now = now_millis();
        if let Err(e) = files
            .append(now, &value)
            .map_err(|e| e.to_string())
            .and_then(|_| {
                // An earlier line that could not be written or synced is reported once it is known.
                files.error().map_or(Ok(()), Err)
            })
        {
            tracing::error!("task {}: cannot write its log: {e}", self.id);
            if self.persist.log_error.is_none() {
                self.persist.log_error = Some(format!("cannot write the task log: {e}"));
            }
        }
        let dir = files.dir().to_owned();
        self.persist
            .transcript
            .get_or_insert_with(|| {
                crate::engine::transcript::Transcript::open(&dir, &self.id, &self.hooks.workspace)
            })
            .record(&value, now);
    }

    pub(in crate::engine) fn output(&self, kind: OutputKind, text: impl Into<String>) {
        self.emit(TaskEvent::Output {
            kind,
            text: text.into(),
            tool_call_id: None,
            tool: None,
            input: None,
            is_error: None,
        });
    }

    pub(in crate::engine) fn record(
        &self,
        event: &str,
        before: Option<String>,
        after: Option<String>,
        detail: Option<String>,
    ) {
        self.record_guarded(event, before, after, None, detail);
    }

    pub(super) fn record_guarded(
        &self,
        event: &str,
        before: Option<String>,
        after: Option<String>,
        guard: Option<String>,
        detail: Option<String>,
    ) {
        // The history is shown (getTask) and stored (`history.json`): a detail quotes the model
        // (AGENT_COMPLETE's output), the user or a hook, any of which may echo a key.
        let scrub = |mut text: String| {
            self.secrets.scrub(&mut text);
            text
        };
        let item = HistoryItem {
            at: now_millis(),
            event: event.to_owned(),
            state_before: before.map(scrub),
            state_after: after.map(scrub),
            guard: guard.map(scrub),
            detail: detail.map(scrub),
        };
        if let Ok(mut snap) = self.channels.snapshot.lock() {
            snap.updated_at = item.at;
            snap.history.push(item);
        }
    }

    /// The breadcrumb of the current position, and its text.
    pub(super) fn breadcrumb(&self) -> (Vec<Crumb>, String) {
        let Some(active) = self
            .pos
            .workflow
            .as_ref()
            .and_then(|w| w.resolve(&self.pos.set))
        else {
            let text = match &self.pos.workflow {
                Some(w) => self
                    .pos
                    .set
                    .get(&w.workflow_key)
                    .map_or_else(|| w.workflow_key.clone(), |d| d.name.clone()),
                None => self.description.clone(),
            };
            return (Vec::new(), text);
        };
        (Crumb::trail(&active), active.breadcrumb_text())
    }

    /// Announces the task's state. `reason` says why, when it matters.
    pub(in crate::engine) fn set_status(
        &mut self,
        state: TaskState,
        reason: Option<String>,
        event: &str,
    ) {
        let before = self.state;
        self.state = state;
        let (mut breadcrumb, mut crumb_text) = self.breadcrumb();
        // Kept in the snapshot (shown by getTask, stored in `snapshot.json`) as announced: a
        // task without a workflow is named by its description, which may quote a key.
        self.secrets.scrub(&mut crumb_text);
        for crumb in &mut breadcrumb {
            self.secrets.scrub(&mut crumb.name);
            self.secrets.scrub(&mut crumb.phase_name);
        }
        let text = format!("{crumb_text}{}", state.words());
        let workflow = self.pos.workflow.as_ref().map(|w| WorkflowName {
            key: w.workflow_key.clone(),
            name: self
                .pos
                .set
                .get(&w.workflow_key)
                .map_or_else(|| w.workflow_key.clone(), |d| d.name.clone()),
        });
        // A complete task has done every phase, even one whose arbiter ended it early.
        let progress = match &self.pos.workflow {
            None => Progress::default(),
            Some(_) if state == TaskState::Complete => Progress::ALL_DONE,
            Some(w) => Progress::of(w, &self.pos.set),
        };
        if let Ok(mut snap) = self.channels.snapshot.lock() {
            snap.state = state;
            snap.progress = progress;
            snap.breadcrumb = breadcrumb.clone();
            snap.breadcrumb_text = crumb_text.clone();
            snap.status_text = text.clone();
            // A workflow started later (`rawko/setWorkflow`) shows in listTasks/getTask too.
            if let Some(w) = &workflow {
                snap.workflow = Some(w.key.clone());
                snap.workflow_name = Some(w.name.clone());
            }
        }
        let first = self
            .channels
            .snapshot
            .lock()
            .map(|s| s.history.is_empty())
            .unwrap_or(false);
        self.record(
            event,
            (!first).then(|| before.as_str().to_owned()),
            Some(state.as_str().to_owned()),
            reason.clone(),
        );
        self.write_snapshot(&crumb_text);
        if let Some(bridge) = &self.external {
            bridge.set_phase(self.pos.workflow.clone(), self.pos.set.clone());
            bridge.set_context(
                self.pos
                    .workflow
                    .as_ref()
                    .and_then(|w| w.resolve(&self.pos.set))
                    .map(|a| a.context_prompt(&self.pos.set)),
            );
        }
        self.emit(TaskEvent::Status {
            state,
            breadcrumb,
            text,
            reason,
            phases_done: workflow.is_some().then_some(progress.done),
            workflow,
            breadcrumb_text: crumb_text,
            phase_index: progress.current,
            subagent: self.delegation.subagent.as_ref().map(|s| s.of.clone()),
        });
    }

    /// The snapshot: a cache for listing tasks without replaying their logs.
    pub(super) fn write_snapshot(&self, crumb_text: &str) {
        let Some(files) = &self.persist.files else {
            return;
        };
        let Ok(snap) = self.channels.snapshot.lock() else {
            return;
        };
        if snap.state.is_finished() {
            // The whole history goes to the store: the server forgets the task once it ended.
            let history = crate::engine::stored::HistoryRef {
                v: crate::store::FORMAT_VERSION,
                state: snap.state,
                history: &snap.history,
            };
            let name = crate::engine::stored::HistoryFile::NAME;
            if let Err(e) = files.write_json(name, &history) {
                tracing::warn!("task {}: cannot write its history: {e}", self.id);
            }
        }
        // Only the summary: the history is not copied for it.
        let file = crate::engine::stored::SnapshotFile::of(
            TaskSnapshot {
                task_id: snap.task_id.clone(),
                description: snap.description.clone(),
                workflow: snap.workflow.clone(),
                workflow_name: None,
                state: snap.state,
                breadcrumb: Vec::new(),
                breadcrumb_text: String::new(),
                status_text: String::new(),
                started_at: snap.started_at,
                updated_at: snap.updated_at,
                history: Vec::new(),
                workspace: snap.workspace.clone(),
                machine_state: String::new(),
                agent: None,
                progress: snap.progress,
                subagent: snap.subagent.clone(),
                ended: None,
            },
            self.orch.machine.state.name(),
            crumb_text,
            now_millis(),
            files.last_seq(),
        );
        drop(snap);
        if let Err(e) = files.write_snapshot(&file) {
            tracing::warn!("task {}: cannot write its snapshot: {e}", self.id);
        }
    }

    /// Ends a task that ran: the end hooks, then [`Self::finish`].
    pub(super) async fn end(&mut self, outcome: Outcome, summary: String) {
        let (outcome, summary, files) = self.end_hooks_before(outcome, summary).await;
        super::boxed("definitions", self.check_definitions_at_end()).await;
        self.finish_logged(outcome, &summary);
        self.end_hooks_after(outcome, &files).await;
        self.finish_announced(outcome, summary);
    }

    /// Ends the task: the last output, the final status, and `Finished` (logged first).
    pub(super) fn finish(&mut self, outcome: Outcome, summary: String) {
        self.finish_logged(outcome, &summary);
        self.finish_announced(outcome, summary);
    }

    /// The first half of the end: logged, and the completion (or error) shown.
    pub(super) fn finish_logged(&mut self, outcome: Outcome, summary: &str) {
        let summary = summary.to_owned();
        tracing::debug!(task = %self.id, ?outcome, %summary, "task finished");
        // A subagent's end is its own, never the workflow's (which goes on in its parent).
        let workflow = self
            .pos
            .workflow
            .as_ref()
            .filter(|_| self.delegation.subagent.is_none());
        let message = workflow.and_then(|w| {
            let def = self.pos.set.get(&w.workflow_key)?;
            match outcome {
                Outcome::Complete if !w.active => {
                    Some(texts::finished_message(def, &self.pos.set, w))
                }
                Outcome::Cancelled => {
                    let mut cancelled = w.clone();
                    cancelled.cancelled = true;
                    Some(texts::finished_message(def, &self.pos.set, &cancelled))
                }
                _ => None,
            }
        });
        self.log(LogEvent::Finished {
            outcome: outcome.as_str().to_owned(),
            summary: summary.clone(),
        });
        if let Ok(mut snap) = self.channels.snapshot.lock() {
            snap.ended = Some((outcome, summary.clone()));
        }
        match outcome {
            Outcome::Complete => self.output(
                OutputKind::Completion,
                message.unwrap_or_else(|| summary.clone()),
            ),
            Outcome::Cancelled => self.output(
                OutputKind::Completion,
                message.unwrap_or_else(|| "❌ Task cancelled".to_owned()),
            ),
            Outcome::Failed => self.output(OutputKind::Error, format!("task failed: {summary}")),
        }
    }

    /// The second half: the final status and `Finished`, the task's last notification.
    pub(super) fn finish_announced(&mut self, outcome: Outcome, summary: String) {
        if let Some(session) = &self.session {
            session.task_finished(&self.id, outcome.as_str());
        }
        if let Some(w) = &mut self.pos.workflow {
            if outcome == Outcome::Cancelled {
                w.active = false;
                w.cancelled = true;
            }
            w.completion_notified = true;
        }
        let (state, reason) = match outcome {
            Outcome::Complete => (TaskState::Complete, None),
            Outcome::Failed => (TaskState::Failed, Some(summary.clone())),
            Outcome::Cancelled => (TaskState::Cancelled, Some(summary.clone())),
        };
        self.set_status(state, reason, "finished");
        if let Some(bridge) = &self.external {
            // Nothing the external agent still waits on may hang: it is answered now.
            bridge.close();
        }
        self.emit(TaskEvent::Finished { outcome, summary });
    }
}

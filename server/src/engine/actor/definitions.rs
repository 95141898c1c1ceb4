//! What a task tells about its pinned definitions (`engine::pins`): when it resumes, that it
//! was stored before rawko pinned them, or which files changed on disk since it started (it goes
//! on under the pinned copies); when it ends, which files differ on disk from the copies it ran
//! under, since the next task reads the files as they are. Each is logged and shown.

use super::Control;
use crate::engine::log::LogEvent;
use crate::engine::pins::{self, LoggedChange};
use crate::engine::OutputKind;

impl Control {
    /// After a resume: the `pinned` record of a task pinned only now, and the note the task
    /// service prepared.
    pub(super) fn resumed_with_pins(&mut self) {
        if let Some(reason) = self.pins.record_on_resume.take() {
            let refs = self.pins.refs();
            self.log(LogEvent::Pinned {
                workflows: refs.workflows,
                agents: refs.agents,
                reason,
            });
        }
        let changes = std::mem::take(&mut self.pins.resume_changes);
        if !changes.is_empty() {
            self.log(LogEvent::DefinitionsChanged {
                when: "resume".to_owned(),
                changes,
            });
        }
        if let Some(note) = self.pins.resume_note.take() {
            self.record("definitions", None, None, Some(note.clone()));
            self.output(OutputKind::Error, note);
        }
    }

    /// At the end: the pinned definitions compared with the files on disk now (a walk of their
    /// roots that started after this asked, so a change the agent made just before is seen).
    pub(super) async fn check_definitions_at_end(&mut self) {
        let changes =
            pins::changes_on_disk(self.pins.workflows.as_deref(), self.pins.agents.as_deref())
                .await;
        if changes.is_empty() {
            return;
        }
        let workspace = self
            .channels
            .snapshot
            .lock()
            .map(|s| s.workspace.clone())
            .unwrap_or_default();
        let note = format!(
            "note: definitions on disk differ from the copies this task ran under (pinned when it started): {}. The next task reads the files as they are now: check them before you start one",
            pins::describe(&changes, &workspace)
        );
        self.log(LogEvent::DefinitionsChanged {
            when: "end".to_owned(),
            changes: changes.iter().map(LoggedChange::from).collect(),
        });
        self.record("definitions", None, None, Some(note.clone()));
        self.output(OutputKind::Error, note);
    }
}

//! The task's side of checkpoints ([`crate::checkpoint`]): one when the task enters a phase
//! (before the agent's next turn, or right after the `workflow_step` call that moved it) and one
//! after each completed tool call that may have changed files, each named in the log by a
//! `checkpoint` record. Only a task with a store takes them. A checkpoint that fails is said
//! once (an `error` output) and the task goes on: nothing of the task depends on them.

use serde_json::Value;

use super::Control;
use crate::checkpoint::{Checkpoints, Reason};
use crate::engine::log::{checkpoint_detail, LogEvent};
use crate::engine::OutputKind;
use crate::provider::ToolCall;
use crate::workflow::outline::flat_index;
use crate::workflow::shell;
use crate::workflow::tools::{self, ToolClass};
use crate::workflow::WorkflowState;

/// What the task keeps about its checkpoints.
#[derive(Default)]
pub(super) struct Checkpointing {
    /// `None`: the task takes none (it has no store).
    pub(super) store: Option<Checkpoints>,
    /// The task entered a phase since its last phase checkpoint.
    pub(super) phase_pending: bool,
    /// Whether the user was told that a checkpoint failed (once per task).
    failure_shown: bool,
}

impl Checkpointing {
    /// Whether the checkpoints go to a team's shared repository (`rawko worker`).
    pub(super) fn pushes(&self) -> bool {
        self.store.as_ref().is_some_and(Checkpoints::pushes)
    }

    /// Notes a workflow move about to be logged: a move into a phase (a step, a loop back, the
    /// workflow's start, a reset) is an entry that gets a checkpoint.
    pub(super) fn note_move(&mut self, old: Option<&WorkflowState>, new: &WorkflowState) {
        let entered = new.active
            && old.is_none_or(|old| {
                !old.active
                    || old.current_path != new.current_path
                    || old.global_step_count != new.global_step_count
            });
        self.phase_pending |= entered;
    }
}

/// Whether a completed call may have changed files: a Write or an Edit (and their synonyms by
/// class), or a command the gate's shell classifier finds writing (one it cannot read counts).
pub(super) fn may_write(name: &str, input: &Value, is_error: bool) -> bool {
    match tools::class_of(name) {
        ToolClass::Edit | ToolClass::Write => !is_error,
        // A command that failed may still have written part of what it meant to.
        ToolClass::Execute => input
            .get("command")
            .and_then(Value::as_str)
            .is_none_or(|command| shell::classify(command).writes()),
        // Its subagents may have written, each in a task of its own.
        _ if name.eq_ignore_ascii_case(crate::engine::subagents::TOOL_NAME) => true,
        _ => false,
    }
}

impl Control {
    /// The phase-entry checkpoint, when the task entered a phase since the last one.
    pub(super) async fn checkpoint_phase_entry(&mut self) {
        if !std::mem::take(&mut self.checkpointing.phase_pending) {
            return;
        }
        self.checkpoint(Reason::PhaseEntered, None).await;
    }

    /// A checkpoint after `call`, when it may have changed files; then the phase-entry one, when
    /// the call moved the workflow.
    pub(super) async fn checkpoint_after(&mut self, call: &ToolCall, is_error: bool) {
        // An external agent runs the call itself after rawko's answer: the next checkpoint
        // (at a phase's entry) sees what it wrote.
        if self.external.is_none() && may_write(&call.name, &call.input, is_error) {
            self.checkpoint(Reason::ToolCall, Some(call.id.clone()))
                .await;
        }
        self.checkpoint_phase_entry().await;
    }

    async fn checkpoint(&mut self, reason: Reason, tool_call_id: Option<String>) {
        let Some(store) = self.checkpointing.store.as_mut() else {
            return;
        };
        let set = &self.pos.set;
        let phase = self.pos.workflow.as_ref().and_then(|state| {
            let phase = state.phase(set)?;
            let index = u32::try_from(flat_index(set, &state.current_path)).ok()?;
            Some((index, phase.name.clone()))
        });
        // Boxed: git's futures are large, and a waiting task should not hold them.
        let taken = super::boxed(
            "checkpoint",
            store.take(reason, phase.as_ref().map(|(i, _)| *i)),
        );
        match taken.await {
            // Nothing changed since the last one: a call leaves no record; a phase's entry
            // does (its ref now names that checkpoint).
            Ok(cp) if !cp.new && reason == Reason::ToolCall => {}
            Ok(cp) => {
                let (phase_index, phase) = phase.unzip();
                let phase = phase.unwrap_or_default();
                let detail = checkpoint_detail(&cp.commit, &phase, reason.as_str());
                self.record("checkpoint", None, None, Some(detail));
                self.log(LogEvent::Checkpoint {
                    commit: cp.commit,
                    phase_index,
                    phase,
                    reason: reason.as_str().to_owned(),
                    tool_call_id,
                    repository: cp.storage.as_str().to_owned(),
                });
            }
            Err(e) => {
                tracing::warn!("task {}: checkpoint failed: {e}", self.id);
                if !std::mem::replace(&mut self.checkpointing.failure_shown, true) {
                    self.output(
                        OutputKind::Error,
                        format!("warning: rawko cannot take checkpoints of the workspace for this task ({e}); the task goes on without them"),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::may_write;

    #[test]
    fn only_calls_that_may_write_get_a_checkpoint() {
        let none = json!({});
        assert!(may_write("Write", &none, false));
        assert!(may_write("MultiEdit", &none, false));
        assert!(may_write("NotebookEdit", &none, false));
        assert!(may_write("write_file", &none, false));
        assert!(!may_write("Write", &none, true));
        assert!(!may_write("Read", &none, false));
        assert!(!may_write("Grep", &none, false));
        assert!(!may_write("TodoWrite", &none, false));
        assert!(!may_write("workflow_step", &none, false));
        assert!(!may_write(
            "Bash",
            &json!({"command": "ls -la && cat a"}),
            false
        ));
        assert!(may_write(
            "Bash",
            &json!({"command": "echo x > a.txt"}),
            false
        ));
        assert!(may_write(
            "Bash",
            &json!({"command": "sed -i s/a/b/ f"}),
            true
        ));
        assert!(may_write("Bash", &none, false));
    }
}

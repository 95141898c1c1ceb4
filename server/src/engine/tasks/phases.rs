//! A task's workflow as a client draws it: its phases flattened with their marks (`getTask`),
//! and the context prompt of any one of them (`phasePrompt`). A running task answers from the
//! definitions it runs with; a stored one from those it pinned (one stored before rawko pinned
//! from the workflows as they load now).

use std::sync::Arc;

use super::{TaskError, Tasks};
use crate::clip::clip;
use crate::engine::{TaskSnapshot, TaskState};
use crate::workflow::outline::{self, OutlineNode, Progress};
use crate::workflow::WorkflowSet;

/// One phase's context prompt, as `rawko workflows show` renders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhasePrompt {
    pub name: String,
    pub breadcrumb_text: String,
    pub prompt: String,
}

impl Tasks {
    /// The workflows task `id` runs with: its own while it runs, its pinned ones when stored.
    async fn workflows_of(&self, id: &str) -> Arc<WorkflowSet> {
        self.task_definitions(id).await
    }

    /// The task's workflow flattened with its marks; empty when it runs none (or its workflow
    /// no longer loads). Every phase of a complete task is done.
    pub async fn outline(&self, task: &TaskSnapshot) -> Vec<OutlineNode> {
        // A subagent works in its parent's phase: the tree is the parent's.
        let Some(key) = task.workflow.as_ref().filter(|_| task.subagent.is_none()) else {
            return Vec::new();
        };
        let set = self.workflows_of(&task.task_id).await;
        let Some(def) = set.get(key) else {
            return Vec::new();
        };
        let progress = if task.state == TaskState::Complete {
            Progress::ALL_DONE
        } else {
            task.progress
        };
        let mut nodes = outline::outline(&set, def, progress);
        self.mark_checkpoints(task, &mut nodes).await;
        nodes
    }

    /// The context prompt of the task's concrete phase `index` (from 0, as in
    /// [`Tasks::outline`]), with the task's description and id.
    pub async fn phase_prompt(&self, id: &str, index: u64) -> Result<PhasePrompt, TaskError> {
        let task = self.get(id).await?;
        let Some(key) = &task.workflow else {
            return Err(TaskError::Invalid(format!(
                "task \"{}\" runs no workflow, so it has no phase {index}",
                clip(id)
            )));
        };
        let set = self.workflows_of(id).await;
        let Some(def) = set.get(key) else {
            return Err(TaskError::UnknownWorkflow(format!(
                "task \"{}\" ran workflow \"{}\", which no longer loads",
                clip(id),
                clip(key)
            )));
        };
        let count = set.flatten(def).len();
        let state = usize::try_from(index).ok().and_then(|i| {
            outline::state_at(
                &set,
                def,
                i,
                &task.description,
                &task.task_id,
                task.started_at,
            )
        });
        let bad_index = || {
            TaskError::Invalid(format!(
                "phase index {index} is out of range: workflow \"{}\" has {count} phase{} (0 to {})",
                clip(key),
                if count == 1 { "" } else { "s" },
                count.saturating_sub(1)
            ))
        };
        let state = state.ok_or_else(bad_index)?;
        let active = state.resolve(&set).ok_or_else(bad_index)?;
        // Redacted like everything a task announces (the description may quote a key).
        let secrets = crate::secrets::Secrets::new(&self.settings(), |k| std::env::var(k).ok());
        let mut prompt = PhasePrompt {
            name: active.current_phase.name.clone(),
            breadcrumb_text: active.breadcrumb_text(),
            prompt: active.context_prompt(&set),
        };
        secrets.scrub(&mut prompt.prompt);
        secrets.scrub(&mut prompt.breadcrumb_text);
        Ok(prompt)
    }
}

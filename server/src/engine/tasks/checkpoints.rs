//! A task's checkpoints as the faces see them: which phases have one (the phase tree's
//! `hasCheckpoint`), a phase named the way a user names it, and what the task or one phase
//! changed (`rawko diff`, `rawko/phaseDiff`). The checkpoints themselves are `checkpoint/`'s;
//! the log says which one was taken when (docs/checkpoints.md).

use std::path::PathBuf;

use super::{TaskError, Tasks};
use crate::checkpoint::{ChangedFile, Checkpoints};
use crate::clip::clip;
use crate::engine::log::{checkpoints_in_log, LoggedCheckpoint};
use crate::engine::TaskSnapshot;
use crate::store::TaskFiles;
use crate::workflow::outline::{NodeKind, OutlineNode};

/// What a task, or one phase of it, changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseDiff {
    /// git's unified diff.
    pub diff: String,
    pub files: Vec<ChangedFile>,
    /// The checkpoints compared.
    pub from: Option<String>,
    pub to: Option<String>,
}

/// The commits to compare for concrete phase `index` (`None`: the whole task) among a log's
/// checkpoints: from the one taken when the task last entered the phase to the one taken when it
/// next entered a phase, or to the latest while it has not; for the whole task, the first to the
/// latest.
pub fn span(
    checkpoints: &[LoggedCheckpoint],
    index: Option<u32>,
) -> Option<(&LoggedCheckpoint, &LoggedCheckpoint)> {
    let last = checkpoints.last()?;
    let Some(index) = index else {
        return Some((checkpoints.first()?, last));
    };
    let at = checkpoints
        .iter()
        .rposition(|c| c.entered_phase() && c.phase_index == Some(index))?;
    let to = checkpoints[at + 1..]
        .iter()
        .find(|c| c.entered_phase())
        .unwrap_or(last);
    Some((&checkpoints[at], to))
}

impl Tasks {
    /// The task's folder in the store, and its log's checkpoints.
    async fn logged_checkpoints(&self, id: &str) -> Option<(PathBuf, Vec<LoggedCheckpoint>)> {
        let dir = TaskFiles::dir_of(self.store.as_ref()?, id);
        let read = dir.clone();
        let found = tokio::task::spawn_blocking(move || checkpoints_in_log(&read))
            .await
            .ok()?;
        Some((dir, found))
    }

    /// Marks the phases of `outline` that have a checkpoint taken at their entry.
    pub(super) async fn mark_checkpoints(&self, task: &TaskSnapshot, outline: &mut [OutlineNode]) {
        if !outline.iter().any(|n| n.kind == NodeKind::Phase) {
            return;
        }
        let Some((_, found)) = self.logged_checkpoints(&task.task_id).await else {
            return;
        };
        for node in outline.iter_mut() {
            node.has_checkpoint = node.index.is_some_and(|i| {
                found
                    .iter()
                    .any(|c| c.entered_phase() && c.phase_index.is_some_and(|p| p as usize == i))
            });
        }
    }

    /// The concrete phase (0-based) `phase` names in task `id`'s workflow: its id (the file's
    /// stem), its name (in any case) or its number (from 1).
    pub async fn resolve_phase(&self, id: &str, phase: &str) -> Result<u32, TaskError> {
        let task = self.get(id).await?;
        let outline = self.outline(&task).await;
        let phases: Vec<&OutlineNode> = outline
            .iter()
            .filter(|n| n.kind == NodeKind::Phase)
            .collect();
        if phases.is_empty() {
            return Err(TaskError::Invalid(format!(
                "task \"{}\" runs no workflow, so it has no phase \"{}\"",
                clip(id),
                clip(phase)
            )));
        }
        let wanted = phase.trim();
        let found = phases
            .iter()
            .find(|n| n.id == wanted)
            .or_else(|| phases.iter().find(|n| n.name.eq_ignore_ascii_case(wanted)))
            .or_else(|| {
                let n: usize = wanted.parse().ok()?;
                phases.get(n.checked_sub(1)?)
            });
        match found.and_then(|n| n.index) {
            Some(i) => Ok(u32::try_from(i).unwrap_or(u32::MAX)),
            None => {
                let known: Vec<String> = phases
                    .iter()
                    .enumerate()
                    .map(|(i, n)| format!("{} {} ({})", i + 1, n.id, n.name))
                    .collect();
                Err(TaskError::Invalid(format!(
                    "task \"{}\" has no phase \"{}\"; its phases are: {}",
                    clip(id),
                    clip(phase),
                    known.join(", ")
                )))
            }
        }
    }

    /// What task `id` changed: in its concrete phase `index` (0-based), or over its whole run.
    pub async fn phase_diff(&self, id: &str, index: Option<u32>) -> Result<PhaseDiff, TaskError> {
        let task = self.get(id).await?;
        let mut phase_name = String::new();
        if let Some(i) = index {
            let outline = self.outline(&task).await;
            let phases: Vec<&OutlineNode> = outline
                .iter()
                .filter(|n| n.kind == NodeKind::Phase)
                .collect();
            let count = phases.len();
            if let Some(node) = phases.get(i as usize) {
                phase_name = node.name.clone();
            } else {
                return Err(TaskError::Invalid(if count == 0 {
                    format!(
                        "task \"{}\" runs no workflow, so it has no phase {i}",
                        clip(id)
                    )
                } else {
                    format!(
                        "phase index {i} is out of range: the task's workflow has {count} phase{} (0 to {})",
                        if count == 1 { "" } else { "s" },
                        count - 1
                    )
                }));
            }
        }
        let none = || {
            TaskError::Conflict(format!(
                "task \"{}\" has no checkpoints (it was started by a rawko without them, kept no store, or never reached a phase or a change)",
                clip(id)
            ))
        };
        let (dir, found) = self.logged_checkpoints(id).await.ok_or_else(none)?;
        if found.is_empty() {
            return Err(none());
        }
        let (from, to) = span(&found, index).ok_or_else(|| {
            TaskError::Conflict(format!(
                "task \"{}\" has no checkpoint of phase \"{}\": it has not entered it",
                clip(id),
                clip(&phase_name)
            ))
        })?;
        let (from, to) = (from.commit.clone(), to.commit.clone());
        let mut checkpoints = Checkpoints::for_task(&task.workspace, &dir);
        let diff = checkpoints.diff(&from, &to).await.map_err(|e| {
            TaskError::Conflict(format!(
                "cannot read the checkpoints of task \"{}\": {e}",
                clip(id)
            ))
        })?;
        Ok(PhaseDiff {
            diff: diff.text,
            files: diff.files,
            from: Some(from),
            to: Some(to),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cp(commit: &str, phase: Option<u32>, entered: bool) -> LoggedCheckpoint {
        LoggedCheckpoint {
            commit: commit.into(),
            phase_index: phase,
            phase: String::new(),
            reason: if entered {
                "phase_entered"
            } else {
                "tool_call"
            }
            .into(),
        }
    }

    fn commits<'a>(
        s: Option<(&'a LoggedCheckpoint, &'a LoggedCheckpoint)>,
    ) -> Option<(&'a str, &'a str)> {
        s.map(|(a, b)| (a.commit.as_str(), b.commit.as_str()))
    }

    #[test]
    fn a_phase_spans_from_its_last_entry_to_the_next_entry_or_the_latest() {
        let log = [
            cp("p0", Some(0), true),
            cp("w1", Some(0), false),
            cp("p1", Some(1), true),
            cp("w2", Some(1), false),
            cp("p2", Some(2), true),
            // Looped back to phase 1.
            cp("p1b", Some(1), true),
            cp("w3", Some(1), false),
        ];
        assert_eq!(commits(span(&log, None)), Some(("p0", "w3")));
        assert_eq!(commits(span(&log, Some(0))), Some(("p0", "p1")));
        assert_eq!(commits(span(&log, Some(2))), Some(("p2", "p1b")));
        assert_eq!(commits(span(&log, Some(1))), Some(("p1b", "w3")));
        assert_eq!(commits(span(&log, Some(3))), None);
        assert_eq!(commits(span(&[], None)), None);
    }
}

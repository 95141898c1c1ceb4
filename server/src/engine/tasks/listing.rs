//! Listing tasks: those running here, and the stored ones read from the store (off the
//! runtime's thread); what the service holds in memory.

use std::collections::HashSet;
use std::path::Path;

use super::{stored, Tasks};
use crate::engine::stored::Stored;
use crate::engine::TaskSnapshot;

impl Tasks {
    /// Every task of the workspace: those running here, then the stored ones (finished, or
    /// unfinished and so interrupted), the most recently started first. The store is read off
    /// the async runtime's thread (a store of thousands of tasks takes a while to read, and the
    /// server goes on serving meanwhile); a stored task shown from its log (its snapshot lags
    /// it) is placed in its workflow with the definitions.
    pub async fn list_read(&self) -> Vec<TaskSnapshot> {
        let mut tasks: Vec<TaskSnapshot> = self.running.iter().map(|h| h.snapshot()).collect();
        if let Some(store) = self.store.clone() {
            let workspace = self.workspace();
            let running: HashSet<String> = tasks.iter().map(|t| t.task_id.clone()).collect();
            let stored =
                tokio::task::spawn_blocking(move || read_stored(&store, &workspace, &running))
                    .await
                    .unwrap_or_default();
            let set = match stored.iter().any(Stored::needs_placing) {
                true => Some(self.task_workflows().await.1),
                false => None,
            };
            tasks.extend(stored.into_iter().map(|s| match &set {
                Some(set) => s.placed(set),
                None => s.task,
            }));
        }
        sorted(tasks)
    }

    /// A stored task as shown: placed in its workflow when it is shown from its log.
    pub(super) async fn placed(&self, stored: Stored) -> TaskSnapshot {
        if !stored.needs_placing() {
            return stored.task;
        }
        stored.placed(&self.task_workflows().await.1)
    }

    /// What the service holds in memory.
    pub fn counts(&self) -> Counts {
        Counts {
            in_memory: self.running.len(),
            external_sessions: self.external.len(),
        }
    }
}

/// How many tasks and sessions the service holds in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Tasks whose actor has not ended.
    pub in_memory: usize,
    /// External agents' sessions.
    pub external_sessions: usize,
}

/// The stored tasks of `workspace` in `store` that are not among `running`.
fn read_stored(store: &Path, workspace: &Path, running: &HashSet<String>) -> Vec<Stored> {
    crate::store::task_dirs(store)
        .into_iter()
        .filter(|dir| {
            // A running task's directory is not read at all.
            dir.file_name()
                .and_then(|n| n.to_str())
                .is_none_or(|n| !running.contains(n))
        })
        .filter_map(|dir| stored::summary(&dir))
        .filter(|s| s.task.workspace == workspace && !running.contains(&s.task.task_id))
        .collect()
}

/// The most recently started first.
fn sorted(mut tasks: Vec<TaskSnapshot>) -> Vec<TaskSnapshot> {
    // Ids end in a counter that breaks ties.
    let order = |id: &str| {
        id.rsplit('-')
            .next()
            .and_then(|n| n.parse::<u64>().ok())
            .unwrap_or(0)
    };
    tasks.sort_by(|a, b| {
        b.started_at
            .cmp(&a.started_at)
            .then_with(|| order(&b.task_id).cmp(&order(&a.task_id)))
    });
    tasks
}

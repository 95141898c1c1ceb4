//! Listing tasks: those running here, and the stored ones read from the store (off the
//! runtime's thread); what the service holds in memory.

use std::path::Path;

use super::{stored, Tasks};
use crate::engine::TaskSnapshot;

impl Tasks {
    /// Every task of the workspace: those running here, then the stored ones (finished, or
    /// unfinished and so interrupted), the most recently started first.
    pub fn list(&self) -> Vec<TaskSnapshot> {
        let running: Vec<TaskSnapshot> = self.running.iter().map(|h| h.snapshot()).collect();
        list_with_stored(running, self.store.as_deref(), &self.workspace())
    }

    /// [`Tasks::list`], reading the store off the async runtime's thread (a store of thousands
    /// of tasks takes a while to read, and the server goes on serving meanwhile).
    pub async fn list_read(&self) -> Vec<TaskSnapshot> {
        let running: Vec<TaskSnapshot> = self.running.iter().map(|h| h.snapshot()).collect();
        let store = self.store.clone();
        let workspace = self.workspace();
        let Some(store) = store else {
            return list_with_stored(running, None, &workspace);
        };
        tokio::task::spawn_blocking(move || list_with_stored(running, Some(&store), &workspace))
            .await
            .unwrap_or_default()
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

/// The tasks `running` and those of `workspace` in `store` that are not among them, the most
/// recently started first.
fn list_with_stored(
    mut tasks: Vec<TaskSnapshot>,
    store: Option<&Path>,
    workspace: &Path,
) -> Vec<TaskSnapshot> {
    if let Some(store) = store {
        let running: std::collections::HashSet<String> =
            tasks.iter().map(|t| t.task_id.clone()).collect();
        tasks.extend(
            crate::store::task_dirs(store)
                .into_iter()
                .filter(|dir| {
                    // A running task's directory is not read at all.
                    dir.file_name()
                        .and_then(|n| n.to_str())
                        .is_none_or(|n| !running.contains(n))
                })
                .filter_map(|dir| stored::snapshot(&dir))
                .filter(|s| s.workspace == workspace && !running.contains(&s.task_id)),
        );
    }
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

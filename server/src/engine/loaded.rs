//! The workflows and agents new tasks run with, loaded once and shared while their files do not
//! change: ten thousand tasks started at once parse the workflows once and hold one copy of
//! them, not ten thousand. Whether the files changed is checked from their sizes and times (a
//! walk of the roots, no parsing) at most every [`CHECK_EVERY`].

use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, UNIX_EPOCH};

use super::Tasks;
use crate::agents::AgentSet;
use crate::workflow::{LoadOutcome, WorkflowSet};

/// How long a check of the files holds.
const CHECK_EVERY: Duration = Duration::from_millis(250);

/// What was loaded, and the state of the files it was loaded from.
pub(super) struct Loaded<T> {
    fingerprint: u64,
    /// When the files were last found unchanged; `None`: check before the next use.
    checked: Option<Instant>,
    value: T,
}

/// The loaded workflows: the load's outcome (for its diagnostics) and the set tasks share.
type Workflows = (Arc<LoadOutcome>, Arc<WorkflowSet>);

/// The service's loaded definitions.
#[derive(Default)]
pub(super) struct Definitions {
    workflows: tokio::sync::Mutex<Option<Loaded<Workflows>>>,
    agents: tokio::sync::Mutex<Option<Loaded<Arc<AgentSet>>>>,
}

impl Definitions {
    /// The next task checks the files first (a client listed or validated the workflows: it may
    /// have just saved one).
    pub(super) fn check_next_time(&self) {
        if let Ok(mut w) = self.workflows.try_lock() {
            if let Some(l) = w.as_mut() {
                l.checked = None;
            }
        }
        if let Ok(mut a) = self.agents.try_lock() {
            if let Some(l) = a.as_mut() {
                l.checked = None;
            }
        }
    }
}

impl Tasks {
    /// The workflows a new task runs with (shared), and the load's outcome for its diagnostics.
    pub(super) async fn task_workflows(&self) -> (Arc<LoadOutcome>, Arc<WorkflowSet>) {
        let roots = self.place().workflow_roots.clone();
        let paths: Vec<std::path::PathBuf> = roots.iter().map(|r| r.path.clone()).collect();
        let mut slot = self.definitions.workflows.lock().await;
        if let Some(loaded) = fresh(&mut slot, paths.clone()).await {
            return loaded.clone();
        }
        let outcome = self.load_workflows().await;
        let set = Arc::new(outcome.workflows.clone());
        let value = (Arc::new(outcome), set);
        *slot = Some(Loaded {
            fingerprint: fingerprint_of(paths).await,
            checked: Some(Instant::now()),
            value: value.clone(),
        });
        value
    }

    /// The agents a new task chooses from (shared).
    pub(super) async fn task_agents(&self) -> Arc<AgentSet> {
        let paths = self.place().agent_roots.clone();
        let mut slot = self.definitions.agents.lock().await;
        if let Some(loaded) = fresh(&mut slot, paths.clone()).await {
            return loaded.clone();
        }
        let agents = Arc::new(self.load_agents().await);
        *slot = Some(Loaded {
            fingerprint: fingerprint_of(paths).await,
            checked: Some(Instant::now()),
            value: agents.clone(),
        });
        agents
    }
}

/// The loaded value, if its files have not changed since (checked now if the last check is
/// old).
async fn fresh<T>(slot: &mut Option<Loaded<T>>, roots: Vec<std::path::PathBuf>) -> Option<&T> {
    let loaded = slot.as_mut()?;
    if loaded.checked.is_none_or(|at| at.elapsed() >= CHECK_EVERY) {
        if fingerprint_of(roots).await != loaded.fingerprint {
            return None;
        }
        loaded.checked = Some(Instant::now());
    }
    Some(&loaded.value)
}

async fn fingerprint_of(roots: Vec<std::path::PathBuf>) -> u64 {
    tokio::task::spawn_blocking(move || fingerprint(&roots))
        .await
        .unwrap_or(0)
}

/// A hash of every path under `roots` (four levels deep) with its size and modification time.
pub fn fingerprint(roots: &[std::path::PathBuf]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for root in roots {
        root.hash(&mut hasher);
        walk(root, 0, &mut hasher);
    }
    hasher.finish()
}

fn walk(dir: &Path, depth: usize, hasher: &mut impl Hasher) {
    let Ok(read) = std::fs::read_dir(dir) else {
        0u8.hash(hasher);
        return;
    };
    let mut entries: Vec<_> = read.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        // Followed like the loaders follow them (a symlinked workflow directory counts).
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        path.hash(hasher);
        meta.len().hash(hasher);
        meta.modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_nanos())
            .hash(hasher);
        if meta.is_dir() && depth < 4 {
            walk(&path, depth + 1, hasher);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::fingerprint;

    #[test]
    fn the_fingerprint_changes_with_a_file_and_not_without() {
        let dir = tempfile::tempdir().unwrap();
        let roots = vec![dir.path().to_owned(), dir.path().join("missing")];
        let wf = dir.path().join("feature");
        std::fs::create_dir_all(&wf).unwrap();
        std::fs::write(wf.join("workflow.yaml"), "name: A\n").unwrap();
        let first = fingerprint(&roots);
        assert_eq!(fingerprint(&roots), first);
        std::fs::write(wf.join("workflow.yaml"), "name: AB\n").unwrap();
        let second = fingerprint(&roots);
        assert_ne!(second, first);
        std::fs::write(wf.join("plan.md"), "x").unwrap();
        assert_ne!(fingerprint(&roots), second);
    }
}

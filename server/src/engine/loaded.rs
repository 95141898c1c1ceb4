//! The workflows and agents as they are on disk, loaded once and shared while their files do not
//! change: ten thousand tasks started at once parse the workflows once and hold one copy of
//! them, not ten thousand. Whether the files changed is checked from their sizes, times and
//! inodes (a walk of the roots, no parsing) at most every [`CHECK_EVERY`], or, when a caller
//! must see every change made before it asked (a task comparing its pinned definitions with the
//! disk at its end), by a walk that started after it asked.
//!
//! One cache per process, keyed by the roots: a service's new tasks and a task's check of its
//! own workspace's roots share it.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant, UNIX_EPOCH};

use crate::agents::AgentSet;
use crate::workflow::{LoadOutcome, WorkflowRoot, WorkflowSet};

/// How long a check of the files holds.
const CHECK_EVERY: Duration = Duration::from_millis(250);

/// What was loaded, and the state of the files it was loaded from.
struct Loaded<T> {
    fingerprint: u64,
    /// When the last walk that found the files unchanged started; `None`: check before the next
    /// use.
    checked: Option<Instant>,
    value: T,
}

/// The loaded workflows: the load's outcome (for its diagnostics) and the set tasks share.
pub type Workflows = (Arc<LoadOutcome>, Arc<WorkflowSet>);

type Slot<T> = Arc<tokio::sync::Mutex<Option<Loaded<T>>>>;

/// Every root list's slot, made on first use.
struct Cache<K, T> {
    slots: LazyLock<Mutex<HashMap<K, Slot<T>>>>,
}

impl<K: Hash + Eq + Clone, T> Cache<K, T> {
    const fn new() -> Self {
        Cache {
            slots: LazyLock::new(Default::default),
        }
    }

    fn slot(&self, key: &K) -> Slot<T> {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        slots.entry(key.clone()).or_default().clone()
    }

    /// The next use checks the files first.
    fn check_next_time(&self, key: &K) {
        if let Ok(mut l) = self.slot(key).try_lock() {
            if let Some(l) = l.as_mut() {
                l.checked = None;
            }
        }
    }
}

static WORKFLOWS: Cache<Vec<WorkflowRoot>, Workflows> = Cache::new();
static AGENTS: Cache<Vec<PathBuf>, Arc<AgentSet>> = Cache::new();

/// When the files must have been checked: within [`CHECK_EVERY`], or after an instant.
#[derive(Debug, Clone, Copy)]
pub enum Freshness {
    Recent,
    /// By a walk that started at or after this instant.
    After(Instant),
}

/// The workflows under `roots` (shared), and the load's outcome for its diagnostics.
pub async fn workflows(roots: &[WorkflowRoot], freshness: Freshness) -> Workflows {
    let paths: Vec<PathBuf> = roots.iter().map(|r| r.path.clone()).collect();
    let slot = WORKFLOWS.slot(&roots.to_vec());
    let mut slot = slot.lock().await;
    if let Some(loaded) = fresh(&mut slot, paths.clone(), freshness).await {
        return loaded.clone();
    }
    // The walk first: a change made while the files are read is seen by the next check.
    let started = Instant::now();
    let fingerprint = fingerprint_of(paths).await;
    let roots = roots.to_vec();
    let outcome = tokio::task::spawn_blocking(move || crate::workflow::load(&roots))
        .await
        .unwrap_or_default();
    let set = Arc::new(outcome.workflows.clone());
    let value = (Arc::new(outcome), set);
    *slot = Some(Loaded {
        fingerprint,
        checked: Some(started),
        value: value.clone(),
    });
    value
}

/// The agents under `roots` (shared).
pub async fn agents(roots: &[PathBuf], freshness: Freshness) -> Arc<AgentSet> {
    let slot = AGENTS.slot(&roots.to_vec());
    let mut slot = slot.lock().await;
    if let Some(loaded) = fresh(&mut slot, roots.to_vec(), freshness).await {
        return loaded.clone();
    }
    let started = Instant::now();
    let fingerprint = fingerprint_of(roots.to_vec()).await;
    let paths = roots.to_vec();
    let agents = Arc::new(
        tokio::task::spawn_blocking(move || crate::agents::load(&paths).agents)
            .await
            .unwrap_or_default(),
    );
    *slot = Some(Loaded {
        fingerprint,
        checked: Some(started),
        value: agents.clone(),
    });
    agents
}

/// The next use of these roots checks the files first (a client listed or validated the
/// workflows: it may have just saved one).
pub fn check_next_time(workflow_roots: &[WorkflowRoot], agent_roots: &[PathBuf]) {
    WORKFLOWS.check_next_time(&workflow_roots.to_vec());
    AGENTS.check_next_time(&agent_roots.to_vec());
}

/// The loaded value, if its files have not changed since (checked now if the last check is
/// not fresh enough).
async fn fresh<T>(
    slot: &mut Option<Loaded<T>>,
    roots: Vec<PathBuf>,
    freshness: Freshness,
) -> Option<&T> {
    let loaded = slot.as_mut()?;
    let fresh_enough = match (loaded.checked, freshness) {
        (None, _) => false,
        (Some(at), Freshness::Recent) => at.elapsed() < CHECK_EVERY,
        (Some(at), Freshness::After(after)) => at >= after,
    };
    if !fresh_enough {
        let started = Instant::now();
        if fingerprint_of(roots).await != loaded.fingerprint {
            return None;
        }
        loaded.checked = Some(started);
    }
    Some(&loaded.value)
}

async fn fingerprint_of(roots: Vec<PathBuf>) -> u64 {
    tokio::task::spawn_blocking(move || fingerprint(&roots))
        .await
        .unwrap_or(0)
}

/// A hash of every path under `roots` (four levels deep) with its size, modification and change
/// times and inode.
pub fn fingerprint(roots: &[PathBuf]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for root in roots {
        root.hash(&mut hasher);
        walk(root, 0, &mut hasher);
    }
    hasher.finish()
}

fn walk(dir: &Path, depth: usize, hasher: &mut impl Hasher) {
    use std::os::unix::fs::MetadataExt;
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
        // A file rewritten in the clock tick of the last check keeps its size and time, not its
        // change time or (replaced by a rename) its inode.
        (meta.ctime(), meta.ctime_nsec(), meta.ino(), meta.dev()).hash(hasher);
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

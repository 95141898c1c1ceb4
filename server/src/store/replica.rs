//! A second home for task logs: a [`Replica`] gets every record of a task's log in order, after
//! the local journal, and what the task announces waits for it too. `rawko worker` (issue 37)
//! registers one per task it runs, which stores the records in NATS JetStream, so the team's
//! record of a task is whole before anything of it is told (invariant 6, across machines).
//!
//! A task's files look their replica up by task id when they are created or opened
//! ([`register`] before the task starts or resumes, [`unregister`] after it ended).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock, Mutex};

/// Where a task's log records go besides its file.
pub trait Replica: Send + Sync + std::fmt::Debug {
    /// A record as written to the log (one JSON line with its newline), `seq` counting from 1.
    /// Called in order; must not block.
    fn append(&self, seq: u64, line: &[u8]);
    /// Runs `f` once every record appended before is stored. Must not block (it is called on
    /// the log writer's thread).
    fn then(&self, f: Box<dyn FnOnce() + Send>);
    /// Waits until every record appended before is stored.
    fn flush(&self) -> Pin<Box<dyn Future<Output = ()> + Send>>;
}

static REPLICAS: LazyLock<Mutex<HashMap<String, Arc<dyn Replica>>>> =
    LazyLock::new(Default::default);

fn lock() -> std::sync::MutexGuard<'static, HashMap<String, Arc<dyn Replica>>> {
    REPLICAS.lock().unwrap_or_else(|e| e.into_inner())
}

/// The files task `id` creates or opens from now on send their records to `replica` too.
pub fn register(id: &str, replica: Arc<dyn Replica>) {
    lock().insert(id.to_owned(), replica);
}

/// Task `id`'s files opened from now on have no replica.
pub fn unregister(id: &str) {
    lock().remove(id);
}

/// The replica of task `id`, if one is registered.
pub(super) fn of(id: &str) -> Option<Arc<dyn Replica>> {
    let map = lock();
    if map.is_empty() {
        return None;
    }
    map.get(id).cloned()
}

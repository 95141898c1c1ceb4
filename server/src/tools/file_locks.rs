//! One writer at a time per file: Write, Edit and MultiEdit of the same path, from any of the
//! process's tasks, take turns.
//!
//! Without it, two tasks editing one file at once each read it, change it and write it back, and
//! the first one's change is lost. And a thousand tasks writing one file at once (a shared plan,
//! a changelog) piled a thousand blocking threads' writes onto that file's inode lock, where the
//! kernel spins: in `cargo bench -p rawko --bench scale -- concurrent 1000` that spinning took
//! most of the file tools' CPU and starved the log writer. Waiting here costs no thread: a task
//! waits for its turn before its blocking work starts.
//!
//! A file is known by its path in the workspace as given, made lexical (`.` and `..` resolved,
//! not symlinks): two names for one file (a symlink) take separate turns, as before. An entry
//! lives only while someone holds or waits for it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use tokio::sync::OwnedMutexGuard;

type Turns = HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>;

fn turns() -> MutexGuard<'static, Turns> {
    static TURNS: OnceLock<Mutex<Turns>> = OnceLock::new();
    TURNS
        .get_or_init(Mutex::default)
        .lock()
        // Every change to the map is one call: a panic elsewhere leaves it whole.
        .unwrap_or_else(|e| e.into_inner())
}

/// The turn to write one file; the next writer of the file goes when it is dropped.
pub(super) struct FileTurn {
    key: PathBuf,
    lock: Arc<tokio::sync::Mutex<()>>,
    held: Option<OwnedMutexGuard<()>>,
}

impl Drop for FileTurn {
    fn drop(&mut self) {
        self.held = None;
        let mut turns = turns();
        // The map's and this one: nobody else holds or waits for the file (a new waiter would
        // take its clone under the map's lock, held here).
        if Arc::strong_count(&self.lock) == 2 {
            turns.remove(&self.key);
        }
    }
}

/// Waits for the turn to write `given` (a path as a tool's input gives it) in `workspace`.
pub(super) async fn turn(workspace: &Path, given: &str) -> FileTurn {
    let key = crate::paths::lexical(&workspace.join(given));
    let lock = turns().entry(key.clone()).or_default().clone();
    let held = lock.clone().lock_owned().await;
    FileTurn {
        key,
        lock,
        held: Some(held),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn writers_of_one_file_take_turns_and_leave_nothing_behind() {
        let ws = Path::new("/ws-file-locks-test");
        let first = turn(ws, "dir/../PLAN.md").await;
        // The same file by another name waits; another file does not.
        let same = tokio::spawn(async move {
            let _t = turn(Path::new("/ws-file-locks-test"), "./PLAN.md").await;
        });
        let other = turn(ws, "NOTES.md").await;
        tokio::task::yield_now().await;
        assert!(!same.is_finished(), "took a turn while the file was held");
        drop(other);
        drop(first);
        tokio::time::timeout(std::time::Duration::from_secs(5), same)
            .await
            .expect("the waiter got its turn")
            .unwrap();
        let mine = turns()
            .keys()
            .filter(|k| k.starts_with("/ws-file-locks-test"))
            .count();
        assert_eq!(mine, 0, "a file nobody writes is forgotten");
    }
}

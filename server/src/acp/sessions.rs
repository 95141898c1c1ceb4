//! Which task each ACP session runs, kept in the state directory (`acp-sessions/<session id>`,
//! the task id as its text), so that a later `rawko acp` can load the session (`session/load`).

use std::io;
use std::path::{Path, PathBuf};

/// The file of `session`, if its id is one rawko could have made (letters, digits, `-`, `_`).
fn file(store: &Path, session: &str) -> Option<PathBuf> {
    let plain = !session.is_empty()
        && session.len() <= 200
        && session
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    plain.then(|| store.join("acp-sessions").join(session))
}

/// Records that `session` runs `task` now (written to a temporary file, then renamed).
pub fn record(store: &Path, session: &str, task: &str) -> io::Result<()> {
    let path = file(store, session)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a session id"))?;
    let dir = store.join("acp-sessions");
    std::fs::create_dir_all(&dir)?;
    let tmp = dir.join(format!(".{session}.tmp"));
    std::fs::write(&tmp, task)?;
    std::fs::rename(&tmp, &path)
}

/// The task `session` ran last, if it is recorded.
pub fn task_of(store: &Path, session: &str) -> Option<String> {
    let text = std::fs::read_to_string(file(store, session)?).ok()?;
    let task = text.trim();
    (!task.is_empty()).then(|| task.to_owned())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_recorded_session_gives_its_last_task_and_odd_ids_give_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = dir.path();
        assert_eq!(super::task_of(store, "acp-1-2-3"), None);
        super::record(store, "acp-1-2-3", "task-1").expect("record");
        super::record(store, "acp-1-2-3", "task-2").expect("record");
        assert_eq!(
            super::task_of(store, "acp-1-2-3").as_deref(),
            Some("task-2")
        );
        assert!(super::record(store, "../escape", "t").is_err());
        assert_eq!(super::task_of(store, "../acp-sessions/acp-1-2-3"), None);
        assert_eq!(super::task_of(store, ""), None);
    }
}

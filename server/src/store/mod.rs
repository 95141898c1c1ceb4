//! Task persistence: each task appends every event to its own log (one JSON line each, fsync'd
//! before the event is announced) and keeps a snapshot, a cache written by atomic rename
//! (invariant 6). The log is the truth: resume replays it.
//!
//! Layout under the state directory (`$XDG_STATE_HOME/rawko`, `~/.local/state/rawko`):
//! `tasks/<task-id>/events.jsonl` and `tasks/<task-id>/snapshot.json`.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub mod definitions;
pub mod journal;
pub mod recover;
pub mod replica;
mod snapshots;
mod syncer;
pub mod wal;
mod writing;

pub use journal::{journal, LogTarget};
pub use recover::DamageNote;

/// The format version of log records and snapshots.
pub const FORMAT_VERSION: u32 = 1;

/// The state directory rawko keeps tasks in.
pub fn state_dir(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let non_empty = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    non_empty("XDG_STATE_HOME")
        .or_else(|| non_empty("HOME").map(|h| h.join(".local").join("state")))
        .map(|d| d.join("rawko"))
}

/// One line of a task's log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogRecord {
    pub v: u32,
    /// 1-based, one more than the line before.
    pub seq: u64,
    /// Milliseconds since the Unix epoch.
    pub at: i64,
    pub event: Value,
}

/// A problem with a task's files.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Corrupt {
        path: PathBuf,
        line: usize,
        message: String,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The files of one task. Appends and snapshots go through the process's [`journal`]: an
/// append returns at once, and what the task announces after it goes out once it is durable
/// ([`TaskFiles::then`]).
#[derive(Debug)]
pub struct TaskFiles {
    dir: PathBuf,
    log: Arc<LogTarget>,
    next_seq: u64,
    /// Where the records go besides the file (a team worker's task: [`replica`]).
    replica: Option<Arc<dyn replica::Replica>>,
}

impl Drop for TaskFiles {
    fn drop(&mut self) {
        // The file closes after the lines queued before.
        journal().close(&self.log);
    }
}

/// Task ids rawko makes are `task-…` and `ext-…`: letters, digits, `-`, `_` and `.`.
fn is_plain_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 200
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// What reading a log found.
#[derive(Debug, Default)]
pub struct LogContents {
    pub records: Vec<LogRecord>,
    /// A last line cut short by a crash (not counted as an event; rewritten over on append).
    pub torn_tail: bool,
}

impl TaskFiles {
    /// The directory of task `id` under `state_dir`.
    ///
    /// An id that is not a plain name (`../x`, `a/b`, empty, hidden, or long) names no directory
    /// that exists, so a task id from a client can never reach outside the store.
    pub fn dir_of(state_dir: &Path, id: &str) -> PathBuf {
        let tasks = state_dir.join("tasks");
        if is_plain_id(id) {
            tasks.join(id)
        } else {
            tasks.join(".not-a-task-id")
        }
    }

    /// A new task's files. The log writer makes its directory and log with the first record (off
    /// the server's thread); a store it cannot write to is reported by the appends that follow.
    pub fn create(state_dir: &Path, id: &str) -> Result<TaskFiles, StoreError> {
        let dir = Self::dir_of(state_dir, id);
        Ok(TaskFiles {
            log: journal().task_target(state_dir, id),
            dir,
            next_seq: 1,
            replica: replica::of(id),
        })
    }

    /// Opens an existing task for appending after reading its log; a torn last line is cut off.
    pub fn open(dir: &Path) -> Result<(TaskFiles, LogContents), StoreError> {
        // Lines this process still has queued for the log are written first.
        journal().flush_blocking();
        let contents = read_log(&dir.join("events.jsonl"))?;
        let path = dir.join("events.jsonl");
        if contents.torn_tail {
            // Keep exactly the complete lines, so the next append starts a fresh line.
            let text = fs::read(&path).map_err(io_err(&path))?;
            let keep = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            let file = OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(io_err(&path))?;
            file.set_len(keep as u64).map_err(io_err(&path))?;
            file.sync_all().map_err(io_err(&path))?;
        }
        // A task of a state directory (`<state>/tasks/<id>`) logs through its WAL.
        let task = dir
            .file_name()
            .and_then(|id| id.to_str())
            .filter(|id| is_plain_id(id));
        let state = dir.parent().and_then(Path::parent);
        let log = match (state, task) {
            (Some(state), Some(id)) if Self::dir_of(state, id) == dir => {
                journal().task_target(state, id)
            }
            _ => journal().target(path),
        };
        let files = TaskFiles {
            dir: dir.to_owned(),
            log,
            next_seq: contents.records.last().map_or(1, |r| r.seq + 1),
            replica: dir
                .file_name()
                .and_then(|id| id.to_str())
                .and_then(replica::of),
        };
        Ok((files, contents))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The `seq` of the last event appended (0 before the first): a snapshot taken now reflects
    /// the log up to it.
    pub fn last_seq(&self) -> u64 {
        self.next_seq - 1
    }

    /// Queues an event for the log and returns its `seq` at once. It is durable before anything
    /// queued after it with [`TaskFiles::then`] runs. An error of an earlier append (the log
    /// could not be written or synced) is returned here; after it nothing more is written.
    pub fn append(&mut self, at: i64, event: &Value) -> Result<u64, StoreError> {
        let path = self.log.path();
        if let Some(message) = self.log.error() {
            return Err(StoreError::Io {
                path: path.to_owned(),
                source: io::Error::other(message),
            });
        }
        /// [`LogRecord`] as written, borrowing its event.
        #[derive(Serialize)]
        struct Record<'a> {
            v: u32,
            seq: u64,
            at: i64,
            event: &'a Value,
        }
        let seq = self.next_seq;
        let record = Record {
            v: FORMAT_VERSION,
            seq,
            at,
            event,
        };
        let mut line = Vec::with_capacity(256);
        serde_json::to_writer(&mut line, &record).map_err(|e| StoreError::Io {
            path: path.to_owned(),
            source: io::Error::other(e),
        })?;
        line.push(b'\n');
        if let Some(replica) = &self.replica {
            replica.append(seq, &line);
        }
        journal().append(&self.log, line);
        self.next_seq += 1;
        Ok(seq)
    }

    /// The first error writing the log, if there was one.
    pub fn error(&self) -> Option<String> {
        self.log.error()
    }

    /// Runs `f` (an announcement) once every event appended before is durable.
    pub fn then(&self, f: impl FnOnce() + Send + 'static) {
        match &self.replica {
            // Once the file has it, then once the replica has it too.
            Some(replica) => {
                let replica = replica.clone();
                journal().then(move || replica.then(Box::new(f)));
            }
            None => journal().then(f),
        }
    }

    /// Waits until every event appended so far is durable.
    pub async fn flush(&self) {
        journal().flush().await;
        if let Some(replica) = &self.replica {
            replica.flush().await;
        }
    }

    /// [`TaskFiles::flush`], blocking the thread.
    pub fn flush_blocking(&self) {
        journal().flush_blocking();
    }

    /// Whether appends are synced (the default). Without it a record still survives a crash of
    /// rawko once written (it is in the page cache), only not one of the machine.
    pub fn set_durable(&mut self, durable: bool) {
        self.log.set_durable(durable);
    }

    /// Queues the snapshot, written (temporary file, rename) once the events appended before it
    /// are durable. It is a cache: not synced, and rebuilt from the log when unreadable.
    pub fn write_snapshot<T: serde::Serialize + ?Sized>(
        &self,
        snapshot: &T,
    ) -> Result<(), StoreError> {
        let path = self.dir.join("snapshot.json");
        let body = serde_json::to_vec(snapshot).map_err(|e| StoreError::Io {
            path: path.clone(),
            source: io::Error::other(e),
        })?;
        journal().snapshot(path, body);
        Ok(())
    }

    /// Queues another JSON file of the task (`name` in its directory), written like the
    /// snapshot.
    pub fn write_json<T: serde::Serialize + ?Sized>(
        &self,
        name: &str,
        value: &T,
    ) -> Result<(), StoreError> {
        let path = self.dir.join(name);
        let body = serde_json::to_vec(value).map_err(|e| StoreError::Io {
            path: path.clone(),
            source: io::Error::other(e),
        })?;
        journal().snapshot(path, body);
        Ok(())
    }
}

/// Writes JSON to `path` through a synced temporary file and a rename.
pub fn write_atomic<T: serde::Serialize + ?Sized>(
    path: &Path,
    value: &T,
) -> Result<(), StoreError> {
    let tmp = path.with_extension("json.tmp");
    let body = serde_json::to_vec(value).map_err(|e| StoreError::Io {
        path: path.to_owned(),
        source: io::Error::other(e),
    })?;
    {
        let mut file = File::create(&tmp).map_err(io_err(&tmp))?;
        file.write_all(&body).map_err(io_err(&tmp))?;
        file.sync_all().map_err(io_err(&tmp))?;
    }
    fs::rename(&tmp, path).map_err(io_err(path))?;
    if let Some(dir) = path.parent() {
        // Make the rename itself durable.
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// Reads a log. Every complete line must be a valid record of a known version, with `seq`
/// counting up from 1; a last line without its newline is a write cut short by a crash.
pub fn read_log(path: &Path) -> Result<LogContents, StoreError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(LogContents::default()),
        Err(e) => return Err(io_err(path)(e)),
    };
    let mut reader = BufReader::new(file);
    let mut contents = LogContents::default();
    let mut line = Vec::new();
    let mut number = 0;
    loop {
        line.clear();
        let n = reader.read_until(b'\n', &mut line).map_err(io_err(path))?;
        if n == 0 {
            break;
        }
        number += 1;
        if line.last() != Some(&b'\n') {
            contents.torn_tail = true;
            break;
        }
        let corrupt = |message: String| StoreError::Corrupt {
            path: path.to_owned(),
            line: number,
            message,
        };
        let record: LogRecord =
            serde_json::from_slice(&line).map_err(|e| corrupt(format!("not a log record: {e}")))?;
        if record.v != FORMAT_VERSION {
            return Err(corrupt(format!(
                "record of format version {}, but this rawko reads version {FORMAT_VERSION}",
                record.v
            )));
        }
        let want = contents.records.last().map_or(1, |r| r.seq + 1);
        if record.seq != want {
            return Err(corrupt(format!(
                "seq {} where {want} was expected",
                record.seq
            )));
        }
        contents.records.push(record);
    }
    Ok(contents)
}

/// Reads a snapshot, if there is a readable one of this version (the version is checked first).
pub fn read_snapshot<T: serde::de::DeserializeOwned>(dir: &Path) -> Option<T> {
    let text = fs::read(dir.join("snapshot.json")).ok()?;
    let value: Value = serde_json::from_slice(&text).ok()?;
    if value.get("v").and_then(Value::as_u64) != Some(u64::from(FORMAT_VERSION)) {
        return None;
    }
    serde_json::from_value(value).ok()
}

/// The directories of every stored task.
pub fn task_dirs(state_dir: &Path) -> Vec<PathBuf> {
    let Ok(read) = fs::read_dir(state_dir.join("tasks")) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = read
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("events.jsonl").is_file())
        .collect();
    dirs.sort();
    dirs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn append_read_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = TaskFiles::create(dir.path(), "t1").unwrap();
        assert_eq!(files.append(1, &json!({"type": "a"})).unwrap(), 1);
        assert_eq!(files.append(2, &json!({"type": "b"})).unwrap(), 2);
        drop(files);
        let task_dir = TaskFiles::dir_of(dir.path(), "t1");
        let (mut again, contents) = TaskFiles::open(&task_dir).unwrap();
        assert_eq!(contents.records.len(), 2);
        assert!(!contents.torn_tail);
        assert_eq!(again.append(3, &json!({"type": "c"})).unwrap(), 3);
        again.flush_blocking();
        assert_eq!(
            read_log(&task_dir.join("events.jsonl"))
                .unwrap()
                .records
                .len(),
            3
        );
        assert_eq!(task_dirs(dir.path()), vec![task_dir]);
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = TaskFiles::create(dir.path(), "t").unwrap();
        files.append(1, &json!({"type": "a"})).unwrap();
        files.flush_blocking();
        let log = files.dir().join("events.jsonl");
        let mut f = OpenOptions::new().append(true).open(&log).unwrap();
        f.write_all(b"{\"v\":1,\"seq\":2,\"at\":2,\"ev").unwrap();
        drop(files);
        let (mut files, contents) = TaskFiles::open(&TaskFiles::dir_of(dir.path(), "t")).unwrap();
        assert!(contents.torn_tail);
        assert_eq!(contents.records.len(), 1);
        assert_eq!(files.append(3, &json!({"type": "b"})).unwrap(), 2);
        files.flush_blocking();
        let again = read_log(&log).unwrap();
        assert_eq!(again.records.len(), 2);
        assert!(!again.torn_tail);
    }

    #[test]
    fn corrupt_and_foreign_logs_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("events.jsonl");
        for (text, want) in [
            ("not json\n", ":1: not a log record"),
            (
                "{\"v\":2,\"seq\":1,\"at\":0,\"event\":{}}\n",
                "format version 2",
            ),
            (
                "{\"v\":1,\"seq\":2,\"at\":0,\"event\":{}}\n",
                "seq 2 where 1 was expected",
            ),
        ] {
            fs::write(&log, text).unwrap();
            let err = read_log(&log).unwrap_err().to_string();
            assert!(err.contains(want), "{text}: {err}");
        }
    }

    #[test]
    fn snapshots_are_replaced_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let files = TaskFiles::create(dir.path(), "t").unwrap();
        files.write_snapshot(&json!({"v": 1, "n": 1})).unwrap();
        files.write_snapshot(&json!({"v": 1, "n": 2})).unwrap();
        files.flush_blocking();
        assert_eq!(read_snapshot::<Value>(files.dir()).unwrap()["n"], 2);
        assert!(!files.dir().join("snapshot.json.tmp").exists());
        fs::write(files.dir().join("snapshot.json"), "{\"v\": 9}").unwrap();
        files.flush_blocking();
        assert!(read_snapshot::<Value>(files.dir()).is_none());
    }

    #[test]
    fn the_state_dir_follows_xdg() {
        let env = |k: &str| match k {
            "XDG_STATE_HOME" => Some(OsString::from("/s")),
            "HOME" => Some(OsString::from("/h")),
            _ => None,
        };
        assert_eq!(state_dir(env), Some(PathBuf::from("/s/rawko")));
        let env = |k: &str| (k == "HOME").then(|| OsString::from("/h"));
        assert_eq!(state_dir(env), Some(PathBuf::from("/h/.local/state/rawko")));
    }

    #[test]
    fn a_task_id_never_leads_out_of_the_store() {
        let state = Path::new("/state");
        assert_eq!(
            TaskFiles::dir_of(state, "task-1795-1"),
            Path::new("/state/tasks/task-1795-1")
        );
        for bad in [
            "../../etc",
            "a/b",
            "",
            ".",
            "..",
            ".hidden",
            "x\0y",
            &"a".repeat(201),
        ] {
            assert_eq!(
                TaskFiles::dir_of(state, bad),
                Path::new("/state/tasks/.not-a-task-id"),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn task_logs_go_through_the_wal_and_without_one_are_synced_on_their_own() {
        let read = |state: &Path, id: &str| {
            read_log(&TaskFiles::dir_of(state, id).join("events.jsonl"))
                .unwrap()
                .records
                .len()
        };
        // A state directory whose journal can be made: a WAL file of this process appears.
        let ok = tempfile::tempdir().unwrap();
        let mut files = TaskFiles::create(ok.path(), "task-1").unwrap();
        files.append(1, &json!({"type": "interrupted"})).unwrap();
        files.flush_blocking();
        assert_eq!(read(ok.path(), "task-1"), 1);
        let wals: Vec<_> = fs::read_dir(wal::dir_of(ok.path())).unwrap().collect();
        assert_eq!(wals.len(), 1, "{wals:?}");
        // One whose journal cannot be made (a file stands where its folder would): the log is
        // written and synced all the same, and no error reaches the task.
        let blocked = tempfile::tempdir().unwrap();
        fs::write(blocked.path().join("journal"), "not a folder").unwrap();
        let mut files = TaskFiles::create(blocked.path(), "task-2").unwrap();
        for n in 0..3 {
            files.append(n, &json!({"type": "interrupted"})).unwrap();
        }
        files.flush_blocking();
        assert_eq!(files.error(), None);
        assert_eq!(read(blocked.path(), "task-2"), 3);
    }
}

//! Tasks as the store has them, for listing and showing tasks that are not running: from a
//! task's snapshot when it has a readable one, else from its log.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::log::LogEvent;
use super::{HistoryItem, TaskSnapshot, TaskState};
use crate::workflow::outline::Progress;

/// `snapshot.json`: a cache for listing a stored task without replaying its log. The actor
/// writes it and [`snapshot`] and [`detail`] read it, through this one type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotFile {
    /// The store's format version ([`crate::store::FORMAT_VERSION`], checked before reading).
    pub v: u32,
    pub task_id: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub description: String,
    #[serde(default)]
    pub workflow: Option<String>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub workspace: PathBuf,
    /// The task's state as the editor shows it (`running`, `complete`…).
    #[serde(with = "state_name")]
    pub state: TaskState,
    /// The orchestrator machine's state.
    #[serde(default, deserialize_with = "null_as_default")]
    pub machine_state: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub breadcrumb_text: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub started_at: i64,
    #[serde(default, deserialize_with = "null_as_default")]
    pub updated_at: i64,
    /// The current phase's position among the workflow's concrete phases (absent before the
    /// field existed, and without an active workflow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase_index: Option<usize>,
    /// How many of the workflow's concrete phases are done.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "is_zero"
    )]
    pub phases_done: usize,
}

/// `history.json`: a finished task's whole history as it ran (status changes and notes the log
/// does not hold), written with its last snapshot; the server then forgets the task, and
/// `getTask` shows this history while the log still ends the same way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryFile {
    pub v: u32,
    /// The state the task ended in.
    #[serde(with = "state_name")]
    pub state: TaskState,
    pub history: Vec<HistoryItem>,
}

impl HistoryFile {
    pub const NAME: &'static str = "history.json";
}

/// [`HistoryFile`] as written, borrowing the history instead of copying it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryRef<'a> {
    pub v: u32,
    #[serde(with = "state_name")]
    pub state: TaskState,
    pub history: &'a [HistoryItem],
}

impl SnapshotFile {
    /// The file for a running task's snapshot, written at `now`.
    pub fn of(snap: TaskSnapshot, machine_state: &str, breadcrumb_text: &str, now: i64) -> Self {
        SnapshotFile {
            v: crate::store::FORMAT_VERSION,
            task_id: snap.task_id,
            description: snap.description,
            workflow: snap.workflow,
            workspace: snap.workspace,
            state: snap.state,
            machine_state: machine_state.to_owned(),
            breadcrumb_text: breadcrumb_text.to_owned(),
            started_at: snap.started_at,
            updated_at: now,
            phase_index: snap.progress.current,
            phases_done: snap.progress.done,
        }
    }

    /// How far the task got through its workflow.
    pub fn progress(&self) -> Progress {
        Progress {
            done: self.phases_done,
            current: self.phase_index,
        }
    }

    /// The stored task's snapshot file, if it has a readable one of this version.
    pub fn read(dir: &Path) -> Option<SnapshotFile> {
        crate::store::read_snapshot(dir)
    }

    /// The task as listed: a task that had not finished is interrupted now.
    pub fn into_task_snapshot(self) -> TaskSnapshot {
        let progress = self.progress();
        let state = if self.state.is_finished() {
            self.state
        } else {
            TaskState::Interrupted
        };
        TaskSnapshot {
            task_id: self.task_id,
            description: self.description,
            workflow: self.workflow,
            workflow_name: None,
            state,
            breadcrumb: Vec::new(),
            breadcrumb_text: self.breadcrumb_text,
            status_text: String::new(),
            started_at: self.started_at,
            updated_at: self.updated_at,
            history: Vec::new(),
            workspace: self.workspace,
            machine_state: self.machine_state,
            agent: None,
            progress,
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// A `null` reads as the default, like a missing field.
fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Option::<T>::deserialize(d).map(Option::unwrap_or_default)
}

/// A [`TaskState`] by its name.
mod state_name {
    use super::*;

    pub fn serialize<S: Serializer>(state: &TaskState, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(state.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<TaskState, D::Error> {
        let name = String::deserialize(d)?;
        TaskState::parse(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown task state \"{name}\"")))
    }
}

/// A stored task's summary from its snapshot (or, without one, from its log). A snapshot that
/// says the task had not finished is checked against the log's last record: rawko may have
/// stopped after the log said "finished" and before the snapshot did.
pub fn snapshot(dir: &Path) -> Option<TaskSnapshot> {
    match SnapshotFile::read(dir) {
        Some(file) if file.state.is_finished() || !log_ends_finished(dir) => {
            Some(file.into_task_snapshot())
        }
        _ => detail(dir),
    }
}

/// Whether the last record of a task's log is its end (read from the log's tail).
fn log_ends_finished(dir: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(dir.join("events.jsonl")) else {
        return false;
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(16 * 1024);
    let mut tail = Vec::new();
    if file.seek(SeekFrom::Start(start)).is_err() || file.read_to_end(&mut tail).is_err() {
        return false;
    }
    let complete = match tail.iter().rposition(|b| *b == b'\n') {
        Some(end) => &tail[..end],
        None => return false,
    };
    let last = complete
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(complete, |i| &complete[i + 1..]);
    serde_json::from_slice::<Value>(last).is_ok_and(|r| r["event"]["type"] == "finished")
}

/// A stored task in full, its history read from its log.
pub fn detail(dir: &Path) -> Option<TaskSnapshot> {
    let contents = crate::store::read_log(&dir.join("events.jsonl")).ok()?;
    let mut snap: Option<TaskSnapshot> = None;
    let mut finished: Option<TaskState> = None;
    let mut history = Vec::new();
    for record in &contents.records {
        let event: LogEvent = serde_json::from_value(record.event.clone()).ok()?;
        let kind = record
            .event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("event")
            .to_owned();
        let mut item = HistoryItem {
            at: record.at,
            event: kind,
            state_before: None,
            state_after: None,
            guard: None,
            detail: None,
        };
        match event {
            LogEvent::Started {
                task_id,
                description,
                workflow,
                workspace,
                started_at,
                ..
            } => {
                snap = Some(TaskSnapshot {
                    task_id,
                    description,
                    workflow,
                    workflow_name: None,
                    state: TaskState::Interrupted,
                    breadcrumb: Vec::new(),
                    breadcrumb_text: String::new(),
                    status_text: String::new(),
                    started_at,
                    updated_at: started_at,
                    history: Vec::new(),
                    workspace,
                    machine_state: "idle".to_owned(),
                    agent: None,
                    progress: Progress::default(),
                });
            }
            LogEvent::Machine {
                event,
                from,
                to,
                guard,
            } => {
                item.event = format!("machine:{}", event.name());
                item.detail = super::log::event_detail(&event);
                item.state_before = Some(from);
                item.state_after = Some(to.clone());
                item.guard = guard;
                if let Some(s) = &mut snap {
                    s.machine_state = to;
                }
            }
            LogEvent::Finished { outcome, summary } => {
                finished = TaskState::parse(&outcome);
                item.detail = Some(summary);
            }
            LogEvent::Reopened { reason } => {
                finished = None;
                item.detail = Some(reason);
            }
            LogEvent::ToolStarted { name, reported, .. } => {
                item.detail = Some(if reported {
                    format!("{name} (reported by the agent)")
                } else {
                    name
                })
            }
            LogEvent::Approval { tool, answer, .. } => {
                item.detail = Some(format!("{tool}: {answer}"))
            }
            _ => {}
        }
        if let Some(s) = &mut snap {
            s.updated_at = record.at;
        }
        history.push(item);
    }
    let mut snap = snap?;
    snap.state = finished.unwrap_or(TaskState::Interrupted);
    snap.history = history;
    if let Some(file) = SnapshotFile::read(dir) {
        snap.progress = file.progress();
        snap.breadcrumb_text = file.breadcrumb_text;
    }
    // The history the task kept as it ran, when it is of this same end.
    if let Some(file) = std::fs::read(dir.join(HistoryFile::NAME))
        .ok()
        .and_then(|b| serde_json::from_slice::<HistoryFile>(&b).ok())
    {
        if file.v == crate::store::FORMAT_VERSION && file.state == snap.state {
            snap.history = file.history;
        }
    }
    Some(snap)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A snapshot as rawko wrote it before the type existed (with `json!` and string keys).
    const OLD_FORMAT: &str = r#"{"breadcrumbText":"Feature > 📋 Plan [1/4]","description":"add a flag","machineState":"executing","startedAt":1763900000000,"state":"waiting_approval","taskId":"task-1763900000000-1","updatedAt":1763900005000,"v":1,"workflow":"feature","workspace":"/home/u/project"}"#;

    fn dir_with(snapshot: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("snapshot.json"), snapshot).unwrap();
        dir
    }

    #[test]
    fn an_old_format_snapshot_reads() {
        let dir = dir_with(OLD_FORMAT);
        let file = SnapshotFile::read(dir.path()).unwrap();
        assert_eq!(
            file,
            SnapshotFile {
                v: 1,
                task_id: "task-1763900000000-1".to_owned(),
                description: "add a flag".to_owned(),
                workflow: Some("feature".to_owned()),
                workspace: PathBuf::from("/home/u/project"),
                state: TaskState::WaitingApproval,
                machine_state: "executing".to_owned(),
                breadcrumb_text: "Feature > 📋 Plan [1/4]".to_owned(),
                started_at: 1763900000000,
                updated_at: 1763900005000,
                phase_index: None,
                phases_done: 0,
            }
        );
        let snap = snapshot(dir.path()).unwrap();
        assert_eq!(snap.task_id, "task-1763900000000-1");
        assert_eq!(snap.state, TaskState::Interrupted, "it had not finished");
        assert_eq!(snap.breadcrumb_text, "Feature > 📋 Plan [1/4]");
        assert_eq!(snap.machine_state, "executing");
        assert_eq!(snap.started_at, 1763900000000);
        assert_eq!(snap.updated_at, 1763900005000);
        assert_eq!(snap.workspace, PathBuf::from("/home/u/project"));
        assert_eq!(snap.progress, Progress::default());
    }

    #[test]
    fn the_progress_is_kept_in_the_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let mut file: SnapshotFile = serde_json::from_str(OLD_FORMAT).unwrap();
        file.phase_index = Some(2);
        file.phases_done = 2;
        crate::store::write_atomic(&dir.path().join("snapshot.json"), &file).unwrap();
        let snap = snapshot(dir.path()).unwrap();
        assert_eq!(
            snap.progress,
            Progress {
                done: 2,
                current: Some(2)
            }
        );
    }

    #[test]
    fn what_is_written_reads_back_with_the_same_field_names() {
        let dir = tempfile::tempdir().unwrap();
        let file: SnapshotFile = serde_json::from_str(OLD_FORMAT).unwrap();
        let written = serde_json::to_value(&file).unwrap();
        let old: Value = serde_json::from_str(OLD_FORMAT).unwrap();
        assert_eq!(written, old);
        crate::store::write_atomic(&dir.path().join("snapshot.json"), &file).unwrap();
        assert_eq!(SnapshotFile::read(dir.path()), Some(file));
    }

    #[test]
    fn missing_and_null_fields_read_as_before() {
        let dir = dir_with(
            r#"{"v":1,"taskId":"t","state":"complete","description":null,"workflow":null}"#,
        );
        let snap = snapshot(dir.path()).unwrap();
        assert_eq!(snap.state, TaskState::Complete);
        assert_eq!(snap.description, "");
        assert_eq!(snap.workflow, None);
        assert_eq!(snap.started_at, 0);
        // Without a known state, or of another version, the snapshot is not read (the log is).
        for unreadable in [
            r#"{"v":1,"taskId":"t","state":"dreaming"}"#,
            r#"{"v":1,"taskId":"t"}"#,
            r#"{"v":2,"taskId":"t","state":"complete"}"#,
        ] {
            assert_eq!(SnapshotFile::read(dir_with(unreadable).path()), None);
        }
    }
}

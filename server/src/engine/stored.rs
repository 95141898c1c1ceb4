//! Tasks as the store has them, for listing and showing tasks that are not running: from a
//! task's snapshot when it is current (it reflects the log's last record), else from its log.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::log::LogEvent;
use super::{Crumb, HistoryItem, TaskSnapshot, TaskState};
use crate::workflow::outline::Progress;
use crate::workflow::{WorkflowSet, WorkflowState};

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
    /// The `seq` of the log's last record when the snapshot was taken: the snapshot is current
    /// while the log ends there (absent before the field existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
    /// Who the task is when it is a subagent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<crate::engine::subagents::SubagentOf>,
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
    pub fn of(
        snap: TaskSnapshot,
        machine_state: &str,
        breadcrumb_text: &str,
        now: i64,
        seq: u64,
    ) -> Self {
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
            seq: Some(seq),
            subagent: snap.subagent.as_deref().cloned(),
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
            subagent: self.subagent.map(std::sync::Arc::new),
            ended: None,
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

/// A stored task as it is shown: from its snapshot when the snapshot is current (it reflects
/// the log's last record), else from its log (the WAL's records put back first), as resume reads
/// it. The snapshot is written after the records it reflects and may lag them: a kill can come
/// before it is written.
#[derive(Debug, Clone)]
pub struct Stored {
    pub task: TaskSnapshot,
    /// The task's last workflow position, when it is shown from its log: where that stands in
    /// the workflow is found with the definitions ([`Stored::place`]).
    position: Option<WorkflowState>,
}

impl Stored {
    /// Whether [`Stored::place`] has something to do.
    pub fn needs_placing(&self) -> bool {
        self.position.is_some()
    }

    /// Finds where a task shown from its log stands in its workflow (its progress and
    /// breadcrumb), as the task itself announced it: a complete task has done every phase.
    pub fn place(&mut self, set: &WorkflowSet) {
        let Some(w) = self.position.take() else {
            return;
        };
        let task = &mut self.task;
        task.progress = if task.state == TaskState::Complete {
            Progress::ALL_DONE
        } else {
            Progress::of(&w, set)
        };
        task.workflow_name = set.get(&w.workflow_key).map(|d| d.name.clone());
        match w.resolve(set) {
            Some(active) => {
                task.breadcrumb_text = active.breadcrumb_text();
                task.breadcrumb = Crumb::trail(&active);
            }
            None => {
                task.breadcrumb_text = task
                    .workflow_name
                    .clone()
                    .unwrap_or_else(|| w.workflow_key.clone());
            }
        }
    }

    /// [`Stored::place`]d.
    pub fn placed(mut self, set: &WorkflowSet) -> TaskSnapshot {
        self.place(set);
        self.task
    }
}

/// A stored task's summary (no history): from its snapshot when that is current, else from its
/// log. Its position in its workflow may still need [`Stored::place`].
pub fn summary(dir: &Path) -> Option<Stored> {
    let snapshot = SnapshotFile::read(dir);
    let current = snapshot
        .as_ref()
        .is_some_and(|f| last_record(dir).is_some_and(|last| f.is_current(&last)));
    let from_snapshot = |file: SnapshotFile| Stored {
        task: file.into_task_snapshot(),
        position: None,
    };
    if current {
        return snapshot.map(from_snapshot);
    }
    let from_log = crate::store::read_log(&dir.join("events.jsonl"))
        .ok()
        .and_then(|contents| fold(&contents.records, false));
    // A log that cannot be read (damaged, or gone) still lists by its snapshot.
    from_log.or_else(|| snapshot.map(from_snapshot))
}

/// A stored task's summary for its state alone (what it shows of its workflow is not placed).
pub fn snapshot(dir: &Path) -> Option<TaskSnapshot> {
    summary(dir).map(|s| s.task)
}

/// The log's last whole record, as far as a snapshot is checked against it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LastRecord {
    seq: u64,
    finished: bool,
}

impl SnapshotFile {
    /// Whether the snapshot reflects the log whose last record is `last`. One written before
    /// snapshots named their record is taken when it says the task finished and the log ends
    /// so (a task's last snapshot is written after its end is logged).
    fn is_current(&self, last: &LastRecord) -> bool {
        match self.seq {
            Some(seq) => seq == last.seq,
            None => self.state.is_finished() && last.finished,
        }
    }
}

/// The last whole record of a task's log, read from its end (a torn last line is skipped).
fn last_record(dir: &Path) -> Option<LastRecord> {
    use std::io::{Read, Seek, SeekFrom};
    #[derive(Deserialize)]
    struct Last {
        seq: u64,
        event: Kind,
    }
    #[derive(Deserialize)]
    struct Kind {
        #[serde(rename = "type")]
        kind: String,
    }
    let mut file = std::fs::File::open(dir.join("events.jsonl")).ok()?;
    let len = file.metadata().ok()?.len();
    // Most last records are short: a small tail first, a longer one when the line is longer.
    let mut want = 4096u64;
    loop {
        let start = len.saturating_sub(want);
        let mut tail = Vec::with_capacity((len - start) as usize);
        file.seek(SeekFrom::Start(start)).ok()?;
        (&mut file).take(len - start).read_to_end(&mut tail).ok()?;
        let end = tail.iter().rposition(|b| *b == b'\n')?;
        let complete = &tail[..end];
        match complete.iter().rposition(|b| *b == b'\n') {
            Some(i) => {
                let last: Last = serde_json::from_slice(&complete[i + 1..]).ok()?;
                return Some(LastRecord {
                    seq: last.seq,
                    finished: last.event.kind == "finished",
                });
            }
            None if start == 0 => {
                let last: Last = serde_json::from_slice(complete).ok()?;
                return Some(LastRecord {
                    seq: last.seq,
                    finished: last.event.kind == "finished",
                });
            }
            None => want = want.saturating_mul(4),
        }
    }
}

/// A stored task in full, its history read from its log (or from `history.json`, the history
/// it kept as it ran, while the log ends the same way). Its position in its workflow may still
/// need [`Stored::place`].
pub fn detail(dir: &Path) -> Option<Stored> {
    let contents = crate::store::read_log(&dir.join("events.jsonl")).ok()?;
    let mut stored = fold(&contents.records, true)?;
    let last = contents.records.last().map(|r| LastRecord {
        seq: r.seq,
        finished: r.event.get("type").and_then(Value::as_str) == Some("finished"),
    });
    let current =
        SnapshotFile::read(dir).filter(|f| last.as_ref().is_some_and(|l| f.is_current(l)));
    if let Some(file) = current {
        stored.task.progress = file.progress();
        stored.task.breadcrumb_text = file.breadcrumb_text;
        stored.position = None;
    }
    // The history the task kept as it ran, when it is of this same end. Recovery's notes come
    // after it in the log (they are added after a crash), so they are added to it.
    if let Some(file) = std::fs::read(dir.join(HistoryFile::NAME))
        .ok()
        .and_then(|b| serde_json::from_slice::<HistoryFile>(&b).ok())
    {
        if file.v == crate::store::FORMAT_VERSION && file.state == stored.task.state {
            let notes = stored.task.history.drain(..).filter(|h| h.event == DAMAGED);
            let mut history = file.history;
            history.extend(notes);
            stored.task.history = history;
        }
    }
    Some(stored)
}

/// The history event of recovery's note about a damaged record.
pub const DAMAGED: &str = "damaged";

/// A stored task read from its log's records: what it shows, as resume would find it (its
/// machine's state, its workflow position, its end: a rewind takes them back, see
/// [`super::log::effective`]), and with `history`, every record as a history item. A record of
/// a kind this rawko does not know is shown by its kind.
fn fold(records: &[crate::store::LogRecord], history: bool) -> Option<Stored> {
    // The records the state is folded from; the history shows them all.
    let live: std::collections::HashSet<u64> = super::log::effective(records)
        .iter()
        .map(|r| r.seq)
        .collect();
    let mut records = records.iter();
    let first = records.next()?;
    let LogEvent::Started {
        task_id,
        description,
        workflow,
        workspace,
        started_at,
        subagent,
        ..
    } = LogEvent::deserialize(&first.event).ok()?
    else {
        return None;
    };
    let mut task = TaskSnapshot {
        task_id,
        description: description.clone(),
        workflow,
        workflow_name: None,
        state: TaskState::Interrupted,
        breadcrumb: Vec::new(),
        breadcrumb_text: description,
        status_text: String::new(),
        started_at,
        updated_at: first.at,
        history: Vec::new(),
        workspace,
        machine_state: "idle".to_owned(),
        agent: None,
        progress: Progress::default(),
        subagent: subagent.map(std::sync::Arc::new),
        ended: None,
    };
    let mut position: Option<WorkflowState> = None;
    let mut finished: Option<TaskState> = None;
    let item = |record: &crate::store::LogRecord| HistoryItem {
        at: record.at,
        event: record
            .event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("event")
            .to_owned(),
        state_before: None,
        state_after: None,
        guard: None,
        detail: None,
    };
    if history {
        task.history.push(item(first));
    }
    for record in records {
        task.updated_at = record.at;
        let mut item = item(record);
        // Taken back by a rewind: it is history, not state.
        let live = live.contains(&record.seq);
        // Read in place: a log's tool results can be large.
        match LogEvent::deserialize(&record.event) {
            Ok(LogEvent::Machine {
                event,
                from,
                to,
                guard,
            }) => {
                if history {
                    item.event = format!("machine:{}", event.name());
                    item.detail = super::log::event_detail(&event);
                    item.state_before = Some(from);
                    item.state_after = Some(to.clone());
                    item.guard = guard;
                }
                if live {
                    task.machine_state = to;
                }
            }
            Ok(LogEvent::Workflow { state }) if live => {
                task.workflow = Some(state.workflow_key.clone());
                position = Some(state);
            }
            Ok(LogEvent::Finished { outcome, summary }) => {
                if live {
                    finished = TaskState::parse(&outcome);
                }
                item.detail = Some(summary);
            }
            Ok(LogEvent::Reopened { reason }) => {
                if live {
                    finished = None;
                }
                item.detail = Some(reason);
            }
            Ok(LogEvent::ToolStarted { name, reported, .. }) => {
                item.detail = Some(if reported {
                    format!("{name} (reported by the agent)")
                } else {
                    name
                })
            }
            Ok(LogEvent::Approval { tool, answer, .. }) => {
                item.detail = Some(format!("{tool}: {answer}"))
            }
            Ok(LogEvent::Damaged(note)) => item.detail = Some(note.note),
            Ok(LogEvent::Rewound {
                phase,
                restored,
                removed,
                ..
            }) => {
                // Back in that phase, and not finished any more.
                finished = None;
                item.detail = Some(format!(
                    "back to the start of {phase} ({} restored, {} removed)",
                    restored.len(),
                    removed.len()
                ));
            }
            Ok(LogEvent::Checkpoint {
                commit,
                phase,
                reason,
                ..
            }) => item.detail = Some(super::log::checkpoint_detail(&commit, &phase, &reason)),
            // Another kind, or one this rawko does not know: shown by its kind.
            Ok(_) | Err(_) => {}
        }
        if history {
            task.history.push(item);
        }
    }
    task.state = finished.unwrap_or(TaskState::Interrupted);
    Some(Stored { task, position })
}

/// How a stored task ended (its outcome's name and summary), read from its log: `None` while it
/// has not ended (or was opened again after its end).
pub fn ended(dir: &Path) -> Option<(String, String)> {
    let contents = crate::store::read_log(&dir.join("events.jsonl")).ok()?;
    let mut ended = None;
    for record in super::log::effective(&contents.records) {
        match record.event.get("type").and_then(Value::as_str) {
            Some("finished") => {
                if let Ok(LogEvent::Finished { outcome, summary }) =
                    LogEvent::deserialize(&record.event)
                {
                    ended = Some((outcome, summary));
                }
            }
            Some("reopened") => ended = None,
            _ => {}
        }
    }
    ended
}

#[cfg(test)]
mod tests {
    use serde_json::json;

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
                subagent: Default::default(),
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
                seq: None,
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

    /// The starter workflows `rawko init` writes: `feature` (Plan, Implement, Test, then the
    /// `review` subworkflow's Static Analysis and Peer Review).
    fn starter() -> WorkflowSet {
        let root = crate::workflow::definition::WorkflowRoot {
            kind: crate::workflow::definition::RootKind::Project,
            path: Path::new(env!("CARGO_MANIFEST_DIR")).join("starter/workflows"),
        };
        crate::workflow::load(&[root]).workflows
    }

    #[test]
    fn a_snapshot_that_lags_the_log_gives_way_to_the_log_and_a_current_one_is_used() {
        let set = starter();
        let state = tempfile::tempdir().unwrap();
        let id = "task-1763900000000-1";
        let mut files = crate::store::TaskFiles::create(state.path(), id).unwrap();
        let log = |files: &mut crate::store::TaskFiles, event: LogEvent| {
            files
                .append(1763900000000, &serde_json::to_value(event).unwrap())
                .unwrap();
        };
        log(
            &mut files,
            LogEvent::Started {
                pi_profile: Default::default(),
                subagent: Default::default(),
                task_id: id.to_owned(),
                description: "add a flag".to_owned(),
                workflow: Some("feature".to_owned()),
                workspace: PathBuf::from("/home/u/project"),
                provider: crate::provider::ProviderSpec {
                    name: "scripted".to_owned(),
                    ..Default::default()
                },
                agent: None,
                arbiter: None,
                started_at: 1763900000000,
                definitions: None,
            },
        );
        let mut w = WorkflowState::start(&set, "feature", "add a flag", id, 1763900000000).unwrap();
        log(&mut files, LogEvent::Workflow { state: w.clone() });
        // The snapshot of the task in Plan, taken after record 2.
        let plan = |seq: u64| {
            json!({"v": 1, "taskId": id, "description": "add a flag", "workflow": "feature",
                "workspace": "/home/u/project", "state": "running", "machineState": "executing",
                "breadcrumbText": "Feature > 📋 Plan [1/4]", "phaseIndex": 0, "seq": seq})
        };
        files.write_snapshot(&plan(2)).unwrap();
        for _ in 0..3 {
            w = w.advance(&set).unwrap().state;
            log(&mut files, LogEvent::Workflow { state: w.clone() });
        }
        files.flush_blocking();
        let dir = files.dir().to_owned();
        let static_analysis = "Feature > Review [4/4] > 🔍 Static Analysis [1/2]";

        // Killed before the later snapshots were written: the log says where the task stood.
        let listed = summary(&dir).unwrap();
        assert!(listed.needs_placing());
        let listed = listed.placed(&set);
        assert_eq!(listed.state, TaskState::Interrupted);
        assert_eq!(listed.breadcrumb_text, static_analysis);
        assert_eq!(
            listed.progress,
            Progress {
                done: 3,
                current: Some(3)
            }
        );
        assert_eq!(listed.breadcrumb.len(), 2);
        let shown = detail(&dir).unwrap().placed(&set);
        assert_eq!(shown.breadcrumb_text, static_analysis);
        assert_eq!(shown.progress, listed.progress);
        assert_eq!(shown.history.len(), 5);

        // A snapshot of the log's last record is current: it is used as it is.
        files.write_snapshot(&plan(5)).unwrap();
        files.flush_blocking();
        let listed = summary(&dir).unwrap();
        assert!(!listed.needs_placing());
        assert_eq!(listed.task.breadcrumb_text, "Feature > 📋 Plan [1/4]");
        assert_eq!(detail(&dir).unwrap().task.progress.current, Some(0));
    }

    #[test]
    fn a_finished_task_rewound_shows_the_phase_it_is_back_in_and_is_not_finished() {
        let set = starter();
        let state = tempfile::tempdir().unwrap();
        let id = "task-1763900000000-2";
        let mut files = crate::store::TaskFiles::create(state.path(), id).unwrap();
        let mut log = |event: LogEvent| {
            files
                .append(1763900000000, &serde_json::to_value(event).unwrap())
                .unwrap()
        };
        log(LogEvent::Started {
            pi_profile: Default::default(),
            subagent: Default::default(),
            task_id: id.to_owned(),
            description: "add a flag".to_owned(),
            workflow: Some("feature".to_owned()),
            workspace: PathBuf::from("/home/u/project"),
            provider: crate::provider::ProviderSpec {
                name: "scripted".to_owned(),
                ..Default::default()
            },
            agent: None,
            arbiter: None,
            started_at: 1763900000000,
            definitions: None,
        });
        let mut w = WorkflowState::start(&set, "feature", "add a flag", id, 1763900000000).unwrap();
        log(LogEvent::Workflow { state: w.clone() });
        w = w.advance(&set).unwrap().state;
        // Record 3: the task entered Implement.
        let implement = log(LogEvent::Workflow { state: w.clone() });
        w = w.advance(&set).unwrap().state;
        log(LogEvent::Workflow { state: w.clone() });
        log(LogEvent::Finished {
            outcome: "complete".into(),
            summary: "done".into(),
        });
        files.flush_blocking();
        let dir = files.dir().to_owned();
        // Its last snapshot and history.json, as a finished task leaves them.
        let finished = json!({"v": 1, "taskId": id, "description": "add a flag",
            "workflow": "feature", "workspace": "/home/u/project", "state": "complete",
            "machineState": "complete", "breadcrumbText": "Feature", "seq": 5});
        crate::store::write_atomic(&dir.join("snapshot.json"), &finished).unwrap();
        let history = json!({"v": 1, "state": "complete", "history": []});
        crate::store::write_atomic(&dir.join(HistoryFile::NAME), &history).unwrap();
        assert_eq!(snapshot(&dir).unwrap().state, TaskState::Complete);

        let mut files = crate::store::TaskFiles::open(&dir).unwrap().0;
        let mut log = |event: LogEvent| {
            files
                .append(1763900000000, &serde_json::to_value(event).unwrap())
                .unwrap()
        };
        log(LogEvent::Rewound {
            to_phase_index: 1,
            phase: "Implement".into(),
            commit: "c".repeat(40),
            at_seq: implement,
            restored: vec!["a.txt".into()],
            removed: vec!["b.txt".into()],
        });
        log(LogEvent::UserMessage {
            text: "rawko rewound this task".into(),
            source: "user".into(),
        });
        files.flush_blocking();
        let listed = summary(&dir).unwrap().placed(&set);
        assert_eq!(listed.state, TaskState::Interrupted);
        assert_eq!(listed.breadcrumb_text, "Feature > 🛠️ Implement [2/4]");
        let shown = detail(&dir).unwrap().placed(&set);
        assert_eq!(shown.state, TaskState::Interrupted);
        assert_eq!(shown.breadcrumb_text, "Feature > 🛠️ Implement [2/4]");
        // The whole history is still shown, the rewind in it.
        assert_eq!(shown.history.len(), 7);
        assert_eq!(
            shown.history[5].detail.as_deref(),
            Some("back to the start of Implement (1 restored, 1 removed)")
        );
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

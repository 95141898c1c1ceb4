//! Rewinding a task to the start of a phase (`rawko rewind`, `rawko/rewindTask`, `/rewind`):
//! the workspace taken back to the checkpoint of the phase's entry ([`crate::engine::rewind`])
//! and the task moved back there (a `rewound` record, see [`crate::engine::log::effective`]),
//! so that any face can resume it; and the housekeeping of finished tasks (`rawko tasks
//! prune`). docs/checkpoints.md says what each does and does not touch.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::{TaskError, Tasks};
use crate::checkpoint::{Checkpoints, Reason};
use crate::clip::clip;
use crate::engine::log::{effective, LogEvent};
use crate::engine::rewind::{self, Change, Plan};
use crate::engine::{stored, TaskState};
use crate::store::{LogRecord, TaskFiles};

/// How long a stopped task may take to end before the rewind gives up.
const STOP_WAIT: Duration = Duration::from_secs(10);

/// What a rewind did, or would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewound {
    /// Whether the workspace and the task were rewound (not on a dry run, nor when it stopped
    /// at a conflict).
    pub rewound: bool,
    /// The phase's name.
    pub phase: String,
    /// The concrete phase (0-based).
    pub index: u32,
    /// What changes (changed, on a rewind), sorted by path.
    pub changes: Vec<Change>,
    /// The paths changed after the task's last checkpoint, not by the task, that the rewind
    /// would restore or remove.
    pub conflicts: Vec<String>,
    /// One line for the user.
    pub text: String,
}

/// What the log says about the checkpoint a rewind goes back to.
struct Target {
    commit: String,
    seq: u64,
    phase: String,
    workspace: PathBuf,
    /// The phase of the task's newest checkpoint (where it stands now), for the checkpoint of the
    /// workspace taken before the rewind.
    current: Option<(u32, String)>,
    external: bool,
}

/// The last checkpoint of a phase's entry to concrete phase `index` in the task's effective
/// history (after earlier rewinds), and what else the rewind needs from the log.
fn find_target(records: &[LogRecord], index: u32) -> Result<Option<Target>, String> {
    let Some(first) = records.first() else {
        return Err("the log is empty".to_owned());
    };
    let Ok(LogEvent::Started {
        workspace,
        provider,
        ..
    }) = serde_json::from_value::<LogEvent>(first.event.clone())
    else {
        return Err("record 1 is not a task start".to_owned());
    };
    let mut found = None;
    let mut current = None;
    for record in effective(records) {
        if record.event.get("type").and_then(|t| t.as_str()) != Some("checkpoint") {
            continue;
        }
        let Ok(LogEvent::Checkpoint {
            commit,
            phase_index,
            phase,
            reason,
            ..
        }) = serde_json::from_value::<LogEvent>(record.event.clone())
        else {
            continue;
        };
        current = phase_index.map(|i| (i, phase.clone()));
        if reason == Reason::PhaseEntered.as_str() && phase_index == Some(index) {
            found = Some((commit, record.seq, phase));
        }
    }
    Ok(found.map(|(commit, seq, phase)| Target {
        commit,
        seq,
        phase,
        workspace,
        current,
        external: provider.name == "external",
    }))
}

/// The note the agent reads when the task goes on.
fn note_for_agent(phase: &str, plan: &Plan) -> String {
    let list = |paths: Vec<String>| {
        if paths.is_empty() {
            "none".to_owned()
        } else {
            paths.join(", ")
        }
    };
    format!(
        "rawko rewound this task to the start of the {phase} phase; these files were restored: {}; removed: {}; continue from this phase",
        list(plan.restored()),
        list(plan.removed())
    )
}

/// `N files` / `1 file`.
fn files(n: usize) -> String {
    format!("{n} file{}", if n == 1 { "" } else { "s" })
}

impl Tasks {
    /// Rewinds task `id` to the start of its concrete phase `index` (0-based): with `dry_run`
    /// only says what would change; stops, changing nothing, when a file the rewind would
    /// restore or remove was changed after the task's last checkpoint by someone else, unless
    /// `force`. A task running in this process is refused ("interrupt it first"); one that is
    /// interrupted or waits is stopped first; a finished one may be rewound.
    pub async fn rewind(
        &self,
        id: &str,
        index: u32,
        dry_run: bool,
        force: bool,
    ) -> Result<Rewound, TaskError> {
        let Some(store) = self.store.clone() else {
            return Err(TaskError::Conflict(
                "tasks are not persisted here (no state directory), so none can be rewound"
                    .to_owned(),
            ));
        };
        let dir = TaskFiles::dir_of(&store, id);
        if !dir.join("events.jsonl").is_file() {
            return Err(TaskError::unknown_task(id));
        }
        let subagent = match self.handle(id) {
            Some(h) => h.snapshot().subagent,
            None => crate::engine::stored::snapshot(&dir).and_then(|s| s.subagent),
        };
        if let Some(of) = subagent {
            return Err(TaskError::Conflict(format!(
                "task \"{}\" is a subagent of task \"{}\": rewind its parent, whose phases it worked in",
                clip(id),
                clip(&of.parent)
            )));
        }
        let live = self.handle(id).filter(|h| !h.is_ended());
        if let Some(handle) = &live {
            if handle.state() == TaskState::Running {
                return Err(TaskError::Conflict(format!(
                    "task \"{}\" is running (a turn or a tool call is in flight); interrupt it first",
                    clip(id)
                )));
            }
        }
        let read = dir.clone();
        let contents = tokio::task::spawn_blocking(move || {
            crate::store::journal().flush_blocking();
            crate::store::read_log(&read.join("events.jsonl"))
        })
        .await
        .map_err(|e| TaskError::Internal(e.to_string()))?
        .map_err(|e| TaskError::Internal(format!("cannot read task \"{}\": {e}", clip(id))))?;
        let target = find_target(&contents.records, index)
            .map_err(|e| TaskError::Internal(format!("cannot read task \"{}\": {e}", clip(id))))?
            .ok_or_else(|| {
                TaskError::Conflict(format!(
                    "task \"{}\" has no checkpoint of phase {} to go back to: it has not entered it (since its last rewind), or it ran without checkpoints",
                    clip(id),
                    index + 1
                ))
            })?;
        if target.external {
            return Err(TaskError::Conflict(format!(
                "task \"{}\" is an external agent's session; rawko cannot take it back",
                clip(id)
            )));
        }
        let unreadable = |e: String| {
            TaskError::Conflict(format!(
                "cannot read the checkpoints of task \"{}\": {e}",
                clip(id)
            ))
        };
        let mut checkpoints = Checkpoints::for_task(&target.workspace, &dir);
        let latest = checkpoints.latest().await.map_err(unreadable)?;
        let scratch = dir.join("rewind.index");
        let (repo, _) = checkpoints.repo().await.map_err(unreadable)?;
        let repo = repo.clone();
        let now = rewind::tree_now(&repo, &checkpoints.index_file(), &scratch)
            .await
            .map_err(unreadable)?;
        let planned = rewind::plan(&repo, &target.commit, latest.as_deref(), &now)
            .await
            .map_err(unreadable)?;
        let phase = target.phase.clone();
        let stopped = !planned.conflicts.is_empty() && !force;
        if dry_run || stopped {
            let text = if stopped {
                format!(
                    "{}: changed after the task's last checkpoint, not by the task: {} (--force overwrites them)",
                    if dry_run { "a rewind would stop" } else { "not rewound" },
                    planned.conflicts.join(", ")
                )
            } else {
                format!(
                    "would restore {} and remove {} to rewind to the start of {phase} (dry run: nothing changed)",
                    files(planned.restored().len()),
                    files(planned.removed().len())
                )
            };
            return Ok(Rewound {
                rewound: false,
                phase,
                index,
                changes: planned.changes,
                conflicts: planned.conflicts,
                text,
            });
        }
        // A live task that waits is stopped, so that nothing of it runs on from where it was.
        if let Some(handle) = live {
            let _ = self.cancel(id);
            let until = tokio::time::Instant::now() + STOP_WAIT;
            while !handle.is_ended() {
                if tokio::time::Instant::now() > until {
                    return Err(TaskError::Internal(format!(
                        "task \"{}\" did not stop within {} s",
                        clip(id),
                        STOP_WAIT.as_secs()
                    )));
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            // Forgotten now, so that a resume finds it in the store rather than ended here.
            self.running.remove_if(id, |_, h| h.is_ended());
        }
        // The workspace as it is now, kept so that the rewind can be undone by hand.
        let current_index = target.current.as_ref().map(|(i, _)| *i);
        let before = checkpoints
            .take(Reason::BeforeRewind, current_index)
            .await
            .map_err(unreadable)?;
        // What is done is what the recorded tree says (the files may have changed since the
        // plan; the conflicts were checked on the plan).
        let plan = rewind::plan(&repo, &target.commit, None, &before.commit)
            .await
            .map_err(unreadable)?;
        let skipped = rewind::apply(&repo, &target.workspace, &target.commit, &plan, &scratch)
            .await
            .map_err(|e| {
                TaskError::Internal(format!(
                    "the rewind of task \"{}\" stopped half-way ({e}); the workspace before it is checkpoint {}",
                    clip(id),
                    before.commit
                ))
            })?;
        let entered = checkpoints
            .take(Reason::PhaseEntered, Some(index))
            .await
            .map_err(unreadable)?;
        let (current_index, current_phase) = target.current.clone().unzip();
        let storage = before.storage.as_str().to_owned();
        let records = [
            LogEvent::Checkpoint {
                commit: before.commit.clone(),
                phase_index: current_index,
                phase: current_phase.unwrap_or_default(),
                reason: Reason::BeforeRewind.as_str().to_owned(),
                tool_call_id: None,
                repository: storage.clone(),
            },
            LogEvent::Rewound {
                to_phase_index: index,
                phase: phase.clone(),
                commit: target.commit.clone(),
                at_seq: target.seq,
                restored: plan.restored(),
                removed: plan.removed(),
            },
            LogEvent::UserMessage {
                text: note_for_agent(&phase, &plan),
                source: "user".to_owned(),
            },
            LogEvent::Checkpoint {
                commit: entered.commit,
                phase_index: Some(index),
                phase: phase.clone(),
                reason: Reason::PhaseEntered.as_str().to_owned(),
                tool_call_id: None,
                repository: storage,
            },
        ];
        append(&dir, &records).await.map_err(|e| {
            TaskError::Internal(format!(
                "the workspace was rewound but task \"{}\"'s log could not be written: {e}",
                clip(id)
            ))
        })?;
        let mut text = format!(
            "rewound task {} to the start of {phase}: restored {}, removed {}",
            clip(id),
            files(plan.restored().len()),
            files(plan.removed().len())
        );
        if !skipped.is_empty() {
            text.push_str(&format!(
                "; left alone (a folder on the way is now a link): {}",
                skipped.join(", ")
            ));
        }
        Ok(Rewound {
            rewound: true,
            phase,
            index,
            changes: plan.changes,
            conflicts: planned.conflicts,
            text,
        })
    }

    /// Removes the finished tasks of this workspace (of every workspace with `all`) from the
    /// store, or those of them last updated more than `older_than` ago, each with its
    /// checkpoint refs in its workspace's repository. A task that has not finished is never
    /// removed. Returns the ids removed, oldest first, and the problems met (a task whose refs
    /// could not be removed is kept).
    pub async fn prune(
        &self,
        older_than: Option<Duration>,
        all: bool,
    ) -> Result<(Vec<String>, Vec<String>), TaskError> {
        let Some(store) = self.store.clone() else {
            return Err(TaskError::Conflict(
                "tasks are not persisted here (no state directory), so there is nothing to prune"
                    .to_owned(),
            ));
        };
        let now = crate::clock::now_millis();
        let cutoff = older_than.map(|d| now - i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let running: Vec<String> = self.running.iter().map(|e| e.key().clone()).collect();
        let workspace = (!all).then(|| self.workspace());
        let found = tokio::task::spawn_blocking(move || {
            crate::store::recover::recover_before_reading(&store);
            let mut found: Vec<(i64, String, PathBuf, PathBuf)> = crate::store::task_dirs(&store)
                .into_iter()
                .filter_map(|dir| {
                    let task = stored::summary(&dir)?.task;
                    let old = cutoff.is_none_or(|c| task.updated_at < c);
                    let here = workspace.as_ref().is_none_or(|w| *w == task.workspace);
                    let running = running.contains(&task.task_id);
                    (task.state.is_finished() && old && here && !running).then_some((
                        task.updated_at,
                        task.task_id,
                        dir,
                        task.workspace,
                    ))
                })
                .collect();
            found.sort();
            found
        })
        .await
        .map_err(|e| TaskError::Internal(e.to_string()))?;
        let (mut removed, mut problems) = (Vec::new(), Vec::new());
        for (_, id, dir, workspace) in found {
            if let Err(e) = remove_refs(&workspace, &dir).await {
                problems.push(format!("task {id} kept: {e}"));
                continue;
            }
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => removed.push(id),
                Err(e) => problems.push(format!("task {id}: cannot remove {}: {e}", dir.display())),
            }
        }
        Ok((removed, problems))
    }
}

/// Appends `events` to the task's log and waits until they are durable.
async fn append(dir: &Path, events: &[LogEvent]) -> Result<(), String> {
    let dir = dir.to_owned();
    let values: Vec<serde_json::Value> = events
        .iter()
        .map(|e| serde_json::to_value(e).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    tokio::task::spawn_blocking(move || {
        let (mut files, _) = TaskFiles::open(&dir).map_err(|e| e.to_string())?;
        let at = crate::clock::now_millis();
        for value in &values {
            files.append(at, value).map_err(|e| e.to_string())?;
        }
        files.flush_blocking();
        match files.error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    })
    .await
    .map_err(|e| e.to_string())?
}

/// Removes the task's refs (`refs/rawko/tasks/<id>/*`) from its workspace's repository, when
/// its checkpoints are kept there (a private repository goes with the task's folder). A
/// workspace that is gone, or no repository now, has none to remove.
async fn remove_refs(workspace: &Path, dir: &Path) -> Result<(), String> {
    let checkpoints = Checkpoints::for_task(workspace, dir);
    if checkpoints.private_dir().join("HEAD").is_file() || !workspace.is_dir() {
        return Ok(());
    }
    let git = crate::git::Git::new(workspace);
    if !git.has_repository() {
        return Ok(());
    }
    let repo = git.open().await?;
    let prefix = format!("{}/", checkpoints.ref_prefix());
    let listed = repo
        .run(
            crate::git::Hooks::Off,
            &["for-each-ref", "--format=%(refname)", &prefix],
        )
        .await?;
    if !listed.ok() {
        return Err(format!(
            "git for-each-ref failed: {}",
            crate::git::first_line(&listed.stderr)
        ));
    }
    for name in listed.stdout.lines().filter(|l| l.starts_with(&prefix)) {
        let out = repo
            .run(crate::git::Hooks::Off, &["update-ref", "-d", name])
            .await?;
        if !out.ok() {
            return Err(format!(
                "cannot remove {name}: {}",
                crate::git::first_line(&out.stderr)
            ));
        }
    }
    Ok(())
}

//! Sessions: each `rawko serve` or `rawko run` process is one, recorded as
//! `$XDG_STATE_HOME/rawko/sessions/session-<ms>-<random>.json` with AutoAgent's fields, and a
//! `current` symlink to the newest. The file is rewritten (atomically) after each task.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::clock::now_millis;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    Active,
    Completed,
    Interrupted,
    Failed,
}

impl SessionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Completed => "completed",
            Self::Interrupted => "interrupted",
            Self::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionTasks {
    pub planned: u32,
    pub completed: u32,
    pub failed: u32,
    #[serde(default)]
    pub cancelled: u32,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionMetadata {
    pub git_branch: Option<String>,
    pub git_commit: Option<String>,
    /// Milliseconds from start to end (to now while active).
    pub total_duration: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub id: String,
    pub start_time: i64,
    pub end_time: Option<i64>,
    pub workspace: String,
    pub command: String,
    pub args: Vec<String>,
    pub tasks: SessionTasks,
    pub current_task: Option<String>,
    pub status: SessionStatus,
    pub provider: Option<String>,
    pub metadata: SessionMetadata,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A session being recorded.
#[derive(Debug)]
pub struct SessionRecorder {
    path: PathBuf,
    session: Mutex<Session>,
}

fn random_hex() -> String {
    let mut bytes = [0u8; 8];
    let ok = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .is_ok();
    if !ok {
        let seed = (now_millis() as u64) ^ (u64::from(std::process::id()) << 32);
        bytes = seed.to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn sessions_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("sessions")
}

impl SessionRecorder {
    /// Starts a session and writes its file.
    pub fn start(
        state_dir: &Path,
        workspace: &Path,
        command: &str,
        args: Vec<String>,
        provider: Option<String>,
    ) -> io::Result<Self> {
        let dir = sessions_dir(state_dir);
        std::fs::create_dir_all(&dir)?;
        let start = now_millis();
        let id = format!("{start}-{}", random_hex());
        let (git_branch, git_commit) = super::git::describe_head(&crate::git::Git::new(workspace));
        let session = Session {
            id: id.clone(),
            start_time: start,
            end_time: None,
            workspace: workspace.display().to_string(),
            command: command.to_owned(),
            args,
            tasks: SessionTasks::default(),
            current_task: None,
            status: SessionStatus::Active,
            provider,
            metadata: SessionMetadata {
                git_branch,
                git_commit,
                total_duration: Some(0),
            },
            error: None,
        };
        let path = dir.join(format!("session-{id}.json"));
        let recorder = Self {
            path,
            session: Mutex::new(session),
        };
        // The first version is on disk before anything points to it.
        let text = serde_json::to_string_pretty(
            &recorder
                .session
                .lock()
                .map_err(|_| io::Error::other("session lock poisoned"))?
                .clone(),
        )
        .map_err(io::Error::other)?;
        std::fs::write(&recorder.path, text + "\n")?;
        let current = dir.join("current");
        let tmp = dir.join(format!(".current-{id}"));
        let _ = std::fs::remove_file(&tmp);
        std::os::unix::fs::symlink(format!("session-{id}.json"), &tmp)?;
        std::fs::rename(&tmp, &current)?;
        Ok(recorder)
    }

    pub fn id(&self) -> String {
        self.session
            .lock()
            .map(|s| s.id.clone())
            .unwrap_or_default()
    }

    pub fn snapshot(&self) -> Option<Session> {
        self.session.lock().ok().map(|s| s.clone())
    }

    fn save(&self) -> io::Result<()> {
        let session = self
            .session
            .lock()
            .map_err(|_| io::Error::other("session lock poisoned"))?
            .clone();
        let text = serde_json::to_string_pretty(&session).map_err(io::Error::other)?;
        // Through the log writer, off the server's thread: a thousand tasks starting at once
        // write the session file once per batch, not a thousand times.
        crate::store::journal().snapshot(self.path.clone(), (text + "\n").into_bytes());
        Ok(())
    }

    fn update(&self, f: impl FnOnce(&mut Session)) {
        if let Ok(mut s) = self.session.lock() {
            f(&mut s);
            let end = s.end_time.unwrap_or_else(now_millis);
            s.metadata.total_duration = Some(end - s.start_time);
        }
        if let Err(e) = self.save() {
            tracing::warn!("cannot write the session file {}: {e}", self.path.display());
        }
    }

    pub fn task_started(&self, task_id: &str) {
        self.update(|s| {
            s.tasks.planned += 1;
            s.current_task = Some(task_id.to_owned());
        });
    }

    /// `outcome`: complete, failed or cancelled.
    pub fn task_finished(&self, task_id: &str, outcome: &str) {
        self.update(|s| {
            match outcome {
                "complete" => s.tasks.completed += 1,
                "failed" => s.tasks.failed += 1,
                _ => s.tasks.cancelled += 1,
            }
            if s.current_task.as_deref() == Some(task_id) {
                s.current_task = None;
            }
        });
    }

    pub fn set_provider(&self, provider: &str) {
        self.update(|s| s.provider = Some(provider.to_owned()));
    }

    /// Ends the session. An ended session stays as it is.
    pub fn end(&self, status: SessionStatus, error: Option<String>) {
        let already = self
            .session
            .lock()
            .map(|s| s.status != SessionStatus::Active)
            .unwrap_or(true);
        if already {
            return;
        }
        self.update(|s| {
            s.status = status;
            s.end_time = Some(now_millis());
            s.error = error;
            s.current_task = None;
        });
    }

    /// How the session ends when nothing went wrong: failed if a task failed.
    pub fn natural_end(&self) -> SessionStatus {
        match self.session.lock() {
            Ok(s) if s.tasks.failed > 0 => SessionStatus::Failed,
            _ => SessionStatus::Completed,
        }
    }
}

/// Every session recorded, newest first. Files that cannot be read are skipped.
pub fn list(state_dir: &Path) -> Vec<Session> {
    crate::store::journal::flush_if_started();
    let Ok(entries) = std::fs::read_dir(sessions_dir(state_dir)) else {
        return Vec::new();
    };
    let mut all: Vec<Session> = entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("session-") && name.ends_with(".json")
        })
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|t| serde_json::from_str(&t).ok())
        .collect();
    all.sort_by(|a: &Session, b: &Session| b.start_time.cmp(&a.start_time).then(b.id.cmp(&a.id)));
    all
}

/// One session by id (or a unique prefix of it), or `current`.
pub fn find(state_dir: &Path, id: &str) -> Result<Session, String> {
    crate::store::journal::flush_if_started();
    if id == "current" {
        let link = sessions_dir(state_dir).join("current");
        let text = std::fs::read_to_string(&link)
            .map_err(|_| "there is no current session yet".to_owned())?;
        return serde_json::from_str(&text)
            .map_err(|e| format!("the current session cannot be read: {e}"));
    }
    let id = id.strip_prefix("session-").unwrap_or(id);
    let id = id.strip_suffix(".json").unwrap_or(id);
    let matches: Vec<Session> = list(state_dir)
        .into_iter()
        .filter(|s| s.id.starts_with(id))
        .collect();
    match matches.len() {
        0 => Err(format!(
            "no session {id}; `rawko sessions list` shows the sessions"
        )),
        1 => Ok(matches.into_iter().next().expect("one")),
        n => Err(format!("{n} sessions start with {id}; give more of the id")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_records_its_tasks_and_end() {
        let dir = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let r =
            SessionRecorder::start(dir.path(), ws.path(), "serve", vec!["--stdio".into()], None)
                .unwrap();
        r.task_started("task-1");
        r.task_finished("task-1", "complete");
        r.task_started("task-2");
        r.task_finished("task-2", "failed");
        assert_eq!(r.natural_end(), SessionStatus::Failed);
        r.end(SessionStatus::Interrupted, None);
        r.end(SessionStatus::Completed, None);
        let s = find(dir.path(), "current").unwrap();
        assert_eq!(s.status, SessionStatus::Interrupted);
        assert_eq!(s.tasks.planned, 2);
        assert_eq!(s.tasks.completed, 1);
        assert_eq!(s.tasks.failed, 1);
        assert!(s.end_time.is_some());
        assert_eq!(find(dir.path(), &s.id[..10]).unwrap().id, s.id);
        assert_eq!(list(dir.path()).len(), 1);
        let text = std::fs::read_to_string(
            sessions_dir(dir.path()).join(format!("session-{}.json", s.id)),
        )
        .unwrap();
        for key in [
            "startTime",
            "endTime",
            "currentTask",
            "gitBranch",
            "totalDuration",
        ] {
            assert!(text.contains(key), "{key} in {text}");
        }
    }
}

//! What a team keeps in NATS besides the queue and the logs, as JSON: a queued task
//! ([`JobSpec`], the work queue's payload), the team's view of each task ([`TaskEntry`], KV
//! bucket [`TASKS_BUCKET`]), a blocked call waiting for anyone's answer ([`Ask`],
//! [`ASKS_BUCKET`]), its answer ([`Answer`], [`ANSWERS_BUCKET`], created once: the first answer
//! wins), the definitions tasks pinned ([`DEFINITIONS_BUCKET`], by digest) and the workers alive
//! ([`WorkerBeat`], [`WORKERS_BUCKET`], expiring).

use std::time::Duration;

use async_nats::jetstream::kv;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{Error, Team};

pub const TASKS_BUCKET: &str = "rawko-tasks";
pub const ASKS_BUCKET: &str = "rawko-asks";
pub const ANSWERS_BUCKET: &str = "rawko-approvals";
pub const DEFINITIONS_BUCKET: &str = "rawko-definitions";
pub const WORKERS_BUCKET: &str = "rawko-workers";

/// How long a worker counts as alive after its last beat.
pub const WORKER_TTL: Duration = Duration::from_secs(15);

/// A queued task: everything a worker needs to run it (a script's contents, not its path).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct JobSpec {
    pub task_id: String,
    /// The shared repository (its URL as the submitting clone's `origin` names it).
    pub repo: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The scripted provider's file, its contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<String>,
    /// The script file's name (its extension says its format).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script_name: Option<String>,
    pub submitted_at: i64,
}

/// The team's view of a task (`rawko tasks list --nats`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct TaskEntry {
    pub task_id: String,
    /// `queued`, then the task's states (`running`, `waiting_approval`, …), `finished` at the end.
    pub state: String,
    pub breadcrumb: String,
    /// The worker running it (`None` while queued).
    pub worker: Option<String>,
    /// `complete`, `failed` or `cancelled` once it ended.
    pub outcome: Option<String>,
    pub repo: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
    pub submitted_at: i64,
    pub updated_at: i64,
    /// How many times a worker took it (more than one: a worker was lost or gave it back).
    #[serde(default)]
    pub attempts: u32,
    /// The breadcrumb's levels, as `rawko/status` sends them.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub crumbs: Value,
}

/// A blocked call of a team task, waiting for an answer from any face.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Ask {
    pub task_id: String,
    pub tool_call_id: String,
    pub tool: String,
    pub input: Value,
    pub phase: String,
    pub reason: String,
    pub detail: String,
    pub summary: String,
    pub expires_at: i64,
    pub timeout_ms: u64,
    pub worker: String,
    pub asked_at: i64,
}

/// The answer to an [`Ask`]: one of `rawko/approveToolCall`'s outcomes (`allow_once`, …).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    pub outcome: String,
    /// Who answered (a face's name).
    pub by: String,
    pub at: i64,
}

/// A worker's beat.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WorkerBeat {
    pub name: String,
    pub repo: String,
    pub tasks: Vec<String>,
    pub max_tasks: usize,
    pub at: i64,
}

/// The key of a call's ask and answer: the task id, then a digest of the call's id (which may
/// hold characters a key may not).
pub fn ask_key(task_id: &str, tool_call_id: &str) -> String {
    let digest = Sha256::digest(tool_call_id.as_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{task_id}.{hex}")
}

/// The task id of an ask's key.
pub fn task_of_key(key: &str) -> &str {
    key.rsplit_once('.').map_or(key, |(task, _)| task)
}

impl Team {
    /// A KV bucket of the team, created on first use (replicated like the streams).
    pub async fn bucket(&self, name: &str) -> Result<kv::Store, Error> {
        super::retrying(|| self.bucket_once(name)).await
    }

    async fn bucket_once(&self, name: &str) -> Result<kv::Store, Error> {
        let js = self.jetstream();
        if let Ok(store) = js.get_key_value(name).await {
            return Ok(store);
        }
        let max_age = if name == WORKERS_BUCKET {
            WORKER_TTL
        } else {
            Duration::ZERO
        };
        let created = js
            .create_key_value(kv::Config {
                bucket: name.to_owned(),
                history: 1,
                max_age,
                num_replicas: self.default_replicas(),
                ..Default::default()
            })
            .await;
        match created {
            Ok(store) => Ok(store),
            // Another process created it first.
            Err(e) => js
                .get_key_value(name)
                .await
                .map_err(|_| Error::new(format!("opening the KV bucket {name}"), e)),
        }
    }
}

/// Reads a bucket's value as `T` (`None` when missing or unreadable).
pub async fn get_json<T: serde::de::DeserializeOwned>(store: &kv::Store, key: &str) -> Option<T> {
    let value = store.get(key).await.ok().flatten()?;
    serde_json::from_slice(&value).ok()
}

/// Writes `value` as JSON under `key`, retried through a node's loss (up to a minute).
pub async fn put_json<T: Serialize>(store: &kv::Store, key: &str, value: &T) -> Result<(), Error> {
    let body =
        bytes::Bytes::from(serde_json::to_vec(value).map_err(|e| Error::new("encoding", e))?);
    let mut last = None;
    for attempt in 0..300u32 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        match store.put(key, body.clone()).await {
            Ok(_) => return Ok(()),
            Err(e) => last = Some(e),
        }
    }
    Err(Error::new(
        format!("writing {key}"),
        last.map_or_else(|| "failed".to_owned(), |e| e.to_string()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ask_keys_are_valid_and_name_their_task() {
        let key = ask_key("task-1-abc", "toolu_01/../x y");
        assert!(key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')));
        assert_eq!(task_of_key(&key), "task-1-abc");
        assert_ne!(key, ask_key("task-1-abc", "toolu_02"));
    }
}

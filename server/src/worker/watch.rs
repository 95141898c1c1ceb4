//! The team's tasks in a face beside its own (`rawko serve --nats`, `rawko web --nats`): each
//! team task that runs shows as a stream of events of its id through the face's [`Sink`] (its
//! status as the workers record it in the tasks bucket, its end), and each blocked call waiting
//! in the asks bucket is asked there as an approval. The face's answer is created in the answers
//! bucket, which keeps the first answer only; when any face's answer lands (the worker then
//! removes the ask), this face's question is withdrawn.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::kv::{self, Operation};
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::oneshot;

use crate::engine::tasks::Sink;
use crate::engine::{
    now_millis, queue, ApprovalAnswer, ApprovalRequest, Crumb, EventSender, Outcome, TaskEvent,
    TaskState,
};
use crate::team::records::{
    get_json, Answer, Ask, TaskEntry, ANSWERS_BUCKET, ASKS_BUCKET, TASKS_BUCKET,
};
use crate::team::Team;

/// The outcome name of an answer, `None` when it is no answer for the team: nobody was there
/// to ask, or this face's question was dismissed or failed (another face may still answer; the
/// task's own timeout denies the call if none does).
pub fn outcome_name(answer: ApprovalAnswer) -> Option<&'static str> {
    match answer {
        ApprovalAnswer::AllowOnce => Some("allow_once"),
        ApprovalAnswer::AllowAlways => Some("allow_always"),
        ApprovalAnswer::RejectOnce => Some("reject_once"),
        ApprovalAnswer::RejectAlways => Some("reject_always"),
        ApprovalAnswer::Cancelled | ApprovalAnswer::NoApprover => None,
    }
}

struct Watcher {
    face: String,
    sink: Sink,
    tasks: kv::Store,
    answers: kv::Store,
    /// The team tasks shown, by id.
    streams: Mutex<HashMap<String, EventSender>>,
    /// The questions open in the face, by ask key: dropping the sender withdraws it.
    open: Mutex<HashMap<String, oneshot::Sender<()>>>,
}

/// Connects to the team and shows its tasks and blocked calls through `sink`, as `face` (the
/// name an answer is recorded under), until the process ends. Returns once connected.
pub async fn start(
    connection: &crate::team::Connection,
    face: &str,
    sink: Sink,
) -> Result<(), String> {
    let team = Team::connect_with(connection, &format!("rawko-{face}"))
        .await
        .map_err(|e| e.to_string())?;
    let bucket = |name: &'static str| {
        let team = team.clone();
        async move { team.bucket(name).await.map_err(|e| e.to_string()) }
    };
    let asks = bucket(ASKS_BUCKET).await?;
    let watcher = Arc::new(Watcher {
        face: face.to_owned(),
        sink,
        tasks: bucket(TASKS_BUCKET).await?,
        answers: bucket(ANSWERS_BUCKET).await?,
        streams: Mutex::new(HashMap::new()),
        open: Mutex::new(HashMap::new()),
    });
    tokio::spawn(watch_tasks(watcher.clone()));
    tokio::spawn(watch_asks(watcher.clone(), asks.clone()));
    tokio::spawn(look_for_asks(watcher, asks));
    Ok(())
}

/// Every few seconds, the asks no watch brought (a watch a node's loss left silent).
async fn look_for_asks(w: Arc<Watcher>, asks: kv::Store) {
    loop {
        tokio::time::sleep(Duration::from_secs(5)).await;
        let Ok(mut keys) = asks.keys().await else {
            continue;
        };
        let mut names = Vec::new();
        while let Some(key) = keys.next().await {
            if let Ok(key) = key {
                names.push(key);
            }
        }
        for key in names {
            if w.lock_open().contains_key(&key) {
                continue;
            }
            let Some(question) = get_json::<Ask>(&asks, &key).await else {
                continue;
            };
            w.offer_once(key, question);
        }
    }
}

/// Follows the tasks bucket: a running task's status, a finished one's end.
async fn watch_tasks(w: Arc<Watcher>) {
    loop {
        // Every task's latest entry first (a running one shows at once; a finished one, which
        // `rawko tasks list --nats` shows, does not), then each change.
        let Ok(mut entries) = w.tasks.watch_with_history(">").await else {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        while let Some(entry) = entries.next().await {
            let Ok(entry) = entry else { continue };
            if entry.operation != Operation::Put {
                continue;
            }
            if let Ok(task) = serde_json::from_slice::<TaskEntry>(&entry.value) {
                w.show(&task);
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Follows the asks bucket (those waiting when it starts, then new ones).
async fn watch_asks(w: Arc<Watcher>, asks: kv::Store) {
    loop {
        let Ok(mut entries) = asks.watch_with_history(">").await else {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        while let Some(entry) = entries.next().await {
            let Ok(entry) = entry else { continue };
            match entry.operation {
                Operation::Put => {
                    let Ok(question) = serde_json::from_slice::<Ask>(&entry.value) else {
                        continue;
                    };
                    w.offer_once(entry.key.clone(), question);
                }
                // Answered (by any face) or given up: the question goes.
                Operation::Delete | Operation::Purge => {
                    w.lock_open().remove(&entry.key);
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn crumbs_of(value: &Value) -> Vec<Crumb> {
    value
        .as_array()
        .map(|levels| {
            levels
                .iter()
                .map(|c| Crumb {
                    name: c["name"].as_str().unwrap_or_default().to_owned(),
                    phase_name: c["phaseName"].as_str().unwrap_or_default().to_owned(),
                    emoji: c["emoji"].as_str().unwrap_or_default().to_owned(),
                    index: c["index"].as_u64().unwrap_or(0) as usize,
                    total: c["total"].as_u64().unwrap_or(0) as usize,
                })
                .collect()
        })
        .unwrap_or_default()
}

impl Watcher {
    fn lock_open(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<()>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The face's stream of `task`'s events, opened on first use.
    fn stream(&self, task_id: &str) -> EventSender {
        let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = streams.get(task_id).filter(|tx| !tx.is_closed()) {
            return tx.clone();
        }
        let (tx, rx) = queue::channel();
        (self.sink)(task_id.to_owned(), rx);
        streams.insert(task_id.to_owned(), tx.clone());
        tx
    }

    fn show(&self, task: &TaskEntry) {
        if task.state == "finished" {
            let tx = self
                .streams
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&task.task_id);
            if let Some(tx) = tx {
                let outcome = match task.outcome.as_deref() {
                    Some("complete") => Outcome::Complete,
                    Some("cancelled") => Outcome::Cancelled,
                    _ => Outcome::Failed,
                };
                let _ = tx.send(TaskEvent::Finished {
                    outcome,
                    summary: format!(
                        "{} on {}",
                        outcome.as_str(),
                        task.worker.as_deref().unwrap_or("a worker")
                    ),
                });
            }
            return;
        }
        let Some(state) = TaskState::parse(&task.state) else {
            // Queued: nothing runs yet.
            return;
        };
        let worker = task.worker.as_deref().unwrap_or("?");
        let _ = self.stream(&task.task_id).send(TaskEvent::Status {
            state,
            breadcrumb: crumbs_of(&task.crumbs),
            text: format!("{} · {} (on {worker})", task.breadcrumb, state.as_str()),
            reason: None,
            workflow: None,
            breadcrumb_text: task.breadcrumb.clone(),
            phase_index: None,
            phases_done: None,
            subagent: None,
        });
    }

    /// Offers `question` unless it is open in the face already.
    fn offer_once(self: &Arc<Watcher>, key: String, question: Ask) {
        let withdraw = {
            let mut open = self.lock_open();
            if open.contains_key(&key) {
                return;
            }
            let (withdraw_tx, withdraw_rx) = oneshot::channel();
            open.insert(key.clone(), withdraw_tx);
            withdraw_rx
        };
        tokio::spawn(self.clone().offer(key, question, withdraw));
    }

    /// Asks the face about one blocked call; its answer goes to the answers bucket (the first
    /// of all faces' answers is the one kept).
    async fn offer(
        self: Arc<Watcher>,
        key: String,
        question: Ask,
        withdraw_rx: oneshot::Receiver<()>,
    ) {
        if get_json::<Answer>(&self.answers, &key).await.is_some() {
            self.lock_open().remove(&key);
            return;
        }
        let (reply, answer) = oneshot::channel();
        let timeout = Duration::from_millis(question.timeout_ms);
        let request = ApprovalRequest {
            tool_call_id: question.tool_call_id,
            tool: question.tool,
            input: question.input,
            phase: question.phase,
            reason: question.reason,
            detail: format!("{} (team task on {})", question.detail, question.worker),
            summary: question.summary,
            expires_at: question.expires_at,
            subagent: None,
            timeout,
            reply,
        };
        if let Some(task) = get_json::<TaskEntry>(&self.tasks, &question.task_id).await {
            self.show(&task);
        }
        let _ = self
            .stream(&question.task_id)
            .send(TaskEvent::Approval(Box::new(request)));
        let answered = tokio::select! {
            answer = answer => answer.ok(),
            // Another face answered, or the task stopped waiting: the question is withdrawn
            // (the face sees its reply dropped).
            _ = withdraw_rx => None,
        };
        let Some(outcome) = answered.and_then(outcome_name) else {
            self.lock_open().remove(&key);
            return;
        };
        self.record(&key, outcome).await;
        // Open until its answer is recorded, so it is not offered again meanwhile.
        self.lock_open().remove(&key);
    }

    /// Records this face's answer, unless another face's came first.
    async fn record(&self, key: &str, outcome: &str) {
        let answer = Answer {
            outcome: outcome.to_owned(),
            by: self.face.clone(),
            at: now_millis(),
        };
        let Ok(body) = serde_json::to_vec(&answer) else {
            return;
        };
        // `create`: refused when another face answered first, whose answer stands.
        for attempt in 0..50u32 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            match self.answers.create(key, body.clone().into()).await {
                Ok(_) => return,
                Err(e) if e.kind() == kv::CreateErrorKind::AlreadyExists => return,
                Err(e) => tracing::warn!("answering {key} for the team: {e}"),
            }
        }
    }
}

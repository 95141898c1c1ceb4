//! The work queue: submitting jobs for a repository and taking them, held by a heartbeat, on a
//! worker.

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::{
    self,
    consumer::{pull, AckPolicy, Consumer},
    message::{Acker, PublishMessage},
    stream::{DiscardPolicy, RetentionPolicy, StorageType},
    AckKind,
};
use bytes::Bytes;
use futures::StreamExt;
use sha2::{Digest, Sha256};

use super::{Error, Team};

/// The work-queue stream of every repository's jobs.
pub const QUEUE_STREAM: &str = "RAWKO_QUEUE";

/// The header that carries a job's task id (beside `Nats-Msg-Id`, which JetStream reads).
const TASK_ID_HEADER: &str = "Rawko-Task-Id";

/// How a repository's queue is kept.
#[derive(Debug, Clone)]
pub struct QueueConfig {
    /// How long a taken job stays held without a heartbeat before it goes to another worker.
    /// Keep it above the cluster's leader-election window (up to ~12 s after a node crashes)
    /// plus one heartbeat, or a held job can be given away while its worker still runs it.
    pub ack_wait: Duration,
    /// How often a held job's worker says it is still at it (`AckKind::Progress`).
    pub heartbeat: Duration,
    /// How many times a job is delivered at most (`None`: no limit).
    pub max_deliver: Option<u32>,
    /// The stream's replicas (`None`: [`Team::default_replicas`]). Used when the stream is
    /// created; an existing stream keeps its own.
    pub replicas: Option<usize>,
    /// How long a submit's task id is remembered to drop a retried submit.
    pub duplicate_window: Duration,
    /// Whether an existing consumer takes this `ack_wait` and `max_deliver` (a worker's, which
    /// owns them); else it keeps its own (`rawko submit`'s).
    pub update_consumer: bool,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            ack_wait: DEFAULT_ACK_WAIT,
            heartbeat: DEFAULT_ACK_WAIT / 6,
            max_deliver: None,
            replicas: None,
            duplicate_window: Duration::from_secs(120),
            update_consumer: false,
        }
    }
}

/// A worker's ack deadline unless it is given one: with the takeover's own second or two, a
/// lost worker's task goes on elsewhere within 30 s of the loss.
pub const DEFAULT_ACK_WAIT: Duration = Duration::from_secs(25);

/// The first 16 hex digits of the SHA-256 of a repository's URL, normalised (blanks, a trailing
/// `/` and `.git` removed), so the clones of one remote share a queue: the token of its subject
/// `rawko.queue.<repoHash>` and of its consumer's name.
pub fn repo_hash(repo_url: &str) -> String {
    let url = repo_url.trim().trim_end_matches('/');
    let url = url.strip_suffix(".git").unwrap_or(url);
    let digest = Sha256::digest(url.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// A new task id for a submit: time-ordered, unique across machines, and safe as one subject
/// token and as a KV key.
pub fn new_task_id() -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or_default();
    format!("task-{millis}-{}", nuid::next())
}

/// What the stream said to a submit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmitAck {
    /// The task id (the given one, or a new one).
    pub task_id: String,
    /// The job's sequence in [`QUEUE_STREAM`].
    pub sequence: u64,
    /// The task id was submitted before, within the duplicate window: nothing new was stored.
    pub duplicate: bool,
}

/// One repository's work queue, for submitting and for taking.
pub struct Queue {
    team: Team,
    config: QueueConfig,
    subject: String,
    consumer: Consumer<pull::Config>,
}

impl Queue {
    /// Opens the queue of the repository whose origin is `repo_url`, creating the stream and the
    /// repository's durable consumer if they are not there. An existing consumer keeps the
    /// `ack_wait` and `max_deliver` it was created with.
    pub async fn open(team: &Team, repo_url: &str, config: QueueConfig) -> Result<Queue, Error> {
        super::retrying(|| Queue::open_once(team, repo_url, config.clone())).await
    }

    async fn open_once(team: &Team, repo_url: &str, config: QueueConfig) -> Result<Queue, Error> {
        let hash = repo_hash(repo_url);
        let subject = format!("rawko.queue.{hash}");
        let replicas = config.replicas.unwrap_or_else(|| team.default_replicas());
        let stream = team
            .js
            .get_or_create_stream(jetstream::stream::Config {
                name: QUEUE_STREAM.to_owned(),
                subjects: vec!["rawko.queue.*".to_owned()],
                retention: RetentionPolicy::WorkQueue,
                storage: StorageType::File,
                num_replicas: replicas,
                discard: DiscardPolicy::New,
                duplicate_window: config.duplicate_window,
                ..Default::default()
            })
            .await
            .map_err(|e| Error::new(format!("creating the stream {QUEUE_STREAM}"), e))?;
        let durable = format!("repo-{hash}");
        let wanted = pull::Config {
            durable_name: Some(durable.clone()),
            filter_subject: subject.clone(),
            ack_policy: AckPolicy::Explicit,
            ack_wait: config.ack_wait,
            max_deliver: config.max_deliver.map_or(-1, i64::from),
            max_ack_pending: 10_000,
            ..Default::default()
        };
        let mut consumer: jetstream::consumer::Consumer<pull::Config> = stream
            .get_or_create_consumer(&durable, wanted.clone())
            .await
            .map_err(|e| Error::new(format!("creating the consumer {durable}"), e))?;
        let has = &consumer.cached_info().config;
        if config.update_consumer
            && (has.ack_wait != wanted.ack_wait || has.max_deliver != wanted.max_deliver)
        {
            consumer = stream
                .update_consumer(wanted)
                .await
                .map_err(|e| Error::new(format!("updating the consumer {durable}"), e))?;
        }
        Ok(Queue {
            team: team.clone(),
            config,
            subject,
            consumer,
        })
    }

    /// The subject this repository's jobs are published on.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// Queues a job under a new task id and returns the id.
    pub async fn submit(&self, payload: Bytes) -> Result<String, Error> {
        Ok(self.submit_with_id(&new_task_id(), payload).await?.task_id)
    }

    /// Queues a job under `task_id`, stored once even if submitted again within the duplicate
    /// window (a retried submit after a timeout).
    pub async fn submit_with_id(&self, task_id: &str, payload: Bytes) -> Result<SubmitAck, Error> {
        let doing = || format!("submitting {task_id} to {}", self.subject);
        let ack = self
            .team
            .js
            .send_publish(
                self.subject.clone(),
                PublishMessage::build()
                    .payload(payload)
                    .message_id(task_id)
                    .header(TASK_ID_HEADER, task_id),
            )
            .await
            .map_err(|e| Error::new(doing(), e))?
            .await
            .map_err(|e| Error::new(doing(), e))?;
        Ok(SubmitAck {
            task_id: task_id.to_owned(),
            sequence: ack.sequence,
            duplicate: ack.duplicate,
        })
    }

    /// Takes the next job, waiting up to `wait` for one (`None` if none came). The job is held
    /// by a heartbeat from then on, until [`Job::done`], [`Job::release`] or its drop.
    pub async fn take(&self, wait: Duration) -> Result<Option<Job>, Error> {
        let doing = || format!("taking a job from {}", self.subject);
        let mut batch = self
            .consumer
            .fetch()
            .max_messages(1)
            .expires(wait)
            .messages()
            .await
            .map_err(|e| Error::new(doing(), e))?;
        let Some(message) = batch.next().await else {
            return Ok(None);
        };
        let message = message.map_err(|e| Error::new(doing(), e))?;
        let delivered = message
            .info()
            .map_err(|e| Error::new(doing(), e))?
            .delivered;
        let task_id = message
            .headers
            .as_ref()
            .and_then(|headers| headers.get(TASK_ID_HEADER))
            .map(|id| id.as_str().to_owned())
            .unwrap_or_default();
        let (message, acker) = message.split();
        let acker = Arc::new(acker);
        let heartbeat = tokio::spawn(heartbeat(acker.clone(), self.config.heartbeat));
        Ok(Some(Job {
            task_id,
            payload: message.payload,
            delivered,
            acker,
            heartbeat,
        }))
    }
}

/// Says "still at it" every `every` until aborted.
async fn heartbeat(acker: Arc<Acker>, every: Duration) {
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        ticks.tick().await;
        if let Err(e) = acker.ack_with(AckKind::Progress).await {
            tracing::warn!(error = %e, "nats: a held job's heartbeat was not sent");
        }
    }
}

/// A job a worker holds. Dropping it stops its heartbeat without acking: the job goes to
/// another worker once its ack deadline passes, as when the worker dies.
pub struct Job {
    task_id: String,
    payload: Bytes,
    delivered: i64,
    acker: Arc<Acker>,
    heartbeat: tokio::task::JoinHandle<()>,
}

impl Job {
    /// The task id it was submitted with.
    pub fn task_id(&self) -> &str {
        &self.task_id
    }

    /// What was submitted.
    pub fn payload(&self) -> &Bytes {
        &self.payload
    }

    /// How many times it has been delivered, this time included (more than 1: a worker lost it
    /// or gave it back before).
    pub fn delivered(&self) -> i64 {
        self.delivered
    }

    /// The job is finished: removes it from the queue, once the server confirmed the ack.
    pub async fn done(self) -> Result<(), Error> {
        self.heartbeat.abort();
        self.acker
            .double_ack()
            .await
            .map_err(|e| Error::new(format!("acking {}", self.task_id), e))
    }

    /// Gives the job back at once, for another worker (or this one) to take.
    pub async fn release(self) -> Result<(), Error> {
        self.heartbeat.abort();
        self.acker
            .double_ack_with(AckKind::Nak(None))
            .await
            .map_err(|e| Error::new(format!("giving back {}", self.task_id), e))
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        self.heartbeat.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_has_one_hash_however_written() {
        let hash = repo_hash("https://example.com/team/app.git");
        assert_eq!(hash.len(), 16);
        assert_eq!(repo_hash(" https://example.com/team/app/ "), hash);
        assert_eq!(repo_hash("https://example.com/team/app"), hash);
        assert_ne!(repo_hash("https://example.com/team/other"), hash);
    }

    #[test]
    fn task_ids_are_one_subject_token() {
        let id = new_task_id();
        assert!(id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
        assert_ne!(id, new_task_id());
    }

    #[test]
    fn urls_are_split_on_commas() {
        assert_eq!(
            super::super::parse_urls(" nats://a:1, nats://b:2 ,").unwrap(),
            vec!["nats://a:1".to_owned(), "nats://b:2".to_owned()]
        );
        assert!(super::super::parse_urls(" , ").is_err());
    }
}

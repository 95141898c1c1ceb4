//! A team task's log in JetStream: one message per record on `rawko.log.<taskId>` of the stream
//! [`LOG_STREAM`], appended in order by the worker that holds the task, each append fenced with
//! the subject's last sequence (an ack of the work queue is no fence: a worker that was thought
//! lost and comes back finds its next append refused, and stops).

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::context::PublishErrorKind;
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::stream::{self, DiscardPolicy, RetentionPolicy, StorageType};
use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use super::{Error, Team};
use crate::store::replica::Replica;

/// The stream of every team task's log.
pub const LOG_STREAM: &str = "RAWKO_LOG";

/// The subject of task `task_id`'s log.
pub fn log_subject(task_id: &str) -> String {
    format!("rawko.log.{task_id}")
}

impl Team {
    /// The log stream, created on first use: file storage, replicated like the queue, records
    /// kept until removed.
    pub async fn log_stream(&self) -> Result<stream::Stream, Error> {
        super::retrying(|| self.log_stream_once()).await
    }

    async fn log_stream_once(&self) -> Result<stream::Stream, Error> {
        self.jetstream()
            .get_or_create_stream(stream::Config {
                name: LOG_STREAM.to_owned(),
                subjects: vec!["rawko.log.*".to_owned()],
                retention: RetentionPolicy::Limits,
                storage: StorageType::File,
                num_replicas: self.default_replicas(),
                discard: DiscardPolicy::Old,
                duplicate_window: Duration::from_secs(120),
                allow_direct: true,
                ..Default::default()
            })
            .await
            .map_err(|e| Error::new("opening the log stream RAWKO_LOG", e))
    }
}

/// Every record of task `task_id`'s log, in order, read from the stream's leader (so nothing
/// acknowledged is missed), and the stream sequence of the last (0 when there is none).
pub async fn read_log(team: &Team, task_id: &str) -> Result<(Vec<Bytes>, u64), Error> {
    let stream = team.log_stream().await?;
    let subject = log_subject(task_id);
    let mut records = Vec::new();
    let mut next = 1u64;
    let mut last = 0u64;
    loop {
        match stream
            .get_first_raw_message_by_subject(&subject, next)
            .await
        {
            Ok(message) => {
                last = message.sequence;
                next = message.sequence + 1;
                records.push(message.payload);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    async_nats::jetstream::stream::RawMessageErrorKind::NoMessageFound
                ) =>
            {
                break
            }
            Err(e) => return Err(Error::new(format!("reading the log of {task_id}"), e)),
        }
    }
    Ok((records, last))
}

enum Op {
    Line(u64, Bytes),
    Then(Box<dyn FnOnce() + Send>),
    Flush(oneshot::Sender<()>),
}

/// Called before a record is published, with the record (a worker uploads the definitions a
/// `started` or `pinned` record names).
pub type BeforePublish =
    Arc<dyn Fn(Bytes) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The [`Replica`] of a team task's log: records are published in order, each waiting for the
/// stream's ack (retried through a node's loss), and what the task announces after a record
/// waits until it is acked.
pub struct LogWriter {
    tx: mpsc::UnboundedSender<Op>,
    fenced: Arc<AtomicBool>,
    task_id: String,
}

impl std::fmt::Debug for LogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogWriter")
            .field("task_id", &self.task_id)
            .finish()
    }
}

impl LogWriter {
    /// Starts the writer of `task_id`'s log, whose last record so far has stream sequence `last`
    /// (0: none). `tag` tells this worker's run of the task apart in the messages' ids. When an
    /// append is refused because another worker appended first, `on_fenced` is called once and
    /// nothing more is published or announced.
    pub fn start(
        team: Team,
        task_id: &str,
        last: u64,
        tag: String,
        before: Option<BeforePublish>,
        on_fenced: Box<dyn FnOnce() + Send>,
    ) -> Arc<LogWriter> {
        let (tx, rx) = mpsc::unbounded_channel();
        let fenced = Arc::new(AtomicBool::new(false));
        tokio::spawn(run(
            team,
            log_subject(task_id),
            last,
            tag,
            before,
            rx,
            fenced.clone(),
            on_fenced,
        ));
        Arc::new(LogWriter {
            tx,
            fenced,
            task_id: task_id.to_owned(),
        })
    }

    /// Publishes nothing more, and announces nothing more (the worker gives the task back, or
    /// another worker took it).
    pub fn stop(&self) {
        self.fenced.store(true, Ordering::Relaxed);
    }

    /// Whether another worker appended to the log (this one must stop).
    pub fn fenced(&self) -> bool {
        self.fenced.load(Ordering::Relaxed)
    }
}

impl Replica for LogWriter {
    fn append(&self, seq: u64, line: &[u8]) {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let _ = self.tx.send(Op::Line(seq, Bytes::copy_from_slice(line)));
    }

    fn then(&self, f: Box<dyn FnOnce() + Send>) {
        let _ = self.tx.send(Op::Then(f));
    }

    fn flush(&self) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let (tx, rx) = oneshot::channel();
        let _ = self.tx.send(Op::Flush(tx));
        Box::pin(async move {
            let _ = rx.await;
        })
    }
}

#[allow(clippy::too_many_arguments)]
async fn run(
    team: Team,
    subject: String,
    mut last: u64,
    tag: String,
    before: Option<BeforePublish>,
    mut rx: mpsc::UnboundedReceiver<Op>,
    fenced: Arc<AtomicBool>,
    on_fenced: Box<dyn FnOnce() + Send>,
) {
    let mut on_fenced = Some(on_fenced);
    let js = team.jetstream().clone();
    // The stream exists before the first append (a node being elected: try again).
    let mut attempt = 0u32;
    while let Err(e) = team.log_stream().await {
        attempt += 1;
        if attempt == 1 || attempt.is_multiple_of(20) {
            tracing::warn!("{subject}: {e}; trying again");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    while let Some(op) = rx.recv().await {
        match op {
            Op::Line(seq, line) => {
                if fenced.load(Ordering::Relaxed) {
                    continue;
                }
                if let Some(before) = &before {
                    before(line.clone()).await;
                }
                let mut attempt = 0u32;
                loop {
                    let message = PublishMessage::build()
                        .payload(line.clone())
                        .message_id(format!("{subject}:{tag}:{seq}"))
                        .expected_last_subject_sequence(last);
                    let result = match js.send_publish(subject.clone(), message).await {
                        Ok(ack) => ack.await.map_err(|e| (e.kind(), e.to_string())),
                        Err(e) => Err((e.kind(), e.to_string())),
                    };
                    match result {
                        Ok(ack) => {
                            last = ack.sequence;
                            break;
                        }
                        Err((PublishErrorKind::WrongLastSequence, e)) => {
                            tracing::warn!("{subject}: another worker appended first ({e}): this worker stops the task");
                            fenced.store(true, Ordering::Relaxed);
                            if let Some(f) = on_fenced.take() {
                                f();
                            }
                            break;
                        }
                        Err((PublishErrorKind::MaxPayloadExceeded, e)) => {
                            // Kept locally; the team's copy lacks it, and says so.
                            tracing::error!(
                                "{subject}: record {seq} is larger than the server takes ({e})"
                            );
                            break;
                        }
                        Err((_, e)) => {
                            // A node lost, a leader being elected: try again, as long as it takes.
                            attempt += 1;
                            if attempt == 1 || attempt.is_multiple_of(20) {
                                tracing::warn!(
                                    "{subject}: storing record {seq} failed ({e}); trying again"
                                );
                            }
                            tokio::time::sleep(Duration::from_millis(
                                200.min(50 * u64::from(attempt)).max(50),
                            ))
                            .await;
                        }
                    }
                }
            }
            Op::Then(f) => {
                if !fenced.load(Ordering::Relaxed) {
                    f();
                }
            }
            Op::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

//! Teams (issue 37): tasks queued in NATS JetStream for the workers of a repository, taken by
//! whichever worker is free, and given to another worker when the one holding a task is lost.
//!
//! This is the shell's NATS module: it connects, keeps the work queue, submits and takes jobs. It
//! knows nothing of tasks' contents (a job's payload is bytes) and imports nothing of the engine
//! or the task service; the task service will run what a worker takes.
//!
//! The layout (docs/team-wip.md, and the design notes it cites):
//! - one work-queue stream [`QUEUE_STREAM`] over `rawko.queue.*`, a subject per repository,
//!   `rawko.queue.<repoHash>` ([`repo_hash`] of its origin URL), replicated on
//!   min(3, cluster size) nodes;
//! - one durable pull consumer per repository, `repo-<repoHash>`, that all of that repository's
//!   workers share (a work-queue stream refuses a second consumer whose filter overlaps);
//! - a job is held with an ack deadline (`ack_wait`, 30 s by default) that a heartbeat
//!   (`AckKind::Progress`, every 5 s) keeps alive; a worker that dies stops heartbeating, and its
//!   job goes to another worker `ack_wait` after the last heartbeat;
//! - a submit carries its task id as `Nats-Msg-Id`, so a retried submit within the stream's
//!   duplicate window is stored once.

mod queue;

pub use queue::{repo_hash, Job, Queue, QueueConfig, SubmitAck, QUEUE_STREAM};

use std::time::Duration;

use async_nats::jetstream;

/// How long [`Team::connect`] waits for a first server to answer.
const CONNECT_WAIT: Duration = Duration::from_secs(30);

/// A failure talking to NATS, with what rawko was doing.
#[derive(Debug, thiserror::Error)]
#[error("{doing}: {source}")]
pub struct Error {
    doing: String,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
}

impl Error {
    pub(crate) fn new(
        doing: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Error {
        Error {
            doing: doing.into(),
            source: source.into(),
        }
    }
}

/// `--nats`'s value as the client's server list: one URL or a comma-separated list (the client
/// fails over between them). Blanks around the commas are ignored; an empty list is an error.
pub fn parse_urls(nats: &str) -> Result<Vec<String>, Error> {
    let urls: Vec<String> = nats
        .split(',')
        .map(str::trim)
        .filter(|url| !url.is_empty())
        .map(str::to_owned)
        .collect();
    if urls.is_empty() {
        return Err(Error::new(
            "reading --nats",
            "no NATS URL given (one URL or a comma-separated list)",
        ));
    }
    Ok(urls)
}

/// A connection to a team's NATS deployment and its JetStream context.
#[derive(Clone)]
pub struct Team {
    client: async_nats::Client,
    js: jetstream::Context,
}

impl Team {
    /// Connects to `nats` (one URL or a comma-separated list), naming the connection `name` (it
    /// shows in the server's monitoring). The client reconnects forever, to any listed or
    /// announced server, and the first connection is retried too, so a worker started while one
    /// node is down still comes up.
    pub async fn connect(nats: &str, name: &str) -> Result<Team, Error> {
        let urls = parse_urls(nats)?;
        let client = async_nats::ConnectOptions::new()
            .name(name)
            .retry_on_initial_connect()
            .max_reconnects(None)
            .connection_timeout(Duration::from_secs(5))
            .request_timeout(Some(Duration::from_secs(10)))
            .event_callback(|event| async move { tracing::info!(%event, "nats") })
            .connect(urls.as_slice())
            .await
            .map_err(|e| Error::new(format!("connecting to NATS at {nats}"), e))?;
        // With retries on the first connection, `connect` returns before it is made; wait for it
        // (the server's INFO, which says the cluster's size, comes with it).
        let started = tokio::time::Instant::now();
        while client.connection_state() != async_nats::connection::State::Connected {
            if started.elapsed() > CONNECT_WAIT {
                return Err(Error::new(
                    format!("connecting to NATS at {nats}"),
                    format!("no server answered within {} s", CONNECT_WAIT.as_secs()),
                ));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let js = jetstream::new(client.clone());
        Ok(Team { client, js })
    }

    /// The number of servers in the cluster the connection is on, as the server announced it (1
    /// for a server that is not in a cluster).
    pub fn cluster_size(&self) -> usize {
        let info = self.client.server_info();
        if info.cluster.is_none() {
            1
        } else {
            info.connect_urls.len().max(1)
        }
    }

    /// The replicas of the team's streams: three on a cluster of three or more (surviving the
    /// loss of one node), else one per node.
    pub fn default_replicas(&self) -> usize {
        self.cluster_size().min(3)
    }

    /// The JetStream context (for the log and KV stores that later steps add).
    pub fn jetstream(&self) -> &jetstream::Context {
        &self.js
    }

    /// The NATS client.
    pub fn client(&self) -> &async_nats::Client {
        &self.client
    }
}

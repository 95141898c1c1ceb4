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

mod log;
mod queue;
pub mod records;

pub use log::{log_subject, read_log, BeforePublish, LogWriter, LOG_STREAM};
pub use queue::{
    new_task_id, repo_hash, Job, Queue, QueueConfig, SubmitAck, DEFAULT_ACK_WAIT, QUEUE_STREAM,
};

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

/// Where and how to reach the team's NATS: from the command line or the user's config
/// (`team.nats`), never from a workspace's files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Connection {
    /// One URL or a comma-separated list.
    pub nats: String,
    /// A `.creds` file (JWT and seed).
    pub creds: Option<std::path::PathBuf>,
    /// A file holding an nkey user seed (`SU…`).
    pub nkey: Option<std::path::PathBuf>,
    /// The CA the servers' certificates are checked against (TLS required).
    pub tls_ca: Option<std::path::PathBuf>,
    /// A client certificate and its key (mutual TLS).
    pub tls_cert: Option<std::path::PathBuf>,
    pub tls_key: Option<std::path::PathBuf>,
}

/// Whether a connection error says the server's certificate was refused (rustls's words, which
/// the client may pass on as an I/O error).
fn refuses_certificate(error: &str) -> bool {
    let error = error.to_ascii_lowercase();
    error.contains("certificate") || error.contains("unknownissuer")
}

/// The client's options for `connection`: its credentials and TLS, a name, reconnecting
/// forever.
async fn options(connection: &Connection, name: &str) -> Result<async_nats::ConnectOptions, Error> {
    let mut options = async_nats::ConnectOptions::new();
    if let Some(creds) = &connection.creds {
        options = options
            .credentials_file(creds)
            .await
            .map_err(|e| Error::new(format!("reading the credentials {}", creds.display()), e))?;
    }
    if let Some(seed_file) = &connection.nkey {
        let seed = std::fs::read_to_string(seed_file)
            .map_err(|e| Error::new(format!("reading the nkey seed {}", seed_file.display()), e))?;
        let seed = seed
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with("SU"))
            .ok_or_else(|| {
                Error::new(
                    format!("reading the nkey seed {}", seed_file.display()),
                    "no user seed (a line starting with SU) in it",
                )
            })?
            .to_owned();
        options = options.nkey(seed);
    }
    if let Some(ca) = &connection.tls_ca {
        options = options.add_root_certificates(ca.clone()).require_tls(true);
    }
    match (&connection.tls_cert, &connection.tls_key) {
        (Some(cert), Some(key)) => {
            options = options
                .add_client_certificate(cert.clone(), key.clone())
                .require_tls(true);
        }
        (None, None) => {}
        _ => {
            return Err(Error::new(
                "reading the NATS TLS settings",
                "a client certificate needs both its certificate and its key",
            ))
        }
    }
    Ok(options
        .name(name)
        .max_reconnects(None)
        .connection_timeout(Duration::from_secs(5))
        .request_timeout(Some(Duration::from_secs(10)))
        .event_callback(|event| async move { tracing::info!(%event, "nats") }))
}

/// Runs `f` until it succeeds, up to 6 times a second apart: JetStream's API may time out
/// while another client creates the same stream or bucket, or a leader is being elected; the
/// calls retried here (get-or-create) are safe to repeat.
pub(crate) async fn retrying<T, F, Fut>(mut f: F) -> Result<T, Error>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    let mut attempt = 0;
    loop {
        match f().await {
            Ok(v) => return Ok(v),
            Err(e) if attempt < 5 => {
                attempt += 1;
                tracing::warn!("{e}; trying again");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => return Err(e),
        }
    }
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
        Team::connect_with(
            &Connection {
                nats: nats.to_owned(),
                ..Default::default()
            },
            name,
        )
        .await
    }

    /// [`Team::connect`] with credentials and TLS. A server that refuses the credentials is
    /// said at once; servers that do not answer yet are waited for (up to 30 s).
    pub async fn connect_with(connection: &Connection, name: &str) -> Result<Team, Error> {
        let nats = connection.nats.as_str();
        let urls = parse_urls(nats)?;
        let doing = || format!("connecting to NATS at {nats}");
        // One attempt first: it says why a server refused; with retries on, the client would
        // keep trying quietly.
        let first = options(connection, name)
            .await?
            .connect(urls.as_slice())
            .await;
        let mut first_error = None;
        let client = match first {
            Ok(client) => client,
            Err(e)
                if matches!(
                    e.kind(),
                    async_nats::ConnectErrorKind::AuthorizationViolation
                        | async_nats::ConnectErrorKind::Authentication
                        | async_nats::ConnectErrorKind::Tls
                ) || refuses_certificate(&e.to_string()) =>
            {
                return Err(Error::new(
                    doing(),
                    format!("{e} (check --nats-creds, --nats-nkey, the --nats-tls options or team.nats in ~/.config/rawko/config.json)"),
                ));
            }
            // No server answers yet (one starting, one lost): keep trying, as a worker started
            // while a node is down must.
            Err(e) => {
                first_error = Some(e.to_string());
                options(connection, name)
                    .await?
                    .retry_on_initial_connect()
                    .connect(urls.as_slice())
                    .await
                    .map_err(|e| Error::new(doing(), e))?
            }
        };
        // With retries on the first connection, `connect` returns before it is made; wait for it
        // (the server's INFO, which says the cluster's size, comes with it).
        let started = tokio::time::Instant::now();
        while client.connection_state() != async_nats::connection::State::Connected {
            if started.elapsed() > CONNECT_WAIT {
                let first = first_error
                    .map(|e| format!(" (the first try: {e})"))
                    .unwrap_or_default();
                return Err(Error::new(
                    doing(),
                    format!(
                        "no server answered within {} s{first}",
                        CONNECT_WAIT.as_secs()
                    ),
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

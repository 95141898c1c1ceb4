//! The pumps of one session's tasks, which a request to the client waits for: a request a task's
//! tool makes (`client_io.rs`) first waits until every pump (`outgoing.rs`) has sent what the task
//! produced before it, so it cannot overtake the updates it follows.

use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, oneshot};

/// A pump's end of the flush requests: each is answered once what came before it was sent.
pub(super) type Flushes = mpsc::UnboundedReceiver<oneshot::Sender<()>>;

/// The pumps of one session's tasks, which a request waits for ([`Outbox::flush`]).
#[derive(Clone, Default)]
pub struct Outbox {
    pumps: Arc<Mutex<Vec<mpsc::UnboundedSender<oneshot::Sender<()>>>>>,
    /// The session's tasks are logged: their events are announced once durable.
    logged: bool,
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Outbox")
    }
}

impl Outbox {
    /// The outbox of a session whose tasks are logged (`logged`) or kept in memory only.
    pub fn new(logged: bool) -> Self {
        Outbox {
            logged,
            ..Outbox::default()
        }
    }

    /// A new pump's end of the flush requests (taken before the pump starts, so that no request
    /// of its task can miss it).
    pub(super) fn register(&self) -> Flushes {
        let (tx, rx) = mpsc::unbounded_channel();
        if let Ok(mut pumps) = self.pumps.lock() {
            pumps.retain(|p| !p.is_closed());
            pumps.push(tx);
        }
        rx
    }

    /// Returns once every pump of the session has sent the updates of everything its task
    /// produced before this call. A pump whose task has ended answers at once (its end drops the
    /// request).
    pub async fn flush(&self) {
        if self.logged {
            // Every event logged so far is durable, so announced: in its pump's queue.
            crate::store::journal().flush().await;
        }
        let waits: Vec<oneshot::Receiver<()>> = match self.pumps.lock() {
            Ok(mut pumps) => {
                pumps.retain(|p| !p.is_closed());
                pumps
                    .iter()
                    .filter_map(|p| {
                        let (tx, rx) = oneshot::channel();
                        p.send(tx).ok().map(|()| rx)
                    })
                    .collect()
            }
            Err(_) => Vec::new(),
        };
        for wait in waits {
            let _ = wait.await;
        }
    }
}

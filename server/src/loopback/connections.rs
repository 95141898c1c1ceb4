//! The endpoint's connections: how many may be open, how long one may idle, which one is closed
//! to make room, and what happens when accepting fails. The local endpoint must hold its own
//! against a local program that opens connections and sends nothing (issue 14: 3,000 of them
//! pinned the accept loop, flooded the log and took every file the server could open).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jsonrpsee::server::{HttpResponse, StopHandle};
use tokio::sync::Notify;

use super::BoxFuture;

/// What answers one request.
pub(super) type Handler =
    Arc<dyn Fn(hyper::Request<hyper::body::Incoming>) -> BoxFuture<HttpResponse> + Send + Sync>;

/// How long a connection may stay open without a request in progress: before its first request
/// (a client that connects and sends nothing, or sends its headers a byte at a time) and between
/// requests. Longer than the keep-alive of HTTP clients (Node's is 5 s), so they close first.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// The most connections the endpoint keeps open at once: 256, or a quarter of the open-file
/// limit when that is smaller, so connections can never use up the files the server's tasks need.
pub fn max_connections() -> usize {
    use nix::sys::resource::{getrlimit, Resource};
    let soft = getrlimit(Resource::RLIMIT_NOFILE).map_or(1024, |(soft, _)| soft);
    usize::try_from(soft / 4)
        .unwrap_or(usize::MAX)
        .clamp(8, 256)
}

/// How long a connection must have been idle before it may be closed to make room for another
/// (a connection only just accepted has had no time to send its request).
const EVICT_GRACE: Duration = Duration::from_millis(100);

/// How many connections may wait to be accepted (the kernel caps it at `net.core.somaxconn`).
pub(super) const ACCEPT_BACKLOG: u32 = 1024;

/// The longest request header block (request line, headers) a connection may send.
const MAX_HEADER_BYTES: usize = 64 * 1024;

/// One open connection, as the accept loop sees it.
struct Connection {
    /// Requests in progress (headers in, answer not yet given).
    busy: AtomicUsize,
    /// When it last had no request in progress.
    idle_since: Mutex<Instant>,
    /// Set when the accept loop needs its place.
    evicted: AtomicBool,
    /// Wakes the connection's watchdog: a request ended, or it was evicted.
    wake: Notify,
}

impl Connection {
    fn new() -> Self {
        Self {
            busy: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            evicted: AtomicBool::new(false),
            wake: Notify::new(),
        }
    }

    /// How long it has had no request in progress; `None` while one is.
    fn idle_for(&self) -> Option<Duration> {
        if self.busy.load(Ordering::Acquire) > 0 {
            return None;
        }
        self.idle_since.lock().ok().map(|t| t.elapsed())
    }

    /// Marks a request in progress until the guard is dropped.
    fn begin(self: &Arc<Self>) -> RequestGuard {
        self.busy.fetch_add(1, Ordering::AcqRel);
        RequestGuard(self.clone())
    }

    /// Resolves when the connection should be closed: it has been idle for [`IDLE_TIMEOUT`], or
    /// it was evicted and has no request in progress.
    async fn idle_out(&self) {
        loop {
            let wait = match self.idle_for() {
                Some(_) if self.evicted.load(Ordering::Acquire) => return,
                Some(idle) if idle >= IDLE_TIMEOUT => return,
                Some(idle) => IDLE_TIMEOUT - idle,
                None => IDLE_TIMEOUT,
            };
            tokio::select! {
                () = self.wake.notified() => {}
                () = tokio::time::sleep(wait) => {}
            }
        }
    }
}

struct RequestGuard(Arc<Connection>);

impl Drop for RequestGuard {
    fn drop(&mut self) {
        if let Ok(mut t) = self.0.idle_since.lock() {
            *t = Instant::now();
        }
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
        self.0.wake.notify_one();
    }
}

/// The open connections, and room for more.
struct Connections {
    open: Mutex<HashMap<u64, Arc<Connection>>>,
    /// A connection ended.
    freed: Notify,
}

impl Connections {
    fn len(&self) -> usize {
        self.open.lock().map_or(0, |o| o.len())
    }

    /// Closes the connection idle longest, if it has been idle for at least [`EVICT_GRACE`].
    /// Otherwise says how long until one may be closed (`None`: every connection has a request
    /// in progress).
    fn evict_idlest(&self) -> Result<(), Option<Duration>> {
        let Ok(mut open) = self.open.lock() else {
            return Err(None);
        };
        let idlest = open
            .iter()
            .filter_map(|(id, c)| c.idle_for().map(|d| (d, *id)))
            .max();
        let Some((idle, id)) = idlest else {
            return Err(None);
        };
        if idle < EVICT_GRACE {
            return Err(Some(EVICT_GRACE - idle));
        }
        if let Some(c) = open.remove(&id) {
            c.evicted.store(true, Ordering::Release);
            c.wake.notify_one();
        }
        Ok(())
    }
}

/// Accept errors: a pause that grows while they repeat (so a full file table cannot make the
/// loop spin), and a log line at most every [`AcceptErrors::LOG_EVERY`] with how many there were.
#[derive(Debug, Default)]
pub struct AcceptErrors {
    pause: Duration,
    last_log: Option<Instant>,
    unlogged: u64,
}

impl AcceptErrors {
    /// The first pause after an error that a lack of resources causes, and the longest.
    pub const FIRST_PAUSE: Duration = Duration::from_millis(10);
    pub const MAX_PAUSE: Duration = Duration::from_secs(1);
    /// At most one log line this often.
    pub const LOG_EVERY: Duration = Duration::from_secs(10);

    /// After an error at `now`: how long to pause before accepting again, and the line to log
    /// (if it is time for one).
    pub fn failed(&mut self, error: &std::io::Error, now: Instant) -> (Duration, Option<String>) {
        use nix::errno::Errno;
        let resources = matches!(
            error.raw_os_error().map(Errno::from_raw),
            Some(Errno::EMFILE | Errno::ENFILE | Errno::ENOBUFS | Errno::ENOMEM)
        );
        self.pause = if resources {
            (self.pause * 2).clamp(Self::FIRST_PAUSE, Self::MAX_PAUSE)
        } else {
            // One connection went wrong (ECONNABORTED, …): the next may be fine.
            Duration::ZERO
        };
        self.unlogged += 1;
        let due = self
            .last_log
            .is_none_or(|t| now.duration_since(t) >= Self::LOG_EVERY);
        if !due {
            return (self.pause, None);
        }
        let line = if self.unlogged == 1 {
            format!("endpoint: cannot accept a connection: {error}")
        } else {
            format!(
                "endpoint: cannot accept connections: {error} ({} errors in the last {} s)",
                self.unlogged,
                self.last_log.map_or(0, |t| now.duration_since(t).as_secs())
            )
        };
        self.last_log = Some(now);
        self.unlogged = 0;
        (self.pause, Some(line))
    }

    /// A connection was accepted: the next error pauses briefly again.
    pub fn succeeded(&mut self) {
        self.pause = Duration::ZERO;
    }
}

/// Accepts connections until `stop`, serving each request with `handler`, at most `cap` at once.
pub(super) async fn accept_loop(
    listener: tokio::net::TcpListener,
    handler: Handler,
    stop: StopHandle,
    cap: usize,
) {
    let connections = Arc::new(Connections {
        open: Mutex::new(HashMap::new()),
        freed: Notify::new(),
    });
    let mut errors = AcceptErrors::default();
    let mut last_full_log: Option<Instant> = None;
    let mut next_id = 0u64;
    loop {
        let accepted = tokio::select! {
            res = listener.accept() => res,
            () = stop.clone().shutdown() => break,
        };
        let sock = match accepted {
            Ok((sock, _)) => {
                errors.succeeded();
                sock
            }
            Err(e) => {
                let (pause, line) = errors.failed(&e, Instant::now());
                if let Some(line) = line {
                    tracing::warn!("{line}");
                }
                if !pause.is_zero() {
                    // Out of files: an idle connection gives one back.
                    let _ = connections.evict_idlest();
                    tokio::select! {
                        () = tokio::time::sleep(pause) => {}
                        () = stop.clone().shutdown() => break,
                    }
                }
                continue;
            }
        };
        // Room for it: past the cap the connection idle longest is closed; when none has been
        // idle for long (each has a request in progress, or has only just come), this one waits.
        while connections.len() >= cap {
            if last_full_log.is_none_or(|t| t.elapsed() >= AcceptErrors::LOG_EVERY) {
                tracing::warn!("endpoint: {cap} connections are open, the most it keeps; the longest idle ones are closed");
                last_full_log = Some(Instant::now());
            }
            let wait = match connections.evict_idlest() {
                Ok(()) => break,
                Err(wait) => wait.unwrap_or(IDLE_TIMEOUT),
            };
            tokio::select! {
                () = connections.freed.notified() => {}
                () = tokio::time::sleep(wait) => {}
                () = stop.clone().shutdown() => return,
            }
        }
        let _ = sock.set_nodelay(true);
        next_id += 1;
        let id = next_id;
        let connection = Arc::new(Connection::new());
        if let Ok(mut open) = connections.open.lock() {
            open.insert(id, connection.clone());
        }
        tokio::spawn(serve_connection(
            sock,
            handler.clone(),
            connection,
            connections.clone(),
            id,
            stop.clone(),
        ));
        // Let the new connection read its request before the next is accepted: one that has
        // sent its request is busy, not idle, and is never the one closed for room.
        tokio::task::yield_now().await;
    }
}

/// Serves one connection (HTTP/1.1) until the client closes it, it idles out or is evicted, or
/// the endpoint stops.
async fn serve_connection(
    sock: tokio::net::TcpStream,
    handler: Handler,
    connection: Arc<Connection>,
    connections: Arc<Connections>,
    id: u64,
    stop: StopHandle,
) {
    let watched = connection.clone();
    let service = hyper::service::service_fn(move |req| {
        let guard = connection.begin();
        let answer = handler(req);
        // A concrete error type: hyper's bounds on a boxed error trip the compiler's check that
        // the spawned connection is Send.
        let answer: BoxFuture<Result<HttpResponse, std::convert::Infallible>> =
            Box::pin(async move {
                let answer = answer.await;
                drop(guard);
                Ok(answer)
            });
        answer
    });
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1.max_buf_size(MAX_HEADER_BYTES);
    let conn = http1.serve_connection(hyper_util::rt::TokioIo::new(sock), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        () = watched.idle_out() => {}
        () = stop.shutdown() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
        }
    }
    if let Ok(mut open) = connections.open.lock() {
        open.remove(&id);
    }
    connections.freed.notify_one();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os_error(errno: nix::errno::Errno) -> std::io::Error {
        std::io::Error::from_raw_os_error(errno as i32)
    }

    #[test]
    fn running_out_of_files_pauses_the_accept_loop_longer_each_time_up_to_a_second() {
        let mut errors = AcceptErrors::default();
        let emfile = os_error(nix::errno::Errno::EMFILE);
        let now = Instant::now();
        let pauses: Vec<u128> = (0..10)
            .map(|_| errors.failed(&emfile, now).0.as_millis())
            .collect();
        assert_eq!(pauses, [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
        // One connection aborted by its client: no pause, the next may be fine.
        let aborted = os_error(nix::errno::Errno::ECONNABORTED);
        assert_eq!(errors.failed(&aborted, now).0, Duration::ZERO);
        // After a connection is accepted, the pauses start small again.
        errors.failed(&emfile, now);
        errors.succeeded();
        assert_eq!(errors.failed(&emfile, now).0, AcceptErrors::FIRST_PAUSE);
    }

    #[test]
    fn accept_errors_are_logged_once_per_period_with_their_count() {
        let mut errors = AcceptErrors::default();
        let enfile = os_error(nix::errno::Errno::ENFILE);
        let start = Instant::now();
        let mut lines = Vec::new();
        // A hundred thousand errors over 25 s.
        for i in 0..100_000u32 {
            let now = start + Duration::from_micros(u64::from(i) * 250);
            if let (_, Some(line)) = errors.failed(&enfile, now) {
                lines.push(line);
            }
        }
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert!(lines[0].starts_with("endpoint: cannot accept a connection"));
        assert!(
            lines[1].contains("(40000 errors in the last 10 s)"),
            "{}",
            lines[1]
        );
    }

    #[test]
    fn the_connection_cap_leaves_most_open_files_to_the_tasks() {
        let cap = max_connections();
        assert!((8..=256).contains(&cap), "{cap}");
        use nix::sys::resource::{getrlimit, Resource};
        let (soft, _) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        assert!(cap as u64 <= soft / 4 || cap == 8, "{cap} of {soft}");
    }
}

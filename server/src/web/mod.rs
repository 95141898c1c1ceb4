//! The web face: a page for the workspace's tasks and their approvals, for a browser anywhere —
//! a phone included (docs/web.md). `rawko web` serves it alone; `rawko serve --web` and `rawko run
//! --web` put it beside the editor's connection or the terminal, on the same tasks.
//!
//! - `hub.rs` — what the page sees: the tasks' events as they happen, kept for a page that opens
//!   later, and each approval offered to the page and to the face beside it (first answer wins).
//! - `http.rs` — the HTTP server: the token check, the embedded page (`assets/`), the JSON API
//!   and the event stream (server-sent events).
//! - `approval.rs` — a blocked call as the page shows it, with the change it would make.
//! - `auth.rs` — the token, its cookie and the origin check.
//! - `tls.rs` — TLS (rustls) for an address other machines reach.
//! - `notify.rs` — `notify.webhook`: a phone told that an approval waits.

mod approval;
mod auth;
mod http;
mod hub;
mod notify;
mod tls;

pub use http::StartDefaults;
pub use hub::Hub;

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;

use crate::engine::tasks::{Opening, Route, Tasks};

/// Where the page is served when no address is given: this machine only, a free port.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:0";

/// How the page is served (`--listen`, `--tls-cert`, `--tls-key`, `--insecure-http`).
#[derive(Debug, Clone, Default)]
pub struct WebOptions {
    pub listen: Option<String>,
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    pub insecure_http: bool,
}

/// The checked address and TLS, before anything is bound.
pub struct Listen {
    addr: SocketAddr,
    tls: Option<tokio_rustls::TlsAcceptor>,
}

/// Checks where the page would be served: an address other machines can reach needs TLS, or
/// the user's explicit `--insecure-http`.
pub fn prepare(options: &WebOptions) -> Result<Listen, String> {
    let given = options.listen.as_deref().unwrap_or(DEFAULT_LISTEN).trim();
    let addr = parse_listen(given)?;
    let tls = match (&options.tls_cert, &options.tls_key) {
        (Some(cert), Some(key)) => Some(tls::acceptor(cert, key)?),
        (None, None) => None,
        _ => return Err("--tls-cert and --tls-key go together: give both".to_owned()),
    };
    if !addr.ip().is_loopback() && tls.is_none() && !options.insecure_http {
        return Err(format!(
            "{given} can be reached from other machines, and the page answers approvals: give it \
--tls-cert FILE and --tls-key FILE, or --insecure-http if every machine on that network is yours \
(a tailnet). To reach a page on 127.0.0.1 from elsewhere, forward its port with `ssh -L` \
(docs/web.md)"
        ));
    }
    Ok(Listen { addr, tls })
}

/// `HOST:PORT`, `[V6]:PORT`, a bare port (on 127.0.0.1), or a name that resolves (its first
/// address).
fn parse_listen(given: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = given.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Ok(port) = given.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    match given.to_socket_addrs() {
        Ok(mut addrs) => addrs
            .next()
            .ok_or_else(|| format!("{given} names no address to listen on")),
        Err(e) => Err(format!(
            "cannot listen on {given:?}: {e} (give HOST:PORT, e.g. 127.0.0.1:8080)"
        )),
    }
}

/// The page, serving.
pub struct Running {
    /// The address to open, with its token: shown to the user only.
    pub url: String,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Binds the address and serves the page of `hub`'s tasks, starting new ones with `defaults`.
pub async fn start(
    listen: Listen,
    hub: Arc<Hub>,
    defaults: StartDefaults,
) -> std::io::Result<Running> {
    let listener = tokio::net::TcpListener::bind(listen.addr)
        .await
        .map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot listen on {}: {e}", listen.addr))
        })?;
    let local = listener.local_addr()?;
    let scheme = if listen.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let host = match local.ip() {
        // Every address: name the machine, which is what another one would open.
        ip if ip.is_unspecified() => std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .ok()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| ip.to_string()),
        IpAddr::V6(ip) => format!("[{ip}]"),
        IpAddr::V4(ip) => ip.to_string(),
    };
    let token = auth::new_token()?;
    let page = format!("{scheme}://{host}:{}/", local.port());
    hub.set_page(page.clone());
    let server = Arc::new(http::Server {
        hub,
        token: token.clone(),
        secure: listen.tls.is_some(),
        defaults,
    });
    let server = tokio::spawn(http::serve(listener, listen.tls, server));
    Ok(Running {
        url: format!("{page}?token={token}"),
        server,
    })
}

/// The one line that tells the user where the page is.
pub fn url_line(url: &str) -> String {
    format!("rawko web: {url}")
}

/// Writes the URL to the file `RAWKO_WEB_URL_FILE` names, if it names one (for a program that
/// started rawko and cannot read its stderr, such as a test through an editor).
pub fn write_url_file(url: &str) {
    if let Some(path) = std::env::var_os("RAWKO_WEB_URL_FILE").filter(|p| !p.is_empty()) {
        use std::os::unix::fs::OpenOptionsExt;
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .and_then(|mut f| writeln!(f, "{}", url_line(url)));
        if let Err(e) = written {
            tracing::warn!("cannot write RAWKO_WEB_URL_FILE: {e}");
        }
    }
}

/// `rawko web`: what it serves and with what.
pub struct CommandOptions {
    pub workspace: Option<PathBuf>,
    pub web: WebOptions,
    pub defaults: StartDefaults,
    /// `--nats`: the team's tasks and their blocked calls on the page too.
    pub nats: Option<crate::team::Connection>,
}

/// Runs `rawko web` until SIGINT or SIGTERM: the page on stdout's one line, warnings on stderr.
pub fn run_command(options: CommandOptions) -> std::io::Result<i32> {
    let listen = match prepare(&options.web) {
        Ok(l) => l,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "error: {e}");
            return Ok(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(32)
        .build()?;
    let workspace = options
        .workspace
        .unwrap_or_else(|| std::env::current_dir().unwrap_or_else(|_| ".".into()));
    if !workspace.is_dir() {
        let _ = writeln!(
            std::io::stderr(),
            "error: workspace {} is not a directory (pass an existing project with --workspace DIR)",
            workspace.display()
        );
        return Ok(2);
    }
    runtime.block_on(async move {
        let env = |name: &str| std::env::var_os(name);
        let hub = Hub::new();
        let opening = Opening::new(workspace, &env)
            .route(Route::new(hub.tee(None)))
            .records_session_now("web");
        let opened = Tasks::open(opening);
        let tasks = opened.tasks;
        hub.attach(&tasks);
        let mut err = std::io::stderr();
        for p in &opened.found.problems {
            let _ = writeln!(err, "warning: config {p}");
        }
        if !opened.found.trust.allows() {
            let place = tasks.place();
            if let Some(left_out) = place.settings.untrusted_text(&place.workspace) {
                let _ = writeln!(
                    err,
                    "note: {left_out}: {} (`rawko trust` trusts it)",
                    opened.found.trust.reason()
                );
            }
        }
        if let Some(connection) = &options.nats {
            if let Err(e) = crate::worker::watch::start(connection, "web", hub.tee(None)).await {
                let _ = writeln!(err, "error: the team's tasks on NATS cannot be shown: {e}");
                return Ok(1);
            }
        }
        let running = match start(listen, hub, options.defaults).await {
            Ok(r) => r,
            Err(e) => {
                let _ = writeln!(err, "error: {e}");
                return Ok(1);
            }
        };
        let endpoint = open_endpoint(&tasks).await;
        {
            let stdout = std::io::stdout();
            let mut out = stdout.lock();
            writeln!(out, "{}", url_line(&running.url))?;
            out.flush()?;
        }
        write_url_file(&running.url);
        wait_for_signal().await;
        drop(endpoint);
        drop(running);
        let stop = tasks.end_session(None).await;
        for note in &stop.notes {
            let _ = writeln!(err, "{}", note.text());
        }
        std::io::Result::Ok(0)
    })
}

/// Opens the local endpoint external agents' hooks reach, so their blocked calls are asked in
/// the page too.
async fn open_endpoint(tasks: &Arc<Tasks>) -> Option<crate::endpoint::Endpoint> {
    let host = crate::endpoint::ExternalHost {
        tasks: tasks.clone(),
    };
    let runtime = match crate::external::private_runtime_dir(|n| std::env::var_os(n), true) {
        Ok(r) => r,
        Err(why) => {
            tracing::warn!("cannot start the endpoint for external agents: {why}");
            return None;
        }
    };
    match crate::endpoint::start(Arc::new(host), &tasks.workspace(), &runtime).await {
        Ok(endpoint) => Some(endpoint),
        Err(e) => {
            tracing::warn!("cannot start the endpoint for external agents: {e}");
            None
        }
    }
}

/// Waits for SIGINT or SIGTERM.
pub async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(mut int), Ok(mut term)) => {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_stays_on_this_machine_unless_told_and_secured() {
        let opts = |listen: &str| WebOptions {
            listen: Some(listen.to_owned()),
            ..Default::default()
        };
        assert!(prepare(&WebOptions::default()).is_ok());
        assert!(prepare(&opts("127.0.0.1:8080")).is_ok());
        assert!(prepare(&opts("[::1]:0")).is_ok());
        assert!(prepare(&opts("8080")).is_ok());
        let refused = prepare(&opts("0.0.0.0:8080")).err().unwrap();
        assert!(refused.contains("--tls-cert"), "{refused}");
        let insecure = WebOptions {
            insecure_http: true,
            ..opts("0.0.0.0:0")
        };
        assert!(prepare(&insecure).is_ok());
        let half = WebOptions {
            tls_cert: Some("c.pem".into()),
            ..opts("127.0.0.1:0")
        };
        assert!(prepare(&half).err().unwrap().contains("go together"));
        assert!(prepare(&opts("not an address")).is_err());
    }
}

//! The stdio JSON-RPC face: LSP framing on tower-lsp-server, the LSP lifecycle (`lifecycle.rs`),
//! rawko's task and workflow methods (`tasks.rs`), the workspace, trust and session
//! (`workspace.rs`), and one writer per task that sends its notifications in order with a `seq`
//! (`events.rs`). Errors of the task service become JSON-RPC errors in `errors.rs` only.
//!
//! Handlers are thin (invariant 4): they check their input, ask the task service
//! (`engine::tasks`) and return. They never await the client; an approval request runs in its
//! own spawned task.

mod errors;
mod events;
mod lifecycle;
mod tasks;
pub(crate) mod to_proto;
mod transport;
mod workspace;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use rawko_protocol::to_server::*;
use rawko_protocol::Request as _;
use tower_lsp_server::{Client, LspService};

use crate::config::ConfigProblem;
use crate::engine::tasks::{Opening, Route, Sink, Tasks};

/// The longest `rawko/sendMessage` text accepted.
pub use crate::engine::tasks::MAX_MESSAGE_BYTES;

/// Where the server runs and what it was told at start.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// `--workspace`; otherwise the editor's workspace folder, otherwise the current directory.
    pub workspace: Option<PathBuf>,
    /// `--web`: the web page beside the editor, on the same tasks.
    pub web: Option<crate::web::WebOptions>,
    /// `--nats`: the team's tasks and their blocked calls beside the editor's own.
    pub nats: Option<crate::team::Connection>,
}

struct Shared {
    options: ServeOptions,
    /// The task service, the one of this process: the tasks, the workspace and its settings,
    /// trust and the session.
    tasks: Arc<Tasks>,
    config_problems: Mutex<Vec<ConfigProblem>>,
    /// The local endpoint external agents reach; dropped (stopped, its file removed) at the end.
    endpoint: Mutex<Option<crate::endpoint::Endpoint>>,
    /// `--web`: the page's view of the tasks (their events go through it to the editor).
    web: Option<Arc<crate::web::Hub>>,
    /// The page's address with its token, once it serves: offered to the editor to open.
    web_url: OnceLock<String>,
    /// Where the team's tasks' events go (`--nats`), as the service's own do.
    team_sink: Sink,
    /// Set once the team's tasks are watched.
    team_watched: OnceLock<()>,
}

/// The language server.
pub struct Backend {
    client: Client,
    outgoing: Arc<transport::Outgoing>,
    shared: Arc<Shared>,
}

impl Backend {
    fn new(client: Client, outgoing: Arc<transport::Outgoing>, options: ServeOptions) -> Self {
        let writer = outgoing.clone();
        let sink: Sink = Arc::new(move |id, events| {
            tokio::spawn(events::write_events(writer.clone(), id, events));
        });
        // With `--web`, every task's events go through the page's hub, which hands them on to
        // the editor and offers approvals to both.
        let web = options.web.is_some().then(crate::web::Hub::new);
        let sink = match &web {
            Some(hub) => hub.tee(Some(sink)),
            None => sink,
        };
        // The folder the server serves before (or without) an editor, so a `rawko serve` started
        // in a terminal gates Claude Code at once; the editor's `initialize` may move it.
        let team_sink = sink.clone();
        let opening = Opening::new(workspace::first_workspace(&options), &workspace::env)
            .route(Route::new(sink))
            .records_session_now("serve");
        let opened = Tasks::open(opening);
        workspace::tell_found(&opened.tasks, &opened.found);
        let tasks = opened.tasks;
        if let Some(hub) = &web {
            hub.attach(&tasks);
        }
        Self {
            client,
            outgoing,
            shared: Arc::new(Shared {
                options,
                tasks,
                config_problems: Mutex::new(Vec::new()),
                endpoint: Mutex::new(None),
                web,
                web_url: OnceLock::new(),
                team_sink,
                team_watched: OnceLock::new(),
            }),
        }
    }

    fn tasks(&self) -> &Tasks {
        &self.shared.tasks
    }
}

/// The most threads the server runs blocking work on (file tools, store reads).
const MAX_BLOCKING_THREADS: usize = 32;

/// Runs the server on stdin/stdout until the client exits. Uses a current-thread runtime and,
/// when stdin and stdout are pipes, non-blocking pipe I/O (the cheapest round trip).
pub fn serve_stdio(options: ServeOptions) -> std::io::Result<()> {
    // A page that may not be served as asked stops the server before it starts.
    let listen = match &options.web {
        Some(web) => Some(crate::web::prepare(web).map_err(std::io::Error::other)?),
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        // The file tools run on blocking threads: a thousand tasks reading at once share a few
        // dozen threads (the machine has few cores) instead of starting hundreds, each with
        // its own stack and allocator arena.
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .build()?;
    let result = runtime.block_on(async move {
        let (stdin, stdout) = stdio();
        let (outgoing, frames) = transport::outgoing();
        let for_backend = outgoing.clone();
        let shared_slot: Arc<OnceLock<Arc<Shared>>> = Arc::new(OnceLock::new());
        let slot = shared_slot.clone();
        let (service, socket) = LspService::build(move |client| {
            let backend = Backend::new(client, for_backend, options);
            let _ = slot.set(backend.shared.clone());
            backend
        })
        .custom_method(ListWorkflows::METHOD, Backend::list_workflows)
        .custom_method(ValidateWorkflows::METHOD, Backend::validate_workflows)
        .custom_method(StartTask::METHOD, Backend::start_task)
        .custom_method(CancelTask::METHOD, Backend::cancel_task)
        .custom_method(Step::METHOD, Backend::step)
        .custom_method(Interrupt::METHOD, Backend::interrupt)
        .custom_method(SendMessage::METHOD, Backend::send_message)
        .custom_method(ListTasks::METHOD, Backend::list_tasks)
        .custom_method(GetTask::METHOD, Backend::get_task)
        .custom_method(PhasePrompt::METHOD, Backend::phase_prompt)
        .custom_method(PhaseDiff::METHOD, Backend::phase_diff)
        .custom_method(ResumeTask::METHOD, Backend::resume_task)
        .custom_method(RewindTask::METHOD, Backend::rewind_task)
        .custom_method(ForceAgent::METHOD, Backend::force_agent)
        .custom_method(SkipStep::METHOD, Backend::skip_step)
        .custom_method(Retry::METHOD, Backend::retry)
        .custom_method(Reset::METHOD, Backend::reset)
        .custom_method(SetWorkflow::METHOD, Backend::set_workflow)
        .custom_method(ServerStats::METHOD, Backend::server_stats)
        .finish();
        use tokio::signal::unix::{signal, SignalKind};
        if let Some(shared) = shared_slot.get() {
            workspace::early_start(shared.clone()).await;
        }
        // The page, beside the editor: its address goes to stderr (stdout is the protocol) and,
        // once the editor is attached, to the editor with an "Open" action.
        let mut _page = None;
        if let (Some(listen), Some(shared)) = (listen, shared_slot.get()) {
            if let Some(hub) = &shared.web {
                let page = crate::web::start(listen, hub.clone(), Default::default()).await?;
                use std::io::Write as _;
                let _ = writeln!(std::io::stderr(), "{}", crate::web::url_line(&page.url));
                crate::web::write_url_file(&page.url);
                let _ = shared.web_url.set(page.url.clone());
                _page = Some(page);
            }
        }
        let serve = transport::serve(stdin, stdout, service, socket, outgoing, frames);
        let interrupted = match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut int), Ok(mut term)) => tokio::select! {
                () = serve => false,
                _ = int.recv() => true,
                _ = term.recv() => true,
            },
            _ => {
                serve.await;
                false
            }
        };
        if let Some(shared) = shared_slot.get() {
            workspace::end_session(shared, interrupted).await;
        }
        std::io::Result::Ok(())
    });
    // stdin may be read by a blocking thread (a socket or a terminal, not a pipe): do not wait
    // for it to return.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    result
}

type Reader = Box<dyn tokio::io::AsyncRead + Unpin + Send>;
type Writer = Box<dyn tokio::io::AsyncWrite + Unpin + Send>;

/// stdin and stdout: non-blocking pipes when they are pipes, tokio's blocking-thread stdio
/// otherwise (a terminal, a file).
fn stdio() -> (Reader, Writer) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let stdin: Reader = match std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Receiver::from_owned_fd)
    {
        Ok(rx) => Box::new(rx),
        Err(e) => {
            tracing::debug!("stdin is not a pipe ({e}); using tokio's stdin");
            Box::new(tokio::io::stdin())
        }
    };
    let stdout: Writer = match std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Sender::from_owned_fd)
    {
        Ok(tx) => Box::new(tx),
        Err(e) => {
            tracing::debug!("stdout is not a pipe ({e}); using tokio's stdout");
            Box::new(tokio::io::stdout())
        }
    };
    (stdin, stdout)
}

//! `rawko run "TASK"`: the task flow headless, in a terminal. The streamed text, a line per phase
//! and state change, approvals asked at the terminal (or answered by `--yes` / `--deny`), Ctrl-C
//! cancels cleanly. Exit status 0 complete, 1 failed, 130 cancelled. `--resume ID` continues a task
//! from the task store.

use std::io::{self, IsTerminal};
use std::path::PathBuf;
use std::sync::Arc;

use super::terminal::{approval_line, ask, Printer};
use super::{Context, ExitCode, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE};
use tokio::sync::mpsc;

use crate::engine::tasks::{Opening, Route, Sink, StartRequest, TaskError, Tasks};
use crate::engine::{ApprovalAnswer, Outcome, TaskEvent};
use crate::hooks::session::SessionStatus;
use crate::hooks::trust::Trust;

/// Exit status of a cancelled task (128 + SIGINT, as shells report Ctrl-C).
pub const EXIT_CANCELLED: ExitCode = 130;

/// How blocked tool calls are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approvals {
    /// Ask at the terminal (deny, and say so, when there is none).
    Ask,
    Yes,
    Deny,
    /// No terminal, but the web page asks (`--web`).
    Page,
}

pub struct RunOptions {
    pub task: Option<String>,
    pub workflow: Option<String>,
    pub agent: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub script: Option<PathBuf>,
    pub base_url: Option<String>,
    pub agent_command: Option<String>,
    pub approvals: Approvals,
    pub resume: Option<String>,
    /// `--web`: the page beside the terminal, asking the same approvals.
    pub web: super::WebArgs,
}

/// Whether the workspace's hooks may run and its settings that need trust apply, when the
/// service found it not trusted (`state`): asked at the terminal, and the answer handed to the
/// service; without a terminal they do not, and rawko says so in one note.
fn ask_trust(
    tasks: &Tasks,
    state: Trust,
    out: &mut dyn io::Write,
    err: &mut dyn io::Write,
) -> io::Result<()> {
    let place = tasks.place();
    let (settings, workspace) = (&place.settings, &place.workspace);
    let left_out = settings.untrusted_text(workspace).unwrap_or_default();
    if !io::stdin().is_terminal() {
        writeln!(
            err,
            "note: {left_out}: {} (`rawko trust` trusts it)",
            state.reason()
        )?;
        return Ok(());
    }
    let changed = if state == Trust::Changed {
        " that changed since you trusted it"
    } else {
        ""
    };
    let hooks = crate::hooks::workspace_hook_lines(&settings.hooks);
    if !hooks.is_empty() {
        writeln!(
            out,
            "{} {} hooks{changed}:",
            settings.workspace_hook_files_text(workspace),
            if settings.workspace_hook_files.len() > 1 {
                "define"
            } else {
                "defines"
            },
        )?;
        for l in &hooks {
            writeln!(out, "  {l}")?;
        }
    }
    if let Some(w) = &settings.workspace_settings {
        writeln!(
            out,
            "{} chooses what runs and where your keys go{changed}:",
            w.file.display()
        )?;
        for l in w.lines() {
            writeln!(out, "  {l}")?;
        }
    }
    write!(
        out,
        "Trust this workspace and {}? [y/N] ",
        match (hooks.is_empty(), settings.workspace_settings.is_some()) {
            (false, false) => "run its hooks",
            (true, _) => "use its settings",
            (false, true) => "run its hooks and use its settings",
        }
    )?;
    out.flush()?;
    let mut line = String::new();
    io::stdin().read_line(&mut line)?;
    let yes = matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes");
    if let Err(e) = tasks.answer_trust(yes) {
        writeln!(err, "warning: {e}")?;
    }
    if !yes {
        writeln!(out, "Not this time: {left_out}.")?;
    }
    Ok(())
}

pub fn run(ctx: &mut Context<'_>, options: RunOptions) -> io::Result<ExitCode> {
    let task = options
        .task
        .as_deref()
        .map(str::trim)
        .filter(|t| !t.is_empty());
    // The web page beside the terminal (`--web`): checked before anything starts. A task given
    // after `--web` without an address was read as the address: it is the task.
    let mut web_args = options.web.clone();
    let mut task = task;
    if let (None, None, Some(given)) = (task, &options.resume, &web_args.web) {
        if crate::web::prepare(&crate::web::WebOptions {
            listen: Some(given.clone()),
            insecure_http: true,
            ..Default::default()
        })
        .is_err()
        {
            task = options
                .web
                .web
                .as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty());
            web_args.web = Some(crate::web::DEFAULT_LISTEN.to_owned());
        }
    }
    if task.is_none() && options.resume.is_none() {
        writeln!(
            ctx.err,
            "error: say what the task is: rawko run \"TASK\" (or --resume ID)"
        )?;
        return Ok(EXIT_USAGE);
    }
    let listen = match web_args
        .options()
        .map(|w| crate::web::prepare(&w))
        .transpose()
    {
        Ok(l) => l,
        Err(e) => {
            writeln!(ctx.err, "error: {e}")?;
            return Ok(EXIT_USAGE);
        }
    };
    let hub = listen.is_some().then(crate::web::Hub::new);
    // The question about trust is asked at the terminal, when there is one.
    let (sink, mut streams) = task_streams();
    let sink = match &hub {
        Some(hub) => hub.tee(Some(sink)),
        None => sink,
    };
    let mut opening = Opening::new(ctx.workspace.clone(), ctx.env)
        .route(Route::new(sink))
        .records_session("run");
    if io::stdin().is_terminal() {
        opening = opening.asks_trust();
    }
    let opened = Tasks::open(opening);
    let tasks = opened.tasks;
    if let Some(hub) = &hub {
        hub.attach(&tasks);
    }
    for p in opened.found.problems {
        writeln!(ctx.err, "warning: config {p}")?;
    }
    if !opened.found.trust.allows() {
        ask_trust(&tasks, opened.found.trust, ctx.out, ctx.err)?;
    }
    let request = StartRequest {
        description: task.unwrap_or_default().to_owned(),
        workflow: options.workflow.clone(),
        agent: options.agent.clone(),
        provider: options.provider.clone(),
        model: options.model.clone(),
        script: options.script.clone(),
        base_url: options.base_url.clone(),
        agent_command: options.agent_command.clone(),
    };
    // Without a terminal to ask on, blocked calls are denied (said once the task has started),
    // unless the page asks them.
    let terminal = io::stdin().is_terminal();
    let no_terminal = options.approvals == Approvals::Ask && !terminal && hub.is_none();
    let approvals = match (options.approvals, terminal, &hub) {
        (Approvals::Ask, false, Some(_)) => Approvals::Page,
        (Approvals::Ask, false, None) => Approvals::Deny,
        (a, _, _) => a,
    };
    // Beside the page, the terminal's question must give way when the page answers first: its
    // lines are read on a thread of their own.
    let mut lines = (hub.is_some() && approvals == Approvals::Ask).then(stdin_lines);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (out, err) = (&mut *ctx.out, &mut *ctx.err);
    let finished = runtime.block_on(async move {
        // Listen for Ctrl-C before anything is shown, and keep one listener for the whole run,
        // so an interrupt that comes early or between two events is not lost.
        let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        let started = match &options.resume {
            Some(id) => tasks.resume(id).await.and_then(|s| {
                s.ok_or_else(|| TaskError::Internal("the task did not start".to_owned()))
            }),
            None => tasks.start(request).await,
        };
        let started = match started {
            Ok(s) => s,
            Err(e) => return Ok(Err(task_error(err, &e)?)),
        };
        if let Some(note) = &started.note {
            writeln!(err, "note: {note}")?;
        }
        if no_terminal {
            writeln!(
                err,
                "note: no terminal to ask on, so blocked tool calls are denied (pass --yes to allow them)"
            )?;
        }
        if options.resume.is_some() {
            writeln!(out, "resuming task {}: {}", started.id, started.description)?;
        }
        writeln!(out, "task {}", started.id)?;
        out.flush()?;
        let id = started.id.clone();
        let _page = match (listen, hub) {
            (Some(listen), Some(hub)) => {
                let page = match crate::web::start(listen, hub, Default::default()).await {
                    Ok(p) => p,
                    Err(e) => {
                        writeln!(err, "error: {e}")?;
                        let _ = tasks.cancel(&started.id);
                        return Ok(Err(EXIT_PROBLEMS));
                    }
                };
                writeln!(err, "{}", crate::web::url_line(&page.url))?;
                crate::web::write_url_file(&page.url);
                Some(page)
            }
            _ => None,
        };
        let Some((_, mut events)) = streams.recv().await else {
            return Ok(Ok(None));
        };
        let mut printer = Printer::new(out);
        let mut finished = None;
        let mut cancelling = false;
        // The subagents' events, each with the name its lines start with.
        let (child_tx, mut child_events) = mpsc::unbounded_channel::<(String, TaskEvent)>();
        loop {
            let (child, event) = tokio::select! {
                event = events.recv() => (None, event),
                Some((child_id, mut stream)) = streams.recv() => {
                    let name = tasks
                        .handle(&child_id)
                        .and_then(|h| h.snapshot().subagent)
                        .map_or(child_id, |of| if of.name == of.profile {
                            of.profile.clone()
                        } else {
                            format!("{}:{}", of.profile, of.name)
                        });
                    let tx = child_tx.clone();
                    tokio::spawn(async move {
                        while let Some(event) = stream.recv().await {
                            if tx.send((name.clone(), event)).is_err() {
                                break;
                            }
                        }
                    });
                    continue;
                }
                Some((name, event)) = child_events.recv() => (Some(name), Some(event)),
                _ = sigint.recv(), if !cancelling => {
                    cancelling = true;
                    printer.end_text()?;
                    writeln!(printer.out, "^C cancelling the task…")?;
                    if let Err(e) = tasks.cancel(&id) {
                        writeln!(printer.out, "rawko: {e}")?;
                    }
                    continue;
                }
            };
            let Some(event) = event else { break };
            if let TaskEvent::Approval(request) = event {
                printer.end_text()?;
                writeln!(printer.out, "{}", approval_line(&request))?;
                let answer = match approvals {
                    Approvals::Yes => {
                        writeln!(printer.out, "     allowed (--yes)")?;
                        ApprovalAnswer::AllowOnce
                    }
                    Approvals::Deny => {
                        writeln!(printer.out, "     denied")?;
                        ApprovalAnswer::RejectOnce
                    }
                    Approvals::Page => {
                        writeln!(printer.out, "     waiting for an answer in the web page")?;
                        ApprovalAnswer::NoApprover
                    }
                    Approvals::Ask => match &mut lines {
                        None => ask(printer.out)?,
                        Some(lines) => {
                            let mut request = request;
                            match ask_or_page(printer.out, lines, &mut request.reply).await? {
                                Some(answer) => {
                                    let _ = request.reply.send(answer);
                                }
                                None => writeln!(printer.out, "     answered in the web page")?,
                            }
                            continue;
                        }
                    },
                };
                let _ = request.reply.send(answer);
                continue;
            }
            if let Some(name) = child {
                printer.subagent(&name, event)?;
                continue;
            }
            if let TaskEvent::Finished { outcome, .. } = &event {
                finished = Some(*outcome);
            }
            printer.show(event)?;
        }
        // The session ends: AutoAgent's Stop hooks, then the session file.
        let status = match (finished, cancelling) {
            (_, true) => SessionStatus::Interrupted,
            (Some(Outcome::Complete), _) => SessionStatus::Completed,
            (Some(Outcome::Cancelled), _) => SessionStatus::Interrupted,
            _ => SessionStatus::Failed,
        };
        let stop = tasks.end_session(Some(status)).await;
        for note in &stop.notes {
            match note {
                crate::hooks::Note::Output(t) => writeln!(printer.out, "  🪝 {t}")?,
                crate::hooks::Note::Error(t) => writeln!(printer.out, "  ✗ {t}")?,
                crate::hooks::Note::ConfigError { text, .. } => printer.config_error(text)?,
            }
        }
        if let Some(reason) = stop.blocked.or(stop.halt) {
            writeln!(printer.out, "  ✗ Stop hook blocked termination: {reason}")?;
        }
        io::Result::Ok(Ok(finished))
    })?;
    Ok(match finished {
        Err(code) => code,
        Ok(Some(Outcome::Complete)) => EXIT_OK,
        Ok(Some(Outcome::Cancelled)) => EXIT_CANCELLED,
        Ok(_) => EXIT_PROBLEMS,
    })
}

/// The terminal's lines, read on a thread of their own (so a question can give way).
fn stdin_lines() -> mpsc::UnboundedReceiver<String> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Asks about a blocked call at the terminal until it is answered there (`Some`) or the question
/// is withdrawn because the page answered it or the task stopped waiting (`None`).
async fn ask_or_page(
    out: &mut dyn io::Write,
    lines: &mut mpsc::UnboundedReceiver<String>,
    reply: &mut tokio::sync::oneshot::Sender<ApprovalAnswer>,
) -> io::Result<Option<ApprovalAnswer>> {
    loop {
        write!(
            out,
            "     [a]llow once, allow al[w]ays, [d]eny, deny al[l]ways (or answer in the web page)? "
        )?;
        out.flush()?;
        let line = tokio::select! {
            line = lines.recv() => line,
            () = reply.closed() => {
                writeln!(out)?;
                return Ok(None);
            }
        };
        let Some(line) = line else {
            writeln!(out)?;
            return Ok(Some(ApprovalAnswer::Cancelled));
        };
        if let Some(answer) = super::terminal::answer_of(&line) {
            return Ok(Some(answer));
        }
    }
}

/// A sink for a face that runs one task: the task's event stream comes out of the receiver.
pub(super) fn one_stream() -> (Sink, mpsc::UnboundedReceiver<crate::engine::EventReceiver>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let sink: Sink = Arc::new(move |_, events| {
        let _ = tx.send(events);
    });
    (sink, rx)
}

/// A sink for `rawko run`: the task's stream first, then its subagents', each with its id.
fn task_streams() -> (
    Sink,
    mpsc::UnboundedReceiver<(String, crate::engine::EventReceiver)>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let sink: Sink = Arc::new(move |id, events| {
        let _ = tx.send((id, events));
    });
    (sink, rx)
}

/// The one place the CLI turns a task-service error into what the user sees and the exit status.
pub(super) fn task_error(err: &mut dyn io::Write, e: &TaskError) -> io::Result<ExitCode> {
    match e {
        TaskError::UnknownTask(m) => {
            writeln!(err, "error: {m}; `rawko tasks list` shows the tasks")?;
        }
        other => writeln!(err, "error: {other}")?,
    }
    Ok(match e {
        TaskError::Invalid(_) => EXIT_USAGE,
        TaskError::UnknownAgent(_)
        | TaskError::UnknownWorkflow(_)
        | TaskError::UnknownTask(_)
        | TaskError::Conflict(_)
        | TaskError::CannotStart(_)
        | TaskError::Internal(_) => EXIT_PROBLEMS,
    })
}

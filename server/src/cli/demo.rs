//! `rawko demo`: a scripted agent runs the starter `feature` workflow on a tiny project, offline,
//! and the terminal shows what an editor would: the breadcrumb as it changes, the streamed text,
//! the tool calls, the blocked call and its approval, the countdown, the reminder, the completion.

use std::io::{self, BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::{init::STARTER_WORKFLOWS, Context, ExitCode, EXIT_OK, EXIT_PROBLEMS};
use crate::config::{self, Settings};
use crate::engine::{self, ApprovalAnswer, Outcome, OutputKind, TaskEvent, TaskSpec, TaskState};
use crate::provider::scripted::ScriptedProvider;
use crate::workflow::{default_roots, load};

const DEMO_FILES: &[(&str, &str)] = &[
    ("README.md", include_str!("../../starter/demo/README.md")),
    ("greet.sh", include_str!("../../starter/demo/greet.sh")),
    (
        ".rawko/demo-script.yaml",
        include_str!("../../starter/demo/script.yaml"),
    ),
];

/// How the demo runs.
pub struct DemoOptions {
    /// Ask the user about the blocked call instead of answering it.
    pub interactive: bool,
    /// A project directory to run in; a fresh temporary one otherwise.
    pub dir: Option<PathBuf>,
    /// The countdown tick (1 s; tests shorten it).
    pub tick: Duration,
}

fn fresh_dir() -> io::Result<PathBuf> {
    let base = std::env::temp_dir();
    for n in 0..1000u32 {
        let dir = base.join(format!("rawko-demo-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(
        "cannot find a free temporary directory name",
    ))
}

/// Writes the demo project; files that exist are kept (so a re-run shows the same thing on an
/// already edited project only if the user wants that: the default is a fresh directory).
fn prepare(dir: &Path) -> io::Result<()> {
    let workflows = STARTER_WORKFLOWS
        .iter()
        .map(|(rel, content)| (format!(".rawko/workflows/{rel}"), *content));
    let files = DEMO_FILES
        .iter()
        .map(|(rel, content)| ((*rel).to_owned(), *content));
    for (rel, content) in workflows.chain(files) {
        let path = dir.join(rel);
        if path.exists() {
            continue;
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, content)?;
    }
    Ok(())
}

pub fn demo(ctx: &mut Context<'_>, options: DemoOptions) -> io::Result<ExitCode> {
    let dir = match &options.dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)?;
            std::fs::canonicalize(dir)?
        }
        None => fresh_dir()?,
    };
    prepare(&dir)?;
    let outcome = load(&default_roots(&dir, ctx.env));
    if outcome.workflows.get("feature").is_none() {
        for d in &outcome.diagnostics {
            writeln!(ctx.err, "{d}")?;
        }
        writeln!(
            ctx.err,
            "error: the demo's \"feature\" workflow does not load in {}",
            dir.display()
        )?;
        return Ok(EXIT_PROBLEMS);
    }
    let script = dir.join(".rawko/demo-script.yaml");
    let provider = match ScriptedProvider::load(&script) {
        Ok(p) => p,
        Err(e) => {
            writeln!(ctx.err, "error: {e}")?;
            return Ok(EXIT_PROBLEMS);
        }
    };
    let (mut settings, _) = config::load(&[], None);
    settings.countdown_tick = options.tick;
    settings = Settings {
        approval_timeout: Duration::from_secs(600),
        ..settings
    };

    writeln!(
        ctx.out,
        "rawko demo: a scripted agent (no model, no network) runs the \"feature\" workflow in {}",
        dir.display()
    )?;
    writeln!(ctx.out)?;

    let shown_dir = dir.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let interactive = options.interactive;
    let out = &mut *ctx.out;
    let result = runtime.block_on(async move {
        let (handle, mut events) = engine::spawn(TaskSpec {
            id: engine::new_task_id(),
            description: "Add a --shout flag to greet.sh".to_owned(),
            workflow: Some("feature".to_owned()),
            workflows: Arc::new(outcome.workflows),
            agents: Arc::new(crate::agents::AgentSet::default()),
            provider: Box::new(provider),
            provider_spec: crate::provider::ProviderSpec {
                name: "scripted".to_owned(),
                script: Some(script),
                model: None,
            },
            arbiter: engine::ArbiterSetup::Deterministic,
            start_agent: None,
            workspace: dir.clone(),
            settings,
            store: None,
            resume: None,
            then: None,
        });
        let mut printer = Printer {
            out,
            in_text: false,
            last_crumb: String::new(),
            pending_header: None,
            context_shown: false,
        };
        let mut finished = None;
        while let Some(event) = events.recv().await {
            if let TaskEvent::Approval(request) = event {
                printer.end_text()?;
                writeln!(
                    printer.out,
                    "  🔒 {} is blocked in the {} phase",
                    request.tool, request.phase
                )?;
                let answer = if interactive {
                    ask(printer.out)?
                } else {
                    writeln!(
                        printer.out,
                        "     auto-answered: deny (run `rawko demo --interactive` to choose)"
                    )?;
                    ApprovalAnswer::RejectOnce
                };
                let _ = request.reply.send(answer);
                continue;
            }
            if let TaskEvent::Finished { outcome, .. } = &event {
                finished = Some(*outcome);
            }
            printer.show(event)?;
        }
        drop(handle);
        io::Result::Ok(finished)
    })?;
    writeln!(ctx.out)?;
    writeln!(
        ctx.out,
        "the project the agent worked on is in {}",
        shown_dir.display()
    )?;
    Ok(if result == Some(Outcome::Complete) {
        EXIT_OK
    } else {
        EXIT_PROBLEMS
    })
}

/// Asks about the blocked call on the terminal.
fn ask(out: &mut dyn Write) -> io::Result<ApprovalAnswer> {
    let stdin = io::stdin();
    loop {
        write!(
            out,
            "     [a]llow once, allow al[w]ays, [d]eny, deny al[l]ways? "
        )?;
        out.flush()?;
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            writeln!(out)?;
            return Ok(ApprovalAnswer::Cancelled);
        }
        match line.trim() {
            "a" | "allow" => return Ok(ApprovalAnswer::AllowOnce),
            "w" | "always" => return Ok(ApprovalAnswer::AllowAlways),
            "d" | "deny" | "" => return Ok(ApprovalAnswer::RejectOnce),
            "l" => return Ok(ApprovalAnswer::RejectAlways),
            _ => {}
        }
    }
}

/// Renders events as terminal lines.
struct Printer<'a> {
    out: &'a mut dyn Write,
    in_text: bool,
    last_crumb: String,
    /// A new phase's header, shown before the next line that belongs to the new phase (the
    /// result of the `workflow_step` call that moved still belongs to the old one).
    pending_header: Option<String>,
    /// Whether the current phase's context injection was shown (once per phase is enough).
    context_shown: bool,
}

fn first_line(text: &str) -> String {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let rest = lines.count();
    if rest > 0 {
        format!(
            "{first} (+{rest} more line{})",
            if rest == 1 { "" } else { "s" }
        )
    } else {
        first.to_owned()
    }
}

impl Printer<'_> {
    fn end_text(&mut self) -> io::Result<()> {
        if self.in_text {
            writeln!(self.out)?;
            self.in_text = false;
        }
        Ok(())
    }

    fn header(&mut self) -> io::Result<()> {
        if let Some(crumb) = self.pending_header.take() {
            self.end_text()?;
            writeln!(self.out)?;
            writeln!(self.out, "▶ {crumb}")?;
        }
        Ok(())
    }

    fn show(&mut self, event: TaskEvent) -> io::Result<()> {
        let belongs_to_old_phase = matches!(
            event,
            TaskEvent::Output {
                kind: OutputKind::ToolResult,
                ..
            } | TaskEvent::Status { .. }
        );
        if !belongs_to_old_phase {
            self.header()?;
        }
        match event {
            TaskEvent::Output {
                kind: OutputKind::AssistantDelta,
                text,
                ..
            } => {
                if !self.in_text {
                    write!(self.out, "  🤖 ")?;
                    self.in_text = true;
                }
                write!(self.out, "{text}")?;
                self.out.flush()?;
            }
            TaskEvent::Output {
                kind,
                text,
                is_error,
                ..
            } => {
                self.end_text()?;
                match kind {
                    OutputKind::ContextInjected => {
                        if !self.context_shown {
                            let lines = text.lines().count();
                            writeln!(
                                self.out,
                                "  🔄 phase context injected before each turn ({lines} lines)"
                            )?;
                            self.context_shown = true;
                        }
                    }
                    OutputKind::ToolCall => writeln!(self.out, "  🔧 {text}")?,
                    OutputKind::ToolResult => {
                        let mark = if is_error == Some(true) { "✗" } else { "↳" };
                        writeln!(self.out, "     {mark} {}", first_line(&text))?;
                    }
                    OutputKind::Reminder => {
                        writeln!(self.out, "  📣 reminder sent: {}", first_line(&text))?
                    }
                    OutputKind::Completion => {
                        writeln!(self.out)?;
                        for line in text.lines() {
                            writeln!(self.out, "{line}")?;
                        }
                    }
                    OutputKind::Error => writeln!(self.out, "  ⚠️  {text}")?,
                    OutputKind::HookOutput => writeln!(self.out, "  🪝 {text}")?,
                    OutputKind::AssistantDelta => {}
                }
            }
            TaskEvent::Status {
                state,
                text,
                reason,
                breadcrumb,
            } => {
                let crumb = text.split(" — ").next().unwrap_or_default().to_owned();
                if !breadcrumb.is_empty() && crumb != self.last_crumb && state == TaskState::Running
                {
                    self.pending_header = Some(crumb.clone());
                    self.context_shown = false;
                    self.last_crumb = crumb;
                }
                if let Some(reason) = reason.filter(|_| state == TaskState::Running) {
                    self.end_text()?;
                    writeln!(self.out, "     ({reason})")?;
                }
            }
            TaskEvent::Countdown { seconds_left, .. } => {
                self.end_text()?;
                writeln!(
                    self.out,
                    "  ⏳ the agent stopped early; auto-continuing in {seconds_left}s"
                )?;
            }
            TaskEvent::Finished { outcome, summary } => {
                self.header()?;
                self.end_text()?;
                if outcome != Outcome::Complete {
                    writeln!(self.out, "task {outcome:?}: {summary}")?;
                }
            }
            TaskEvent::Approval(_) => {}
        }
        Ok(())
    }
}

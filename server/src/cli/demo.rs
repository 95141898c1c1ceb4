//! `rawko demo`: a scripted agent runs the starter `feature` workflow on a tiny project, offline,
//! and the terminal shows what an editor would: the breadcrumb as it changes, the streamed text,
//! the tool calls, the blocked call and its approval, the countdown, the reminder, the tester
//! taking over from the developer, the completion.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::terminal::{approval_line, ask, Printer};
use super::{init::STARTER_WORKFLOWS, Context, ExitCode, EXIT_OK, EXIT_PROBLEMS};
use crate::engine::tasks::{Opening, Route, StartRequest, Tasks};
use crate::engine::{ApprovalAnswer, Outcome, TaskEvent};

const DEMO_FILES: &[(&str, &str)] = &[
    ("README.md", include_str!("../../starter/demo/README.md")),
    ("greet.sh", include_str!("../../starter/demo/greet.sh")),
    (
        ".rawko/demo-script.yaml",
        include_str!("../../starter/demo/script.yaml"),
    ),
    (
        ".rawko/agents/developer.yaml",
        include_str!("../../starter/demo/agents/developer.yaml"),
    ),
    (
        ".rawko/agents/tester.yaml",
        include_str!("../../starter/demo/agents/tester.yaml"),
    ),
];

/// The demo's copy of the starter workflows differs in one line: its Test phase is the
/// tester's, so the demo shows one agent handing the task to another.
fn demo_workflow_file(rel: &str, content: &str) -> String {
    if rel == "feature/test.md" {
        if let Some(at) = content.find("\ntools:") {
            let mut changed = content.to_owned();
            changed.insert_str(at, "\nagent: tester");
            return changed;
        }
    }
    content.to_owned()
}

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
    let workflows = STARTER_WORKFLOWS.iter().map(|(rel, content)| {
        (
            format!(".rawko/workflows/{rel}"),
            demo_workflow_file(rel, content),
        )
    });
    let files = DEMO_FILES
        .iter()
        .map(|(rel, content)| ((*rel).to_owned(), (*content).to_owned()));
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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (sink, mut streams) = super::run::one_stream();
    // The demo's own workflows and agents, no config file, no hooks, nothing stored: it shows
    // the same thing on every machine.
    let tick = options.tick;
    let opening = Opening::new(dir.clone(), ctx.env)
        .store(None)
        .route(Route::new(sink))
        .fixed(move |settings| {
            settings.countdown_tick = tick;
            settings.approval_timeout = Duration::from_secs(600);
        });
    let tasks = Tasks::open(opening).tasks;
    let outcome = runtime.block_on(tasks.load_workflows());
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
    let request = StartRequest {
        description: "Add a --shout flag to greet.sh".to_owned(),
        workflow: Some("feature".to_owned()),
        agent: Some("developer".to_owned()),
        script: Some(dir.join(".rawko/demo-script.yaml")),
        ..StartRequest::default()
    };

    writeln!(
        ctx.out,
        "rawko demo: a scripted agent (no model, no network) runs the \"feature\" workflow in {}",
        dir.display()
    )?;
    writeln!(ctx.out)?;

    let shown_dir = dir.clone();
    let interactive = options.interactive;
    let (out, err) = (&mut *ctx.out, &mut *ctx.err);
    let result = runtime.block_on(async move {
        let handle = match tasks.start(request).await {
            Ok(started) => started.handle,
            Err(e) => return Ok(Err(super::run::task_error(err, &e)?)),
        };
        let Some(mut events) = streams.recv().await else {
            return Ok(Ok(None));
        };
        let mut printer = Printer::new(out);
        let mut finished = None;
        while let Some(event) = events.recv().await {
            if let TaskEvent::Approval(request) = event {
                printer.end_text()?;
                writeln!(printer.out, "{}", approval_line(&request))?;
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
        io::Result::Ok(Ok(finished))
    })?;
    let result = match result {
        Ok(finished) => finished,
        Err(code) => return Ok(code),
    };
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

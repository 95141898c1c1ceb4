//! `rawko run "TASK"`: the task flow headless, in a terminal. The streamed text, a line per phase
//! and state change, approvals asked at the terminal (or answered by `--yes` / `--deny`), Ctrl-C
//! cancels cleanly. Exit status 0 complete, 1 failed, 130 cancelled. `--resume ID` continues a task
//! from the task store.

use std::io::{self, IsTerminal};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::terminal::{ask, Printer};
use super::{Context, ExitCode, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE};
use crate::agents;
use crate::config::{self, Settings};
use crate::engine::{
    self, ApprovalAnswer, ArbiterSetup, Outcome, TaskCommand, TaskEvent, TaskSpec,
};
use crate::hooks::session::{SessionRecorder, SessionStatus};
use crate::machine::MachineConfig;
use crate::provider::ProviderSpec;
use crate::store;
use crate::workflow::{default_roots, load, Show};

/// Exit status of a cancelled task (128 + SIGINT, as shells report Ctrl-C).
pub const EXIT_CANCELLED: ExitCode = 130;

/// How blocked tool calls are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approvals {
    /// Ask at the terminal (deny, and say so, when there is none).
    Ask,
    Yes,
    Deny,
}

pub struct RunOptions {
    pub task: Option<String>,
    pub workflow: Option<String>,
    pub agent: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub script: Option<PathBuf>,
    pub base_url: Option<String>,
    pub approvals: Approvals,
    pub resume: Option<String>,
}

fn settings_for(
    workspace: &Path,
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    err: &mut dyn io::Write,
) -> io::Result<Settings> {
    let (settings, problems) = config::load(&config::config_files(workspace, env), None);
    for p in problems {
        writeln!(err, "warning: config {p}")?;
    }
    Ok(settings)
}

/// Whether the workspace's hooks may run: asked at the terminal when the workspace is not trusted
/// yet; without a terminal they do not run, and rawko says so.
fn workspace_trusted(
    settings: &Settings,
    workspace: &Path,
    env: &dyn Fn(&str) -> Option<std::ffi::OsString>,
    out: &mut dyn io::Write,
    err: &mut dyn io::Write,
) -> io::Result<bool> {
    use crate::hooks::trust::{self, Trust};
    let store = trust::store_path(env);
    let section = settings.workspace_hooks.as_ref();
    let state = trust::check(store.as_deref(), workspace, section);
    if matches!(state, Trust::NoHooks | Trust::Trusted) {
        return Ok(true);
    }
    let lines = crate::hooks::workspace_hook_lines(&settings.hooks);
    if !io::stdin().is_terminal() {
        writeln!(
            err,
            "note: the hooks in {} do not run: {} (`rawko trust` trusts it)",
            settings.workspace_hook_files_text(workspace),
            if state == Trust::Changed {
                "they changed since you trusted this workspace"
            } else {
                "this workspace is not trusted"
            }
        )?;
        return Ok(false);
    }
    writeln!(
        out,
        "{} {} hooks{}:",
        settings.workspace_hook_files_text(workspace),
        if settings.workspace_hook_files.len() > 1 {
            "define"
        } else {
            "defines"
        },
        if state == Trust::Changed {
            " that changed since you trusted it"
        } else {
            ""
        }
    )?;
    for l in &lines {
        writeln!(out, "  {l}")?;
    }
    write!(out, "Trust this workspace and run its hooks? [y/N] ")?;
    out.flush()?;
    let mut line = String::new();
    io::stdin().read_line(&mut line)?;
    let yes = matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes");
    if yes {
        if let (Some(store), Some(section)) = (store, section) {
            if let Err(e) = trust::record(&store, workspace, section) {
                writeln!(err, "warning: cannot record the trust: {e}")?;
            }
        }
    } else {
        writeln!(out, "The workspace's hooks do not run this time.")?;
    }
    Ok(yes)
}

pub fn run(ctx: &mut Context<'_>, options: RunOptions) -> io::Result<ExitCode> {
    let settings = settings_for(&ctx.workspace, ctx.env, ctx.err)?;
    let trusted = workspace_trusted(&settings, &ctx.workspace, ctx.env, ctx.out, ctx.err)?;
    crate::provider::failover::set_default_cooldown(settings.rate_limit_cooldown);
    let store_dir = store::state_dir(ctx.env);
    let workspace = ctx.workspace.clone();
    let agents = agents::load(&agents::default_roots(&workspace, ctx.env)).agents;
    let outcome = load(&default_roots(&workspace, ctx.env));

    let spec = if let Some(id) = &options.resume {
        let Some(dir) = &store_dir else {
            writeln!(ctx.err, "error: no state directory (set XDG_STATE_HOME or HOME), so there is nothing to resume")?;
            return Ok(EXIT_PROBLEMS);
        };
        let task_dir = store::TaskFiles::dir_of(dir, id);
        if id.contains('/') || !task_dir.join("events.jsonl").is_file() {
            writeln!(
                ctx.err,
                "error: unknown task \"{id}\"; `rawko tasks list` shows the tasks"
            )?;
            return Ok(EXIT_PROBLEMS);
        }
        let config = MachineConfig {
            max_iterations: settings.max_iterations,
            max_failures: settings.max_failures,
            default_agent: settings.default_agent.clone(),
        };
        let (files, replay) = match engine::load_replay(&task_dir, &config) {
            Ok(r) => r,
            Err(e) => {
                writeln!(ctx.err, "error: cannot resume task \"{id}\": {e}")?;
                return Ok(EXIT_PROBLEMS);
            }
        };
        if let Some((outcome, _)) = &replay.finished {
            writeln!(
                ctx.err,
                "error: task \"{id}\" has already finished ({outcome})"
            )?;
            return Ok(EXIT_PROBLEMS);
        }
        let provider = match replay
            .provider
            .build_with(&|name| settings.api_keys.get(name))
        {
            Ok(p) => p,
            Err(e) => {
                writeln!(ctx.err, "error: cannot resume task \"{id}\": {e}")?;
                return Ok(EXIT_PROBLEMS);
            }
        };
        let arbiter = match &replay.arbiter {
            None => ArbiterSetup::Deterministic,
            Some(spec) => match spec.build_with(&|name| settings.api_keys.get(name)) {
                Ok(provider) => ArbiterSetup::Model {
                    provider,
                    spec: spec.clone(),
                },
                Err(e) => {
                    writeln!(ctx.err, "error: cannot resume the arbiter: {e}")?;
                    return Ok(EXIT_PROBLEMS);
                }
            },
        };
        writeln!(ctx.out, "resuming task {id}: {}", replay.description)?;
        TaskSpec {
            id: replay.task_id.clone(),
            description: replay.description.clone(),
            workflow: replay.workflow_key.clone(),
            workflows: Arc::new(outcome.workflows),
            agents: Arc::new(agents),
            provider,
            provider_spec: replay.provider.clone(),
            arbiter,
            start_agent: replay.agent.clone(),
            workspace: replay.workspace.clone(),
            settings,
            store: store_dir,
            resume: Some((files, replay)),
            then: None,
            hooks: Arc::new(crate::hooks::Hooks::none(workspace.clone())),
            session: None,
            external: None,
        }
    } else {
        let Some(task) = options
            .task
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
        else {
            writeln!(
                ctx.err,
                "error: say what the task is: rawko run \"TASK\" (or --resume ID)"
            )?;
            return Ok(EXIT_USAGE);
        };
        let workflow = match options.workflow.as_deref() {
            None => None,
            Some(key) => match outcome.workflows.find(key) {
                Some(def) if def.show == Show::User => Some(def.key.clone()),
                Some(_) => {
                    writeln!(ctx.err, "error: workflow \"{key}\" is a subworkflow that can only run as part of another workflow")?;
                    return Ok(EXIT_PROBLEMS);
                }
                None => {
                    let known: Vec<&str> = outcome
                        .workflows
                        .iter()
                        .filter(|d| d.show == Show::User)
                        .map(|d| d.key.as_str())
                        .collect();
                    writeln!(
                        ctx.err,
                        "error: unknown workflow \"{key}\"; available: {}",
                        if known.is_empty() {
                            "none (`rawko init` writes a starter)".to_owned()
                        } else {
                            known.join(", ")
                        }
                    )?;
                    return Ok(EXIT_PROBLEMS);
                }
            },
        };
        if let Some(agent) = &options.agent {
            if agent != engine::arbiter::DEFAULT_AGENT && agents.get(agent).is_none() {
                let mut names: Vec<&str> = agents.names().collect();
                names.push(engine::arbiter::DEFAULT_AGENT);
                writeln!(
                    ctx.err,
                    "error: unknown agent \"{agent}\"; the agents are {}",
                    names.join(", ")
                )?;
                return Ok(EXIT_PROBLEMS);
            }
        }
        let provider_spec = match provider_spec(&options, &workspace, &settings) {
            Ok(s) => s,
            Err(e) => {
                writeln!(ctx.err, "error: {e}")?;
                return Ok(EXIT_USAGE);
            }
        };
        let provider = match provider_spec.build_with(&|name| settings.api_keys.get(name)) {
            Ok(p) => p,
            Err(e) => {
                writeln!(ctx.err, "error: {e}")?;
                return Ok(EXIT_PROBLEMS);
            }
        };
        let arbiter = match &settings.arbiter {
            None => ArbiterSetup::Deterministic,
            Some(spec) => {
                let mut spec = spec.clone();
                if let Some(script) = &spec.script {
                    spec.script = Some(workspace.join(script));
                }
                match spec.build_with(&|name| settings.api_keys.get(name)) {
                    Ok(provider) => ArbiterSetup::Model { provider, spec },
                    Err(e) => {
                        writeln!(ctx.err, "error: the model arbiter cannot start: {e}")?;
                        return Ok(EXIT_PROBLEMS);
                    }
                }
            }
        };
        TaskSpec {
            id: engine::new_task_id(),
            description: task.to_owned(),
            workflow,
            workflows: Arc::new(outcome.workflows),
            agents: Arc::new(agents),
            provider,
            provider_spec,
            arbiter,
            start_agent: options.agent.clone(),
            workspace: workspace.clone(),
            settings,
            store: store_dir,
            resume: None,
            then: None,
            hooks: Arc::new(crate::hooks::Hooks::none(workspace.clone())),
            session: None,
            external: None,
        }
    };
    let mut spec = spec;
    let session = store_dir_for_session(ctx.env).and_then(|dir| {
        let args: Vec<String> = std::env::args().skip(1).collect();
        match SessionRecorder::start(
            &dir,
            &workspace,
            "run",
            args,
            Some(spec.provider_spec.name.clone()),
        ) {
            Ok(r) => Some(Arc::new(r)),
            Err(e) => {
                tracing::warn!("cannot record the session: {e}");
                None
            }
        }
    });
    let hooks = Arc::new(crate::hooks::Hooks::new(
        spec.settings.hooks_to_run(trusted),
        session.as_ref().map(|s| s.id()).unwrap_or_default(),
        workspace.clone(),
    ));
    spec.hooks = hooks.clone();
    spec.session = session.clone();

    let approvals = match options.approvals {
        Approvals::Ask if !io::stdin().is_terminal() => {
            writeln!(
                ctx.err,
                "note: no terminal to ask on, so blocked tool calls are denied (pass --yes to allow them)"
            )?;
            Approvals::Deny
        }
        other => other,
    };
    let task_id = spec.id.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let out = &mut *ctx.out;
    let finished = runtime.block_on(async move {
        // Listen for Ctrl-C before anything is shown, and keep one listener for the whole run,
        // so an interrupt that comes early or between two events is not lost.
        let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        writeln!(out, "task {task_id}")?;
        out.flush()?;
        let (handle, mut events) = engine::spawn(spec);
        let mut printer = Printer::new(out);
        let mut finished = None;
        let mut cancelling = false;
        loop {
            let event = tokio::select! {
                event = events.recv() => event,
                _ = sigint.recv(), if !cancelling => {
                    cancelling = true;
                    printer.end_text()?;
                    writeln!(printer.out, "^C cancelling the task…")?;
                    let _ = handle.send(TaskCommand::Cancel);
                    continue;
                }
            };
            let Some(event) = event else { break };
            if let TaskEvent::Approval(request) = event {
                printer.end_text()?;
                writeln!(
                    printer.out,
                    "  🔒 {} is blocked in the {} phase: {}",
                    request.tool,
                    request.phase,
                    request.reason.lines().next().unwrap_or_default()
                )?;
                let answer = match approvals {
                    Approvals::Yes => {
                        writeln!(printer.out, "     allowed (--yes)")?;
                        ApprovalAnswer::AllowOnce
                    }
                    Approvals::Deny => {
                        writeln!(printer.out, "     denied")?;
                        ApprovalAnswer::RejectOnce
                    }
                    Approvals::Ask => ask(printer.out)?,
                };
                let _ = request.reply.send(answer);
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
        let snapshot = session.as_ref().and_then(|s| s.snapshot());
        let stop = crate::hooks::session_stop(&hooks, snapshot.as_ref(), status.as_str()).await;
        let mut error = None;
        for note in &stop.notes {
            match note {
                crate::hooks::Note::Output(t) => writeln!(printer.out, "  🪝 {t}")?,
                note @ (crate::hooks::Note::Error(_) | crate::hooks::Note::ConfigError { .. }) => {
                    writeln!(printer.out, "  ✗ {}", note.text())?
                }
            }
        }
        let mut status = status;
        if let Some(reason) = stop.blocked.or(stop.halt) {
            writeln!(printer.out, "  ✗ Stop hook blocked termination: {reason}")?;
            error = Some(format!("Stop hook blocked termination: {reason}"));
            status = SessionStatus::Failed;
        }
        if let Some(s) = &session {
            s.end(status, error);
        }
        io::Result::Ok(finished)
    })?;
    Ok(match finished {
        Some(Outcome::Complete) => EXIT_OK,
        Some(Outcome::Cancelled) => EXIT_CANCELLED,
        _ => EXIT_PROBLEMS,
    })
}

fn store_dir_for_session(env: &dyn Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    store::state_dir(env)
}

/// The provider from the flags, completed from the configured providers.
fn provider_spec(
    options: &RunOptions,
    workspace: &Path,
    settings: &Settings,
) -> Result<ProviderSpec, String> {
    let request = crate::provider::ProviderRequest {
        name: options.provider.as_deref(),
        model: options.model.as_deref(),
        script: options.script.as_deref(),
        base_url: options.base_url.as_deref(),
    };
    crate::provider::resolve_spec(&request, &settings.providers, workspace)
}

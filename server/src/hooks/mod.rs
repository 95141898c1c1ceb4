//! Hooks: the user's commands (and the built-in git hooks) run at every lifecycle point of a task
//! and of a session, compatible with AutoAgent's hooks and Claude Code's.
//!
//! A command hook gets the event as JSON on stdin, with AutoAgent's field names (`eventName`,
//! `sessionId`, `workspace`, `timestamp`, the event's data) and, for the events Claude Code knows,
//! Claude Code's too (`hook_event_name`, `session_id`, `cwd`, `tool_name`, …), so existing hook
//! scripts run unchanged. Exit 0 is success, exit 2 blocks where blocking makes sense (with stderr
//! as the reason), other codes are errors shown to the user; JSON on stdout is honoured in either
//! tool's format. See docs/hooks.md.

mod answer;
pub mod config;
pub mod envfile;
pub mod filter;
pub mod git;
pub mod http;
pub mod process;
pub mod session;
pub mod template;
pub mod trust;

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{json, Map, Value};

pub use config::{Dialect, Hook, HookAction, HookProblem, HookSource, Matcher};
pub use template::{TemplateValue, Vars};

use crate::clip::clip_bytes;
use answer::{interpret, secs};
use process::Exit;

/// Every lifecycle point a hook can run at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HookEvent {
    // AutoAgent's: an "execution" is a task.
    PreExecutionStart,
    PostExecutionStart,
    PreExecutionEnd,
    PostExecutionEnd,
    /// AutoAgent's end of the session, or (in Claude Code's format) the agent ending its turn.
    Stop,
    // Claude Code's.
    SessionStart,
    UserPromptSubmit,
    PreToolUse,
    PostToolUse,
    SessionEnd,
    // rawko's own.
    PhaseEnter,
    PhaseExit,
    WorkflowComplete,
    ApprovalRequested,
    ApprovalResolved,
}

impl HookEvent {
    pub const ALL: [HookEvent; 15] = [
        Self::PreExecutionStart,
        Self::PostExecutionStart,
        Self::PreExecutionEnd,
        Self::PostExecutionEnd,
        Self::Stop,
        Self::SessionStart,
        Self::UserPromptSubmit,
        Self::PreToolUse,
        Self::PostToolUse,
        Self::SessionEnd,
        Self::PhaseEnter,
        Self::PhaseExit,
        Self::WorkflowComplete,
        Self::ApprovalRequested,
        Self::ApprovalResolved,
    ];

    /// Every event in the order a task meets them: its start (PreExecutionStart, SessionStart,
    /// the first prompt, the first phase, PostExecutionStart), each tool call (PreToolUse, the
    /// approval of a blocked one, PostToolUse), a phase's end, the agent's turn ending (Stop), the
    /// workflow's end and the task's (PreExecutionEnd, PostExecutionEnd, SessionEnd). AutoAgent's
    /// `Stop` (the end of the whole session) runs last of all; it shares the name with Claude
    /// Code's end of a turn, listed where that one runs.
    pub const LIFECYCLE: [HookEvent; 15] = [
        Self::PreExecutionStart,
        Self::SessionStart,
        Self::UserPromptSubmit,
        Self::PhaseEnter,
        Self::PostExecutionStart,
        Self::PreToolUse,
        Self::ApprovalRequested,
        Self::ApprovalResolved,
        Self::PostToolUse,
        Self::PhaseExit,
        Self::Stop,
        Self::WorkflowComplete,
        Self::PreExecutionEnd,
        Self::PostExecutionEnd,
        Self::SessionEnd,
    ];

    /// The event's place in [`HookEvent::LIFECYCLE`].
    pub fn lifecycle_rank(self) -> usize {
        Self::LIFECYCLE
            .iter()
            .position(|e| *e == self)
            .unwrap_or(usize::MAX)
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::PreExecutionStart => "PreExecutionStart",
            Self::PostExecutionStart => "PostExecutionStart",
            Self::PreExecutionEnd => "PreExecutionEnd",
            Self::PostExecutionEnd => "PostExecutionEnd",
            Self::Stop => "Stop",
            Self::SessionStart => "SessionStart",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::SessionEnd => "SessionEnd",
            Self::PhaseEnter => "PhaseEnter",
            Self::PhaseExit => "PhaseExit",
            Self::WorkflowComplete => "WorkflowComplete",
            Self::ApprovalRequested => "ApprovalRequested",
            Self::ApprovalResolved => "ApprovalResolved",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.name() == name)
    }

    /// Whether exit 2 (or a block decision) stops what the event is about.
    pub fn can_block(self) -> bool {
        matches!(
            self,
            Self::PreExecutionStart
                | Self::PreExecutionEnd
                | Self::PreToolUse
                | Self::UserPromptSubmit
                | Self::Stop
        )
    }

    /// Whether Claude Code knows the event, so its input carries Claude Code's field names too.
    pub fn claude_shaped(self) -> bool {
        matches!(
            self,
            Self::SessionStart
                | Self::UserPromptSubmit
                | Self::PreToolUse
                | Self::PostToolUse
                | Self::Stop
                | Self::SessionEnd
        )
    }
}

/// One firing of an event: what the hooks are told.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub event: HookEvent,
    /// What matchers are compared with: the tool name, the session's source, the phase name.
    pub subject: Option<String>,
    /// The event's data, put into the JSON on stdin beside the common fields.
    pub fields: Map<String, Value>,
    /// The `{{var}}` values.
    pub vars: Vars,
    /// Only hooks written in this format run (the two meanings of `Stop`).
    pub only: Option<Dialect>,
    /// Claude Code's `CLAUDE_ENV_FILE` (SessionStart): each command hook gets a file of its own
    /// in this directory, `sessionstart-hook-<n>.sh`, to write `export NAME=value` lines to.
    pub env_dir: Option<PathBuf>,
}

impl Invocation {
    pub fn new(event: HookEvent) -> Self {
        Self {
            event,
            subject: None,
            fields: Map::new(),
            vars: Vars::new(),
            only: None,
            env_dir: None,
        }
    }

    pub fn subject(mut self, s: impl Into<String>) -> Self {
        self.subject = Some(s.into());
        self
    }

    pub fn field(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.fields.insert(key.to_owned(), value.into());
        self
    }

    pub fn var(mut self, key: &'static str, value: impl Into<TemplateValue>) -> Self {
        self.vars.insert(key, value.into());
        self
    }

    pub fn only(mut self, dialect: Dialect) -> Self {
        self.only = Some(dialect);
        self
    }

    pub fn env_dir(mut self, dir: PathBuf) -> Self {
        self.env_dir = Some(dir);
        self
    }
}

/// What the user should see from a hook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// What a hook printed, or a built-in hook's report (`hook_output`).
    Output(String),
    /// A hook failed without blocking: a non-zero exit, a crash, a timeout.
    Error(String),
    /// A hook could not run at all (exit 126/127, a command that cannot start): a configuration
    /// error, so a typo never switches a guard off unnoticed. `hook` tells which hook it is
    /// (its command), so a face can say it once however often the hook fires.
    ConfigError { hook: String, text: String },
}

impl Note {
    /// The note's text.
    pub fn text(&self) -> &str {
        match self {
            Self::Output(t) | Self::Error(t) | Self::ConfigError { text: t, .. } => t,
        }
    }
}

/// What the hooks of one event decided, together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dispatch {
    /// A hook blocked; the reason.
    pub blocked: Option<String>,
    /// A hook said `"continue": false`: everything stops and the user is told this.
    pub halt: Option<String>,
    /// A hook asked for the user's approval (`permissionDecision: ask`), with its reason.
    pub ask: Option<String>,
    /// A hook allowed the call (`permissionDecision: allow`, `decision: approve`).
    pub allowed: bool,
    /// The tool input a hook replaced (`updatedInput`).
    pub updated_input: Option<Value>,
    /// Text for the agent's context (`additionalContext`; plain output of SessionStart and
    /// UserPromptSubmit hooks).
    pub context: Vec<String>,
    pub notes: Vec<Note>,
    /// How many hooks ran.
    pub ran: usize,
}

impl Dispatch {
    pub fn config_errors(&self) -> Vec<&str> {
        self.notes
            .iter()
            .filter_map(|n| match n {
                Note::ConfigError { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// The hooks of a session, ready to run.
#[derive(Debug, Clone)]
pub struct Hooks {
    hooks: Vec<Hook>,
    pub session_id: String,
    pub workspace: PathBuf,
    /// What the agent may write (the workspace, a task's temp dir, the user's `allowWrite`
    /// paths): rawko's git follows no `.git` and pushes to no repository there.
    pub agent_writable: Vec<PathBuf>,
    /// Between SIGTERM and SIGKILL when a hook times out.
    pub kill_grace: Duration,
    /// The `once` hooks that ran (their place among all hooks). A task has hooks of its own, so
    /// this is once per task, Claude Code's session.
    once_ran: Arc<Mutex<HashSet<usize>>>,
}

impl Hooks {
    pub fn new(hooks: Vec<Hook>, session_id: impl Into<String>, workspace: PathBuf) -> Self {
        Self {
            hooks,
            session_id: session_id.into(),
            agent_writable: vec![workspace.clone()],
            workspace,
            kill_grace: process::KILL_GRACE,
            once_ran: Arc::default(),
        }
    }

    /// rawko's git for the workspace, with `timeout` per command.
    pub fn git(&self, timeout: Duration) -> crate::git::Git {
        crate::git::Git::new(&self.workspace)
            .agent_writable(self.agent_writable.clone())
            .timeout(timeout)
    }

    pub fn none(workspace: PathBuf) -> Self {
        Self::new(Vec::new(), "", workspace)
    }

    pub fn all(&self) -> &[Hook] {
        &self.hooks
    }

    /// The hooks that run for `inv`, with their place among all hooks: those of its event and
    /// dialect whose matcher and `if` match, less the `once` hooks that ran.
    fn selected<'a>(&'a self, inv: &'a Invocation) -> impl Iterator<Item = (usize, &'a Hook)> + 'a {
        self.hooks.iter().enumerate().filter(move |(i, h)| {
            h.event == inv.event
                && inv.only.is_none_or(|d| d == h.dialect)
                && h.matcher.matches(inv.subject.as_deref())
                && h.filter.as_ref().is_none_or(|rule| {
                    rule.matches(
                        inv.subject.as_deref(),
                        inv.fields.get("tool_input"),
                        &self.workspace,
                    )
                })
                && !(h.once && self.ran_once().contains(i))
        })
    }

    fn ran_once(&self) -> std::sync::MutexGuard<'_, HashSet<usize>> {
        self.once_ran.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether any hook would run for the invocation.
    pub fn any(&self, inv: &Invocation) -> bool {
        self.selected(inv).next().is_some()
    }

    /// Whether any hook may run for `event` with `subject` (in either dialect): checked before an
    /// invocation is built, which copies the task's and the call's fields (a tool call builds
    /// two, and most workspaces have no hook for them).
    pub fn wants(&self, event: HookEvent, subject: Option<&str>) -> bool {
        self.hooks
            .iter()
            .any(|h| h.event == event && h.matcher.matches(subject))
    }

    /// Runs the event's hooks in their configured order and puts their answers together. The
    /// first block (or `continue: false`) ends the chain; a replaced tool input is what the
    /// next hook sees.
    pub async fn dispatch(&self, inv: Invocation) -> Dispatch {
        let mut out = Dispatch::default();
        let hooks: Vec<(usize, &Hook)> = self.selected(&inv).collect();
        if hooks.is_empty() {
            return out;
        }
        let mut fields = inv.fields.clone();
        for (index, hook) in hooks {
            // A `once` hook is spent when it starts, whatever it answers.
            if hook.once && !self.ran_once().insert(index) {
                continue;
            }
            out.ran += 1;
            if hook.background {
                self.run_in_background(index, hook, &inv, &fields);
                continue;
            }
            self.run(index, hook, &inv, &fields, &mut out).await;
            if let Some(updated) = &out.updated_input {
                fields.insert("tool_input".to_owned(), updated.clone());
                fields.insert("toolInput".to_owned(), updated.clone());
            }
            if out.blocked.is_some() || out.halt.is_some() {
                break;
            }
        }
        out
    }

    /// Runs one hook and folds its answer into `out`.
    async fn run(
        &self,
        index: usize,
        hook: &Hook,
        inv: &Invocation,
        fields: &Map<String, Value>,
        out: &mut Dispatch,
    ) {
        let label = format!("{} hook {}", inv.event.name(), hook.label());
        match &hook.action {
            HookAction::Command(command) => {
                let input = self.input(inv, fields);
                let mut command = template::render_command(command, &inv.vars);
                if let Some(dir) = &inv.env_dir {
                    let file = dir.join(format!("sessionstart-hook-{index}.sh"));
                    command
                        .env
                        .push(("CLAUDE_ENV_FILE".to_owned(), file.display().to_string()));
                }
                let result = process::run(
                    &command.text,
                    &command.env,
                    &input,
                    &self.workspace,
                    hook.timeout,
                    self.kill_grace,
                )
                .await;
                tracing::debug!(hook = %label, exit = ?result.exit, elapsed = ?result.elapsed, "hook ran");
                interpret(inv, hook, &label, &result, out);
            }
            HookAction::Http(request) => {
                let started = std::time::Instant::now();
                let answer = http::post(request, self.input(inv, fields), hook.timeout, &|name| {
                    std::env::var(name).ok()
                })
                .await;
                tracing::debug!(hook = %label, ok = answer.is_ok(), elapsed = ?started.elapsed(), "hook ran");
                match answer {
                    // A 2xx answer is read as a command hook's stdout after exit 0.
                    Ok(answer) => {
                        let result = process::CommandResult {
                            exit: Exit::Code(0),
                            stdout: answer.body,
                            stderr: String::new(),
                            stdout_cut: answer.cut,
                            stderr_cut: 0,
                            elapsed: started.elapsed(),
                            left_running: false,
                        };
                        interpret(inv, hook, &label, &result, out);
                    }
                    Err(failure) => {
                        let why = match failure {
                            http::Failure::Status { status, body } => {
                                let body = body.trim();
                                if body.is_empty() {
                                    format!("{label} failed (HTTP {status})")
                                } else {
                                    format!(
                                        "{label} failed (HTTP {status}): {}",
                                        clip_bytes(body, 2000)
                                    )
                                }
                            }
                            http::Failure::Failed(e) => format!("{label} failed: {e}"),
                            http::Failure::TimedOut => format!(
                                "{label} timed out after {} and was stopped",
                                secs(hook.timeout)
                            ),
                        };
                        out.notes.push(Note::Error(why.clone()));
                        if hook.fail_closed {
                            out.blocked =
                                Some(format!("{why}; the hook is failClosed, so this blocks"));
                        }
                    }
                }
            }
            HookAction::GitCommit { .. } | HookAction::GitPush { .. }
                if inv.fields.get("success") == Some(&Value::Bool(false)) =>
            {
                // Never commit or push the work of a task that did not complete.
                out.notes.push(Note::Output(format!(
                    "{} skipped: the task did not complete",
                    hook.label()
                )));
            }
            HookAction::GitCommit { message, no_verify } => {
                let template = message
                    .clone()
                    .unwrap_or_else(|| "rawko: {{taskDescription}}".to_owned());
                let message = template::render_text(&template, &inv.vars);
                let o = git::commit(&self.git(hook.timeout), &message, *no_verify).await;
                out.notes.push(if o.ok {
                    Note::Output(o.message)
                } else {
                    Note::Error(o.message)
                });
            }
            HookAction::GitPush { remote } => {
                let o = git::push(&self.git(hook.timeout), remote).await;
                out.notes.push(if o.ok {
                    Note::Output(o.message)
                } else {
                    Note::Error(o.message)
                });
            }
        }
    }

    /// Claude Code's `async`: the hook runs on its own, the event goes on at once. What it
    /// answers is not read; what went wrong goes to the log.
    fn run_in_background(
        &self,
        index: usize,
        hook: &Hook,
        inv: &Invocation,
        fields: &Map<String, Value>,
    ) {
        let (me, hook, inv, fields) = (self.clone(), hook.clone(), inv.clone(), fields.clone());
        tokio::spawn(async move {
            let mut out = Dispatch::default();
            me.run(index, &hook, &inv, &fields, &mut out).await;
            for note in &out.notes {
                match note {
                    Note::Output(text) => tracing::info!("async {text}"),
                    Note::Error(text) | Note::ConfigError { text, .. } => {
                        tracing::warn!("async {text}")
                    }
                }
            }
        });
    }

    /// The JSON a command hook reads on stdin.
    fn input(&self, inv: &Invocation, fields: &Map<String, Value>) -> Vec<u8> {
        let mut m = Map::new();
        m.insert("eventName".into(), json!(inv.event.name()));
        m.insert("sessionId".into(), json!(self.session_id));
        m.insert(
            "workspace".into(),
            json!(self.workspace.display().to_string()),
        );
        m.insert("timestamp".into(), json!(crate::clock::now_millis()));
        if inv.event.claude_shaped() {
            m.insert("hook_event_name".into(), json!(inv.event.name()));
            m.insert("session_id".into(), json!(self.session_id));
            m.insert("cwd".into(), json!(self.workspace.display().to_string()));
            m.insert("permission_mode".into(), json!("default"));
        }
        for (k, v) in fields {
            m.insert(k.clone(), v.clone());
        }
        serde_json::to_vec_pretty(&Value::Object(m)).unwrap_or_default()
    }
}

/// AutoAgent's `Stop`: the session ends (`reason`: completed, failed or interrupted). Runs the
/// `Stop` hooks written in AutoAgent's format, with the session's counts.
pub async fn session_stop(
    hooks: &Hooks,
    session: Option<&session::Session>,
    reason: &str,
) -> Dispatch {
    let mut inv = Invocation::new(HookEvent::Stop)
        .only(Dialect::AutoAgent)
        .subject(reason)
        .field("reason", reason)
        .var("sessionId", hooks.session_id.clone())
        .var("workspace", hooks.workspace.display().to_string());
    if let Some(s) = session {
        let end = s.end_time.unwrap_or_else(crate::clock::now_millis);
        inv = inv
            .field("issuesCompleted", s.tasks.completed)
            .field("issuesFailed", s.tasks.failed)
            .field("totalIssues", s.tasks.planned)
            .field("tasksCompleted", s.tasks.completed)
            .field("tasksFailed", s.tasks.failed)
            .field("tasksPlanned", s.tasks.planned)
            .field("startTime", s.start_time)
            .field("endTime", end)
            .var("duration", (end - s.start_time).to_string());
    }
    hooks.dispatch(inv).await
}

/// The lines a trust prompt shows: the workspace's hooks.
pub fn workspace_hook_lines(all: &[Hook]) -> Vec<String> {
    all.iter()
        .filter(|h| h.source == HookSource::Workspace)
        .map(Hook::describe)
        .collect()
}

#[cfg(test)]
mod tests;

//! The task actor's side of hooks: what each event tells the hooks, and what the user sees of
//! their answers. Which event fires where is in the rest of actor/; what a hook's answer means is in
//! crate::hooks.

use std::sync::Arc;

use serde_json::{json, Value};

use super::{Control, Stop};
use crate::engine::{OutputKind, TaskState};
use crate::hooks::{Dispatch, HookEvent, Hooks, Invocation, Note, TemplateValue};

impl Control {
    /// An invocation of `event` with what every event of this task carries: the task, its
    /// workflow and phase, the provider, in AutoAgent's names (and its aliases) and Claude Code's.
    pub(super) fn invocation(&self, event: HookEvent) -> Invocation {
        let active = self
            .pos
            .workflow
            .as_ref()
            .and_then(|w| w.resolve(&self.pos.set));
        let workflow_key = self
            .pos
            .workflow
            .as_ref()
            .map(|w| w.workflow_key.clone())
            .unwrap_or_default();
        let (phase_id, phase_name) = active
            .as_ref()
            .map(|a| (a.current_phase.id.clone(), a.current_phase.name.clone()))
            .unwrap_or_default();
        let transcript = self
            .persist
            .files
            .as_ref()
            .map(|f| {
                f.dir()
                    .join(crate::engine::transcript::FILE_NAME)
                    .display()
                    .to_string()
            })
            .unwrap_or_default();
        Invocation::new(event)
            .field("taskId", self.id.clone())
            .field("taskDescription", self.description.clone())
            .field("issueNumber", self.id.clone())
            .field("issueTitle", self.description.clone())
            .field("issueFile", self.id.clone())
            .field("planFile", self.description.clone())
            .field("workflowKey", workflow_key.clone())
            .field("phaseId", phase_id.clone())
            .field("phaseName", phase_name.clone())
            .field("provider", self.provider_name.clone())
            // Claude Code's view: a rawko task is one conversation.
            .field("session_id", self.id.clone())
            .field("transcript_path", transcript)
            .var("sessionId", self.hooks.session_id.clone())
            .var("workspace", self.hooks.workspace.display().to_string())
            .var("taskId", self.id.clone())
            .var("taskDescription", self.description.clone())
            .var("issueNumber", self.id.clone())
            .var("issueTitle", self.description.clone())
            .var("issueFile", self.id.clone())
            .var("planFile", self.description.clone())
            .var("workflowKey", workflow_key)
            .var("phaseId", phase_id)
            .var("phaseName", phase_name)
            .var("provider", self.provider_name.clone())
    }

    /// The end-of-task values: success, duration and the files the task changed.
    pub(super) fn with_results(
        &self,
        inv: Invocation,
        success: bool,
        files: &[String],
    ) -> Invocation {
        let duration = crate::engine::now_millis() - self.started_at;
        inv.field("success", success)
            .field("duration", duration)
            .field("filesModified", json!(files))
            .var("success", if success { "true" } else { "false" })
            .var("duration", duration.to_string())
            .var("filesModified", TemplateValue::List(files.to_vec()))
    }

    /// Runs the hooks of `inv` to the end (the task waits; commands stay queued) and shows what
    /// they printed.
    pub(super) async fn fire(&mut self, inv: Invocation) -> Dispatch {
        if !self.hooks.any(&inv) {
            return Dispatch::default();
        }
        let event = inv.event;
        let hooks = self.hooks.clone();
        // A hook may read the log and the transcript: they are written first.
        self.durable().await;
        // Boxed: a task holds room for running hooks only while it runs them.
        let d = Box::pin(hooks.dispatch(inv)).await;
        self.show(event, &d);
        d
    }

    /// Runs the hooks of `inv` while serving commands, so a cancel or an interrupt ends the wait
    /// (and kills the hook).
    pub(super) async fn fire_waiting(&mut self, inv: Invocation) -> Result<Dispatch, Stop> {
        if !self.hooks.any(&inv) {
            return Ok(Dispatch::default());
        }
        let event = inv.event;
        let hooks: Arc<Hooks> = self.hooks.clone();
        // A hook may read the log and the transcript: they are written first.
        self.durable().await;
        let d = self.wait(Box::pin(dispatch(hooks, inv)), false).await?;
        self.show(event, &d);
        Ok(d)
    }

    /// Remembers an event whose hooks may run later (a phase change inside a step).
    pub(super) fn queue_hook(&mut self, inv: Invocation) {
        if self.hooks.any(&inv) {
            self.hook_state.queued.push(inv);
        }
    }

    /// Runs the hooks queued so far, in order.
    pub(super) async fn run_queued_hooks(&mut self) {
        while !self.hook_state.queued.is_empty() {
            let inv = self.hook_state.queued.remove(0);
            self.fire(inv).await;
        }
    }

    /// Shows a dispatch's notes in the output; a configuration error also goes into the status,
    /// once per task for each hook (a broken guard would otherwise say so at every call).
    fn show(&mut self, event: HookEvent, d: &Dispatch) {
        let mut first_config_error = None;
        for note in &d.notes {
            match note {
                Note::Output(text) => self.output(OutputKind::HookOutput, text.clone()),
                Note::Error(text) => self.output(OutputKind::Error, text.clone()),
                Note::ConfigError { hook, text } => {
                    if self.hook_state.config_errors_shown.insert(hook.clone()) {
                        let text = format!("hook configuration error: {text}");
                        self.output(OutputKind::Error, text.clone());
                        first_config_error.get_or_insert(text);
                    }
                }
            }
        }
        let mut detail = format!(
            "{}: {} hook{} ran",
            event.name(),
            d.ran,
            if d.ran == 1 { "" } else { "s" }
        );
        if let Some(b) = &d.blocked {
            detail.push_str(&format!("; blocked: {}", first_line(b)));
        }
        if let Some(h) = &d.halt {
            detail.push_str(&format!("; stopped: {}", first_line(h)));
        }
        self.record("hook", None, None, Some(detail));
        if let Some(reason) = first_config_error {
            let state = if self.state.is_finished() {
                TaskState::Running
            } else {
                self.state
            };
            self.set_status(state, Some(reason), "hook_config_error");
        }
    }
}

async fn dispatch(hooks: Arc<Hooks>, inv: Invocation) -> Dispatch {
    hooks.dispatch(inv).await
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

/// The result of a tool as Claude Code's `tool_response`.
pub(super) fn tool_response(content: &str, is_error: bool) -> Value {
    json!({"content": content, "isError": is_error, "success": !is_error})
}

impl Control {
    /// The hooks of a task's start: PreExecutionStart (a block fails the task), SessionStart,
    /// UserPromptSubmit on the first prompt (a block fails the task), the first PhaseEnter and
    /// PostExecutionStart. A resumed task runs SessionStart (source `resume`) only. Returns the
    /// context the hooks added.
    pub(super) async fn start_hooks(
        &mut self,
        prompt: &str,
        resumed: bool,
    ) -> Result<Vec<String>, String> {
        let mut context = Vec::new();
        if !resumed {
            let d = self
                .fire(self.invocation(HookEvent::PreExecutionStart))
                .await;
            if let Some(r) = d.blocked.or(d.halt) {
                return Err(format!(
                    "execution blocked by a PreExecutionStart hook: {r}"
                ));
            }
        }
        let source = if resumed { "resume" } else { "startup" };
        let mut inv = self
            .invocation(HookEvent::SessionStart)
            .subject(source)
            .field("source", source);
        if let Some(dir) = self.session_env_dir() {
            if self.hooks.any(&inv) {
                match std::fs::create_dir_all(&dir) {
                    Ok(()) => inv = inv.env_dir(dir),
                    Err(e) => self.output(
                        OutputKind::Error,
                        format!("cannot make {} for CLAUDE_ENV_FILE: {e}", dir.display()),
                    ),
                }
            }
        }
        context.extend(self.fire(inv).await.context);
        if resumed {
            return Ok(context);
        }
        let inv = self
            .invocation(HookEvent::UserPromptSubmit)
            .field("prompt", prompt);
        let d = self.fire(inv).await;
        if let Some(r) = d.blocked.or(d.halt) {
            return Err(format!(
                "the task's prompt was blocked by a UserPromptSubmit hook: {r}"
            ));
        }
        context.extend(d.context);
        if self.pos.workflow.is_some() {
            let inv = self.phase_invocation(HookEvent::PhaseEnter);
            self.fire(inv).await;
        }
        self.fire(self.invocation(HookEvent::PostExecutionStart))
            .await;
        Ok(context)
    }

    /// Where SessionStart hooks write their `CLAUDE_ENV_FILE`s: the task's directory (none for a
    /// task that is not stored).
    fn session_env_dir(&self) -> Option<std::path::PathBuf> {
        self.persist
            .files
            .as_ref()
            .map(|f| f.dir().join("session-env"))
    }

    /// The environment SessionStart hooks wrote to their `CLAUDE_ENV_FILE`s, for the task's Bash
    /// commands. The files are read, never run (see crate::hooks::envfile); what could not be read
    /// is shown, and so are the names set.
    pub(super) fn session_env(&mut self) -> crate::tools::BashEnv {
        let Some(dir) = self.session_env_dir() else {
            return Default::default();
        };
        let parsed = crate::hooks::envfile::read_dir(&dir, &|name| std::env::var(name).ok());
        for problem in &parsed.problems {
            self.output(OutputKind::Error, format!("CLAUDE_ENV_FILE: {problem}"));
        }
        let names = parsed.names();
        if !names.is_empty() {
            self.output(
                OutputKind::HookOutput,
                format!(
                    "CLAUDE_ENV_FILE: the task's Bash commands get {}",
                    names.join(", ")
                ),
            );
        }
        crate::tools::BashEnv(parsed.changes)
    }

    /// PhaseEnter or PhaseExit for the current phase; the phase name is what matchers see.
    pub(super) fn phase_invocation(&self, event: HookEvent) -> Invocation {
        let inv = self.invocation(event);
        let name = inv
            .fields
            .get("phaseName")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        inv.subject(name)
    }

    /// A user's message passes the UserPromptSubmit hooks: `Err` with the reason when a hook
    /// blocked it, else the message with the context the hooks added.
    pub(super) async fn submit_prompt(&mut self, text: String) -> Result<String, String> {
        let inv = self
            .invocation(HookEvent::UserPromptSubmit)
            .field("prompt", text.clone());
        let d = self.fire(inv).await;
        if let Some(r) = d.blocked.or(d.halt) {
            return Err(r);
        }
        Ok(with_context(text, &d.context))
    }

    /// The hooks of a task's end, before it is announced: PreExecutionEnd (a block keeps a task
    /// from completing), then PostExecutionEnd and SessionEnd. Returns the outcome, changed when
    /// a hook blocked the completion.
    pub(super) async fn end_hooks_before(
        &mut self,
        outcome: crate::engine::Outcome,
        summary: String,
    ) -> (crate::engine::Outcome, String, Vec<String>) {
        self.run_queued_hooks().await;
        let relevant = [
            HookEvent::PreExecutionEnd,
            HookEvent::PostExecutionEnd,
            HookEvent::SessionEnd,
        ]
        .iter()
        .any(|e| self.hooks.any(&Invocation::new(*e)));
        if !relevant {
            return (outcome, summary, Vec::new());
        }
        let mut files: std::collections::BTreeSet<String> = self.hook_state.files_modified.clone();
        files.extend(
            crate::hooks::git::changed_files(&self.hooks.git(std::time::Duration::from_secs(10)))
                .await,
        );
        let files: Vec<String> = files.into_iter().collect();
        let success = outcome == crate::engine::Outcome::Complete;
        let inv = self.with_results(self.invocation(HookEvent::PreExecutionEnd), success, &files);
        let d = self.fire(inv).await;
        if success {
            if let Some(r) = d.blocked.or(d.halt) {
                return (
                    crate::engine::Outcome::Failed,
                    format!("completion blocked by a PreExecutionEnd hook: {r}"),
                    files,
                );
            }
        }
        (outcome, summary, files)
    }

    /// PostExecutionEnd and SessionEnd, after the outcome is logged and before it is announced.
    pub(super) async fn end_hooks_after(
        &mut self,
        outcome: crate::engine::Outcome,
        files: &[String],
    ) {
        let success = outcome == crate::engine::Outcome::Complete;
        let inv = self.with_results(self.invocation(HookEvent::PostExecutionEnd), success, files);
        self.fire(inv).await;
        let reason = match outcome {
            crate::engine::Outcome::Complete => "complete",
            crate::engine::Outcome::Failed => "failed",
            crate::engine::Outcome::Cancelled => "cancelled",
        };
        let inv = self
            .with_results(self.invocation(HookEvent::SessionEnd), success, files)
            .subject(reason)
            .field("reason", reason);
        self.fire(inv).await;
    }

    /// The agent ended its turn: the Stop hooks (in Claude Code's format) may send it on. Returns
    /// the message to go on with when one blocked.
    pub(super) async fn stop_hooks(&mut self) -> Result<Option<String>, Stop> {
        let inv = self
            .invocation(HookEvent::Stop)
            .only(crate::hooks::Dialect::Claude)
            .field("stop_hook_active", self.not_done.stop_hook_active)
            .field("last_assistant_message", self.last_output.clone())
            .field("stopHookActive", self.not_done.stop_hook_active);
        if !self.hooks.any(&inv) {
            return Ok(None);
        }
        let d = self.fire_waiting(inv).await?;
        if let Some(halt) = d.halt {
            self.hook_state.halt_reason = Some(halt);
            return Err(Stop::Interrupt);
        }
        let reason = match (d.blocked, d.context.is_empty()) {
            (Some(r), _) => Some(with_context(r, &d.context)),
            (None, false) => Some(d.context.join("\n\n")),
            (None, true) => None,
        };
        self.not_done.stop_hook_active = reason.is_some();
        Ok(reason)
    }

    /// Write and Edit calls that succeeded name the files the task changed.
    pub(super) fn note_modified(&mut self, tool: &str, input: &Value, is_error: bool) {
        if is_error || !crate::workflow::tools::class_of(tool).writes_files() {
            return;
        }
        if let Some(path) = ["file_path", "path", "notebook_path"]
            .iter()
            .find_map(|k| input.get(*k).and_then(Value::as_str))
        {
            self.hook_state.files_modified.insert(path.to_owned());
        }
    }
}

/// `text` with hook context after it.
pub(super) fn with_context(mut text: String, context: &[String]) -> String {
    for c in context {
        text.push_str("\n\n");
        text.push_str(c);
    }
    text
}

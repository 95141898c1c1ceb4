//! The task actor: the agent loop with the phase gate, approvals, `workflow_step`, the countdown
//! and the not-done reminder. Every await point also listens for commands, so a cancel, an
//! interrupt or a step from the editor is handled at once whatever the task is doing.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::{
    now_millis, ApprovalAnswer, ApprovalRequest, Crumb, HistoryItem, Outcome, OutputKind,
    TaskCommand, TaskEvent, TaskSnapshot, TaskSpec, TaskState,
};
use crate::config::Settings;
use crate::provider::{Message, Provider, ToolCall, ToolDescription, ToolResult, TurnRequest};
use crate::tools::{self, ToolContext};
use crate::workflow::gate::{self, GateDecision};
use crate::workflow::step::{self, ResultType, StepAction};
use crate::workflow::texts;
use crate::workflow::{WorkflowSet, WorkflowState};

/// Why a wait ended early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Cancel,
    Interrupt,
    /// A user message arrived (only when the wait asked to stop for one).
    Message,
    /// A step from the editor changed the workflow (only when the wait asked to stop for one).
    Stepped,
}

/// How an agent run ended.
enum RunEnd {
    /// The model ended its turn without tool calls.
    Stopped,
    Interrupted,
    Cancelled,
    Failed(String),
}

/// The part of the actor that waits and reacts to commands: everything but the conversation
/// and the provider, which the awaited futures borrow.
struct Control {
    id: String,
    description: String,
    set: Arc<WorkflowSet>,
    workflow: Option<WorkflowState>,
    settings: Settings,
    events: mpsc::UnboundedSender<TaskEvent>,
    snapshot: Arc<Mutex<TaskSnapshot>>,
    commands: mpsc::UnboundedReceiver<TaskCommand>,
    state: TaskState,
    pending_messages: VecDeque<String>,
    always_allowed: HashSet<String>,
    always_rejected: HashSet<String>,
    reminders_in_row: u32,
}

pub(super) async fn run(
    spec: TaskSpec,
    snapshot: Arc<Mutex<TaskSnapshot>>,
    events: mpsc::UnboundedSender<TaskEvent>,
    commands: mpsc::UnboundedReceiver<TaskCommand>,
) {
    let TaskSpec {
        id,
        description,
        workflow,
        workflows,
        mut provider,
        workspace,
        settings,
    } = spec;
    let started_at = snapshot
        .lock()
        .map(|s| s.started_at)
        .unwrap_or_else(|_| now_millis());
    let mut ctl = Control {
        id: id.clone(),
        description: description.clone(),
        set: workflows,
        workflow: None,
        settings,
        events,
        snapshot,
        commands,
        state: TaskState::Running,
        pending_messages: VecDeque::new(),
        always_allowed: HashSet::new(),
        always_rejected: HashSet::new(),
        reminders_in_row: 0,
    };

    let mut first_message = description.clone();
    if let Some(key) = &workflow {
        match WorkflowState::start(&ctl.set, key, &description, &id, started_at) {
            Ok(state) => {
                if let Some(def) = ctl.set.get(&state.workflow_key) {
                    let initial = texts::initial_message(def, &ctl.set, &description);
                    if !initial.trim().is_empty() {
                        first_message = initial;
                    }
                }
                ctl.workflow = Some(state);
            }
            Err(e) => {
                ctl.finish(Outcome::Failed, format!("cannot start workflow: {e}"));
                return;
            }
        }
    }
    let tools = match ToolContext::new(&workspace) {
        Ok(mut tools) => {
            tools.bash_timeout = ctl.settings.bash_timeout;
            Arc::new(tools)
        }
        Err(e) => {
            ctl.finish(
                Outcome::Failed,
                format!("cannot use workspace {}: {e}", workspace.display()),
            );
            return;
        }
    };
    let mut conversation = Conversation {
        messages: vec![Message::User(first_message)],
        tools: tool_descriptions(),
    };
    ctl.set_status(TaskState::Running, None, "task started");

    let (outcome, summary) = ctl
        .main_loop(&mut conversation, provider.as_mut(), &tools)
        .await;
    ctl.finish(outcome, summary);
}

/// The conversation the provider continues.
struct Conversation {
    messages: Vec<Message>,
    tools: Vec<ToolDescription>,
}

impl Conversation {
    fn last_assistant_text(&self) -> Option<&str> {
        self.messages.iter().rev().find_map(|m| match m {
            Message::Assistant { text, .. } if !text.trim().is_empty() => Some(text.as_str()),
            _ => None,
        })
    }
}

fn tool_descriptions() -> Vec<ToolDescription> {
    let mut out: Vec<ToolDescription> = tools::specs()
        .into_iter()
        .map(|s| ToolDescription {
            name: s.name.to_owned(),
            description: s.description.to_owned(),
            input_schema: s.input_schema,
        })
        .collect();
    out.push(ToolDescription {
        name: step::TOOL_NAME.to_owned(),
        description: step::DESCRIPTION.to_owned(),
        input_schema: step::parameters_schema(),
    });
    out
}

/// A one-line summary of a tool call for the output panel.
fn summarize_call(call: &ToolCall) -> String {
    let pick = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| call.input.get(*k).and_then(Value::as_str))
            .map(|s| {
                let line = s.lines().next().unwrap_or_default();
                if line.chars().count() > 80 {
                    format!("{}…", line.chars().take(80).collect::<String>())
                } else {
                    line.to_owned()
                }
            })
    };
    match pick(&["path", "file_path", "command", "pattern", "action"]) {
        Some(arg) => format!("{} {arg}", call.name),
        None => call.name.clone(),
    }
}

impl Control {
    fn emit(&self, event: TaskEvent) {
        // The face may have gone (the editor closed); the task still runs to its end.
        let _ = self.events.send(event);
    }

    fn output(&self, kind: OutputKind, text: impl Into<String>) {
        self.emit(TaskEvent::Output {
            kind,
            text: text.into(),
            tool_call_id: None,
            tool: None,
            input: None,
            is_error: None,
        });
    }

    fn record(
        &self,
        event: &str,
        before: Option<TaskState>,
        after: Option<TaskState>,
        detail: Option<String>,
    ) {
        if let Ok(mut snap) = self.snapshot.lock() {
            let at = now_millis();
            snap.updated_at = at;
            snap.history.push(HistoryItem {
                at,
                event: event.to_owned(),
                state_before: before,
                state_after: after,
                detail,
            });
        }
    }

    /// The breadcrumb of the current position, and its text.
    fn breadcrumb(&self) -> (Vec<Crumb>, String) {
        let Some(active) = self.workflow.as_ref().and_then(|w| w.resolve(&self.set)) else {
            let text = match &self.workflow {
                Some(w) => self
                    .set
                    .get(&w.workflow_key)
                    .map_or_else(|| w.workflow_key.clone(), |d| d.name.clone()),
                None => self.description.clone(),
            };
            return (Vec::new(), text);
        };
        let crumbs = active
            .breadcrumb
            .iter()
            .map(|l| Crumb {
                name: l.name.to_owned(),
                phase_name: l.phase_name.to_owned(),
                emoji: l.emoji.to_owned(),
                index: l.index,
                total: l.total,
            })
            .collect();
        (crumbs, active.breadcrumb_text())
    }

    /// Announces the task's state. `text` is the status line; `reason` says why, when it matters.
    fn set_status(&mut self, state: TaskState, reason: Option<String>, event: &str) {
        let before = self.state;
        self.state = state;
        let (breadcrumb, crumb_text) = self.breadcrumb();
        let text = match state {
            TaskState::Running => crumb_text.clone(),
            TaskState::WaitingApproval => format!("{crumb_text} — waiting for approval"),
            TaskState::Countdown => format!("{crumb_text} — auto-continuing"),
            TaskState::Blocked => format!("{crumb_text} — interrupted; send a message to continue"),
            TaskState::Complete => format!("{crumb_text} — complete"),
            TaskState::Failed => format!("{crumb_text} — failed"),
            TaskState::Cancelled => format!("{crumb_text} — cancelled"),
        };
        if let Ok(mut snap) = self.snapshot.lock() {
            snap.state = state;
            snap.breadcrumb = breadcrumb.clone();
            snap.breadcrumb_text = crumb_text;
            snap.status_text = text.clone();
        }
        self.record(event, Some(before), Some(state), reason.clone());
        self.emit(TaskEvent::Status {
            state,
            breadcrumb,
            text,
            reason,
        });
    }

    /// Awaits `fut` while serving commands. Steps are answered at once; messages are queued
    /// (or end the wait, with `stop_for_user`); cancel and interrupt end the wait.
    async fn wait<T>(
        &mut self,
        fut: impl Future<Output = T>,
        stop_for_user: bool,
    ) -> Result<T, Stop> {
        tokio::pin!(fut);
        loop {
            tokio::select! {
                biased;
                command = self.commands.recv() => {
                    match command {
                        // Every handle is gone: nobody can see or steer the task any more.
                        None => return Err(Stop::Cancel),
                        Some(TaskCommand::Cancel) => return Err(Stop::Cancel),
                        Some(TaskCommand::Interrupt) => return Err(Stop::Interrupt),
                        Some(TaskCommand::SendMessage(text)) => {
                            self.record("message", None, None, Some(text.clone()));
                            self.pending_messages.push_back(text);
                            if stop_for_user {
                                return Err(Stop::Message);
                            }
                        }
                        Some(TaskCommand::Step { action, reply }) => {
                            let changed = self.user_step(action, reply);
                            if changed && stop_for_user {
                                return Err(Stop::Stepped);
                            }
                        }
                        Some(TaskCommand::Resume) => {
                            if stop_for_user {
                                self.pending_messages.push_back("Continue.".to_owned());
                                return Err(Stop::Message);
                            }
                        }
                    }
                }
                out = &mut fut => return Ok(out),
            }
        }
    }

    /// A step asked for by the editor (`rawko/step`). Returns whether the workflow changed.
    fn user_step(
        &mut self,
        action: StepAction,
        reply: oneshot::Sender<Result<String, String>>,
    ) -> bool {
        let Some(state) = self.workflow.clone() else {
            let _ = reply.send(Err("this task runs without a workflow".to_owned()));
            return false;
        };
        let result = step::execute(Some(&state), &self.set, action);
        let changed = self.apply_step(&state, result.state.clone(), "step");
        let answer = match result.result_type {
            ResultType::Error => Err(result.text),
            _ => Ok(result.text),
        };
        let _ = reply.send(answer);
        changed
    }

    /// Takes a new workflow state from a step; announces a phase change. Returns whether the
    /// phase (or activity) changed.
    fn apply_step(
        &mut self,
        old: &WorkflowState,
        new: Option<WorkflowState>,
        source: &str,
    ) -> bool {
        let Some(new) = new else { return false };
        let moved = new.current_path != old.current_path
            || new.active != old.active
            || new.global_step_count != old.global_step_count;
        self.workflow = Some(new);
        if moved {
            self.reminders_in_row = 0;
            let (_, text) = self.breadcrumb();
            self.record("phase", None, None, Some(format!("{source}: {text}")));
            let state = self.state;
            self.set_status(state, None, "phase");
        }
        moved
    }

    fn workflow_done(&self) -> Option<bool> {
        self.workflow.as_ref().map(|w| !w.active)
    }

    async fn main_loop(
        &mut self,
        conversation: &mut Conversation,
        provider: &mut dyn Provider,
        tools: &Arc<ToolContext>,
    ) -> (Outcome, String) {
        loop {
            match self.agent_run(conversation, provider, tools).await {
                RunEnd::Stopped => {}
                RunEnd::Cancelled => {
                    return (Outcome::Cancelled, "cancelled by the user".to_owned())
                }
                RunEnd::Failed(reason) => return (Outcome::Failed, reason),
                RunEnd::Interrupted => {
                    if let Err(end) = self.wait_for_user().await {
                        return end;
                    }
                    continue;
                }
            }
            // The agent stopped. A message the user sent meanwhile comes first.
            if !self.pending_messages.is_empty() {
                continue;
            }
            let summary = || {
                conversation
                    .last_assistant_text()
                    .unwrap_or("the agent finished")
                    .to_owned()
            };
            match (&self.workflow, self.workflow_done()) {
                (None, _) => return (Outcome::Complete, summary()),
                (Some(w), Some(true)) if w.cancelled => {
                    return (
                        Outcome::Cancelled,
                        "the agent cancelled the workflow".to_owned(),
                    )
                }
                (Some(_), Some(true)) => return (Outcome::Complete, summary()),
                _ => {}
            }
            if self.reminders_in_row >= self.settings.max_reminders {
                let phase = self
                    .workflow
                    .as_ref()
                    .and_then(|w| w.resolve(&self.set))
                    .map(|a| format!("{} {}", a.current_phase.emoji, a.current_phase.name))
                    .unwrap_or_default();
                return (
                    Outcome::Failed,
                    format!(
                        "the agent stopped {} times in a row without finishing the {phase} phase; giving up (maxReminders is {})",
                        self.reminders_in_row + 1,
                        self.settings.max_reminders
                    ),
                );
            }
            match self.countdown().await {
                Ok(true) => self.send_reminder(conversation),
                Ok(false) => {}
                Err(end) => return end,
            }
        }
    }

    /// Counts down before the reminder. `Ok(true)`: it ran out and the reminder is due;
    /// `Ok(false)`: the user stepped in (a message, or a step) and the task goes on.
    async fn countdown(&mut self) -> Result<bool, (Outcome, String)> {
        let seconds = self.settings.countdown_seconds;
        if seconds == 0 {
            return Ok(true);
        }
        self.set_status(TaskState::Countdown, None, "countdown");
        for left in (1..=seconds).rev() {
            self.emit(TaskEvent::Countdown {
                seconds_left: left,
                text: format!("⏳ Auto-continuing in {left}s — interrupt to stop"),
            });
            match self
                .wait(tokio::time::sleep(self.settings.countdown_tick), true)
                .await
            {
                Ok(()) => {}
                Err(Stop::Cancel) => {
                    return Err((Outcome::Cancelled, "cancelled by the user".to_owned()))
                }
                Err(Stop::Interrupt) => {
                    self.record("countdown_interrupted", None, None, None);
                    self.wait_for_user().await?;
                    return Ok(false);
                }
                Err(Stop::Message) | Err(Stop::Stepped) => {
                    self.set_status(TaskState::Running, None, "countdown_stopped");
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn send_reminder(&mut self, conversation: &mut Conversation) {
        let Some(reminder) = self
            .workflow
            .as_ref()
            .and_then(|w| w.resolve(&self.set))
            .map(|a| a.not_done_reminder(&self.set))
        else {
            return;
        };
        self.reminders_in_row += 1;
        self.record(
            "reminder",
            None,
            None,
            Some(format!("reminder {}", self.reminders_in_row)),
        );
        self.output(OutputKind::Reminder, reminder.clone());
        conversation.messages.push(Message::User(reminder));
        self.set_status(TaskState::Running, None, "reminder");
    }

    /// After an interrupt: waits until the user sends a message, resumes, steps, or cancels.
    async fn wait_for_user(&mut self) -> Result<(), (Outcome, String)> {
        self.set_status(
            TaskState::Blocked,
            Some("interrupted by the user".to_owned()),
            "interrupted",
        );
        loop {
            match self.wait(std::future::pending::<()>(), true).await {
                Ok(()) => {}
                Err(Stop::Cancel) => {
                    return Err((Outcome::Cancelled, "cancelled by the user".to_owned()))
                }
                Err(Stop::Interrupt) => {}
                Err(Stop::Message) => {
                    self.set_status(TaskState::Running, None, "resumed");
                    return Ok(());
                }
                Err(Stop::Stepped) => {
                    if self.workflow_done() == Some(true) {
                        self.set_status(TaskState::Running, None, "resumed");
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Turns until the model stops calling tools.
    async fn agent_run(
        &mut self,
        conversation: &mut Conversation,
        provider: &mut dyn Provider,
        tools: &Arc<ToolContext>,
    ) -> RunEnd {
        loop {
            let has_user_message = !self.pending_messages.is_empty();
            while let Some(text) = self.pending_messages.pop_front() {
                conversation.messages.push(Message::User(text));
            }
            if has_user_message {
                // The user spoke: the reminders start counting again.
                self.reminders_in_row = 0;
            }
            if self.state != TaskState::Running {
                self.set_status(TaskState::Running, None, "turn");
            }
            let context = self
                .workflow
                .as_ref()
                .and_then(|w| w.resolve(&self.set))
                .map(|a| a.context_prompt(&self.set));
            if let Some(context) = &context {
                self.output(OutputKind::ContextInjected, context.clone());
            }
            let events = self.events.clone();
            let on_text = move |delta: &str| {
                let _ = events.send(TaskEvent::Output {
                    kind: OutputKind::AssistantDelta,
                    text: delta.to_owned(),
                    tool_call_id: None,
                    tool: None,
                    input: None,
                    is_error: None,
                });
            };
            let request = TurnRequest {
                messages: &conversation.messages,
                context: context.as_deref(),
                tools: &conversation.tools,
            };
            let turn = match self.wait(provider.turn(request, &on_text), false).await {
                Ok(Ok(turn)) => turn,
                Ok(Err(e)) => {
                    let message = format!("provider {} failed: {e}", provider.name());
                    self.output(OutputKind::Error, message.clone());
                    return RunEnd::Failed(message);
                }
                Err(Stop::Cancel) => return RunEnd::Cancelled,
                Err(_) => return RunEnd::Interrupted,
            };
            conversation.messages.push(Message::Assistant {
                text: turn.text.clone(),
                tool_calls: turn.tool_calls.clone(),
            });
            if turn.tool_calls.is_empty() {
                return RunEnd::Stopped;
            }
            let mut results = Vec::with_capacity(turn.tool_calls.len());
            let mut stop = None;
            for call in &turn.tool_calls {
                if let Some(stop) = stop {
                    // Keep the conversation whole: every call gets a result.
                    results.push(ToolResult {
                        tool_call_id: call.id.clone(),
                        content: match stop {
                            Stop::Cancel => "the task was cancelled".to_owned(),
                            _ => "interrupted by the user".to_owned(),
                        },
                        is_error: true,
                    });
                    continue;
                }
                match self.tool_call(call, tools).await {
                    Ok(result) => results.push(result),
                    Err(s) => {
                        stop = Some(s);
                        results.push(ToolResult {
                            tool_call_id: call.id.clone(),
                            content: "interrupted by the user".to_owned(),
                            is_error: true,
                        });
                    }
                }
            }
            conversation.messages.push(Message::ToolResults(results));
            match stop {
                Some(Stop::Cancel) => return RunEnd::Cancelled,
                Some(_) => return RunEnd::Interrupted,
                None => {}
            }
        }
    }

    /// One tool call: `workflow_step`, or the gate, the approval when blocked, and the tool.
    async fn tool_call(
        &mut self,
        call: &ToolCall,
        tools: &Arc<ToolContext>,
    ) -> Result<ToolResult, Stop> {
        self.emit(TaskEvent::Output {
            kind: OutputKind::ToolCall,
            text: summarize_call(call),
            tool_call_id: Some(call.id.clone()),
            tool: Some(call.name.clone()),
            input: Some(call.input.clone()),
            is_error: None,
        });
        let (content, is_error) = if call.name.eq_ignore_ascii_case(step::TOOL_NAME) {
            self.workflow_step(call)
        } else {
            self.gated_call(call, tools).await?
        };
        self.emit(TaskEvent::Output {
            kind: OutputKind::ToolResult,
            text: content.clone(),
            tool_call_id: Some(call.id.clone()),
            tool: Some(call.name.clone()),
            input: None,
            is_error: Some(is_error),
        });
        Ok(ToolResult {
            tool_call_id: call.id.clone(),
            content,
            is_error,
        })
    }

    fn workflow_step(&mut self, call: &ToolCall) -> (String, bool) {
        let action = match step::parse_input(&call.input) {
            Ok(a) => a,
            Err(message) => return (message, true),
        };
        let old = self.workflow.clone();
        let result = step::execute(old.as_ref(), &self.set, action);
        if let Some(old) = &old {
            self.apply_step(old, result.state.clone(), "workflow_step");
        }
        (result.text, result.result_type == ResultType::Error)
    }

    async fn gated_call(
        &mut self,
        call: &ToolCall,
        tools: &Arc<ToolContext>,
    ) -> Result<(String, bool), Stop> {
        if !tools::is_builtin(&call.name) {
            let known: Vec<&str> = tools::specs().iter().map(|s| s.name).collect();
            return Ok((
                format!(
                    "unknown tool \"{}\"; the tools are {}, {}",
                    call.name,
                    known.join(", "),
                    step::TOOL_NAME
                ),
                true,
            ));
        }
        if let GateDecision::Block { reason, phase } =
            gate::check(self.workflow.as_ref(), &self.set, &call.name)
        {
            let answer = self.approval(call, &phase, &reason).await?;
            if !answer.allows() {
                return Ok((reason, true));
            }
        }
        let tools = tools.clone();
        let name = call.name.clone();
        let input = call.input.clone();
        let output = self
            .wait(
                async move { tools::run(&name, &input, &tools).await },
                false,
            )
            .await?;
        Ok((output.content, output.is_error))
    }

    /// Asks the user about a blocked call, remembering "always" answers for the task.
    async fn approval(
        &mut self,
        call: &ToolCall,
        phase: &str,
        reason: &str,
    ) -> Result<ApprovalAnswer, Stop> {
        let tool_key = call.name.to_ascii_lowercase();
        if self.always_allowed.contains(&tool_key) {
            return Ok(ApprovalAnswer::AllowAlways);
        }
        if self.always_rejected.contains(&tool_key) {
            return Ok(ApprovalAnswer::RejectAlways);
        }
        let (reply, answer) = oneshot::channel();
        self.set_status(
            TaskState::WaitingApproval,
            Some(format!("{} is blocked in the {phase} phase", call.name)),
            "approval_requested",
        );
        self.emit(TaskEvent::Approval(ApprovalRequest {
            tool_call_id: call.id.clone(),
            tool: call.name.clone(),
            input: call.input.clone(),
            phase: phase.to_owned(),
            reason: reason.to_owned(),
            reply,
        }));
        let timeout = self.settings.approval_timeout;
        let waited = self
            .wait(tokio::time::timeout(timeout, answer), false)
            .await;
        let (answer, why) = match waited {
            Ok(Ok(Ok(answer))) => (answer, None),
            Ok(Ok(Err(_))) => (
                ApprovalAnswer::Cancelled,
                Some(format!(
                    "the approval of {} could not be asked; the call was rejected",
                    call.name
                )),
            ),
            Ok(Err(_)) => (
                ApprovalAnswer::RejectOnce,
                Some(format!(
                    "no answer within {}; {} was rejected",
                    format_duration(timeout),
                    call.name
                )),
            ),
            Err(stop) => return Err(stop),
        };
        match answer {
            ApprovalAnswer::AllowAlways => {
                self.always_allowed.insert(tool_key);
            }
            ApprovalAnswer::RejectAlways => {
                self.always_rejected.insert(tool_key);
            }
            _ => {}
        }
        let detail = why
            .clone()
            .unwrap_or_else(|| format!("{}: {answer:?}", call.name));
        self.record("approval_resolved", None, None, Some(detail));
        self.set_status(TaskState::Running, why, "approval_resolved");
        Ok(answer)
    }

    /// Ends the task: the last output, the final status, and `Finished`.
    fn finish(&mut self, outcome: Outcome, summary: String) {
        tracing::debug!(task = %self.id, ?outcome, %summary, "task finished");
        let message = self.workflow.as_ref().and_then(|w| {
            let def = self.set.get(&w.workflow_key)?;
            match outcome {
                Outcome::Complete if !w.active => Some(texts::finished_message(def, &self.set, w)),
                Outcome::Cancelled => {
                    let mut cancelled = w.clone();
                    cancelled.cancelled = true;
                    Some(texts::finished_message(def, &self.set, &cancelled))
                }
                _ => None,
            }
        });
        match outcome {
            Outcome::Complete => self.output(
                OutputKind::Completion,
                message.unwrap_or_else(|| summary.clone()),
            ),
            Outcome::Cancelled => self.output(
                OutputKind::Completion,
                message.unwrap_or_else(|| "❌ Task cancelled".to_owned()),
            ),
            Outcome::Failed => self.output(OutputKind::Error, format!("task failed: {summary}")),
        }
        if let Some(w) = &mut self.workflow {
            if outcome == Outcome::Cancelled {
                w.active = false;
                w.cancelled = true;
            }
            w.completion_notified = true;
        }
        let (state, reason) = match outcome {
            Outcome::Complete => (TaskState::Complete, None),
            Outcome::Failed => (TaskState::Failed, Some(summary.clone())),
            Outcome::Cancelled => (TaskState::Cancelled, Some(summary.clone())),
        };
        self.set_status(state, reason, "finished");
        self.emit(TaskEvent::Finished { outcome, summary });
    }
}

fn format_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs >= 1.0 && (secs - secs.round()).abs() < 1e-9 {
        format!("{} s", secs.round())
    } else {
        format!("{secs:.1} s")
    }
}

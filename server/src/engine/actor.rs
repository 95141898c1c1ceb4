//! The task actor. The orchestrator machine decides what happens next (select an agent, run it,
//! evaluate the run, finish); this actor does it: the arbiter's choices, the agent loop with the
//! phase gate, approvals and `workflow_step`, the countdown and the not-done reminder. Every event
//! is appended to the task's log before it is announced, so a killed task resumes where it
//! stopped. Every await point also listens for commands, so a cancel, an interrupt, a step or an
//! override from the editor acts at once whatever the task is doing.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use super::arbiter::{self, View, DEFAULT_AGENT};
use super::log::{LogEvent, LoggedCall, Replay};
use super::{
    now_millis, ApprovalAnswer, ApprovalRequest, ArbiterSetup, Crumb, HistoryItem, Outcome,
    OutputKind, TaskCommand, TaskEvent, TaskSnapshot, TaskSpec, TaskState, WorkflowName,
};
use crate::agents::{AgentDefinition, AgentSet};
use crate::clip::{clip_line, clip_to};
use crate::config::Settings;
use crate::machine::{self, ArbiterDecision, Effect, Machine, MachineConfig, MachineError};
use crate::provider::{
    Message, Provider, ProviderError, ToolCall, ToolDescription, ToolResult, TurnRequest,
};
use crate::store::TaskFiles;
use crate::tools::{self, ToolContext};
use crate::workflow::gate::{self, GateDecision};
use crate::workflow::step::{self, ResultType, StepAction};
use crate::workflow::texts;
use crate::workflow::{WorkflowSet, WorkflowState};

/// Why a wait ended early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Stop {
    Cancel,
    Interrupt,
    /// A user message arrived (only when the wait asked to stop for one).
    Message,
    /// A step from the editor changed the workflow (only when the wait asked to stop for one).
    Stepped,
    /// An override from the editor: the machine takes it as an event.
    Override(machine::Event),
}

/// How an agent run ended.
enum RunEnd {
    /// The model ended its turn without tool calls (or hit the agent's turn limit).
    Done(String),
    Failed(MachineError),
    /// Cancelled, or an override that replaces the run.
    Event(machine::Event),
}

/// The part of the actor that waits and reacts to commands: everything but the conversation
/// and the providers, which the awaited futures borrow.
pub(super) struct Control {
    pub(super) id: String,
    pub(super) description: String,
    pub(super) set: Arc<WorkflowSet>,
    agents: Arc<AgentSet>,
    pub(super) workflow: Option<WorkflowState>,
    machine: Machine,
    settings: Settings,
    default_agent: String,
    model_arbiter: bool,
    events: mpsc::UnboundedSender<TaskEvent>,
    snapshot: Arc<Mutex<TaskSnapshot>>,
    commands: mpsc::UnboundedReceiver<TaskCommand>,
    pub(super) files: Option<TaskFiles>,
    /// The keys and secrets rawko holds: redacted from everything announced or logged.
    pub(super) secrets: crate::secrets::Secrets,
    /// The conversation in Claude Code's transcript format, for hooks (beside the log).
    pub(super) transcript: Option<super::transcript::Transcript>,
    pub(super) state: TaskState,
    pending_messages: VecDeque<String>,
    always_allowed: HashSet<String>,
    always_rejected: HashSet<String>,
    reminders_in_row: u32,
    hit_max_iterations: bool,
    pub(super) last_output: String,
    /// Tool calls of the last turn that a resumed task still has to run, and the results the
    /// turn already has.
    pending_calls: Vec<ToolCall>,
    pending_results: Vec<ToolResult>,
    /// Set when the log could not be written: the task stops, since it could not be resumed.
    log_error: Option<String>,
    pub(super) hooks: Arc<crate::hooks::Hooks>,
    session: Option<Arc<crate::hooks::session::SessionRecorder>>,
    pub(super) provider_name: String,
    pub(super) started_at: i64,
    /// Hook events waiting for the next point where hooks can run.
    pub(super) queued_hooks: Vec<crate::hooks::Invocation>,
    /// Files the task's Write and Edit calls changed.
    pub(super) files_modified: std::collections::BTreeSet<String>,
    /// Whether the agent goes on because a Stop hook blocked its last stop.
    pub(super) stop_hook_active: bool,
    /// Why the task waits for the user, when a hook (not the user) stopped it.
    pub(super) halt_reason: Option<String>,
    /// The hooks whose configuration error the user was told about (once per task).
    pub(super) config_errors_shown: HashSet<String>,
    /// The external agent this task stands for, if it is one.
    external: Option<Arc<crate::external::Bridge>>,
    /// No editor could be asked about the last blocked call: an external agent is told to ask its
    /// own user, with this reason.
    ask_agent: Option<String>,
    /// Whether the user allowed the last blocked call (an external agent is told so).
    approved: bool,
    /// Whether the task said that its Bash commands run without the kernel sandbox (once).
    unconfined_note_shown: bool,
}

/// The conversation the provider continues.
struct Conversation {
    messages: Vec<Message>,
    tools: Vec<ToolDescription>,
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
            .map(|s| clip_line(s, 80).into_owned())
    };
    match pick(&["path", "file_path", "command", "pattern", "action"]) {
        Some(arg) => format!("{} {arg}", call.name),
        None => call.name.clone(),
    }
}

/// The summary of a blocked call for its approval: the output panel's line, and for a call that
/// writes content (Write) how much, e.g. `Write notes.md (12 bytes)`.
fn approval_summary(call: &ToolCall) -> String {
    let line = summarize_call(call);
    match call.input.get("content").and_then(Value::as_str) {
        Some(content) => {
            let n = content.len();
            format!("{line} ({n} byte{})", if n == 1 { "" } else { "s" })
        }
        None => line,
    }
}

fn answer_name(answer: ApprovalAnswer) -> &'static str {
    match answer {
        ApprovalAnswer::AllowOnce => "allow_once",
        ApprovalAnswer::AllowAlways => "allow_always",
        ApprovalAnswer::RejectOnce => "reject_once",
        ApprovalAnswer::RejectAlways => "reject_always",
        ApprovalAnswer::Cancelled => "cancelled",
        ApprovalAnswer::NoApprover => "no_approver",
    }
}

fn outcome_of(o: machine::TaskOutcome) -> Outcome {
    match o {
        machine::TaskOutcome::Complete => Outcome::Complete,
        machine::TaskOutcome::Failed => Outcome::Failed,
        machine::TaskOutcome::Cancelled => Outcome::Cancelled,
    }
}

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Complete => "complete",
        Outcome::Failed => "failed",
        Outcome::Cancelled => "cancelled",
    }
}

fn provider_error(e: &ProviderError) -> MachineError {
    MachineError::new(e.kind.as_str(), e.message.clone())
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
        agents,
        mut provider,
        provider_spec,
        arbiter,
        start_agent,
        workspace,
        settings,
        store,
        resume,
        then,
        hooks,
        session,
        external,
    } = spec;
    let provider_name = provider_spec.name.clone();
    let started_at = snapshot
        .lock()
        .map(|s| s.started_at)
        .unwrap_or_else(|_| now_millis());
    let default_agent = start_agent
        .clone()
        .or_else(|| settings.default_agent.clone())
        .or_else(|| {
            // Without a workflow, a workspace's agents run the task, the planner first.
            (workflow.is_none() && !agents.is_empty()).then(|| {
                agents
                    .get("planner")
                    .map(|a| a.name.clone())
                    .or_else(|| agents.names().next().map(str::to_owned))
                    .unwrap_or_else(|| DEFAULT_AGENT.to_owned())
            })
        })
        .flatten_default();
    let machine_config = MachineConfig {
        max_iterations: settings.max_iterations,
        max_failures: settings.max_failures,
        default_agent: Some(default_agent.clone()),
    };
    let (model_arbiter, mut arbiter_provider, arbiter_spec) = match arbiter {
        ArbiterSetup::Deterministic => (false, None, None),
        ArbiterSetup::Model { provider, spec } => (true, Some(provider), Some(spec)),
    };
    let mut ctl = Control {
        id: id.clone(),
        description: description.clone(),
        set: workflows,
        agents,
        workflow: None,
        machine: Machine::new(machine_config),
        settings,
        default_agent,
        model_arbiter,
        events,
        snapshot,
        commands,
        files: None,
        transcript: None,
        secrets: Default::default(),
        state: TaskState::Running,
        pending_messages: VecDeque::new(),
        always_allowed: HashSet::new(),
        always_rejected: HashSet::new(),
        reminders_in_row: 0,
        hit_max_iterations: false,
        last_output: String::new(),
        pending_calls: Vec::new(),
        pending_results: Vec::new(),
        log_error: None,
        hooks,
        session,
        provider_name,
        started_at,
        queued_hooks: Vec::new(),
        files_modified: Default::default(),
        stop_hook_active: false,
        halt_reason: None,
        config_errors_shown: HashSet::new(),
        external,
        approved: false,
        ask_agent: None,
        unconfined_note_shown: false,
    };
    if let Some(session) = &ctl.session {
        session.task_started(&id);
    }
    ctl.secrets = crate::secrets::Secrets::new(&ctl.settings, |k| std::env::var(k).ok());
    let mut tools = match ToolContext::new(&workspace) {
        Ok(mut tools) => {
            tools.bash_timeout = ctl.settings.bash_timeout;
            tools.env_remove = ctl.secrets.env_names().to_vec();
            tools.sandbox.settings = ctl.settings.sandbox.clone();
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
        messages: Vec::new(),
        tools: tool_descriptions(),
    };

    let mut effects: VecDeque<Effect> = VecDeque::new();
    match resume {
        None => {
            if let Some(dir) = &store {
                match TaskFiles::create(dir, &id) {
                    Ok(files) => ctl.files = Some(files),
                    Err(e) => tracing::warn!("task {id} is not persisted: {e}"),
                }
            }
            ctl.log(LogEvent::Started {
                task_id: id.clone(),
                description: description.clone(),
                workflow: workflow.clone(),
                workspace: workspace.clone(),
                provider: provider_spec,
                agent: start_agent,
                arbiter: arbiter_spec,
                started_at,
            });
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
                        ctl.log(LogEvent::Workflow {
                            state: state.clone(),
                        });
                        ctl.workflow = Some(state);
                    }
                    Err(e) => {
                        ctl.finish(Outcome::Failed, format!("cannot start workflow: {e}"));
                        return;
                    }
                }
            }
            ctl.set_status(TaskState::Running, None, "task started");
            match ctl.start_hooks(&first_message, false).await {
                Ok(context) => {
                    first_message = super::hooking::with_context(first_message, &context)
                }
                Err(reason) => {
                    ctl.finish(Outcome::Failed, reason);
                    return;
                }
            }
            ctl.log(LogEvent::UserMessage {
                text: first_message.clone(),
                source: "initial".to_owned(),
            });
            conversation.messages.push(Message::User(first_message));
            effects.extend(ctl.apply(machine::Event::StartTask {
                task: description.clone(),
            }));
        }
        Some((files, replay)) => {
            ctl.files = Some(files);
            let replay = *replay;
            provider.resume_after(replay.turns_played);
            if let Some(p) = &mut arbiter_provider {
                p.resume_after(replay.arbiter_turns);
            }
            conversation.messages = replay.messages;
            ctl.workflow = replay.workflow;
            if ctl.workflow.is_none() {
                if let Some(key) = &replay.workflow_key {
                    // Killed after the task's start was recorded but before its workflow's: the
                    // workflow starts now, so the task never runs with fewer restrictions than
                    // it was started with.
                    match WorkflowState::start(&ctl.set, key, &description, &id, replay.started_at)
                    {
                        Ok(state) => {
                            ctl.log(LogEvent::Workflow {
                                state: state.clone(),
                            });
                            ctl.workflow = Some(state);
                        }
                        Err(e) => {
                            ctl.finish(
                                Outcome::Failed,
                                format!(
                                    "cannot resume: the workflow \"{key}\" the task was started with cannot start again: {e}"
                                ),
                            );
                            return;
                        }
                    }
                }
            }
            if conversation.messages.is_empty() {
                // Killed before the first message was recorded: it goes in now.
                let first = ctl
                    .workflow
                    .as_ref()
                    .and_then(|w| ctl.set.get(&w.workflow_key))
                    .map(|def| texts::initial_message(def, &ctl.set, &description))
                    .filter(|m| !m.trim().is_empty())
                    .unwrap_or_else(|| description.clone());
                ctl.log(LogEvent::UserMessage {
                    text: first.clone(),
                    source: "initial".to_owned(),
                });
                conversation.messages.push(Message::User(first));
            }
            ctl.machine = replay.machine;
            ctl.reminders_in_row = replay.reminders_in_row;
            ctl.always_allowed = replay.always_allowed;
            ctl.always_rejected = replay.always_rejected;
            ctl.pending_calls = replay.pending_calls;
            ctl.pending_results = replay.pending_results;
            ctl.last_output = conversation
                .messages
                .iter()
                .rev()
                .find_map(|m| match m {
                    Message::Assistant { text, .. } if !text.trim().is_empty() => {
                        Some(text.clone())
                    }
                    _ => None,
                })
                .unwrap_or_default();
            if replay.finished.is_some() {
                ctl.log(LogEvent::Reopened {
                    reason: then.as_ref().map_or("resumed", |e| e.name()).to_owned(),
                });
            }
            ctl.record(
                "resumed",
                None,
                None,
                Some(format!("from {} recorded events", replay.records)),
            );
            ctl.set_status(TaskState::Running, None, "resumed");
            if let Ok(context) = ctl.start_hooks("", true).await {
                if !context.is_empty() {
                    let text = context.join("\n\n");
                    ctl.log(LogEvent::UserMessage {
                        text: text.clone(),
                        source: "hook".to_owned(),
                    });
                    conversation.messages.push(Message::User(text));
                }
            }
            if let Some(event) = then {
                effects.extend(ctl.apply_override(event, &mut conversation));
            } else {
                effects.extend(ctl.effects_to_continue());
            }
        }
    }

    // Bash's TMPDIR: beside the task's log (kept for a resumed task), removed when the task's
    // actor ends; without a log, under the runtime directory.
    let temp_dir = TempDir(match &ctl.files {
        Some(files) => files.dir().join("tmp"),
        None => crate::external::runtime_dir(|k| std::env::var_os(k))
            .join("rawko")
            .join("tmp")
            .join(plain_name(&ctl.id)),
    });
    Arc::make_mut(&mut tools).sandbox.temp_dir = Some(temp_dir.0.clone());

    // What SessionStart hooks wrote to CLAUDE_ENV_FILE applies to the task's Bash commands.
    let bash_env = ctl.session_env();
    if !bash_env.0.is_empty() {
        Arc::make_mut(&mut tools).bash_env = bash_env;
    }

    if ctl.external.is_some() {
        // An external agent waits on each answer: its log is written without an fsync per event
        // (it still survives a crash of rawko, not one of the machine).
        if let Some(files) = &mut ctl.files {
            files.set_durable(false);
        }
    }
    let (outcome, summary) = ctl
        .drive(
            effects,
            &mut conversation,
            provider.as_mut(),
            &mut arbiter_provider,
            &tools,
        )
        .await;
    ctl.end(outcome, summary).await;
    drop(temp_dir);
}

/// `id` as one plain path component: letters, digits, `-`, `_` and `.` kept, anything else `_`, so
/// an id from a client never names a directory outside the one it is joined to.
fn plain_name(id: &str) -> String {
    let name: String = id
        .chars()
        .take(200)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match name.trim_start_matches('.') {
        "" => "_".to_owned(),
        rest => rest.to_owned(),
    }
}

/// The task's temporary directory, removed with everything in it when the actor ends (also by a
/// panic).
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        match std::fs::remove_dir_all(&self.0) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                tracing::warn!("cannot remove {}: {e}", self.0.display())
            }
            _ => {}
        }
    }
}

/// `Option<String>::flatten_default`: the default agent name when none was chosen.
trait FlattenDefault {
    fn flatten_default(self) -> String;
}

impl FlattenDefault for Option<String> {
    fn flatten_default(self) -> String {
        self.unwrap_or_else(|| DEFAULT_AGENT.to_owned())
    }
}

impl Control {
    pub(super) fn emit(&self, mut event: TaskEvent) {
        if !self.secrets.is_empty() {
            let s = &self.secrets;
            match &mut event {
                TaskEvent::Status {
                    text,
                    reason,
                    breadcrumb_text,
                    ..
                } => {
                    s.scrub(text);
                    s.scrub(breadcrumb_text);
                    if let Some(r) = reason {
                        s.scrub(r);
                    }
                }
                TaskEvent::Countdown { text, label, .. } => {
                    s.scrub(text);
                    s.scrub(label);
                }
                TaskEvent::Output { text, input, .. } => {
                    s.scrub(text);
                    if let Some(i) = input {
                        s.scrub_value(i);
                    }
                }
                TaskEvent::Approval(request) => {
                    s.scrub_value(&mut request.input);
                    s.scrub(&mut request.reason);
                    s.scrub(&mut request.summary);
                }
                TaskEvent::Finished { summary, .. } => s.scrub(summary),
            }
        }
        // The face may have gone (the editor closed); the task still runs to its end.
        let _ = self.events.send(event);
    }

    /// Appends an event to the task's log (on disk before anything is announced).
    fn log(&mut self, event: LogEvent) {
        let Some(files) = &mut self.files else { return };
        let value = match serde_json::to_value(&event) {
            Ok(mut v) => {
                self.secrets.scrub_value(&mut v);
                v
            }
            Err(e) => {
                tracing::error!("cannot serialise a log event: {e}");
                return;
            }
        };
        let now = now_millis();
        if let Err(e) = files.append(now, &value) {
            tracing::error!("task {}: cannot write its log: {e}", self.id);
            if self.log_error.is_none() {
                self.log_error = Some(format!("cannot write the task log: {e}"));
            }
        }
        let dir = files.dir().to_owned();
        self.transcript
            .get_or_insert_with(|| {
                super::transcript::Transcript::open(&dir, &self.id, &self.hooks.workspace)
            })
            .record(&value, now);
    }

    pub(super) fn output(&self, kind: OutputKind, text: impl Into<String>) {
        self.emit(TaskEvent::Output {
            kind,
            text: text.into(),
            tool_call_id: None,
            tool: None,
            input: None,
            is_error: None,
        });
    }

    pub(super) fn record(
        &self,
        event: &str,
        before: Option<String>,
        after: Option<String>,
        detail: Option<String>,
    ) {
        self.record_guarded(event, before, after, None, detail);
    }

    fn record_guarded(
        &self,
        event: &str,
        before: Option<String>,
        after: Option<String>,
        guard: Option<String>,
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
                guard,
                detail,
            });
        }
    }

    /// Applies an event to the machine: logged, recorded in the history with the guard that
    /// decided, and the effects to run returned.
    fn apply(&mut self, event: machine::Event) -> Vec<Effect> {
        let step = self.machine.transition(&event, now_millis());
        let record = step.record;
        if !record.handled {
            self.record(
                &format!("machine:{}", event.name()),
                Some(record.from.name().to_owned()),
                Some(record.to.name().to_owned()),
                Some(
                    record
                        .note
                        .clone()
                        .unwrap_or_else(|| "ignored in this state".to_owned()),
                ),
            );
            return Vec::new();
        }
        self.log(LogEvent::Machine {
            event: event.clone(),
            from: record.from.name().to_owned(),
            to: record.to.name().to_owned(),
            guard: record.guard.map(str::to_owned),
        });
        self.machine = step.machine;
        if let Ok(mut snap) = self.snapshot.lock() {
            snap.machine_state = self.machine.state.name().to_owned();
            snap.agent = self.machine.context.current_agent.clone();
        }
        let detail = match (super::log::event_detail(&event), record.note.clone()) {
            (Some(d), Some(n)) => Some(format!("{d}; {n}")),
            (d, n) => d.or(n),
        };
        self.record_guarded(
            &format!("machine:{}", event.name()),
            Some(record.from.name().to_owned()),
            Some(record.to.name().to_owned()),
            record.guard.map(str::to_owned),
            detail,
        );
        record.effects
    }

    /// What a resumed task does next, from the state its machine was left in.
    fn effects_to_continue(&mut self) -> Vec<Effect> {
        use machine::State;
        match self.machine.state {
            State::Idle => self.apply(machine::Event::StartTask {
                task: self.description.clone(),
            }),
            State::Selecting | State::ErrorHandling => vec![Effect::SelectAgent],
            State::Executing => vec![Effect::RunAgent {
                agent: self
                    .machine
                    .context
                    .current_agent
                    .clone()
                    .unwrap_or_else(|| self.default_agent.clone()),
            }],
            State::Evaluating => vec![Effect::Evaluate],
            State::Complete => vec![Effect::Finish {
                outcome: machine::TaskOutcome::Complete,
                summary: self.last_output.clone(),
            }],
            State::Failed => vec![Effect::Finish {
                outcome: machine::TaskOutcome::Failed,
                summary: self
                    .machine
                    .context
                    .last_error
                    .as_ref()
                    .map_or_else(|| "the task failed".to_owned(), |e| e.message.clone()),
            }],
            State::Cancelled => vec![Effect::Finish {
                outcome: machine::TaskOutcome::Cancelled,
                summary: "cancelled by the user".to_owned(),
            }],
        }
    }

    /// An override from the editor. A skipped step also moves the workflow on; a reset starts
    /// the task over.
    fn apply_override(
        &mut self,
        event: machine::Event,
        conversation: &mut Conversation,
    ) -> Vec<Effect> {
        match &event {
            machine::Event::SkipStep => {
                if let Some(old) = self.workflow.clone() {
                    let result = step::execute(Some(&old), &self.set, StepAction::Next);
                    self.apply_step(&old, result.state, "skipStep");
                }
                self.apply(event)
            }
            machine::Event::Reset => {
                let mut effects = self.apply(event);
                effects.clear();
                self.restart(conversation);
                effects.extend(self.apply(machine::Event::StartTask {
                    task: self.description.clone(),
                }));
                effects
            }
            _ => self.apply(event),
        }
    }

    /// Starts the task over after a reset: a fresh workflow position and conversation.
    fn restart(&mut self, conversation: &mut Conversation) {
        let mut first = self.description.clone();
        if let Some(old) = self.workflow.clone() {
            if let Ok(state) = WorkflowState::start(
                &self.set,
                &old.workflow_key,
                &self.description,
                &self.id,
                old.started_at,
            ) {
                if let Some(def) = self.set.get(&state.workflow_key) {
                    let initial = texts::initial_message(def, &self.set, &self.description);
                    if !initial.trim().is_empty() {
                        first = initial;
                    }
                }
                self.log(LogEvent::Workflow {
                    state: state.clone(),
                });
                self.workflow = Some(state);
            }
        }
        conversation.messages.clear();
        self.pending_calls.clear();
        self.pending_results.clear();
        self.reminders_in_row = 0;
        self.log(LogEvent::UserMessage {
            text: first.clone(),
            source: "initial".to_owned(),
        });
        conversation.messages.push(Message::User(first));
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

    /// Announces the task's state. `reason` says why, when it matters.
    pub(super) fn set_status(&mut self, state: TaskState, reason: Option<String>, event: &str) {
        let before = self.state;
        self.state = state;
        let (breadcrumb, crumb_text) = self.breadcrumb();
        let text = match state {
            TaskState::Running => crumb_text.clone(),
            TaskState::WaitingApproval => format!("{crumb_text} — waiting for approval"),
            TaskState::Countdown => format!("{crumb_text} — auto-continuing"),
            TaskState::Blocked => format!("{crumb_text} — interrupted; send a message to continue"),
            TaskState::Interrupted => format!("{crumb_text} — interrupted; resume to continue"),
            TaskState::Complete => format!("{crumb_text} — complete"),
            TaskState::Failed => format!("{crumb_text} — failed"),
            TaskState::Cancelled => format!("{crumb_text} — cancelled"),
        };
        let workflow = self.workflow.as_ref().map(|w| WorkflowName {
            key: w.workflow_key.clone(),
            name: self
                .set
                .get(&w.workflow_key)
                .map_or_else(|| w.workflow_key.clone(), |d| d.name.clone()),
        });
        if let Ok(mut snap) = self.snapshot.lock() {
            snap.state = state;
            snap.breadcrumb = breadcrumb.clone();
            snap.breadcrumb_text = crumb_text.clone();
            snap.status_text = text.clone();
            // A workflow started later (`rawko/setWorkflow`) shows in listTasks/getTask too.
            if let Some(w) = &workflow {
                snap.workflow = Some(w.key.clone());
                snap.workflow_name = Some(w.name.clone());
            }
        }
        let first = self
            .snapshot
            .lock()
            .map(|s| s.history.is_empty())
            .unwrap_or(false);
        self.record(
            event,
            (!first).then(|| before.as_str().to_owned()),
            Some(state.as_str().to_owned()),
            reason.clone(),
        );
        self.write_snapshot(&crumb_text);
        if let Some(bridge) = &self.external {
            bridge.set_context(
                self.workflow
                    .as_ref()
                    .and_then(|w| w.resolve(&self.set))
                    .map(|a| a.context_prompt(&self.set)),
            );
        }
        self.emit(TaskEvent::Status {
            state,
            breadcrumb,
            text,
            reason,
            workflow,
            breadcrumb_text: crumb_text,
        });
    }

    /// The snapshot: a cache for listing tasks without replaying their logs.
    fn write_snapshot(&self, crumb_text: &str) {
        let Some(files) = &self.files else { return };
        let snap = match self.snapshot.lock() {
            Ok(s) => s.clone(),
            Err(_) => return,
        };
        let value = json!({
            "v": crate::store::FORMAT_VERSION,
            "taskId": snap.task_id,
            "description": snap.description,
            "workflow": snap.workflow,
            "workspace": snap.workspace,
            "state": snap.state.as_str(),
            "machineState": self.machine.state.name(),
            "breadcrumbText": crumb_text,
            "startedAt": snap.started_at,
            "updatedAt": now_millis(),
        });
        if let Err(e) = files.write_snapshot(&value) {
            tracing::warn!("task {}: cannot write its snapshot: {e}", self.id);
        }
    }

    /// Awaits `fut` while serving commands. Steps are answered at once; messages are queued
    /// (or end the wait, with `stop_for_user`); cancel, interrupt and overrides end the wait.
    pub(super) async fn wait<T>(
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
                        Some(TaskCommand::SendMessage(text)) if self.external.is_some() => {
                            // An external agent's prompt (UserPromptSubmit): its model has it
                            // already. It is recorded, the reminders count afresh, and a task
                            // waiting on the user goes on; it is not handed back to the agent.
                            self.record("message", None, None, Some(text.clone()));
                            self.log(LogEvent::UserMessage {
                                text,
                                source: "user".to_owned(),
                            });
                            self.reminders_in_row = 0;
                            if stop_for_user {
                                return Err(Stop::Message);
                            }
                        }
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
                        Some(TaskCommand::Override(event)) => return Err(Stop::Override(event)),
                        Some(TaskCommand::SetWorkflow { key, reply }) => {
                            let answer = self.set_workflow(&key);
                            let _ = reply.send(answer);
                        }
                    }
                }
                out = &mut fut => return Ok(out),
            }
        }
    }

    /// Starts workflow `key` in a task that runs none yet.
    fn set_workflow(&mut self, key: &str) -> Result<String, String> {
        if let Some(w) = &self.workflow {
            return Err(format!(
                "this task already runs workflow \"{}\"",
                w.workflow_key
            ));
        }
        let key = self
            .set
            .find(key)
            .map_or_else(|| key.to_owned(), |d| d.key.clone());
        let state = WorkflowState::start(
            &self.set,
            &key,
            &self.description,
            &self.id,
            crate::engine::now_millis(),
        )
        .map_err(|e| e.to_string())?;
        let name = self
            .set
            .get(&state.workflow_key)
            .map_or_else(|| key.clone(), |d| d.name.clone());
        self.log(LogEvent::Workflow {
            state: state.clone(),
        });
        self.workflow = Some(state);
        let inv = self.phase_invocation(crate::hooks::HookEvent::PhaseEnter);
        self.queue_hook(inv);
        self.record("workflow", None, None, Some(format!("started {name}")));
        let state = self.state;
        self.set_status(state, None, "workflow");
        Ok(format!("Started the {name} workflow."))
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

    /// Takes a new workflow state from a step: logged, and a phase change announced. Returns
    /// whether the phase (or activity) changed.
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
        if new != *old {
            self.log(LogEvent::Workflow { state: new.clone() });
        }
        let phase_moved = new.current_path != old.current_path || new.active != old.active;
        if phase_moved && old.active {
            let inv = self.phase_invocation(crate::hooks::HookEvent::PhaseExit);
            self.queue_hook(inv);
        }
        self.workflow = Some(new);
        if phase_moved {
            let now = self.workflow.as_ref();
            if now.is_some_and(|w| w.active) {
                let inv = self.phase_invocation(crate::hooks::HookEvent::PhaseEnter);
                self.queue_hook(inv);
            } else if now.is_some_and(|w| !w.cancelled) {
                let inv = self.invocation(crate::hooks::HookEvent::WorkflowComplete);
                self.queue_hook(inv);
            }
        }
        if moved {
            self.reminders_in_row = 0;
            let (_, text) = self.breadcrumb();
            self.record("phase", None, None, Some(format!("{source}: {text}")));
            let state = self.state;
            self.set_status(state, None, "phase");
        }
        moved
    }

    fn view<'a>(&'a self) -> View<'a> {
        View {
            machine: &self.machine,
            agents: &self.agents,
            default_agent: &self.default_agent,
            workflow: self.workflow.as_ref(),
            workflows: &self.set,
            hit_max_iterations: self.hit_max_iterations,
            last_output: &self.last_output,
        }
    }

    /// Runs the machine's effects until it finishes.
    async fn drive(
        &mut self,
        mut effects: VecDeque<Effect>,
        conversation: &mut Conversation,
        provider: &mut dyn Provider,
        arbiter: &mut Option<Box<dyn Provider>>,
        tools: &Arc<ToolContext>,
    ) -> (Outcome, String) {
        loop {
            if let Some(e) = self.log_error.take() {
                return (Outcome::Failed, e);
            }
            let Some(effect) = effects.pop_front() else {
                return (
                    Outcome::Failed,
                    format!(
                        "the orchestrator stopped in state {} with nothing to do",
                        self.machine.state.name()
                    ),
                );
            };
            let event = match effect {
                Effect::SelectAgent => match self.select(arbiter).await {
                    Ok(Ok((agent, decision))) => machine::Event::AgentSelected {
                        agent,
                        decision: Some(decision),
                    },
                    Ok(Err(error)) => machine::Event::AgentSelectionFailed { error },
                    Err(event) => event,
                },
                Effect::RunAgent { agent } => {
                    match self.run_agent(conversation, provider, tools, &agent).await {
                        RunEnd::Done(output) => machine::Event::AgentComplete {
                            success: true,
                            output,
                        },
                        RunEnd::Failed(error) => machine::Event::AgentError { error },
                        RunEnd::Event(event) => event,
                    }
                }
                Effect::Evaluate => match self.evaluate(conversation, arbiter).await {
                    Ok(Ok(decision)) => machine::Event::ArbiterDecision { decision },
                    Ok(Err(error)) => machine::Event::ArbiterError { error },
                    Err(event) => event,
                },
                Effect::AbortAgent => continue,
                Effect::Finish { outcome, summary } => return (outcome_of(outcome), summary),
            };
            let new = match event {
                e @ (machine::Event::Reset | machine::Event::SkipStep) => {
                    self.apply_override(e, conversation)
                }
                e => self.apply(e),
            };
            effects.extend(new);
        }
    }

    /// Maps a stop that ends the current piece of work to the machine event it stands for.
    fn stop_event(stop: Stop) -> machine::Event {
        match stop {
            Stop::Override(event) => event,
            _ => machine::Event::Cancel,
        }
    }

    /// The arbiter chooses the next agent.
    async fn select(
        &mut self,
        arbiter: &mut Option<Box<dyn Provider>>,
    ) -> Result<Result<(String, ArbiterDecision), MachineError>, machine::Event> {
        if !self.model_arbiter {
            return Ok(arbiter::select(&self.view()));
        }
        let prompt = arbiter::select_prompt(&self.view());
        let answer = match self.ask_arbiter(arbiter, prompt).await? {
            Ok(text) => text,
            Err(e) => return Ok(Err(e)),
        };
        Ok(match arbiter::parse_decision(&answer) {
            Ok(ArbiterDecision::SelectMode { mode, reason }) => {
                if mode == DEFAULT_AGENT || self.agents.get(&mode).is_some() {
                    Ok((mode.clone(), ArbiterDecision::SelectMode { mode, reason }))
                } else {
                    Err(MachineError::new(
                        "selection_failed",
                        format!("the arbiter chose \"{mode}\", which is no agent"),
                    ))
                }
            }
            Ok(other) => Err(MachineError::new(
                "selection_failed",
                format!(
                    "the arbiter answered {} where an agent was to be selected",
                    other.name()
                ),
            )),
            Err(why) => Err(MachineError::new(
                "arbiter_error",
                format!("unparseable arbiter answer ({why}): {}", quote(&answer)),
            )),
        })
    }

    /// Asks the model arbiter; its answer (or failure) is logged like a turn.
    async fn ask_arbiter(
        &mut self,
        arbiter: &mut Option<Box<dyn Provider>>,
        prompt: String,
    ) -> Result<Result<String, MachineError>, machine::Event> {
        let Some(arbiter) = arbiter.as_mut() else {
            return Ok(Err(MachineError::new(
                "arbiter_error",
                "no arbiter provider is configured",
            )));
        };
        let messages = [Message::User(prompt)];
        let ignore = |_: &str| {};
        let answer = loop {
            let request = TurnRequest {
                system: Some(arbiter::SYSTEM_PROMPT),
                messages: &messages,
                context: None,
                tools: &[],
            };
            match self.wait(arbiter.turn(request, &ignore), false).await {
                // An interrupt while the arbiter thinks: wait for the user, then ask again.
                Err(Stop::Interrupt) => self.wait_for_user().await?,
                other => break other,
            }
        };
        match answer {
            Ok(Ok(turn)) => {
                self.log(LogEvent::ArbiterTurn {
                    text: Some(turn.text.clone()),
                    error: None,
                });
                Ok(Ok(turn.text))
            }
            Ok(Err(e)) => {
                self.log(LogEvent::ArbiterTurn {
                    text: None,
                    error: Some(e.to_string()),
                });
                Ok(Err(MachineError::new(
                    "arbiter_error",
                    format!("the arbiter failed: {e}"),
                )))
            }
            Err(stop) => Err(Self::stop_event(stop)),
        }
    }

    /// The arbiter judges the run that just ended. With an active workflow and a `CONTINUE`, the
    /// countdown runs here and the not-done reminder goes into the conversation.
    async fn evaluate(
        &mut self,
        conversation: &mut Conversation,
        arbiter: &mut Option<Box<dyn Provider>>,
    ) -> Result<Result<ArbiterDecision, MachineError>, machine::Event> {
        if self
            .workflow
            .as_ref()
            .is_some_and(|w| !w.active && w.cancelled)
        {
            return Err(machine::Event::Cancel);
        }
        if let Some(bridge) = &self.external {
            if self.workflow.is_none() {
                // No workflow picked yet: the external agent may stop; its session goes on.
                bridge.answer_stop(crate::external::StopAnswer::Allow);
                return Ok(Ok(ArbiterDecision::Continue {
                    reason: "waiting for the external agent".to_owned(),
                }));
            }
        }
        // A message the user sent meanwhile comes first.
        if !self.pending_messages.is_empty() {
            return Ok(Ok(ArbiterDecision::Continue {
                reason: "the user sent a message".to_owned(),
            }));
        }
        let decision = if self.model_arbiter {
            let prompt = arbiter::evaluate_prompt(&self.view());
            match self.ask_arbiter(arbiter, prompt).await? {
                Ok(text) => match arbiter::parse_decision(&text) {
                    Ok(d) => d,
                    Err(why) => {
                        return Ok(Err(MachineError::new(
                            "arbiter_error",
                            format!("unparseable arbiter answer ({why}): {}", quote(&text)),
                        )))
                    }
                },
                Err(e) => return Ok(Err(e)),
            }
        } else {
            match arbiter::evaluate(&self.view()) {
                Ok(d) => d,
                Err(e) => return Ok(Err(e)),
            }
        };
        if matches!(
            decision,
            ArbiterDecision::Continue { .. } | ArbiterDecision::Complete { .. }
        ) {
            match self.stop_hooks().await {
                Ok(None) => {}
                Ok(Some(message)) => {
                    // A Stop hook sends the agent on; it counts like a not-done reminder.
                    if self.reminders_in_row >= self.settings.max_reminders {
                        let why = format!(
                            "a Stop hook kept the agent going {} times in a row; giving up (maxReminders is {})",
                            self.reminders_in_row + 1,
                            self.settings.max_reminders
                        );
                        if self.external.is_some() {
                            return self.external_gives_up(why).await;
                        }
                        return Ok(Err(MachineError::new("reminder_limit", why)));
                    }
                    self.reminders_in_row += 1;
                    self.log(LogEvent::UserMessage {
                        text: message.clone(),
                        source: "stop_hook".to_owned(),
                    });
                    self.record(
                        "stop_hook",
                        None,
                        None,
                        Some(format!("reminder {}", self.reminders_in_row)),
                    );
                    self.output(OutputKind::Reminder, message.clone());
                    conversation.messages.push(Message::User(message));
                    return Ok(Ok(ArbiterDecision::Continue {
                        reason: "a Stop hook blocked the stop".to_owned(),
                    }));
                }
                Err(Stop::Interrupt) => {
                    self.wait_for_user().await?;
                    return Ok(Ok(ArbiterDecision::Continue {
                        reason: "the user resumed after a hook stopped the task".to_owned(),
                    }));
                }
                Err(stop) => return Err(Self::stop_event(stop)),
            }
        }
        let workflow_active = self.workflow.as_ref().is_some_and(|w| w.active);
        if !(workflow_active && matches!(decision, ArbiterDecision::Continue { .. })) {
            return Ok(Ok(decision));
        }
        // The agent stopped while the workflow is still active.
        if self.reminders_in_row >= self.settings.max_reminders {
            let phase = self
                .workflow
                .as_ref()
                .and_then(|w| w.resolve(&self.set))
                .map(|a| format!("{} {}", a.current_phase.emoji, a.current_phase.name))
                .unwrap_or_default();
            let why = format!(
                "the agent stopped {} times in a row without finishing the {phase} phase; giving up (maxReminders is {})",
                self.reminders_in_row + 1,
                self.settings.max_reminders
            );
            if self.external.is_some() {
                return self.external_gives_up(why).await;
            }
            return Ok(Err(MachineError::new("reminder_limit", why)));
        }
        match self.countdown().await? {
            true => self.send_reminder(conversation),
            false => {
                if self.workflow.as_ref().is_some_and(|w| !w.active) {
                    return Ok(Ok(ArbiterDecision::Complete {
                        summary: self.last_output.clone(),
                    }));
                }
            }
        }
        Ok(Ok(decision))
    }

    /// An external agent that kept stopping past the reminder cap may stop: rawko does not own its
    /// session, so instead of failing the task it waits on the user, who sends the agent on (a
    /// new prompt), steps the workflow, or cancels.
    async fn external_gives_up(
        &mut self,
        why: String,
    ) -> Result<Result<ArbiterDecision, MachineError>, machine::Event> {
        if let Some(bridge) = &self.external {
            bridge.answer_stop(crate::external::StopAnswer::Allow);
        }
        self.record("reminder_limit", None, None, Some(why.clone()));
        self.output(
            OutputKind::Error,
            format!("{why}. The agent may stop; the task waits for you (send a message, step the workflow, or cancel)."),
        );
        self.wait_for_user_because(format!("{why}; waiting for you"))
            .await?;
        self.reminders_in_row = 0;
        Ok(Ok(ArbiterDecision::Continue {
            reason: "the user resumed the task after the reminder cap".to_owned(),
        }))
    }

    /// Counts down before the reminder. `Ok(true)`: it ran out and the reminder is due;
    /// `Ok(false)`: the user stepped in (a message, or a step) and the task goes on.
    async fn countdown(&mut self) -> Result<bool, machine::Event> {
        let seconds = self.settings.countdown_seconds;
        if seconds == 0 {
            return Ok(true);
        }
        self.set_status(TaskState::Countdown, None, "countdown");
        for left in (1..=seconds).rev() {
            let label = format!("⏳ Auto-continuing in {left}s");
            self.emit(TaskEvent::Countdown {
                seconds_left: left,
                text: format!("{label} — interrupt to stop"),
                label,
            });
            match self
                .wait(tokio::time::sleep(self.settings.countdown_tick), true)
                .await
            {
                Ok(()) => {}
                Err(Stop::Interrupt) => {
                    self.record("countdown_interrupted", None, None, None);
                    self.wait_for_user().await?;
                    return Ok(false);
                }
                Err(Stop::Message) | Err(Stop::Stepped) => {
                    self.set_status(TaskState::Running, None, "countdown_stopped");
                    return Ok(false);
                }
                Err(stop) => return Err(Self::stop_event(stop)),
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
        self.log(LogEvent::UserMessage {
            text: reminder.clone(),
            source: "reminder".to_owned(),
        });
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
    async fn wait_for_user(&mut self) -> Result<(), machine::Event> {
        let reason = match self.halt_reason.take() {
            Some(why) => format!("stopped by a hook: {why}"),
            None => "interrupted by the user".to_owned(),
        };
        self.wait_for_user_because(reason).await
    }

    /// Waits until the user sends a message, resumes, steps, or cancels; the status says why.
    async fn wait_for_user_because(&mut self, reason: String) -> Result<(), machine::Event> {
        self.log(LogEvent::Interrupted);
        self.set_status(TaskState::Blocked, Some(reason), "interrupted");
        loop {
            match self.wait(std::future::pending::<()>(), true).await {
                Ok(()) => {}
                Err(Stop::Interrupt) => {}
                Err(Stop::Message) => {
                    self.set_status(TaskState::Running, None, "resumed");
                    return Ok(());
                }
                Err(Stop::Stepped) => {
                    if self.workflow.as_ref().is_some_and(|w| !w.active) {
                        self.set_status(TaskState::Running, None, "resumed");
                        return Ok(());
                    }
                }
                Err(stop) => return Err(Self::stop_event(stop)),
            }
        }
    }

    /// Moves queued user messages into the conversation.
    async fn deliver_messages(&mut self, conversation: &mut Conversation) {
        let spoke = !self.pending_messages.is_empty();
        while let Some(text) = self.pending_messages.pop_front() {
            let text = match self.submit_prompt(text).await {
                Ok(text) => text,
                Err(reason) => {
                    self.output(
                        OutputKind::Error,
                        format!("your message was blocked by a UserPromptSubmit hook: {reason}"),
                    );
                    continue;
                }
            };
            self.log(LogEvent::UserMessage {
                text: text.clone(),
                source: "user".to_owned(),
            });
            conversation.messages.push(Message::User(text));
        }
        if spoke {
            // The user spoke: the reminders start counting again.
            self.reminders_in_row = 0;
        }
    }

    /// One agent run: turns until the model stops calling tools (or the agent's turn limit).
    async fn run_agent(
        &mut self,
        conversation: &mut Conversation,
        provider: &mut dyn Provider,
        tools: &Arc<ToolContext>,
        agent_name: &str,
    ) -> RunEnd {
        let agent: Option<AgentDefinition> = self.agents.get(agent_name).cloned();
        let max_turns = agent
            .as_ref()
            .and_then(|a| a.limits.max_iterations)
            .map_or(usize::MAX, |n| n.max(1) as usize);
        self.hit_max_iterations = false;
        let mut turns = 0usize;

        // A resumed task first runs the calls its last turn still had.
        if !self.pending_calls.is_empty() {
            let calls = std::mem::take(&mut self.pending_calls);
            let mut results = std::mem::take(&mut self.pending_results);
            let mut stopped = None;
            for call in &calls {
                if stopped.is_some() {
                    results.push(ToolResult {
                        tool_call_id: call.id.clone(),
                        content: "interrupted by the user".to_owned(),
                        is_error: true,
                    });
                    continue;
                }
                match self.tool_call(call, tools, agent.as_ref()).await {
                    Ok(result) => results.push(result),
                    Err(stop) => {
                        stopped = Some(stop);
                        results.push(ToolResult {
                            tool_call_id: call.id.clone(),
                            content: "interrupted by the user".to_owned(),
                            is_error: true,
                        });
                    }
                }
            }
            conversation.messages.push(Message::ToolResults(results));
            match stopped {
                None => {}
                Some(Stop::Interrupt) => {
                    if let Err(event) = self.wait_for_user().await {
                        return RunEnd::Event(event);
                    }
                }
                Some(other) => return RunEnd::Event(Self::stop_event(other)),
            }
        }

        loop {
            self.run_queued_hooks().await;
            self.deliver_messages(conversation).await;
            if self.state != TaskState::Running {
                self.set_status(TaskState::Running, None, "turn");
            }
            let context = self
                .workflow
                .as_ref()
                .and_then(|w| w.resolve(&self.set))
                .map(|a| a.context_prompt(&self.set));
            if let Some(context) = context.as_ref().filter(|_| self.external.is_none()) {
                self.output(OutputKind::ContextInjected, context.clone());
            }
            let events = self.events.clone();
            let secrets = self.secrets.clone();
            // Each delta is redacted on its own (a key split across two deltas is not caught
            // here; the turn's whole text is, in the log).
            let on_text = move |delta: &str| {
                let _ = events.send(TaskEvent::Output {
                    kind: OutputKind::AssistantDelta,
                    text: secrets.redact(delta).into_owned(),
                    tool_call_id: None,
                    tool: None,
                    input: None,
                    is_error: None,
                });
            };
            let request = TurnRequest {
                system: agent.as_ref().map(|a| a.system_prompt.as_str()),
                messages: &conversation.messages,
                context: context.as_deref(),
                tools: &conversation.tools,
            };
            let turn = match self.wait(provider.turn(request, &on_text), false).await {
                Ok(Ok(turn)) => turn,
                Ok(Err(e)) => {
                    self.log(LogEvent::TurnFailed {
                        kind: e.kind.as_str().to_owned(),
                        message: e.message.clone(),
                    });
                    let message = format!("provider {} failed: {e}", provider.name());
                    self.output(OutputKind::Error, message);
                    return RunEnd::Failed(provider_error(&e));
                }
                Err(Stop::Interrupt) => {
                    if let Err(event) = self.wait_for_user().await {
                        return RunEnd::Event(event);
                    }
                    continue;
                }
                Err(stop) => return RunEnd::Event(Self::stop_event(stop)),
            };
            turns += 1;
            self.log(LogEvent::Turn {
                agent: agent_name.to_owned(),
                text: turn.text.clone(),
                tool_calls: turn
                    .tool_calls
                    .iter()
                    .map(|c| LoggedCall {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        input: c.input.clone(),
                    })
                    .collect(),
            });
            if !turn.text.trim().is_empty() {
                self.last_output = turn.text.clone();
            }
            conversation.messages.push(Message::Assistant {
                text: turn.text.clone(),
                tool_calls: turn.tool_calls.clone(),
            });
            if turn.tool_calls.is_empty() {
                return RunEnd::Done(self.last_output.clone());
            }
            let mut results = Vec::with_capacity(turn.tool_calls.len());
            let mut stop = None;
            for call in &turn.tool_calls {
                if let Some(stop) = &stop {
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
                match self.tool_call(call, tools, agent.as_ref()).await {
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
                None => {}
                Some(Stop::Interrupt) => {
                    if let Err(event) = self.wait_for_user().await {
                        return RunEnd::Event(event);
                    }
                    continue;
                }
                Some(other) => return RunEnd::Event(Self::stop_event(other)),
            }
            if turns >= max_turns {
                self.hit_max_iterations = true;
                self.record(
                    "agent_limit",
                    None,
                    None,
                    Some(format!("{agent_name} reached its {max_turns} turns")),
                );
                return RunEnd::Done(self.last_output.clone());
            }
        }
    }

    /// One tool call: the PreToolUse hooks, then `workflow_step`, or the agent's tool filter, the
    /// gate, the approval when blocked (or when a hook asks), the tool, and the PostToolUse hooks.
    /// Logged when it starts and when it finishes.
    async fn tool_call(
        &mut self,
        call: &ToolCall,
        tools: &Arc<ToolContext>,
        agent: Option<&AgentDefinition>,
    ) -> Result<ToolResult, Stop> {
        use crate::hooks::HookEvent;
        // One shape for hooks, the gate and the tools: Claude Code's field names.
        let canonical;
        let call = match tools::canonical_input(&call.name, &call.input) {
            Some(input) => {
                canonical = ToolCall {
                    input,
                    ..call.clone()
                };
                &canonical
            }
            None => call,
        };
        self.emit(TaskEvent::Output {
            kind: OutputKind::ToolCall,
            text: summarize_call(call),
            tool_call_id: Some(call.id.clone()),
            tool: Some(call.name.clone()),
            input: Some(call.input.clone()),
            is_error: None,
        });
        self.log(LogEvent::ToolStarted {
            id: call.id.clone(),
            name: call.name.clone(),
        });
        self.approved = false;
        let pre = self
            .fire_waiting(self.tool_invocation(HookEvent::PreToolUse, call))
            .await?;
        let mut call = call.clone();
        if let Some(input) = pre.updated_input.clone() {
            self.output(
                OutputKind::HookOutput,
                format!("a PreToolUse hook replaced the input of {}", call.name),
            );
            call.input = input;
        }
        let (mut content, is_error) = if let Some(reason) = &pre.halt {
            self.halt_reason = Some(reason.clone());
            (format!("stopped by a PreToolUse hook: {reason}"), true)
        } else if let Some(reason) = &pre.blocked {
            (format!("blocked by a PreToolUse hook: {reason}"), true)
        } else if call.name.eq_ignore_ascii_case(step::TOOL_NAME) {
            let r = self.workflow_step(&call);
            self.run_queued_hooks().await;
            r
        } else if let Some(refusal) = agent.and_then(|a| agent_refusal(a, &call)) {
            (refusal, true)
        } else {
            self.gated_call(&call, tools, pre.ask.as_deref()).await?
        };
        // A key that reached a tool's output (a file that holds it, say) goes no further: not to
        // the log, the editor, the hooks or the next model request.
        self.secrets.scrub(&mut content);
        self.note_modified(&call.name, &call.input, is_error);
        if let Some(bridge) = self.external.clone() {
            let ask = self.ask_agent.take();
            let decision = if let Some(reason) = ask.filter(|_| is_error) {
                crate::external::ToolDecision::Ask(reason)
            } else if is_error {
                crate::external::ToolDecision::Deny(content.clone())
            } else if self.approved || pre.allowed || pre.updated_input.is_some() {
                crate::external::ToolDecision::Allow {
                    updated_input: pre.updated_input.clone(),
                }
            } else {
                crate::external::ToolDecision::Pass
            };
            self.approved = false;
            bridge.decide(&call.id, decision);
        }
        if pre.blocked.is_none() && pre.halt.is_none() && self.external.is_none() {
            let post = self
                .fire_waiting(
                    self.tool_invocation(HookEvent::PostToolUse, &call)
                        .field(
                            "tool_response",
                            super::hooking::tool_response(&content, is_error),
                        )
                        .field(
                            "toolResponse",
                            super::hooking::tool_response(&content, is_error),
                        ),
                )
                .await?;
            if let Some(reason) = post.blocked {
                content.push_str(&format!("\n\n[PostToolUse hook] {reason}"));
            }
            if let Some(reason) = post.halt {
                self.halt_reason = Some(reason);
            }
            content = super::hooking::with_context(content, &post.context);
        }
        content = super::hooking::with_context(content, &pre.context);
        self.log(LogEvent::ToolFinished {
            id: call.id.clone(),
            content: content.clone(),
            is_error,
        });
        self.emit(TaskEvent::Output {
            kind: OutputKind::ToolResult,
            text: content.clone(),
            tool_call_id: Some(call.id.clone()),
            tool: Some(call.name.clone()),
            input: None,
            is_error: Some(is_error),
        });
        if self.halt_reason.is_some() {
            // A hook said `continue: false`: the result is recorded, then the task waits.
            return Err(Stop::Interrupt);
        }
        Ok(ToolResult {
            tool_call_id: call.id.clone(),
            content,
            is_error,
        })
    }

    /// The invocation of a tool event, in AutoAgent's and Claude Code's names.
    fn tool_invocation(
        &self,
        event: crate::hooks::HookEvent,
        call: &ToolCall,
    ) -> crate::hooks::Invocation {
        self.invocation(event)
            .subject(call.name.clone())
            .field("tool_name", call.name.clone())
            .field("tool_input", call.input.clone())
            .field("tool_use_id", call.id.clone())
            .field("toolName", call.name.clone())
            .field("toolInput", call.input.clone())
            .field("toolUseId", call.id.clone())
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
        hook_asks: Option<&str>,
    ) -> Result<(String, bool), Stop> {
        if self.external.is_none() && !tools::is_builtin(&call.name) {
            let known: Vec<&str> = tools::specs().iter().map(|s| s.name).collect();
            return Ok((
                format!(
                    "unknown tool \"{}\"; the tools are {}, {}",
                    crate::clip::clip(&call.name),
                    known.join(", "),
                    step::TOOL_NAME
                ),
                true,
            ));
        }
        // What a Bash command may do to the workspace, which the kernel sandbox enforces: a call
        // the user approved may write.
        let mut access = if gate::bash_may_write(self.workflow.as_ref(), &self.set, &call.input) {
            tools::WorkspaceAccess::ReadWrite
        } else {
            tools::WorkspaceAccess::ReadOnly
        };
        if let GateDecision::Block { reason, phase } = gate::check(
            self.workflow.as_ref(),
            &self.set,
            &call.name,
            &gate_view(&call.input, &tools.workspace, &self.hooks.workspace),
        ) {
            let answer = self.approval(call, &phase, &reason).await?;
            if !answer.allows() {
                return Ok((reason, true));
            }
            access = tools::WorkspaceAccess::ReadWrite;
        } else if let Some(why) = hook_asks {
            // A PreToolUse hook asked for the user's decision on a call the phase allows.
            let phase = self
                .workflow
                .as_ref()
                .and_then(|w| w.resolve(&self.set))
                .map(|a| a.current_phase.name.clone())
                .unwrap_or_default();
            let reason = format!("a PreToolUse hook asks: {why}");
            let answer = self.approval(call, &phase, &reason).await?;
            if !answer.allows() {
                return Ok((format!("the user did not allow this call ({why})"), true));
            }
        }
        if self.external.is_some() {
            // The external agent runs its own tools; rawko only decides.
            return Ok(("allowed; the external agent runs it".to_owned(), false));
        }
        if !self.unconfined_note_shown && call.name.eq_ignore_ascii_case("bash") {
            if let Some(note) = tools.sandbox.unconfined_note() {
                self.unconfined_note_shown = true;
                self.output(OutputKind::Error, format!("note: {note}"));
            }
        }
        let tools = tools.clone();
        let name = call.name.clone();
        let input = call.input.clone();
        let output = self
            .wait(
                async move { tools::run_with(&name, &input, &tools, access).await },
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
        let inv = self
            .tool_invocation(crate::hooks::HookEvent::ApprovalRequested, call)
            .field("phase", phase)
            .field("reason", reason);
        self.fire_waiting(inv).await?;
        let (reply, answer) = oneshot::channel();
        self.set_status(
            TaskState::WaitingApproval,
            Some(format!("{} is blocked in the {phase} phase", call.name)),
            "approval_requested",
        );
        let timeout = self.settings.approval_timeout;
        self.emit(TaskEvent::Approval(ApprovalRequest {
            tool_call_id: call.id.clone(),
            tool: call.name.clone(),
            input: call.input.clone(),
            phase: phase.to_owned(),
            reason: reason.to_owned(),
            summary: approval_summary(call),
            expires_at: now_millis()
                .saturating_add(i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX)),
            timeout,
            reply,
        }));
        let waited = self
            .wait(tokio::time::timeout(timeout, answer), false)
            .await;
        let (answer, why) = match waited {
            Ok(Ok(Ok(ApprovalAnswer::NoApprover))) => {
                self.ask_agent = Some(reason.to_owned());
                (
                    ApprovalAnswer::NoApprover,
                    Some(format!(
                        "no editor is attached to ask about {}; {}",
                        call.name,
                        if self.external.is_some() {
                            "the agent asks its own user"
                        } else {
                            "the call was rejected"
                        }
                    )),
                )
            }
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
        self.log(LogEvent::Approval {
            id: call.id.clone(),
            tool: call.name.clone(),
            answer: answer_name(answer).to_owned(),
        });
        self.approved = answer.allows();
        let detail = why
            .clone()
            .unwrap_or_else(|| format!("{}: {}", call.name, answer_name(answer)));
        self.record("approval_resolved", None, None, Some(detail));
        self.set_status(TaskState::Running, why, "approval_resolved");
        let inv = self
            .tool_invocation(crate::hooks::HookEvent::ApprovalResolved, call)
            .field("answer", answer_name(answer))
            .field("phase", phase);
        self.fire_waiting(inv).await?;
        Ok(answer)
    }

    /// Ends a task that ran: the end hooks, then [`Self::finish`].
    async fn end(&mut self, outcome: Outcome, summary: String) {
        let (outcome, summary, files) = self.end_hooks_before(outcome, summary).await;
        self.finish_logged(outcome, &summary);
        self.end_hooks_after(outcome, &files).await;
        self.finish_announced(outcome, summary);
    }

    /// Ends the task: the last output, the final status, and `Finished` (logged first).
    fn finish(&mut self, outcome: Outcome, summary: String) {
        self.finish_logged(outcome, &summary);
        self.finish_announced(outcome, summary);
    }

    /// The first half of the end: logged, and the completion (or error) shown.
    fn finish_logged(&mut self, outcome: Outcome, summary: &str) {
        let summary = summary.to_owned();
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
        self.log(LogEvent::Finished {
            outcome: outcome_name(outcome).to_owned(),
            summary: summary.clone(),
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
    }

    /// The second half: the final status and `Finished`, the task's last notification.
    fn finish_announced(&mut self, outcome: Outcome, summary: String) {
        if let Some(session) = &self.session {
            session.task_finished(&self.id, outcome_name(outcome));
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
        if let Some(bridge) = &self.external {
            // Nothing the external agent still waits on may hang: it is answered now.
            bridge.close();
        }
        self.emit(TaskEvent::Finished { outcome, summary });
    }
}

/// The input as the gate reads it: an absolute `file_path` (or `notebook_path`) inside the
/// workspace, as Claude Code sends it, also as a workspace-relative `path`, so rules such as
/// `Edit(docs/**)` match it. Hooks and tools see the input unchanged.
fn gate_view<'a>(
    input: &'a serde_json::Value,
    canonical: &std::path::Path,
    given: &std::path::Path,
) -> std::borrow::Cow<'a, serde_json::Value> {
    use std::borrow::Cow;
    let Some(obj) = input.as_object() else {
        return Cow::Borrowed(input);
    };
    let Some(file) = ["file_path", "notebook_path"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(serde_json::Value::as_str))
    else {
        return Cow::Borrowed(input);
    };
    let file = std::path::Path::new(file);
    if !file.is_absolute() {
        return Cow::Borrowed(input);
    }
    let Some(relative) = file
        .strip_prefix(canonical)
        .or_else(|_| file.strip_prefix(given))
        .ok()
    else {
        return Cow::Borrowed(input);
    };
    let mut obj = obj.clone();
    obj.insert(
        "path".to_owned(),
        serde_json::Value::String(relative.display().to_string()),
    );
    Cow::Owned(serde_json::Value::Object(obj))
}

/// Why the running agent may not make this call (its tool list, its Bash filter), if it may not.
fn agent_refusal(agent: &AgentDefinition, call: &ToolCall) -> Option<String> {
    if !agent.tool_allowed(&call.name) {
        return Some(format!(
            "the tool \"{}\" is not available to agent {}",
            call.name, agent.name
        ));
    }
    if call.name.eq_ignore_ascii_case("bash") {
        let command = call
            .input
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Err(why) = agent.check_bash(command) {
            return Some(why);
        }
    }
    None
}

/// A model's answer quoted for a message: its first 120 characters.
fn quote(text: &str) -> String {
    let t = text.trim();
    format!("\"{}\"", clip_to(t, 120))
}

fn format_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs >= 1.0 && (secs - secs.round()).abs() < 1e-9 {
        format!("{} s", secs.round())
    } else {
        format!("{secs:.1} s")
    }
}

/// Rebuilds a task from its log directory, ready for [`super::spawn`]'s resume.
pub fn load_replay(
    dir: &std::path::Path,
    config: &MachineConfig,
) -> Result<(TaskFiles, Box<Replay>), String> {
    let (files, contents) = TaskFiles::open(dir).map_err(|e| e.to_string())?;
    let replay = super::log::replay(&contents.records, config)?;
    Ok((files, Box::new(replay)))
}

#[cfg(test)]
mod plain_name_tests {
    use super::plain_name;

    #[test]
    fn an_id_becomes_one_plain_path_component() {
        assert_eq!(plain_name("task-1795-1"), "task-1795-1");
        assert_eq!(plain_name("ext-a.b_c"), "ext-a.b_c");
        assert_eq!(plain_name("../../etc"), "_.._etc");
        assert_eq!(plain_name(".."), "_");
        assert_eq!(plain_name(""), "_");
        assert_eq!(plain_name("a/b\0c"), "a_b_c");
        assert_eq!(plain_name(&"x".repeat(300)).len(), 200);
    }
}

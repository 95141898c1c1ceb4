//! The imperative shell: one actor per task runs the workflow, calls the provider and the tools,
//! asks for approvals, counts down and reminds. Faces (the LSP server, `rawko demo`) start tasks
//! here, send them commands and turn their events into what their user sees.
//!
//! A task is a tokio task that owns its state and receives [`TaskCommand`]s over a channel
//! (invariant 3). It reports through [`TaskEvent`]s, in order, on one channel; the face gives them
//! their `seq`. A snapshot shared behind a mutex lets a face answer `listTasks`/`getTask` without
//! waiting on the actor.

mod actor;
pub use actor::load_replay;
pub mod arbiter;
pub mod loaded;
pub mod log;
pub mod pins;
pub mod queue;
pub mod rewind;
pub mod stored;
pub mod subagents;
pub mod tasks;
pub mod transcript;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::oneshot;

use crate::agents::AgentSet;
use crate::config::Settings;
use crate::provider::{Provider, ProviderSpec};
use crate::store::TaskFiles;
use crate::workflow::outline::Progress;
use crate::workflow::step::StepAction;
use crate::workflow::WorkflowSet;

/// Where a task is, as the editor shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    Running,
    WaitingApproval,
    Countdown,
    /// Stopped and waiting for the user (after an interrupt).
    Blocked,
    /// Found unfinished when the server started (it or the machine stopped); resume continues it.
    Interrupted,
    Complete,
    Failed,
    Cancelled,
}

impl TaskState {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Running => "running",
            TaskState::WaitingApproval => "waiting_approval",
            TaskState::Countdown => "countdown",
            TaskState::Blocked => "blocked",
            TaskState::Interrupted => "interrupted",
            TaskState::Complete => "complete",
            TaskState::Failed => "failed",
            TaskState::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<TaskState> {
        [
            TaskState::Running,
            TaskState::WaitingApproval,
            TaskState::Countdown,
            TaskState::Blocked,
            TaskState::Interrupted,
            TaskState::Complete,
            TaskState::Failed,
            TaskState::Cancelled,
        ]
        .into_iter()
        .find(|t| t.as_str() == s)
    }

    pub fn is_finished(self) -> bool {
        matches!(
            self,
            TaskState::Complete | TaskState::Failed | TaskState::Cancelled
        )
    }

    /// The state as the status line says it after the breadcrumb, e.g. ` — waiting for
    /// approval`; empty while the task runs.
    pub fn words(self) -> &'static str {
        match self {
            TaskState::Running => "",
            TaskState::WaitingApproval => " — waiting for approval",
            TaskState::Countdown => " — auto-continuing",
            TaskState::Blocked => " — interrupted; send a message to continue",
            TaskState::Interrupted => " — interrupted; resume to continue",
            TaskState::Complete => " — complete",
            TaskState::Failed => " — failed",
            TaskState::Cancelled => " — cancelled",
        }
    }
}

/// How the id of an external agent's session starts (`rawko hook`): the server names those
/// tasks so, and tells clients with `external` rather than having them read ids.
pub const EXTERNAL_ID_PREFIX: &str = "ext-";

/// Whether `task_id` names an external agent's session.
pub fn is_external(task_id: &str) -> bool {
    task_id.starts_with(EXTERNAL_ID_PREFIX)
}

/// What kind of output line a task produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputKind {
    AssistantDelta,
    ToolCall,
    ToolResult,
    ContextInjected,
    Reminder,
    HookOutput,
    Completion,
    Error,
}

/// How a task ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Complete,
    Failed,
    Cancelled,
}

impl Outcome {
    /// Its name in a task's log (`complete`, `failed`, `cancelled`).
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Complete => "complete",
            Outcome::Failed => "failed",
            Outcome::Cancelled => "cancelled",
        }
    }
}

/// The user's answer to a blocked tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalAnswer {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
    /// Dismissed, or the editor could not be asked: the call does not run.
    Cancelled,
    /// No editor is attached to ask (`rawko serve` without one): the call does not run; an
    /// external agent is told to ask its own user.
    NoApprover,
}

impl ApprovalAnswer {
    pub fn allows(self) -> bool {
        matches!(
            self,
            ApprovalAnswer::AllowOnce | ApprovalAnswer::AllowAlways
        )
    }
}

/// One level of the breadcrumb.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Crumb {
    pub name: String,
    pub phase_name: String,
    pub emoji: String,
    /// 1-based.
    pub index: usize,
    pub total: usize,
}

impl Crumb {
    /// The breadcrumb of where a workflow is, as the faces show it.
    pub fn trail(active: &crate::workflow::ActiveWorkflow) -> Vec<Crumb> {
        active
            .breadcrumb
            .iter()
            .map(|l| Crumb {
                name: l.name.to_owned(),
                phase_name: l.phase_name.to_owned(),
                emoji: l.emoji.to_owned(),
                index: l.index,
                total: l.total,
            })
            .collect()
    }
}

/// A workflow's key and display name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowName {
    pub key: String,
    pub name: String,
}

/// A blocked tool call waiting for the user.
#[derive(Debug)]
pub struct ApprovalRequest {
    pub tool_call_id: String,
    pub tool: String,
    pub input: Value,
    pub phase: String,
    /// Why the call was blocked, as the agent is told it.
    pub reason: String,
    /// Why the call was blocked, as the user is told it (e.g. `Write is blocked in the Plan
    /// phase (allowed: Read, Grep)`).
    pub detail: String,
    /// The call in one line, e.g. `Write notes.md (12 bytes)`.
    pub summary: String,
    /// When the task stops waiting for the answer (milliseconds since the Unix epoch).
    pub expires_at: i64,
    /// The subagent that made the call, when a subagent did.
    pub subagent: Option<Arc<subagents::SubagentOf>>,
    /// How long the task waits for the answer in all.
    pub timeout: std::time::Duration,
    /// Send the answer here. Dropped unanswered means the task stopped waiting (timeout, cancel).
    pub reply: oneshot::Sender<ApprovalAnswer>,
}

/// Everything a task reports, in order.
#[derive(Debug)]
pub enum TaskEvent {
    Status {
        state: TaskState,
        breadcrumb: Vec<Crumb>,
        text: String,
        reason: Option<String>,
        /// The workflow the task runs, if any.
        workflow: Option<WorkflowName>,
        /// Where the task is, without its state (`text` adds the state).
        breadcrumb_text: String,
        /// The current phase's position among the workflow's concrete phases; `None` without a
        /// workflow or once it finished.
        phase_index: Option<usize>,
        /// How many of the workflow's concrete phases are done (those before it): every one
        /// (`usize::MAX`) once the workflow finished, the phases before where it stopped once it
        /// was cancelled; `None` without a workflow.
        phases_done: Option<usize>,
        /// Who the task is when it is a subagent.
        subagent: Option<Arc<subagents::SubagentOf>>,
    },
    Countdown {
        seconds_left: u32,
        text: String,
        /// The countdown without the hint of how to stop it.
        label: String,
    },
    Output {
        kind: OutputKind,
        text: String,
        tool_call_id: Option<String>,
        tool: Option<String>,
        input: Option<Value>,
        is_error: Option<bool>,
    },
    /// Boxed: the largest event, and rare (every task's event channel holds room for 32 events
    /// of the enum's size).
    Approval(Box<ApprovalRequest>),
    /// Another agent takes the task over (not sent for the first agent): `text` is a one-line
    /// separator such as `── handoff: planner → developer ──`.
    Handoff {
        agent: String,
        text: String,
    },
    /// A subagent of an external agent started or stopped (`agent_type`, `agent_id` as the agent
    /// names them): shown under the task's session; `text` says which and what.
    Subagent {
        agent_type: String,
        agent_id: String,
        text: String,
    },
    Finished {
        outcome: Outcome,
        summary: String,
    },
    /// How full the model's context is after a turn, as its provider reported it (not logged: a
    /// face may show it).
    Usage {
        used: u64,
        /// The model's context window, when the provider knows it.
        window: Option<u64>,
    },
}

/// What a face can ask of a running task.
#[derive(Debug)]
pub enum TaskCommand {
    Cancel,
    /// Stops a countdown or the current turn; the task then waits for the user.
    Interrupt,
    SendMessage(String),
    /// `next`, `loop` or `status` from the editor; the reply is the text to show.
    Step {
        action: StepAction,
        reply: oneshot::Sender<Result<String, String>>,
    },
    /// Continue an interrupted task.
    Resume,
    /// The external agent's session ended (`ended`: the task is suspended, blocked until it comes
    /// back) or came back (the task goes on in the state it was suspended in); `text` says so.
    ExternalSession {
        ended: bool,
        text: String,
    },
    /// A manual override for the orchestrator (force an agent, skip a step, retry, reset).
    Override(crate::machine::Event),
    /// Start a workflow in a task that runs none yet (an external agent's session), pinned
    /// first (`None` for a task kept in memory only).
    SetWorkflow {
        key: String,
        pinned: Option<Arc<pins::PinnedWorkflows>>,
        reply: oneshot::Sender<Result<String, String>>,
    },
}

/// One line of a task's history, for `getTask`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HistoryItem {
    pub at: i64,
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_after: Option<String>,
    /// The machine guard that decided, for machine transitions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guard: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What a face may read of a task at any time.
#[derive(Debug, Clone)]
pub struct TaskSnapshot {
    pub task_id: String,
    pub description: String,
    pub workflow: Option<String>,
    /// The display name of the workflow, when the actor announced it.
    pub workflow_name: Option<String>,
    pub state: TaskState,
    pub breadcrumb: Vec<Crumb>,
    pub breadcrumb_text: String,
    pub status_text: String,
    pub started_at: i64,
    pub updated_at: i64,
    pub history: Vec<HistoryItem>,
    pub workspace: PathBuf,
    /// The orchestrator machine's state.
    pub machine_state: String,
    /// The agent running (or last run).
    pub agent: Option<String>,
    /// How far the task got through its workflow's concrete phases.
    pub progress: Progress,
    /// Who the task is when it is a subagent.
    pub subagent: Option<Arc<subagents::SubagentOf>>,
    /// How the task ended and its summary (a subagent's final answer), once it has.
    pub ended: Option<(Outcome, String)>,
}

/// The handle a face keeps for a task.
#[derive(Debug, Clone)]
pub struct TaskHandle {
    pub id: String,
    commands: crate::engine::queue::Sender<TaskCommand>,
    pub snapshot: Arc<Mutex<TaskSnapshot>>,
    /// The workflows the task runs with (`None` for a stored task: the service reads the ones
    /// it pinned).
    pub workflows: Option<Arc<WorkflowSet>>,
}

/// A command for a task whose actor has ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the task has ended")]
pub struct TaskEnded;

impl TaskHandle {
    pub fn send(&self, command: TaskCommand) -> Result<(), TaskEnded> {
        self.commands.send(command).map_err(|_| TaskEnded)
    }

    pub fn snapshot(&self) -> TaskSnapshot {
        self.snapshot
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }

    /// A handle for a task that is not running (stored, finished or interrupted): commands fail.
    pub fn stored(snapshot: TaskSnapshot) -> TaskHandle {
        let (commands, _) = queue::channel();
        TaskHandle {
            id: snapshot.task_id.clone(),
            commands,
            snapshot: Arc::new(Mutex::new(snapshot)),
            workflows: None,
        }
    }

    /// Whether the task's actor has ended (it takes no more commands).
    pub fn is_ended(&self) -> bool {
        self.commands.is_closed()
    }

    pub fn state(&self) -> TaskState {
        self.snapshot
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .state
    }
}

/// Which arbiter a task uses.
// One per task, moved once: its size does not matter.
#[allow(clippy::large_enum_variant)]
pub enum ArbiterSetup {
    /// Agent transitions and the phases' `agent:` keys decide.
    Deterministic,
    /// A model decides, asked through this provider.
    Model {
        provider: Box<dyn Provider>,
        spec: ProviderSpec,
    },
}

/// Everything needed to start (or resume) a task.
pub struct TaskSpec {
    pub id: String,
    pub description: String,
    /// The workflow key, already checked against `workflows`.
    pub workflow: Option<String>,
    pub workflows: Arc<WorkflowSet>,
    pub agents: Arc<AgentSet>,
    pub provider: Box<dyn Provider>,
    /// How to build the provider again (written to the log).
    pub provider_spec: ProviderSpec,
    pub arbiter: ArbiterSetup,
    /// The agent the task starts with, when the user chose one.
    pub start_agent: Option<String>,
    pub workspace: PathBuf,
    pub settings: Settings,
    /// The state directory to persist the task in; `None` keeps it in memory only.
    pub store: Option<PathBuf>,
    /// A task rebuilt from its log, to continue.
    pub resume: Option<(TaskFiles, Box<log::Replay>)>,
    /// An event for the machine right after resuming (retry or reset of a finished task).
    pub then: Option<crate::machine::Event>,
    /// The hooks that run at the task's lifecycle points (already filtered by workspace trust).
    pub hooks: Arc<crate::hooks::Hooks>,
    /// The session the task belongs to, told when the task starts and ends.
    pub session: Option<Arc<crate::hooks::session::SessionRecorder>>,
    /// Set when the "model" is an external agent (Claude Code through its hooks): its tools are
    /// not run by rawko; the bridge takes rawko's decisions back to it.
    pub external: Option<Arc<crate::external::Bridge>>,
    /// The client that does the tools' file and process I/O (an ACP editor), if any.
    pub client_io: Option<Arc<dyn crate::tools::ClientIo>>,
    /// The definitions the task runs under, pinned in the store (see [`pins`]).
    pub pins: pins::Pins,
    /// Where its subagents start and the profiles they run, or who it is as a subagent.
    pub delegation: subagents::Delegation,
}

/// Milliseconds since the Unix epoch (see [`crate::clock`]).
pub use crate::clock::now_millis;

/// Where a task's events come out, in the order they happened; it ends after `Finished`.
pub type EventReceiver = queue::Receiver<TaskEvent>;

/// The actor's end of its events.
pub type EventSender = queue::Sender<TaskEvent>;

/// A new task id: time-ordered and unique within the process.
pub fn new_task_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed) + 1;
    format!("task-{}-{n}", now_millis())
}

/// Starts a task's actor on the current tokio runtime. The events come out of the receiver in
/// the order they happened; the channel closes after `Finished`.
pub fn spawn(spec: TaskSpec) -> (TaskHandle, crate::engine::EventReceiver) {
    spawn_then(spec, || {})
}

/// [`spawn`], calling `ended` once the task has ended and everything it logged and announced is
/// durable and sent (the task service forgets the task then: from that moment it reads the
/// store).
pub fn spawn_then(
    spec: TaskSpec,
    ended: impl FnOnce() + Send + 'static,
) -> (TaskHandle, crate::engine::EventReceiver) {
    let (command_tx, command_rx) = queue::channel();
    let (event_tx, event_rx) = queue::channel();
    let now = now_millis();
    let started_at = spec.resume.as_ref().map_or(now, |(_, r)| r.started_at);
    let snapshot = Arc::new(Mutex::new(TaskSnapshot {
        task_id: spec.id.clone(),
        description: spec.description.clone(),
        workflow: spec.workflow.clone(),
        workflow_name: None,
        state: TaskState::Running,
        breadcrumb: Vec::new(),
        breadcrumb_text: String::new(),
        status_text: String::new(),
        started_at,
        updated_at: now,
        history: Vec::new(),
        workspace: spec.workspace.clone(),
        machine_state: "idle".to_owned(),
        agent: None,
        progress: Progress::default(),
        subagent: spec.delegation.subagent.as_ref().map(|s| s.of.clone()),
        ended: None,
    }));
    let handle = TaskHandle {
        id: spec.id.clone(),
        commands: command_tx,
        snapshot: snapshot.clone(),
        workflows: Some(spec.workflows.clone()),
    };
    let persisted = spec.store.is_some() || spec.resume.is_some();
    let guard = PanicGuard {
        id: spec.id.clone(),
        store: spec.store.clone(),
        external: spec.external.clone(),
        snapshot: snapshot.clone(),
        events: event_tx.clone(),
    };
    let run = actor::run(Box::new(spec), snapshot, event_tx, command_rx);
    tracing::trace!(
        actor_bytes = std::mem::size_of_val(&run),
        event_bytes = std::mem::size_of::<TaskEvent>(),
        command_bytes = std::mem::size_of::<TaskCommand>(),
        "a task's actor"
    );
    // Boxed before it moves into the task: a future moved into an async block is held twice
    // (as the block's capture and as its local), and a waiting task would hold both.
    let run = Box::pin(run);
    tokio::spawn(async move {
        use futures::FutureExt;
        let run = std::panic::AssertUnwindSafe(run);
        match run.catch_unwind().await {
            Err(panic) => guard.failed(&panic_message(panic.as_ref())),
            Ok(()) => drop(guard),
        }
        if persisted {
            crate::store::journal().flush().await;
        }
        ended();
    });
    (handle, event_rx)
}

/// What is needed to end a task whose actor panicked (invariant 8): the actor's own state is
/// gone, so the failure is written from outside it.
struct PanicGuard {
    id: String,
    store: Option<PathBuf>,
    external: Option<Arc<crate::external::Bridge>>,
    snapshot: Arc<Mutex<TaskSnapshot>>,
    events: crate::engine::EventSender,
}

impl PanicGuard {
    /// The task fails with the reason: logged (so a new server lists it as failed, not
    /// interrupted), shown in its snapshot, and announced; an external agent waiting on it is
    /// answered.
    fn failed(self, why: &str) {
        let summary = format!("rawko failed inside this task (a bug; please report it): {why}");
        tracing::error!(task = %self.id, "the task's actor panicked: {why}");
        if let Some(store) = &self.store {
            let dir = TaskFiles::dir_of(store, &self.id);
            if let Ok((mut files, _)) = TaskFiles::open(&dir) {
                let finished = serde_json::to_value(log::LogEvent::Finished {
                    outcome: "failed".to_owned(),
                    summary: summary.clone(),
                })
                .unwrap_or_default();
                if let Err(e) = files.append(now_millis(), &finished) {
                    tracing::error!(task = %self.id, "cannot record the failure: {e}");
                }
                // Durable before it is announced below.
                files.flush_blocking();
                // The snapshot still says running: the log is read instead.
                let _ = std::fs::remove_file(dir.join("snapshot.json"));
            }
        }
        let mut subagent = None;
        let (breadcrumb, text, workflow, progress) = match self.snapshot.lock() {
            Ok(mut s) => {
                s.state = TaskState::Failed;
                s.status_text = summary.clone();
                s.ended = Some((Outcome::Failed, summary.clone()));
                subagent = s.subagent.clone();
                s.updated_at = now_millis();
                let workflow = s.workflow.clone().map(|key| WorkflowName {
                    name: s.workflow_name.clone().unwrap_or_else(|| key.clone()),
                    key,
                });
                (
                    s.breadcrumb.clone(),
                    s.breadcrumb_text.clone(),
                    workflow,
                    s.progress,
                )
            }
            Err(_) => (Vec::new(), String::new(), None, Default::default()),
        };
        if let Some(bridge) = &self.external {
            bridge.close();
        }
        let _ = self.events.send(TaskEvent::Output {
            kind: OutputKind::Error,
            text: summary.clone(),
            tool_call_id: None,
            tool: None,
            input: None,
            is_error: None,
        });
        let _ = self.events.send(TaskEvent::Status {
            state: TaskState::Failed,
            breadcrumb,
            text: format!("{text}{}", TaskState::Failed.words()),
            breadcrumb_text: text,
            reason: Some(summary.clone()),
            phases_done: workflow.is_some().then_some(progress.done),
            workflow,
            phase_index: progress.current,
            subagent,
        });
        let _ = self.events.send(TaskEvent::Finished {
            outcome: Outcome::Failed,
            summary,
        });
    }
}

/// The text of a panic's payload.
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with no message".to_owned()
    }
}

//! The task actor. The orchestrator machine decides what happens next (select an agent, run it,
//! evaluate the run, finish); this actor does it: the arbiter's choices, the agent loop with the
//! phase gate, approvals and `workflow_step`, the countdown and the not-done reminder. Every event
//! is appended to the task's log before it is announced, so a killed task resumes where it
//! stopped. Every await point also listens for commands, so a cancel, an interrupt, a step or an
//! override from the editor acts at once whatever the task is doing.
//!
//! - `mod.rs`: [`Control`], the actor's state in groups, and [`run`], which starts or resumes a
//!   task.
//! - `drive.rs`: the machine's effects run in turn, events applied, the arbiter's selection.
//! - `agent.rs`: the agent loop (model turns, tool calls, the gate, `workflow_step`).
//! - `approval.rs`: approvals of blocked calls.
//! - `checkpointing.rs`: the workspace's checkpoints at each phase's entry and after each call
//!   that may have changed files.
//! - `commands.rs`: [`Control::wait`], which serves commands while the task awaits anything, and
//!   the waits for the user.
//! - `definitions.rs`: what the task tells about its pinned definitions when it resumes and ends.
//! - `evaluate.rs`: the arbiter's evaluation and what the not-done policy decides, done.
//! - `not_done.rs`: the not-done policy itself, a pure function with table tests.
//! - `status.rs`: events, the log, the history, the status and snapshot, the task's end.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use super::arbiter::DEFAULT_AGENT;
use super::log::{LogEvent, Replay};
use super::{
    now_millis, ArbiterSetup, Outcome, OutputKind, TaskCommand, TaskSnapshot, TaskSpec, TaskState,
};
use crate::agents::AgentSet;
use crate::config::Settings;
use crate::machine::{self, Effect, Machine, MachineConfig, MachineError};
use crate::provider::{Message, ToolCall, ToolDescription, ToolResult};
use crate::store::TaskFiles;
use crate::tools::ToolContext;
use crate::workflow::texts;
use crate::workflow::{WorkflowSet, WorkflowState};

mod agent;
mod approval;
mod checkpointing;
mod commands;
mod definitions;
mod delegate;
mod drive;
mod evaluate;
mod hooking;
mod not_done;
mod status;

use agent::tool_descriptions;

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
    /// Where the task is in its workflow.
    pub(super) pos: Position,
    /// The orchestrator machine and what its arbiter chooses from.
    orch: Orchestration,
    settings: Settings,
    /// Where events go, where the snapshot is shared, where commands come from.
    channels: Channels,
    /// The task's log, transcript and snapshot on disk.
    pub(super) persist: Persist,
    /// The keys and secrets rawko holds: redacted from everything announced or logged.
    pub(super) secrets: crate::secrets::Secrets,
    pub(super) state: TaskState,
    /// What came in and was not handled yet.
    pending: Pending,
    /// The "always" answers and what the last approval decided.
    approvals: Approvals,
    /// What the not-done policy counts.
    pub(super) not_done: NotDoneCounts,
    pub(super) last_output: String,
    pub(super) hooks: Arc<crate::hooks::Hooks>,
    /// What the task keeps about its hooks.
    pub(super) hook_state: HookState,
    session: Option<Arc<crate::hooks::session::SessionRecorder>>,
    pub(super) provider_name: String,
    pub(super) started_at: i64,
    /// The external agent this task stands for, if it is one.
    external: Option<Arc<crate::external::Bridge>>,
    /// Whether the task said what it says once about Bash's sandbox (that its commands run
    /// without the kernel sandbox, what of their environment it leaves out).
    sandbox_notes_shown: bool,
    /// The definitions the task runs under, pinned in the store.
    pins: crate::engine::pins::Pins,
    /// Whether the task said that the workspace's `.git` is not followed (once).
    repository_note_shown: bool,
    /// The state an external task was in when its agent's session ended (it is suspended until
    /// the session comes back).
    suspended_from: Option<TaskState>,
    /// The workspace's checkpoints.
    checkpointing: checkpointing::Checkpointing,
    /// How the task's provider is built (its subagents run it unless their profile says).
    pub(super) provider_spec: crate::provider::ProviderSpec,
    /// Where the task's subagents start and which profiles they run, or who it is as one.
    pub(super) delegation: crate::engine::subagents::Delegation,
    /// The subagents each `delegate_to_subagents` call started, by call id.
    delegations: std::collections::HashMap<String, Vec<String>>,
}

/// The workflows a task can run and where it is in one.
pub(super) struct Position {
    pub(super) set: Arc<WorkflowSet>,
    pub(super) workflow: Option<WorkflowState>,
}

/// The orchestrator machine and what the arbiter chooses from.
struct Orchestration {
    machine: Machine,
    agents: Arc<AgentSet>,
    default_agent: String,
    model_arbiter: bool,
    /// Whether the last agent run ended at the agent's turn limit.
    hit_max_iterations: bool,
    /// The agent that ran last, to announce a handoff when another one takes over.
    last_agent: Option<String>,
}

/// The actor's ends of its channels.
struct Channels {
    events: crate::engine::EventSender,
    snapshot: Arc<Mutex<TaskSnapshot>>,
    commands: crate::engine::queue::Receiver<TaskCommand>,
}

/// The task's files.
#[derive(Default)]
pub(super) struct Persist {
    pub(super) files: Option<TaskFiles>,
    /// The conversation in Claude Code's transcript format, for hooks (beside the log).
    pub(super) transcript: Option<super::transcript::Transcript>,
    /// Set when the log could not be written: the task stops, since it could not be resumed.
    log_error: Option<String>,
    /// The provider's agent session last logged (`acp`).
    pub(super) agent_session: Option<String>,
}

/// What came in and waits to be handled.
#[derive(Default)]
struct Pending {
    /// User messages for the next turn.
    messages: VecDeque<String>,
    /// Tool calls of the last turn that a resumed task still has to run, and the results the
    /// turn already has.
    calls: Vec<ToolCall>,
    results: Vec<ToolResult>,
    /// A resumed task whose agent's last turn (logged, calling no tools) ended its run.
    ended_turn: Option<String>,
}

/// Approvals: the answers remembered for the task, and the last one.
#[derive(Default)]
struct Approvals {
    always_allowed: HashSet<String>,
    always_rejected: HashSet<String>,
    /// No editor could be asked about the last blocked call: an external agent is told to ask its
    /// own user, with this reason.
    ask_agent: Option<String>,
    /// Whether the user allowed the last blocked call (an external agent is told so).
    approved: bool,
    /// Calls an ACP agent runs ([`crate::provider::Runner::Agent`]) that the user allowed past
    /// the gate: its provider is told before the next turn (`Provider::user_approved`).
    agent_approved: Vec<String>,
}

/// What the not-done policy counts (see [`not_done`]).
#[derive(Default)]
pub(super) struct NotDoneCounts {
    /// Reminders (and Stop hooks that sent the agent on) since the user last spoke or the
    /// workflow last moved.
    pub(super) reminders_in_row: u32,
    /// Whether the agent goes on because a Stop hook blocked its last stop.
    pub(super) stop_hook_active: bool,
}

/// What the task keeps about its hooks.
#[derive(Default)]
pub(super) struct HookState {
    /// Hook events waiting for the next point where hooks can run.
    pub(super) queued: Vec<crate::hooks::Invocation>,
    /// Files the task's Write and Edit calls changed.
    pub(super) files_modified: std::collections::BTreeSet<String>,
    /// Why the task waits for the user, when a hook (not the user) stopped it.
    pub(super) halt_reason: Option<String>,
    /// The hooks whose configuration error the user was told about (once per task).
    pub(super) config_errors_shown: HashSet<String>,
}

/// The conversation the provider continues.
struct Conversation {
    messages: Vec<Message>,
    /// The same for every task: shared.
    tools: Arc<[ToolDescription]>,
}

/// `Box::pin(future)`, saying (at trace level) how big the future is: the actor boxes the
/// futures of its large and mutually exclusive parts, so a waiting task holds only the path it
/// waits on.
pub(super) fn boxed<F: std::future::Future>(
    what: &'static str,
    future: F,
) -> std::pin::Pin<Box<F>> {
    tracing::trace!(what, bytes = std::mem::size_of::<F>(), "boxed actor future");
    Box::pin(future)
}

/// The tools every task offers its model, built once.
fn shared_tool_descriptions() -> Arc<[ToolDescription]> {
    static TOOLS: std::sync::OnceLock<Arc<[ToolDescription]>> = std::sync::OnceLock::new();
    TOOLS.get_or_init(|| tool_descriptions().into()).clone()
}

/// The same with `delegate_to_subagents`, for a phase that allows it.
fn delegating_tool_descriptions() -> Arc<[ToolDescription]> {
    static TOOLS: std::sync::OnceLock<Arc<[ToolDescription]>> = std::sync::OnceLock::new();
    TOOLS
        .get_or_init(|| {
            let mut tools = tool_descriptions();
            tools.push(ToolDescription {
                name: crate::engine::subagents::TOOL_NAME.to_owned(),
                description: crate::engine::subagents::DESCRIPTION.to_owned(),
                input_schema: crate::engine::subagents::parameters_schema(),
            });
            tools.into()
        })
        .clone()
}

/// A subagent's tools: neither `workflow_step` (it never moves the workflow) nor delegation
/// (depth 1).
fn subagent_tool_descriptions() -> Arc<[ToolDescription]> {
    static TOOLS: std::sync::OnceLock<Arc<[ToolDescription]>> = std::sync::OnceLock::new();
    TOOLS
        .get_or_init(|| {
            let mut tools = tool_descriptions();
            tools.retain(|t| t.name != crate::workflow::step::TOOL_NAME);
            tools.into()
        })
        .clone()
}

pub(super) async fn run(
    // Boxed: an async fn's arguments are held apart from the locals they move into.
    spec: Box<TaskSpec>,
    snapshot: Arc<Mutex<TaskSnapshot>>,
    events: crate::engine::EventSender,
    commands: crate::engine::queue::Receiver<TaskCommand>,
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
        client_io,
        pins,
        delegation,
    } = *spec;
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
        pos: Position {
            set: workflows,
            workflow: None,
        },
        orch: Orchestration {
            machine: Machine::new(machine_config),
            agents,
            default_agent,
            model_arbiter,
            hit_max_iterations: false,
            last_agent: None,
        },
        settings,
        channels: Channels {
            events,
            snapshot,
            commands,
        },
        persist: Persist::default(),
        secrets: Default::default(),
        state: TaskState::Running,
        pending: Pending::default(),
        approvals: Approvals::default(),
        not_done: NotDoneCounts::default(),
        last_output: String::new(),
        hooks,
        session,
        provider_name,
        started_at,
        hook_state: HookState::default(),
        external,
        sandbox_notes_shown: false,
        pins,
        repository_note_shown: false,
        suspended_from: None,
        checkpointing: Default::default(),
        delegation,
        delegations: Default::default(),
        provider_spec: provider_spec.clone(),
    };
    if let Some(session) = &ctl.session {
        session.task_started(&id);
    }
    ctl.secrets = crate::secrets::Secrets::new(&ctl.settings, |k| std::env::var(k).ok());
    // The description a user pasted a key into is shown (getTask) and stored (the snapshot)
    // redacted, like everything else the task writes.
    if let Ok(mut snap) = ctl.channels.snapshot.lock() {
        ctl.secrets.scrub(&mut snap.description);
    }
    let mut tools = match ToolContext::new(&workspace) {
        Ok(mut tools) => {
            tools.bash_timeout = ctl.settings.bash_timeout;
            tools.env_remove = ctl.secrets.env_names().to_vec();
            tools.sandbox.settings = ctl.settings.sandbox.clone();
            tools.client = client_io;
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
        tools: if ctl.delegation.subagent.is_some() {
            subagent_tool_descriptions()
        } else {
            shared_tool_descriptions()
        },
    };

    let mut effects: VecDeque<Effect> = VecDeque::new();
    match resume {
        None => {
            if let Some(dir) = &store {
                match TaskFiles::create(dir, &id) {
                    Ok(files) => ctl.persist.files = Some(files),
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
                definitions: Some(ctl.pins.refs()).filter(|r| !r.is_empty()),
                subagent: ctl.delegation.subagent.as_ref().map(|s| (*s.of).clone()),
                pi_profile: ctl
                    .delegation
                    .subagent
                    .as_ref()
                    .and_then(|s| s.pi_profile.clone()),
            });
            let pi_profiles = ctl.delegation.profiles.pi();
            if ctl.delegation.host.is_some() && !pi_profiles.is_empty() {
                ctl.log(LogEvent::Profiles {
                    profiles: pi_profiles,
                });
            }
            let mut first_message = description.clone();
            let subagent_state = ctl.delegation.subagent.as_ref().map(|s| s.state.clone());
            if let Some(state) = subagent_state {
                // A subagent works in its parent's phase, from its own first message.
                if let Some(state) = state {
                    ctl.log(LogEvent::Workflow {
                        state: state.clone(),
                    });
                    ctl.pos.workflow = Some(state);
                }
            } else if let Some(key) = &workflow {
                match WorkflowState::start(&ctl.pos.set, key, &description, &id, started_at) {
                    Ok(state) => {
                        if let Some(def) = ctl.pos.set.get(&state.workflow_key) {
                            let initial = texts::initial_message(def, &ctl.pos.set, &description);
                            if !initial.trim().is_empty() {
                                first_message = initial;
                            }
                        }
                        ctl.log(LogEvent::Workflow {
                            state: state.clone(),
                        });
                        ctl.pos.workflow = Some(state);
                    }
                    Err(e) => {
                        ctl.finish(Outcome::Failed, format!("cannot start workflow: {e}"));
                        return;
                    }
                }
            }
            ctl.set_status(TaskState::Running, None, "task started");
            match boxed("start_hooks", ctl.start_hooks(&first_message, false)).await {
                Ok(context) => first_message = hooking::with_context(first_message, &context),
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
            ctl.persist.files = Some(files);
            let replay = *replay;
            provider.resume_after(replay.turns_played);
            if let Some(id) = replay.agent_session.clone() {
                ctl.persist.agent_session = Some(id.clone());
                provider.load_session(id);
            }
            if let Some(p) = &mut arbiter_provider {
                p.resume_after(replay.arbiter_turns);
            }
            conversation.messages = replay.messages;
            ctl.pos.workflow = replay.workflow;
            ctl.delegations = replay.delegations;
            if ctl.pos.workflow.is_none() && ctl.delegation.subagent.is_none() {
                if let Some(key) = &replay.workflow_key {
                    // Killed after the task's start was recorded but before its workflow's: the
                    // workflow starts now, so the task never runs with fewer restrictions than
                    // it was started with.
                    match WorkflowState::start(
                        &ctl.pos.set,
                        key,
                        &description,
                        &id,
                        replay.started_at,
                    ) {
                        Ok(state) => {
                            ctl.log(LogEvent::Workflow {
                                state: state.clone(),
                            });
                            ctl.pos.workflow = Some(state);
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
                    .pos
                    .workflow
                    .as_ref()
                    .and_then(|w| ctl.pos.set.get(&w.workflow_key))
                    .map(|def| texts::initial_message(def, &ctl.pos.set, &description))
                    .filter(|m| !m.trim().is_empty())
                    .unwrap_or_else(|| description.clone());
                ctl.log(LogEvent::UserMessage {
                    text: first.clone(),
                    source: "initial".to_owned(),
                });
                conversation.messages.push(Message::User(first));
            }
            ctl.orch.machine = replay.machine;
            ctl.orch.last_agent = ctl.orch.machine.context.current_agent.clone();
            ctl.not_done.reminders_in_row = replay.reminders_in_row;
            ctl.approvals.always_allowed = replay.always_allowed;
            ctl.approvals.always_rejected = replay.always_rejected;
            ctl.pending.calls = replay.pending_calls;
            ctl.pending.ended_turn = replay.ended_turn;
            ctl.pending.results = replay.pending_results;
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
            ctl.resumed_with_pins();
            if let Ok(context) = boxed("start_hooks", ctl.start_hooks("", true)).await {
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
                // A retry or a reset starts a run of its own.
                ctl.pending.ended_turn = None;
                effects.extend(ctl.apply_override(event, &mut conversation));
            } else {
                effects.extend(ctl.effects_to_continue());
            }
        }
    }

    // Bash's TMPDIR: beside the task's log (kept for a resumed task), removed when the task's
    // actor ends; without a log, under the runtime directory, when that is the user's alone
    // (else Bash has no temporary directory of its own, and the task says why).
    let temp_dir = match &ctl.persist.files {
        Some(files) => Some(files.dir().join("tmp")),
        None => match crate::external::private_runtime_dir(|k| std::env::var_os(k), true) {
            Ok(runtime) => Some(runtime.join("rawko/tmp").join(plain_name(&ctl.id))),
            Err(why) => {
                ctl.output(
                    OutputKind::Error,
                    format!("note: Bash gets no temporary directory of its own: {why}"),
                );
                None
            }
        },
    }
    .map(TempDir);
    Arc::make_mut(&mut tools).sandbox.temp_dir = temp_dir.as_ref().map(|t| t.0.clone());
    // rawko's git follows nothing and pushes nowhere the agent may write, the temp dir included.
    Arc::make_mut(&mut ctl.hooks).agent_writable = tools.sandbox.agent_writable(&tools.workspace);
    // A task with a store keeps checkpoints of its workspace (one kept in memory does not; nor
    // does a subagent: its parent's checkpoint after the delegation records what its subagents
    // wrote, side by side, and a subagent is rewound only with its parent).
    if let Some(files) = ctl
        .persist
        .files
        .as_ref()
        .filter(|_| ctl.delegation.subagent.is_none())
    {
        ctl.checkpointing.store = Some(
            crate::checkpoint::Checkpoints::for_task(&tools.workspace, files.dir())
                .agent_writable(ctl.hooks.agent_writable.clone()),
        );
    }

    // What SessionStart hooks wrote to CLAUDE_ENV_FILE applies to the task's Bash commands, and
    // the directories its PATH and toolchain variables name are theirs to read.
    let bash_env = ctl.session_env();
    if !bash_env.0.is_empty() {
        let tools = Arc::make_mut(&mut tools);
        tools.sandbox.toolchains = crate::sandbox::ToolchainDirs::from_env(
            |k| bash_env.var(k, |k| std::env::var_os(k)),
            tools.sandbox.home.as_deref(),
        );
        tools.bash_env = bash_env;
    }

    if ctl.external.is_some() {
        // An external agent waits on each answer: its log is written without an fsync per event
        // (it still survives a crash of rawko, not one of the machine).
        if let Some(files) = &mut ctl.persist.files {
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
    boxed("end", ctl.end(outcome, summary)).await;
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

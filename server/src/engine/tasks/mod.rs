//! The task service: the one place a task is assembled. It owns the running tasks, the store,
//! the workspace's settings and everything a task is built from (workflows, agents, the provider
//! with its keys, the arbiter, hooks and trust, the session), and offers what every face needs:
//! `start`, `resume`, `override_task`, `set_workflow`, `external_session`, `list`, `get`,
//! `cancel` and the other commands. Faces (the LSP server, `rawko acp`, `rawko run`, `rawko
//! demo`, the local endpoint for external agents) call it and build no [`TaskSpec`] themselves;
//! they map its [`TaskError`] to what their user sees, each in one place; none sends a task a
//! [`TaskCommand`] itself.
//!
//! A face gets its service by opening a workspace ([`Tasks::open`], `open.rs`): the service owns
//! the workspace from then on (its place, trust, store, session record and workflow set).
//!
//! The methods are split by concern: the opening and the routes in `open.rs`, the trust, the
//! hooks and the session record in `session.rs`, the provider and the arbiter in `providers.rs`, the phases in `phases.rs`, a
//! task's checkpoints and diffs in `checkpoints.rs`, rewinding a task and pruning finished ones in
//! `rewind.rs`, the pinning of definitions in `pinning.rs`,
//! external agents' sessions in `external.rs`.
//!
//! Where a task's events go is the face's choice, a [`Route`]: the one given at the opening, or
//! one given with the task (`start_with`, `resume_with`) when sessions of a face share the
//! service; a task keeps its route when it is resumed, retried or reset.

mod checkpoints;
mod error;
mod external;
mod listing;
mod open;
mod phases;
mod pinning;
mod providers;
mod rewind;
mod session;
mod subagents;
#[cfg(test)]
mod tests;
mod types;

pub use checkpoints::PhaseDiff;
pub use error::TaskError;
pub use external::{agent_of_task, ExternalSession};
pub use listing::Counts;
pub use open::{Found, Opened, Opening, Route};
pub use phases::PhasePrompt;
pub use rewind::Rewound;
pub use types::{Conversation, Override, Place, StartRequest, Started};

use providers::{build, new_arbiter};

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use dashmap::DashMap;
use tokio::sync::{oneshot, watch};

use super::{
    arbiter, load_replay, new_task_id, spawn_then, stored, ArbiterSetup, TaskCommand, TaskHandle,
    TaskSnapshot, TaskSpec, TaskState,
};
use crate::agents::AgentSet;
use crate::clip::clip;
use crate::config::Settings;
use crate::hooks::session::SessionRecorder;
use crate::machine::{self, MachineConfig};
use crate::store::TaskFiles;
use crate::workflow::step::StepAction;
use crate::workflow::{LoadOutcome, Show, WorkflowSet};

/// The longest task description or message accepted.
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024;

/// How long a step or a workflow choice may take the task to answer.
const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// Where a face sends the events of each task the service starts: the task id and its stream.
pub type Sink = Arc<dyn Fn(String, crate::engine::EventReceiver) + Send + Sync>;

/// The task service of one workspace, opened with [`Tasks::open`]; a face shares it behind an
/// `Arc`. The LSP server and `rawko run` open one per process, `rawko acp` one per folder its
/// sessions name (shared by those sessions).
pub struct Tasks {
    /// Where tasks are persisted; `None` keeps them in memory only.
    store: Option<PathBuf>,
    place: RwLock<Arc<Place>>,
    /// The tasks running in this process. A task is forgotten once it has ended (and its files
    /// are written): from then on it is read from the store.
    running: Arc<DashMap<String, TaskHandle>>,
    /// The service's session record (`$XDG_STATE_HOME/rawko/sessions/`).
    session: OnceLock<Arc<SessionRecorder>>,
    /// The command a session is recorded for when the first task starts (see
    /// [`Opening::records_session`]).
    session_command: OnceLock<String>,
    /// Whether the workspace's hooks may run: `None` while the user is being asked.
    trust: watch::Sender<Option<bool>>,
    /// The trust the opening found, before anyone was asked.
    found: RwLock<crate::hooks::trust::Trust>,
    /// Whether the face asks the user about trust, and where a yes is recorded.
    asks_trust: open::Asking,
    /// External agents' sessions, by their session id.
    external: DashMap<String, external::SessionCell>,
    /// Where a task started without a route of its own goes.
    route: Route,
    /// The routes tasks were started (or resumed) with, by task id, until their face releases
    /// them: a later resume, retry or reset of the task goes the same way.
    routes: DashMap<String, Route>,
    /// The definitions the last tasks started with were pinned as (see [`pinning`]).
    pinned: pinning::Recent,
    /// The store's unfinished external tasks by session, read on the first external session.
    external_index: tokio::sync::OnceCell<
        std::sync::Mutex<std::collections::HashMap<String, std::path::PathBuf>>,
    >,
    /// The service itself, for what its tasks hold of it (their subagents' host).
    me: std::sync::Weak<Tasks>,
    /// Who waits for a task to end (a parent for its subagent), by task id.
    end_waiters: DashMap<String, Vec<oneshot::Sender<()>>>,
}

impl Tasks {
    /// A service for `place`, persisting in `store`, sending the events of a task started
    /// without a route of its own to `route`. The workspace's hooks do not run until
    /// [`Tasks::set_trust`] says they may. Faces open a workspace with [`Tasks::open`].
    fn new(
        place: Place,
        store: Option<PathBuf>,
        route: Route,
        asks_trust: open::Asking,
    ) -> Arc<Tasks> {
        crate::provider::failover::set_default_cooldown(place.settings.rate_limit_cooldown);
        if let Some(dir) = &store {
            // Records a crash of the machine left only in a WAL go back into their task logs
            // before anything reads them.
            crate::store::recover::recover_before_reading(dir);
            crate::store::journal().prepare(dir);
        }
        Arc::new_cyclic(|me| Tasks {
            me: me.clone(),
            end_waiters: DashMap::new(),
            store,
            place: RwLock::new(Arc::new(place)),
            running: Arc::new(DashMap::new()),
            session: OnceLock::new(),
            session_command: OnceLock::new(),
            trust: watch::Sender::new(Some(false)),
            found: RwLock::new(crate::hooks::trust::Trust::Untrusted),
            asks_trust,
            external: DashMap::new(),
            route,
            routes: DashMap::new(),
            pinned: Default::default(),
            external_index: tokio::sync::OnceCell::new(),
        })
    }

    /// The route task `id` goes by: `route` (remembered for the task), else the one it was
    /// given before, else the service's own.
    fn route_of(&self, id: &str, route: Option<Route>) -> Route {
        match route {
            Some(route) => {
                self.routes.insert(id.to_owned(), route.clone());
                route
            }
            None => self
                .routes
                .get(id)
                .map(|r| r.clone())
                .unwrap_or_else(|| self.route.clone()),
        }
    }

    /// Forgets `route` (its session closed): a task that went by it goes by the service's own
    /// from now on.
    pub fn release(&self, route: &Route) {
        self.routes.retain(|_, r| !r.same(route));
    }

    /// Moves the service to another workspace (or the same one with new settings); tasks already
    /// running keep what they were started with. The workspace's settings that need trust apply
    /// as the trust stands ([`Tasks::set_trust`]).
    fn configure(&self, mut place: Place) {
        crate::provider::failover::set_default_cooldown(place.settings.rate_limit_cooldown);
        for note in &place.settings.notes {
            tracing::info!("{note}");
        }
        place.settings = place.settings.trusting(self.trust() == Some(true));
        if let Ok(mut p) = self.place.write() {
            *p = Arc::new(place);
        }
    }

    pub fn place(&self) -> Arc<Place> {
        self.place
            .read()
            .map(|p| p.clone())
            .unwrap_or_else(|poisoned| poisoned.into_inner().clone())
    }

    pub fn workspace(&self) -> PathBuf {
        self.place().workspace.clone()
    }

    pub fn settings(&self) -> Settings {
        self.place().settings.clone()
    }

    pub fn store(&self) -> Option<&Path> {
        self.store.as_deref()
    }

    /// The workflows of the workspace as they are now: parsed again only when a walk of their
    /// files, started after this call, finds a change. Calls at once (the editor's `initialized`
    /// and its first listing) share one load, on one blocking thread, instead of each parsing
    /// every file on a thread (and allocator arena) of its own.
    pub async fn load_workflows(&self) -> LoadOutcome {
        let asked = std::time::Instant::now();
        let place = self.place();
        crate::engine::loaded::check_next_time(&place.workflow_roots, &place.agent_roots);
        let (outcome, _) = crate::engine::loaded::workflows(
            &place.workflow_roots,
            crate::engine::loaded::Freshness::After(asked),
        )
        .await;
        LoadOutcome::clone(&outcome)
    }

    /// The workflows new tasks start with, shared (parsed again only when their files change):
    /// what a face offers to choose from (`rawko acp`'s modes).
    pub async fn workflows(&self) -> Arc<WorkflowSet> {
        self.task_workflows().await.1
    }

    /// The agents of the workspace, loaded now.
    pub async fn load_agents(&self) -> AgentSet {
        let roots = self.place().agent_roots.clone();
        tokio::task::spawn_blocking(move || crate::agents::load(&roots).agents)
            .await
            .unwrap_or_default()
    }

    fn machine_config(settings: &Settings) -> MachineConfig {
        MachineConfig {
            max_iterations: settings.max_iterations,
            max_failures: settings.max_failures,
            default_agent: settings.default_agent.clone(),
        }
    }

    /// Starts the actor of `spec`, keeps its handle and hands its events to its route's sink
    /// (`route`, else the one the task went by before, else the service's own).
    fn spawn(&self, mut spec: TaskSpec, route: Option<Route>) -> Started {
        let id = spec.id.clone();
        let description = spec.description.clone();
        let route = self.route_of(&id, route);
        spec.client_io = route.client_io.clone();
        let forget = self.forget_when_ended(&id);
        let (me, ended) = (self.me.clone(), id.clone());
        let (handle, events) = spawn_then(spec, move || {
            forget();
            if let Some(tasks) = me.upgrade() {
                tasks.wake_end_waiters(&ended);
            }
        });
        self.running.insert(id.clone(), handle.clone());
        (route.sink)(id.clone(), events);
        Started {
            id,
            description,
            handle,
            note: None,
        }
    }

    /// What forgets task `id` once its actor has ended (it is read from the store from then on).
    /// A task kept in memory only (no state directory) stays listed for the process's life.
    pub(super) fn forget_when_ended(&self, id: &str) -> impl FnOnce() + Send + 'static {
        let running = Arc::downgrade(&self.running);
        let forget = self.store.is_some();
        let id = id.to_owned();
        move || {
            if let Some(running) = running.upgrade().filter(|_| forget) {
                running.remove_if(&id, |_, h| h.is_ended());
            }
        }
    }

    /// Starts a task, its events going by the service's route.
    pub async fn start(&self, request: StartRequest) -> Result<Started, TaskError> {
        self.start_routed(request, None, None).await
    }

    /// Starts a task whose events go by `route` (and its resumes, retries and resets too).
    pub async fn start_with(
        &self,
        request: StartRequest,
        route: Route,
    ) -> Result<Started, TaskError> {
        self.start_routed(request, Some(route), None).await
    }

    /// Starts a task with the id it was given elsewhere (a team's task, queued with its id by
    /// `rawko submit`), its events going by `route`. The id must be a plain one (letters,
    /// digits, `-`, `_`, `.`) that no task of the store has yet.
    pub async fn start_as(
        &self,
        id: &str,
        request: StartRequest,
        route: Route,
    ) -> Result<Started, TaskError> {
        let plain = !id.is_empty()
            && id.len() <= 200
            && !id.starts_with('.')
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !plain {
            return Err(TaskError::Invalid(format!(
                "\"{}\" is not a task id (letters, digits, -, _ and .)",
                clip(id)
            )));
        }
        if self.handle(id).is_some()
            || self
                .store
                .as_ref()
                .is_some_and(|s| TaskFiles::dir_of(s, id).join("events.jsonl").exists())
        {
            return Err(TaskError::Conflict(format!(
                "a task \"{}\" exists already",
                clip(id)
            )));
        }
        self.start_routed(request, Some(route), Some(id.to_owned()))
            .await
    }

    async fn start_routed(
        &self,
        request: StartRequest,
        route: Option<Route>,
        id: Option<String>,
    ) -> Result<Started, TaskError> {
        let description = request.description.trim().to_owned();
        if description.is_empty() {
            return Err(TaskError::Invalid(
                "description is empty: say what the task is".to_owned(),
            ));
        }
        if description.len() > MAX_MESSAGE_BYTES {
            return Err(TaskError::Invalid(
                "description is longer than 1 MiB".to_owned(),
            ));
        }
        self.settle_trust().await;
        let place = self.place();
        let (outcome, workflows) = self.task_workflows().await;
        let workflow = match request.workflow.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(key) => Some(runnable_workflow(&outcome, key)?),
        };
        let agents = self.task_agents().await;
        let agent = request.agent.clone().filter(|a| !a.trim().is_empty());
        if let Some(agent) = &agent {
            check_agent(&agents, agent)?;
        }
        let (provider_spec, note) =
            Self::provider_spec_for(&place, &request, &|name| std::env::var(name).ok())?;
        let settings = place.settings.clone();
        let provider = build(&provider_spec, &settings).map_err(TaskError::CannotStart)?;
        let arbiter = new_arbiter(&settings, &place.workspace)?;
        // Durable before the task's first record names them.
        let pins = self
            .pin_new(workflow.as_deref(), &workflows, &agents)
            .await?;
        self.ensure_session(&provider_spec);
        let hooks = self.task_hooks().await;
        let delegation = self.delegation(&agents);
        let mut started = self.spawn(
            TaskSpec {
                id: id.unwrap_or_else(new_task_id),
                description,
                workflow,
                workflows,
                agents,
                provider,
                provider_spec,
                arbiter,
                start_agent: agent,
                workspace: place.workspace.clone(),
                settings,
                store: self.store.clone(),
                resume: None,
                then: None,
                hooks,
                session: self.session(),
                external: None,
                client_io: None,
                pins,
                delegation,
            },
            route,
        );
        started.note = note;
        Ok(started)
    }

    /// Continues a task: one interrupted in this process goes on; one found unfinished in the
    /// store is rebuilt from its log and goes on (by the route it went by in this process, else
    /// the service's).
    pub async fn resume(&self, id: &str) -> Result<Option<Started>, TaskError> {
        self.resume_routed(id, None).await
    }

    /// [`Tasks::resume`], a task rebuilt from the store going by `route`.
    pub async fn resume_with(&self, id: &str, route: Route) -> Result<Option<Started>, TaskError> {
        self.resume_routed(id, Some(route)).await
    }

    async fn resume_routed(
        &self,
        id: &str,
        route: Option<Route>,
    ) -> Result<Option<Started>, TaskError> {
        let Some(handle) = self.handle(id) else {
            return self.resume_stored(id, None, route).await.map(Some);
        };
        let state = handle.state();
        if state != TaskState::Blocked {
            return Err(TaskError::Conflict(format!(
                "task \"{}\" is {}, not interrupted",
                clip(id),
                state.as_str()
            )));
        }
        self.command(id, TaskCommand::Resume)?;
        Ok(None)
    }

    /// Rebuilds a stored task from its log and runs it on (after a restart, or to retry or reset
    /// a finished one with `then`).
    async fn resume_stored(
        &self,
        id: &str,
        then: Option<machine::Event>,
        route: Option<Route>,
    ) -> Result<Started, TaskError> {
        let Some(store) = self.store.clone() else {
            return Err(TaskError::Conflict(
                "tasks are not persisted here (no state directory), so this one cannot be resumed"
                    .to_owned(),
            ));
        };
        let dir = TaskFiles::dir_of(&store, id);
        if !dir.join("events.jsonl").is_file() {
            return Err(TaskError::unknown_task(id));
        }
        self.settle_trust().await;
        let place = self.place();
        let settings = place.settings.clone();
        let config = Self::machine_config(&settings);
        let (files, replay) = tokio::task::spawn_blocking(move || load_replay(&dir, &config))
            .await
            .map_err(|e| TaskError::Internal(e.to_string()))?
            .map_err(|e| {
                TaskError::Internal(format!("cannot resume task \"{}\": {e}", clip(id)))
            })?;
        if let Some((outcome, _)) = &replay.finished {
            if then.is_none() {
                return Err(TaskError::Conflict(format!(
                    "task \"{}\" has already finished ({outcome}); a retry or a reset runs it again",
                    clip(id)
                )));
            }
        }
        if replay.provider.name == "external" {
            return Err(TaskError::Conflict(format!(
                "task \"{}\" is an external agent's session; it goes on by itself with the agent's next hook event",
                clip(id)
            )));
        }
        let provider = build(&replay.provider, &settings).map_err(|e| {
            TaskError::CannotStart(format!("cannot resume task \"{}\": {e}", clip(id)))
        })?;
        let arbiter = match &replay.arbiter {
            None => ArbiterSetup::Deterministic,
            Some(spec) => ArbiterSetup::Model {
                provider: build(spec, &settings).map_err(|e| {
                    TaskError::CannotStart(format!("cannot resume the arbiter: {e}"))
                })?,
                spec: spec.clone(),
            },
        };
        // The definitions the task started with, never the files as they are now.
        let (workflows, agents, pins) = self.resume_definitions(&replay).await?;
        let (delegation, workflows, agents) =
            self.resumed_delegation(&replay, workflows, agents)?;
        self.ensure_session(&replay.provider);
        let hooks = self.task_hooks().await;
        Ok(self.spawn(
            TaskSpec {
                id: replay.task_id.clone(),
                description: replay.description.clone(),
                workflow: replay.workflow_key.clone(),
                workflows,
                agents,
                provider,
                provider_spec: replay.provider.clone(),
                arbiter,
                start_agent: replay.agent.clone(),
                workspace: replay.workspace.clone(),
                settings,
                store: Some(store),
                resume: Some((files, replay)),
                then,
                hooks,
                session: self.session(),
                external: None,
                client_io: None,
                pins,
                delegation,
            },
            route,
        ))
    }

    /// An override for the orchestrator: sent to a running task where its machine state takes
    /// it (the chart says where), or applied to a stored one by resuming it.
    pub async fn override_task(&self, id: &str, what: Override) -> Result<(), TaskError> {
        if let Override::ForceAgent(agent) = &what {
            check_agent(&*self.task_agents().await, agent)?;
        }
        let event = what.event();
        if let Some(handle) = self.handle(id) {
            let state = handle.state();
            if !state.is_finished() && state != TaskState::Interrupted {
                // A reset is taken wherever the task is.
                let machine_state = handle.snapshot().machine_state;
                if what != Override::Reset && !machine::accepts(&machine_state, event.name()) {
                    return Err(TaskError::Conflict(format!(
                        "task \"{}\" is {machine_state}; {} does not apply there",
                        clip(id),
                        what.name()
                    )));
                }
                if handle.send(TaskCommand::Override(event.clone())).is_ok() {
                    return Ok(());
                }
            }
        }
        match (&what, self.state_anywhere(id)) {
            (_, None) => Err(TaskError::unknown_task(id)),
            (Override::Retry, Some(TaskState::Failed | TaskState::Interrupted))
            | (Override::Reset, Some(_))
            | (_, Some(TaskState::Interrupted)) => {
                self.resume_stored(id, Some(event), None).await.map(drop)
            }
            (_, Some(state)) => Err(TaskError::Conflict(format!(
                "task \"{}\" is {}; {} does not apply",
                clip(id),
                state.as_str(),
                what.name()
            ))),
        }
    }

    /// A task's state, running or stored.
    fn state_anywhere(&self, id: &str) -> Option<TaskState> {
        if let Some(h) = self.handle(id) {
            return Some(h.state());
        }
        stored::snapshot(&TaskFiles::dir_of(self.store.as_ref()?, id)).map(|s| s.state)
    }

    /// Starts a workflow in a running task that runs none yet (an external agent's session).
    /// Returns the text the task answers.
    pub async fn set_workflow(&self, id: &str, key: &str) -> Result<String, TaskError> {
        let outcome = self.load_workflows().await;
        let key = key.trim();
        let Some(def) = outcome.workflows.find(key).filter(|d| d.show == Show::User) else {
            return Err(TaskError::UnknownWorkflow(format!(
                "unknown workflow \"{}\"",
                clip(key)
            )));
        };
        let key = def.key.clone();
        self.set_workflow_of(id, &key).await
    }

    /// `next`, `loop` or `status` in a running task; returns the text to show.
    pub async fn step(&self, id: &str, action: StepAction) -> Result<String, TaskError> {
        self.ask(
            id,
            |reply| TaskCommand::Step { action, reply },
            Some(ANSWER_WAIT),
        )
        .await
    }

    /// Sends a command that answers through `reply` and waits for the answer (at most `wait`).
    async fn ask(
        &self,
        id: &str,
        command: impl FnOnce(oneshot::Sender<Result<String, String>>) -> TaskCommand,
        wait: Option<Duration>,
    ) -> Result<String, TaskError> {
        let (reply, answer) = oneshot::channel();
        self.command(id, command(reply))?;
        let answer = match wait {
            Some(wait) => tokio::time::timeout(wait, answer).await.map_err(|_| {
                TaskError::Internal(format!(
                    "the task did not answer within {} s",
                    wait.as_secs()
                ))
            })?,
            None => answer.await,
        };
        match answer {
            Ok(Ok(text)) => Ok(text),
            Ok(Err(why)) => Err(TaskError::Conflict(why)),
            Err(_) => Err(TaskError::Conflict(format!(
                "task \"{}\" ended before it could answer",
                clip(id)
            ))),
        }
    }

    pub fn cancel(&self, id: &str) -> Result<(), TaskError> {
        self.command(id, TaskCommand::Cancel)
    }

    /// Stops a countdown or the current turn; the task then waits for the user.
    pub fn interrupt(&self, id: &str) -> Result<(), TaskError> {
        let handle = self.handle(id).ok_or_else(|| TaskError::unknown_task(id))?;
        if handle.state() == TaskState::Blocked {
            return Err(TaskError::Conflict(format!(
                "task \"{}\" is already interrupted and waits for a message",
                clip(id)
            )));
        }
        self.command(id, TaskCommand::Interrupt)
    }

    pub fn send_message(&self, id: &str, text: String) -> Result<(), TaskError> {
        if text.len() > MAX_MESSAGE_BYTES {
            return Err(TaskError::Invalid(format!(
                "message is {} bytes; the limit is {MAX_MESSAGE_BYTES}",
                text.len()
            )));
        }
        if text.trim().is_empty() {
            return Err(TaskError::Invalid("message is empty".to_owned()));
        }
        self.command(id, TaskCommand::SendMessage(text))
    }

    /// Sends a command to a task that is still running.
    fn command(&self, id: &str, command: TaskCommand) -> Result<(), TaskError> {
        let Some(handle) = self.handle(id) else {
            // A task that ended was forgotten: its store says how.
            return Err(match self.state_anywhere(id) {
                Some(state) if state.is_finished() => TaskError::Conflict(format!(
                    "task \"{}\" has already ended ({})",
                    clip(id),
                    state.as_str()
                )),
                _ => TaskError::unknown_task(id),
            });
        };
        let state = handle.state();
        if state.is_finished() {
            return Err(TaskError::Conflict(format!(
                "task \"{}\" has already ended ({})",
                clip(id),
                state.as_str()
            )));
        }
        handle
            .send(command)
            .map_err(|_| TaskError::Conflict(format!("task \"{}\" has already ended", clip(id))))
    }

    /// The handle of a task running in this process.
    pub fn handle(&self, id: &str) -> Option<TaskHandle> {
        self.running.get(id).map(|h| h.clone())
    }

    /// A stored task's conversation so far, read from its log, for a face that shows the task
    /// again (ACP's `session/load`): the messages in order and whether the task has finished.
    pub async fn conversation(&self, id: &str) -> Result<Conversation, TaskError> {
        let Some(store) = self.store.clone() else {
            return Err(TaskError::unknown_task(id));
        };
        let dir = TaskFiles::dir_of(&store, id);
        if !dir.join("events.jsonl").is_file() {
            return Err(TaskError::unknown_task(id));
        }
        let config = Self::machine_config(&self.settings());
        let (_, replay) = tokio::task::spawn_blocking(move || load_replay(&dir, &config))
            .await
            .map_err(|e| TaskError::Internal(e.to_string()))?
            .map_err(|e| TaskError::Internal(format!("cannot read task \"{}\": {e}", clip(id))))?;
        Ok(Conversation {
            description: replay.description,
            workflow: replay.workflow_key,
            finished: replay.finished.is_some(),
            messages: replay.messages,
        })
    }

    /// One task with its history, running or stored.
    pub async fn get(&self, id: &str) -> Result<TaskSnapshot, TaskError> {
        if let Some(handle) = self.handle(id) {
            return Ok(handle.snapshot());
        }
        let store = self.store.clone();
        let task = id.to_owned();
        let stored = tokio::task::spawn_blocking(move || {
            stored::detail(&TaskFiles::dir_of(store.as_ref()?, &task))
        })
        .await
        .ok()
        .flatten()
        .ok_or_else(|| TaskError::unknown_task(id))?;
        Ok(self.placed(stored).await)
    }
}

/// The key of the workflow `key` names, if it can run as a task's workflow.
fn runnable_workflow(outcome: &LoadOutcome, key: &str) -> Result<String, TaskError> {
    let set: &WorkflowSet = &outcome.workflows;
    let Some(def) = set.find(key) else {
        let known: Vec<&str> = set
            .iter()
            .filter(|d| d.show == Show::User)
            .map(|d| d.key.as_str())
            .collect();
        let message = if outcome.skipped.iter().any(|s| s.key == key) {
            format!(
                "workflow \"{}\" has errors; run `rawko workflows validate`",
                clip(key)
            )
        } else if known.is_empty() {
            format!(
                "unknown workflow \"{}\"; no workflows are defined (`rawko init` writes a starter)",
                clip(key)
            )
        } else {
            format!(
                "unknown workflow \"{}\"; available: {}",
                clip(key),
                known.join(", ")
            )
        };
        return Err(TaskError::UnknownWorkflow(message));
    };
    if def.show == Show::Workflows {
        return Err(TaskError::UnknownWorkflow(format!(
            "workflow \"{}\" is a subworkflow that can only run as part of another workflow",
            clip(key)
        )));
    }
    Ok(def.key.clone())
}

/// Whether `agent` is one of `agents` (or the default agent).
fn check_agent(agents: &AgentSet, agent: &str) -> Result<(), TaskError> {
    if agent == arbiter::DEFAULT_AGENT || agents.get(agent).is_some() {
        return Ok(());
    }
    let mut names: Vec<&str> = agents.names().collect();
    names.push(arbiter::DEFAULT_AGENT);
    Err(TaskError::UnknownAgent(format!(
        "unknown agent \"{}\"; the agents are {}",
        clip(agent),
        names.join(", ")
    )))
}

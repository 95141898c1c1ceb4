//! The stdio JSON-RPC face: LSP framing on tower-lsp-server, the LSP lifecycle, rawko's custom
//! methods, and one writer per task that sends its notifications in order with a `seq`.
//!
//! Handlers are thin (invariant 4): they check their input, forward to the task's actor and
//! return. They never await the client; an approval request runs in its own spawned task.

mod external;
mod to_proto;
mod transport;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use dashmap::DashMap;
use rawko_protocol::error_codes;
use rawko_protocol::to_client::{
    ApprovalOption, ApproveToolCall, ApproveToolCallParams, Countdown, Output, Status,
    TaskFinished, TrustWorkspace, TrustWorkspaceParams, TrustWorkspaceResult,
};
use rawko_protocol::to_server::*;
use rawko_protocol::types::TaskId;
use rawko_protocol::Request as _;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};
use tower_lsp_server::lsp_types::{
    ExecuteCommandOptions, ExecuteCommandParams, InitializeParams, InitializeResult,
    InitializedParams, MessageType, ServerCapabilities, ServerInfo,
};
use tower_lsp_server::{Client, LanguageServer, LspService, UriExt};

use crate::clip::clip;
use crate::config::{self, ConfigProblem, Settings};
use crate::engine::{self, TaskCommand, TaskEvent, TaskHandle, TaskSpec, TaskState};
use crate::hooks::session::{SessionRecorder, SessionStatus};
use crate::hooks::trust::Trust;
use crate::hooks::Hooks;
use crate::provider::{Provider, ProviderSpec};
use crate::workflow::{default_roots, load, LoadOutcome, Severity, Show};

/// The longest `rawko/sendMessage` text accepted.
pub const MAX_MESSAGE_BYTES: usize = 1024 * 1024;

fn error(code: i64, message: impl Into<String>) -> Error {
    Error {
        code: ErrorCode::from(code),
        message: message.into().into(),
        data: None,
    }
}

fn invalid_params(message: impl Into<String>) -> Error {
    error(error_codes::INVALID_PARAMS, message)
}

/// Where the server runs and what it was told at start.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// `--workspace`; otherwise the editor's workspace folder, otherwise the current directory.
    pub workspace: Option<PathBuf>,
}

struct Shared {
    options: ServeOptions,
    /// Where tasks are persisted; `None` when no state directory can be found.
    store: Option<PathBuf>,
    /// Set at start (`--workspace` or the current directory), and again by the editor's
    /// `initialize` (its folder and its options).
    workspace: std::sync::RwLock<Option<PathBuf>>,
    settings: std::sync::RwLock<Option<Settings>>,
    config_problems: Mutex<Vec<ConfigProblem>>,
    tasks: DashMap<String, TaskHandle>,
    /// This server's session (`$XDG_STATE_HOME/rawko/sessions/`).
    session: OnceLock<Arc<SessionRecorder>>,
    /// Whether the workspace's hooks may run: `None` while the user is being asked.
    trust: tokio::sync::watch::Sender<Option<bool>>,
    /// External agents' sessions (Claude Code through its hooks), by their session id.
    external: DashMap<String, external::SessionCell>,
    /// The local endpoint external agents reach; dropped (stopped, its file removed) at the end.
    endpoint: Mutex<Option<crate::external::endpoint::Endpoint>>,
}

impl Shared {
    fn workspace(&self) -> PathBuf {
        self.workspace
            .read()
            .ok()
            .and_then(|w| w.clone())
            .unwrap_or_else(|| std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")))
    }

    fn settings(&self) -> Settings {
        self.settings
            .read()
            .ok()
            .and_then(|s| s.clone())
            .unwrap_or_default()
    }

    fn set_workspace(&self, workspace: PathBuf, settings: Settings) {
        if let Ok(mut w) = self.workspace.write() {
            *w = Some(workspace);
        }
        if let Ok(mut s) = self.settings.write() {
            *s = Some(settings);
        }
    }

    /// The workspace, its settings (with the editor's options, if given) and whether its hooks
    /// may run, as found now. Problems with the settings are returned for the user.
    fn configure(
        &self,
        workspace: PathBuf,
        options: Option<&Value>,
    ) -> (PathBuf, Settings, Trust, Vec<ConfigProblem>) {
        let workspace = std::fs::canonicalize(&workspace).unwrap_or(workspace);
        let files = config::config_files(&workspace, |k| std::env::var_os(k));
        let (settings, problems) = config::load(&files, options);
        crate::provider::failover::set_default_cooldown(settings.rate_limit_cooldown);
        for note in &settings.notes {
            tracing::info!("{note}");
        }
        let trust = crate::hooks::trust::check(
            crate::hooks::trust::store_path(|k| std::env::var_os(k)).as_deref(),
            &workspace,
            settings.workspace_hooks.as_ref(),
        );
        (workspace, settings, trust, problems)
    }

    fn start_session(&self, workspace: &Path, settings: &Settings) {
        if self.session.get().is_some() {
            return;
        }
        if let Some(store) = &self.store {
            let args: Vec<String> = std::env::args().skip(1).collect();
            let provider = settings.providers.first().map(|p| p.name.clone());
            match SessionRecorder::start(store, workspace, "serve", args, provider) {
                Ok(r) => {
                    let _ = self.session.set(Arc::new(r));
                }
                Err(e) => tracing::warn!("cannot record the session: {e}"),
            }
        }
    }
}

/// Opens the local endpoint external agents (Claude Code's hooks) reach, for `workspace`,
/// replacing (and so closing) the one before.
async fn open_endpoint(
    shared: Arc<Shared>,
    outgoing: Arc<transport::Outgoing>,
    workspace: PathBuf,
) {
    let host = external::ExternalHost {
        shared: shared.clone(),
        outgoing,
    };
    let runtime = crate::external::endpoint::runtime_dir(|k| std::env::var_os(k));
    match crate::external::endpoint::start(Arc::new(host), &workspace, &runtime).await {
        Ok(endpoint) => {
            tracing::info!(
                "endpoint for external agents at {} ({})",
                endpoint.url,
                endpoint.file.display()
            );
            if let Ok(mut slot) = shared.endpoint.lock() {
                *slot = Some(endpoint);
            }
        }
        Err(e) => tracing::warn!("cannot start the endpoint for external agents: {e}"),
    }
}

/// What the server does before any editor speaks: it settles on `--workspace` (or the current
/// directory), reads its settings, and opens the endpoint, so a `rawko serve` started in a
/// terminal gates Claude Code at once. A workspace with hooks it does not trust runs them only
/// after `rawko trust` (or the editor's question, once one attaches).
async fn early_start(shared: Arc<Shared>, outgoing: Arc<transport::Outgoing>) {
    let workspace = shared
        .options
        .workspace
        .clone()
        .unwrap_or_else(|| std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")));
    let (workspace, settings, trust, problems) = shared.configure(workspace, None);
    for p in &problems {
        tracing::warn!("rawko config: {p}");
    }
    if matches!(trust, Trust::Untrusted | Trust::Changed) {
        tracing::warn!(
            "the hooks in {} do not run until you trust the workspace (`rawko trust`, or the editor's question)",
            workspace.display()
        );
    }
    shared
        .trust
        .send_replace(Some(matches!(trust, Trust::NoHooks | Trust::Trusted)));
    shared.start_session(&workspace, &settings);
    shared.set_workspace(workspace.clone(), settings);
    open_endpoint(shared, outgoing, workspace).await;
}

/// The language server.
pub struct Backend {
    client: Client,
    outgoing: Arc<transport::Outgoing>,
    shared: Arc<Shared>,
}

impl Backend {
    fn new(client: Client, outgoing: Arc<transport::Outgoing>, options: ServeOptions) -> Self {
        Self {
            client,
            outgoing,
            shared: Arc::new(Shared {
                options,
                store: crate::store::state_dir(|k| std::env::var_os(k)),
                workspace: std::sync::RwLock::new(None),
                settings: std::sync::RwLock::new(None),
                config_problems: Mutex::new(Vec::new()),
                tasks: DashMap::new(),
                session: OnceLock::new(),
                trust: tokio::sync::watch::Sender::new(Some(false)),
                external: DashMap::new(),
                endpoint: Mutex::new(None),
            }),
        }
    }

    fn workspace(&self) -> PathBuf {
        self.shared.workspace()
    }

    fn settings(&self) -> Settings {
        self.shared.settings()
    }

    /// The hooks a task runs. While the user is asked whether to trust the workspace, a new task
    /// waits for the answer (at most the approval timeout).
    async fn task_hooks(&self) -> Arc<Hooks> {
        let settings = self.settings();
        let mut rx = self.shared.trust.subscribe();
        let trusted =
            match tokio::time::timeout(settings.approval_timeout, rx.wait_for(Option::is_some))
                .await
            {
                Ok(Ok(v)) => v.unwrap_or(false),
                _ => false,
            };
        Arc::new(Hooks::new(
            settings.hooks_to_run(trusted),
            self.shared
                .session
                .get()
                .map(|s| s.id())
                .unwrap_or_default(),
            self.workspace(),
        ))
    }

    fn session(&self) -> Option<Arc<SessionRecorder>> {
        self.shared.session.get().cloned()
    }

    async fn load_workflows(&self) -> LoadOutcome {
        let workspace = self.workspace();
        tokio::task::spawn_blocking(move || {
            load(&default_roots(&workspace, |k| std::env::var_os(k)))
        })
        .await
        .unwrap_or_default()
    }

    fn task(&self, id: &TaskId) -> Result<TaskHandle> {
        self.shared
            .tasks
            .get(id.as_str())
            .map(|h| h.clone())
            .ok_or_else(|| {
                error(
                    error_codes::UNKNOWN_TASK,
                    format!("unknown task \"{}\"", clip(id.as_str())),
                )
            })
    }

    /// Sends a command to a task that is still running.
    fn command(&self, id: &TaskId, command: TaskCommand) -> Result<()> {
        let handle = self.task(id)?;
        let state = handle.state();
        if state.is_finished() {
            return Err(error(
                error_codes::TASK_STATE_CONFLICT,
                format!(
                    "task \"{}\" has already ended ({})",
                    clip(id.as_str()),
                    state.as_str()
                ),
            ));
        }
        handle.send(command).map_err(|_| {
            error(
                error_codes::TASK_STATE_CONFLICT,
                format!("task \"{}\" has already ended", clip(id.as_str())),
            )
        })
    }

    async fn list_workflows(&self, _: ListWorkflowsParams) -> Result<ListWorkflowsResult> {
        let outcome = self.load_workflows().await;
        let set = &outcome.workflows;
        Ok(ListWorkflowsResult {
            workflows: set
                .iter()
                .map(|d| to_proto::workflow_summary(set, d))
                .collect(),
        })
    }

    async fn validate_workflows(
        &self,
        _: ValidateWorkflowsParams,
    ) -> Result<ValidateWorkflowsResult> {
        let outcome = self.load_workflows().await;
        Ok(ValidateWorkflowsResult {
            diagnostics: outcome
                .diagnostics
                .iter()
                .map(|d| WorkflowDiagnostic {
                    path: d.path.display().to_string(),
                    line: d.line.and_then(|l| u32::try_from(l).ok()),
                    column: d.column.and_then(|c| u32::try_from(c).ok()),
                    severity: match d.severity {
                        Severity::Error => rawko_protocol::to_server::Severity::Error,
                        Severity::Warning => rawko_protocol::to_server::Severity::Warning,
                    },
                    workflow: d.workflow.clone(),
                    message: d.message.clone(),
                })
                .collect(),
        })
    }

    async fn start_task(&self, params: StartTaskParams) -> Result<StartTaskResult> {
        let description = params.description.trim().to_owned();
        if description.is_empty() {
            return Err(invalid_params("description is empty: say what the task is"));
        }
        if description.len() > MAX_MESSAGE_BYTES {
            return Err(invalid_params("description is longer than 1 MiB"));
        }
        let workspace = self.workspace();
        let outcome = self.load_workflows().await;
        let set = outcome.workflows;
        let workflow = match params
            .workflow
            .as_deref()
            .map(str::trim)
            .filter(|w| !w.is_empty())
        {
            None => None,
            Some(key) => {
                let Some(def) = set.find(key) else {
                    let known: Vec<&str> = set
                        .iter()
                        .filter(|d| d.show == Show::User)
                        .map(|d| d.key.as_str())
                        .collect();
                    let broken = outcome.skipped.iter().any(|s| s.key == key);
                    let message = if broken {
                        format!(
                            "workflow \"{}\" has errors; run `rawko workflows validate`",
                            clip(key)
                        )
                    } else if known.is_empty() {
                        format!("unknown workflow \"{}\"; no workflows are defined (`rawko init` writes a starter)", clip(key))
                    } else {
                        format!(
                            "unknown workflow \"{}\"; available: {}",
                            clip(key),
                            known.join(", ")
                        )
                    };
                    return Err(error(error_codes::WORKFLOW_NOT_FOUND, message));
                };
                if def.show == Show::Workflows {
                    return Err(error(
                        error_codes::WORKFLOW_NOT_FOUND,
                        format!("workflow \"{}\" is a subworkflow that can only run as part of another workflow", clip(key)),
                    ));
                }
                Some(def.key.clone())
            }
        };
        let (provider, provider_spec) = make_provider(&params, &workspace, &self.settings())?;
        let agents = self.load_agents().await;
        if let Some(agent) = params.agent.as_deref().filter(|a| !a.trim().is_empty()) {
            if agent != engine::arbiter::DEFAULT_AGENT && agents.get(agent).is_none() {
                let mut names: Vec<&str> = agents.names().collect();
                names.push(engine::arbiter::DEFAULT_AGENT);
                return Err(invalid_params(format!(
                    "unknown agent \"{}\"; the agents are {}",
                    clip(agent),
                    names.join(", ")
                )));
            }
        }
        let settings = self.settings();
        let arbiter = make_arbiter(&settings, &workspace)?;
        let id = engine::new_task_id();
        self.spawn_task(TaskSpec {
            id: id.clone(),
            description,
            workflow,
            workflows: Arc::new(set),
            agents: Arc::new(agents),
            provider,
            provider_spec,
            arbiter,
            start_agent: params.agent.filter(|a| !a.trim().is_empty()),
            workspace,
            settings,
            store: self.shared.store.clone(),
            resume: None,
            then: None,
            hooks: self.task_hooks().await,
            session: self.session(),
            external: None,
        });
        Ok(StartTaskResult {
            task_id: TaskId(id),
        })
    }

    fn spawn_task(&self, spec: TaskSpec) {
        let id = spec.id.clone();
        let (handle, events) = engine::spawn(spec);
        self.shared.tasks.insert(id.clone(), handle);
        tokio::spawn(write_events(self.outgoing.clone(), id, events));
    }

    async fn load_agents(&self) -> crate::agents::AgentSet {
        let workspace = self.workspace();
        tokio::task::spawn_blocking(move || {
            crate::agents::load(&crate::agents::default_roots(&workspace, |k| {
                std::env::var_os(k)
            }))
            .agents
        })
        .await
        .unwrap_or_default()
    }

    /// The tasks persisted for this workspace that are not running in this server: finished
    /// ones, and unfinished ones (listed as interrupted, to resume).
    fn stored_tasks(&self) -> Vec<engine::TaskSnapshot> {
        let Some(store) = &self.shared.store else {
            return Vec::new();
        };
        let workspace = self.workspace();
        crate::store::task_dirs(store)
            .into_iter()
            .filter_map(|dir| engine::stored::snapshot(&dir))
            .filter(|s| s.workspace == workspace && !self.shared.tasks.contains_key(&s.task_id))
            .collect()
    }

    /// Continues a task from its log (after a restart, or to retry or reset a finished one).
    async fn resume_from_store(
        &self,
        id: &TaskId,
        then: Option<crate::machine::Event>,
    ) -> Result<()> {
        let Some(store) = self.shared.store.clone() else {
            return Err(error(
                error_codes::TASK_STATE_CONFLICT,
                "tasks are not persisted here (no state directory), so this one cannot be resumed",
            ));
        };
        let dir = crate::store::TaskFiles::dir_of(&store, id.as_str());
        if !dir.join("events.jsonl").is_file() {
            return Err(error(
                error_codes::UNKNOWN_TASK,
                format!("unknown task \"{}\"", clip(id.as_str())),
            ));
        }
        let settings = self.settings();
        let config = crate::machine::MachineConfig {
            max_iterations: settings.max_iterations,
            max_failures: settings.max_failures,
            default_agent: settings.default_agent.clone(),
        };
        let (files, replay) =
            tokio::task::spawn_blocking(move || engine::load_replay(&dir, &config))
                .await
                .map_err(|e| error(error_codes::INTERNAL_ERROR, e.to_string()))?
                .map_err(|e| {
                    error(
                        error_codes::INTERNAL_ERROR,
                        format!("cannot resume task \"{}\": {e}", clip(id.as_str())),
                    )
                })?;
        if replay.finished.is_some() && then.is_none() {
            return Err(error(
                error_codes::TASK_STATE_CONFLICT,
                format!(
                    "task \"{}\" has finished; use rawko/retry or rawko/reset to run it again",
                    clip(id.as_str())
                ),
            ));
        }
        let outcome = self.load_workflows().await;
        let set = outcome.workflows;
        if let Some(key) = &replay.workflow_key {
            if set.get(key).is_none() {
                return Err(error(
                    error_codes::WORKFLOW_NOT_FOUND,
                    format!(
                        "task \"{}\" ran workflow \"{key}\", which no longer loads",
                        clip(id.as_str())
                    ),
                ));
            }
        }
        if replay.provider.name == "external" {
            return Err(error(
                error_codes::TASK_STATE_CONFLICT,
                format!("task \"{}\" is an external agent's session; it goes on by itself with the agent's next hook event", clip(id.as_str())),
            ));
        }
        let keys = |name: &str| settings.api_keys.get(name);
        let provider = replay.provider.build_with(&keys).map_err(|e| {
            error(
                error_codes::INTERNAL_ERROR,
                format!("cannot resume task \"{}\": {e}", clip(id.as_str())),
            )
        })?;
        let arbiter = match &replay.arbiter {
            None => engine::ArbiterSetup::Deterministic,
            Some(spec) => engine::ArbiterSetup::Model {
                provider: spec.build_with(&keys).map_err(|e| {
                    error(
                        error_codes::INTERNAL_ERROR,
                        format!("cannot resume the arbiter: {e}"),
                    )
                })?,
                spec: spec.clone(),
            },
        };
        let agents = self.load_agents().await;
        self.spawn_task(TaskSpec {
            id: replay.task_id.clone(),
            description: replay.description.clone(),
            workflow: replay.workflow_key.clone(),
            workflows: Arc::new(set),
            agents: Arc::new(agents),
            provider,
            provider_spec: replay.provider.clone(),
            arbiter,
            start_agent: replay.agent.clone(),
            workspace: replay.workspace.clone(),
            settings,
            store: Some(store),
            resume: Some((files, replay)),
            then,
            hooks: self.task_hooks().await,
            session: self.session(),
            external: None,
        });
        Ok(())
    }

    /// An override for the orchestrator: sent to a running task, or applied to a stored one by
    /// resuming it.
    async fn override_task(
        &self,
        id: &TaskId,
        event: crate::machine::Event,
        name: &str,
    ) -> Result<()> {
        if let Some(handle) = self.shared.tasks.get(id.as_str()).map(|h| h.clone()) {
            let state = handle.state();
            if !state.is_finished() && state != TaskState::Interrupted {
                // The machine states each override applies in are the chart's (rawko-sdk
                // SPEC-0003); a reset is taken wherever the task is.
                let machine_state = handle.snapshot().machine_state;
                if !matches!(event, crate::machine::Event::Reset)
                    && !crate::machine::accepts(&machine_state, event.name())
                {
                    return Err(error(
                        error_codes::TASK_STATE_CONFLICT,
                        format!(
                            "task \"{}\" is {machine_state}; {name} does not apply there",
                            clip(id.as_str())
                        ),
                    ));
                }
                if handle.send(TaskCommand::Override(event.clone())).is_ok() {
                    return Ok(());
                }
            }
        }
        let stored_state = self.task_state_anywhere(id);
        match (&event, stored_state) {
            (_, None) => Err(error(
                error_codes::UNKNOWN_TASK,
                format!("unknown task \"{}\"", clip(id.as_str())),
            )),
            (crate::machine::Event::Retry, Some(TaskState::Failed | TaskState::Interrupted))
            | (crate::machine::Event::Reset, Some(_))
            | (_, Some(TaskState::Interrupted)) => self.resume_from_store(id, Some(event)).await,
            (_, Some(state)) => Err(error(
                error_codes::TASK_STATE_CONFLICT,
                format!(
                    "task \"{}\" is {}; {name} does not apply",
                    clip(id.as_str()),
                    state.as_str()
                ),
            )),
        }
    }

    /// A task's state, running or stored.
    fn task_state_anywhere(&self, id: &TaskId) -> Option<TaskState> {
        if let Some(h) = self.shared.tasks.get(id.as_str()) {
            return Some(h.state());
        }
        let store = self.shared.store.as_ref()?;
        engine::stored::snapshot(&crate::store::TaskFiles::dir_of(store, id.as_str()))
            .map(|s| s.state)
    }

    async fn force_agent(&self, params: ForceAgentParams) -> Result<ForceAgentResult> {
        let agents = self.load_agents().await;
        if params.agent != engine::arbiter::DEFAULT_AGENT && agents.get(&params.agent).is_none() {
            let mut names: Vec<&str> = agents.names().collect();
            names.push(engine::arbiter::DEFAULT_AGENT);
            return Err(invalid_params(format!(
                "unknown agent \"{}\"; the agents are {}",
                clip(&params.agent),
                names.join(", ")
            )));
        }
        self.override_task(
            &params.task_id,
            crate::machine::Event::ForceAgent {
                agent: params.agent.clone(),
            },
            "forceAgent",
        )
        .await?;
        Ok(ForceAgentResult {})
    }

    async fn skip_step(&self, params: SkipStepParams) -> Result<SkipStepResult> {
        self.override_task(&params.task_id, crate::machine::Event::SkipStep, "skipStep")
            .await?;
        Ok(SkipStepResult {})
    }

    async fn retry(&self, params: RetryParams) -> Result<RetryResult> {
        self.override_task(&params.task_id, crate::machine::Event::Retry, "retry")
            .await?;
        Ok(RetryResult {})
    }

    async fn reset(&self, params: ResetParams) -> Result<ResetResult> {
        self.override_task(&params.task_id, crate::machine::Event::Reset, "reset")
            .await?;
        Ok(ResetResult {})
    }

    async fn cancel_task(&self, params: CancelTaskParams) -> Result<CancelTaskResult> {
        self.command(&params.task_id, TaskCommand::Cancel)?;
        Ok(CancelTaskResult {})
    }

    async fn step(&self, params: StepParams) -> Result<StepResult> {
        let (reply, answer) = oneshot::channel();
        self.command(
            &params.task_id,
            TaskCommand::Step {
                action: to_proto::step_action(params.action),
                reply,
            },
        )?;
        match tokio::time::timeout(Duration::from_secs(10), answer).await {
            Ok(Ok(Ok(text))) => Ok(StepResult { text }),
            Ok(Ok(Err(message))) => Err(error(error_codes::TASK_STATE_CONFLICT, message)),
            Ok(Err(_)) => Err(error(
                error_codes::TASK_STATE_CONFLICT,
                format!(
                    "task \"{}\" ended before it could take the step",
                    clip(params.task_id.as_str())
                ),
            )),
            Err(_) => Err(error(
                error_codes::INTERNAL_ERROR,
                "the task did not answer within 10 s",
            )),
        }
    }

    async fn interrupt(&self, params: InterruptParams) -> Result<InterruptResult> {
        if self.task(&params.task_id)?.state() == TaskState::Blocked {
            return Err(error(
                error_codes::TASK_STATE_CONFLICT,
                format!(
                    "task \"{}\" is already interrupted and waits for a message",
                    clip(params.task_id.as_str())
                ),
            ));
        }
        self.command(&params.task_id, TaskCommand::Interrupt)?;
        Ok(InterruptResult {})
    }

    async fn send_message(&self, params: SendMessageParams) -> Result<SendMessageResult> {
        if params.text.len() > MAX_MESSAGE_BYTES {
            return Err(invalid_params(format!(
                "message is {} bytes; the limit is {MAX_MESSAGE_BYTES}",
                params.text.len()
            )));
        }
        if params.text.trim().is_empty() {
            return Err(invalid_params("message is empty"));
        }
        self.command(&params.task_id, TaskCommand::SendMessage(params.text))?;
        Ok(SendMessageResult {})
    }

    async fn list_tasks(&self, _: ListTasksParams) -> Result<ListTasksResult> {
        let mut tasks: Vec<TaskSummary> = self
            .shared
            .tasks
            .iter()
            .map(|h| to_proto::task_summary(&h.snapshot()))
            .collect();
        tasks.extend(self.stored_tasks().iter().map(to_proto::task_summary));
        // The most recently started first; ids end in a counter that breaks ties.
        let order = |id: &TaskId| {
            id.as_str()
                .rsplit('-')
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0)
        };
        tasks.sort_by(|a, b| {
            b.started_at
                .cmp(&a.started_at)
                .then_with(|| order(&b.task_id).cmp(&order(&a.task_id)))
        });
        Ok(ListTasksResult { tasks })
    }

    async fn get_task(&self, params: GetTaskParams) -> Result<GetTaskResult> {
        if let Ok(handle) = self.task(&params.task_id) {
            return Ok(GetTaskResult {
                task: to_proto::task_detail(&handle.snapshot()),
            });
        }
        let store = self.shared.store.clone();
        let id = params.task_id.clone();
        let detail = tokio::task::spawn_blocking(move || {
            let dir = crate::store::TaskFiles::dir_of(store.as_ref()?, id.as_str());
            engine::stored::detail(&dir)
        })
        .await
        .ok()
        .flatten();
        match detail {
            Some(snapshot) => Ok(GetTaskResult {
                task: to_proto::task_detail(&snapshot),
            }),
            None => Err(error(
                error_codes::UNKNOWN_TASK,
                format!("unknown task \"{}\"", clip(params.task_id.as_str())),
            )),
        }
    }

    async fn set_workflow(&self, params: SetWorkflowParams) -> Result<SetWorkflowResult> {
        let outcome = self.load_workflows().await;
        let key = params.workflow.trim();
        let Some(def) = outcome.workflows.find(key).filter(|d| d.show == Show::User) else {
            return Err(error(
                error_codes::WORKFLOW_NOT_FOUND,
                format!("unknown workflow \"{}\"", clip(key)),
            ));
        };
        let (reply, answer) = oneshot::channel();
        self.command(
            &params.task_id,
            TaskCommand::SetWorkflow {
                key: def.key.clone(),
                reply,
            },
        )?;
        match answer.await {
            Ok(Ok(text)) => Ok(SetWorkflowResult { text }),
            Ok(Err(why)) => Err(error(error_codes::TASK_STATE_CONFLICT, why)),
            Err(_) => Err(error(
                error_codes::TASK_STATE_CONFLICT,
                format!("task \"{}\" has ended", clip(params.task_id.as_str())),
            )),
        }
    }

    async fn resume_task(&self, params: ResumeTaskParams) -> Result<ResumeTaskResult> {
        let Ok(handle) = self.task(&params.task_id) else {
            // Not running here: a task found unfinished in the store.
            self.resume_from_store(&params.task_id, None).await?;
            return Ok(ResumeTaskResult {});
        };
        let state = handle.state();
        if state != TaskState::Blocked {
            return Err(error(
                error_codes::TASK_STATE_CONFLICT,
                format!(
                    "task \"{}\" is {}, not interrupted",
                    clip(params.task_id.as_str()),
                    state.as_str()
                ),
            ));
        }
        self.command(&params.task_id, TaskCommand::Resume)?;
        Ok(ResumeTaskResult {})
    }
}

/// Builds the provider a task asked for, and the spec that builds it again on resume.
fn make_provider(
    params: &StartTaskParams,
    workspace: &Path,
    settings: &Settings,
) -> Result<(Box<dyn Provider>, ProviderSpec)> {
    let script = params
        .script
        .as_deref()
        .filter(|s| !s.trim().is_empty())
        .map(Path::new);
    let request = crate::provider::ProviderRequest {
        name: params.provider.as_deref().filter(|s| !s.trim().is_empty()),
        model: params.model.as_deref().filter(|s| !s.trim().is_empty()),
        script,
        base_url: None,
    };
    let spec = crate::provider::resolve_spec(&request, &settings.providers, workspace)
        .map_err(invalid_params)?;
    let provider = spec
        .build_with(&|name| settings.api_keys.get(name))
        .map_err(invalid_params)?;
    Ok((provider, spec))
}

/// The arbiter the settings ask for.
fn make_arbiter(settings: &Settings, workspace: &Path) -> Result<engine::ArbiterSetup> {
    let Some(spec) = &settings.arbiter else {
        return Ok(engine::ArbiterSetup::Deterministic);
    };
    let mut spec = spec.clone();
    if let Some(script) = &spec.script {
        spec.script = Some(workspace.join(script));
    }
    let provider = spec
        .build_with(&|name| settings.api_keys.get(name))
        .map_err(|e| invalid_params(format!("the model arbiter cannot start: {e}")))?;
    Ok(engine::ArbiterSetup::Model { provider, spec })
}

/// Sends a task's events to the client in order, numbering its notifications.
async fn write_events(
    out: Arc<transport::Outgoing>,
    task_id: String,
    mut events: mpsc::UnboundedReceiver<TaskEvent>,
) {
    let mut seq = 0u64;
    while let Some(event) = events.recv().await {
        match event {
            TaskEvent::Status {
                state,
                breadcrumb,
                text,
                reason,
                workflow,
                breadcrumb_text,
            } => {
                seq += 1;
                out.notify::<Status>(&to_proto::status(
                    &task_id,
                    seq,
                    state,
                    &breadcrumb,
                    text,
                    reason,
                    workflow,
                    breadcrumb_text,
                ));
            }
            TaskEvent::Countdown {
                seconds_left,
                text,
                label,
            } => {
                seq += 1;
                out.notify::<Countdown>(&to_proto::countdown(
                    &task_id,
                    seq,
                    seconds_left,
                    text,
                    label,
                ));
            }
            TaskEvent::Output {
                kind,
                text,
                tool_call_id,
                tool,
                input,
                is_error,
            } => {
                seq += 1;
                out.notify::<Output>(&to_proto::output(
                    &task_id,
                    seq,
                    kind,
                    text,
                    tool_call_id,
                    tool,
                    input,
                    is_error,
                ));
            }
            TaskEvent::Finished { outcome, summary } => {
                seq += 1;
                out.notify::<TaskFinished>(&to_proto::finished(&task_id, seq, outcome, summary));
            }
            TaskEvent::Approval(request) => {
                tokio::spawn(ask_approval(out.clone(), task_id.clone(), request));
            }
        }
    }
}

/// Asks the editor about a blocked call. Runs on its own so nothing else waits for the user; when
/// the task stops waiting (its timeout, a cancel) the request is withdrawn with `$/cancelRequest`.
async fn ask_approval(
    out: Arc<transport::Outgoing>,
    task_id: String,
    request: engine::ApprovalRequest,
) {
    let engine::ApprovalRequest {
        tool_call_id,
        tool,
        input,
        phase,
        reason,
        summary,
        expires_at,
        timeout,
        mut reply,
    } = request;
    if !out.is_ready() {
        // No editor attached: nobody here can be asked.
        let _ = reply.send(engine::ApprovalAnswer::NoApprover);
        return;
    }
    let params = ApproveToolCallParams {
        task_id: TaskId(task_id),
        tool_call_id,
        tool,
        input,
        phase,
        reason,
        options: ApprovalOption::ALL.to_vec(),
        summary,
        expires_at: u64::try_from(expires_at).unwrap_or(0),
        // Whole seconds, rounded up: a timeout under a second is not 0.
        timeout_seconds: u64::try_from(timeout.as_millis().div_ceil(1000)).unwrap_or(u64::MAX),
    };
    let (id, answer) = out.request::<ApproveToolCall>(&params);
    let answer = tokio::select! {
        answer = answer => answer,
        () = reply.closed() => {
            out.cancel(&id);
            return;
        }
    };
    let answer = match answer {
        Ok(Ok(result)) => {
            match serde_json::from_value::<rawko_protocol::to_client::ApproveToolCallResult>(result)
            {
                Ok(r) => to_proto::approval_answer(r.outcome),
                Err(e) => {
                    tracing::warn!("the editor's approval answer is not understood: {e}");
                    engine::ApprovalAnswer::Cancelled
                }
            }
        }
        Ok(Err(error)) => {
            tracing::warn!("the editor answered the approval with an error: {error}");
            engine::ApprovalAnswer::Cancelled
        }
        Err(_) => engine::ApprovalAnswer::Cancelled,
    };
    let _ = reply.send(answer);
}

/// Asks the editor whether the workspace's hooks may run (`rawko/trustWorkspace`), records a
/// yes, and tells the user what a no (or no answer) means.
async fn ask_trust(
    out: Arc<transport::Outgoing>,
    client: Client,
    shared: Arc<Shared>,
    workspace: PathBuf,
) {
    let settings = shared.settings();
    let section = settings.workspace_hooks.clone();
    let store = crate::hooks::trust::store_path(|k| std::env::var_os(k));
    let changed = crate::hooks::trust::check(store.as_deref(), &workspace, section.as_ref())
        == Trust::Changed;
    let params = TrustWorkspaceParams {
        workspace: workspace.display().to_string(),
        hooks: crate::hooks::workspace_hook_lines(&settings.hooks),
        changed,
    };
    let (id, answer) = out.request::<TrustWorkspace>(&params);
    let trusted = match tokio::time::timeout(settings.approval_timeout, answer).await {
        Ok(Ok(Ok(result))) => match serde_json::from_value::<TrustWorkspaceResult>(result) {
            Ok(r) => r.trusted,
            Err(e) => {
                tracing::warn!("the editor's trust answer is not understood: {e}");
                false
            }
        },
        Ok(Ok(Err(error))) => {
            tracing::warn!("the editor answered rawko/trustWorkspace with an error: {error}");
            false
        }
        Ok(Err(_)) => false,
        Err(_) => {
            out.cancel(&id);
            false
        }
    };
    if trusted {
        if let (Some(store), Some(section)) = (store, section) {
            if let Err(e) = crate::hooks::trust::record(&store, &workspace, &section) {
                client
                    .show_message(
                        MessageType::WARNING,
                        format!("rawko: cannot record that you trust this workspace: {e}"),
                    )
                    .await;
            }
        }
    } else {
        client
            .show_message(
                MessageType::WARNING,
                format!(
                    "rawko: the hooks in {} do not run because the workspace is not trusted; run `rawko trust` in it to trust it",
                    settings.workspace_hook_files_text(&workspace)
                ),
            )
            .await;
    }
    shared.trust.send_replace(Some(trusted));
}

/// The session ends: AutoAgent's Stop hooks run with the reason, then the session file is closed.
async fn end_session(shared: &Shared, interrupted: bool) {
    // The endpoint goes first: no external agent should reach a server that is ending.
    if let Ok(mut slot) = shared.endpoint.lock() {
        slot.take();
    }
    let Some(session) = shared.session.get() else {
        return;
    };
    let mut status = if interrupted {
        SessionStatus::Interrupted
    } else {
        session.natural_end()
    };
    let settings = shared.settings();
    let trusted = *shared.trust.borrow() == Some(true);
    let workspace = shared.workspace();
    let hooks = Hooks::new(settings.hooks_to_run(trusted), session.id(), workspace);
    let stop =
        crate::hooks::session_stop(&hooks, session.snapshot().as_ref(), status.as_str()).await;
    for note in &stop.notes {
        match note {
            crate::hooks::Note::Output(t) => tracing::info!("{t}"),
            note @ (crate::hooks::Note::Error(_) | crate::hooks::Note::ConfigError { .. }) => {
                tracing::warn!("{}", note.text())
            }
        }
    }
    let mut error = None;
    if let Some(reason) = stop.blocked.or(stop.halt) {
        tracing::warn!("Stop hook blocked termination: {reason}");
        error = Some(format!("Stop hook blocked termination: {reason}"));
        status = SessionStatus::Failed;
    }
    session.end(status, error);
}

/// Parses `workspace/executeCommand` arguments as a method's params.
fn command_params<P: DeserializeOwned>(arguments: &[Value]) -> Result<P> {
    let value = arguments
        .first()
        .cloned()
        .unwrap_or(Value::Object(Default::default()));
    serde_json::from_value(value)
        .map_err(|e| invalid_params(format!("invalid command arguments: {e}")))
}

fn to_value<T: Serialize>(value: T) -> Result<Option<Value>> {
    serde_json::to_value(value)
        .map(Some)
        .map_err(|e| error(error_codes::INTERNAL_ERROR, e.to_string()))
}

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        #[allow(deprecated)]
        let from_client = params
            .workspace_folders
            .as_ref()
            .and_then(|f| f.first())
            .and_then(|f| f.uri.to_file_path().map(|p| p.into_owned()))
            .or_else(|| {
                params
                    .root_uri
                    .as_ref()
                    .and_then(|u| u.to_file_path().map(|p| p.into_owned()))
            });
        let workspace = self
            .shared
            .options
            .workspace
            .clone()
            .or(from_client)
            .unwrap_or_else(|| std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")));
        let (workspace, settings, trust, problems) = self
            .shared
            .configure(workspace, params.initialization_options.as_ref());
        self.shared.trust.send_replace(match trust {
            Trust::NoHooks | Trust::Trusted => Some(true),
            Trust::Untrusted | Trust::Changed => None,
        });
        self.shared.start_session(&workspace, &settings);
        let before = self.shared.workspace.read().ok().and_then(|w| w.clone());
        self.shared.set_workspace(workspace.clone(), settings);
        if before.is_some_and(|b| b != workspace) {
            // The editor's folder is not where the server started: external agents are served
            // for the editor's folder from now on.
            tracing::info!(
                "the editor's workspace is {}; the endpoint moves there",
                workspace.display()
            );
            if let Ok(mut slot) = self.shared.endpoint.lock() {
                slot.take();
            }
            tokio::spawn(open_endpoint(
                self.shared.clone(),
                self.outgoing.clone(),
                workspace,
            ));
        }
        if let Ok(mut p) = self.shared.config_problems.lock() {
            *p = problems;
        }
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: rawko_protocol::commands::ALL
                        .iter()
                        .map(|(c, _)| (*c).to_owned())
                        .collect(),
                    ..Default::default()
                }),
                experimental: Some(serde_json::json!({"rawko": {"protocol": 1}})),
                ..Default::default()
            },
            server_info: Some(ServerInfo {
                name: "rawko".to_owned(),
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            }),
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        // Problems the user should see: bad settings, broken workflows. Sent after initialize,
        // from a task of its own, so the handler returns at once.
        let problems: Vec<String> = self
            .shared
            .config_problems
            .lock()
            .map(|p| p.iter().map(ToString::to_string).collect())
            .unwrap_or_default();
        let client = self.client.clone();
        let workspace = self.workspace();
        // An editor is attached from now on: approvals and notifications go to it.
        self.outgoing.set_ready();
        if self.shared.trust.borrow().is_none() {
            tokio::spawn(ask_trust(
                self.outgoing.clone(),
                self.client.clone(),
                self.shared.clone(),
                workspace.clone(),
            ));
        }
        tokio::spawn(async move {
            for p in problems {
                client
                    .show_message(MessageType::WARNING, format!("rawko config: {p}"))
                    .await;
            }
            let outcome = tokio::task::spawn_blocking(move || {
                load(&default_roots(&workspace, |k| std::env::var_os(k)))
            })
            .await
            .unwrap_or_default();
            let errors = outcome
                .diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .count();
            if errors > 0 {
                client
                    .show_message(
                        MessageType::WARNING,
                        format!(
                            "rawko: {} workflow{} skipped because of {errors} error{}; run `rawko workflows validate` (or your editor's validate command) for details",
                            outcome.skipped.len(),
                            if outcome.skipped.len() == 1 { " was" } else { "s were" },
                            if errors == 1 { "" } else { "s" }
                        ),
                    )
                    .await;
            }
        });
    }

    async fn shutdown(&self) -> Result<()> {
        // Running tasks are not cancelled: their logs are on disk, so after `exit` they are
        // listed as interrupted and `rawko/resumeTask` continues them.
        Ok(())
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        let args = &params.arguments;
        match params.command.as_str() {
            rawko_protocol::commands::START_TASK => {
                to_value(self.start_task(command_params(args)?).await?)
            }
            rawko_protocol::commands::CANCEL_TASK => {
                to_value(self.cancel_task(command_params(args)?).await?)
            }
            rawko_protocol::commands::STEP => to_value(self.step(command_params(args)?).await?),
            other => Err(error(
                error_codes::METHOD_NOT_FOUND,
                format!(
                    "unknown command \"{}\"; the commands are {}",
                    clip(other),
                    rawko_protocol::commands::ALL
                        .iter()
                        .map(|(c, _)| *c)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }
}

/// Runs the server on stdin/stdout until the client exits. Uses a current-thread runtime and,
/// when stdin and stdout are pipes, non-blocking pipe I/O (the cheapest round trip).
pub fn serve_stdio(options: ServeOptions) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let (stdin, stdout) = stdio();
        let (outgoing, frames) = transport::outgoing();
        let for_backend = outgoing.clone();
        let shared_slot: Arc<OnceLock<Arc<Shared>>> = Arc::new(OnceLock::new());
        let slot = shared_slot.clone();
        let (service, socket) = LspService::build(move |client| {
            let backend = Backend::new(client, for_backend, options);
            let _ = slot.set(backend.shared.clone());
            backend
        })
        .custom_method(ListWorkflows::METHOD, Backend::list_workflows)
        .custom_method(ValidateWorkflows::METHOD, Backend::validate_workflows)
        .custom_method(StartTask::METHOD, Backend::start_task)
        .custom_method(CancelTask::METHOD, Backend::cancel_task)
        .custom_method(Step::METHOD, Backend::step)
        .custom_method(Interrupt::METHOD, Backend::interrupt)
        .custom_method(SendMessage::METHOD, Backend::send_message)
        .custom_method(ListTasks::METHOD, Backend::list_tasks)
        .custom_method(GetTask::METHOD, Backend::get_task)
        .custom_method(ResumeTask::METHOD, Backend::resume_task)
        .custom_method(ForceAgent::METHOD, Backend::force_agent)
        .custom_method(SkipStep::METHOD, Backend::skip_step)
        .custom_method(Retry::METHOD, Backend::retry)
        .custom_method(Reset::METHOD, Backend::reset)
        .custom_method(SetWorkflow::METHOD, Backend::set_workflow)
        .finish();
        use tokio::signal::unix::{signal, SignalKind};
        if let Some(shared) = shared_slot.get() {
            early_start(shared.clone(), outgoing.clone()).await;
        }
        let serve = transport::serve(stdin, stdout, service, socket, outgoing, frames);
        let interrupted = match (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
        ) {
            (Ok(mut int), Ok(mut term)) => tokio::select! {
                () = serve => false,
                _ = int.recv() => true,
                _ = term.recv() => true,
            },
            _ => {
                serve.await;
                false
            }
        };
        if let Some(shared) = shared_slot.get() {
            end_session(shared, interrupted).await;
        }
    });
    // stdin may be read by a blocking thread (a socket or a terminal, not a pipe): do not wait
    // for it to return.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    Ok(())
}

type Reader = Box<dyn tokio::io::AsyncRead + Unpin + Send>;
type Writer = Box<dyn tokio::io::AsyncWrite + Unpin + Send>;

/// stdin and stdout: non-blocking pipes when they are pipes, tokio's blocking-thread stdio
/// otherwise (a terminal, a file).
fn stdio() -> (Reader, Writer) {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let stdin: Reader = match std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Receiver::from_owned_fd)
    {
        Ok(rx) => Box::new(rx),
        Err(e) => {
            tracing::debug!("stdin is not a pipe ({e}); using tokio's stdin");
            Box::new(tokio::io::stdin())
        }
    };
    let stdout: Writer = match std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Sender::from_owned_fd)
    {
        Ok(tx) => Box::new(tx),
        Err(e) => {
            tracing::debug!("stdout is not a pipe ({e}); using tokio's stdout");
            Box::new(tokio::io::stdout())
        }
    };
    (stdin, stdout)
}

//! External agents' sessions in the task service: one rawko task per session (Claude Code or
//! Gemini CLI or Codex through its hooks), started by the session's first hook event, or continued from the store when rawko
//! restarted meanwhile. See crate::external.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;

use super::{stored, TaskError, Tasks};
use crate::clip::clip;
use crate::engine::{self, log, ArbiterSetup, OutputKind, TaskEvent, TaskHandle};
use crate::external::{Bridge, BridgeEvent};
use crate::provider::ProviderSpec;
use crate::store::TaskFiles;
use crate::workflow::Show;
use rawko_protocol::ExternalAgent;

/// The longest session id rawko takes (Claude Code's are UUIDs).
pub const MAX_SESSION_ID_BYTES: usize = 256;

/// The task ids of Gemini CLI's sessions begin with this (Claude Code's with `ext-` alone), so
/// which agent a task fronts is known from its id wherever the id goes, a stored task's too.
const GEMINI_ID_PREFIX: &str = "ext-gemini-";
/// The task ids of Codex's sessions begin with this.
const CODEX_ID_PREFIX: &str = "ext-codex-";

/// How the task ids of `agent`'s sessions begin.
fn id_prefix(agent: ExternalAgent) -> &'static str {
    match agent {
        ExternalAgent::Claude => engine::EXTERNAL_ID_PREFIX,
        ExternalAgent::Gemini => GEMINI_ID_PREFIX,
        ExternalAgent::Codex => CODEX_ID_PREFIX,
    }
}

/// The external agent task `task_id` fronts; `None` for rawko's own tasks.
pub fn agent_of_task(task_id: &str) -> Option<ExternalAgent> {
    if task_id.starts_with(GEMINI_ID_PREFIX) {
        Some(ExternalAgent::Gemini)
    } else if task_id.starts_with(CODEX_ID_PREFIX) {
        Some(ExternalAgent::Codex)
    } else if engine::is_external(task_id) {
        Some(ExternalAgent::Claude)
    } else {
        None
    }
}

/// How long a session's first hook waits for its new task to say its first state.
const ANNOUNCE_WAIT: Duration = Duration::from_millis(400);

/// An external session's entry: empty until its task has started. The first hook events of a
/// session often come at once; they all wait on this one cell, so one of them starts the task.
pub(super) type SessionCell = Arc<tokio::sync::OnceCell<Session>>;

/// An external session and the task that stands for it.
pub(super) struct Session {
    task_id: String,
    bridge: Arc<Bridge>,
    created: i64,
    /// Something the user must hear once, with the session's first answer (a workflow that does
    /// not exist, so the session runs ungated).
    notice: std::sync::Mutex<Option<String>>,
}

/// The task of an external session, as a face sees it.
#[derive(Clone)]
pub struct ExternalSession {
    pub task_id: String,
    pub bridge: Arc<Bridge>,
}

impl Tasks {
    /// The task of external session `session_id`, started now if it has none (under `workflow`,
    /// else the settings' `defaultWorkflow`; `prompt` describes it). However many events of a new
    /// session come at once, one task is started and all of them get it.
    pub async fn external_session(
        self: &Arc<Self>,
        session_id: &str,
        workflow: Option<String>,
        prompt: Option<&str>,
    ) -> Result<ExternalSession, TaskError> {
        self.external_session_of(ExternalAgent::Claude, session_id, workflow, prompt)
            .await
    }

    /// [`Tasks::external_session`] of `agent`'s session (its task's id and description say
    /// which agent it fronts).
    pub async fn external_session_of(
        self: &Arc<Self>,
        agent: ExternalAgent,
        session_id: &str,
        workflow: Option<String>,
        prompt: Option<&str>,
    ) -> Result<ExternalSession, TaskError> {
        if session_id.is_empty() {
            return Err(TaskError::Invalid(
                "the hook input has no session_id".to_owned(),
            ));
        }
        if session_id.len() > MAX_SESSION_ID_BYTES {
            return Err(TaskError::Invalid(format!(
                "the session_id \"{}\" is longer than {MAX_SESSION_ID_BYTES} bytes",
                clip(session_id)
            )));
        }
        let cell: SessionCell = self
            .external
            .entry(session_id.to_owned())
            .or_default()
            .clone();
        if let Some(s) = cell.get() {
            return Ok(s.face());
        }
        // The start runs in a task of its own: a caller that goes away meanwhile (its client hung
        // up) cannot leave a task that no session points to, and the others still get it.
        let me = self.clone();
        let id = session_id.to_owned();
        let prompt = prompt.map(str::to_owned);
        tokio::spawn(async move {
            cell.get_or_try_init(|| me.start_external(agent, &id, workflow, prompt.as_deref()))
                .await
                .map(Session::face)
        })
        .await
        .map_err(|e| TaskError::Internal(format!("the session's task could not start: {e}")))?
    }

    /// What the user of external session `session_id` must hear once (taken).
    pub fn external_notice(&self, session_id: &str) -> Option<String> {
        let cell = self.external.get(session_id)?;
        let session = cell.get()?;
        let mut notice = session.notice.lock().ok()?;
        notice.take()
    }

    /// Starts the task of a session rawko has no task for (or resumes its stored one).
    async fn start_external(
        &self,
        agent: ExternalAgent,
        session_id: &str,
        workflow: Option<String>,
        prompt: Option<&str>,
    ) -> Result<Session, TaskError> {
        let place = self.place();
        let mut settings = place.settings.clone();
        // An external session runs as long as the agent does.
        settings.max_iterations = u32::MAX;
        let (_, set) = self.task_workflows().await;
        let mut notice = None;
        let workflow = match workflow.or_else(|| settings.default_workflow.clone()) {
            None => None,
            Some(k) => match set.find(&k) {
                Some(def) if def.show == Show::User => Some(def.key.clone()),
                _ => {
                    tracing::warn!(
                        "external session {session_id}: no workflow \"{}\"; it starts without one",
                        clip(&k)
                    );
                    let known: Vec<&str> = set
                        .iter()
                        .filter(|d| d.show == Show::User)
                        .map(|d| d.key.as_str())
                        .collect();
                    notice = Some(format!(
                        "rawko: there is no workflow \"{}\" ({}), so this session is not gated by a workflow; pick one in the editor, or fix the --workflow of the rawko hooks in {}",
                        clip(&k),
                        if known.is_empty() {
                            "no workflows are defined; `rawko init` writes a starter".to_owned()
                        } else {
                            format!("available: {}", known.join(", "))
                        },
                        crate::external::settings_file(agent)
                    ));
                    None
                }
            },
        };
        let (bridge, provider, extra) = Bridge::new();
        // A session rawko already had a task for (rawko restarted meanwhile) goes on where it was,
        // under the definitions it pinned.
        let model = crate::external::session_model(agent, session_id);
        let resume = self.stored_external(&model, &settings).await;
        let (set, pins) = match &resume {
            Some((_, replay)) => {
                let (set, _, mut pins) = self.resume_definitions(replay).await?;
                // An external agent's agents are not rawko's.
                pins.agents = None;
                (set, pins)
            }
            None => {
                let pins = self.pin_external(workflow.as_deref(), &set).await?;
                (set, pins)
            }
        };
        let (id, description, workflow) = match &resume {
            Some((_, replay)) => (
                replay.task_id.clone(),
                replay.description.clone(),
                replay.workflow_key.clone(),
            ),
            None => {
                let short: String = session_id.chars().take(8).collect();
                let description = match prompt.map(str::trim).filter(|p| !p.is_empty()) {
                    Some(p) => p.chars().take(200).collect(),
                    None => format!("{} session {short}", agent.display_name()),
                };
                let id = format!(
                    "{}{}",
                    id_prefix(agent),
                    engine::new_task_id().trim_start_matches("task-")
                );
                (id, description, workflow)
            }
        };
        let hooks = Arc::new(self.hooks_now());
        let secrets = crate::secrets::Secrets::new(&settings, |k| std::env::var(k).ok());
        let ended = self.forget_when_ended(&id);
        let (handle, events) = engine::spawn_then(
            engine::TaskSpec {
                id: id.clone(),
                description,
                workflow,
                workflows: set,
                agents: Arc::new(crate::agents::AgentSet::default()),
                provider: Box::new(provider),
                provider_spec: ProviderSpec {
                    name: "external".to_owned(),
                    model: Some(model),
                    ..Default::default()
                },
                arbiter: ArbiterSetup::Deterministic,
                start_agent: None,
                workspace: place.workspace.clone(),
                settings,
                store: self.store.clone(),
                resume,
                then: None,
                hooks,
                session: self.session(),
                external: Some(bridge.clone()),
                client_io: None,
                pins,
                delegation: Default::default(),
            },
            ended,
        );
        self.running.insert(id.clone(), handle.clone());
        (self.route.sink)(id.clone(), merge(events, extra, secrets));
        // Wait (briefly) until the task has said its first state, so its context is ready for
        // the hook that started it; a task that fails before it does is answered without.
        let _ = tokio::time::timeout(ANNOUNCE_WAIT, bridge.announced()).await;
        Ok(Session {
            task_id: id,
            bridge,
            created: engine::now_millis(),
            notice: std::sync::Mutex::new(notice),
        })
    }

    /// The stored, unfinished task of an external session, rebuilt from its log.
    async fn stored_external(
        &self,
        model: &str,
        settings: &crate::config::Settings,
    ) -> Option<(TaskFiles, Box<log::Replay>)> {
        let store = self.store.clone()?;
        let model = model.to_owned();
        let config = Self::machine_config(settings);
        // The store is read once, on the first session, not once per session.
        let workspace = self.workspace();
        let index = self
            .external_index
            .get_or_init(|| async move {
                let store = store.clone();
                let found =
                    tokio::task::spawn_blocking(move || unfinished_external(&store, &workspace))
                        .await
                        .unwrap_or_default();
                std::sync::Mutex::new(found)
            })
            .await;
        let dir = index.lock().ok()?.remove(&model)?;
        tokio::task::spawn_blocking(move || {
            let (files, replay) = engine::load_replay(&dir, &config).ok()?;
            (replay.provider.model.as_deref() == Some(model.as_str()) && replay.finished.is_none())
                .then_some((files, replay))
        })
        .await
        .ok()
        .flatten()
    }

    /// The task the external agent's MCP tools act on: the session's, else the newest unfinished
    /// external one.
    pub fn external_task(&self, session: Option<&str>) -> Result<TaskHandle, TaskError> {
        let id = match session {
            Some(s) => self
                .external
                .get(s)
                .and_then(|e| e.get().map(|e| e.task_id.clone()))
                .ok_or_else(|| {
                    TaskError::UnknownTask(format!("no rawko task for session {}", clip(s)))
                })?,
            None => {
                let mut best: Option<(i64, String)> = None;
                for e in self.external.iter() {
                    let Some(e) = e.get() else { continue };
                    if self.finished(&e.task_id) {
                        continue;
                    }
                    if best.as_ref().is_none_or(|(t, _)| e.created > *t) {
                        best = Some((e.created, e.task_id.clone()));
                    }
                }
                best.map(|(_, id)| id).ok_or_else(|| {
                    TaskError::UnknownTask(
                        "no external agent session is running in rawko yet (its hooks start one)"
                            .to_owned(),
                    )
                })?
            }
        };
        // A task that ended was forgotten: its stored state answers (it takes no commands).
        self.handle(&id)
            .or_else(|| {
                stored::snapshot(&TaskFiles::dir_of(self.store.as_ref()?, &id))
                    .map(TaskHandle::stored)
            })
            .ok_or_else(|| TaskError::UnknownTask("the task is gone".to_owned()))
    }

    /// Tells the task of an external session that its session ended (`ended`, the task is
    /// suspended) or came back.
    pub fn external_session_changed(
        &self,
        task_id: &str,
        ended: bool,
        text: String,
    ) -> Result<(), TaskError> {
        self.command(
            task_id,
            engine::TaskCommand::ExternalSession { ended, text },
        )
    }

    /// Whether a task is finished (or not running here at all).
    pub fn finished(&self, task_id: &str) -> bool {
        self.handle(task_id).is_none_or(|h| h.state().is_finished())
    }
}

impl Session {
    fn face(&self) -> ExternalSession {
        ExternalSession {
            task_id: self.task_id.clone(),
            bridge: self.bridge.clone(),
        }
    }
}

/// The stored unfinished external tasks of `workspace`, by their provider model
/// (`claude-code:SESSION`), the newest for each; read from each snapshot and its log's first
/// record.
pub(super) fn unfinished_external(
    store: &std::path::Path,
    workspace: &std::path::Path,
) -> std::collections::HashMap<String, std::path::PathBuf> {
    use std::io::BufRead;
    let mut found: std::collections::HashMap<String, (i64, std::path::PathBuf)> =
        std::collections::HashMap::new();
    for dir in crate::store::task_dirs(store) {
        let is_ext = dir
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(engine::is_external);
        if !is_ext {
            continue;
        }
        let Some(s) = stored::snapshot(&dir) else {
            continue;
        };
        if s.workspace != workspace || s.state.is_finished() {
            continue;
        }
        let Ok(file) = std::fs::File::open(dir.join("events.jsonl")) else {
            continue;
        };
        let mut first = String::new();
        if std::io::BufReader::new(file).read_line(&mut first).is_err() {
            continue;
        }
        let Ok(record) = serde_json::from_str::<crate::store::LogRecord>(&first) else {
            continue;
        };
        let Ok(log::LogEvent::Started { provider, .. }) = serde_json::from_value(record.event)
        else {
            continue;
        };
        let Some(model) = provider.model else {
            continue;
        };
        if found.get(&model).is_none_or(|(at, _)| s.started_at > *at) {
            found.insert(model, (s.started_at, dir));
        }
    }
    found.into_iter().map(|(k, (_, d))| (k, d)).collect()
}

/// The actor's events and the bridge's, in one stream that ends after `Finished`.
fn merge(
    mut events: crate::engine::EventReceiver,
    mut extra: mpsc::UnboundedReceiver<BridgeEvent>,
    secrets: crate::secrets::Secrets,
) -> crate::engine::EventReceiver {
    let (tx, rx) = crate::engine::queue::channel();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                e = events.recv() => match e {
                    Some(e) => {
                        let last = matches!(e, TaskEvent::Finished { .. });
                        let _ = tx.send(e);
                        if last {
                            break;
                        }
                    }
                    None => break,
                },
                Some(e) = extra.recv() => {
                    let _ = tx.send(bridge_event(e, &secrets));
                }
            }
        }
    });
    rx
}

/// A bridge event as the task's output. The agent's tool results, as PostToolUse reported them,
/// are redacted like the task's own output.
fn bridge_event(event: BridgeEvent, secrets: &crate::secrets::Secrets) -> TaskEvent {
    match event {
        BridgeEvent::ToolResult {
            tool_call_id,
            tool,
            mut text,
            is_error,
        } => {
            secrets.scrub(&mut text);
            TaskEvent::Output {
                kind: OutputKind::ToolResult,
                text,
                tool_call_id: Some(tool_call_id),
                tool: Some(tool),
                input: None,
                is_error: Some(is_error),
            }
        }
        BridgeEvent::Note { error, mut text } => {
            secrets.scrub(&mut text);
            TaskEvent::Output {
                kind: if error {
                    OutputKind::Error
                } else {
                    OutputKind::HookOutput
                },
                text,
                tool_call_id: None,
                tool: None,
                input: None,
                is_error: None,
            }
        }
        BridgeEvent::Subagent {
            agent_type,
            agent_id,
            stopped,
        } => TaskEvent::Subagent {
            text: format!(
                "subagent {} {} ({})",
                clip(&agent_type),
                if stopped { "stopped" } else { "started" },
                clip(&agent_id)
            ),
            agent_type,
            agent_id,
        },
    }
}

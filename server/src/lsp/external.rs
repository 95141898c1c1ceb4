//! The server's side of external agents: one rawko task per external session, started by the
//! session's first hook event and shown in the editor like any task. See crate::external.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use super::{transport, write_events, Shared};
use crate::clip::clip;
use crate::engine::{self, TaskCommand, TaskEvent, TaskSpec};
use crate::external::claude::HookAnswer;
use crate::external::endpoint::{BoxFuture, Host};
use crate::external::{Bridge, HookCall, StopAnswer, ToolDecision};
use crate::provider::{ProviderSpec, ToolCall};
use crate::workflow::{default_roots, load, Show};

/// The longest session id rawko takes (Claude Code's are UUIDs).
const MAX_SESSION_ID_BYTES: usize = 256;

/// An external session's entry: empty until its task has started. The first hook events of a
/// session often come at once; they all wait on this one cell, so one of them starts the task.
pub(super) type SessionCell = Arc<tokio::sync::OnceCell<Session>>;

/// An external session and the task that stands for it.
pub(super) struct Session {
    pub task_id: String,
    pub bridge: Arc<Bridge>,
    pub created: i64,
    /// Something the user must hear once, with the session's first answer (a workflow that does
    /// not exist, so the session runs ungated).
    pub notice: std::sync::Mutex<Option<String>>,
}

#[derive(Clone)]
pub(super) struct ExternalHost {
    pub shared: Arc<Shared>,
    pub outgoing: Arc<transport::Outgoing>,
}

impl ExternalHost {
    fn workspace(&self) -> PathBuf {
        self.shared.workspace()
    }

    /// The task of `session_id`, started now if it has none. However many events of a new
    /// session come at once, one task is started and all of them get it.
    async fn session(
        &self,
        session_id: &str,
        workflow: Option<String>,
        prompt: Option<&str>,
    ) -> Result<(String, Arc<Bridge>), String> {
        let cell: SessionCell = self
            .shared
            .external
            .entry(session_id.to_owned())
            .or_default()
            .clone();
        if let Some(s) = cell.get() {
            return Ok((s.task_id.clone(), s.bridge.clone()));
        }
        // The start runs in a task of its own: a caller that goes away meanwhile (its client hung
        // up) cannot leave a task that no session points to, and the others still get it.
        let me = self.clone();
        let id = session_id.to_owned();
        let prompt = prompt.map(str::to_owned);
        tokio::spawn(async move {
            cell.get_or_try_init(|| me.start_session(&id, workflow, prompt.as_deref()))
                .await
                .map(|s| (s.task_id.clone(), s.bridge.clone()))
        })
        .await
        .map_err(|e| format!("the session's task could not start: {e}"))?
    }

    /// Starts the task of a session rawko has no task for (or resumes its stored one).
    async fn start_session(
        &self,
        session_id: &str,
        workflow: Option<String>,
        prompt: Option<&str>,
    ) -> Result<Session, String> {
        let workspace = self.workspace();
        let mut settings = self.shared.settings();
        // An external session runs as long as the agent does.
        settings.max_iterations = u32::MAX;
        let ws = workspace.clone();
        let set = tokio::task::spawn_blocking(move || {
            load(&default_roots(&ws, |k| std::env::var_os(k))).workflows
        })
        .await
        .unwrap_or_default();
        let key = workflow.or_else(|| settings.default_workflow.clone());
        let mut notice = None;
        let workflow = match key {
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
                        "rawko: there is no workflow \"{}\" ({}), so this session is not gated by a workflow; pick one in the editor, or fix the --workflow of the rawko hooks in .claude/settings.local.json",
                        clip(&k),
                        if known.is_empty() {
                            "no workflows are defined; `rawko init` writes a starter".to_owned()
                        } else {
                            format!("available: {}", known.join(", "))
                        }
                    ));
                    None
                }
            },
        };
        let short: String = session_id.chars().take(8).collect();
        let description = match prompt.map(str::trim).filter(|p| !p.is_empty()) {
            Some(p) => p.chars().take(200).collect(),
            None => format!("Claude Code session {short}"),
        };
        let (bridge, provider, extra) = Bridge::new();
        // A session rawko already had a task for (rawko restarted meanwhile) goes on where it was.
        let resume = self.stored(session_id, &settings).await;
        let id = match &resume {
            Some((_, replay)) => replay.task_id.clone(),
            None => format!("ext-{}", engine::new_task_id().trim_start_matches("task-")),
        };
        let hooks = {
            let trusted = *self.shared.trust.borrow() == Some(true);
            Arc::new(crate::hooks::Hooks::new(
                settings.hooks_to_run(trusted),
                self.shared
                    .session
                    .get()
                    .map(|s| s.id())
                    .unwrap_or_default(),
                workspace.clone(),
            ))
        };
        let (description, workflow) = match &resume {
            Some((_, replay)) => (replay.description.clone(), replay.workflow_key.clone()),
            None => (description, workflow),
        };
        let spec = TaskSpec {
            id: id.clone(),
            description,
            workflow,
            workflows: Arc::new(set),
            agents: Arc::new(crate::agents::AgentSet::default()),
            provider: Box::new(provider),
            provider_spec: ProviderSpec {
                name: "external".to_owned(),
                model: Some(format!("claude-code:{session_id}")),
                ..Default::default()
            },
            arbiter: engine::ArbiterSetup::Deterministic,
            start_agent: None,
            workspace,
            settings,
            store: self.shared.store.clone(),
            resume,
            then: None,
            hooks,
            session: self.shared.session.get().cloned(),
            external: Some(bridge.clone()),
        };
        let (handle, events) = engine::spawn(spec);
        self.shared.tasks.insert(id.clone(), handle);
        tokio::spawn(write_events(
            self.outgoing.clone(),
            id.clone(),
            merge(
                events,
                extra,
                crate::secrets::Secrets::new(&self.shared.settings(), |k| std::env::var(k).ok()),
            ),
        ));
        // Wait (briefly) until the task has announced itself, so its context is ready.
        for _ in 0..200 {
            if self
                .shared
                .tasks
                .get(&id)
                .is_some_and(|h| !h.snapshot().history.is_empty())
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        Ok(Session {
            task_id: id,
            bridge,
            created: engine::now_millis(),
            notice: std::sync::Mutex::new(notice),
        })
    }

    /// The stored, unfinished task of an external session, rebuilt from its log.
    async fn stored(
        &self,
        session_id: &str,
        settings: &crate::config::Settings,
    ) -> Option<(crate::store::TaskFiles, Box<crate::engine::log::Replay>)> {
        let store = self.shared.store.clone()?;
        let workspace = self.workspace();
        let model = format!("claude-code:{session_id}");
        let config = crate::machine::MachineConfig {
            max_iterations: settings.max_iterations,
            max_failures: settings.max_failures,
            default_agent: settings.default_agent.clone(),
        };
        tokio::task::spawn_blocking(move || {
            let mut candidates: Vec<engine::TaskSnapshot> = crate::store::task_dirs(&store)
                .into_iter()
                .filter_map(|dir| engine::stored::snapshot(&dir))
                .filter(|s| {
                    s.task_id.starts_with("ext-")
                        && s.workspace == workspace
                        && !s.state.is_finished()
                })
                .collect();
            candidates.sort_by_key(|s| std::cmp::Reverse(s.started_at));
            candidates.into_iter().find_map(|s| {
                let dir = crate::store::TaskFiles::dir_of(&store, &s.task_id);
                let (files, replay) = engine::load_replay(&dir, &config).ok()?;
                (replay.provider.model.as_deref() == Some(model.as_str())
                    && replay.finished.is_none())
                .then_some((files, replay))
            })
        })
        .await
        .ok()
        .flatten()
    }

    fn finished(&self, task_id: &str) -> bool {
        self.shared
            .tasks
            .get(task_id)
            .is_none_or(|h| h.state().is_finished())
    }

    /// The task the MCP tools act on: the session's, else the newest unfinished external one.
    fn pick(&self, session: Option<&str>) -> Result<String, String> {
        if let Some(s) = session {
            return self
                .shared
                .external
                .get(s)
                .and_then(|e| e.get().map(|e| e.task_id.clone()))
                .ok_or_else(|| format!("no rawko task for session {}", clip(s)));
        }
        let mut best: Option<(i64, String)> = None;
        for e in self.shared.external.iter() {
            let Some(e) = e.get() else { continue };
            if self.finished(&e.task_id) {
                continue;
            }
            if best.as_ref().is_none_or(|(t, _)| e.created > *t) {
                best = Some((e.created, e.task_id.clone()));
            }
        }
        best.map(|(_, id)| id).ok_or_else(|| {
            "no external agent session is running in rawko yet (its hooks start one)".to_owned()
        })
    }

    async fn handle(&self, event: String, input: Value, workflow: Option<String>) -> HookAnswer {
        let Some(session_id) = input["session_id"].as_str().filter(|s| !s.is_empty()) else {
            return HookAnswer {
                note: Some("rawko: the hook input has no session_id; ignored".to_owned()),
                ..HookAnswer::default()
            };
        };
        if session_id.len() > MAX_SESSION_ID_BYTES {
            return HookAnswer {
                note: Some(format!(
                    "rawko: the session_id \"{}\" is longer than {MAX_SESSION_ID_BYTES} bytes; ignored",
                    clip(session_id)
                )),
                ..HookAnswer::default()
            };
        }
        let prompt = input["prompt"].as_str();
        let (task_id, bridge) = match self
            .session(
                session_id,
                workflow,
                (event == "UserPromptSubmit").then_some(prompt).flatten(),
            )
            .await
        {
            Ok(s) => s,
            Err(e) => {
                return HookAnswer {
                    note: Some(format!("rawko: {e}")),
                    ..HookAnswer::default()
                }
            }
        };
        if self.finished(&task_id) {
            return HookAnswer::pass();
        }
        let notice = self.shared.external.get(session_id).and_then(|cell| {
            cell.get()
                .and_then(|s| s.notice.lock().ok().and_then(|mut n| n.take()))
        });
        let mut answer = self.answer(&event, &input, &task_id, &bridge, prompt).await;
        if let Some(notice) = notice {
            // Claude Code shows a `systemMessage` to its user; stderr is the fallback.
            match &mut answer.json {
                Some(Value::Object(o)) => {
                    o.insert("systemMessage".to_owned(), json!(notice));
                }
                _ if answer.block.is_none() => answer.json = Some(json!({"systemMessage": notice})),
                _ => answer.note = Some(notice),
            }
        }
        answer
    }

    /// What rawko answers to one hook event of a session whose task runs.
    async fn answer(
        &self,
        event: &str,
        input: &Value,
        task_id: &str,
        bridge: &Arc<Bridge>,
        prompt: Option<&str>,
    ) -> HookAnswer {
        let task_id = task_id.to_owned();
        match event {
            "SessionStart" => HookAnswer::context("SessionStart", bridge.context()),
            "UserPromptSubmit" => {
                if let (Some(p), Some(h)) = (prompt, self.shared.tasks.get(&task_id)) {
                    let _ = h.send(TaskCommand::SendMessage(p.to_owned()));
                }
                HookAnswer::context("UserPromptSubmit", bridge.context())
            }
            "PreToolUse" => {
                let tool = input["tool_name"].as_str().unwrap_or_default().to_owned();
                let tool_input = input["tool_input"].clone();
                let id = input["tool_use_id"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("ext-call-{}", engine::now_millis()));
                let (reply, answer) = oneshot::channel();
                let call = ToolCall {
                    id,
                    name: tool,
                    input: tool_input,
                };
                if !bridge.send(HookCall::PreToolUse { call, reply }) {
                    return HookAnswer::pass();
                }
                let wait = crate::external::hook_wait(&self.shared.settings());
                let Ok(answer) = tokio::time::timeout(wait, answer).await else {
                    // Fail closed: a call rawko could not decide on in time does not run.
                    return HookAnswer::block(format!(
                        "rawko did not decide about this {} call within {} s, so it is refused; try again",
                        clip(input["tool_name"].as_str().unwrap_or("tool")),
                        wait.as_secs()
                    ));
                };
                match answer {
                    Ok(ToolDecision::Pass) | Err(_) => HookAnswer::pass(),
                    Ok(ToolDecision::Deny(reason)) => HookAnswer::block(reason),
                    Ok(ToolDecision::Ask(reason)) => HookAnswer {
                        json: Some(json!({"hookSpecificOutput": {
                            "hookEventName": "PreToolUse",
                            "permissionDecision": "ask",
                            "permissionDecisionReason": reason
                        }})),
                        ..HookAnswer::default()
                    },
                    Ok(ToolDecision::Allow { updated_input }) => {
                        let mut out = json!({"hookSpecificOutput": {
                            "hookEventName": "PreToolUse",
                            "permissionDecision": "allow",
                            "permissionDecisionReason": "allowed in rawko"
                        }});
                        if let Some(u) = updated_input {
                            out["hookSpecificOutput"]["updatedInput"] = u;
                        }
                        HookAnswer {
                            json: Some(out),
                            ..HookAnswer::default()
                        }
                    }
                }
            }
            "PostToolUse" => {
                bridge.send(HookCall::PostToolUse {
                    id: input["tool_use_id"].as_str().unwrap_or_default().to_owned(),
                    tool: input["tool_name"].as_str().unwrap_or_default().to_owned(),
                    response: input["tool_response"].clone(),
                });
                HookAnswer::pass()
            }
            "Stop" | "SubagentStop" => {
                if self
                    .shared
                    .tasks
                    .get(&task_id)
                    .is_some_and(|h| h.state() == engine::TaskState::Blocked)
                {
                    // The task waits on the user (an interrupt, or the reminder cap): the agent
                    // may stop meanwhile.
                    return HookAnswer::pass();
                }
                let (reply, answer) = oneshot::channel();
                let last = input["last_assistant_message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                if !bridge.send(HookCall::Stop {
                    last_message: last,
                    reply,
                }) {
                    return HookAnswer::pass();
                }
                let wait = crate::external::hook_wait(&self.shared.settings());
                match tokio::time::timeout(wait, answer).await {
                    Ok(Ok(StopAnswer::Block(reason))) => HookAnswer::block(reason),
                    Ok(Ok(StopAnswer::Allow) | Err(_)) => HookAnswer::pass(),
                    Err(_) => HookAnswer {
                        note: Some(format!(
                            "rawko: the task did not answer within {} s; the agent may stop",
                            wait.as_secs()
                        )),
                        ..HookAnswer::default()
                    },
                }
            }
            "SessionEnd" => {
                if let Some(h) = self.shared.tasks.get(&task_id) {
                    let _ = h.send(TaskCommand::Cancel);
                }
                HookAnswer::pass()
            }
            other => HookAnswer {
                note: Some(format!(
                    "rawko: the {} event is not used; ignored",
                    clip(other)
                )),
                ..HookAnswer::default()
            },
        }
    }
}

/// The actor's notifications and the bridge's, in one stream that ends after `Finished`.
fn merge(
    mut events: mpsc::UnboundedReceiver<TaskEvent>,
    mut extra: mpsc::UnboundedReceiver<TaskEvent>,
    secrets: crate::secrets::Secrets,
) -> mpsc::UnboundedReceiver<TaskEvent> {
    let (tx, rx) = mpsc::unbounded_channel();
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
                Some(mut e) = extra.recv() => {
                    // The agent's tool results, as PostToolUse reported them: redacted like the
                    // task's own output.
                    if let TaskEvent::Output { text, .. } = &mut e {
                        secrets.scrub(text);
                    }
                    let _ = tx.send(e);
                }
            }
        }
    });
    rx
}

impl ExternalHost {
    /// The handle of the task the MCP tools act on (see [`ExternalHost::pick`]).
    fn picked(&self, session: Option<&str>) -> Result<engine::TaskHandle, String> {
        let id = self.pick(session)?;
        self.shared
            .tasks
            .get(&id)
            .map(|h| h.clone())
            .ok_or_else(|| "the task is gone".to_owned())
    }
}

/// Sends a command that answers through `reply` and waits for the answer.
async fn ask(
    handle: engine::TaskHandle,
    command: impl FnOnce(oneshot::Sender<Result<String, String>>) -> TaskCommand,
) -> Result<String, String> {
    let (reply, answer) = oneshot::channel();
    handle
        .send(command(reply))
        .map_err(|_| "the task has ended".to_owned())?;
    answer.await.map_err(|_| "the task has ended".to_owned())?
}

impl Host for ExternalHost {
    fn hook(&self, event: String, input: Value, workflow: Option<String>) -> BoxFuture<HookAnswer> {
        let me = self.clone();
        Box::pin(async move { me.handle(event, input, workflow).await })
    }

    fn step(&self, action: String, session: Option<String>) -> BoxFuture<Result<String, String>> {
        let me = self.clone();
        Box::pin(async move {
            let handle = me.picked(session.as_deref())?;
            let action = crate::workflow::step::parse_input(&json!({"action": action}))?;
            ask(handle, |reply| TaskCommand::Step { action, reply }).await
        })
    }

    fn status(&self, session: Option<String>) -> BoxFuture<Result<Value, String>> {
        let me = self.clone();
        Box::pin(async move {
            let s = me.picked(session.as_deref())?.snapshot();
            Ok(json!({
                "taskId": s.task_id,
                "state": s.state.as_str(),
                "workflow": s.workflow,
                "breadcrumb": s.breadcrumb_text,
                "text": s.status_text,
            }))
        })
    }

    fn start(
        &self,
        workflow: String,
        session: Option<String>,
    ) -> BoxFuture<Result<String, String>> {
        let me = self.clone();
        Box::pin(async move {
            let handle = me.picked(session.as_deref())?;
            ask(handle, |reply| TaskCommand::SetWorkflow {
                key: workflow,
                reply,
            })
            .await
        })
    }
}

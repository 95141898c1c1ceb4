//! The endpoint's side of external agents: each hook event is answered from the task of its
//! session (the task service starts one per session); the MCP tools step the task. See
//! crate::external. Claude Code's events are answered here, Gemini CLI's in `host_gemini.rs`;
//! Codex's hooks take Claude Code's format and are answered as Claude Code's, but for
//! PreToolUse and PostToolUse (crate::external::codex).

use std::sync::Arc;

use rawko_protocol::endpoint::{
    HookParams, SessionParams, SessionStatus, ToolAnswer, WorkflowStartParams, WorkflowStepParams,
};
use rawko_protocol::ExternalAgent;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::{BoxFuture, Host};
use crate::clip::clip;
use crate::engine;
use crate::engine::tasks::{TaskError, Tasks};
use crate::external::claude::{self, HookAnswer};
use crate::external::{Bridge, BridgeEvent, HookCall, StopAnswer, ToolDecision};
use crate::external::codex;
use crate::provider::ToolCall;

/// Numbers the PermissionRequests of this process.
static NEXT_PERMISSION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// How the session stands as one of its events arrives.
#[derive(Clone, Copy)]
struct Arrival {
    /// The event brought the session back after its end (`claude --resume`).
    resumed: bool,
    /// Nobody is at the session (`claude -p`).
    unattended: bool,
}

/// What answers the endpoint's calls: the task service.
#[derive(Clone)]
pub struct ExternalHost {
    pub tasks: Arc<Tasks>,
}

impl ExternalHost {
    async fn handle(
        &self,
        agent: ExternalAgent,
        event: String,
        input: Value,
        workflow: Option<String>,
        unattended: bool,
    ) -> HookAnswer {
        let session_id = input["session_id"].as_str().unwrap_or_default();
        let prompt = input["prompt"].as_str();
        // The user's prompt describes a session its first event starts.
        let prompt_event = match agent {
            ExternalAgent::Claude | ExternalAgent::Codex => "UserPromptSubmit",
            ExternalAgent::Gemini => "BeforeAgent",
        };
        let (task_id, bridge) = match self
            .tasks
            .external_session_of(
                agent,
                session_id,
                workflow,
                (event == prompt_event).then_some(prompt).flatten(),
            )
            .await
        {
            Ok(s) => (s.task_id, s.bridge),
            Err(e @ TaskError::Invalid(_)) => {
                return HookAnswer {
                    note: Some(format!("rawko: {e}; ignored")),
                    ..HookAnswer::default()
                }
            }
            Err(e) => {
                return HookAnswer {
                    note: Some(format!("rawko: {e}")),
                    ..HookAnswer::default()
                }
            }
        };
        if self.tasks.finished(&task_id) {
            return HookAnswer::pass();
        }
        let notice = self.tasks.external_notice(session_id);
        // Any event after the session's end is the session come back (`claude --resume`): the
        // task goes on where it was.
        let resumed = event != "SessionEnd" && bridge.wake();
        if resumed {
            let _ = self.tasks.external_session_changed(
                &task_id,
                false,
                format!("the {} session resumed", agent.display_name()),
            );
        }
        let mut answer = match agent {
            ExternalAgent::Claude => {
                self.answer(
                    &event,
                    &input,
                    &task_id,
                    &bridge,
                    prompt,
                    Arrival {
                        resumed,
                        unattended,
                    },
                )
                .await
            }
            ExternalAgent::Gemini => {
                self.answer_gemini(&event, &input, &task_id, &bridge, prompt)
                    .await
            }
            ExternalAgent::Codex => match event.as_str() {
                "PreToolUse" => self.codex_pre_tool_use(&input, &bridge).await,
                "PostToolUse" => {
                    codex_post_tool_use(&input, &bridge);
                    HookAnswer::pass()
                }
                _ => {
                    self.answer(
                        &event,
                        &input,
                        &task_id,
                        &bridge,
                        prompt,
                        Arrival {
                            resumed,
                            unattended: false,
                        },
                    )
                    .await
                }
            },
        };
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
        Arrival {
            resumed,
            unattended,
        }: Arrival,
    ) -> HookAnswer {
        let task_id = task_id.to_owned();
        let plan_mode = claude::in_plan_mode(input);
        let text = |key: &str| clip(input[key].as_str().unwrap_or_default()).into_owned();
        match event {
            "SessionStart" => {
                let source = input["source"].as_str().unwrap_or_default();
                if source == "compact" {
                    bridge.notify(BridgeEvent::Note {
                        error: false,
                        text: "the conversation was compacted; rawko gave the agent the phase's context again".to_owned(),
                    });
                }
                HookAnswer::context("SessionStart", bridge.context())
            }
            "SubagentStart" => {
                bridge.notify(BridgeEvent::Subagent {
                    agent_type: text("agent_type"),
                    agent_id: text("agent_id"),
                    stopped: false,
                });
                // The subagent works in the same phase: it gets the phase's context too.
                HookAnswer::context("SubagentStart", bridge.context())
            }
            "SubagentStop" => {
                // A subagent that stops is not the agent stopping early. A compaction fires it
                // with no agent type: nothing to show.
                let agent_type = text("agent_type");
                if !agent_type.is_empty() {
                    bridge.notify(BridgeEvent::Subagent {
                        agent_type,
                        agent_id: text("agent_id"),
                        stopped: true,
                    });
                }
                HookAnswer::pass()
            }
            // In plan mode rawko would allow nothing past Claude Code's own check: the user is
            // not asked (again) about a call that plan mode decides.
            "PermissionRequest" if plan_mode => HookAnswer::pass(),
            "PermissionRequest" => {
                let (reply, answer) = oneshot::channel();
                let call = ToolCall {
                    // PermissionRequest carries no tool_use_id: an id of its own.
                    id: format!(
                        "permission-{}-{}",
                        engine::now_millis(),
                        NEXT_PERMISSION.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                    ),
                    name: input["tool_name"].as_str().unwrap_or_default().to_owned(),
                    input: input["tool_input"].clone(),
                };
                if !bridge.send(HookCall::PermissionRequest { call, reply }) {
                    return HookAnswer::pass();
                }
                let wait = crate::external::hook_wait(&self.tasks.settings());
                match tokio::time::timeout(wait, answer).await {
                    Ok(Ok(decision)) => claude::permission_request_answer(decision, plan_mode),
                    Ok(Err(_)) => HookAnswer::pass(),
                    // Fail closed, as for PreToolUse.
                    Err(_) => claude::permission_request_answer(
                        ToolDecision::Deny(format!(
                            "rawko did not decide about this {} call within {} s, so it is refused; try again",
                            clip(input["tool_name"].as_str().unwrap_or("tool")),
                            wait.as_secs()
                        )),
                        plan_mode,
                    ),
                }
            }
            "PermissionDenied" => {
                bridge.notify(BridgeEvent::Note {
                    error: true,
                    text: format!(
                        "Claude Code refused {}: {}",
                        text("tool_name"),
                        text("reason")
                    ),
                });
                HookAnswer::pass()
            }
            "StopFailure" => {
                let details = text("error_details");
                bridge.notify(BridgeEvent::Note {
                    error: true,
                    text: format!(
                        "the agent's turn ended with an error: {}{}",
                        text("error"),
                        if details.is_empty() {
                            String::new()
                        } else {
                            format!(" ({details})")
                        }
                    ),
                });
                HookAnswer::pass()
            }
            "PreCompact" => {
                bridge.notify(BridgeEvent::Note {
                    error: false,
                    text: format!("the agent compacts its conversation ({})", text("trigger")),
                });
                HookAnswer::pass()
            }
            "PostCompact" => {
                // Claude Code takes no context from PostCompact: SessionStart `compact`, which
                // follows, gives the phase's context back.
                bridge.notify(BridgeEvent::Note {
                    error: false,
                    text: format!("the agent compacted its conversation ({})", text("trigger")),
                });
                HookAnswer::pass()
            }
            "Notification" => {
                let title = text("title");
                bridge.notify(BridgeEvent::Note {
                    error: false,
                    text: format!(
                        "Claude Code: {}{}",
                        if title.is_empty() {
                            String::new()
                        } else {
                            format!("{title}: ")
                        },
                        text("message")
                    ),
                });
                HookAnswer::pass()
            }
            "UserPromptSubmit" => {
                self.record_prompt(&task_id, prompt);
                HookAnswer::context("UserPromptSubmit", bridge.context())
            }
            "PreToolUse" => {
                let tool = input["tool_name"].as_str().unwrap_or_default().to_owned();
                let tool_input = input["tool_input"].clone();
                let id = input["tool_use_id"]
                    .as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("ext-call-{}", engine::now_millis()));
                let call = ToolCall {
                    id,
                    name: tool,
                    input: tool_input,
                };
                let decision = self.decide_tool(bridge, call).await;
                claude::pre_tool_use_answer(decision, plan_mode, unattended)
            }
            "PostToolUse" | "PostToolUseFailure" => {
                let failed = event == "PostToolUseFailure";
                bridge.send(HookCall::PostToolUse {
                    id: input["tool_use_id"].as_str().unwrap_or_default().to_owned(),
                    tool: input["tool_name"].as_str().unwrap_or_default().to_owned(),
                    // A failure reports its error instead of a response.
                    response: if failed {
                        input["error"].clone()
                    } else {
                        input["tool_response"].clone()
                    },
                    failed,
                });
                HookAnswer::pass()
            }
            "Stop" => {
                let last = input["last_assistant_message"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                match self.decide_stop(&task_id, bridge, last, resumed).await {
                    Ok(StopAnswer::Block(reason)) => HookAnswer::block(reason),
                    Ok(StopAnswer::Allow) => HookAnswer::pass(),
                    Err(note) => HookAnswer {
                        note: Some(note),
                        ..HookAnswer::default()
                    },
                }
            }
            "SessionEnd" => {
                // Every `claude -p` exit ends its session, and `claude --resume` brings it back:
                // the task is suspended, not cancelled, so the resumed session goes on under its
                // workflow (after a restart too: the task stays unfinished in the store).
                if bridge.suspend() {
                    let reason = text("reason");
                    let _ = self.tasks.external_session_changed(
                        &task_id,
                        true,
                        format!(
                            "suspended: the Claude Code session ended ({}); it goes on when the session resumes (claude --resume)",
                            if reason.is_empty() { "other" } else { &reason }
                        ),
                    );
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

impl ExternalHost {
    /// Hands a tool call of the agent to its task and waits for the decision, within
    /// [`crate::external::hook_wait`]: a call rawko could not decide on in time is refused (fail
    /// closed); one whose task has ended is left to the agent.
    pub(super) async fn decide_tool(&self, bridge: &Bridge, call: ToolCall) -> ToolDecision {
        let tool = clip(&call.name).into_owned();
        let (reply, answer) = oneshot::channel();
        if !bridge.send(HookCall::PreToolUse { call, reply }) {
            return ToolDecision::Pass;
        }
        let wait = crate::external::hook_wait(&self.tasks.settings());
        match tokio::time::timeout(wait, answer).await {
            Ok(Ok(decision)) => decision,
            Ok(Err(_)) => ToolDecision::Pass,
            Err(_) => ToolDecision::Deny(format!(
                "rawko did not decide about this {tool} call within {} s, so it is refused; try again",
                wait.as_secs()
            )),
        }
    }

    /// Tells the task the agent wants to stop (`last` is its last message) and waits for the
    /// answer; `Err` with a note when the task did not answer in time (the agent may stop).
    pub(super) async fn decide_stop(
        &self,
        task_id: &str,
        bridge: &Bridge,
        last: String,
        resumed: bool,
    ) -> Result<StopAnswer, String> {
        if !resumed
            && self
                .tasks
                .handle(task_id)
                .is_some_and(|h| h.state() == engine::TaskState::Blocked)
        {
            // The task waits on the user (an interrupt, or the reminder cap): the agent may stop
            // meanwhile.
            return Ok(StopAnswer::Allow);
        }
        let (reply, answer) = oneshot::channel();
        if !bridge.send(HookCall::Stop {
            last_message: last,
            reply,
        }) {
            return Ok(StopAnswer::Allow);
        }
        let wait = crate::external::hook_wait(&self.tasks.settings());
        match tokio::time::timeout(wait, answer).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Ok(StopAnswer::Allow),
            Err(_) => Err(format!(
                "rawko: the task did not answer within {} s; the agent may stop",
                wait.as_secs()
            )),
        }
    }

    /// Records the user's prompt as the task's message (the agent has it already). One the
    /// service refuses (too long) is only left out of the log.
    pub(super) fn record_prompt(&self, task_id: &str, prompt: Option<&str>) {
        if let Some(p) = prompt.filter(|p| !p.trim().is_empty()) {
            if let Err(e) = self.tasks.send_message(task_id, p.to_owned()) {
                tracing::warn!("the prompt of task {task_id} is not recorded: {e}");
            }
        }
    }

    /// Codex's PreToolUse: each call the gate is asked about ([`codex::tool_calls`]: an
    /// `apply_patch` is an edit of each file it names) is decided in turn, holding Codex until
    /// rawko (the editor, for an approval) has decided; the first refusal blocks the whole call.
    /// Codex honours only a block, so anything else is no answer.
    async fn codex_pre_tool_use(&self, input: &Value, bridge: &Arc<Bridge>) -> HookAnswer {
        let tool = input["tool_name"].as_str().unwrap_or_default();
        let id = input["tool_use_id"]
            .as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| format!("ext-call-{}", engine::now_millis()));
        let cwd = input["cwd"]
            .as_str()
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| self.tasks.workspace());
        for call in codex::tool_calls(tool, &input["tool_input"], &id, &cwd) {
            let name = call.name.clone();
            let (reply, answer) = oneshot::channel();
            if !bridge.send(HookCall::PreToolUse { call, reply }) {
                return HookAnswer::pass();
            }
            let wait = crate::external::hook_wait(&self.tasks.settings());
            let decision = match tokio::time::timeout(wait, answer).await {
                Ok(Ok(decision)) => decision,
                Ok(Err(_)) => ToolDecision::Pass,
                // Fail closed: a call rawko could not decide on in time does not run.
                Err(_) => ToolDecision::Deny(format!(
                    "rawko did not decide about this {} call within {} s, so it is refused; try again",
                    clip(&name),
                    wait.as_secs()
                )),
            };
            let answer = codex::pre_tool_use_answer(decision);
            if answer.block.is_some() {
                return answer;
            }
        }
        HookAnswer::pass()
    }
}

/// Codex's PostToolUse: recorded as the result of each call its PreToolUse was decided as.
fn codex_post_tool_use(input: &Value, bridge: &Bridge) {
    let tool = input["tool_name"].as_str().unwrap_or_default();
    let id = input["tool_use_id"].as_str().unwrap_or_default();
    let cwd = std::path::PathBuf::from(input["cwd"].as_str().unwrap_or("/"));
    for call in codex::tool_calls(tool, &input["tool_input"], id, &cwd) {
        bridge.send(HookCall::PostToolUse {
            id: call.id,
            tool: call.name,
            response: input["tool_response"].clone(),
            failed: false,
        });
    }
}

impl Host for ExternalHost {
    fn hook(&self, p: HookParams) -> BoxFuture<HookAnswer> {
        let me = self.clone();
        let agent = p.agent.unwrap_or(ExternalAgent::Claude);
        Box::pin(async move {
            me.handle(agent, p.event, p.input, p.workflow, p.unattended)
                .await
        })
    }

    fn step(&self, p: WorkflowStepParams) -> BoxFuture<ToolAnswer> {
        let me = self.clone();
        Box::pin(async move {
            let stepped = async {
                let handle = me
                    .tasks
                    .external_task(p.session_id.as_deref())
                    .map_err(|e| e.to_string())?;
                let action = crate::workflow::step::parse_input(&json!({"action": p.action}))?;
                me.tasks
                    .step(&handle.id, action)
                    .await
                    .map_err(|e| e.to_string())
            };
            match stepped.await {
                Ok(text) => ToolAnswer::done(text),
                Err(why) => ToolAnswer::failed(why),
            }
        })
    }

    fn status(&self, p: SessionParams) -> BoxFuture<ToolAnswer> {
        let me = self.clone();
        Box::pin(async move {
            match me.tasks.external_task(p.session_id.as_deref()) {
                Ok(handle) => {
                    let s = handle.snapshot();
                    ToolAnswer {
                        ok: true,
                        text: None,
                        status: Some(SessionStatus {
                            task_id: s.task_id,
                            state: crate::lsp::to_proto::task_state(s.state),
                            workflow: s.workflow,
                            breadcrumb: s.breadcrumb_text,
                            text: s.status_text,
                        }),
                    }
                }
                Err(e) => ToolAnswer::failed(e.to_string()),
            }
        })
    }

    fn start(&self, p: WorkflowStartParams) -> BoxFuture<ToolAnswer> {
        let me = self.clone();
        Box::pin(async move {
            let started = async {
                let handle = me.tasks.external_task(p.session_id.as_deref())?;
                // Through the service, which pins the workflow before the task starts it.
                me.tasks.set_workflow_of(&handle.id, &p.workflow).await
            };
            match started.await {
                Ok(text) => ToolAnswer::done(text),
                Err(e) => ToolAnswer::failed(e.to_string()),
            }
        })
    }
}

//! The endpoint's side of external agents: each hook event is answered from the task of its
//! session (the task service starts one per session); the MCP tools step the task. See
//! crate::external. Codex's hooks take Claude Code's format: its events are answered as Claude
//! Code's, but for PreToolUse (crate::external::codex).

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
use crate::external::claude::HookAnswer;
use crate::external::codex;
use crate::external::{Bridge, HookCall, StopAnswer, ToolDecision};
use crate::provider::ToolCall;

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
    ) -> HookAnswer {
        let session_id = input["session_id"].as_str().unwrap_or_default();
        let prompt = input["prompt"].as_str();
        let (task_id, bridge) = match self
            .tasks
            .external_session_of(
                agent,
                session_id,
                workflow,
                (event == "UserPromptSubmit").then_some(prompt).flatten(),
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
        let mut answer = match (agent, event.as_str()) {
            (ExternalAgent::Codex, "PreToolUse") => self.codex_pre_tool_use(&input, &bridge).await,
            (ExternalAgent::Codex, "PostToolUse") => {
                codex_post_tool_use(&input, &bridge);
                HookAnswer::pass()
            }
            _ => self.answer(&event, &input, &task_id, &bridge, prompt).await,
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
    ) -> HookAnswer {
        let task_id = task_id.to_owned();
        match event {
            "SessionStart" => HookAnswer::context("SessionStart", bridge.context()),
            "UserPromptSubmit" => {
                if let Some(p) = prompt.filter(|p| !p.trim().is_empty()) {
                    // The agent has the prompt already; the task records it as the user's
                    // message. One the service refuses (too long) is only left out of the log.
                    if let Err(e) = self.tasks.send_message(&task_id, p.to_owned()) {
                        tracing::warn!("the prompt of task {task_id} is not recorded: {e}");
                    }
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
                let wait = crate::external::hook_wait(&self.tasks.settings());
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
                    .tasks
                    .handle(&task_id)
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
                let wait = crate::external::hook_wait(&self.tasks.settings());
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
                // A task that has already ended has nothing to cancel.
                let _ = self.tasks.cancel(&task_id);
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
        });
    }
}

impl Host for ExternalHost {
    fn hook(&self, p: HookParams) -> BoxFuture<HookAnswer> {
        let me = self.clone();
        let agent = p.agent.unwrap_or(ExternalAgent::Claude);
        Box::pin(async move { me.handle(agent, p.event, p.input, p.workflow).await })
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

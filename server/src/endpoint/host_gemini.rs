//! Gemini CLI's hook events, answered from the task of its session through the same bridge as
//! Claude Code's (crate::external), in Gemini CLI's format (crate::external::gemini).
//!
//! Gemini CLI's habits rawko minds: it gives tool calls no id (BeforeTool and AfterTool of one
//! call are paired by name and input); after AfterAgent refused to let it stop, it runs the
//! reason as its next prompt and fires BeforeAgent with it, which is not a message of its user
//! (taking it for one would reset the reminder count and never let the agent stop); PreCompress
//! cannot answer anything (and 0.61 fires it before every model request, compressing or not), so
//! the next BeforeToolSelection looks for the phase's context in the conversation, and when it is
//! gone the next tool result brings it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::Value;

use super::host::ExternalHost;
use crate::clip::clip;
use crate::external::claude::HookAnswer;
use crate::external::gemini;
use crate::external::{Bridge, HookCall, StopAnswer, ToolDecision};
use crate::provider::ToolCall;

/// Numbers the ids rawko gives Gemini CLI's tool calls.
static NEXT_CALL: AtomicU64 = AtomicU64::new(1);

impl ExternalHost {
    /// What rawko answers to one Gemini CLI hook event of a session whose task runs.
    pub(super) async fn answer_gemini(
        &self,
        event: &str,
        input: &Value,
        task_id: &str,
        bridge: &Arc<Bridge>,
        prompt: Option<&str>,
    ) -> HookAnswer {
        match event {
            "SessionStart" => gemini::context("SessionStart", bridge.context()),
            "BeforeAgent" => {
                // The reminder rawko gave at AfterAgent, run as the next prompt, is rawko's own
                // words: the user said nothing.
                if !prompt.is_some_and(|p| bridge.is_last_block(p)) {
                    self.record_prompt(task_id, prompt);
                }
                // Said now, so not owed any more.
                bridge.take_owed_context();
                gemini::context("BeforeAgent", bridge.context())
            }
            "BeforeToolSelection" => {
                // After PreCompress: the conversation about to be sent still holds the phase's
                // context, or the next tool result brings it (compressed away, or the phase
                // moved on since it was said).
                if bridge.context_is_owed()
                    && bridge
                        .context()
                        .is_none_or(|c| gemini::context_in(&input["llm_request"]["messages"], &c))
                {
                    bridge.take_owed_context();
                }
                gemini::tool_selection(bridge.with_phase(gemini::allowed_functions).flatten())
            }
            "BeforeTool" => {
                let tool = input["tool_name"].as_str().unwrap_or_default();
                let tool_input = input["tool_input"].clone();
                let key = gemini::call_key(tool, &tool_input);
                let id = format!(
                    "gemini-{}-{}",
                    crate::engine::now_millis(),
                    NEXT_CALL.fetch_add(1, Ordering::Relaxed)
                );
                bridge.remember_call(key.clone(), id.clone());
                let call = ToolCall {
                    id,
                    name: gemini::gate_name(tool),
                    input: tool_input,
                };
                let decision = self.decide_tool(bridge, call).await;
                if matches!(decision, ToolDecision::Deny(_)) {
                    // A refused call does not run, and AfterTool does not come for it.
                    bridge.take_call(&key);
                }
                gemini::tool_answer(decision)
            }
            "AfterTool" => {
                let tool = input["tool_name"].as_str().unwrap_or_default();
                let key = gemini::call_key(tool, &input["tool_input"]);
                let id = bridge.take_call(&key).unwrap_or_else(|| {
                    format!(
                        "gemini-{}-{}",
                        crate::engine::now_millis(),
                        NEXT_CALL.fetch_add(1, Ordering::Relaxed)
                    )
                });
                let mut response = input["tool_response"].clone();
                let is_error = gemini::failed(&response);
                if let Value::Object(o) = &mut response {
                    o.insert("is_error".to_owned(), Value::Bool(is_error));
                }
                bridge.send(HookCall::PostToolUse {
                    id,
                    tool: gemini::gate_name(tool),
                    response,
                    failed: is_error,
                });
                if bridge.take_owed_context() {
                    // The history was compacted: the phase context rides on this tool result.
                    gemini::context("AfterTool", bridge.context())
                } else {
                    HookAnswer::pass()
                }
            }
            "AfterAgent" => {
                let last = input["prompt_response"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                match self.decide_stop(task_id, bridge, last, false).await {
                    Ok(StopAnswer::Block(reason)) => gemini::deny(reason),
                    Ok(StopAnswer::Allow) => HookAnswer::pass(),
                    Err(note) => HookAnswer {
                        note: Some(note),
                        ..HookAnswer::default()
                    },
                }
            }
            "PreCompress" => {
                bridge.owe_context();
                HookAnswer::pass()
            }
            "SessionEnd" => {
                // `gemini --resume ID` brings the session back under the same id; its SessionStart
                // (source `resume`) wakes the task.
                self.suspend(
                    rawko_protocol::ExternalAgent::Gemini,
                    task_id,
                    bridge,
                    input,
                );
                HookAnswer::pass()
            }
            other => HookAnswer {
                note: Some(format!(
                    "rawko: the Gemini CLI {} event is not used; ignored",
                    clip(other)
                )),
                ..HookAnswer::default()
            },
        }
    }
}

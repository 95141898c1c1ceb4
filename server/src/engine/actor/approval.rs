//! Approvals of blocked tool calls, with the "always" answers remembered for the task.

use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;

use super::agent::summarize_call;
use super::{Control, Stop};
use crate::engine::log::LogEvent;
use crate::engine::{now_millis, ApprovalAnswer, ApprovalRequest, TaskEvent, TaskState};
use crate::provider::ToolCall;

impl Control {
    /// Asks the user about a blocked call, remembering "always" answers for the task.
    pub(super) async fn approval(
        &mut self,
        call: &ToolCall,
        phase: &str,
        reason: &str,
        detail: &str,
    ) -> Result<ApprovalAnswer, Stop> {
        let tool_key = call.name.to_ascii_lowercase();
        if self.approvals.always_allowed.contains(&tool_key) {
            return Ok(ApprovalAnswer::AllowAlways);
        }
        if self.approvals.always_rejected.contains(&tool_key) {
            return Ok(ApprovalAnswer::RejectAlways);
        }
        self.fire_tool_hooks(crate::hooks::HookEvent::ApprovalRequested, call, |inv| {
            inv.field("phase", phase).field("reason", reason)
        })
        .await?;
        let (reply, answer) = oneshot::channel();
        self.set_status(
            TaskState::WaitingApproval,
            Some(format!("{} is blocked in the {phase} phase", call.name)),
            "approval_requested",
        );
        let timeout = self.settings.approval_timeout;
        let subagent = self.delegation.subagent.as_ref().map(|s| s.of.clone());
        // The user is told which subagent asks.
        let detail = match &subagent {
            Some(of) => format!("{}: {detail}", of.label()),
            None => detail.to_owned(),
        };
        self.emit(TaskEvent::Approval(Box::new(ApprovalRequest {
            tool_call_id: call.id.clone(),
            tool: call.name.clone(),
            input: call.input.clone(),
            phase: phase.to_owned(),
            reason: reason.to_owned(),
            detail,
            subagent,
            summary: approval_summary(call),
            expires_at: now_millis()
                .saturating_add(i64::try_from(timeout.as_millis()).unwrap_or(i64::MAX)),
            timeout,
            reply,
        })));
        let waited = self
            .wait(tokio::time::timeout(timeout, answer), false)
            .await;
        let (answer, why) = match waited {
            Ok(Ok(Ok(ApprovalAnswer::NoApprover))) => {
                self.approvals.ask_agent = Some(reason.to_owned());
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
                self.approvals.always_allowed.insert(tool_key);
            }
            ApprovalAnswer::RejectAlways => {
                self.approvals.always_rejected.insert(tool_key);
            }
            _ => {}
        }
        self.log(LogEvent::Approval {
            id: call.id.clone(),
            tool: call.name.clone(),
            answer: answer_name(answer).to_owned(),
        });
        self.approvals.approved = answer.allows();
        let detail = why
            .clone()
            .unwrap_or_else(|| format!("{}: {}", call.name, answer_name(answer)));
        self.record("approval_resolved", None, None, Some(detail));
        self.set_status(TaskState::Running, why, "approval_resolved");
        self.fire_tool_hooks(crate::hooks::HookEvent::ApprovalResolved, call, |inv| {
            inv.field("answer", answer_name(answer))
                .field("phase", phase)
        })
        .await?;
        Ok(answer)
    }
}

/// The summary of a blocked call for its approval: the output panel's line, and for a call that
/// writes content (Write) how much, e.g. `Write notes.md (12 bytes)`.
pub(super) fn approval_summary(call: &ToolCall) -> String {
    let line = summarize_call(call);
    match call.input.get("content").and_then(Value::as_str) {
        Some(content) => {
            let n = content.len();
            format!("{line} ({n} byte{})", if n == 1 { "" } else { "s" })
        }
        None => line,
    }
}

pub(super) fn answer_name(answer: ApprovalAnswer) -> &'static str {
    match answer {
        ApprovalAnswer::AllowOnce => "allow_once",
        ApprovalAnswer::AllowAlways => "allow_always",
        ApprovalAnswer::RejectOnce => "reject_once",
        ApprovalAnswer::RejectAlways => "reject_always",
        ApprovalAnswer::Cancelled => "cancelled",
        ApprovalAnswer::NoApprover => "no_approver",
    }
}

pub(super) fn format_duration(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs >= 1.0 && (secs - secs.round()).abs() < 1e-9 {
        format!("{} s", secs.round())
    } else {
        format!("{secs:.1} s")
    }
}

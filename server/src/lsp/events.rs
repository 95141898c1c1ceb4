//! A task's events on the wire: one writer per task sends its notifications in order with a
//! `seq`; an approval is asked in a task of its own, so nothing else waits for the user.

use std::sync::Arc;

use rawko_protocol::to_client::{
    ApprovalOption, ApprovalWithdrawn, ApprovalWithdrawnParams, ApproveToolCall,
    ApproveToolCallParams, Countdown, Output, Status, TaskFinished,
};
use rawko_protocol::types::TaskId;

use super::to_proto::{self, Note};
use super::transport;
use crate::engine::{self, TaskEvent};

/// Sends a task's events to the client in order, numbering its notifications.
pub(super) async fn write_events(
    out: Arc<transport::Outgoing>,
    task_id: String,
    mut events: crate::engine::EventReceiver,
) {
    let mut seq = 0u64;
    while let Some(event) = events.recv().await {
        if let TaskEvent::Approval(request) = event {
            tokio::spawn(ask_approval(out.clone(), task_id.clone(), *request));
            continue;
        }
        let Some(note) = to_proto::note(&task_id, seq + 1, &event) else {
            continue;
        };
        seq += 1;
        match note {
            Note::Status(p) => out.notify::<Status>(&p),
            Note::Countdown(p) => out.notify::<Countdown>(&p),
            Note::Output(p) => out.notify::<Output>(&p),
            Note::Finished(p) => out.notify::<TaskFinished>(&p),
        }
    }
}

/// Asks the editor about a blocked call. Runs on its own so nothing else waits for the user; when
/// the task stops waiting (its timeout, a cancel) the request is withdrawn with `$/cancelRequest`
/// and `rawko/approvalWithdrawn`.
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
        detail,
        summary,
        expires_at,
        timeout,
        subagent,
        mut reply,
    } = request;
    if !out.is_ready() {
        // No editor attached: nobody here can be asked.
        let _ = reply.send(engine::ApprovalAnswer::NoApprover);
        return;
    }
    // Whole seconds, rounded up: a timeout under a second is not 0.
    let timeout_seconds = u64::try_from(timeout.as_millis().div_ceil(1000)).unwrap_or(u64::MAX);
    let withdrawn = ApprovalWithdrawnParams {
        task_id: TaskId(task_id.clone()),
        tool_call_id: tool_call_id.clone(),
    };
    let params = ApproveToolCallParams {
        task_id: TaskId(task_id),
        tool_call_id,
        tool,
        input,
        phase,
        reason,
        detail,
        options: ApprovalOption::ALL.to_vec(),
        summary,
        expires_at: u64::try_from(expires_at).unwrap_or(0),
        timeout_seconds,
        timeout_text: format!("denied once if there is no answer within {timeout_seconds} s"),
        timeout_label: "denied in".to_owned(),
        subagent: subagent.as_deref().map(to_proto::subagent_info),
    };
    let (id, answer) = out.request::<ApproveToolCall>(&params);
    let answer = tokio::select! {
        answer = answer => answer,
        () = reply.closed() => {
            // `$/cancelRequest` names the request by its JSON-RPC id, which a client's RPC
            // library may not show its handler; the notification names it by its tool call.
            out.cancel(&id);
            out.notify::<ApprovalWithdrawn>(&withdrawn);
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

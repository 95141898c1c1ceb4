//! What `rawko acp` sends the client in a session, in the order the task produced it: the task's
//! events as `session/update`s (the pump), its blocked calls as `session/request_permission`, and
//! the `fs/*` and `terminal/*` requests its tools make.
//!
//! Everything goes out through the SDK's one outgoing queue per connection, in the order it is
//! put there. The task's events reach that queue late: each is announced once its record in the
//! task's log is durable (invariant 6), and then through the session's pump, which runs apart
//! from the task. A tool of the task that asks the client something would overtake them (a
//! Write's `fs/write_text_file` before the `tool_call` of that Write and before the plan that
//! leaves the read-only phase). So a request first waits until what the task logged before it
//! is announced and every pump of the session has sent it (`Outbox::flush`, `outbox.rs`); a permission
//! request is put in the queue by the pump itself, between the updates before it and after it.

use std::sync::Arc;

use agent_client_protocol::v1::schema::{RequestPermissionRequest, RequestPermissionResponse};

use super::outbox::Flushes;
use super::session::Session;
use super::{client_io, map};
use crate::engine::{ApprovalAnswer, ApprovalRequest, OutputKind, TaskEvent};

/// Starts the pump of a task of `session`: its events become `session/update`s, in order.
pub fn start_pump(session: Arc<Session>, task_id: String, events: crate::engine::EventReceiver) {
    let flushes = session.outbox.register();
    session.task_started(&task_id);
    tokio::spawn(pump(session, task_id, events, flushes));
}

/// Shows a subagent of the session's task as one tool call of its own (`subagent-<its id>`, titled
/// by its label): its tool calls and results as the call's content as they come, its end as the
/// call's status with its answer. Its blocked calls are asked like the task's own.
pub fn start_subagent_pump(
    session: Arc<Session>,
    task_id: String,
    of: Arc<crate::engine::subagents::SubagentOf>,
    events: crate::engine::EventReceiver,
) {
    tokio::spawn(subagent_pump(session, task_id, of, events));
}

async fn subagent_pump(
    session: Arc<Session>,
    task_id: String,
    of: Arc<crate::engine::subagents::SubagentOf>,
    mut events: crate::engine::EventReceiver,
) {
    use agent_client_protocol::v1::schema::{
        SessionUpdate, ToolCall, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
    };
    let call_id = format!("subagent-{task_id}");
    session.notify(SessionUpdate::ToolCall(
        ToolCall::new(call_id.clone(), of.label())
            .kind(ToolKind::Think)
            .status(ToolCallStatus::InProgress)
            .raw_input(serde_json::json!({
                "taskId": task_id,
                "profile": of.profile,
                "name": of.name,
                "parentToolCallId": of.call_id,
            })),
    ));
    // What it did so far, one line each, sent whole with each update.
    let mut lines: Vec<String> = Vec::new();
    while let Some(event) = events.recv().await {
        let (line, status) = match event {
            TaskEvent::Approval(request) => {
                ask_permission(&session, *request);
                continue;
            }
            TaskEvent::Output {
                kind: OutputKind::ToolCall,
                text,
                ..
            } => (format!("🔧 {text}"), None),
            TaskEvent::Output {
                kind: OutputKind::ToolResult,
                text,
                is_error,
                ..
            } => {
                let mark = if is_error == Some(true) { "✗" } else { "↳" };
                (
                    format!("   {mark} {}", crate::clip::clip_line(&text, 200)),
                    None,
                )
            }
            TaskEvent::Output {
                kind: OutputKind::Error,
                text,
                ..
            } => (format!("⚠️ {}", crate::clip::clip_line(&text, 200)), None),
            TaskEvent::Finished { outcome, summary } => {
                let status = if outcome == crate::engine::Outcome::Complete {
                    ToolCallStatus::Completed
                } else {
                    ToolCallStatus::Failed
                };
                (summary.trim().to_owned(), Some(status))
            }
            _ => continue,
        };
        lines.push(line);
        let mut fields = ToolCallUpdateFields::new().content(vec![lines.join("\n").into()]);
        if let Some(status) = status {
            fields = fields.status(status);
        }
        session.notify(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id.clone(),
            fields,
        )));
    }
}

/// Sends a task's events to the client as `session/update`s, in order, and ends the turn where
/// the task says. A flush request is answered once every event queued before it was sent.
async fn pump(
    session: Arc<Session>,
    task_id: String,
    mut events: crate::engine::EventReceiver,
    mut flushes: Flushes,
) {
    let mut mapper = map::Mapper::new(session.set.clone(), session.workspace.clone());
    loop {
        tokio::select! {
            biased;
            event = events.recv() => match event {
                Some(event) => send(&session, &task_id, &mut mapper, event),
                None => break,
            },
            Some(done) = flushes.recv() => {
                // The task queued its events before it asked: they are all here now.
                while let Ok(event) = events.try_recv() {
                    send(&session, &task_id, &mut mapper, event);
                }
                let _ = done.send(());
            }
        }
    }
}

/// Sends what one event shows (or asks), and ends the turn where it says.
fn send(session: &Arc<Session>, task_id: &str, mapper: &mut map::Mapper, event: TaskEvent) {
    if let TaskEvent::Approval(request) = event {
        ask_permission(session, *request);
        return;
    }
    for update in mapper.map(&event) {
        session.notify(client_io::keep_terminal(update, &session.terminals));
    }
    if let TaskEvent::Finished { outcome, .. } = &event {
        session.task_finished(task_id, *outcome);
    }
    if let Some(reason) = map::turn_end(&event) {
        session.turn_ended(task_id, reason, matches!(event, TaskEvent::Finished { .. }));
    }
}

/// Asks the client about a blocked call (`session/request_permission`): the request is queued
/// now, after the updates before it; its answer is waited for in a task of its own, within the
/// approval timeout. When the task stops waiting first (that timeout: `reject_once`, or a
/// cancel) the stream says so, the call does not run, and the request is withdrawn
/// (`$/cancel_request`) so the client closes its prompt.
fn ask_permission(session: &Arc<Session>, request: ApprovalRequest) {
    let ApprovalRequest {
        tool_call_id,
        tool,
        input,
        phase,
        reason,
        detail,
        summary,
        timeout,
        mut reply,
        ..
    } = request;
    // The words for people (the gate's reason is written for the model).
    let reason = if detail.trim().is_empty() {
        reason
    } else {
        detail
    };
    let params = RequestPermissionRequest::new(
        session.id.clone(),
        map::permission_tool_call(
            &tool_call_id,
            &tool,
            &input,
            &phase,
            &reason,
            &summary,
            &session.workspace,
        ),
        map::permission_options(),
    );
    let sent = session.cx.send_request(params);
    let session = session.clone();
    tokio::spawn(async move {
        // The task stops waiting at the same timeout (it started counting first), so `reply`
        // closes first; the bound here only makes sure nothing waits past it.
        let answer = tokio::select! {
            answer = client_io::within("session/request_permission", timeout, sent.block_task()) => answer,
            () = reply.closed() => {
                session.message(map::approval_timeout_line(&summary));
                return;
            }
        };
        let answer = match answer {
            Ok(RequestPermissionResponse { outcome, .. }) => map::approval_answer(&outcome),
            Err(crate::tools::ClientError::Answered(e)) => {
                tracing::warn!("the client answered the permission request with an error: {e}");
                ApprovalAnswer::Cancelled
            }
            Err(crate::tools::ClientError::NoAnswer(_)) => {
                session.message(map::approval_timeout_line(&summary));
                return;
            }
        };
        if let Some(line) = map::approval_line(answer, &summary) {
            session.message(line);
        }
        let _ = reply.send(answer);
    });
}

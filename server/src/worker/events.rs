//! A team task's events as a worker reads them: its status to the team's view (`rawko-tasks`),
//! its blocked calls to the team's faces (`rawko-asks`, the first answer in `rawko-approvals`
//! wins), and its end.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::Ctx;
use crate::engine::{now_millis, ApprovalAnswer, ApprovalRequest, Crumb, TaskEvent};
use crate::team::records::{self, get_json, put_json, Answer, Ask, TaskEntry};

/// The breadcrumb's levels as `rawko/status` sends them.
pub fn crumbs_json(crumbs: &[Crumb]) -> Value {
    Value::Array(
        crumbs
            .iter()
            .map(|c| {
                json!({"name": c.name, "phaseName": c.phase_name, "emoji": c.emoji,
                       "index": c.index, "total": c.total})
            })
            .collect(),
    )
}

/// Reads one task's events (the task or one of its subagents): its status to the team's view,
/// its blocked calls to the team's faces, and its end.
pub(super) async fn follow(
    ctx: Arc<Ctx>,
    task_id: String,
    mut events: crate::engine::EventReceiver,
    ended: Option<Arc<Mutex<Option<oneshot::Sender<String>>>>>,
) {
    let mut outcome = None;
    while let Some(event) = events.recv().await {
        match event {
            TaskEvent::Status {
                state,
                breadcrumb,
                breadcrumb_text,
                ..
            } if ended.is_some() => {
                let mut entry = get_json::<TaskEntry>(&ctx.tasks, &task_id)
                    .await
                    .unwrap_or_default();
                entry.task_id = task_id.clone();
                entry.state = state.as_str().to_owned();
                entry.breadcrumb = breadcrumb_text;
                entry.crumbs = crumbs_json(&breadcrumb);
                entry.worker = Some(ctx.name.clone());
                entry.updated_at = now_millis();
                let _ = put_json(&ctx.tasks, &task_id, &entry).await;
            }
            TaskEvent::Approval(request) => {
                tokio::spawn(ask(ctx.clone(), task_id.clone(), *request));
            }
            TaskEvent::Finished { outcome: o, .. } => outcome = Some(o.as_str().to_owned()),
            _ => {}
        }
    }
    if let Some(ended) = ended {
        if let Some(tx) = ended.lock().unwrap_or_else(|e| e.into_inner()).take() {
            let _ = tx.send(outcome.unwrap_or_else(|| "failed".to_owned()));
        }
    }
}

/// An answer's outcome as the task takes it.
pub fn answer_of(outcome: &str) -> ApprovalAnswer {
    match outcome {
        "allow_once" => ApprovalAnswer::AllowOnce,
        "allow_always" => ApprovalAnswer::AllowAlways,
        "reject_once" => ApprovalAnswer::RejectOnce,
        "reject_always" => ApprovalAnswer::RejectAlways,
        _ => ApprovalAnswer::Cancelled,
    }
}

/// Asks the team about a blocked call: an answer recorded before (the task was taken over after
/// it was answered) is used at once; else the call is put in the asks bucket for every face,
/// and the first answer created in the answers bucket is the task's.
async fn ask(ctx: Arc<Ctx>, task_id: String, request: ApprovalRequest) {
    let ApprovalRequest {
        tool_call_id,
        tool,
        input,
        phase,
        reason,
        detail,
        summary,
        expires_at,
        timeout,
        mut reply,
        ..
    } = request;
    let key = records::ask_key(&task_id, &tool_call_id);
    // Watch first, so an answer given between the look and the ask is not missed.
    let mut watch = None;
    for attempt in 0..100u32 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        if let Ok(w) = ctx.answers.watch(&key).await {
            watch = Some(w);
            break;
        }
    }
    if let Some(answer) = get_json::<Answer>(&ctx.answers, &key).await {
        // Answered before this worker asked (a task taken over): never asked again, and a
        // question the lost worker left open in the faces is withdrawn.
        let _ = reply.send(answer_of(&answer.outcome));
        let _ = ctx.asks.delete(&key).await;
        return;
    }
    let Some(mut watch) = watch else {
        let _ = reply.send(ApprovalAnswer::Cancelled);
        return;
    };
    let question = Ask {
        task_id: task_id.clone(),
        tool_call_id,
        tool,
        input,
        phase,
        reason,
        detail,
        summary,
        expires_at,
        timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
        worker: ctx.name.clone(),
        asked_at: now_millis(),
    };
    if let Err(e) = put_json(&ctx.asks, &key, &question).await {
        (ctx.say)(format!("warning: task {task_id}: asking the team: {e}"));
    }
    // The watch is the fast path; a look every few seconds covers a watch that a node's loss
    // left silent.
    let mut look = tokio::time::interval(Duration::from_secs(3));
    look.tick().await;
    loop {
        tokio::select! {
            _ = look.tick() => {
                if let Some(answer) = get_json::<Answer>(&ctx.answers, &key).await {
                    let _ = reply.send(answer_of(&answer.outcome));
                    break;
                }
            }
            entry = watch.next() => match entry {
                Some(Ok(entry)) if entry.operation == async_nats::jetstream::kv::Operation::Put => {
                    if let Ok(answer) = serde_json::from_slice::<Answer>(&entry.value) {
                        let _ = reply.send(answer_of(&answer.outcome));
                        break;
                    }
                }
                Some(_) => {}
                None => {
                    // The watch ended (the connection moved): look, then watch again.
                    if let Some(answer) = get_json::<Answer>(&ctx.answers, &key).await {
                        let _ = reply.send(answer_of(&answer.outcome));
                        break;
                    }
                    match ctx.answers.watch(&key).await {
                        Ok(w) => watch = w,
                        Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
                    }
                }
            },
            () = reply.closed() => break,
        }
    }
    let _ = ctx.asks.delete(&key).await;
}

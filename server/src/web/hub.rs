//! What the web page sees of the tasks: each task's events as they happen (kept for a page that
//! opens later: the last output of the tasks this process ran, the approvals that wait) and
//! sent to every open page as server-sent events.
//!
//! The hub sits on a task's route ([`Hub::tee`]): it reads the task's events, keeps what the page
//! needs, and hands every event on to the face beside it (the editor's connection, the terminal),
//! if there is one. An approval is offered to both: the first answer wins and goes to the task;
//! the other face's question is withdrawn at once (the editor's with `$/cancelRequest` and
//! `rawko/approvalWithdrawn`, the page's with an `approvalWithdrawn` event).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use indexmap::IndexMap;
use rawko_protocol::to_client::{ApprovalOption, ApproveToolCallParams, OutputParams};
use rawko_protocol::types::TaskId;
use serde::Serialize;
use tokio::sync::{broadcast, oneshot};

use super::approval::{changes, Approval};
use crate::engine::tasks::{Sink, Tasks};
use crate::engine::{queue, ApprovalAnswer, ApprovalRequest, TaskEvent};
use crate::lsp::to_proto::{self, Note};

/// How many output entries the page is shown of one task when it opens.
const KEEP_OUTPUT: usize = 500;
/// Of how many tasks the output is kept (the latest ones to show something).
const KEEP_TASKS: usize = 64;
/// How many messages a slow page may fall behind before it is told to read everything again.
const BACKLOG: usize = 1024;

/// Who ended an approval, for the page's `approvalWithdrawn`.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum AnsweredBy {
    Web,
    /// The face beside the page: the editor, or the terminal of `rawko run`.
    Editor,
    /// The task stopped waiting: its time ran out, it was cancelled or it ended.
    Task,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Withdrawn<'a> {
    task_id: &'a str,
    tool_call_id: &'a str,
    by: AnsweredBy,
    #[serde(skip_serializing_if = "Option::is_none")]
    outcome: Option<&'static str>,
}

struct Pending {
    approval: Arc<Approval>,
    answer: oneshot::Sender<ApprovalAnswer>,
}

#[derive(Default)]
struct State {
    /// The output of the latest tasks, by task id, in the order they last said something.
    outputs: IndexMap<String, VecDeque<OutputParams>>,
    /// The approvals that wait, by (task id, tool call id), oldest first.
    pending: IndexMap<(String, String), Pending>,
    /// Each task's numbering of its messages (the page orders nothing by it; it is the editors').
    seqs: HashMap<String, u64>,
}

/// Why an answer from the page was not taken.
#[derive(Debug, PartialEq, Eq)]
pub enum AnswerError {
    /// Nothing waits under that name (answered elsewhere, timed out, never asked).
    NotPending,
}

/// The page's view of the tasks, shared by the HTTP server and the tasks' routes.
pub struct Hub {
    state: Mutex<State>,
    events: broadcast::Sender<Arc<str>>,
    tasks: OnceLock<Weak<Tasks>>,
    notify: OnceLock<Option<crate::config::Notify>>,
    /// The page's address without the token, for a notification's link.
    page: OnceLock<String>,
}

impl Hub {
    pub fn new() -> Arc<Hub> {
        Arc::new(Hub {
            state: Mutex::new(State::default()),
            events: broadcast::channel(BACKLOG).0,
            tasks: OnceLock::new(),
            notify: OnceLock::new(),
            page: OnceLock::new(),
        })
    }

    /// The service whose tasks the hub shows (set once it is opened: the route is given first).
    pub fn attach(&self, tasks: &Arc<Tasks>) {
        let _ = self.tasks.set(Arc::downgrade(tasks));
        let _ = self.notify.set(tasks.settings().notify);
    }

    pub fn tasks(&self) -> Option<Arc<Tasks>> {
        self.tasks.get().and_then(Weak::upgrade)
    }

    pub(super) fn set_page(&self, url: String) {
        let _ = self.page.set(url);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new page's stream of messages (each one whole `event:`/`data:` block).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<str>> {
        self.events.subscribe()
    }

    fn send(&self, event: &str, data: &impl Serialize) {
        if self.events.receiver_count() == 0 {
            return;
        }
        match serde_json::to_string(data) {
            Ok(json) => {
                let _ = self.events.send(sse(event, &json).into());
            }
            Err(e) => tracing::warn!("web: cannot write a {event} event: {e}"),
        }
    }

    /// The approvals that wait, oldest first (of one task, or of all).
    pub fn approvals(&self, task: Option<&str>) -> Vec<Arc<Approval>> {
        self.lock()
            .pending
            .iter()
            .filter(|((t, _), _)| task.is_none_or(|task| task == t))
            .map(|(_, p)| p.approval.clone())
            .collect()
    }

    /// What the page is shown of a task's output when it opens it.
    pub fn output(&self, task: &str) -> Vec<OutputParams> {
        self.lock()
            .outputs
            .get(task)
            .map(|o| o.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The page's answer to an approval: it goes to the task unless the call stopped waiting.
    pub fn answer(
        &self,
        task: &str,
        call: &str,
        answer: ApprovalAnswer,
    ) -> Result<(), AnswerError> {
        let pending = self
            .lock()
            .pending
            .shift_remove(&(task.to_owned(), call.to_owned()));
        let pending = pending.ok_or(AnswerError::NotPending)?;
        pending
            .answer
            .send(answer)
            .map_err(|_| AnswerError::NotPending)
    }

    /// A route for tasks: the page sees every event; `beside`, the face next to the page, gets
    /// them all too (approvals offered to both).
    pub fn tee(self: &Arc<Hub>, beside: Option<Sink>) -> Sink {
        let hub = self.clone();
        Arc::new(move |id: String, events: crate::engine::EventReceiver| {
            let forward = beside.as_ref().map(|sink| {
                let (tx, rx) = queue::channel();
                sink(id.clone(), rx);
                tx
            });
            tokio::spawn(hub.clone().follow(id, events, forward));
        })
    }

    /// Reads one task's events until it ends.
    async fn follow(
        self: Arc<Hub>,
        id: String,
        mut events: crate::engine::EventReceiver,
        forward: Option<queue::Sender<TaskEvent>>,
    ) {
        self.announce_task(&id).await;
        while let Some(event) = events.recv().await {
            if let TaskEvent::Approval(request) = event {
                tokio::spawn(self.clone().offer(id.clone(), *request, forward.clone()));
                continue;
            }
            self.observe(&id, &event);
            if let Some(tx) = &forward {
                let _ = tx.send(event);
            }
        }
        // The task's row changed for the last time (or it stopped being followed).
        self.announce_task(&id).await;
    }

    /// Tells the pages about a task (its list row), started or resumed in this process.
    async fn announce_task(&self, id: &str) {
        let Some(tasks) = self.tasks() else { return };
        if let Ok(snapshot) = tasks.get(id).await {
            self.send("task", &to_proto::task_summary(&snapshot));
        }
    }

    /// Keeps and sends on what the page shows of one event.
    fn observe(&self, id: &str, event: &TaskEvent) {
        let seq = self.lock().seqs.get(id).copied().unwrap_or(0) + 1;
        let Some(note) = to_proto::note(id, seq, event) else {
            return;
        };
        self.lock().seqs.insert(id.to_owned(), seq);
        match note {
            Note::Status(p) => self.send("status", &p),
            Note::Countdown(p) => self.send("countdown", &p),
            Note::Output(p) => self.output_event(p),
            Note::Finished(p) => {
                self.send("finished", &p);
                self.lock().seqs.remove(id);
            }
        }
    }

    fn output_event(&self, params: OutputParams) {
        self.send("output", &params);
        let mut state = self.lock();
        let id = params.task_id.as_str().to_owned();
        let entries = match state.outputs.get_index_of(&id) {
            Some(i) => {
                // The task said something: it moves to the end (kept longest).
                let last = state.outputs.len() - 1;
                state.outputs.move_index(i, last);
                &mut state.outputs[last]
            }
            None => {
                if state.outputs.len() >= KEEP_TASKS {
                    state.outputs.shift_remove_index(0);
                }
                state.outputs.entry(id).or_default()
            }
        };
        if entries.len() >= KEEP_OUTPUT {
            entries.pop_front();
        }
        entries.push_back(params);
    }

    /// Offers a blocked call to the page and to the face beside it; the first answer goes to the
    /// task, and the other question is withdrawn.
    async fn offer(
        self: Arc<Hub>,
        id: String,
        request: ApprovalRequest,
        forward: Option<queue::Sender<TaskEvent>>,
    ) {
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
            subagent,
            mut reply,
        } = request;
        // The face beside the page gets the same question with an answer of its own.
        let mut beside = forward.and_then(|tx| {
            let (answer_tx, answer_rx) = oneshot::channel();
            let copy = ApprovalRequest {
                tool_call_id: tool_call_id.clone(),
                tool: tool.clone(),
                input: input.clone(),
                phase: phase.clone(),
                reason: reason.clone(),
                detail: detail.clone(),
                summary: summary.clone(),
                expires_at,
                timeout,
                subagent: subagent.clone(),
                reply: answer_tx,
            };
            tx.send(TaskEvent::Approval(Box::new(copy)))
                .ok()
                .map(|()| answer_rx)
        });
        let timeout_seconds = u64::try_from(timeout.as_millis().div_ceil(1000)).unwrap_or(u64::MAX);
        let workspace = self.tasks().map(|t| t.workspace()).unwrap_or_default();
        let task_description = match self.tasks() {
            Some(tasks) => tasks
                .handle(&id)
                .map(|h| h.snapshot().description)
                .unwrap_or_default(),
            None => String::new(),
        };
        let approval = Arc::new(Approval {
            changes: changes(&tool, &input, &workspace),
            params: ApproveToolCallParams {
                task_id: TaskId(id.clone()),
                tool_call_id: tool_call_id.clone(),
                tool,
                input,
                phase,
                reason,
                detail,
                options: ApprovalOption::ALL.to_vec(),
                summary,
                expires_at: u64::try_from(expires_at).unwrap_or(0),
                timeout_seconds,
                timeout_text: format!(
                    "denied once if there is no answer within {timeout_seconds} s"
                ),
                timeout_label: "denied in".to_owned(),
                subagent: subagent.as_deref().map(crate::lsp::to_proto::subagent_info),
            },
            task_description,
        });
        let (answer_tx, mut from_page) = oneshot::channel();
        let key = (id.clone(), tool_call_id.clone());
        self.lock().pending.insert(
            key.clone(),
            Pending {
                approval: approval.clone(),
                answer: answer_tx,
            },
        );
        self.send("approval", &*approval);
        if let Some(notify) = self.notify.get().cloned().flatten() {
            let page = self.page.get().cloned().unwrap_or_default();
            tokio::spawn(super::notify::approval_waits(notify, approval, page));
        }
        let (answer, by) = loop {
            tokio::select! {
                answer = &mut from_page => match answer {
                    Ok(answer) => break (Some(answer), AnsweredBy::Web),
                    // The hub forgot it: only when it is withdrawn below.
                    Err(_) => break (None, AnsweredBy::Task),
                },
                answer = async { beside.as_mut().expect("guarded").await }, if beside.is_some() => match answer {
                    // Nobody at the face beside (no editor attached, no terminal): the page
                    // answers.
                    Ok(ApprovalAnswer::NoApprover) | Err(_) => beside = None,
                    Ok(answer) => break (Some(answer), AnsweredBy::Editor),
                },
                () = reply.closed() => break (None, AnsweredBy::Task),
            }
        };
        // Forget it before the task goes on, so a late click is told it was answered.
        self.lock().pending.shift_remove(&key);
        drop(beside);
        self.send(
            "approvalWithdrawn",
            &Withdrawn {
                task_id: &id,
                tool_call_id: &tool_call_id,
                by,
                outcome: answer.map(outcome_name),
            },
        );
        if let Some(answer) = answer {
            let _ = reply.send(answer);
        }
    }
}

/// The wire name of an answer (`rawko/approveToolCall`'s outcome).
pub fn outcome_name(answer: ApprovalAnswer) -> &'static str {
    match answer {
        ApprovalAnswer::AllowOnce => "allow_once",
        ApprovalAnswer::AllowAlways => "allow_always",
        ApprovalAnswer::RejectOnce => "reject_once",
        ApprovalAnswer::RejectAlways => "reject_always",
        ApprovalAnswer::Cancelled | ApprovalAnswer::NoApprover => "cancelled",
    }
}

/// The answer a page names, if it is one of the four it offers.
pub fn parse_outcome(name: &str) -> Option<ApprovalAnswer> {
    Some(match name {
        "allow_once" => ApprovalAnswer::AllowOnce,
        "allow_always" => ApprovalAnswer::AllowAlways,
        "reject_once" => ApprovalAnswer::RejectOnce,
        "reject_always" => ApprovalAnswer::RejectAlways,
        _ => return None,
    })
}

/// One server-sent event: each line of `data` on a `data:` line of its own.
pub fn sse(event: &str, data: &str) -> String {
    let mut out = String::with_capacity(data.len() + event.len() + 16);
    out.push_str("event: ");
    out.push_str(event);
    out.push('\n');
    for line in data.split('\n') {
        out.push_str("data: ");
        out.push_str(line.strip_suffix('\r').unwrap_or(line));
        out.push('\n');
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_with_lines_puts_each_on_a_data_line() {
        assert_eq!(sse("x", "a\nb"), "event: x\ndata: a\ndata: b\n\n");
    }

    #[test]
    fn the_page_names_only_the_four_answers_it_offers() {
        for name in ["allow_once", "allow_always", "reject_once", "reject_always"] {
            assert_eq!(parse_outcome(name).map(outcome_name), Some(name));
        }
        assert_eq!(parse_outcome("cancelled"), None);
        assert_eq!(parse_outcome(""), None);
    }
}

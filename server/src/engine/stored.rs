//! Tasks as the store has them, for listing and showing tasks that are not running: from a
//! task's snapshot when it has a readable one, else from its log.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::log::LogEvent;
use super::{HistoryItem, TaskSnapshot, TaskState};

/// A stored task's summary from its snapshot (or, without one, from its log's first record).
pub fn snapshot(dir: &Path) -> Option<TaskSnapshot> {
    let from_snapshot = crate::store::read_snapshot(dir).and_then(|v| {
        let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let mut state = TaskState::parse(&text("state")?)?;
        if !state.is_finished() {
            state = TaskState::Interrupted;
        }
        Some(TaskSnapshot {
            task_id: text("taskId")?,
            description: text("description").unwrap_or_default(),
            workflow: text("workflow"),
            workflow_name: None,
            state,
            breadcrumb: Vec::new(),
            breadcrumb_text: text("breadcrumbText").unwrap_or_default(),
            status_text: String::new(),
            started_at: v.get("startedAt").and_then(Value::as_i64).unwrap_or(0),
            updated_at: v.get("updatedAt").and_then(Value::as_i64).unwrap_or(0),
            history: Vec::new(),
            workspace: PathBuf::from(text("workspace").unwrap_or_default()),
            machine_state: text("machineState").unwrap_or_default(),
            agent: None,
        })
    });
    from_snapshot.or_else(|| detail(dir))
}

/// A stored task in full, its history read from its log.
pub fn detail(dir: &Path) -> Option<TaskSnapshot> {
    let contents = crate::store::read_log(&dir.join("events.jsonl")).ok()?;
    let mut snap: Option<TaskSnapshot> = None;
    let mut finished: Option<TaskState> = None;
    let mut history = Vec::new();
    for record in &contents.records {
        let event: LogEvent = serde_json::from_value(record.event.clone()).ok()?;
        let kind = record
            .event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("event")
            .to_owned();
        let mut item = HistoryItem {
            at: record.at,
            event: kind,
            state_before: None,
            state_after: None,
            guard: None,
            detail: None,
        };
        match event {
            LogEvent::Started {
                task_id,
                description,
                workflow,
                workspace,
                started_at,
                ..
            } => {
                snap = Some(TaskSnapshot {
                    task_id,
                    description,
                    workflow,
                    workflow_name: None,
                    state: TaskState::Interrupted,
                    breadcrumb: Vec::new(),
                    breadcrumb_text: String::new(),
                    status_text: String::new(),
                    started_at,
                    updated_at: started_at,
                    history: Vec::new(),
                    workspace,
                    machine_state: "idle".to_owned(),
                    agent: None,
                });
            }
            LogEvent::Machine {
                event,
                from,
                to,
                guard,
            } => {
                item.event = format!("machine:{}", event.name());
                item.detail = super::log::event_detail(&event);
                item.state_before = Some(from);
                item.state_after = Some(to.clone());
                item.guard = guard;
                if let Some(s) = &mut snap {
                    s.machine_state = to;
                }
            }
            LogEvent::Finished { outcome, summary } => {
                finished = TaskState::parse(&outcome);
                item.detail = Some(summary);
            }
            LogEvent::Reopened { reason } => {
                finished = None;
                item.detail = Some(reason);
            }
            LogEvent::ToolStarted { name, .. } => item.detail = Some(name),
            LogEvent::Approval { tool, answer, .. } => {
                item.detail = Some(format!("{tool}: {answer}"))
            }
            _ => {}
        }
        if let Some(s) = &mut snap {
            s.updated_at = record.at;
        }
        history.push(item);
    }
    let mut snap = snap?;
    snap.state = finished.unwrap_or(TaskState::Interrupted);
    snap.history = history;
    if let Some(v) = crate::store::read_snapshot(dir) {
        snap.breadcrumb_text = v
            .get("breadcrumbText")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
    }
    Some(snap)
}

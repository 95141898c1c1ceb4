//! `rawko tasks list | show`: the tasks in the task store, from a terminal.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io;
use std::path::PathBuf;

use serde_json::{json, Value};

use super::{Context, ExitCode, EXIT_OK, EXIT_PROBLEMS};
use crate::engine::stored::{self, Stored};
use crate::engine::TaskSnapshot;
use crate::store;
use crate::workflow::texts::iso_timestamp;
use crate::workflow::{default_roots, load, WorkflowSet};

/// The workflows of each workspace, loaded the first time a task of it is shown from its log
/// (its snapshot lags the log) and must be placed in its workflow.
#[derive(Default)]
struct Workflows(HashMap<PathBuf, WorkflowSet>);

impl Workflows {
    fn place(&mut self, stored: Stored, env: &dyn Fn(&str) -> Option<OsString>) -> TaskSnapshot {
        if !stored.needs_placing() {
            return stored.task;
        }
        let workspace = stored.task.workspace.clone();
        let set = self
            .0
            .entry(workspace)
            .or_insert_with_key(|ws| load(&default_roots(ws, env)).workflows);
        stored.placed(set)
    }
}

fn summary_json(s: &TaskSnapshot) -> Value {
    json!({
        "taskId": s.task_id,
        "description": s.description,
        "workflow": s.workflow,
        "state": s.state.as_str(),
        "machineState": s.machine_state,
        "breadcrumbText": s.breadcrumb_text,
        "workspace": s.workspace,
        "startedAt": s.started_at,
        "updatedAt": s.updated_at,
        "subagent": s.subagent.as_deref().map(|of| json!({
            "parentTaskId": of.parent,
            "toolCallId": of.call_id,
            "index": of.index,
            "profile": of.profile,
            "name": of.name,
            "label": of.label(),
        })),
    })
}

/// Newest first, each task's subagents right after it (in the order they started); a subagent
/// whose parent is not listed stands on its own.
fn parents_first(mut tasks: Vec<TaskSnapshot>) -> Vec<TaskSnapshot> {
    tasks.sort_by_key(|t| std::cmp::Reverse(t.started_at));
    let ids: std::collections::HashSet<String> = tasks.iter().map(|t| t.task_id.clone()).collect();
    let (mut children, top): (Vec<TaskSnapshot>, Vec<TaskSnapshot>) =
        tasks.into_iter().partition(|t| {
            t.subagent
                .as_ref()
                .is_some_and(|of| ids.contains(&of.parent))
        });
    children.sort_by_key(|t| t.started_at);
    let mut out = Vec::with_capacity(top.len() + children.len());
    for t in top {
        let id = t.task_id.clone();
        out.push(t);
        let (mine, rest): (Vec<_>, Vec<_>) = children
            .into_iter()
            .partition(|c| c.subagent.as_ref().is_some_and(|of| of.parent == id));
        out.extend(mine);
        children = rest;
    }
    out
}

/// `rawko tasks list`
pub fn list(ctx: &mut Context<'_>, all: bool) -> io::Result<ExitCode> {
    let Some(dir) = store::state_dir(ctx.env) else {
        writeln!(
            ctx.err,
            "error: no state directory: set XDG_STATE_HOME or HOME"
        )?;
        return Ok(EXIT_PROBLEMS);
    };
    store::recover::recover_before_reading(&dir);
    let mut workflows = Workflows::default();
    let tasks: Vec<TaskSnapshot> = store::task_dirs(&dir)
        .iter()
        .filter_map(|d| stored::summary(d))
        .filter(|s| all || s.task.workspace == ctx.workspace)
        .map(|s| workflows.place(s, ctx.env))
        .collect();
    let tasks = parents_first(tasks);
    if ctx.json {
        let list: Vec<Value> = tasks.iter().map(summary_json).collect();
        writeln!(ctx.out, "{}", json!({"tasks": list}))?;
        return Ok(EXIT_OK);
    }
    if tasks.is_empty() {
        let scope = if all {
            String::new()
        } else {
            format!(" for {}", ctx.workspace.display())
        };
        writeln!(ctx.out, "no tasks{scope} in {}", dir.display())?;
        return Ok(EXIT_OK);
    }
    for t in &tasks {
        let what = if let Some(of) = &t.subagent {
            let first = t.description.lines().next().unwrap_or_default();
            format!("  ↳ {} — {first}", of.label())
        } else if t.breadcrumb_text.is_empty() || t.breadcrumb_text == t.description {
            t.description.clone()
        } else {
            format!("{} — {}", t.breadcrumb_text, t.description)
        };
        writeln!(
            ctx.out,
            "{}  {:<11}  {}  {}",
            t.task_id,
            t.state.as_str(),
            iso_timestamp(t.started_at),
            what
        )?;
    }
    if tasks.iter().any(|t| t.state.as_str() == "interrupted") {
        writeln!(
            ctx.err,
            "interrupted tasks stopped before they finished; resume one from the editor (\"Rawko: Show Tasks\") or with rawko/resumeTask"
        )?;
    }
    Ok(EXIT_OK)
}

/// `rawko tasks show ID`
pub fn show(ctx: &mut Context<'_>, id: &str) -> io::Result<ExitCode> {
    let Some(dir) = store::state_dir(ctx.env) else {
        writeln!(
            ctx.err,
            "error: no state directory: set XDG_STATE_HOME or HOME"
        )?;
        return Ok(EXIT_PROBLEMS);
    };
    store::recover::recover_before_reading(&dir);
    let task_dir = store::TaskFiles::dir_of(&dir, id);
    if id.contains('/') || !task_dir.join("events.jsonl").is_file() {
        writeln!(
            ctx.err,
            "error: unknown task \"{id}\"; `rawko tasks list` shows the tasks"
        )?;
        return Ok(EXIT_PROBLEMS);
    }
    // The log is read in full here, so a damaged one is reported rather than half shown.
    if let Err(e) = store::read_log(&task_dir.join("events.jsonl")) {
        writeln!(ctx.err, "error: task \"{id}\" has a damaged log: {e}")?;
        return Ok(EXIT_PROBLEMS);
    }
    let Some(t) = stored::detail(&task_dir) else {
        writeln!(ctx.err, "error: task \"{id}\": its log has no start record")?;
        return Ok(EXIT_PROBLEMS);
    };
    let t = Workflows::default().place(t, ctx.env);
    let damaged: Vec<&str> = t
        .history
        .iter()
        .filter(|h| h.event == stored::DAMAGED)
        .filter_map(|h| h.detail.as_deref())
        .collect();
    if ctx.json {
        let mut v = summary_json(&t);
        v["damaged"] = json!(damaged);
        v["history"] = t
            .history
            .iter()
            .map(|h| {
                json!({
                    "at": h.at,
                    "event": h.event,
                    "stateBefore": h.state_before,
                    "stateAfter": h.state_after,
                    "guard": h.guard,
                    "detail": h.detail,
                })
            })
            .collect();
        writeln!(ctx.out, "{v}")?;
        return Ok(EXIT_OK);
    }
    writeln!(ctx.out, "task:      {}", t.task_id)?;
    writeln!(ctx.out, "about:     {}", t.description)?;
    if let Some(w) = &t.workflow {
        writeln!(ctx.out, "workflow:  {w}")?;
    }
    writeln!(
        ctx.out,
        "state:     {} (orchestrator: {})",
        t.state.as_str(),
        t.machine_state
    )?;
    if !t.breadcrumb_text.is_empty() {
        writeln!(ctx.out, "position:  {}", t.breadcrumb_text)?;
    }
    writeln!(ctx.out, "workspace: {}", t.workspace.display())?;
    writeln!(ctx.out, "started:   {}", iso_timestamp(t.started_at))?;
    if !damaged.is_empty() {
        writeln!(
            ctx.out,
            "damaged:   {} record(s) found damaged when its log was recovered after a crash:",
            damaged.len()
        )?;
        for note in &damaged {
            writeln!(ctx.out, "           {note}")?;
        }
    }
    writeln!(ctx.out)?;
    writeln!(ctx.out, "history ({} events):", t.history.len())?;
    for (i, h) in t.history.iter().enumerate() {
        let mut line = format!("{:>4}  {}  {}", i + 1, iso_timestamp(h.at), h.event);
        if let (Some(b), Some(a)) = (&h.state_before, &h.state_after) {
            line.push_str(&format!("  {b} → {a}"));
        }
        if let Some(g) = &h.guard {
            line.push_str(&format!("  [{g}]"));
        }
        if let Some(d) = &h.detail {
            let first = d.lines().next().unwrap_or_default();
            line.push_str(&format!("  {first}"));
        }
        writeln!(ctx.out, "{line}")?;
    }
    Ok(EXIT_OK)
}

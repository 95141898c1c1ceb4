//! `rawko rewind TASK --to PHASE` and `rawko tasks prune`: a task and its workspace taken back to
//! the start of a phase, and the finished tasks' folders and checkpoint refs removed, both
//! through the task service.

use std::io;
use std::time::Duration;

use serde_json::json;

use super::run::task_error;
use super::{Context, ExitCode, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE};
use crate::engine::tasks::{Opening, Tasks};

/// The options of `rawko rewind`.
pub struct RewindOptions {
    pub task: String,
    pub to: String,
    pub dry_run: bool,
    pub force: bool,
}

fn runtime() -> io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// `rawko rewind TASK --to PHASE [--dry-run] [--force]`
pub fn rewind(ctx: &mut Context<'_>, options: RewindOptions) -> io::Result<ExitCode> {
    let tasks = Tasks::open(Opening::new(ctx.workspace.clone(), ctx.env)).tasks;
    let (out, err, json) = (&mut *ctx.out, &mut *ctx.err, ctx.json);
    runtime()?.block_on(async move {
        let index = match tasks.resolve_phase(&options.task, &options.to).await {
            Ok(i) => i,
            Err(e) => return task_error(err, &e),
        };
        let done = match tasks
            .rewind(&options.task, index, options.dry_run, options.force)
            .await
        {
            Ok(done) => done,
            Err(e) => return task_error(err, &e),
        };
        if json {
            let changes: Vec<_> = done
                .changes
                .iter()
                .map(|c| json!({"path": c.path, "action": c.action.as_str()}))
                .collect();
            writeln!(
                out,
                "{}",
                json!({"rewound": done.rewound, "phase": done.phase, "changes": changes,
                    "conflicts": done.conflicts, "text": done.text})
            )?;
        } else {
            for change in &done.changes {
                writeln!(out, "{} {}", change.action.as_str(), change.path)?;
            }
        }
        if !done.conflicts.is_empty() && !done.rewound && !options.force {
            if !json {
                writeln!(
                    err,
                    "error: not rewound: {} changed after the task's last checkpoint, not by the task: {} (look at them first; --force overwrites them)",
                    if done.conflicts.len() == 1 { "this file was" } else { "these files were" },
                    done.conflicts.join(", ")
                )?;
            }
            return Ok(EXIT_PROBLEMS);
        }
        if !json {
            writeln!(err, "{}", done.text)?;
            if done.rewound {
                writeln!(
                    err,
                    "the task is back in {}: `rawko run --resume {}` continues it",
                    done.phase, options.task
                )?;
            }
        }
        Ok(EXIT_OK)
    })
}

/// `rawko tasks prune [--older-than DAYS] [--all]`
pub fn prune(ctx: &mut Context<'_>, older_than: Option<u64>, all: bool) -> io::Result<ExitCode> {
    let Some(days) = older_than.map_or(Some(None), |d| d.checked_mul(86_400).map(Some)) else {
        writeln!(ctx.err, "error: --older-than is too large")?;
        return Ok(EXIT_USAGE);
    };
    let tasks = Tasks::open(Opening::new(ctx.workspace.clone(), ctx.env)).tasks;
    let (out, err, json) = (&mut *ctx.out, &mut *ctx.err, ctx.json);
    runtime()?.block_on(async move {
        let (removed, problems) = match tasks.prune(days.map(Duration::from_secs), all).await {
            Ok(found) => found,
            Err(e) => return task_error(err, &e),
        };
        if json {
            writeln!(out, "{}", json!({"removed": removed, "problems": problems}))?;
        } else {
            for id in &removed {
                writeln!(out, "removed {id}")?;
            }
            if removed.is_empty() {
                writeln!(err, "no finished tasks to remove")?;
            }
            for p in &problems {
                writeln!(err, "warning: {p}")?;
            }
        }
        Ok(if problems.is_empty() {
            EXIT_OK
        } else {
            EXIT_PROBLEMS
        })
    })
}

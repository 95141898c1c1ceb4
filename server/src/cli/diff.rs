//! `rawko diff TASK [--phase PHASE]`: what a task, or one phase of it, changed in the workspace,
//! from its checkpoints (docs/checkpoints.md), through the task service.

use std::io;

use serde_json::json;

use super::run::task_error;
use super::{Context, ExitCode, EXIT_OK, EXIT_PROBLEMS};
use crate::engine::tasks::{Opening, Tasks};

/// `rawko diff`
pub fn diff(ctx: &mut Context<'_>, id: &str, phase: Option<&str>) -> io::Result<ExitCode> {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            writeln!(ctx.err, "error: cannot start: {e}")?;
            return Ok(EXIT_PROBLEMS);
        }
    };
    let tasks = Tasks::open(Opening::new(ctx.workspace.clone(), ctx.env)).tasks;
    let answer = runtime.block_on(async {
        let index = match phase {
            Some(p) => Some(tasks.resolve_phase(id, p).await?),
            None => None,
        };
        tasks.phase_diff(id, index).await
    });
    let diff = match answer {
        Ok(d) => d,
        Err(e) => return task_error(ctx.err, &e),
    };
    if ctx.json {
        let files: Vec<_> = diff
            .files
            .iter()
            .map(|f| json!({"path": f.path, "status": f.status.as_str()}))
            .collect();
        let v = json!({"diff": diff.diff, "files": files, "from": diff.from, "to": diff.to});
        writeln!(ctx.out, "{v}")?;
        return Ok(EXIT_OK);
    }
    if diff.files.is_empty() {
        writeln!(ctx.err, "no changes")?;
        return Ok(EXIT_OK);
    }
    write!(ctx.out, "{}", diff.diff)?;
    Ok(EXIT_OK)
}

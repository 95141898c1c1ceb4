//! `rawko init`: writes a starter workflow that validates cleanly, so a new user has something to
//! run and to copy from.

use std::fs;
use std::io;
use std::path::Path;

use super::{Context, ExitCode, EXIT_OK, EXIT_PROBLEMS};
use crate::agents;
use crate::workflow::{default_roots, load, Severity};

/// The starter files, relative to `.rawko/workflows`.
pub const STARTER_WORKFLOWS: &[(&str, &str)] = &[
    (
        "feature/workflow.yaml",
        include_str!("../../starter/workflows/feature/workflow.yaml"),
    ),
    (
        "feature/plan.md",
        include_str!("../../starter/workflows/feature/plan.md"),
    ),
    (
        "feature/implement.md",
        include_str!("../../starter/workflows/feature/implement.md"),
    ),
    (
        "feature/test.md",
        include_str!("../../starter/workflows/feature/test.md"),
    ),
    (
        "review/workflow.yaml",
        include_str!("../../starter/workflows/review/workflow.yaml"),
    ),
    (
        "review/static-analysis.md",
        include_str!("../../starter/workflows/review/static-analysis.md"),
    ),
    (
        "review/peer-review.md",
        include_str!("../../starter/workflows/review/peer-review.md"),
    ),
];

/// The starter agents, relative to `.rawko/agents`: planner → developer → tester → reviewer.
pub const STARTER_AGENTS: &[(&str, &str)] = &[
    (
        "planner.md",
        include_str!("../../starter/agents/planner.md"),
    ),
    (
        "developer.md",
        include_str!("../../starter/agents/developer.md"),
    ),
    ("tester.md", include_str!("../../starter/agents/tester.md")),
    (
        "reviewer.md",
        include_str!("../../starter/agents/reviewer.md"),
    ),
];

pub fn init(ctx: &mut Context<'_>, force: bool) -> io::Result<ExitCode> {
    let root = ctx.workspace.join(".rawko").join("workflows");
    let agents_root = ctx.workspace.join(".rawko").join("agents");
    let mut written = Vec::new();
    let mut kept = Vec::new();
    for (rel, content) in STARTER_WORKFLOWS {
        let path = root.join(rel);
        if path.exists() && !force {
            kept.push(path);
            continue;
        }
        write_file(&path, content)?;
        written.push(path);
    }
    for (rel, content) in STARTER_AGENTS {
        let path = agents_root.join(rel);
        if path.exists() && !force {
            kept.push(path);
            continue;
        }
        write_file(&path, content)?;
        written.push(path);
    }
    for path in &written {
        writeln!(ctx.out, "wrote {}", ctx.display_path(path))?;
    }
    for path in &kept {
        writeln!(
            ctx.out,
            "kept  {} (exists; --force overwrites)",
            ctx.display_path(path)
        )?;
    }

    // Check what is there now, so a kept file that was edited into a broken state is said at once.
    let outcome = load(&default_roots(&ctx.workspace, ctx.env));
    let problems: Vec<_> = outcome
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error && d.path.starts_with(&root))
        .collect();
    if !problems.is_empty() {
        for d in problems {
            writeln!(ctx.err, "{}: {}", ctx.display_path(&d.path), d.message)?;
        }
        writeln!(
            ctx.err,
            "the workflows in {} have errors; run `rawko workflows validate`",
            ctx.display_path(&root)
        )?;
        return Ok(EXIT_PROBLEMS);
    }
    let outcome = agents::load(&agents::default_roots(&ctx.workspace, ctx.env));
    let problems: Vec<_> = outcome
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error && d.path.starts_with(&agents_root))
        .collect();
    if !problems.is_empty() {
        for d in problems {
            writeln!(ctx.err, "{}: {}", ctx.display_path(&d.path), d.message)?;
        }
        writeln!(
            ctx.err,
            "the agents in {} have errors; run `rawko agents validate`",
            ctx.display_path(&agents_root)
        )?;
        return Ok(EXIT_PROBLEMS);
    }
    writeln!(ctx.out)?;
    writeln!(
        ctx.out,
        "next: `rawko workflows show feature` previews every phase as the agent sees it"
    )?;
    Ok(EXIT_OK)
}

/// Writes through a temporary file and a rename, so an interrupted init leaves no half file.
fn write_file(path: &Path, content: &str) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("rawko-tmp");
    fs::write(&tmp, content)?;
    fs::rename(&tmp, path)
}

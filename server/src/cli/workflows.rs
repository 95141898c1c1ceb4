//! `rawko workflows list | validate | show`.

use std::io;

use serde_json::{json, Value};

use super::{Context, ExitCode, EXIT_OK, EXIT_PROBLEMS};
use crate::workflow::state::Movement;
use crate::workflow::{
    default_roots, load, Diagnostic, LoadOutcome, Severity, Show, ToolPolicy, WorkflowDefinition,
    WorkflowState,
};

fn load_workspace(ctx: &Context<'_>) -> LoadOutcome {
    load(&default_roots(&ctx.workspace, ctx.env))
}

fn source_label(ctx: &Context<'_>, def: &WorkflowDefinition) -> String {
    format!("{} ({})", def.root.kind.label(), ctx.display_path(&def.dir))
}

pub(crate) fn diagnostic_json(ctx: &Context<'_>, d: &Diagnostic) -> Value {
    let mut v = json!({
        "path": ctx.display_path(&d.path),
        "severity": d.severity.as_str(),
        "message": d.message,
    });
    if let Some(line) = d.line {
        v["line"] = json!(line);
    }
    if let Some(column) = d.column {
        v["column"] = json!(column);
    }
    if let Some(w) = &d.workflow {
        v["workflow"] = json!(w);
    }
    v
}

fn print_diagnostic(ctx: &mut Context<'_>, d: &Diagnostic, to_err: bool) -> io::Result<()> {
    let shown = Diagnostic {
        path: ctx.display_path(&d.path).into(),
        ..d.clone()
    };
    if to_err {
        writeln!(ctx.err, "{shown}")
    } else {
        writeln!(ctx.out, "{shown}")
    }
}

/// `rawko workflows list`
pub fn list(ctx: &mut Context<'_>) -> io::Result<ExitCode> {
    let outcome = load_workspace(ctx);
    let set = &outcome.workflows;
    if ctx.json {
        let workflows: Vec<Value> = set
            .iter()
            .map(|d| {
                json!({
                    "key": d.key,
                    "name": d.name,
                    "commandName": d.command_name,
                    "phaseCount": set.flatten(d).len(),
                    "show": d.show.as_str(),
                    "source": ctx.display_path(&d.dir),
                    "root": d.root.kind.label(),
                })
            })
            .collect();
        let diagnostics: Vec<Value> = outcome
            .diagnostics
            .iter()
            .map(|d| diagnostic_json(ctx, d))
            .collect();
        writeln!(
            ctx.out,
            "{}",
            json!({"workflows": workflows, "diagnostics": diagnostics})
        )?;
        return Ok(EXIT_OK);
    }

    if set.is_empty() {
        writeln!(
            ctx.out,
            "no workflows found; run `rawko init` to write a starter workflow into .rawko/workflows"
        )?;
    } else {
        let rows: Vec<[String; 5]> = set
            .iter()
            .map(|d| {
                let command = match d.show {
                    Show::User => d.command_name.clone(),
                    Show::Workflows => "(subworkflow)".to_owned(),
                };
                [
                    d.key.clone(),
                    d.name.clone(),
                    command,
                    set.flatten(d).len().to_string(),
                    source_label(ctx, d),
                ]
            })
            .collect();
        let header = ["KEY", "NAME", "COMMAND", "PHASES", "SOURCE"];
        for line in super::table(header, &rows) {
            writeln!(ctx.out, "{line}")?;
        }
    }
    let skipped = outcome.skipped.len();
    if skipped > 0 {
        writeln!(
            ctx.err,
            "{skipped} workflow{} skipped because of errors; run `rawko workflows validate` to see them",
            if skipped == 1 { " was" } else { "s were" }
        )?;
    }
    Ok(EXIT_OK)
}

/// `rawko workflows validate`
pub fn validate(ctx: &mut Context<'_>) -> io::Result<ExitCode> {
    let outcome = load_workspace(ctx);
    let errors = outcome
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count();
    let warnings = outcome.diagnostics.len() - errors;
    let code = if errors > 0 { EXIT_PROBLEMS } else { EXIT_OK };
    if ctx.json {
        let diagnostics: Vec<Value> = outcome
            .diagnostics
            .iter()
            .map(|d| diagnostic_json(ctx, d))
            .collect();
        let valid: Vec<&str> = outcome.workflows.keys().collect();
        let invalid: Vec<&str> = outcome.skipped.iter().map(|s| s.key.as_str()).collect();
        writeln!(
            ctx.out,
            "{}",
            json!({"valid": valid, "invalid": invalid, "diagnostics": diagnostics})
        )?;
        return Ok(code);
    }
    for d in &outcome.diagnostics {
        print_diagnostic(ctx, d, false)?;
    }
    let valid = outcome.workflows.len();
    let invalid = outcome.skipped.len();
    if valid + invalid == 0 && outcome.diagnostics.is_empty() {
        let roots: Vec<String> = default_roots(&ctx.workspace, ctx.env)
            .iter()
            .map(|r| ctx.display_path(&r.path))
            .collect();
        writeln!(
            ctx.out,
            "no workflows found in {}; run `rawko init` to write a starter workflow",
            roots.join(", ")
        )?;
        return Ok(code);
    }
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    writeln!(
        ctx.out,
        "{}: {valid} valid, {invalid} invalid; {}, {}",
        plural(valid + invalid, "workflow"),
        plural(errors, "error"),
        plural(warnings, "warning"),
    )?;
    Ok(code)
}

/// `rawko workflows show KEY`: walks the workflow from its first phase to DONE with `next`, and
/// prints each phase as the agent would meet it.
pub fn show(ctx: &mut Context<'_>, key: &str, task: Option<&str>) -> io::Result<ExitCode> {
    let outcome = load_workspace(ctx);
    let set = &outcome.workflows;
    let Some(def) = set.find(key) else {
        if let Some(skipped) = outcome.skipped.iter().find(|s| s.key == key) {
            writeln!(
                ctx.err,
                "error: workflow \"{key}\" ({}) has errors:",
                ctx.display_path(&skipped.dir)
            )?;
            let own: Vec<Diagnostic> = outcome
                .diagnostics
                .iter()
                .filter(|d| d.workflow.as_deref() == Some(key))
                .cloned()
                .collect();
            for d in &own {
                print_diagnostic(ctx, d, true)?;
            }
            return Ok(EXIT_PROBLEMS);
        }
        let known: Vec<&str> = set.keys().collect();
        let hint = if known.is_empty() {
            "no workflows were found; run `rawko init` to write a starter workflow".to_owned()
        } else {
            format!("available: {}", known.join(", "))
        };
        writeln!(ctx.err, "error: unknown workflow \"{key}\"; {hint}")?;
        return Ok(EXIT_PROBLEMS);
    };

    let task = task.unwrap_or("(the task description)");
    let mut state = match WorkflowState::begin(set, def, task, "preview", 0) {
        Ok(s) => s,
        Err(e) => {
            writeln!(ctx.err, "error: {e}")?;
            return Ok(EXIT_PROBLEMS);
        }
    };
    let total = set.flatten(def).len();
    let mut phases = Vec::with_capacity(total);
    // One step per concrete phase; the bound keeps a broken set from looping.
    for _ in 0..=total {
        let Some(active) = state.resolve(set) else {
            break;
        };
        let phase = active.current_phase;
        let (policy_kind, policy_tools) = match &phase.tools {
            None => ("all", Vec::new()),
            Some(ToolPolicy::Whitelist(l)) => ("whitelist", l.clone()),
            Some(ToolPolicy::Blacklist(l)) => ("blacklist", l.clone()),
        };
        phases.push(json!({
            "id": phase.id,
            "name": phase.name,
            "emoji": phase.emoji,
            "breadcrumb": active.breadcrumb_text(),
            "tools": {"policy": policy_kind, "list": policy_tools},
            "agent": phase.agent,
            "file": ctx.display_path(&phase.file),
            "prompt": active.context_prompt(set),
        }));
        drop(active);
        match state.advance(set) {
            Ok(a) if a.movement == Movement::Done => break,
            Ok(a) => state = a.state,
            Err(e) => {
                writeln!(ctx.err, "error: {e}")?;
                return Ok(EXIT_PROBLEMS);
            }
        }
    }

    if ctx.json {
        let doc = json!({
            "key": def.key,
            "name": def.name,
            "commandName": def.command_name,
            "show": def.show.as_str(),
            "loopable": def.loopable,
            "source": ctx.display_path(&def.dir),
            "phases": phases,
        });
        writeln!(ctx.out, "{doc}")?;
        return Ok(EXIT_OK);
    }

    let command = match def.show {
        Show::User => format!("command: {}", def.command_name),
        Show::Workflows => "subworkflow only (show: workflows)".to_owned(),
    };
    writeln!(
        ctx.out,
        "{} ({}) from {}",
        def.name,
        def.key,
        source_label(ctx, def)
    )?;
    writeln!(
        ctx.out,
        "{command}; {} phase{}; looping {}",
        phases.len(),
        if phases.len() == 1 { "" } else { "s" },
        if def.loopable { "allowed" } else { "disabled" }
    )?;
    for (i, p) in phases.iter().enumerate() {
        let s = |k: &str| p[k].as_str().unwrap_or_default().to_owned();
        let list: Vec<&str> = p["tools"]["list"]
            .as_array()
            .map(|l| l.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let tools = match p["tools"]["policy"].as_str() {
            Some("whitelist") if list.is_empty() => "only workflow_step".to_owned(),
            Some("whitelist") => format!("only {} (and workflow_step)", list.join(", ")),
            Some("blacklist") => format!("all except {}", list.join(", ")),
            _ => "all".to_owned(),
        };
        writeln!(ctx.out)?;
        writeln!(
            ctx.out,
            "━━━ {}/{}  {}",
            i + 1,
            phases.len(),
            s("breadcrumb")
        )?;
        writeln!(ctx.out, "file:  {}", s("file"))?;
        writeln!(ctx.out, "tools: {tools}")?;
        if let Some(agent) = p["agent"].as_str() {
            writeln!(ctx.out, "agent: {agent}")?;
        }
        writeln!(ctx.out, "prompt:")?;
        for line in s("prompt").lines() {
            writeln!(ctx.out, "  │ {line}")?;
        }
    }
    Ok(EXIT_OK)
}

//! `rawko agents list | validate`: the agents found in `~/.config/rawko/agents` and
//! `<workspace>/.rawko/agents`, and every problem with their files.

use std::io;

use serde_json::{json, Value};

use super::workflows::diagnostic_json;
use super::{Context, ExitCode, EXIT_OK, EXIT_PROBLEMS};
use crate::agents::{default_roots, load, AgentDefinition, AgentLoadOutcome, Diagnostic, Severity};

fn load_workspace(ctx: &Context<'_>) -> AgentLoadOutcome {
    load(&default_roots(&ctx.workspace, ctx.env))
}

/// The tools an agent may use, in a few words: `all`, `all except Write`, `Read, Grep, Bash
/// (filtered)`.
fn tools_summary(agent: &AgentDefinition) -> String {
    let tools = &agent.tools;
    let filtered = tools.bash_filter.is_some();
    let blocked = |t: &str| tools.blocked.iter().any(|b| b.eq_ignore_ascii_case(t));
    match &tools.allowed {
        Some(allowed) => {
            let shown: Vec<String> = allowed
                .iter()
                .filter(|t| !blocked(t))
                .map(|t| {
                    if filtered && t.eq_ignore_ascii_case("Bash") {
                        format!("{t} (filtered)")
                    } else {
                        t.clone()
                    }
                })
                .collect();
            if shown.is_empty() {
                "none".to_owned()
            } else {
                shown.join(", ")
            }
        }
        None => {
            let mut text = "all".to_owned();
            if !tools.blocked.is_empty() {
                text.push_str(" except ");
                text.push_str(&tools.blocked.join(", "));
            }
            if filtered && !blocked("Bash") {
                text.push_str("; Bash filtered");
            }
            text
        }
    }
}

fn agent_json(ctx: &Context<'_>, a: &AgentDefinition) -> Value {
    let tools = &a.tools;
    json!({
        "name": a.name,
        "displayName": a.display_name,
        "whenToUse": a.when_to_use,
        "tools": {
            "allowed": tools.allowed,
            "blocked": tools.blocked,
            "bashFilter": tools.bash_filter.as_ref().map(|f| json!({
                "allowedCommands": f.allowed_commands,
                "blockedPatterns": f.pattern_sources().collect::<Vec<_>>(),
            })),
            "summary": tools_summary(a),
        },
        "transitions": {
            "onSuccess": a.transitions.on_success,
            // The effective target: the agent itself when the file gives none.
            "onFailure": a.failure_target(),
            "onMaxIterations": a.transitions.on_max_iterations,
        },
        "limits": {
            "maxIterations": a.limits.max_iterations,
            "timeout": a.limits.timeout_ms,
            "maxTokens": a.limits.max_tokens,
        },
        "provider": a.provider.as_ref().map(|p| json!({
            "name": p.name,
            "model": p.model,
            "maxTokens": p.max_tokens,
        })),
        "source": ctx.display_path(&a.file),
    })
}

fn print_diagnostic(ctx: &mut Context<'_>, d: &Diagnostic) -> io::Result<()> {
    let shown = Diagnostic {
        path: ctx.display_path(&d.path).into(),
        ..d.clone()
    };
    writeln!(ctx.out, "{shown}")
}

/// `rawko agents list`
pub fn list(ctx: &mut Context<'_>) -> io::Result<ExitCode> {
    let outcome = load_workspace(ctx);
    if ctx.json {
        let agents: Vec<Value> = outcome.agents.iter().map(|a| agent_json(ctx, a)).collect();
        let diagnostics: Vec<Value> = outcome
            .diagnostics
            .iter()
            .map(|d| diagnostic_json(ctx, d))
            .collect();
        writeln!(
            ctx.out,
            "{}",
            json!({"agents": agents, "diagnostics": diagnostics})
        )?;
        return Ok(EXIT_OK);
    }

    if outcome.agents.is_empty() {
        writeln!(
            ctx.out,
            "no agents found; run `rawko init` to write the starter agents into .rawko/agents"
        )?;
    } else {
        let rows: Vec<[String; 5]> = outcome
            .agents
            .iter()
            .map(|a| {
                [
                    a.name.clone(),
                    a.display_name.clone().unwrap_or_else(|| "-".to_owned()),
                    tools_summary(a),
                    a.transitions.on_success.clone(),
                    ctx.display_path(&a.file),
                ]
            })
            .collect();
        let header = ["NAME", "DISPLAY NAME", "TOOLS", "ON SUCCESS", "SOURCE"];
        for line in super::table(header, &rows) {
            writeln!(ctx.out, "{line}")?;
        }
    }
    let skipped = outcome.skipped.len();
    if skipped > 0 {
        writeln!(
            ctx.err,
            "{skipped} agent file{} left out because of errors; run `rawko agents validate` to see them",
            if skipped == 1 { " was" } else { "s were" }
        )?;
    }
    Ok(EXIT_OK)
}

/// `rawko agents validate`
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
        let valid: Vec<&str> = outcome.agents.names().collect();
        let invalid: Vec<Value> = outcome
            .skipped
            .iter()
            .map(|s| json!({"name": s.name, "source": ctx.display_path(&s.file)}))
            .collect();
        writeln!(
            ctx.out,
            "{}",
            json!({"valid": valid, "invalid": invalid, "diagnostics": diagnostics})
        )?;
        return Ok(code);
    }
    for d in &outcome.diagnostics {
        print_diagnostic(ctx, d)?;
    }
    let valid = outcome.agents.len();
    let invalid = outcome.skipped.len();
    if valid + invalid == 0 && outcome.diagnostics.is_empty() {
        let roots: Vec<String> = default_roots(&ctx.workspace, ctx.env)
            .iter()
            .map(|r| ctx.display_path(r))
            .collect();
        writeln!(
            ctx.out,
            "no agents found in {}; run `rawko init` to write the starter agents",
            roots.join(", ")
        )?;
        return Ok(code);
    }
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    writeln!(
        ctx.out,
        "{}: {valid} valid, {invalid} invalid; {}, {}",
        plural(valid + invalid, "agent"),
        plural(errors, "error"),
        plural(warnings, "warning"),
    )?;
    Ok(code)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::agents::parse_str;

    fn agent(tools: &str) -> AgentDefinition {
        let yaml =
            format!("name: a\nsystemPrompt: x\ntransitions: {{onSuccess: complete}}\n{tools}");
        parse_str(Path::new("a.yaml"), &yaml)
            .agent
            .expect("valid agent")
    }

    #[test]
    fn tools_summaries() {
        assert_eq!(tools_summary(&agent("")), "all");
        assert_eq!(
            tools_summary(&agent("tools: {blocked: [Write, Edit]}")),
            "all except Write, Edit"
        );
        assert_eq!(
            tools_summary(&agent("tools: {bashFilter: {allowedCommands: [ls]}}")),
            "all; Bash filtered"
        );
        assert_eq!(
            tools_summary(&agent(
                "tools: {allowed: [Read, Bash, Write], blocked: [write], bashFilter: {blockedPatterns: [x]}}"
            )),
            "Read, Bash (filtered)"
        );
        assert_eq!(tools_summary(&agent("tools: {allowed: []}")), "none");
    }

    #[test]
    fn table_pads_all_but_the_last_column() {
        let rows = [["a".to_owned(), "long cell".to_owned(), "z".to_owned()]];
        assert_eq!(
            super::super::table(["NAME", "X", "LAST"], &rows),
            ["NAME  X          LAST", "a     long cell  z"]
        );
    }
}

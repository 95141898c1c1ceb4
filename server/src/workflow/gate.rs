//! The phase gate: may this tool call run in the current phase? A phase's whitelist or blacklist
//! decides; `workflow_step` always runs, so an agent can always move on; tool names compare
//! case-insensitively (`bash` is `Bash`).
//!
//! Rules may carry a pattern (see [`ToolRule`]): `Bash(git commit*)` is matched against each
//! simple command of the call's `command`, `Edit(docs/**)` against its `path`/`file_path`. And
//! the gate sees through the shell: a phase that does not let `Write` and `Edit` run everywhere
//! also blocks Bash commands that write files ([`shell::classify`]), unless a `Bash(...)` rule
//! of its whitelist names that command.

use std::borrow::Cow;
use std::path::Path;

use serde_json::Value;

use super::definition::{ToolPolicy, ToolRule, WorkflowSet, SHELL_TOOL};
use super::shell::{self, SimpleCommand};
use super::state::WorkflowState;
use super::texts::{default_block_reason, resolve_template};
use super::tools::{Call, ToolClass};
use crate::clip::{clip, clip_path};

/// The gate's answer for one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateDecision {
    Allow,
    /// Blocked; `reason` is what the agent sees as the tool result when nobody overrides it,
    /// `detail` what the user is shown: `Write is blocked in the Plan phase (allowed: Read,
    /// Grep)`, or the gate's own sentence for a call blocked by its input.
    Block {
        reason: String,
        phase: String,
        detail: String,
    },
}

impl GateDecision {
    pub fn is_allowed(&self) -> bool {
        matches!(self, GateDecision::Allow)
    }
}

/// Decides whether the call of `tool` with `input` may run in the state's current phase. With no
/// active workflow, or a state that no longer matches the definitions, nothing is restricted
/// (pi-workflows' rule); neither is a phase without a tool list.
pub fn check(
    state: Option<&WorkflowState>,
    set: &WorkflowSet,
    tool: &str,
    input: &Value,
) -> GateDecision {
    // The allowed path looks the tool up once, finds the phase (not the root workflow, which
    // only a block's reason names) and allocates nothing.
    let call = Call::new(tool);
    if call.class() == ToolClass::Workflow {
        return GateDecision::Allow;
    }
    let Some(state) = state else {
        return GateDecision::Allow;
    };
    let Some(phase) = state.phase(set) else {
        return GateDecision::Allow;
    };
    let Some(policy) = &phase.tools else {
        return GateDecision::Allow;
    };
    let Some(denial) = decide(policy, &call, input, &phase.name) else {
        return GateDecision::Allow;
    };
    let Some(root) = state.root(set) else {
        return GateDecision::Allow;
    };
    let template = root.block_reason_template.as_deref();
    // Only a workflow's own template can name the allowed tools (the default does not): the
    // list is written out only then.
    let allowed = if template.is_some_and(|t| t.contains("{allowedTools}")) {
        match policy {
            ToolPolicy::Whitelist(list) if list.is_empty() => "(none but workflow_step)".to_owned(),
            other => other.describe(),
        }
    } else {
        String::new()
    };
    let detail = match &denial {
        Denial::Tool => tool_detail(policy, tool, &phase.name),
        Denial::Why { sentence, .. } => sentence.clone(),
    };
    let reason = match denial {
        Denial::Tool => {
            let tool = clip(tool);
            let vars = [
                ("workflowName", root.name.as_str()),
                ("phaseName", &phase.name),
                ("toolName", &tool),
                ("allowedTools", &allowed),
            ];
            match template {
                None => default_block_reason(&tool, &phase.name),
                Some(template) => resolve_template(template, &vars),
            }
        }
        Denial::Why {
            tool_name,
            sentence,
        } => match template {
            None => format!("[workflow] {sentence}"),
            Some(template) => {
                let tool = clip(&tool_name);
                let vars = [
                    ("workflowName", root.name.as_str()),
                    ("phaseName", &phase.name),
                    ("toolName", &tool),
                    ("allowedTools", &allowed),
                ];
                format!("{}\n{sentence}", resolve_template(template, &vars))
            }
        },
    };
    GateDecision::Block {
        reason,
        phase: phase.name.clone(),
        detail,
    }
}

/// What the user is told about a tool the phase does not allow: `Write is blocked in the Plan
/// phase (allowed: Read, Glob, Grep)`, or `(blacklist: Write, Edit)`.
fn tool_detail(policy: &ToolPolicy, tool: &str, phase: &str) -> String {
    let (label, rules) = match policy {
        ToolPolicy::Whitelist(rules) if rules.is_empty() => ("allowed: only workflow_step", rules),
        ToolPolicy::Whitelist(rules) => ("allowed: ", rules),
        ToolPolicy::Blacklist(rules) => ("blacklist: ", rules),
    };
    let tool = clip(tool);
    // One allocation, sized up front: this runs for every blocked call.
    let list_len: usize = rules.iter().map(|r| r.source().len() + 2).sum();
    let mut out = String::with_capacity(tool.len() + phase.len() + list_len + 64);
    out.push_str(&tool);
    out.push_str(" is blocked in the ");
    out.push_str(phase);
    out.push_str(" phase (");
    out.push_str(label);
    for (i, rule) in rules.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(rule.source());
    }
    out.push(')');
    out
}

/// Whether the state's current phase lets the workspace be written: with no phase that restricts
/// tools, and in a phase that allows writing ([`ToolPolicy::allows_writing`]). What the kernel
/// sandbox gives an ACP agent's own process.
pub fn workspace_writable(state: Option<&WorkflowState>, set: &WorkflowSet) -> bool {
    let Some((_, phase)) = state.and_then(|s| s.current_phase(set)) else {
        return true;
    };
    phase.tools.as_ref().is_none_or(ToolPolicy::allows_writing)
}

/// Whether a Bash call may write to the workspace in the state's current phase, which the kernel
/// sandbox then enforces: yes with no phase that restricts tools and in a phase that allows
/// writing ([`ToolPolicy::allows_writing`]); in any other phase only a command that writes and
/// whose every part a `Bash(…)` rule of the phase's whitelist names (the phase allows that
/// writer on purpose, and nothing rides along with it). A call the user approved is not asked
/// about.
pub fn bash_may_write(state: Option<&WorkflowState>, set: &WorkflowSet, input: &Value) -> bool {
    if workspace_writable(state, set) {
        return true;
    }
    let Some(ToolPolicy::Whitelist(rules)) = state
        .and_then(|s| s.current_phase(set))
        .and_then(|(_, phase)| phase.tools.as_ref())
    else {
        return false;
    };
    let commands = shell::commands(command_of(input));
    commands.iter().any(|c| c.effect.writes()) && commands.iter().all(|c| covered(rules, &c.text))
}

/// Why a call is blocked.
enum Denial<'a> {
    /// The tool itself is not allowed: the usual reason.
    Tool,
    /// This use of the tool is not allowed; `sentence` says why.
    Why {
        tool_name: Cow<'a, str>,
        sentence: String,
    },
}

fn decide<'a>(
    policy: &ToolPolicy,
    call: &Call<'a>,
    input: &Value,
    phase: &str,
) -> Option<Denial<'a>> {
    let tool = call.name;
    let bash = tool.eq_ignore_ascii_case(SHELL_TOOL);
    let why = |sentence: String| {
        Some(Denial::Why {
            tool_name: if bash {
                Cow::Borrowed(SHELL_TOOL)
            } else {
                Cow::Borrowed(tool)
            },
            sentence,
        })
    };
    match policy {
        ToolPolicy::Whitelist(rules) => {
            let mut plain = false;
            let mut patterned = false;
            for rule in rules.iter().filter(|r| r.covers(call)) {
                if rule.is_plain() {
                    if !bash {
                        // The tool itself is allowed, whatever its input.
                        return None;
                    }
                    plain = true;
                } else {
                    patterned = true;
                }
            }
            if !plain && !patterned {
                return Some(Denial::Tool);
            }
            if bash {
                let command = command_of(input);
                if !plain {
                    // Only `Bash(...)` rules: every part of the command must match one.
                    let commands = shell::commands(command);
                    let outside = commands.iter().find(|c| !covered(rules, &c.text))?;
                    return why(not_listed(command, outside, &commands, phase, rules));
                }
                if policy.allows_writing() {
                    return None;
                }
                let commands = shell::commands(command);
                let writer = commands
                    .iter()
                    .find(|c| c.effect.writes() && !covered(rules, &c.text))?;
                return why(writes_files(command, writer, phase));
            }
            if plain {
                return None;
            }
            let own: Vec<&ToolRule> = rules.iter().filter(|r| r.covers(call)).collect();
            let list = join_rules(&own);
            match place(input) {
                Placed::Relative(path) if own.iter().any(|r| r.matches_path(&path)) => None,
                Placed::Missing => why(format!(
                    "{tool} without a path is blocked during the {phase} phase, which allows {tool} only as {list}.",
                    tool = clip(tool)
                )),
                Placed::Relative(_) | Placed::Elsewhere(_) => why(format!(
                    "{tool} of \"{}\" is blocked during the {phase} phase, which allows {tool} only as {list}.",
                    clip_path(Path::new(path_of(input).unwrap_or_default())),
                    tool = clip(tool)
                )),
            }
        }
        ToolPolicy::Blacklist(rules) => {
            let mut own = rules.iter().filter(|r| r.covers(call)).peekable();
            if own.clone().any(ToolRule::is_plain) {
                return Some(Denial::Tool);
            }
            let blocks_writes = bash && !policy.allows_writing();
            if own.peek().is_none() && !blocks_writes {
                return None;
            }
            if bash {
                let command = command_of(input);
                let commands = shell::commands(command);
                let hit = own.find(|r| {
                    r.matches_command(command)
                        || commands.iter().any(|c| r.matches_command(&c.text))
                });
                if let Some(rule) = hit {
                    return why(format!(
                        "\"{}\" matches {rule}, which the {phase} phase blocks.",
                        shorten(command)
                    ));
                }
                if !blocks_writes {
                    return None;
                }
                let writer = commands.iter().find(|c| c.effect.writes())?;
                return why(writes_files(command, writer, phase));
            }
            let hit = match place(input) {
                Placed::Relative(path) => own.find(|r| r.matches_path(&path)),
                // An absolute path: blocked when any tail of it matches, since where the
                // workspace begins is not known here.
                Placed::Elsewhere(parts) => {
                    own.find(|r| (0..parts.len()).any(|i| r.matches_path(&parts[i..].join("/"))))
                }
                Placed::Missing => None,
            }?;
            why(format!(
                "{tool} of \"{}\" matches {hit}, which the {phase} phase blocks.",
                clip_path(Path::new(path_of(input).unwrap_or_default())),
                tool = clip(tool)
            ))
        }
    }
}

/// `true` when a `Bash(...)` rule of the list matches `command`.
fn covered(rules: &[ToolRule], command: &str) -> bool {
    let bash = Call::new(SHELL_TOOL);
    rules
        .iter()
        .any(|r| !r.is_plain() && r.covers(&bash) && r.matches_command(command))
}

fn writes_files(command: &str, writer: &SimpleCommand, phase: &str) -> String {
    format!(
        "\"{}\" writes files ({}), and the {phase} phase does not allow writing.",
        shorten(command),
        writer.effect.why().unwrap_or("it writes")
    )
}

fn not_listed(
    command: &str,
    outside: &SimpleCommand,
    commands: &[SimpleCommand],
    phase: &str,
    rules: &[ToolRule],
) -> String {
    let own: Vec<&ToolRule> = rules.iter().filter(|r| r.is_for(SHELL_TOOL)).collect();
    let part = if commands.len() > 1 {
        format!(" (part of \"{}\")", shorten(command))
    } else {
        String::new()
    };
    format!(
        "\"{}\"{part} is not a command the {phase} phase allows; it allows Bash only as {}.",
        shorten(&outside.text),
        join_rules(&own)
    )
}

fn join_rules(rules: &[&ToolRule]) -> String {
    rules
        .iter()
        .map(|r| r.source())
        .collect::<Vec<_>>()
        .join(", ")
}

fn command_of(input: &Value) -> &str {
    input.get("command").and_then(Value::as_str).unwrap_or("")
}

fn path_of(input: &Value) -> Option<&str> {
    ["path", "file_path", "notebook_path"]
        .iter()
        .find_map(|k| input.get(k).and_then(Value::as_str))
}

/// Where a call's path is, as far as the gate can tell without knowing the workspace.
enum Placed {
    /// Inside the workspace, normalised: `docs/a.md`; `""` for the workspace itself.
    Relative(String),
    /// Absolute, or climbing out of the workspace: the normalised components.
    Elsewhere(Vec<String>),
    /// The input has no path.
    Missing,
}

fn place(input: &Value) -> Placed {
    let Some(path) = path_of(input) else {
        return Placed::Missing;
    };
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    let mut escapes = false;
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    escapes = true;
                }
            }
            _ => parts.push(part),
        }
    }
    if absolute || escapes {
        Placed::Elsewhere(parts.into_iter().map(str::to_owned).collect())
    } else {
        Placed::Relative(parts.join("/"))
    }
}

/// A command as quoted in a reason: its first line, at most 80 characters.
fn shorten(command: &str) -> String {
    const MAX: usize = 80;
    let command = command.trim();
    let first = command.lines().next().unwrap_or_default().trim_end();
    let more = first.len() < command.len();
    if first.chars().count() > MAX {
        let cut: String = first.chars().take(MAX - 1).collect();
        format!("{}…", cut.trim_end())
    } else if more {
        format!("{first} …")
    } else {
        first.to_owned()
    }
}

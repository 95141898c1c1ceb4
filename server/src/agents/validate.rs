//! Checks that need the whole set of agents: every transition leads somewhere, a success moves on,
//! and every tool an agent names is one rawko has (rawko-sdk's `validateAgentSet`). Circular
//! chains are fine: developer → tester → developer is the usual loop.

use std::collections::HashSet;
use std::fs;
use std::path::Path;

use super::parse::is_markdown;
use super::{AgentDefinition, AgentSet, Diagnostic, COMPLETE, EXTRA_TOOLS};
use crate::tools;
use crate::workflow::yaml::{item_line, key_path_line};

/// Every tool name an agent may use: the built-in tools and [`EXTRA_TOOLS`].
pub fn known_tools() -> Vec<&'static str> {
    tools::specs()
        .iter()
        .map(|s| s.name)
        .chain(EXTRA_TOOLS)
        .collect()
}

/// Whether `name` is a tool rawko knows (case-insensitive).
pub fn is_known_tool(name: &str) -> bool {
    tools::is_builtin(name) || EXTRA_TOOLS.iter().any(|t| t.eq_ignore_ascii_case(name))
}

/// The problems of `set` as a whole: a transition to an agent the set lacks (error), an agent whose
/// success leads back to itself (warning), a tool name rawko does not know (warning).
pub fn validate_set(set: &AgentSet) -> Vec<Diagnostic> {
    set.iter()
        .flat_map(|agent| validate_agent(set, agent, &HashSet::new()))
        .collect()
}

/// The set problems of one agent. `left_out` names agents whose files had errors, so a transition
/// to one of them says so instead of calling it unknown.
pub(super) fn validate_agent(
    set: &AgentSet,
    agent: &AgentDefinition,
    left_out: &HashSet<String>,
) -> Vec<Diagnostic> {
    let lines = FieldLines::read(&agent.file);
    let mut out = Vec::new();
    let t = &agent.transitions;
    let targets = [
        ("onSuccess", Some(&t.on_success)),
        ("onFailure", t.on_failure.as_ref()),
        ("onMaxIterations", t.on_max_iterations.as_ref()),
    ];
    for (key, target) in targets {
        let Some(target) = target else { continue };
        if target == COMPLETE || set.contains(target) {
            continue;
        }
        let line = lines.line(&["transitions", key]);
        let message = if left_out.contains(target) {
            format!("transitions.{key} names agent \"{target}\", which has errors and was left out")
        } else {
            let names: Vec<&str> = set.names().collect();
            format!(
                "transitions.{key} names no agent: there is no \"{target}\" (agents: {}; or \"{COMPLETE}\" to end the task)",
                names.join(", ")
            )
        };
        out.push(Diagnostic::error(&agent.file, message).at_line(line));
    }
    if t.on_success == agent.name {
        out.push(
            Diagnostic::warning(
                &agent.file,
                format!(
                    "transitions.onSuccess leads back to \"{}\" itself, so a success never moves on; name the next agent or \"{COMPLETE}\"",
                    agent.name
                ),
            )
            .at_line(lines.line(&["transitions", "onSuccess"])),
        );
    }

    let lists = [
        (
            "allowed",
            agent.tools.allowed.as_deref().unwrap_or_default(),
        ),
        ("blocked", agent.tools.blocked.as_slice()),
    ];
    for (key, list) in lists {
        for (i, tool) in list.iter().enumerate() {
            if is_known_tool(tool) {
                continue;
            }
            out.push(
                Diagnostic::warning(
                    &agent.file,
                    format!(
                        "tools.{key}[{i}]: \"{tool}\" is not a tool rawko knows, so it has no effect (tools: {})",
                        known_tools().join(", ")
                    ),
                )
                .at_line(lines.item(&["tools", key], i)),
            );
        }
    }
    out
}

/// The YAML text of an agent file, read again to place set problems at their lines.
struct FieldLines {
    yaml: Option<String>,
    /// File lines above the YAML text (the `---` of Markdown frontmatter).
    offset: usize,
}

impl FieldLines {
    fn read(path: &Path) -> Self {
        let text = fs::read_to_string(path).ok();
        let text = text.map(|t| t.strip_prefix('\u{feff}').map(str::to_owned).unwrap_or(t));
        match text {
            Some(t) if is_markdown(path) => {
                let front = t
                    .strip_prefix("---")
                    .map(|rest| rest.trim_start_matches('\r'))
                    .and_then(|rest| rest.strip_prefix('\n'))
                    .map(str::to_owned);
                FieldLines {
                    yaml: front,
                    offset: 1,
                }
            }
            yaml => FieldLines { yaml, offset: 0 },
        }
    }

    fn line(&self, keys: &[&str]) -> Option<usize> {
        let yaml = self.yaml.as_deref()?;
        key_path_line(yaml, keys).map(|l| l + self.offset)
    }

    fn item(&self, keys: &[&str], n: usize) -> Option<usize> {
        let yaml = self.yaml.as_deref()?;
        key_path_line(yaml, keys).map(|l| item_line(yaml, l, n) + self.offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::{parse_str, Severity};

    fn agent(yaml: &str) -> AgentDefinition {
        let parsed = parse_str(Path::new("/nowhere/a.yaml"), yaml);
        assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
        parsed.agent.expect("a valid agent")
    }

    fn named(name: &str, on_success: &str) -> AgentDefinition {
        agent(&format!(
            "name: {name}\nsystemPrompt: Work.\ntransitions:\n  onSuccess: {on_success}\n"
        ))
    }

    #[test]
    fn known_tools_include_the_built_ins_and_the_extras() {
        let known = known_tools();
        for t in [
            "Read",
            "Write",
            "Edit",
            "Glob",
            "Grep",
            "Bash",
            "WebFetch",
            "WebSearch",
            "workflow_step",
        ] {
            assert!(known.contains(&t), "{t} in {known:?}");
            assert!(is_known_tool(&t.to_lowercase()), "{t}");
        }
        assert!(!is_known_tool("Browser"));
    }

    #[test]
    fn a_chain_ending_in_complete_is_clean() {
        let set: AgentSet = [named("a", "b"), named("b", "complete")]
            .into_iter()
            .collect();
        assert_eq!(validate_set(&set), Vec::new());
    }

    #[test]
    fn a_missing_target_is_an_error_listing_the_agents() {
        let set: AgentSet = [named("a", "ghost"), named("b", "a")].into_iter().collect();
        let diags = validate_set(&set);
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert_eq!(diags[0].severity, Severity::Error);
        assert_eq!(
            diags[0].message,
            "transitions.onSuccess names no agent: there is no \"ghost\" (agents: a, b; or \"complete\" to end the task)"
        );
    }

    #[test]
    fn a_target_left_out_for_errors_says_so() {
        let set: AgentSet = [named("a", "broken")].into_iter().collect();
        let left_out = HashSet::from(["broken".to_owned()]);
        let diags = validate_agent(&set, set.get("a").expect("a"), &left_out);
        assert_eq!(
            diags[0].message,
            "transitions.onSuccess names agent \"broken\", which has errors and was left out"
        );
    }

    #[test]
    fn unknown_tools_warn_and_known_ones_do_not() {
        let a = agent(
            "name: a\nsystemPrompt: x\ntransitions: {onSuccess: complete}\ntools:\n  allowed: [read, WebFetch, Telepathy]\n  blocked: [workflow_step, Teleport]\n",
        );
        let set: AgentSet = [a].into_iter().collect();
        let diags = validate_set(&set);
        let messages: Vec<&str> = diags.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(diags.len(), 2, "{messages:?}");
        assert!(diags.iter().all(|d| d.severity == Severity::Warning));
        assert!(
            messages[0].starts_with("tools.allowed[2]: \"Telepathy\" is not a tool rawko knows")
        );
        assert!(messages[1].starts_with("tools.blocked[1]: \"Teleport\" is not a tool rawko knows"));
    }
}

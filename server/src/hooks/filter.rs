//! A hook's `if`: Claude Code's permission-rule filter on tool events. `"if": "Bash(git *)"` runs
//! the hook only for Bash calls one of whose commands matches `git *`; `"if": "Write(src/**)"`
//! only for writes under `src/`; `"if": "Read"` for every Read. The rule is read as a phase's
//! tool rules are (`workflow::definition::ToolRule`): tool names compare case-insensitively and
//! through their aliases, a Bash pattern is a `*` glob held against the whole command and each
//! simple command in it (`ls && git push` matches `Bash(git *)`, as Claude Code checks every
//! subcommand), and any other tool's pattern is a path glob over the call's
//! `path`/`file_path`/`notebook_path`, relative to the workspace.

use std::path::Path;

use serde_json::Value;

use crate::workflow::definition::{ToolRule, SHELL_TOOL};
use crate::workflow::shell;
use crate::workflow::tools::Call;

/// The events whose input is a tool call, the only ones an `if` can be held against.
pub fn tool_event(event: super::HookEvent) -> bool {
    use super::HookEvent as E;
    matches!(
        event,
        E::PreToolUse | E::PostToolUse | E::ApprovalRequested | E::ApprovalResolved
    )
}

/// A parsed `if`.
#[derive(Debug, Clone)]
pub struct IfRule(ToolRule);

impl PartialEq for IfRule {
    fn eq(&self, other: &Self) -> bool {
        self.text() == other.text()
    }
}

impl IfRule {
    /// Parses `Tool` or `Tool(pattern)`; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Self, String> {
        ToolRule::parse(text).map(Self).map_err(|e| e.to_string())
    }

    /// The rule as written.
    pub fn text(&self) -> &str {
        self.0.source()
    }

    /// Whether a call of `tool` with `input` matches. No tool (an event that is not about a
    /// call) matches nothing.
    pub fn matches(&self, tool: Option<&str>, input: Option<&Value>, workspace: &Path) -> bool {
        let Some(tool) = tool else { return false };
        if !self.0.covers(&Call::new(tool)) {
            return false;
        }
        if self.0.is_plain() {
            return true;
        }
        let input = input.unwrap_or(&Value::Null);
        if tool.eq_ignore_ascii_case(SHELL_TOOL) || self.0.tool().eq_ignore_ascii_case(SHELL_TOOL) {
            let command = input.get("command").and_then(Value::as_str).unwrap_or("");
            return self.0.matches_command(command)
                || shell::commands(command)
                    .iter()
                    .any(|c| self.0.matches_command(&c.text));
        }
        relative_path(input, workspace).is_some_and(|p| self.0.matches_path(&p))
    }
}

/// The call's path relative to the workspace, normalised (`src/a.rs`, `""` for the workspace
/// itself); `None` when the input has no path or the path is outside the workspace.
fn relative_path(input: &Value, workspace: &Path) -> Option<String> {
    let path = ["path", "file_path", "notebook_path"]
        .iter()
        .find_map(|k| input.get(k).and_then(Value::as_str))?;
    let path = Path::new(path);
    let rest = if path.is_absolute() {
        path.strip_prefix(workspace).ok()?
    } else {
        path
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in rest.iter() {
        match part.to_str()? {
            "" | "." | "/" => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn hit(rule: &str, tool: &str, input: Value) -> bool {
        IfRule::parse(rule)
            .unwrap()
            .matches(Some(tool), Some(&input), Path::new("/ws"))
    }

    #[test]
    fn bash_rules_match_the_command_or_any_part_of_it() {
        assert!(hit("Bash(git *)", "Bash", json!({"command": "git push"})));
        assert!(hit(
            "Bash(git *)",
            "Bash",
            json!({"command": "cd x && git commit -m y"})
        ));
        assert!(hit("bash(git *)", "Bash", json!({"command": "git status"})));
        assert!(!hit("Bash(git *)", "Bash", json!({"command": "ls -la"})));
        assert!(!hit("Bash(git *)", "Read", json!({"path": "git x"})));
        assert!(hit(
            "Bash(npm run test:*)",
            "Bash",
            json!({"command": "npm run test"})
        ));
        assert!(hit("Bash", "Bash", json!({"command": "anything"})));
    }

    #[test]
    fn path_rules_match_paths_in_the_workspace() {
        assert!(hit("Write(src/**)", "Write", json!({"path": "src/a/b.rs"})));
        assert!(hit(
            "Write(src/**)",
            "Write",
            json!({"file_path": "/ws/src/b.rs"})
        ));
        assert!(!hit("Write(src/**)", "Write", json!({"path": "docs/b.md"})));
        assert!(!hit(
            "Write(src/**)",
            "Write",
            json!({"path": "/elsewhere/src/b.rs"})
        ));
        assert!(!hit(
            "Write(src/**)",
            "Write",
            json!({"path": "../src/b.rs"})
        ));
        assert!(hit("Edit(*.ts)", "Edit", json!({"path": "web/app.ts"})));
        // Edit covers MultiEdit, as in a phase's rules.
        assert!(hit("Edit(*.ts)", "MultiEdit", json!({"file_path": "a.ts"})));
        assert!(hit("Read", "read", json!({})));
        assert!(!hit("Read", "Write", json!({"path": "a"})));
        assert!(!IfRule::parse("Read")
            .unwrap()
            .matches(None, None, Path::new("/ws")));
    }

    #[test]
    fn malformed_rules_say_why() {
        assert!(IfRule::parse("Bash(git *").is_err());
        assert!(IfRule::parse("").is_err());
        assert!(IfRule::parse("Bash()").is_err());
        assert!(IfRule::parse("(x)").is_err());
    }
}

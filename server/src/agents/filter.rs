//! Which tool calls an agent may make: rawko-sdk's tool resolution (`allowed`, then `blocked`) and
//! its Bash filter (an allow-list of first words and a deny-list of patterns).
//!
//! The patterns are compiled once, when the agent is loaded; a `Regex` keeps its source, so the
//! compiled form and what the user wrote can never drift apart.

use std::fmt;

use regex::Regex;

use super::AgentDefinition;

/// The tool that moves a task through its workflow; no agent policy can take it away.
const WORKFLOW_STEP: &str = "workflow_step";

/// The Bash filter of an agent: `allowedCommands` and `blockedPatterns`.
#[derive(Debug, Clone)]
pub struct BashFilter {
    /// When not empty, a command's first word must be one of these.
    pub allowed_commands: Vec<String>,
    /// A command any of these matches (anywhere in the command line) is refused. Each keeps its
    /// source: [`Regex::as_str`].
    pub blocked_patterns: Vec<Regex>,
}

/// A `blockedPatterns` entry that is not a valid regular expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidPattern {
    pub index: usize,
    pub pattern: String,
    pub reason: String,
}

impl fmt::Display for InvalidPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "blocked pattern `{}` is not a valid regular expression: {}",
            self.pattern, self.reason
        )
    }
}

/// Why the Bash filter refused a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BashRejection {
    /// The first word is not in `allowedCommands`.
    NotAllowed { command: String },
    /// A blocked pattern matched; holds its source.
    Blocked { pattern: String },
}

impl BashFilter {
    /// Compiles `blocked_patterns`; the first one that does not compile is the error.
    pub fn new(
        allowed_commands: Vec<String>,
        blocked_patterns: &[String],
    ) -> Result<Self, InvalidPattern> {
        let blocked_patterns = blocked_patterns
            .iter()
            .enumerate()
            .map(|(index, p)| compile(index, p))
            .collect::<Result<_, _>>()?;
        Ok(BashFilter {
            allowed_commands,
            blocked_patterns,
        })
    }

    /// The sources of the blocked patterns, as written.
    pub fn pattern_sources(&self) -> impl Iterator<Item = &str> {
        self.blocked_patterns.iter().map(Regex::as_str)
    }

    /// Checks one command line: its first word (after `NAME=value` assignments) against
    /// `allowed_commands` when that list is not empty, then every blocked pattern against the
    /// whole line.
    pub fn check(&self, command: &str) -> Result<(), BashRejection> {
        if !self.allowed_commands.is_empty() {
            let word = first_command_word(command);
            if !self.allowed_commands.contains(&word) {
                return Err(BashRejection::NotAllowed { command: word });
            }
        }
        match self.blocked_patterns.iter().find(|re| re.is_match(command)) {
            Some(re) => Err(BashRejection::Blocked {
                pattern: re.as_str().to_owned(),
            }),
            None => Ok(()),
        }
    }
}

impl PartialEq for BashFilter {
    fn eq(&self, other: &Self) -> bool {
        self.allowed_commands == other.allowed_commands
            && self.pattern_sources().eq(other.pattern_sources())
    }
}

/// Compiles entry `index` of `blockedPatterns`.
pub(super) fn compile(index: usize, pattern: &str) -> Result<Regex, InvalidPattern> {
    Regex::new(pattern).map_err(|e| InvalidPattern {
        index,
        pattern: pattern.to_owned(),
        reason: regex_reason(&e),
    })
}

/// The regex crate's message, on one line (its syntax errors draw a caret under the pattern).
fn regex_reason(e: &regex::Error) -> String {
    let text = e.to_string();
    match text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("error:"))
    {
        Some(line) => line.trim_start()["error:".len()..].trim().to_owned(),
        None => text.lines().map(str::trim).collect::<Vec<_>>().join(" "),
    }
}

/// The word a shell would run: the first word that is not a `NAME=value` assignment, with its
/// quotes and backslashes removed. Words split on whitespace only, so `ls;rm` stays one word (and
/// is not an allowed command).
fn first_command_word(command: &str) -> String {
    let mut rest = command;
    loop {
        let (raw, word, after) = next_word(rest);
        if raw.is_empty() || !is_assignment(raw) {
            return word;
        }
        rest = after;
    }
}

fn is_assignment(raw: &str) -> bool {
    match raw.split_once('=') {
        Some((name, _)) => {
            let mut chars = name.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// The next shell word of `text`: its raw text, its text with quoting removed, and what follows.
fn next_word(text: &str) -> (&str, String, &str) {
    let text = text.trim_start();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => return (&text[..i], word, &text[i..]),
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None | Some('"'), '\\') => {
                if let Some((_, escaped)) = chars.next() {
                    word.push(escaped);
                }
            }
            (_, c) => word.push(c),
        }
    }
    (text, word, "")
}

impl AgentDefinition {
    /// Whether the agent may call `tool` (case-insensitive, synonyms included): `workflow_step` always; otherwise not
    /// when it is blocked, and only when it is allowed if an allow-list is given.
    pub fn tool_allowed(&self, tool: &str) -> bool {
        if tool.eq_ignore_ascii_case(WORKFLOW_STEP) {
            return true;
        }
        // Synonyms and the tools a name stands for count, as at the phase gate (`Edit` covers
        // `MultiEdit`).
        let listed = |list: &[String]| {
            list.iter()
                .any(|t| crate::workflow::tools::rule_covers(t, tool))
        };
        if listed(&self.tools.blocked) {
            return false;
        }
        match &self.tools.allowed {
            Some(allowed) => listed(allowed),
            None => true,
        }
    }

    /// Checks a Bash command against the agent's Bash filter; the error is the text the model
    /// gets back.
    pub fn check_bash(&self, command: &str) -> Result<(), String> {
        let Some(filter) = &self.tools.bash_filter else {
            return Ok(());
        };
        filter.check(command).map_err(|rejection| match rejection {
            BashRejection::NotAllowed { command } => {
                format!("Command '{command}' is not allowed for agent {}", self.name)
            }
            BashRejection::Blocked { pattern } => format!("Command blocked by pattern: {pattern}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::{AgentLimits, AgentTools, AgentTransitions};

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    fn agent(tools: AgentTools) -> AgentDefinition {
        AgentDefinition {
            name: "planner".to_owned(),
            display_name: None,
            when_to_use: None,
            system_prompt: "Plan.".to_owned(),
            tools,
            transitions: AgentTransitions {
                on_success: "complete".to_owned(),
                on_failure: None,
                on_max_iterations: None,
            },
            limits: AgentLimits::default(),
            provider: None,
            file: "planner.md".into(),
        }
    }

    fn bash_agent(allowed: &[&str], blocked: &[&str]) -> AgentDefinition {
        let filter = BashFilter::new(strings(allowed), &strings(blocked)).expect("valid patterns");
        agent(AgentTools {
            bash_filter: Some(filter),
            ..AgentTools::default()
        })
    }

    #[test]
    fn no_policy_allows_every_tool() {
        let a = agent(AgentTools::default());
        for tool in ["Read", "Write", "Bash", "anything"] {
            assert!(a.tool_allowed(tool), "{tool}");
        }
    }

    #[test]
    fn allowed_list_restricts_case_insensitively() {
        let a = agent(AgentTools {
            allowed: Some(strings(&["Read", "grep"])),
            ..AgentTools::default()
        });
        assert!(a.tool_allowed("read"));
        assert!(a.tool_allowed("Grep"));
        assert!(!a.tool_allowed("Write"));
        assert!(!a.tool_allowed("Bash"));
    }

    #[test]
    fn an_empty_allowed_list_allows_only_workflow_step() {
        let a = agent(AgentTools {
            allowed: Some(Vec::new()),
            ..AgentTools::default()
        });
        assert!(!a.tool_allowed("Read"));
        assert!(a.tool_allowed("workflow_step"));
    }

    #[test]
    fn blocked_wins_over_allowed() {
        let a = agent(AgentTools {
            allowed: Some(strings(&["Read", "Write"])),
            blocked: strings(&["WRITE"]),
            bash_filter: None,
        });
        assert!(a.tool_allowed("Read"));
        assert!(!a.tool_allowed("Write"));
        let b = agent(AgentTools {
            blocked: strings(&["Bash"]),
            ..AgentTools::default()
        });
        assert!(!b.tool_allowed("bash"));
        assert!(b.tool_allowed("Edit"));
    }

    #[test]
    fn workflow_step_is_always_allowed() {
        let a = agent(AgentTools {
            allowed: Some(strings(&["Read"])),
            blocked: strings(&["workflow_step"]),
            bash_filter: None,
        });
        assert!(a.tool_allowed("workflow_step"));
        assert!(a.tool_allowed("Workflow_Step"));
    }

    #[test]
    fn without_a_filter_every_command_passes() {
        let a = agent(AgentTools::default());
        assert_eq!(a.check_bash("rm -rf target"), Ok(()));
    }

    #[test]
    fn first_word_must_be_an_allowed_command() {
        let a = bash_agent(&["ls", "git"], &[]);
        assert_eq!(a.check_bash("ls -la"), Ok(()));
        assert_eq!(a.check_bash("  git status"), Ok(()));
        assert_eq!(
            a.check_bash("rm -rf target"),
            Err("Command 'rm' is not allowed for agent planner".to_owned())
        );
        // Words split on whitespace only: a chained command is not `ls`.
        assert_eq!(
            a.check_bash("ls;rm x"),
            Err("Command 'ls;rm' is not allowed for agent planner".to_owned())
        );
        assert_eq!(
            a.check_bash(""),
            Err("Command '' is not allowed for agent planner".to_owned())
        );
    }

    #[test]
    fn leading_assignments_are_skipped() {
        let a = bash_agent(&["git"], &[]);
        assert_eq!(a.check_bash("FOO=1 git log"), Ok(()));
        assert_eq!(a.check_bash("A=1 B_2='x y' GIT_PAGER=\"\" git log"), Ok(()));
        assert_eq!(
            a.check_bash("FOO=1 make"),
            Err("Command 'make' is not allowed for agent planner".to_owned())
        );
        // Only a NAME=value word is an assignment.
        assert_eq!(
            a.check_bash("1X=2 git"),
            Err("Command '1X=2' is not allowed for agent planner".to_owned())
        );
    }

    #[test]
    fn quotes_around_the_command_word_are_removed() {
        let a = bash_agent(&["git"], &[]);
        assert_eq!(a.check_bash("\"git\" status"), Ok(()));
        assert_eq!(a.check_bash("g'i't status"), Ok(()));
        assert_eq!(
            a.check_bash("'git status'"),
            Err("Command 'git status' is not allowed for agent planner".to_owned())
        );
    }

    #[test]
    fn a_blocked_pattern_is_searched_in_the_whole_line() {
        let a = bash_agent(&[], &[r"\bgit\s+push\b", "rm -rf /"]);
        assert_eq!(a.check_bash("git status"), Ok(()));
        assert_eq!(
            a.check_bash("git commit -m x && git push origin"),
            Err(r"Command blocked by pattern: \bgit\s+push\b".to_owned())
        );
        assert_eq!(
            a.check_bash("sudo rm -rf /"),
            Err("Command blocked by pattern: rm -rf /".to_owned())
        );
    }

    #[test]
    fn allowed_first_word_is_checked_before_patterns() {
        let a = bash_agent(&["git"], &["push"]);
        assert_eq!(
            a.check_bash("curl push"),
            Err("Command 'curl' is not allowed for agent planner".to_owned())
        );
        assert_eq!(
            a.check_bash("git push"),
            Err("Command blocked by pattern: push".to_owned())
        );
    }

    #[test]
    fn a_bad_pattern_is_named_with_a_one_line_reason() {
        let err = BashFilter::new(Vec::new(), &strings(&["ok", "(unclosed"])).unwrap_err();
        assert_eq!(err.index, 1);
        assert_eq!(err.pattern, "(unclosed");
        assert!(!err.reason.contains('\n'), "{err:?}");
        assert!(err.reason.contains("unclosed group"), "{err:?}");
        assert!(
            err.to_string()
                .starts_with("blocked pattern `(unclosed` is not a valid regular expression: "),
            "{err}"
        );
    }

    #[test]
    fn filters_compare_by_pattern_source() {
        let a = BashFilter::new(strings(&["ls"]), &strings(&["x+"])).expect("valid");
        let b = BashFilter::new(strings(&["ls"]), &strings(&["x+"])).expect("valid");
        let c = BashFilter::new(strings(&["ls"]), &strings(&["y+"])).expect("valid");
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.pattern_sources().collect::<Vec<_>>(), ["x+"]);
    }
}

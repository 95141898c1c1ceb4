//! Agent definitions: rawko-sdk's agent format (SPEC-0004 YAML, SPEC-0008 Markdown) read from
//! `~/.config/rawko/agents` and `<workspace>/.rawko/agents`, checked one file at a time and then as
//! a set, and the tool filtering the engine applies to an agent's tool calls.
//!
//! An agent is a system prompt with a name, the tools it may use, limits, and the transitions that
//! say which agent runs after it succeeds, fails or runs out of iterations (`complete` ends the
//! task). Like the workflow loader, this module only reads files, and one broken file never hides
//! another: every problem becomes a [`Diagnostic`] with its file and, where known, its line.

mod filter;
mod load;
mod parse;
pub mod profiles;
mod validate;

use std::path::PathBuf;

use indexmap::IndexMap;

pub use crate::workflow::{Diagnostic, Severity};
pub use filter::{BashFilter, BashRejection, InvalidPattern};
pub use load::{default_roots, load, load_pinned, AgentLoadOutcome, SkippedAgent};
pub use parse::{is_valid_name, parse_bytes, parse_file, parse_str, ParsedAgent};
pub use validate::{is_known_tool, known_tools, validate_set};

/// The transition target that ends the task instead of naming an agent.
pub const COMPLETE: &str = "complete";

/// Tools an agent may name besides the built-in file and shell tools: the web tools of rawko-sdk
/// and pi-workflows' `workflow_step`.
pub const EXTRA_TOOLS: [&str; 3] = ["WebFetch", "WebSearch", "workflow_step"];

/// One agent, as written in its file.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentDefinition {
    /// Unique within the loaded set; matches `^[a-z][a-z0-9_-]*$`, case-insensitively.
    pub name: String,
    pub display_name: Option<String>,
    /// What the agent is good for, in words the arbiter reads when it picks an agent.
    pub when_to_use: Option<String>,
    /// Never empty.
    pub system_prompt: String,
    pub tools: AgentTools,
    pub transitions: AgentTransitions,
    pub limits: AgentLimits,
    pub provider: Option<AgentProvider>,
    /// The file the agent was read from.
    pub file: PathBuf,
}

impl AgentDefinition {
    /// The name shown to people: the display name when there is one.
    pub fn title(&self) -> &str {
        self.display_name.as_deref().unwrap_or(&self.name)
    }

    /// Where a failure leads: `onFailure`, or the agent itself when it is not given.
    pub fn failure_target(&self) -> &str {
        self.transitions.on_failure.as_deref().unwrap_or(&self.name)
    }
}

/// Which tools an agent may call. rawko-sdk's resolution: keep `allowed` when given, remove
/// `blocked`, then pass every Bash command through `bash_filter`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentTools {
    /// `None`: every tool; `Some`: only these (names compare case-insensitively).
    pub allowed: Option<Vec<String>>,
    /// Never allowed, whatever `allowed` says.
    pub blocked: Vec<String>,
    pub bash_filter: Option<BashFilter>,
}

/// Where the task goes after the agent's run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentTransitions {
    /// An agent name or [`COMPLETE`].
    pub on_success: String,
    /// `None` means the agent itself (see [`AgentDefinition::failure_target`]).
    pub on_failure: Option<String>,
    pub on_max_iterations: Option<String>,
}

/// Per-agent limits; `None` leaves the global limit in force.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentLimits {
    pub max_iterations: Option<u32>,
    /// `limits.timeout` in the file, in milliseconds.
    pub timeout_ms: Option<u64>,
    pub max_tokens: Option<u32>,
}

/// The model an agent runs on, when it is not the task's default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentProvider {
    pub name: String,
    pub model: Option<String>,
    pub max_tokens: Option<u32>,
}

/// The loaded agents, keyed by name, in root order (then file order within a root).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentSet {
    agents: IndexMap<String, AgentDefinition>,
    /// The files the loader read the agents from, as read, in the set's order (none for a set
    /// built in code). A task pins these.
    sources: Vec<crate::workflow::source::SourceFile>,
}

impl AgentSet {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn get(&self, name: &str) -> Option<&AgentDefinition> {
        self.agents.get(name)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.agents.contains_key(name)
    }

    pub fn iter(&self) -> impl Iterator<Item = &AgentDefinition> {
        self.agents.values()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.agents.keys().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.agents.len()
    }

    pub fn is_empty(&self) -> bool {
        self.agents.is_empty()
    }

    /// Adds `agent`, replacing (in place) one of the same name, which is returned.
    pub fn insert(&mut self, agent: AgentDefinition) -> Option<AgentDefinition> {
        self.agents.insert(agent.name.clone(), agent)
    }

    /// Removes the agent `name`, keeping the order of the rest.
    pub fn remove(&mut self, name: &str) -> Option<AgentDefinition> {
        self.agents.shift_remove(name)
    }

    /// The files the agents were read from (see [`load`]).
    pub fn sources(&self) -> &[crate::workflow::source::SourceFile] {
        &self.sources
    }

    pub(crate) fn set_sources(&mut self, sources: Vec<crate::workflow::source::SourceFile>) {
        self.sources = sources;
    }
}

impl FromIterator<AgentDefinition> for AgentSet {
    fn from_iter<I: IntoIterator<Item = AgentDefinition>>(iter: I) -> Self {
        let mut set = AgentSet::new();
        for agent in iter {
            set.insert(agent);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(name: &str) -> AgentDefinition {
        AgentDefinition {
            name: name.to_owned(),
            display_name: None,
            when_to_use: None,
            system_prompt: "Do it.".to_owned(),
            tools: AgentTools::default(),
            transitions: AgentTransitions {
                on_success: COMPLETE.to_owned(),
                on_failure: None,
                on_max_iterations: None,
            },
            limits: AgentLimits::default(),
            provider: None,
            file: PathBuf::from(format!("{name}.yaml")),
        }
    }

    #[test]
    fn failure_defaults_to_the_agent_itself() {
        let mut a = agent("dev");
        assert_eq!(a.failure_target(), "dev");
        a.transitions.on_failure = Some("planner".to_owned());
        assert_eq!(a.failure_target(), "planner");
    }

    #[test]
    fn title_prefers_the_display_name() {
        let mut a = agent("dev");
        assert_eq!(a.title(), "dev");
        a.display_name = Some("Developer".to_owned());
        assert_eq!(a.title(), "Developer");
    }

    #[test]
    fn set_keeps_insertion_order_and_replaces_in_place() {
        let mut set: AgentSet = ["b", "a", "c"].into_iter().map(agent).collect();
        assert_eq!(set.names().collect::<Vec<_>>(), ["b", "a", "c"]);
        let mut replacement = agent("a");
        replacement.system_prompt = "Other.".to_owned();
        let old = set.insert(replacement).expect("a was there");
        assert_eq!(old.system_prompt, "Do it.");
        assert_eq!(set.names().collect::<Vec<_>>(), ["b", "a", "c"]);
        assert_eq!(
            set.get("a").map(|a| a.system_prompt.as_str()),
            Some("Other.")
        );
        assert!(set.remove("b").is_some());
        assert_eq!(set.names().collect::<Vec<_>>(), ["a", "c"]);
        assert_eq!(set.len(), 2);
        assert!(!set.contains("b"));
    }
}

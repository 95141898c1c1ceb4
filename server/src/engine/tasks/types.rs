//! The values faces hand the task service and get back: the workspace (`Place`), a new task
//! (`StartRequest`), an override, a started task, a stored conversation.

use std::ffi::OsString;
use std::path::PathBuf;

use serde_json::Value;

use crate::config::{self, ConfigProblem, Settings};
use crate::engine::TaskHandle;
use crate::machine;
use crate::workflow::WorkflowRoot;

/// The workspace tasks run in: its folder, its settings, and where its workflows and agents
/// are defined.
#[derive(Debug, Clone)]
pub struct Place {
    pub workspace: PathBuf,
    pub settings: Settings,
    pub workflow_roots: Vec<WorkflowRoot>,
    pub agent_roots: Vec<PathBuf>,
}

impl Place {
    /// Reads the settings of `workspace` (its config files, then the editor's `options`) and
    /// finds its workflow and agent roots. Problems with the settings are returned for the user.
    pub fn load(
        workspace: PathBuf,
        options: Option<&Value>,
        env: &dyn Fn(&str) -> Option<OsString>,
    ) -> (Place, Vec<ConfigProblem>) {
        let (settings, problems) = config::load(&config::config_files(&workspace, env), options);
        let place = Place {
            workflow_roots: crate::workflow::default_roots(&workspace, env),
            agent_roots: crate::agents::default_roots(&workspace, env),
            workspace,
            settings,
        };
        (place, problems)
    }
}

/// What a new task is: the user's description and their choices.
#[derive(Debug, Clone, Default)]
pub struct StartRequest {
    pub description: String,
    pub workflow: Option<String>,
    pub agent: Option<String>,
    pub provider: Option<String>,
    pub model: Option<String>,
    /// A scripted provider's file, relative to the workspace.
    pub script: Option<PathBuf>,
    pub base_url: Option<String>,
    /// The `acp` provider's agent command line (`rawko run --agent-command`).
    pub agent_command: Option<String>,
}

/// A manual override of the orchestrator (rawko-sdk SPEC-0003's events).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Override {
    ForceAgent(String),
    SkipStep,
    Retry,
    Reset,
}

impl Override {
    pub(super) fn event(&self) -> machine::Event {
        match self {
            Override::ForceAgent(agent) => machine::Event::ForceAgent {
                agent: agent.clone(),
            },
            Override::SkipStep => machine::Event::SkipStep,
            Override::Retry => machine::Event::Retry,
            Override::Reset => machine::Event::Reset,
        }
    }

    pub(super) fn name(&self) -> &'static str {
        match self {
            Override::ForceAgent(_) => "forcing an agent",
            Override::SkipStep => "skipping a step",
            Override::Retry => "a retry",
            Override::Reset => "a reset",
        }
    }
}

/// A stored task's conversation (see [`Tasks::conversation`]).
#[derive(Debug, Clone)]
pub struct Conversation {
    pub description: String,
    pub workflow: Option<String>,
    pub finished: bool,
    pub messages: Vec<crate::provider::Message>,
}

/// A task the service has just started (or resumed).
#[derive(Debug, Clone)]
pub struct Started {
    pub id: String,
    pub description: String,
    pub handle: TaskHandle,
    /// What the user should be told once, e.g. which provider was picked by default.
    pub note: Option<String>,
}

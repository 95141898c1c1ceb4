//! Workflow and phase definitions as rawko holds them after loading: pi-workflows' schema, plus
//! where each definition came from so diagnostics and listings can name the file.

use std::path::PathBuf;

use indexmap::IndexMap;

/// Who may start a workflow: `user` workflows are listed and startable; `workflows` ones only run
/// as a subworkflow of another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Show {
    #[default]
    User,
    Workflows,
}

impl Show {
    pub fn as_str(self) -> &'static str {
        match self {
            Show::User => "user",
            Show::Workflows => "workflows",
        }
    }
}

/// The one tool list a phase may carry; the two are mutually exclusive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolPolicy {
    /// Only these tools (and `workflow_step`) may run.
    Whitelist(Vec<String>),
    /// Every tool except these may run.
    Blacklist(Vec<String>),
}

impl ToolPolicy {
    /// `true` when the policy lets `tool` run. Tool names compare case-insensitively.
    pub fn allows(&self, tool: &str) -> bool {
        match self {
            ToolPolicy::Whitelist(list) => list.iter().any(|t| t.eq_ignore_ascii_case(tool)),
            ToolPolicy::Blacklist(list) => !list.iter().any(|t| t.eq_ignore_ascii_case(tool)),
        }
    }

    /// A one-line description, as shown in previews and block reasons.
    pub fn describe(&self) -> String {
        match self {
            ToolPolicy::Whitelist(list) => list.join(", "),
            ToolPolicy::Blacklist(list) => format!("all except: {}", list.join(", ")),
        }
    }
}

/// One concrete phase: a Markdown file whose frontmatter names it and whose body instructs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseDefinition {
    pub id: String,
    pub name: String,
    pub emoji: String,
    pub tools: Option<ToolPolicy>,
    pub available_profiles: Vec<String>,
    /// rawko's extension: the agent that runs this phase (`agent:` in the frontmatter).
    pub agent: Option<String>,
    /// The Markdown body, trimmed; a template.
    pub instructions: String,
    /// The phase file, for diagnostics and previews.
    pub file: PathBuf,
}

impl PhaseDefinition {
    /// The blacklisted tools, or none when the phase uses a whitelist or no list.
    pub fn blocked_tools(&self) -> &[String] {
        match &self.tools {
            Some(ToolPolicy::Blacklist(list)) => list,
            _ => &[],
        }
    }
}

/// An entry of a workflow's `phases` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PhaseEntry {
    Phase(PhaseDefinition),
    /// `{subworkflow: KEY}`: the whole of another workflow runs here.
    Subworkflow(String),
}

impl PhaseEntry {
    pub fn as_phase(&self) -> Option<&PhaseDefinition> {
        match self {
            PhaseEntry::Phase(p) => Some(p),
            PhaseEntry::Subworkflow(_) => None,
        }
    }
}

/// Which configured root a definition was loaded from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RootKind {
    /// `~/.config/rawko/workflows`
    UserConfig,
    /// `~/.pi/agent/workflows`
    PiGlobal,
    /// `<workspace>/.pi/workflows`
    PiProject,
    /// `<workspace>/.rawko/workflows`
    Project,
}

impl RootKind {
    pub fn label(self) -> &'static str {
        match self {
            RootKind::UserConfig => "user",
            RootKind::PiGlobal => "pi-global",
            RootKind::PiProject => "pi-project",
            RootKind::Project => "project",
        }
    }
}

/// One directory that holds workflow directories.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowRoot {
    pub kind: RootKind,
    pub path: PathBuf,
}

/// A whole workflow: `workflow.yaml` and its phases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkflowDefinition {
    /// The directory name; workflows are keyed by it.
    pub key: String,
    pub name: String,
    pub command_name: String,
    pub initial_message: String,
    pub phases: Vec<PhaseEntry>,
    pub show: Show,
    pub loopable: bool,
    pub session_name_prefix: String,
    pub session_name_max_length: usize,
    pub role_instruction: Option<String>,
    pub advance_reminder: Option<String>,
    pub block_reason_template: Option<String>,
    pub completion_message: Option<String>,
    pub not_done_reminder: Option<String>,
    /// The workflow's directory.
    pub dir: PathBuf,
    pub root: WorkflowRoot,
    /// A digest of every file the definition was read from, so a persisted task can tell whether
    /// the definition it ran under has changed.
    pub fingerprint: String,
}

impl WorkflowDefinition {
    pub fn workflow_file(&self) -> PathBuf {
        self.dir.join("workflow.yaml")
    }
}

/// The loaded, validated and resolved workflows, keyed by directory name in root order.
///
/// Every subworkflow reference in the set names a workflow of the set, and no references form a
/// cycle: the loader removes what breaks either rule.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkflowSet {
    defs: IndexMap<String, WorkflowDefinition>,
}

impl WorkflowSet {
    pub(crate) fn from_map(defs: IndexMap<String, WorkflowDefinition>) -> Self {
        Self { defs }
    }

    pub fn get(&self, key: &str) -> Option<&WorkflowDefinition> {
        self.defs.get(key)
    }

    pub fn iter(&self) -> impl Iterator<Item = &WorkflowDefinition> {
        self.defs.values()
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.defs.keys().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.defs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.defs.is_empty()
    }

    /// The first user-visible workflow whose `commandName` is `command` (pi-workflows' rule for
    /// duplicates: the first one found wins).
    pub fn by_command_name(&self, command: &str) -> Option<&WorkflowDefinition> {
        self.defs
            .values()
            .find(|d| d.show == Show::User && d.command_name == command)
    }

    /// A workflow by key, or else by command name.
    pub fn find(&self, key_or_command: &str) -> Option<&WorkflowDefinition> {
        self.get(key_or_command)
            .or_else(|| self.by_command_name(key_or_command))
    }

    /// The display name of a phase entry: the phase's name, or the referenced workflow's name.
    pub fn entry_name<'a>(&'a self, entry: &'a PhaseEntry) -> &'a str {
        match entry {
            PhaseEntry::Phase(p) => &p.name,
            PhaseEntry::Subworkflow(key) => self.get(key).map_or(key.as_str(), |d| d.name.as_str()),
        }
    }

    /// Every concrete phase of `def`, in order, descending into subworkflows.
    pub fn flatten<'a>(&'a self, def: &'a WorkflowDefinition) -> Vec<&'a PhaseDefinition> {
        let mut out = Vec::new();
        self.flatten_into(def, &mut out, 0);
        out
    }

    fn flatten_into<'a>(
        &'a self,
        def: &'a WorkflowDefinition,
        out: &mut Vec<&'a PhaseDefinition>,
        depth: usize,
    ) {
        // The set is acyclic; the depth bound only guards against a hand-built set that is not.
        if depth > MAX_DEPTH {
            return;
        }
        for entry in &def.phases {
            match entry {
                PhaseEntry::Phase(p) => out.push(p),
                PhaseEntry::Subworkflow(key) => {
                    if let Some(sub) = self.get(key) {
                        self.flatten_into(sub, out, depth + 1);
                    }
                }
            }
        }
    }
}

/// How deep subworkflows may nest before rawko treats the structure as broken.
pub const MAX_DEPTH: usize = 64;

//! Workflow and phase definitions as rawko holds them after loading: pi-workflows' schema, plus
//! where each definition came from so diagnostics and listings can name the file.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use std::sync::Arc;

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
///
/// Each entry is a [`ToolRule`]: a tool name (`Read`) or, Claude Code style, a tool with a pattern
/// (`Bash(git status*)`, `Edit(docs/**)`). Which calls a policy lets through is the gate's business
/// (`gate::check`); this type only holds the compiled rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolPolicy {
    /// Only these tools (and `workflow_step`) may run.
    Whitelist(Vec<ToolRule>),
    /// Every tool except these may run.
    Blacklist(Vec<ToolRule>),
}

impl ToolPolicy {
    pub fn rules(&self) -> &[ToolRule] {
        match self {
            ToolPolicy::Whitelist(list) | ToolPolicy::Blacklist(list) => list,
        }
    }

    /// `true` when the policy lets `tool` run at all, whatever its input: a whitelist names it
    /// (alone or with a pattern); a blacklist does not name it alone. Tool names compare
    /// case-insensitively.
    pub fn allows(&self, tool: &str) -> bool {
        let call = super::tools::Call::new(tool);
        match self {
            ToolPolicy::Whitelist(list) => list.iter().any(|r| r.covers(&call)),
            ToolPolicy::Blacklist(list) => !list.iter().any(|r| r.covers(&call) && r.is_plain()),
        }
    }

    /// `true` when `tool` may run with any input: a whitelist names it alone; a blacklist does
    /// not name it at all.
    pub fn allows_fully(&self, tool: &str) -> bool {
        let call = super::tools::Call::new(tool);
        match self {
            ToolPolicy::Whitelist(list) => list.iter().any(|r| r.covers(&call) && r.is_plain()),
            ToolPolicy::Blacklist(list) => !list.iter().any(|r| r.covers(&call)),
        }
    }

    /// `true` when the phase lets files be written anywhere: both `Write` and `Edit` run with any
    /// input. When it does not, the gate also stops Bash commands that write.
    pub fn allows_writing(&self) -> bool {
        self.allows_fully("Write") && self.allows_fully("Edit")
    }

    /// A one-line description, as shown in previews and block reasons.
    pub fn describe(&self) -> String {
        match self {
            ToolPolicy::Whitelist(list) => list.join(", "),
            ToolPolicy::Blacklist(list) => format!("all except: {}", list.join(", ")),
        }
    }
}

/// The tool whose rule patterns are shell commands; every other tool's patterns are path globs.
pub const SHELL_TOOL: &str = "Bash";

/// One entry of a whitelist or blacklist: `Read` (the tool, whatever its input), `Bash(git
/// commit*)` (a glob over the whole command, where `*` matches anything, spaces included; a
/// trailing `:*` matches the prefix as a whole word) or `Edit(docs/**)` (a path glob over the
/// call's `path`/`file_path`, relative to the workspace: `*` stays within one directory, `**`
/// crosses them, a pattern without `/` matches the file name at any depth, a leading `./` or `/`
/// anchors it at the workspace root, a trailing `/` means everything inside).
///
/// Patterns are compiled once, when the rule is parsed. Rules compare, hash and serialise as the
/// text they were written as, which previews and messages show.
#[derive(Clone)]
pub struct ToolRule {
    source: String,
    /// The tool name as written (compared case-insensitively).
    tool: String,
    /// The Claude Code name of `tool` when the catalogue knows it (`find` → `Glob`), looked up
    /// once here rather than for every call the gate holds against the rule.
    canonical: Option<&'static str>,
    pattern: RulePattern,
}

#[derive(Clone)]
enum RulePattern {
    /// No pattern: every use of the tool.
    Any,
    Command {
        text: String,
        alternatives: Vec<Wildcard>,
    },
    Path {
        text: String,
        matchers: Vec<globset::GlobMatcher>,
    },
    /// A pattern that does not compile. Only a rule built with `From` can hold one (the loader
    /// reports it and drops the phase); it matches nothing.
    Invalid { text: String },
}

/// Why a rule does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RuleError(String);

impl ToolRule {
    /// Parses and compiles `Tool` or `Tool(pattern)`.
    pub fn parse(text: &str) -> Result<Self, RuleError> {
        let source = text.trim();
        let err = |m: &str| Err(RuleError(m.to_owned()));
        if source.is_empty() {
            return err("the rule is empty");
        }
        let Some(open) = source.find('(') else {
            if source.contains(')') {
                return err("it has a `)` but no `(`");
            }
            return Ok(Self {
                source: source.to_owned(),
                tool: source.to_owned(),
                canonical: canonical_of(source),
                pattern: RulePattern::Any,
            });
        };
        let tool = source[..open].trim();
        if tool.is_empty() {
            return err("it has no tool name before `(`");
        }
        let Some(inner) = source[open + 1..].strip_suffix(')') else {
            return err("it must end with `)` after the pattern");
        };
        let inner = inner.trim();
        if inner.is_empty() {
            return Err(RuleError(format!(
                "the pattern is empty; write `{tool}` alone for every use of the tool"
            )));
        }
        let pattern = if tool.eq_ignore_ascii_case(SHELL_TOOL) {
            RulePattern::Command {
                text: inner.to_owned(),
                alternatives: compile_command(inner),
            }
        } else {
            RulePattern::Path {
                text: inner.to_owned(),
                matchers: compile_path(inner)?,
            }
        };
        Ok(Self {
            source: source.to_owned(),
            tool: tool.to_owned(),
            canonical: canonical_of(tool),
            pattern,
        })
    }

    /// The rule as written (trimmed).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The tool name as written.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The pattern between the parentheses, if any.
    pub fn pattern(&self) -> Option<&str> {
        match &self.pattern {
            RulePattern::Any => None,
            RulePattern::Command { text, .. }
            | RulePattern::Path { text, .. }
            | RulePattern::Invalid { text } => Some(text),
        }
    }

    /// `true` for a rule without a pattern.
    pub fn is_plain(&self) -> bool {
        matches!(self.pattern, RulePattern::Any)
    }

    /// `true` when the rule is about `tool`: the same tool under any of its names
    /// (case-insensitively; pi's `edit` is `Edit`), or a tool the rule's tool stands for (`Edit`
    /// covers `MultiEdit` and `NotebookEdit`). See [`super::tools`].
    pub fn is_for(&self, tool: &str) -> bool {
        self.covers(&super::tools::Call::new(tool))
    }

    /// [`ToolRule::is_for`] for a call whose name was looked up once.
    pub fn covers(&self, call: &super::tools::Call<'_>) -> bool {
        let canonical = self.canonical.unwrap_or(&self.tool);
        super::tools::covers(&self.tool, canonical, call)
    }

    /// `true` when the rule matches the shell command `command`: a plain rule matches every
    /// command; a path rule none.
    pub fn matches_command(&self, command: &str) -> bool {
        match &self.pattern {
            RulePattern::Any => true,
            RulePattern::Command { alternatives, .. } => {
                alternatives.iter().any(|w| w.matches(command.trim()))
            }
            RulePattern::Path { .. } | RulePattern::Invalid { .. } => false,
        }
    }

    /// `true` when the rule matches `path`, a normalised workspace-relative path (`docs/a.md`,
    /// `""` for the workspace itself): a plain rule matches every path; a command rule none.
    pub fn matches_path(&self, path: &str) -> bool {
        match &self.pattern {
            RulePattern::Any => true,
            RulePattern::Path { matchers, .. } => matchers.iter().any(|m| m.is_match(path)),
            RulePattern::Command { .. } | RulePattern::Invalid { .. } => false,
        }
    }
}

/// The catalogue's Claude Code name of a rule's tool, `None` for a tool it does not know.
fn canonical_of(tool: &str) -> Option<&'static str> {
    super::tools::known(tool).map(|t| t.canonical)
}

/// A `*`-only glob: the literal parts between the stars.
#[derive(Clone)]
struct Wildcard {
    parts: Vec<String>,
}

impl Wildcard {
    fn new(pattern: &str) -> Self {
        Self {
            parts: pattern.split('*').map(str::to_owned).collect(),
        }
    }

    fn matches(&self, text: &str) -> bool {
        let (first, rest) = match self.parts.split_first() {
            Some(split) => split,
            None => return text.is_empty(),
        };
        let Some((last, middle)) = rest.split_last() else {
            return text == first;
        };
        if text.len() < first.len() + last.len()
            || !text.starts_with(first.as_str())
            || !text.ends_with(last.as_str())
        {
            return false;
        }
        let mut inner = &text[first.len()..text.len() - last.len()];
        for part in middle {
            match inner.find(part.as_str()) {
                Some(i) => inner = &inner[i + part.len()..],
                None => return false,
            }
        }
        true
    }
}

fn compile_command(pattern: &str) -> Vec<Wildcard> {
    match pattern.strip_suffix(":*") {
        // Claude Code's older prefix form: `npm run test:*` is `npm run test` and anything after
        // a space.
        Some(prefix) => vec![Wildcard::new(prefix), Wildcard::new(&format!("{prefix} *"))],
        None => vec![Wildcard::new(pattern)],
    }
}

fn compile_path(pattern: &str) -> Result<Vec<globset::GlobMatcher>, RuleError> {
    let mut p = pattern;
    let mut anchored = false;
    loop {
        if let Some(rest) = p.strip_prefix("./") {
            p = rest;
            anchored = true;
        } else if let Some(rest) = p.strip_prefix('/') {
            p = rest;
            anchored = true;
        } else {
            break;
        }
    }
    if p.is_empty() || p == "." {
        p = "**";
    }
    let mut glob = p.to_owned();
    if glob.ends_with('/') {
        glob.push_str("**");
    }
    if !anchored && !glob.contains('/') {
        glob = format!("**/{glob}");
    }
    let mut globs = vec![glob.clone()];
    // `docs/**` also matches `docs` itself.
    if let Some(dir) = glob.strip_suffix("/**") {
        if !dir.is_empty() {
            globs.push(dir.to_owned());
        }
    }
    globs
        .iter()
        .map(|g| {
            globset::GlobBuilder::new(g)
                .literal_separator(true)
                .build()
                .map(|g| g.compile_matcher())
                .map_err(|e| RuleError(e.kind().to_string()))
        })
        .collect()
}

impl From<&str> for ToolRule {
    /// Parses `text`; a rule whose pattern does not compile matches nothing (use
    /// [`ToolRule::parse`] to see the error).
    fn from(text: &str) -> Self {
        Self::parse(text).unwrap_or_else(|_| {
            let source = text.trim().to_owned();
            let (tool, inner) = match source.split_once('(') {
                Some((tool, inner)) => (tool.trim(), inner.trim_end_matches(')').trim()),
                None => (source.as_str(), ""),
            };
            Self {
                tool: tool.to_owned(),
                canonical: canonical_of(tool),
                pattern: RulePattern::Invalid {
                    text: inner.to_owned(),
                },
                source: source.clone(),
            }
        })
    }
}

impl From<String> for ToolRule {
    fn from(text: String) -> Self {
        Self::from(text.as_str())
    }
}

impl fmt::Debug for ToolRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.source, f)
    }
}

impl fmt::Display for ToolRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.source)
    }
}

impl PartialEq for ToolRule {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Eq for ToolRule {}

impl PartialEq<str> for ToolRule {
    fn eq(&self, other: &str) -> bool {
        self.source == other
    }
}

impl PartialEq<&str> for ToolRule {
    fn eq(&self, other: &&str) -> bool {
        self.source == *other
    }
}

impl Hash for ToolRule {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.source.hash(state);
    }
}

impl Borrow<str> for ToolRule {
    fn borrow(&self) -> &str {
        &self.source
    }
}

impl AsRef<str> for ToolRule {
    fn as_ref(&self) -> &str {
        &self.source
    }
}

impl serde::Serialize for ToolRule {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.source)
    }
}

/// One concrete phase: a Markdown file whose frontmatter names it and whose body instructs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseDefinition {
    pub id: String,
    pub name: String,
    pub emoji: String,
    pub tools: Option<ToolPolicy>,
    /// rawko's extension: what the phase's subagents (`delegate_to_subagents`) may call, read
    /// like `tools`; `None` lets them call anything, as in pi.
    pub subagent_tools: Option<Box<ToolPolicy>>,
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
    pub fn blocked_tools(&self) -> &[ToolRule] {
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
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "camelCase")]
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
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
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
    /// The files the definition was read from, as read: `workflow.yaml`, then each phase file
    /// in the order the phases name them. A task pins these.
    pub sources: Vec<super::source::SourceFile>,
}

impl WorkflowDefinition {
    pub fn workflow_file(&self) -> PathBuf {
        self.dir.join("workflow.yaml")
    }
}

/// A subagent's role instruction (`delegate_to_subagents`), in place of the workflow's: it works
/// for the orchestrator in one phase and never moves the workflow.
pub const SUBAGENT_ROLE_INSTRUCTION: &str = "You are a SUBAGENT working for this workflow's orchestrator in the {phaseName} phase. Do the task you were given with the tools this phase allows subagents, then answer with what you did and found: your answer goes back to the orchestrator. You do not move the workflow; the orchestrator does.";

/// The loaded, validated and resolved workflows, keyed by directory name in root order.
///
/// Every subworkflow reference in the set names a workflow of the set, and no references form a
/// cycle: the loader removes what breaks either rule.
///
/// Keys are workflow directory names the user wrote, so a fast hash without a random seed is
/// safe here. A set never changes once loaded: its copies share one map (a load's outcome, the
/// set its tasks share and a listing's copy are one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkflowSet {
    defs: Arc<IndexMap<String, WorkflowDefinition, rustc_hash::FxBuildHasher>>,
}

impl WorkflowSet {
    pub(crate) fn from_map<S>(defs: IndexMap<String, WorkflowDefinition, S>) -> Self {
        Self {
            defs: Arc::new(defs.into_iter().collect()),
        }
    }

    /// The set as a subagent's gate reads it: every phase's `tools` is its `subagentTools` (none
    /// when it sets none: pi's subagents are not gated by the phase), and its context speaks to
    /// a subagent (its role instruction, no reminder to move on).
    pub fn for_subagents(&self) -> WorkflowSet {
        let mut defs = (*self.defs).clone();
        for def in defs.values_mut() {
            // The context a subagent gets speaks to it, and never asks it to move on.
            def.role_instruction = Some(SUBAGENT_ROLE_INSTRUCTION.to_owned());
            def.advance_reminder = Some(String::new());
            for entry in &mut def.phases {
                if let PhaseEntry::Phase(phase) = entry {
                    phase.tools = phase.subagent_tools.as_deref().cloned();
                }
            }
        }
        WorkflowSet {
            defs: Arc::new(defs),
        }
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

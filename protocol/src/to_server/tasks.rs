//! The requests that describe tasks (`rawko/listTasks`, `rawko/getTask`, `rawko/phasePrompt`) and
//! the views of a task they answer with: its summary, its detail, its phases and its history.
//! Re-exported by [`super`], so `to_server::TaskSummary` and the like keep their paths.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::types::{
    BreadcrumbItem, ExternalAgent, StateClass, SubagentInfo, TaskAction, TaskId, TaskState,
};
use crate::Request;

/// Lists the tasks rawko knows: running ones and those persisted in its state directory.
#[derive(Debug)]
pub enum ListTasks {}

impl Request for ListTasks {
    type Params = ListTasksParams;
    type Result = ListTasksResult;
    const METHOD: &'static str = "rawko/listTasks";
}

/// The params of `rawko/listTasks`: none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksParams {}

/// The result of `rawko/listTasks`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResult {
    /// Every task, most recently started first.
    pub tasks: Vec<TaskSummary>,
}

/// One task in a listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskSummary {
    /// The task's id.
    pub task_id: TaskId,
    /// What the user asked for.
    pub description: String,
    /// The key of the workflow the task runs, if it runs one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub workflow: Option<String>,
    /// Where the task stands.
    pub state: TaskState,
    /// The breadcrumb as one line, e.g. `Feature > 🧪 Test [3/4]`.
    pub breadcrumb_text: String,
    /// When the task started, in milliseconds since the Unix epoch.
    pub started_at: u64,
    /// When the task last changed, in milliseconds since the Unix epoch.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub updated_at: Option<u64>,
    /// What the state means for the user, as in `rawko/status`.
    pub state_class: StateClass,
    /// `true` when the task is an external agent's session, as in `rawko/status`.
    pub external: bool,
    /// Which external agent the session fronts (`claude`, `gemini`); absent for rawko's own tasks.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub external_agent: Option<ExternalAgent>,
    /// That agent's name for people (`Claude Code`, `Gemini CLI`), for the status and the task
    /// list to show as it is; absent for rawko's own tasks.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub external_agent_name: Option<String>,
    /// `breadcrumbText` as its levels, outermost first, as in `rawko/status`.
    pub breadcrumb_levels: Vec<String>,
    /// The state as words to show after `breadcrumbText`, as in `rawko/status`.
    pub state_text: String,
    /// The commands the task accepts now, e.g. `["interrupt", "cancel", "message"]`, as in
    /// `rawko/status`.
    pub actions: Vec<TaskAction>,
    /// Set when the task is a subagent: its parent, profile and label; absent for every other
    /// task. A client shows such a task under its parent.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub subagent: Option<SubagentInfo>,
}

/// Returns one task in full: its state, breadcrumb and history.
#[derive(Debug)]
pub enum GetTask {}

impl Request for GetTask {
    type Params = GetTaskParams;
    type Result = GetTaskResult;
    const METHOD: &'static str = "rawko/getTask";
}

/// The params of `rawko/getTask`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskParams {
    /// The task to describe.
    pub task_id: TaskId,
}

/// The result of `rawko/getTask`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskResult {
    /// The task.
    pub task: TaskDetail,
}

/// One task in full: the fields of a [`TaskSummary`], the breadcrumb as items, and the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaskDetail {
    /// The task's id.
    pub task_id: TaskId,
    /// What the user asked for.
    pub description: String,
    /// The key of the workflow the task runs, if it runs one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub workflow: Option<String>,
    /// Where the task stands.
    pub state: TaskState,
    /// The breadcrumb as one line, e.g. `Feature > 🧪 Test [3/4]`.
    pub breadcrumb_text: String,
    /// When the task started, in milliseconds since the Unix epoch.
    pub started_at: u64,
    /// When the task last changed, in milliseconds since the Unix epoch.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub updated_at: Option<u64>,
    /// What the state means for the user, as in `rawko/status`.
    pub state_class: StateClass,
    /// `true` when the task is an external agent's session, as in `rawko/status`.
    pub external: bool,
    /// Which external agent the session fronts (`claude`, `gemini`); absent for rawko's own tasks.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub external_agent: Option<ExternalAgent>,
    /// That agent's name for people (`Claude Code`, `Gemini CLI`), for the status and the task
    /// list to show as it is; absent for rawko's own tasks.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub external_agent_name: Option<String>,
    /// `breadcrumbText` as its levels, outermost first, as in `rawko/status`.
    pub breadcrumb_levels: Vec<String>,
    /// The state as words to show after `breadcrumbText`, as in `rawko/status`.
    pub state_text: String,
    /// The commands the task accepts now, e.g. `["interrupt", "cancel", "message"]`, as in
    /// `rawko/status`.
    pub actions: Vec<TaskAction>,
    /// Set when the task is a subagent: its parent, profile and label; absent for every other
    /// task. A client shows such a task under its parent.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub subagent: Option<SubagentInfo>,
    /// The breadcrumb, outermost workflow first; empty when the task runs no workflow.
    pub breadcrumb: Vec<BreadcrumbItem>,
    /// What happened to the task, oldest first.
    pub history: Vec<HistoryEntry>,
    /// The task's workflow flattened in order, depth first, nested scopes included; empty when the
    /// task runs no workflow.
    pub phases: Vec<PhaseNode>,
}

/// One entry of a task's flattened workflow ([`TaskDetail::phases`]): a nested workflow (a
/// subworkflow entry) or a concrete phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhaseNode {
    /// A nested workflow or a concrete phase.
    pub kind: PhaseNodeKind,
    /// For a `phase`: its position among the concrete phases, from 0 (the argument of
    /// `rawko/phasePrompt`, and what `rawko/status`'s `phaseIndex` names).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub index: Option<u32>,
    /// The phase's (or the nested workflow's) name.
    pub name: String,
    /// The phase's emoji, when it has one.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub emoji: Option<String>,
    /// 0 for the entries of the task's own workflow, 1 inside its subworkflow, and so on.
    pub depth: u32,
    /// Whether it is done, current or still to do.
    pub status: PhaseStatus,
    /// The breadcrumb as one line had the task stood there, e.g. `Feature > Review [4/4] > 🔎
    /// Check [1/2]`; for a scope, the breadcrumb down to its entry (`Feature > Review [4/4]`).
    pub breadcrumb_text: String,
    /// For a `phase`: its id, the phase file's name without `.md` (e.g. `implement`), as
    /// `rawko diff --phase` takes it; absent for a `scope`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub id: Option<String>,
    /// For a `phase`: whether the task has a checkpoint of the workspace taken when it entered
    /// it (so `rawko/phaseDiff` can show what the phase changed); `false` for a `scope`.
    #[serde(default)]
    pub has_checkpoint: bool,
}

/// What a [`PhaseNode`] stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhaseNodeKind {
    /// A nested workflow (a subworkflow entry); its phases follow it, one level deeper.
    Scope,
    /// A concrete phase.
    Phase,
}

/// Where a task stands with a [`PhaseNode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhaseStatus {
    /// Done (every phase of a finished task is).
    Done,
    /// The task is here; a scope is current while one of its phases is.
    Current,
    /// Not reached yet.
    Todo,
}

/// The rendered context prompt rawko injects for one phase of a task.
#[derive(Debug)]
pub enum PhasePrompt {}

impl Request for PhasePrompt {
    type Params = PhasePromptParams;
    type Result = PhasePromptResult;
    const METHOD: &'static str = "rawko/phasePrompt";
}

/// The params of `rawko/phasePrompt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhasePromptParams {
    /// The task.
    pub task_id: TaskId,
    /// The phase: its `index` in `TaskDetail.phases`.
    pub index: u32,
}

/// The result of `rawko/phasePrompt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhasePromptResult {
    /// The phase's name.
    pub name: String,
    /// The breadcrumb as one line at that phase.
    pub breadcrumb_text: String,
    /// The context prompt rawko injects before the agent's turns in that phase (Markdown).
    pub prompt: String,
}

/// What a task, or one phase of it, changed in the workspace: the diff between two of its
/// checkpoints.
#[derive(Debug)]
pub enum PhaseDiff {}

impl Request for PhaseDiff {
    type Params = PhaseDiffParams;
    type Result = PhaseDiffResult;
    const METHOD: &'static str = "rawko/phaseDiff";
}

/// The params of `rawko/phaseDiff`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhaseDiffParams {
    /// The task.
    pub task_id: TaskId,
    /// The phase: its `index` in `TaskDetail.phases` (from 0); absent for the whole task.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub index: Option<u32>,
}

/// The result of `rawko/phaseDiff`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhaseDiffResult {
    /// git's unified diff (no colour); empty when nothing changed.
    pub diff: String,
    /// The files that changed, with how.
    pub files: Vec<ChangedFile>,
    /// The checkpoint the diff starts from (a commit), `null` when there is none.
    pub from: Option<String>,
    /// The checkpoint the diff ends at (a commit), `null` when there is none.
    pub to: Option<String>,
}

/// One file of a [`PhaseDiffResult`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChangedFile {
    /// Its path, relative to the top of the repository the checkpoints are in.
    pub path: String,
    /// How it changed.
    pub status: FileChange,
}

/// How a [`ChangedFile`] changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FileChange {
    /// Created.
    Added,
    /// Changed (its content, mode or type).
    Modified,
    /// Removed.
    Deleted,
}

/// One step in a task's history: an event of the orchestrator and what it changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    /// The entry's position in the task's event log, from 1.
    pub seq: u64,
    /// When it happened, in milliseconds since the Unix epoch.
    pub at: u64,
    /// The event, e.g. `agent_selected`, `phase_advanced`, `tool_blocked`.
    pub event: String,
    /// The orchestrator's state before the event (e.g. `executing`), if the event moved it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub state_before: Option<String>,
    /// The orchestrator's state after the event, if the event moved it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub state_after: Option<String>,
    /// The guard that chose the transition, if one did.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub guard: Option<String>,
    /// A one-line detail for people (a tool name, an error message, a phase).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub detail: Option<String>,
}

/// Takes a task and its workspace back to the start of one of its phases: the files restored
/// from the checkpoint taken when the task entered it, the task moved back there (docs/
/// checkpoints.md).
#[derive(Debug)]
pub enum RewindTask {}

impl Request for RewindTask {
    type Params = RewindTaskParams;
    type Result = RewindTaskResult;
    const METHOD: &'static str = "rawko/rewindTask";
}

/// The params of `rawko/rewindTask`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewindTaskParams {
    /// The task.
    pub task_id: TaskId,
    /// The phase to go back to the start of: its `index` in `TaskDetail.phases` (from 0).
    pub index: u32,
    /// Only say what would change; change nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
    /// Also overwrite or remove files changed after the task's last checkpoint by someone
    /// other than the task.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
}

/// The result of `rawko/rewindTask`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewindTaskResult {
    /// Whether the workspace and the task were rewound: `false` on a dry run, and when the
    /// rewind stopped at `conflicts`.
    pub rewound: bool,
    /// The phase's name.
    pub phase: String,
    /// What changed (what would change, when not rewound), by path.
    pub changes: Vec<RewindChange>,
    /// Files changed after the task's last checkpoint, not by the task, that the rewind would
    /// restore or remove: it stops at them unless `force`.
    pub conflicts: Vec<String>,
    /// One line for the user.
    pub text: String,
}

/// One file of a [`RewindTaskResult`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewindChange {
    /// Relative to the workspace.
    pub path: String,
    pub action: RewindAction,
}

/// What a rewind does to a [`RewindChange`]'s file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RewindAction {
    /// Written back as the checkpoint has it.
    Restore,
    /// Removed: it was created after the checkpoint.
    Remove,
}

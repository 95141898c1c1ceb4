//! The ACP face's mappings, as pure functions: a task's [`TaskEvent`]s become `session/update`s,
//! its workflow becomes the session's plan and modes, a blocked call becomes a
//! `session/request_permission` and its answer an [`ApprovalAnswer`]. No I/O here, so each
//! mapping is table-tested (`tests.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, ContentBlock, ContentChunk, Diff, PermissionOption,
    PermissionOptionKind, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    RequestPermissionOutcome, SessionMode, SessionModeState, SessionUpdate, StopReason, ToolCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind, UnstructuredCommandInput, UsageUpdate,
};
use serde_json::Value;

use crate::clip::{clip_line, clip_to};
use crate::engine::{
    ApprovalAnswer, Crumb, Outcome, OutputKind, TaskEvent, TaskSnapshot, TaskState,
};
use crate::workflow::definition::{PhaseEntry, Show, WorkflowDefinition, WorkflowSet};
use crate::workflow::state::BreadcrumbLevel;
use crate::workflow::tools::{class_of, ToolClass};

/// The mode that runs a task without a workflow.
pub const NO_WORKFLOW: &str = "none";

/// The most of a tool's result shown in its `tool_call_update`.
const RESULT_CHARS: usize = 4000;

/// The permission options rawko offers for a blocked call, in this order: their ids are the
/// answers the task service knows.
pub fn permission_options() -> Vec<PermissionOption> {
    vec![
        PermissionOption::new("allow_once", "Allow once", PermissionOptionKind::AllowOnce),
        PermissionOption::new(
            "allow_always",
            "Allow always (this task)",
            PermissionOptionKind::AllowAlways,
        ),
        PermissionOption::new("reject_once", "Reject", PermissionOptionKind::RejectOnce),
        PermissionOption::new(
            "reject_always",
            "Reject always (this task)",
            PermissionOptionKind::RejectAlways,
        ),
    ]
}

/// The task's answer for the client's choice: an unknown option or a cancelled request rejects.
pub fn approval_answer(outcome: &RequestPermissionOutcome) -> ApprovalAnswer {
    match outcome {
        RequestPermissionOutcome::Selected(selected) => match &*selected.option_id.0 {
            "allow_once" => ApprovalAnswer::AllowOnce,
            "allow_always" => ApprovalAnswer::AllowAlways,
            "reject_once" => ApprovalAnswer::RejectOnce,
            "reject_always" => ApprovalAnswer::RejectAlways,
            _ => ApprovalAnswer::Cancelled,
        },
        _ => ApprovalAnswer::Cancelled,
    }
}

/// What the stream says once a blocked call is answered (or not).
pub fn approval_line(answer: ApprovalAnswer, summary: &str) -> Option<String> {
    match answer {
        ApprovalAnswer::AllowOnce | ApprovalAnswer::AllowAlways => None,
        ApprovalAnswer::RejectOnce | ApprovalAnswer::RejectAlways => {
            Some(format!("\n🚫 Rejected: {summary}\n"))
        }
        ApprovalAnswer::Cancelled | ApprovalAnswer::NoApprover => {
            Some(format!("\n🚫 Not approved (cancelled): {summary}\n"))
        }
    }
}

/// The line shown when the task stops waiting for an answer before the client gave one.
pub fn approval_timeout_line(summary: &str) -> String {
    format!("\n⌛ No answer in time, so it does not run: {summary}\n")
}

/// The tool call a permission request is about: the phase and the reason in its title and
/// content, still pending.
pub fn permission_tool_call(
    tool_call_id: &str,
    tool: &str,
    input: &Value,
    phase: &str,
    reason: &str,
    summary: &str,
    workspace: &Path,
) -> ToolCallUpdate {
    let fields = ToolCallUpdateFields::new()
        .title(format!("{summary} — blocked in phase {phase}"))
        .kind(tool_kind(tool))
        .status(ToolCallStatus::Pending)
        .content(vec![reason.to_owned().into()])
        .locations(locations(input, workspace))
        .raw_input(input.clone());
    ToolCallUpdate::new(tool_call_id.to_owned(), fields)
}

/// The ACP kind of a tool rawko knows by name (its own, Claude Code's, pi's).
pub fn tool_kind(tool: &str) -> ToolKind {
    match class_of(tool) {
        ToolClass::Read => ToolKind::Read,
        ToolClass::Search => ToolKind::Search,
        ToolClass::Edit | ToolClass::Write => ToolKind::Edit,
        ToolClass::Execute => ToolKind::Execute,
        ToolClass::Web => ToolKind::Fetch,
        ToolClass::Plan | ToolClass::Agent => ToolKind::Think,
        ToolClass::Workflow => ToolKind::SwitchMode,
        ToolClass::Other => ToolKind::Other,
    }
}

/// The files a call touches, as absolute paths (ACP's rule), from the input's path fields.
pub fn locations(input: &Value, workspace: &Path) -> Vec<ToolCallLocation> {
    ["file_path", "path", "notebook_path"]
        .iter()
        .filter_map(|k| input.get(*k).and_then(Value::as_str))
        .filter(|p| !p.is_empty())
        .take(1)
        .map(|p| {
            let path = PathBuf::from(p);
            let path = if path.is_absolute() {
                path
            } else {
                workspace.join(path)
            };
            let line = input
                .get("offset")
                .and_then(Value::as_u64)
                .and_then(|l| u32::try_from(l).ok());
            ToolCallLocation::new(path).line(line)
        })
        .collect()
}

/// A Write's diffs with the file's current text as their old text (read inside the workspace
/// only, see [`current_text_in`]), so a client shows what changes, not a new file.
fn with_old_text(
    tool: &str,
    mut diffs: Vec<ToolCallContent>,
    workspace: &Path,
) -> Vec<ToolCallContent> {
    if crate::workflow::tools::canonical(tool) == "Write" {
        for d in &mut diffs {
            if let ToolCallContent::Diff(diff) = d {
                if diff.old_text.is_none() {
                    diff.old_text = current_text_in(workspace, &diff.path);
                }
            }
        }
    }
    diffs
}

/// The largest file whose text a Write's diff shows as the old text.
const DIFF_OLD_BYTES: u64 = 256 * 1024;

/// The text of `path` as it is now, if it is a file inside `workspace` (after following
/// symlinks) of at most 256 KiB: the old side of a Write's diff. What is read goes to the
/// user's editor, never to the model.
pub fn current_text_in(workspace: &Path, path: &Path) -> Option<String> {
    let root = std::fs::canonicalize(workspace).ok()?;
    let real = std::fs::canonicalize(path).ok()?;
    if !real.starts_with(&root) {
        return None;
    }
    let meta = std::fs::metadata(&real).ok()?;
    if !meta.is_file() || meta.len() > DIFF_OLD_BYTES {
        return None;
    }
    std::fs::read_to_string(&real).ok()
}

/// The change a Write, Edit or MultiEdit call asks for, as `diff` content blocks (a Write's file
/// shown whole as new text; an Edit's old and new strings); nothing for other tools.
pub fn diffs(tool: &str, input: &Value, workspace: &Path) -> Vec<ToolCallContent> {
    let Some(path) = ["file_path", "path"]
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
        .filter(|p| !p.is_empty())
    else {
        return Vec::new();
    };
    let path = workspace.join(path);
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let edit = |v: &Value| -> Option<ToolCallContent> {
        let new = text(v, "new_string")?;
        Some(ToolCallContent::Diff(
            Diff::new(path.clone(), new).old_text(text(v, "old_string")),
        ))
    };
    match crate::workflow::tools::canonical(tool) {
        "Write" => text(input, "content")
            .map(|content| ToolCallContent::Diff(Diff::new(path.clone(), content)))
            .into_iter()
            .collect(),
        "Edit" => edit(input).into_iter().collect(),
        "MultiEdit" => input
            .get("edits")
            .and_then(Value::as_array)
            .map(|edits| edits.iter().filter_map(edit).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// The slash commands a session offers.
pub fn available_commands() -> Vec<AvailableCommand> {
    vec![
        AvailableCommand::new("next", "Move the workflow to the next phase"),
        AvailableCommand::new("loop", "Go back to the start of the current loop"),
        AvailableCommand::new("status", "Where the task is in its workflow"),
        AvailableCommand::new(
            "cancel-workflow",
            "Cancel the workflow (asks again before it ends)",
        ),
        AvailableCommand::new(
            "interrupt",
            "Stop the countdown or the current turn; the task waits for you",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new("nothing"),
        )),
        AvailableCommand::new(
            "rewind",
            "Take the task and the files it changed back to the start of a phase",
        )
        .input(AvailableCommandInput::Unstructured(
            UnstructuredCommandInput::new("the phase: its id (implement), name or number"),
        )),
    ]
}

/// A slash command of the prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashCommand {
    Step(crate::workflow::step::StepAction),
    Interrupt,
    /// `/rewind PHASE`: the phase as the user named it (empty when they named none).
    Rewind(String),
}

/// The slash command a prompt's text is, if it is one of rawko's.
pub fn slash_command(text: &str) -> Option<SlashCommand> {
    use crate::workflow::step::StepAction;
    let line = text.trim().strip_prefix('/')?;
    let word = line.split_whitespace().next()?;
    Some(match word {
        "rewind" => SlashCommand::Rewind(line["rewind".len()..].trim().to_owned()),
        "next" => SlashCommand::Step(StepAction::Next),
        "loop" => SlashCommand::Step(StepAction::Loop),
        "status" => SlashCommand::Step(StepAction::Status),
        "cancel-workflow" => SlashCommand::Step(StepAction::Cancel),
        "interrupt" => SlashCommand::Interrupt,
        _ => return None,
    })
}

/// The prompt's text: text blocks as they are, resource links by their URI, embedded text
/// resources with their URI and content.
pub fn prompt_text(prompt: &[ContentBlock]) -> String {
    use agent_client_protocol::v1::schema::EmbeddedResourceResource;
    let mut parts = Vec::new();
    for block in prompt {
        match block {
            ContentBlock::Text(t) => parts.push(t.text.clone()),
            ContentBlock::ResourceLink(link) => parts.push(format!("@{}", link.uri)),
            ContentBlock::Resource(r) => {
                if let EmbeddedResourceResource::TextResourceContents(t) = &r.resource {
                    parts.push(format!("<file uri=\"{}\">\n{}\n</file>", t.uri, t.text));
                }
            }
            _ => {}
        }
    }
    parts.join("\n")
}

/// The most characters of a task's description a session's title shows.
const TITLE_CHARS: usize = 120;

/// A session's title: its task's description on one line, clipped.
pub fn session_title(description: &str) -> String {
    clip_line(description.trim(), TITLE_CHARS).into_owned()
}

/// The session's modes: "no workflow" and every workflow a user can run, the current one marked.
pub fn modes(set: &WorkflowSet, current: &str) -> SessionModeState {
    let mut available = vec![SessionMode::new(NO_WORKFLOW, "No workflow")
        .description("The agent works without phases; every tool is allowed".to_owned())];
    for def in set.iter().filter(|d| d.show == Show::User) {
        available.push(
            SessionMode::new(def.key.clone(), def.name.clone()).description(format!(
                "/{} — {} phases",
                def.command_name,
                set.flatten(def).len()
            )),
        );
    }
    SessionModeState::new(current.to_owned(), available)
}

/// The mode a workflow key is, or an error naming the modes there are.
pub fn mode_workflow(set: &WorkflowSet, mode: &str) -> Result<Option<String>, String> {
    if mode == NO_WORKFLOW {
        return Ok(None);
    }
    match set.get(mode).filter(|d| d.show == Show::User) {
        Some(def) => Ok(Some(def.key.clone())),
        None => Err(format!(
            "unknown mode \"{}\"; the modes are {NO_WORKFLOW} and the workflows: {}",
            crate::clip::clip(mode),
            set.iter()
                .filter(|d| d.show == Show::User)
                .map(|d| d.key.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// One phase of the flattened workflow: its breadcrumb text, and its position (0-based) at each
/// level of nesting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseSlot {
    pub text: String,
    pub path: Vec<usize>,
}

/// Every concrete phase of `def`, in order, each with the breadcrumb the task shows there.
pub fn phase_slots(set: &WorkflowSet, def: &WorkflowDefinition) -> Vec<PhaseSlot> {
    fn walk<'a>(
        set: &'a WorkflowSet,
        def: &'a WorkflowDefinition,
        root: &str,
        levels: &mut Vec<BreadcrumbLevel<'a>>,
        path: &mut Vec<usize>,
        out: &mut Vec<PhaseSlot>,
    ) {
        if levels.len() > crate::workflow::definition::MAX_DEPTH {
            return;
        }
        let total = def.phases.len();
        for (i, entry) in def.phases.iter().enumerate() {
            levels.push(BreadcrumbLevel {
                workflow_key: &def.key,
                name: &def.name,
                phase_name: set.entry_name(entry),
                emoji: entry.as_phase().map_or("", |p| p.emoji.as_str()),
                index: i + 1,
                total,
            });
            path.push(i);
            match entry {
                PhaseEntry::Phase(_) => out.push(PhaseSlot {
                    text: crate::workflow::texts::breadcrumb_text(root, levels),
                    path: path.clone(),
                }),
                PhaseEntry::Subworkflow(key) => {
                    if let Some(sub) = set.get(key) {
                        walk(set, sub, root, levels, path, out);
                    }
                }
            }
            path.pop();
            levels.pop();
        }
    }
    let mut out = Vec::new();
    walk(
        set,
        def,
        &def.name,
        &mut Vec::new(),
        &mut Vec::new(),
        &mut out,
    );
    out
}

/// The plan for a position: phases before the current one completed, it in progress, the rest
/// pending; all completed once the task completed. `None` when the position says nothing (no
/// breadcrumb while the task is not complete).
pub fn plan(slots: &[PhaseSlot], crumbs: &[Crumb], state: TaskState) -> Option<Plan> {
    if slots.is_empty() {
        return None;
    }
    let current = if state == TaskState::Complete {
        slots.len()
    } else {
        if crumbs.is_empty() {
            return None;
        }
        let path: Vec<usize> = crumbs.iter().map(|c| c.index.saturating_sub(1)).collect();
        slots.iter().position(|s| s.path == path)?
    };
    let entries = slots
        .iter()
        .enumerate()
        .map(|(i, slot)| {
            let status = match i.cmp(&current) {
                std::cmp::Ordering::Less => PlanEntryStatus::Completed,
                std::cmp::Ordering::Equal => PlanEntryStatus::InProgress,
                std::cmp::Ordering::Greater => PlanEntryStatus::Pending,
            };
            PlanEntry::new(slot.text.clone(), PlanEntryPriority::Medium, status)
        })
        .collect();
    Some(Plan::new(entries))
}

/// What `session/load` replays of a task: its description as the user's message, where it
/// stands as the agent's, and its plan (for a task in a workflow).
pub fn replay(task: &TaskSnapshot, set: &WorkflowSet) -> Vec<SessionUpdate> {
    let mut updates = vec![
        SessionUpdate::UserMessageChunk(ContentChunk::new(ContentBlock::from(
            task.description.clone(),
        ))),
        message(format!(
            "rawko task {}: {}\n",
            task.task_id,
            if task.status_text.is_empty() {
                task.state.as_str()
            } else {
                task.status_text.as_str()
            }
        )),
    ];
    let slots = task
        .workflow
        .as_deref()
        .and_then(|key| set.get(key))
        .map(|def| phase_slots(set, def))
        .unwrap_or_default();
    if let Some(p) = plan(&slots, &task.breadcrumb, task.state) {
        updates.push(SessionUpdate::Plan(p));
    }
    updates
}

/// How a task's events end the prompt turn: `None` while it goes on.
pub fn turn_end(event: &TaskEvent) -> Option<StopReason> {
    match event {
        TaskEvent::Status {
            state: TaskState::Blocked | TaskState::Interrupted,
            ..
        } => Some(StopReason::EndTurn),
        TaskEvent::Finished { outcome, summary } => Some(match outcome {
            Outcome::Cancelled => StopReason::Cancelled,
            Outcome::Complete if summary == crate::machine::MAX_ITERATIONS_SUMMARY => {
                StopReason::MaxTurnRequests
            }
            Outcome::Complete | Outcome::Failed => StopReason::EndTurn,
        }),
        _ => None,
    }
}

fn message(text: impl Into<String>) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(text.into())))
}

fn thought(text: impl Into<String>) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::from(text.into())))
}

/// Turns one task's events into `session/update`s, remembering what it needs across events: the
/// workflow's phases (for the plan) and the last plan sent (sent again only when it changes).
pub struct Mapper {
    set: Arc<WorkflowSet>,
    workspace: PathBuf,
    workflow: Option<String>,
    slots: Vec<PhaseSlot>,
    last_plan: Option<Plan>,
}

impl Mapper {
    pub fn new(set: Arc<WorkflowSet>, workspace: PathBuf) -> Mapper {
        Mapper {
            set,
            workspace,
            workflow: None,
            slots: Vec::new(),
            last_plan: None,
        }
    }

    /// The updates for `event` (an approval request is asked elsewhere; it maps to nothing here).
    pub fn map(&mut self, event: &TaskEvent) -> Vec<SessionUpdate> {
        match event {
            TaskEvent::Status {
                state,
                breadcrumb,
                workflow,
                ..
            } => {
                if let Some(w) = workflow {
                    if self.workflow.as_deref() != Some(w.key.as_str()) {
                        self.workflow = Some(w.key.clone());
                        self.slots = self
                            .set
                            .get(&w.key)
                            .map(|def| phase_slots(&self.set, def))
                            .unwrap_or_default();
                        self.last_plan = None;
                    }
                }
                match plan(&self.slots, breadcrumb, *state) {
                    Some(p) if self.last_plan.as_ref() != Some(&p) => {
                        self.last_plan = Some(p.clone());
                        vec![SessionUpdate::Plan(p)]
                    }
                    _ => Vec::new(),
                }
            }
            TaskEvent::Countdown { text, .. } => vec![message(format!("\n⏳ {text}\n"))],
            TaskEvent::Output {
                kind,
                text,
                tool_call_id,
                tool,
                input,
                is_error,
            } => self.output(
                *kind,
                text,
                tool_call_id.as_deref(),
                tool.as_deref(),
                input.as_ref(),
                *is_error,
            ),
            TaskEvent::Handoff { text, .. } => vec![message(format!("\n{text}\n"))],
            TaskEvent::Subagent { text, .. } => vec![message(format!("\n{text}\n"))],
            TaskEvent::Approval(_) => Vec::new(),
            TaskEvent::Finished { .. } => Vec::new(),
            // ACP's update needs the window: without it there is nothing to show it against.
            TaskEvent::Usage { used, window } => window
                .map(|size| SessionUpdate::UsageUpdate(UsageUpdate::new(*used, size)))
                .into_iter()
                .collect(),
        }
    }

    fn output(
        &self,
        kind: OutputKind,
        text: &str,
        tool_call_id: Option<&str>,
        tool: Option<&str>,
        input: Option<&Value>,
        is_error: Option<bool>,
    ) -> Vec<SessionUpdate> {
        match kind {
            OutputKind::AssistantDelta => vec![message(text)],
            OutputKind::ToolCall => {
                let Some(id) = tool_call_id else {
                    return vec![thought(format!("{text}\n"))];
                };
                let tool = tool.unwrap_or_default();
                let input = input.cloned().unwrap_or(Value::Null);
                vec![SessionUpdate::ToolCall(
                    ToolCall::new(id.to_owned(), text)
                        .kind(tool_kind(tool))
                        .status(ToolCallStatus::InProgress)
                        .content(with_old_text(
                            tool,
                            diffs(tool, &input, &self.workspace),
                            &self.workspace,
                        ))
                        .locations(locations(&input, &self.workspace))
                        .raw_input(input),
                )]
            }
            OutputKind::ToolResult => {
                let Some(id) = tool_call_id else {
                    return vec![thought(format!("{}\n", clip_line(text, 200)))];
                };
                let status = if is_error == Some(true) {
                    ToolCallStatus::Failed
                } else {
                    ToolCallStatus::Completed
                };
                let fields = ToolCallUpdateFields::new()
                    .status(status)
                    .content(vec![clip_to(text, RESULT_CHARS).into_owned().into()]);
                vec![SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                    id.to_owned(),
                    fields,
                ))]
            }
            OutputKind::ContextInjected => {
                let first = text
                    .lines()
                    .map(str::trim)
                    .find(|l| !l.is_empty())
                    .unwrap_or("");
                vec![thought(format!(
                    "rawko injected the phase context ({} lines): {}\n",
                    text.lines().count(),
                    clip_line(first, 80)
                ))]
            }
            OutputKind::Reminder => {
                vec![message(format!("\n🔔 rawko reminds the agent: {text}\n"))]
            }
            OutputKind::HookOutput => vec![thought(format!("hook: {text}\n"))],
            OutputKind::Completion => vec![message(format!("\n{text}\n"))],
            OutputKind::Error => vec![message(format!("\n⚠️ {text}\n"))],
        }
    }
}

#[cfg(test)]
mod old_text_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_writes_diff_shows_the_file_as_it_is_and_only_inside_the_workspace() {
        let root = tempfile::tempdir().unwrap();
        let ws = root.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(ws.join("in.txt"), "before").unwrap();
        std::fs::write(root.path().join("secret.txt"), "outside").unwrap();
        std::os::unix::fs::symlink(root.path().join("secret.txt"), ws.join("link.txt")).unwrap();
        let old = |file: &str| {
            let input = json!({"file_path": file, "content": "after"});
            match with_old_text("Write", diffs("Write", &input, &ws), &ws).pop() {
                Some(ToolCallContent::Diff(d)) => d.old_text,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(old("in.txt").as_deref(), Some("before"));
        assert_eq!(old("new.txt"), None, "a new file has no old text");
        assert_eq!(
            old("link.txt"),
            None,
            "a link out of the workspace is not read"
        );
        assert_eq!(old("../secret.txt"), None);
        // An Edit's diff keeps the strings it replaces.
        let edit = json!({"file_path": "in.txt", "old_string": "be", "new_string": "af"});
        match with_old_text("Edit", diffs("Edit", &edit, &ws), &ws).pop() {
            Some(ToolCallContent::Diff(d)) => assert_eq!(d.old_text.as_deref(), Some("be")),
            other => panic!("{other:?}"),
        }
    }
}

//! Internal types to wire types, and back: the one place where the engine meets the protocol
//! (invariant 2).

use rawko_protocol::to_client::{
    ApprovalOutcome, CountdownParams, OutputKind as WireOutputKind, OutputParams, StatusParams,
    TaskFinishedParams, TaskOutcome,
};
use rawko_protocol::to_server::{
    ChangedFile as WireChangedFile, FileChange, HistoryEntry, PhaseDiffResult, PhaseNode,
    PhaseNodeKind, PhaseStatus, StepAction as WireStepAction, TaskDetail, TaskSummary,
    WorkflowSummary,
};
use rawko_protocol::types::{BreadcrumbItem, TaskAction, TaskId, TaskState as WireTaskState};

use crate::engine::{
    self, ApprovalAnswer, Crumb, Outcome, OutputKind, TaskSnapshot, TaskState, WorkflowName,
};
use crate::workflow::outline::{Mark, NodeKind, OutlineNode};
use crate::workflow::step::StepAction;
use crate::workflow::{Show, WorkflowDefinition, WorkflowSet};

pub fn task_state(state: TaskState) -> WireTaskState {
    match state {
        TaskState::Running => WireTaskState::Running,
        TaskState::WaitingApproval => WireTaskState::WaitingApproval,
        TaskState::Countdown => WireTaskState::Countdown,
        TaskState::Blocked => WireTaskState::Blocked,
        TaskState::Interrupted => WireTaskState::Interrupted,
        TaskState::Complete => WireTaskState::Complete,
        TaskState::Failed => WireTaskState::Failed,
        TaskState::Cancelled => WireTaskState::Cancelled,
    }
}

pub fn output_kind(kind: OutputKind) -> WireOutputKind {
    match kind {
        OutputKind::AssistantDelta => WireOutputKind::AssistantDelta,
        OutputKind::ToolCall => WireOutputKind::ToolCall,
        OutputKind::ToolResult => WireOutputKind::ToolResult,
        OutputKind::ContextInjected => WireOutputKind::ContextInjected,
        OutputKind::Reminder => WireOutputKind::Reminder,
        OutputKind::HookOutput => WireOutputKind::HookOutput,
        OutputKind::Completion => WireOutputKind::Completion,
        OutputKind::Error => WireOutputKind::Error,
    }
}

pub fn outcome(outcome: Outcome) -> TaskOutcome {
    match outcome {
        Outcome::Complete => TaskOutcome::Complete,
        Outcome::Failed => TaskOutcome::Failed,
        Outcome::Cancelled => TaskOutcome::Cancelled,
    }
}

pub fn approval_answer(outcome: ApprovalOutcome) -> ApprovalAnswer {
    match outcome {
        ApprovalOutcome::AllowOnce => ApprovalAnswer::AllowOnce,
        ApprovalOutcome::AllowAlways => ApprovalAnswer::AllowAlways,
        ApprovalOutcome::RejectOnce => ApprovalAnswer::RejectOnce,
        ApprovalOutcome::RejectAlways => ApprovalAnswer::RejectAlways,
        ApprovalOutcome::Cancelled => ApprovalAnswer::Cancelled,
    }
}

pub fn step_action(action: WireStepAction) -> StepAction {
    match action {
        WireStepAction::Next => StepAction::Next,
        WireStepAction::Loop => StepAction::Loop,
        WireStepAction::Status => StepAction::Status,
    }
}

pub fn breadcrumb(crumbs: &[Crumb]) -> Vec<BreadcrumbItem> {
    crumbs
        .iter()
        .map(|c| BreadcrumbItem {
            name: c.name.clone(),
            phase_name: c.phase_name.clone(),
            emoji: c.emoji.clone(),
            index: u32::try_from(c.index).unwrap_or(u32::MAX),
            total: u32::try_from(c.total).unwrap_or(u32::MAX),
        })
        .collect()
}

fn millis(ms: i64) -> u64 {
    u64::try_from(ms).unwrap_or(0)
}

/// A task's event as the notification a client is sent: `rawko/status`, `rawko/countdown`,
/// `rawko/output` (handoffs and subagents too) or `rawko/taskFinished`.
#[derive(Debug)]
pub enum Note {
    Status(StatusParams),
    Countdown(CountdownParams),
    Output(OutputParams),
    Finished(TaskFinishedParams),
}

/// The notification `event` is, numbered `seq`; `None` for what is no notification (an approval,
/// which is a request of its own, and the usage, which rawko's protocol does not carry). The
/// editor's writer (`events.rs`) and the web page's hub both send what this gives.
pub fn note(task_id: &str, seq: u64, event: &engine::TaskEvent) -> Option<Note> {
    use engine::TaskEvent as E;
    Some(match event {
        E::Status {
            state,
            breadcrumb,
            text,
            reason,
            workflow,
            breadcrumb_text,
            phase_index,
            phases_done,
            subagent,
        } => Note::Status({
            let mut status = status(
                task_id,
                seq,
                *state,
                breadcrumb,
                text.clone(),
                reason.clone(),
                workflow.clone(),
                breadcrumb_text.clone(),
                *phase_index,
                *phases_done,
            );
            if let Some(of) = subagent.as_deref() {
                as_subagent(&mut status, of, *state);
            }
            status
        }),
        E::Countdown {
            seconds_left,
            text,
            label,
        } => Note::Countdown(countdown(
            task_id,
            seq,
            *seconds_left,
            text.clone(),
            label.clone(),
        )),
        E::Output {
            kind,
            text,
            tool_call_id,
            tool,
            input,
            is_error,
        } => Note::Output(output(
            task_id,
            seq,
            *kind,
            text.clone(),
            tool_call_id.clone(),
            tool.clone(),
            input.clone(),
            *is_error,
        )),
        E::Handoff { agent, text } => {
            Note::Output(handoff(task_id, seq, agent.clone(), text.clone()))
        }
        E::Subagent {
            agent_type,
            agent_id,
            text,
        } => Note::Output(subagent(
            task_id,
            seq,
            agent_type.clone(),
            agent_id.clone(),
            text.clone(),
        )),
        E::Finished { outcome, summary } => {
            Note::Finished(finished(task_id, seq, *outcome, summary.clone()))
        }
        E::Approval(_) | E::Usage { .. } => return None,
    })
}

#[allow(clippy::too_many_arguments)]
pub fn status(
    task_id: &str,
    seq: u64,
    state: TaskState,
    crumbs: &[Crumb],
    text: String,
    reason: Option<String>,
    workflow: Option<WorkflowName>,
    breadcrumb_text: String,
    phase_index: Option<usize>,
    phases_done: Option<usize>,
) -> StatusParams {
    let has_workflow = workflow.is_some();
    let (workflow, workflow_name) = match workflow {
        Some(w) => (Some(w.key), Some(w.name)),
        None => (None, None),
    };
    StatusParams {
        task_id: TaskId::from(task_id),
        seq,
        state: task_state(state),
        breadcrumb: breadcrumb(crumbs),
        text,
        workflow,
        workflow_name,
        breadcrumb_levels: breadcrumb_levels(crumbs, &breadcrumb_text),
        breadcrumb_text,
        reason,
        phase_index: phase_index.map(wire_index),
        phases_done: phases_done.map(wire_index),
        state_class: task_state(state).class(),
        external: engine::is_external(task_id),
        external_agent: crate::engine::tasks::agent_of_task(task_id),
        external_agent_name: agent_name(task_id),
        state_text: state.words().to_owned(),
        actions: actions(state, engine::is_external(task_id), has_workflow),
        subagent: None,
    }
}

/// The commands a task in `state` accepts, by the rules the task service refuses the others
/// with (`engine/tasks/mod.rs`): a live task takes a message, a cancel and (unless it already
/// stopped for the user) an interrupt; a stopped one (`blocked`, or `interrupted` by a restart)
/// a resume; a failed or interrupted one a retry, a reset anywhere; a task found in the store is
/// rebuilt from its log for those, which an external agent's session cannot be. Only a running
/// task that runs no workflow yet takes one.
pub fn actions(state: TaskState, external: bool, has_workflow: bool) -> Vec<TaskAction> {
    let live = !state.is_finished() && state != TaskState::Interrupted;
    let mut actions = Vec::new();
    if state == TaskState::Blocked || (state == TaskState::Interrupted && !external) {
        actions.push(TaskAction::Resume);
    }
    if matches!(state, TaskState::Failed | TaskState::Interrupted) && !external {
        actions.push(TaskAction::Retry);
    }
    if live || !external {
        actions.push(TaskAction::Reset);
    }
    if live && state != TaskState::Blocked {
        actions.push(TaskAction::Interrupt);
    }
    if live {
        actions.extend([TaskAction::Cancel, TaskAction::Message]);
    }
    if state == TaskState::Running && !has_workflow {
        actions.push(TaskAction::SetWorkflow);
    }
    actions
}

/// The breadcrumb's levels as `breadcrumb_text` shows them, outermost first: the workflow's
/// name, then each level's entry with its `[i/n]` (the emoji only on the concrete phase). A task
/// with no breadcrumb (no workflow, or a finished one) has its text as its one level.
pub fn breadcrumb_levels(crumbs: &[Crumb], breadcrumb_text: &str) -> Vec<String> {
    let Some(outer) = crumbs.first() else {
        return if breadcrumb_text.is_empty() {
            Vec::new()
        } else {
            vec![breadcrumb_text.to_owned()]
        };
    };
    std::iter::once(outer.name.clone())
        .chain(crumbs.iter().map(|c| {
            let emoji = if c.emoji.is_empty() {
                String::new()
            } else {
                format!("{} ", c.emoji)
            };
            format!("{emoji}{} [{}/{}]", c.phase_name, c.index, c.total)
        }))
        .collect()
}

/// An index as an integer on the wire.
/// The name for people of the external agent task `task_id` fronts, if it is an external session.
fn agent_name(task_id: &str) -> Option<String> {
    crate::engine::tasks::agent_of_task(task_id).map(|a| a.display_name().to_owned())
}

fn wire_index(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(u32::MAX)
}

pub fn countdown(
    task_id: &str,
    seq: u64,
    seconds_left: u32,
    text: String,
    label: String,
) -> CountdownParams {
    CountdownParams {
        task_id: TaskId::from(task_id),
        seq,
        seconds_left,
        text,
        label,
    }
}

pub fn finished(task_id: &str, seq: u64, o: Outcome, summary: String) -> TaskFinishedParams {
    TaskFinishedParams {
        task_id: TaskId::from(task_id),
        seq,
        outcome: outcome(o),
        summary,
    }
}

#[allow(clippy::too_many_arguments)]
pub fn output(
    task_id: &str,
    seq: u64,
    kind: OutputKind,
    text: String,
    tool_call_id: Option<String>,
    tool: Option<String>,
    input: Option<serde_json::Value>,
    is_error: Option<bool>,
) -> OutputParams {
    OutputParams {
        task_id: TaskId::from(task_id),
        seq,
        kind: output_kind(kind),
        text,
        tool_call_id,
        tool,
        input,
        is_error,
        agent: None,
        agent_id: None,
    }
}

/// A handoff between agents: an output line of kind `handoff` naming the new agent.
pub fn handoff(task_id: &str, seq: u64, agent: String, text: String) -> OutputParams {
    OutputParams {
        task_id: TaskId::from(task_id),
        seq,
        kind: WireOutputKind::Handoff,
        text,
        tool_call_id: None,
        tool: None,
        input: None,
        is_error: None,
        agent: Some(agent),
        agent_id: None,
    }
}

/// A subagent of an external agent: an output line of kind `subagent` naming its type (`agent`)
/// and id (`agentId`), so the editor can show it under the task's session.
pub fn subagent(
    task_id: &str,
    seq: u64,
    agent_type: String,
    agent_id: String,
    text: String,
) -> OutputParams {
    OutputParams {
        task_id: TaskId::from(task_id),
        seq,
        kind: WireOutputKind::Subagent,
        text,
        tool_call_id: None,
        tool: None,
        input: None,
        is_error: None,
        agent: Some(agent_type),
        agent_id: Some(agent_id),
    }
}

/// A subagent's status: it works in its parent's phase but runs no workflow of its own (no phase
/// tree, no steps): its phase is `subagent.phaseIndex`, its breadcrumb says where it works.
fn as_subagent(
    status: &mut StatusParams,
    of: &crate::engine::subagents::SubagentOf,
    state: TaskState,
) {
    status.subagent = Some(subagent_info(of));
    status.workflow = None;
    status.workflow_name = None;
    status.phase_index = None;
    status.phases_done = None;
    status.actions = actions(state, false, false);
}

/// A subagent as the protocol names it.
pub fn subagent_info(of: &crate::engine::subagents::SubagentOf) -> rawko_protocol::SubagentInfo {
    rawko_protocol::SubagentInfo {
        parent_task_id: TaskId::from(of.parent.as_str()),
        tool_call_id: of.call_id.clone(),
        index: of.index,
        profile: of.profile.clone(),
        name: of.name.clone(),
        label: of.label(),
        phase_index: of.phase_index,
    }
}

pub fn task_summary(s: &TaskSnapshot) -> TaskSummary {
    TaskSummary {
        task_id: TaskId::from(s.task_id.as_str()),
        description: s.description.clone(),
        // A subagent runs no workflow of its own (see `as_subagent`).
        workflow: s.workflow.clone().filter(|_| s.subagent.is_none()),
        state: task_state(s.state),
        breadcrumb_text: s.breadcrumb_text.clone(),
        started_at: millis(s.started_at),
        updated_at: Some(millis(s.updated_at)),
        state_class: task_state(s.state).class(),
        external: engine::is_external(&s.task_id),
        external_agent: crate::engine::tasks::agent_of_task(&s.task_id),
        external_agent_name: agent_name(&s.task_id),
        breadcrumb_levels: breadcrumb_levels(&s.breadcrumb, &s.breadcrumb_text),
        state_text: s.state.words().to_owned(),
        actions: actions(
            s.state,
            engine::is_external(&s.task_id),
            s.workflow.is_some() && s.subagent.is_none(),
        ),
        subagent: s.subagent.as_deref().map(subagent_info),
    }
}

pub fn task_detail(s: &TaskSnapshot, phases: &[OutlineNode]) -> TaskDetail {
    TaskDetail {
        task_id: TaskId::from(s.task_id.as_str()),
        description: s.description.clone(),
        // A subagent runs no workflow of its own (see `as_subagent`).
        workflow: s.workflow.clone().filter(|_| s.subagent.is_none()),
        state: task_state(s.state),
        breadcrumb_text: s.breadcrumb_text.clone(),
        started_at: millis(s.started_at),
        updated_at: Some(millis(s.updated_at)),
        state_class: task_state(s.state).class(),
        external: engine::is_external(&s.task_id),
        external_agent: crate::engine::tasks::agent_of_task(&s.task_id),
        external_agent_name: agent_name(&s.task_id),
        breadcrumb_levels: breadcrumb_levels(&s.breadcrumb, &s.breadcrumb_text),
        state_text: s.state.words().to_owned(),
        actions: actions(
            s.state,
            engine::is_external(&s.task_id),
            s.workflow.is_some() && s.subagent.is_none(),
        ),
        subagent: s.subagent.as_deref().map(subagent_info),
        breadcrumb: breadcrumb(&s.breadcrumb),
        history: s
            .history
            .iter()
            .enumerate()
            .map(|(i, h)| HistoryEntry {
                seq: i as u64 + 1,
                at: millis(h.at),
                event: h.event.clone(),
                state_before: h.state_before.clone(),
                state_after: h.state_after.clone(),
                guard: h.guard.clone(),
                detail: h.detail.clone(),
            })
            .collect(),
        phases: phases.iter().map(phase_node).collect(),
    }
}

pub fn phase_node(n: &OutlineNode) -> PhaseNode {
    PhaseNode {
        kind: match n.kind {
            NodeKind::Scope => PhaseNodeKind::Scope,
            NodeKind::Phase => PhaseNodeKind::Phase,
        },
        index: n.index.map(wire_index),
        name: n.name.clone(),
        emoji: Some(n.emoji.clone()).filter(|e| !e.is_empty()),
        depth: wire_index(n.depth),
        status: match n.mark {
            Mark::Done => PhaseStatus::Done,
            Mark::Current => PhaseStatus::Current,
            Mark::Todo => PhaseStatus::Todo,
        },
        breadcrumb_text: n.breadcrumb_text.clone(),
        id: Some(n.id.clone()).filter(|id| !id.is_empty()),
        has_checkpoint: n.has_checkpoint,
    }
}

pub fn phase_diff(d: crate::engine::tasks::PhaseDiff) -> PhaseDiffResult {
    use crate::checkpoint::FileStatus;
    PhaseDiffResult {
        diff: d.diff,
        files: d
            .files
            .into_iter()
            .map(|f| WireChangedFile {
                path: f.path,
                status: match f.status {
                    FileStatus::Added => FileChange::Added,
                    FileStatus::Modified => FileChange::Modified,
                    FileStatus::Deleted => FileChange::Deleted,
                },
            })
            .collect(),
        from: d.from,
        to: d.to,
    }
}

pub fn workflow_summary(set: &WorkflowSet, def: &WorkflowDefinition) -> WorkflowSummary {
    WorkflowSummary {
        key: def.key.clone(),
        name: def.name.clone(),
        command_name: def.command_name.clone(),
        phase_count: wire_index(set.flatten(def).len()),
        outer_phase_count: wire_index(def.phases.len()),
        show: match def.show {
            Show::User => rawko_protocol::files::Show::User,
            Show::Workflows => rawko_protocol::files::Show::Workflows,
        },
        source: def.dir.display().to_string(),
    }
}

pub fn diagnostic(
    d: &crate::workflow::Diagnostic,
) -> rawko_protocol::to_server::WorkflowDiagnostic {
    use crate::workflow::Severity;
    rawko_protocol::to_server::WorkflowDiagnostic {
        path: d.path.display().to_string(),
        line: d.line.and_then(|l| u32::try_from(l).ok()),
        column: d.column.and_then(|c| u32::try_from(c).ok()),
        severity: match d.severity {
            Severity::Error => rawko_protocol::to_server::Severity::Error,
            Severity::Warning => rawko_protocol::to_server::Severity::Warning,
        },
        workflow: d.workflow.clone(),
        message: d.message.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crumb(name: &str, phase_name: &str, emoji: &str, index: usize, total: usize) -> Crumb {
        Crumb {
            name: name.to_owned(),
            phase_name: phase_name.to_owned(),
            emoji: emoji.to_owned(),
            index,
            total,
        }
    }

    #[test]
    fn the_levels_are_the_breadcrumb_text_cut_where_it_joins_them() {
        let text = "Release > Code Review [2/3] > 🔍 Static Analysis [1/2]";
        let crumbs = [
            crumb("Release", "Code Review", "", 2, 3),
            crumb("Code Review", "Static Analysis", "🔍", 1, 2),
        ];
        let levels = breadcrumb_levels(&crumbs, text);
        assert_eq!(
            levels,
            ["Release", "Code Review [2/3]", "🔍 Static Analysis [1/2]"]
        );
        assert_eq!(levels.join(" > "), text);
        // No workflow (or a finished one): the line is the one level; nothing at all: none.
        assert_eq!(
            breadcrumb_levels(&[], "tidy the README"),
            ["tidy the README"]
        );
        assert!(breadcrumb_levels(&[], "").is_empty());
    }

    #[test]
    fn a_status_says_its_class_its_words_and_whether_it_is_an_external_session() {
        let crumbs = [crumb("Feature", "Plan", "📋", 1, 4)];
        let status = |id: &str, state| {
            status(
                id,
                1,
                state,
                &crumbs,
                format!("Feature > 📋 Plan [1/4]{}", state.words()),
                None,
                None,
                "Feature > 📋 Plan [1/4]".to_owned(),
                Some(0),
                Some(0),
            )
        };
        let waiting = status("task-1", TaskState::WaitingApproval);
        assert_eq!(waiting.state_class, rawko_protocol::StateClass::Waiting);
        assert_eq!(waiting.state_text, " — waiting for approval");
        assert_eq!(
            waiting.text,
            format!("{}{}", waiting.breadcrumb_text, waiting.state_text)
        );
        assert!(!waiting.external);
        let external = status("ext-1767139200000-1", TaskState::Running);
        assert!(external.external);
        assert_eq!(external.state_class, rawko_protocol::StateClass::Busy);
        assert_eq!(external.state_text, "");
    }

    #[test]
    fn each_state_offers_the_commands_the_service_takes_there() {
        use TaskAction::*;
        let own = |state| actions(state, false, true);
        assert_eq!(own(TaskState::Running), [Reset, Interrupt, Cancel, Message]);
        assert_eq!(
            own(TaskState::WaitingApproval),
            [Reset, Interrupt, Cancel, Message]
        );
        assert_eq!(
            own(TaskState::Countdown),
            [Reset, Interrupt, Cancel, Message]
        );
        assert_eq!(own(TaskState::Blocked), [Resume, Reset, Cancel, Message]);
        assert_eq!(own(TaskState::Interrupted), [Resume, Retry, Reset]);
        assert_eq!(own(TaskState::Failed), [Retry, Reset]);
        assert_eq!(own(TaskState::Complete), [Reset]);
        assert_eq!(own(TaskState::Cancelled), [Reset]);
        // An external agent's session is never rebuilt from its log, and takes a workflow while
        // it runs none.
        assert_eq!(
            actions(TaskState::Running, true, false),
            [Reset, Interrupt, Cancel, Message, SetWorkflow]
        );
        assert_eq!(actions(TaskState::Interrupted, true, false), []);
        assert_eq!(actions(TaskState::Failed, true, true), []);
        let status = status(
            "task-1",
            1,
            TaskState::Blocked,
            &[],
            String::new(),
            None,
            None,
            String::new(),
            None,
            None,
        );
        assert_eq!(status.actions, [Resume, Reset, Cancel, Message]);
    }
}

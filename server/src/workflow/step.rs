//! The `workflow_step` tool the agent calls to move through its workflow: its name, the JSON
//! Schema of its parameters, and what each action does and answers (pi-workflows' texts).

use serde_json::{json, Value};

use super::definition::WorkflowSet;
use super::state::{CancelOutcome, Movement, NavError, WorkflowState};
use super::texts::iso_timestamp;

pub const TOOL_NAME: &str = "workflow_step";

pub const DESCRIPTION: &str = "Show current workflow status, advance to the next phase, loop back to the start of the current scope, or cancel the active workflow. Use this to coordinate any configured workflow.";

/// One line per action, for a system prompt.
pub const GUIDELINES: [&str; 4] = [
    "Use workflow_step with action='next' when you finish a phase and want to advance.",
    "Use workflow_step with action='status' to check current workflow state.",
    "Use workflow_step with action='cancel' to abort the current workflow.",
    "Use workflow_step with action='loop' to restart the current scope from the beginning.",
];

const NO_ACTIVE: &str = "No active workflow. Use /workflow {name} {description} to start one.";

/// The JSON Schema of the tool's input.
pub fn parameters_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "enum": ["next", "status", "cancel", "loop"],
                "description": "\"next\" to advance to the next phase, \"status\" to check current state, \"cancel\" to abort the workflow, \"loop\" to restart the current scope from phase 0"
            },
            "summary": {
                "type": "string",
                "description": "Optional summary of what was accomplished in the current phase"
            }
        },
        "required": ["action"],
        "additionalProperties": false
    })
}

/// What the agent asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepAction {
    Next,
    Loop,
    Status,
    Cancel,
}

impl StepAction {
    pub fn parse(action: &str) -> Option<Self> {
        match action {
            "next" => Some(Self::Next),
            "loop" => Some(Self::Loop),
            "status" => Some(Self::Status),
            "cancel" => Some(Self::Cancel),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Next => "next",
            Self::Loop => "loop",
            Self::Status => "status",
            Self::Cancel => "cancel",
        }
    }
}

/// How a result should be shown (pi-workflows' `resultType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultType {
    Normal,
    Error,
    Cancel,
    Complete,
}

/// The tool's answer, and the new state when the action changed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepResult {
    pub text: String,
    pub result_type: ResultType,
    pub state: Option<WorkflowState>,
}

impl StepResult {
    fn error(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            result_type: ResultType::Error,
            state: None,
        }
    }
}

/// Reads the tool's input as the agent sent it; an error is a text to send back to the agent.
pub fn parse_input(input: &Value) -> Result<StepAction, String> {
    let action = input.get("action").ok_or_else(|| {
        "workflow_step needs an \"action\": one of next, status, cancel, loop".to_owned()
    })?;
    let action = action.as_str().ok_or_else(|| {
        format!(
            "workflow_step's \"action\" must be a string, got {}",
            crate::clip::clip_message(&action.to_string())
        )
    })?;
    StepAction::parse(action)
        .ok_or_else(|| format!("Unknown action: {}", crate::clip::clip(action)))
}

/// Runs one `workflow_step` call against the task's state.
pub fn execute(state: Option<&WorkflowState>, set: &WorkflowSet, action: StepAction) -> StepResult {
    let Some(state) = state.filter(|s| s.active) else {
        let text = match action {
            StepAction::Loop => "No active workflow to loop.",
            StepAction::Cancel => "No active workflow to cancel.",
            _ => NO_ACTIVE,
        };
        return StepResult {
            text: text.to_owned(),
            result_type: ResultType::Normal,
            state: None,
        };
    };
    match action {
        StepAction::Status => status(state, set),
        StepAction::Next => next(state, set),
        StepAction::Loop => looped(state, set),
        StepAction::Cancel => cancel(state),
    }
}

fn stale_text() -> &'static str {
    "The workflow configuration for this session is no longer available. Use workflow_step with action='cancel' to clear it, or reload the workflow definitions."
}

/// The `status` text (also what `rawko/step {action: "status"}` answers).
pub fn status(state: &WorkflowState, set: &WorkflowSet) -> StepResult {
    let Some(active) = state.resolve(set) else {
        return StepResult::error(stale_text());
    };
    let phase = active.current_phase;
    let position = format!("[{}/{}]", active.phase_index + 1, active.scope.phases.len());
    let mut lines = vec![
        format!(
            "**Workflow:** {} ({})",
            active.definition.name, state.workflow_key
        ),
        format!("**Task ID:** {}", state.task_id),
        format!("**Description:** {}", state.task_description),
    ];
    if active.is_nested() {
        lines.push(format!("**Path:** {}", active.path_names()));
        lines.push(format!(
            "**Phase:** {} {} {position} (step {})",
            phase.emoji, phase.name, state.global_step_count
        ));
    } else {
        lines.push(format!(
            "**Phase:** {} {} {position}",
            phase.emoji, phase.name
        ));
    }
    lines.push(format!("**Started:** {}", iso_timestamp(state.started_at)));
    lines.push(String::new());
    lines.push("**What to do:**".to_owned());
    lines.push(active.instructions(set));
    lines.push(String::new());
    let profiles = if phase.available_profiles.is_empty() {
        "(none)".to_owned()
    } else {
        phase.available_profiles.join(", ")
    };
    lines.push(format!("**Available profiles:** {profiles}"));
    StepResult {
        text: lines.join("\n"),
        result_type: ResultType::Normal,
        state: None,
    }
}

fn next(state: &WorkflowState, set: &WorkflowSet) -> StepResult {
    let advanced = match state.advance(set) {
        Ok(a) => a,
        Err(NavError::Stale(key)) => {
            return StepResult::error(format!("Workflow definition '{key}' not found."))
        }
        Err(e) => return StepResult::error(e.to_string()),
    };
    let from = advanced.from;
    let new = advanced.state;
    if advanced.movement == Movement::Done {
        return StepResult {
            text: format!("✓ Advanced: {from} → DONE\n\n🎉 **All phases complete!**"),
            result_type: ResultType::Complete,
            state: Some(new),
        };
    }
    let Some(active) = new.resolve(set) else {
        return StepResult::error("Error: could not resolve active workflow after advance.");
    };
    let verb = match advanced.movement {
        Movement::Entered => {
            format!("Entered subworkflow '{}'", active.scope.name)
        }
        Movement::Exited => format!("Exited subworkflow, returning to {}", active.path_names()),
        _ => "Advanced".to_owned(),
    };
    let phase = active.current_phase;
    let previous = from.clone();
    let upcoming = active.next_entry.map_or("DONE", |e| set.entry_name(e));
    let text = format!(
        "✓ {verb}: {from} → {} {}\nPrevious: {previous} | Current: {} {} | Next: {upcoming}\n\n**What to do in {}:**\n{}",
        phase.emoji,
        phase.name,
        phase.emoji,
        phase.name,
        phase.name,
        active.instructions(set)
    );
    drop(active);
    StepResult {
        text,
        result_type: ResultType::Normal,
        state: Some(new),
    }
}

fn looped(state: &WorkflowState, set: &WorkflowSet) -> StepResult {
    let new = match state.loop_scope(set) {
        Ok(s) => s,
        Err(NavError::NotLoopable) => {
            return StepResult::error(format!("⚠️ {}", NavError::NotLoopable));
        }
        Err(NavError::Stale(key)) => {
            return StepResult::error(format!("Workflow definition '{key}' not found."))
        }
        Err(e) => return StepResult::error(e.to_string()),
    };
    let Some(active) = new.resolve(set) else {
        return StepResult::error("Error: could not resolve active workflow after loop.");
    };
    // The scope that was looped is the innermost one of the old state.
    let scope_name = state
        .innermost()
        .and_then(|s| set.get(&s.workflow_key))
        .map_or("workflow", |d| d.name.as_str());
    let phase = active.current_phase;
    let text = format!(
        "🔄 Looped '{scope_name}' back to: {} {}\n\n**What to do in {}:**\n{}",
        phase.emoji,
        phase.name,
        phase.name,
        active.instructions(set)
    );
    drop(active);
    StepResult {
        text,
        result_type: ResultType::Normal,
        state: Some(new),
    }
}

fn cancel(state: &WorkflowState) -> StepResult {
    match state.cancel() {
        Ok(CancelOutcome::ConfirmationNeeded(s)) => StepResult {
            text: format!(
                "⚠️ **Confirm cancellation** of workflow \"{}\"?\nCall workflow_step with action='cancel' again to confirm. This cannot be undone.",
                state.task_description
            ),
            result_type: ResultType::Cancel,
            state: Some(s),
        },
        Ok(CancelOutcome::Cancelled(s)) => StepResult {
            text: format!("Workflow cancelled: \"{}\"", state.task_description),
            result_type: ResultType::Cancel,
            state: Some(s),
        },
        Err(e) => StepResult::error(e.to_string()),
    }
}

//! The phase gate: may this tool run in the current phase? A phase's whitelist or blacklist
//! decides; `workflow_step` always runs, so an agent can always move on; tool names compare
//! case-insensitively (`bash` is `Bash`).

use super::definition::{ToolPolicy, WorkflowSet};
use super::state::WorkflowState;
use super::step::TOOL_NAME as WORKFLOW_STEP;
use super::texts::{resolve_template, DEFAULT_BLOCK_REASON};

/// The gate's answer for one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateDecision {
    Allow,
    /// Blocked; `reason` is what the agent sees as the tool result when nobody overrides it.
    Block {
        reason: String,
        phase: String,
    },
}

impl GateDecision {
    pub fn is_allowed(&self) -> bool {
        matches!(self, GateDecision::Allow)
    }
}

/// Decides whether `tool` may run in the state's current phase. With no active workflow, or a
/// state that no longer matches the definitions, nothing is restricted (pi-workflows' rule).
pub fn check(state: Option<&WorkflowState>, set: &WorkflowSet, tool: &str) -> GateDecision {
    if tool.eq_ignore_ascii_case(WORKFLOW_STEP) {
        return GateDecision::Allow;
    }
    let Some((root, phase)) = state.and_then(|s| s.current_phase(set)) else {
        return GateDecision::Allow;
    };
    let Some(policy) = &phase.tools else {
        return GateDecision::Allow;
    };
    if policy.allows(tool) {
        return GateDecision::Allow;
    }
    let allowed = match policy {
        ToolPolicy::Whitelist(list) if list.is_empty() => "(none but workflow_step)".to_owned(),
        other => other.describe(),
    };
    let vars = [
        ("workflowName", root.name.as_str()),
        ("phaseName", &phase.name),
        ("toolName", tool),
        ("allowedTools", &allowed),
    ];
    let template = root
        .block_reason_template
        .as_deref()
        .unwrap_or(DEFAULT_BLOCK_REASON);
    GateDecision::Block {
        reason: resolve_template(template, &vars),
        phase: phase.name.clone(),
    }
}

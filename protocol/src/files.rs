//! The formats of the workflow files users write: `workflow.yaml` and the frontmatter of each phase
//! file. They are pi-workflows' formats unchanged, plus rawko's extra phase key `agent`. These
//! types exist to render `workflow.schema.json` and `phase.schema.json`, which editors use to
//! complete and check the files; unknown keys are allowed, as rawko ignores them.

use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};

/// Who may start a workflow.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Show {
    /// Users may start it; it is listed and needs `commandName` and `initialMessage`.
    #[default]
    User,
    /// It only runs as a subworkflow of another workflow and cannot be started directly.
    Workflows,
}

/// A workflow: the `workflow.yaml` in a directory whose name is the workflow's key. Each phase is a
/// Markdown file next to it (frontmatter + instructions) or another workflow run as a subworkflow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = require_command_unless_subworkflow_only)]
pub struct WorkflowFile {
    /// The workflow's display name, shown first in the breadcrumb.
    #[schemars(length(min = 1))]
    pub name: String,
    /// The short name users start it by, e.g. from the editor's workflow picker.
    /// Required unless `show` is `workflows`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    #[schemars(pattern(r"^[a-zA-Z0-9_-]+$"))]
    pub command_name: Option<String>,
    /// The first message sent to the agent when the workflow starts; a template with
    /// `{workflowName}`, `{workflowKey}`, `{description}`, `{firstPhaseId}`, `{firstPhaseName}`,
    /// `{firstPhaseEmoji}` and `{firstPhaseProfiles}`. Required unless `show` is `workflows`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub initial_message: Option<String>,
    /// The phases in order: a phase file's path relative to this directory (it must stay inside the
    /// workflows root), or `{subworkflow: KEY}` to run the whole of another workflow there.
    #[schemars(length(min = 1))]
    pub phases: Vec<PhaseEntry>,
    /// `user` (the default): users may start it. `workflows`: it only runs as a subworkflow.
    #[serde(default)]
    pub show: Show,
    /// Whether `workflow_step loop` may go back to the start of this workflow's phases.
    #[serde(default = "default_loopable")]
    pub loopable: bool,
    /// Put before the task's description to name the session. Default `Workflow: `.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    #[schemars(extend("default" = "Workflow: "))]
    pub session_name_prefix: Option<String>,
    /// The session name's description is cut to this many characters (and `…` appended).
    /// Default 50.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    #[schemars(extend("default" = 50))]
    pub session_name_max_length: Option<u32>,
    /// Opens the context injected before every agent turn, in place of the built-in text; a
    /// template with the workflow's and the phase's variables.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub role_instruction: Option<String>,
    /// Closes the context injected before every agent turn, reminding the agent to call
    /// `workflow_step`, in place of the built-in text; a template.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub advance_reminder: Option<String>,
    /// Tells the agent why a tool call was blocked, in place of the built-in text; a template with
    /// `{workflowName}`, `{phaseName}`, `{toolName}` and `{allowedTools}`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub block_reason_template: Option<String>,
    /// Shown when the workflow completes (and when it is cancelled), in place of the built-in text;
    /// a template with `{workflowName}`, `{taskDescription}`, `{taskId}` and `{phaseCount}`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub completion_message: Option<String>,
    /// Sent when the agent stops before the workflow is done and the countdown ran out, in place of
    /// the built-in text; a template with `{workflowName}`, `{phaseName}`, `{phaseEmoji}`,
    /// `{phaseInstructions}`, `{taskDescription}`, `{taskId}` and `{workflowKey}`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub not_done_reminder: Option<String>,
}

fn default_loopable() -> bool {
    true
}

/// `commandName` and `initialMessage` are required unless `show` is `workflows`.
fn require_command_unless_subworkflow_only(schema: &mut Schema) {
    schema.insert(
        "if".to_owned(),
        serde_json::json!({
            "properties": {"show": {"const": "workflows"}},
            "required": ["show"]
        }),
    );
    schema.insert(
        "else".to_owned(),
        serde_json::json!({"required": ["commandName", "initialMessage"]}),
    );
}

/// One entry of a workflow's `phases`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum PhaseEntry {
    /// The path of a phase file (Markdown with frontmatter), relative to the workflow's directory.
    File(String),
    /// Another workflow, run whole as this phase.
    Subworkflow(SubworkflowRef),
}

/// `{subworkflow: KEY}`: the whole of another workflow runs as this phase.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubworkflowRef {
    /// The key (directory name) of the workflow to run.
    #[schemars(length(min = 1))]
    pub subworkflow: String,
}

/// The YAML frontmatter of a phase file. The Markdown body after it is the phase's instructions, a
/// template, and must not be empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PhaseFrontmatter {
    /// The phase's id, unique within its workflow.
    #[schemars(length(min = 1))]
    pub id: String,
    /// The phase's display name, e.g. `Test`.
    #[schemars(length(min = 1))]
    pub name: String,
    /// The emoji shown before the name in the breadcrumb, e.g. `🧪`.
    #[schemars(length(min = 1))]
    pub emoji: String,
    /// The tools the agent may use in this phase: a whitelist or a blacklist, not both. Without it
    /// every tool may run. `workflow_step` is always allowed.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub tools: Option<ToolList>,
    /// Profiles the agent may take on in this phase; listed in the injected context.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub available_profiles: Option<Vec<String>>,
    /// rawko's extension: the agent that runs this phase; the task's agent when absent.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub agent: Option<String>,
}

/// The tools of a phase: either the only ones allowed, or the ones refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ToolList {
    /// Only these tools (and `workflow_step`) may run.
    Whitelist(Vec<String>),
    /// Every tool except these may run.
    Blacklist(Vec<String>),
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn workflow_file_round_trips_with_defaults_filled_in() {
        let text = json!({
            "name": "Feature",
            "commandName": "feature",
            "initialMessage": "Start {workflowName}: {description}",
            "phases": ["explore.md", {"subworkflow": "review"}, "../_shared/test.md"],
            "sessionNameMaxLength": 40
        });
        let file: WorkflowFile = serde_json::from_value(text.clone()).unwrap();
        assert_eq!(file.show, Show::User);
        assert!(file.loopable);
        assert_eq!(
            file.phases[1],
            PhaseEntry::Subworkflow(SubworkflowRef {
                subworkflow: "review".to_owned()
            })
        );
        let mut expected = text;
        expected["show"] = json!("user");
        expected["loopable"] = json!(true);
        assert_eq!(serde_json::to_value(&file).unwrap(), expected);
    }

    #[test]
    fn phase_frontmatter_round_trips() {
        let text = json!({
            "id": "explore",
            "name": "Explore",
            "emoji": "🔍",
            "tools": {"whitelist": ["Read", "Grep"]},
            "availableProfiles": ["researcher"],
            "agent": "reader"
        });
        let phase: PhaseFrontmatter = serde_json::from_value(text.clone()).unwrap();
        assert_eq!(
            phase.tools,
            Some(ToolList::Whitelist(vec!["Read".into(), "Grep".into()]))
        );
        assert_eq!(serde_json::to_value(&phase).unwrap(), text);
    }

    #[test]
    fn a_phase_cannot_have_both_lists() {
        let text = json!({
            "id": "x",
            "name": "X",
            "emoji": "❌",
            "tools": {"whitelist": ["Read"], "blacklist": ["Write"]}
        });
        assert!(serde_json::from_value::<PhaseFrontmatter>(text).is_err());
    }
}

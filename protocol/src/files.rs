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
    /// rawko's extension: the tools the phase's subagents (`delegate_to_subagents`) may use, a
    /// whitelist or a blacklist like `tools`. Without it they may use any tool (pi's rule).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub subagent_tools: Option<ToolList>,
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

/// `~/.config/rawko/config.json` or `<workspace>/.rawko/config.json` (docs/configuration.md,
/// docs/hooks.md). Every key is optional; unknown keys are ignored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigFile {
    /// How long a blocked tool call waits for the user before it counts as rejected (seconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.001, max = 86400))]
    pub approval_timeout_seconds: Option<f64>,
    /// How many not-done reminders (and blocking Stop hooks) may follow each other before the
    /// task fails.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_reminders: Option<u32>,
    /// The countdown before a not-done reminder, in ticks (0 reminds at once).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 60))]
    pub countdown_seconds: Option<u32>,
    /// The length of one countdown tick in milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 60000))]
    pub countdown_tick_millis: Option<u32>,
    /// The default time limit of a Bash tool call (seconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bash_timeout_seconds: Option<f64>,
    /// How long `rawko acp` waits for the editor's answer to a file or terminal request
    /// (`fs/*`, `terminal/*`) before the tool call fails (seconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0.001, max = 86400))]
    pub editor_request_seconds: Option<f64>,
    /// The orchestrator's limit of agent runs per task.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_iterations: Option<u32>,
    /// Failures in a row that end a task.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_failures: Option<u32>,
    /// The agent a task starts with when the user names none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_agent: Option<String>,
    /// The workflow an external agent's (or an ACP) session runs when none is named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_workflow: Option<String>,
    /// Who decides which agent runs next: `{"type": "deterministic"}` or
    /// `{"type": "model", "provider": …, "script": …, "model": …}`. From a workspace's file only
    /// once the workspace is trusted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arbiter: Option<serde_json::Value>,
    /// The model providers in order of preference: `{"name": "anthropic"|"openai"|"scripted",
    /// "model": …, "baseUrl": …, "script": …}`, or an ACP agent: `{"name": "acp", "command": …,
    /// "args": […], "env": {…}, "stallSeconds": …, "turnSeconds": …}`. From a workspace's file
    /// only once the workspace is trusted: they choose what runs and where the key goes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub providers: Option<Vec<serde_json::Value>>,
    /// API keys by provider name. From a workspace's file only once the workspace is trusted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_keys: Option<std::collections::BTreeMap<String, String>>,
    /// How long a provider that stays rate limited is left alone (seconds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit_cooldown_seconds: Option<f64>,
    /// The kernel sandbox of Bash and of an ACP agent's own process (docs/configuration.md,
    /// "Bash's sandbox"): `"auto"` (the default), `"required"`, `"off"`, or the mode with more
    /// paths Bash (and the agent) may read and write. Read from `~/.config/rawko/config.json` and
    /// the editor's settings, not from a workspace's file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxSetting>,
    /// Where `rawko web` announces an approval that starts waiting, so a phone can be told
    /// (docs/web.md): a JSON POST in ntfy's format. Read from `~/.config/rawko/config.json` and
    /// the editor's settings, not from a workspace's file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notify: Option<NotifySetting>,
    /// Hooks by event name (PreExecutionStart, PostExecutionStart, PreExecutionEnd,
    /// PostExecutionEnd, Stop, SessionStart, UserPromptSubmit, PreToolUse, PostToolUse,
    /// SessionEnd, PhaseEnter, PhaseExit, WorkflowComplete, ApprovalRequested, ApprovalResolved):
    /// AutoAgent's flat hooks or Claude Code's matcher groups.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hooks: Option<std::collections::BTreeMap<String, Vec<HookEntry>>>,
}

/// The `notify` key of a config file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NotifySetting {
    /// The URL the JSON is POSTed to, e.g. `https://ntfy.sh` (with `topic`) or a webhook of
    /// your own.
    pub webhook: String,
    /// The ntfy topic the message goes to (the body's `topic`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
}

/// The `sandbox` key of a config file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SandboxSetting {
    /// Just the mode.
    Mode(SandboxMode),
    /// The mode and more paths.
    #[serde(rename_all = "camelCase")]
    Paths {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mode: Option<SandboxMode>,
        /// More paths Bash may read: absolute, or `~/…`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        allow_read: Option<Vec<String>>,
        /// More paths Bash may write (and read): absolute, or `~/…`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        allow_write: Option<Vec<String>>,
        /// More paths an ACP agent's own process (the `acp` provider) may read: absolute, or
        /// `~/…`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_read: Option<Vec<String>>,
        /// More paths an ACP agent's own process may write (and read), beside its own state
        /// directories and temporary directory: absolute, or `~/…`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agent_write: Option<Vec<String>>,
        /// Whether confined commands (Bash, an ACP agent) may make Unix-domain sockets. Off by
        /// default: Landlock does not govern connecting to a socket by path, and a server behind
        /// one (D-Bus, Docker, tmux, an ssh or gpg agent) could run or read things for them.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        unix_sockets: Option<bool>,
    },
}

/// When Bash runs confined by Landlock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SandboxMode {
    /// Where the kernel has Landlock; elsewhere Bash runs unconfined and the task says so.
    Auto,
    /// Landlock or no Bash.
    Required,
    /// No Landlock (what a call starts still ends with it).
    Off,
}

/// One entry of a `hooks` list: a Claude Code matcher group, or one AutoAgent hook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum HookEntry {
    /// Claude Code's shape: a matcher and its hooks (`timeout` in seconds).
    Group {
        /// Tool names (`Bash|Write`), `*`, or a regular expression.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        matcher: Option<String>,
        hooks: Vec<HookSpec>,
    },
    /// AutoAgent's shape: one hook (`timeout` in milliseconds).
    Hook(HookSpec),
}

/// One hook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookSpec {
    /// `command` (the default), `http`, `git-commit` or `git-push`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<HookType>,
    /// The shell command (for `command`); `{{var}}` is replaced by a reference to an environment variable holding the value, so values never become shell text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The time limit: milliseconds in AutoAgent's shape, seconds in Claude Code's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<f64>,
    /// A timeout, a crash or a command that cannot start blocks instead of being reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_closed: Option<bool>,
    /// `git-commit`: the commit message template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `git-commit`: commit with `--no-verify`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_verify: Option<bool>,
    /// `git-push`: the remote (default `origin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// `http`: the http or https URL the event's JSON is POSTed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `http`: headers to send; `$NAME` and `${NAME}` in a value are put in only for the variables `allowedEnvVars` lists, any other reads as empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<std::collections::BTreeMap<String, String>>,
    /// `http`: the environment variables the header values may name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_env_vars: Option<Vec<String>>,
    /// Claude Code's permission-rule filter, on tool events only: the hook runs only for the calls it matches (`Bash(git *)`, `Write(src/**)`, `Read`).
    #[serde(rename = "if", default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// `command` and `http`: run in the background; the event does not wait and the answer is not read.
    #[serde(rename = "async", default, skip_serializing_if = "Option::is_none")]
    pub background: Option<bool>,
    /// Run at most once per task (Claude Code's session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub once: Option<bool>,
}

/// The kinds of hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HookType {
    Command,
    Http,
    GitCommit,
    GitPush,
}

/// An agent file in rawko-sdk's format (`.rawko/agents/NAME.yaml`, or the frontmatter of a `.md`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentFile {
    /// The agent's name, as transitions and `agent:` keys refer to it.
    #[schemars(length(min = 1))]
    pub name: String,
    /// The name shown to people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// When the arbiter should pick this agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_to_use: Option<String>,
    /// The agent's system prompt (YAML files; `.md` files use a `## System Prompt` section).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Which tools the agent may call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<AgentTools>,
    /// Where the task goes after this agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transitions: Option<AgentTransitions>,
    /// Limits of one run of the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<AgentLimits>,
}

/// An agent's tools.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentTools {
    /// The tools it may call (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Vec<String>>,
    /// Limits on its Bash commands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bash_filter: Option<BashFilter>,
}

/// Limits on an agent's Bash commands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BashFilter {
    /// The programs it may run (all when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_commands: Option<Vec<String>>,
    /// Regular expressions a command must not match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_patterns: Option<Vec<String>>,
}

/// Where the task goes after an agent: another agent's name, or `complete`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentTransitions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_success: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_failure: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_max_iterations: Option<String>,
}

/// Limits of one run of an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentLimits {
    /// Model turns per run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_iterations: Option<u32>,
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

    #[test]
    fn config_files_of_both_hook_shapes_read() {
        let c: ConfigFile = serde_json::from_value(serde_json::json!({
            "maxReminders": 3,
            "hooks": {
                "PostExecutionEnd": [{"type": "git-commit", "message": "m", "noVerify": true}, {"type": "git-push"}],
                "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./g.sh", "timeout": 5, "failClosed": true}]}]
            }
        }))
        .unwrap();
        let hooks = c.hooks.unwrap();
        assert!(matches!(hooks["PreToolUse"][0], HookEntry::Group { .. }));
        assert!(matches!(
            hooks["PostExecutionEnd"][1],
            HookEntry::Hook(HookSpec {
                kind: Some(HookType::GitPush),
                ..
            })
        ));
        let a: AgentFile = serde_json::from_value(serde_json::json!({
            "name": "reviewer", "tools": {"allowed": ["Read"], "bashFilter": {"blockedPatterns": ["push"]}},
            "transitions": {"onSuccess": "complete"}, "limits": {"maxIterations": 10}
        }))
        .unwrap();
        assert_eq!(a.limits.unwrap().max_iterations, Some(10));
    }
}

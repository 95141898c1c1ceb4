//! Subagents (`delegate_to_subagents`, docs/subagents.md): what a task needs to fan work out to
//! child tasks. A subagent is a task of its own (its log, conversation, provider, status) that
//! another task's call started; the task service starts, resumes and stops it through
//! [`SubagentHost`], which the actor holds without knowing the service (the shell does not
//! import the task service).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::agents::profiles::{PiProfile, Profile, Profiles};
use crate::provider::ProviderSpec;
use crate::workflow::{WorkflowSet, WorkflowState};

/// The tool's name, as pi's subagent extension has it.
pub const TOOL_NAME: &str = "delegate_to_subagents";

/// The most tasks one call may delegate.
pub const MAX_TASKS: usize = 16;

/// Who a subagent is: the task and call that started it, its place among the call's tasks, its
/// profile and name. Logged in its `started` record and shown by every face.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentOf {
    pub parent: String,
    pub call_id: String,
    pub index: u32,
    pub profile: String,
    pub name: String,
    /// The parent's concrete phase (its index among the workflow's phases) when it delegated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase_index: Option<u32>,
}

impl SubagentOf {
    /// `reviewer (subagent of task-1-1)`.
    pub fn label(&self) -> String {
        format!("{} (subagent of {})", self.name, self.parent)
    }
}

/// What makes a task a subagent (in its [`super::TaskSpec`]).
#[derive(Debug, Clone)]
pub struct Subagent {
    pub of: Arc<SubagentOf>,
    /// The parent's place in its workflow when it delegated: the subagent works in that phase,
    /// gated by its `subagentTools`, and never moves it.
    pub state: Option<WorkflowState>,
    /// The pi profile it runs, as read when the parent started (rawko's agents are pinned).
    pub pi_profile: Option<PiProfile>,
}

/// A task's side of delegation (in its [`super::TaskSpec`]): where subagents are started and
/// which profiles there are, or, for a subagent, who it is.
#[derive(Clone, Default)]
pub struct Delegation {
    pub host: Option<Arc<dyn SubagentHost>>,
    pub profiles: Arc<Profiles>,
    pub subagent: Option<Subagent>,
}

impl std::fmt::Debug for Delegation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delegation")
            .field("host", &self.host.is_some())
            .field("profiles", &self.profiles.names())
            .field("subagent", &self.subagent)
            .finish()
    }
}

/// One subagent to run (or to go on with, or to read the end of: see [`SubagentHost::run`]).
pub struct ChildStart {
    pub id: String,
    pub of: SubagentOf,
    /// The task it is given (its first message).
    pub prompt: String,
    pub profile: Profile,
    /// The parent's workflow key and place in it.
    pub workflow: Option<String>,
    pub state: Option<WorkflowState>,
    /// The parent's definitions as a subagent's gate reads them
    /// ([`WorkflowSet::for_subagents`]: each phase's `subagentTools`).
    pub workflows: Arc<WorkflowSet>,
    /// The parent's provider, which the subagent runs unless its profile names another.
    pub provider: ProviderSpec,
    /// The parent's pinned definitions, which the subagent runs under too.
    pub pins: super::pins::Pins,
}

/// How a subagent ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChildEnd {
    /// Its final answer.
    Complete(String),
    /// Why it failed (or could not start).
    Failed(String),
    Cancelled(String),
}

/// Starts subagents for a task: the task service.
pub trait SubagentHost: Send + Sync {
    /// Runs the subagent to its end: started anew, or (a parent resumed after a crash) resumed
    /// from its log when it has one, or its end read from the log when it had ended.
    fn run(&self, start: ChildStart) -> Pin<Box<dyn Future<Output = ChildEnd> + Send>>;
    /// Cancels a running subagent (nothing when it is not running).
    fn stop(&self, id: &str);
}

/// One task of a `delegate_to_subagents` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub profile: String,
    pub prompt: String,
    pub name: Option<String>,
    pub files: Vec<String>,
}

/// The tool's input: `{tasks: [{profile, prompt (or task), name?, files?}]}`.
pub fn parse_input(input: &serde_json::Value) -> Result<Vec<Job>, String> {
    let tasks = input
        .get("tasks")
        .and_then(serde_json::Value::as_array)
        .ok_or("delegate_to_subagents needs `tasks`: a list of {profile, prompt}")?;
    if tasks.is_empty() {
        return Err("delegate_to_subagents needs at least one task".to_owned());
    }
    if tasks.len() > MAX_TASKS {
        return Err(format!(
            "delegate_to_subagents takes at most {MAX_TASKS} tasks in one call, not {}",
            tasks.len()
        ));
    }
    let mut jobs = Vec::with_capacity(tasks.len());
    for (i, t) in tasks.iter().enumerate() {
        let text = |key: &str| {
            t.get(key)
                .and_then(serde_json::Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let profile = text("profile")
            .or_else(|| text("agent"))
            .ok_or(format!("tasks[{i}] has no profile"))?;
        let prompt = text("prompt")
            .or_else(|| text("task"))
            .ok_or(format!("tasks[{i}] has no prompt (or task)"))?;
        let files = match t.get("files") {
            None | Some(serde_json::Value::Null) => Vec::new(),
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .map(|f| f.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or(format!("tasks[{i}].files must list paths"))?,
            Some(_) => return Err(format!("tasks[{i}].files must list paths")),
        };
        jobs.push(Job {
            profile,
            prompt,
            name: text("name").map(|n| crate::clip::clip(&n).into_owned()),
            files,
        });
    }
    Ok(jobs)
}

/// The tool's description and input schema.
pub const DESCRIPTION: &str = "Delegate work to subagents that run in parallel, each in its own conversation with the tools its profile and the current phase allow. Give each task a profile (an agent's name) and a prompt that says everything it needs to know; the result is each subagent's final answer, in order.";

pub fn parameters_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "tasks": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_TASKS,
                "items": {
                    "type": "object",
                    "properties": {
                        "profile": {"type": "string", "description": "The agent profile to run."},
                        "prompt": {"type": "string", "description": "The subagent's task, complete in itself."},
                        "name": {"type": "string", "description": "A short name to show for this subagent."},
                        "files": {"type": "array", "items": {"type": "string"}, "description": "Files the subagent should start from."}
                    },
                    "required": ["profile", "prompt"]
                }
            }
        },
        "required": ["tasks"]
    })
}

/// The subagent's first message: its prompt and the files it was pointed at.
pub fn first_message(prompt: &str, files: &[String]) -> String {
    if files.is_empty() {
        return prompt.to_owned();
    }
    format!("{prompt}\n\nFiles to start from: {}", files.join(", "))
}

/// The tool's result: each subagent's answer (or its failure) in order.
pub fn result_text(children: &[(SubagentOf, ChildEnd)]) -> (String, bool) {
    let mut out = String::new();
    let mut failed = 0;
    for (of, end) in children {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        let head = if of.name == of.profile {
            of.name.clone()
        } else {
            format!("{} ({})", of.name, of.profile)
        };
        match end {
            ChildEnd::Complete(answer) => {
                out.push_str(&format!("## {head}: done\n{}", answer.trim()));
            }
            ChildEnd::Failed(why) => {
                failed += 1;
                out.push_str(&format!("## {head}: failed\n{}", why.trim()));
            }
            ChildEnd::Cancelled(why) => {
                failed += 1;
                out.push_str(&format!("## {head}: cancelled\n{}", why.trim()));
            }
        }
    }
    (out, failed == children.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_input_is_pis_shape_with_task_for_prompt() {
        let jobs = parse_input(&json!({"tasks": [
            {"profile": "writer", "prompt": "write a", "name": "A", "files": ["a.txt"]},
            {"profile": "reviewer", "task": "review"}
        ]}))
        .unwrap();
        assert_eq!(jobs[0].name.as_deref(), Some("A"));
        assert_eq!(jobs[0].files, ["a.txt"]);
        assert_eq!(jobs[1].prompt, "review");
        for (input, want) in [
            (json!({}), "needs `tasks`"),
            (json!({"tasks": []}), "at least one"),
            (json!({"tasks": [{"prompt": "x"}]}), "has no profile"),
            (json!({"tasks": [{"profile": "x"}]}), "has no prompt"),
            (
                json!({"tasks": [{"profile": "x", "prompt": "y", "files": "a"}]}),
                "must list paths",
            ),
            (
                json!({"tasks": vec![json!({"profile": "x", "prompt": "y"}); 17]}),
                "at most 16",
            ),
        ] {
            let e = parse_input(&input).unwrap_err();
            assert!(e.contains(want), "{input}: {e}");
        }
    }

    #[test]
    fn the_result_lists_each_answer_in_order() {
        let of = |name: &str, profile: &str| SubagentOf {
            parent: "p".into(),
            call_id: "c".into(),
            index: 0,
            profile: profile.into(),
            name: name.into(),
            phase_index: None,
        };
        let (text, all_failed) = result_text(&[
            (of("writer", "writer"), ChildEnd::Complete("wrote a".into())),
            (
                of("B", "writer"),
                ChildEnd::Failed("script exhausted".into()),
            ),
        ]);
        assert_eq!(
            text,
            "## writer: done\nwrote a\n\n## B (writer): failed\nscript exhausted"
        );
        assert!(!all_failed);
        let (_, all_failed) =
            result_text(&[(of("a", "a"), ChildEnd::Cancelled("cancelled".into()))]);
        assert!(all_failed);
        assert_eq!(of("reviewer", "r").label(), "reviewer (subagent of p)");
    }
}

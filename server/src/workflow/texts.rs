//! The texts a workflow produces: the context prompt injected before every agent turn, the
//! not-done reminder, the completion and cancelled messages, the initial message, the session
//! name and the breadcrumb. Templates use pi-workflows' `{variable}` syntax; a variable rawko does
//! not know stays as written.

use std::borrow::Cow;

use super::definition::{PhaseDefinition, PhaseEntry, WorkflowDefinition, WorkflowSet, MAX_DEPTH};
use super::state::{ActiveWorkflow, BreadcrumbLevel, PathSegment, WorkflowState};

pub use super::definition::SUBAGENT_ROLE_INSTRUCTION;

pub const DEFAULT_ROLE_INSTRUCTION: &str = "You are the ORCHESTRATOR for this workflow. You must NOT use the edit or write tools directly. All implementation work must be delegated to subagents via the delegate_to_subagents tool. Follow the phase instructions precisely.";

pub const DEFAULT_ADVANCE_REMINDER: &str = "When you finish this phase, call the workflow_step tool with action='next' to advance to the next phase. If you need to restart the current scope from the beginning, use action='loop'.";

pub const DEFAULT_BLOCK_REASON: &str = "[workflow] The tool \"{toolName}\" is blocked during the {phaseName} phase.\nRefer to the current phase instructions for allowed tools and approaches.\nWhen finished, call workflow_step to advance to the next phase.";

pub const DEFAULT_NOT_DONE_REMINDER: &str = "⚠️ The {workflowName} is still active. Current phase: {phaseEmoji} {phaseName}.\n\nYou must NOT stop yet. The workflow requires you to complete the current phase and call workflow_step to advance.\n\nCurrent phase instructions:\n{phaseInstructions}\n\nContinue working on the current phase and call workflow_step when done.";

pub const DEFAULT_COMPLETION_MESSAGE: &str = "✅ **{workflowName} Complete**\n\n**Task:** {taskDescription}\n**Task ID:** {taskId}\n**Phases completed:** {phaseCount}";

pub const DEFAULT_CANCELLED_MESSAGE: &str =
    "❌ **{workflowName} Cancelled**\n\n**Task:** {taskDescription}\n**Task ID:** {taskId}";

/// Replaces every `{name}` whose name is in `vars`; anything else is left as written.
pub fn resolve_template(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + 64);
    resolve_template_into(&mut out, template, vars);
    out
}

/// [`resolve_template`] appended to `out`.
fn resolve_template_into(out: &mut String, template: &str, vars: &[(&str, &str)]) {
    let mut rest = template;
    // The name is searched byte by byte: letters, digits and `_` are ASCII, and no byte of a
    // multi-byte character is ASCII, so the index found is a character boundary.
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let name_len = after
            .bytes()
            .position(|b| !(b.is_ascii_alphanumeric() || b == b'_'))
            .unwrap_or(after.len());
        if name_len > 0 && after[name_len..].starts_with('}') {
            let name = &after[..name_len];
            match vars.iter().find(|(k, _)| *k == name) {
                Some((_, value)) => out.push_str(value),
                None => {
                    out.push('{');
                    out.push_str(name);
                    out.push('}');
                }
            }
            rest = &after[name_len + 1..];
        } else {
            out.push('{');
            rest = after;
        }
    }
    out.push_str(rest);
}

/// [`DEFAULT_BLOCK_REASON`] for `tool` in `phase`, written from its parts: the gate answers
/// every blocked call with it, and this skips the template's scan.
pub fn default_block_reason(tool: &str, phase: &str) -> String {
    const PARTS: [&str; 3] = [
        "[workflow] The tool \"",
        "\" is blocked during the ",
        " phase.\nRefer to the current phase instructions for allowed tools and approaches.\nWhen finished, call workflow_step to advance to the next phase.",
    ];
    let mut out = String::with_capacity(DEFAULT_BLOCK_REASON.len() + tool.len() + phase.len());
    out.push_str(PARTS[0]);
    out.push_str(tool);
    out.push_str(PARTS[1]);
    out.push_str(phase);
    out.push_str(PARTS[2]);
    out
}

/// `Release Pipeline > Code Review [2/3] > 🔍 Static Analysis [1/2]`: the root workflow's name,
/// then every level with its `[i/n]`; the emoji only on the concrete phase.
pub fn breadcrumb_text(root_name: &str, levels: &[BreadcrumbLevel<'_>]) -> String {
    let mut out = String::with_capacity(64);
    out.push_str(root_name);
    for level in levels {
        out.push_str(" > ");
        if !level.emoji.is_empty() {
            out.push_str(level.emoji);
            out.push(' ');
        }
        out.push_str(level.phase_name);
        out.push_str(&format!(" [{}/{}]", level.index, level.total));
    }
    out
}

impl ActiveWorkflow<'_> {
    /// The status-bar breadcrumb of this position.
    pub fn breadcrumb_text(&self) -> String {
        breadcrumb_text(&self.definition.name, &self.breadcrumb)
    }

    /// The name of the entry before the current one in the innermost scope, or `(start)`.
    fn previous_name<'s>(&self, set: &'s WorkflowSet) -> &'s str
    where
        Self: 's,
    {
        match self
            .phase_index
            .checked_sub(1)
            .and_then(|i| self.scope.phases.get(i))
        {
            Some(entry) => set.entry_name(entry),
            None => "(start)",
        }
    }

    /// The template variables of the current phase.
    fn prompt_vars<'s>(
        &'s self,
        set: &'s WorkflowSet,
        path: &'s str,
        step: &'s str,
        blocked: &'s str,
    ) -> [(&'s str, &'s str); 12] {
        let phase = self.current_phase;
        [
            ("workflowName", &self.definition.name),
            ("workflowKey", &self.state.workflow_key),
            ("description", &self.state.task_description),
            ("taskId", &self.state.task_id),
            ("phaseId", &phase.id),
            ("phaseName", &phase.name),
            ("previousPhaseName", self.previous_name(set)),
            (
                "nextPhaseName",
                self.next_entry.map_or("DONE", |e| set.entry_name(e)),
            ),
            ("blockedToolsList", blocked),
            ("toolName", "workflow_step"),
            ("breadcrumbPath", path),
            ("globalStepCount", step),
        ]
    }

    /// The phase's instructions with their template variables filled in.
    pub fn instructions(&self, set: &WorkflowSet) -> String {
        let path = self.path_names();
        let step = self.state.global_step_count.to_string();
        let blocked = blocked_list(self);
        let vars = self.prompt_vars(set, &path, &step, &blocked);
        resolve_template(&self.current_phase.instructions, &vars)
    }

    /// The context injected before every agent turn (pi-workflows' `buildContextPrompt`, with the
    /// All Steps list of its later versions).
    ///
    /// It runs before every model turn, so it is written straight into one buffer sized up
    /// front: no line, list or template gets a string of its own.
    pub fn context_prompt(&self, set: &WorkflowSet) -> String {
        let def = self.definition;
        let phase = self.current_phase;
        let path = self.path_names();
        let mut step_digits = [0; 20];
        let step = decimal(self.state.global_step_count, &mut step_digits);
        let blocked = blocked_list(self);
        let vars = self.prompt_vars(set, &path, step, &blocked);

        let role = def.role_instruction.as_deref();
        let reminder = def.advance_reminder.as_deref();
        let scope_total = self.scope.phases.len();
        let position = self.phase_index + 1;
        let (steps, current) = steps_at(set, def, &self.state.current_path);

        let capacity = 512
            + role.map_or(DEFAULT_ROLE_INSTRUCTION.len(), str::len)
            + phase.instructions.len()
            + reminder.map_or(DEFAULT_ADVANCE_REMINDER.len(), str::len)
            + path.len()
            + 2 * self.state.task_description.len()
            + steps
                .iter()
                .map(|p| p.name.len() + p.emoji.len() + 16)
                .sum::<usize>();
        let mut out = String::with_capacity(capacity);
        let mut digits = [0; 20];
        out.push_str("[Workflow path: ");
        out.push_str(&path);
        out.push_str(" ▸ ");
        out.push_str(&phase.emoji);
        out.push(' ');
        out.push_str(&phase.name);
        out.push_str("]\n\n");
        push_template(&mut out, role, DEFAULT_ROLE_INSTRUCTION, &vars);
        out.push_str("\n\n**Task:** ");
        out.push_str(&self.state.task_description);
        out.push_str("\n**Task ID:** ");
        out.push_str(&self.state.task_id);
        out.push_str("\n**Current Phase:** ");
        out.push_str(&phase.emoji);
        out.push(' ');
        out.push_str(&phase.name);
        out.push_str("\n**Progress:** Step ");
        out.push_str(step);
        out.push_str(" (");
        out.push_str(decimal(position as u64, &mut digits));
        out.push('/');
        out.push_str(decimal(scope_total as u64, &mut digits));
        out.push_str(if self.is_nested() {
            " in current scope)\n"
        } else {
            " phases)\n"
        });
        out.push_str("\n**All Steps:**\n");
        for (i, p) in steps.iter().enumerate() {
            out.push(if i == current { '▶' } else { ' ' });
            out.push(' ');
            out.push_str(decimal(i as u64 + 1, &mut digits));
            out.push_str(". ");
            out.push_str(&p.emoji);
            out.push(' ');
            out.push_str(&p.name);
            out.push('\n');
        }
        out.push_str("\n**What to do in this phase:**\n");
        resolve_template_into(&mut out, &phase.instructions, &vars);
        out.push_str("\n\n**Available subagent profiles for this phase:** ");
        if phase.available_profiles.is_empty() {
            out.push_str("(none)");
        } else {
            push_joined(
                &mut out,
                phase.available_profiles.iter().map(String::as_str),
            );
        }
        out.push_str("\n**All profiles:** ");
        push_joined(&mut out, all_profiles(&steps).into_iter());
        out.push_str("\n\n");
        push_template(&mut out, reminder, DEFAULT_ADVANCE_REMINDER, &vars);
        out
    }

    /// The reminder sent when the agent stops while the workflow is still active.
    pub fn not_done_reminder(&self, set: &WorkflowSet) -> String {
        let phase = self.current_phase;
        let instructions = self.instructions(set);
        let vars = [
            ("workflowName", self.definition.name.as_str()),
            ("phaseName", &phase.name),
            ("phaseEmoji", &phase.emoji),
            ("phaseInstructions", &instructions),
            ("taskDescription", &self.state.task_description),
            ("taskId", &self.state.task_id),
            ("workflowKey", &self.state.workflow_key),
        ];
        resolve_template(
            self.definition
                .not_done_reminder
                .as_deref()
                .unwrap_or(DEFAULT_NOT_DONE_REMINDER),
            &vars,
        )
    }
}

/// A workflow's `template` resolved onto `out`, or without one the built-in `default`, which
/// names no variable and is copied as it is (it is most workflows' role instruction and
/// reminder: no scan for `{` every turn).
fn push_template(
    out: &mut String,
    template: Option<&str>,
    default: &'static str,
    vars: &[(&str, &str)],
) {
    match template {
        Some(template) => resolve_template_into(out, template, vars),
        None => out.push_str(default),
    }
}

/// Every concrete phase of `def` in order, subworkflows flattened (the prompt's All Steps), and
/// the position among them of the phase `path` leads to. One walk, where listing the phases and
/// finding the position took two and a look-up per level.
fn steps_at<'a>(
    set: &'a WorkflowSet,
    def: &'a WorkflowDefinition,
    path: &[PathSegment],
) -> (Vec<&'a PhaseDefinition>, usize) {
    fn walk<'a>(
        set: &'a WorkflowSet,
        def: &'a WorkflowDefinition,
        path: Option<&[PathSegment]>,
        out: &mut Vec<&'a PhaseDefinition>,
        at: &mut Option<usize>,
        depth: usize,
    ) {
        // The set is acyclic; the depth bound only guards against a hand-built set that is not.
        if depth > MAX_DEPTH {
            return;
        }
        for (i, entry) in def.phases.iter().enumerate() {
            // The rest of the path when it goes through this entry: empty when it ends here
            // (on a subworkflow entry, it leads to that subworkflow's first phase).
            let below = match path {
                Some([seg, rest @ ..]) if seg.phase_index == i => Some(rest),
                _ => None,
            };
            if below.is_some_and(<[PathSegment]>::is_empty) {
                *at = Some(out.len());
            }
            match entry {
                PhaseEntry::Phase(p) => out.push(p),
                PhaseEntry::Subworkflow(key) => {
                    if let Some(sub) = set.get(key) {
                        let below = below.filter(|rest| !rest.is_empty());
                        walk(set, sub, below, out, at, depth + 1);
                    }
                }
            }
        }
    }
    let mut out = Vec::with_capacity(16);
    let mut at = None;
    walk(set, def, Some(path), &mut out, &mut at, 0);
    let at = at.unwrap_or_else(|| super::state::flat_index(set, path));
    (out, at)
}

fn blocked_list(active: &ActiveWorkflow<'_>) -> Cow<'static, str> {
    let blocked = active.current_phase.blocked_tools();
    if blocked.is_empty() {
        Cow::Borrowed("(none)")
    } else {
        Cow::Owned(blocked.join(", "))
    }
}

/// `n` in decimal, written into `digits` (the prompt writes a dozen numbers: no string each).
fn decimal(mut n: u64, digits: &mut [u8; 20]) -> &str {
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    std::str::from_utf8(&digits[start..]).unwrap_or_default()
}

/// Appends the items separated by `, `.
fn push_joined<'a>(out: &mut String, items: impl Iterator<Item = &'a str>) {
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(item);
    }
}

/// Every profile named by any of `phases` (a workflow's, subworkflows included), first mention
/// first.
fn all_profiles<'a>(phases: &[&'a PhaseDefinition]) -> Vec<&'a str> {
    let mut seen: Vec<&str> = Vec::with_capacity(8);
    for phase in phases {
        for p in &phase.available_profiles {
            if !seen.contains(&p.as_str()) {
                seen.push(p);
            }
        }
    }
    seen
}

/// The message shown when a workflow finishes (`cancelled` picks the cancelled default).
/// pi-workflows reuses `completionMessage` for both; so does rawko.
pub fn finished_message(
    def: &WorkflowDefinition,
    set: &WorkflowSet,
    state: &WorkflowState,
) -> String {
    let phase_count = set.flatten(def).len().to_string();
    let vars = [
        ("workflowName", def.name.as_str()),
        ("taskDescription", &state.task_description),
        ("taskId", &state.task_id),
        ("phaseCount", &phase_count),
    ];
    let default = if state.cancelled {
        DEFAULT_CANCELLED_MESSAGE
    } else {
        DEFAULT_COMPLETION_MESSAGE
    };
    resolve_template(def.completion_message.as_deref().unwrap_or(default), &vars)
}

/// The first user message of a task: the workflow's `initialMessage` with its variables.
pub fn initial_message(def: &WorkflowDefinition, set: &WorkflowSet, description: &str) -> String {
    let first = set.flatten(def).into_iter().next();
    let profiles = first
        .map(|p| p.available_profiles.join(", "))
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "(none)".to_owned());
    let vars = [
        ("workflowName", def.name.as_str()),
        ("workflowKey", &def.key),
        ("description", description),
        ("firstPhaseId", first.map_or("", |p| p.id.as_str())),
        ("firstPhaseName", first.map_or("", |p| p.name.as_str())),
        ("firstPhaseEmoji", first.map_or("", |p| p.emoji.as_str())),
        ("firstPhaseProfiles", &profiles),
    ];
    resolve_template(&def.initial_message, &vars)
}

/// The task's session name: the prefix and the description, cut at `sessionNameMaxLength`
/// characters with `…`.
pub fn session_name(def: &WorkflowDefinition, description: &str) -> String {
    let max = def.session_name_max_length;
    let mut name = def.session_name_prefix.clone();
    if description.chars().count() > max {
        name.extend(description.chars().take(max));
        name.push('…');
    } else {
        name.push_str(description);
    }
    name
}

/// An ISO 8601 UTC timestamp (`2026-11-22T00:13:38.000Z`) from milliseconds since the epoch.
pub fn iso_timestamp(millis: i64) -> String {
    let secs = millis.div_euclid(1000);
    let ms = millis.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

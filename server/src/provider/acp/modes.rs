//! Which of an agent's own modes keeps it asking: rawko decides only what an agent asks of it
//! (`session/request_permission`, `fs/*`, `terminal/*`), and current agents start in modes that
//! write and run commands without asking (claude-agent-acp's `auto`, codex-acp's `agent`). At the
//! start of every session rawko puts the agent in a mode in which it asks before every write and
//! command, chosen from what the agent advertises, and puts it back when the agent leaves it
//! (`current_mode_update`, `config_option_update`).
//!
//! The choice reads the words of each advertised mode (its id, name and description): a mode whose
//! words say it decides by itself (`auto`, `accept`, `bypass`, `yolo`, `full` access, `never`,
//! `don't ask`, `without` …) or asks only about some actions (`outside` the workspace, `unsafe`
//! …) is out, and so is a planning mode (`plan`: it refuses the writes a
//! writing phase allows); of the rest, a mode whose words say it asks (`ask`, `approval`,
//! `approve`, `confirm`, `prompt`, `manual`) is chosen: the agent's current mode when it is one,
//! else the one with the most such words, the first advertised on a tie. The modes come from the
//! session's config option of category `mode` when it has one (set with
//! `session/set_config_option`), else from its `modes` (set with `session/set_mode`). An agent that
//! advertises no such mode cannot be made to ask: what it does by itself is then confined only by
//! the sandbox around its process.

use agent_client_protocol::v1::schema::{
    SessionConfigKind, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOptions, SessionModeState,
};

/// One of the agent's modes, as it advertises it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Mode {
    pub id: String,
    pub name: String,
    pub description: String,
}

impl Mode {
    /// The mode as the user reads it: its name, and its id when that differs.
    pub(super) fn shown(&self) -> String {
        if self.name.is_empty() || self.name == self.id {
            format!("\"{}\"", self.id)
        } else {
            format!("\"{}\" ({})", self.name, self.id)
        }
    }
}

/// How the agent's mode is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Via {
    /// `session/set_config_option` of this config option.
    Config(String),
    /// `session/set_mode`.
    Mode,
}

/// What the agent advertised about its modes in a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Advertised {
    pub via: Via,
    pub current: String,
    pub modes: Vec<Mode>,
    /// The agent also has `modes` to set with `session/set_mode` (beside the config option).
    pub has_set_mode: bool,
}

/// The modes of a session, from its config option of category `mode` (the current form), else
/// from its `modes` (deprecated, still what older agents send).
pub(super) fn advertised(
    modes: Option<&SessionModeState>,
    config: Option<&[SessionConfigOption]>,
) -> Option<Advertised> {
    if let Some((option, current, list)) = config.and_then(mode_option) {
        return Some(Advertised {
            via: Via::Config(option),
            current,
            modes: list,
            has_set_mode: modes.is_some_and(|m| !m.available_modes.is_empty()),
        });
    }
    let modes = modes.filter(|m| !m.available_modes.is_empty())?;
    Some(Advertised {
        via: Via::Mode,
        current: modes.current_mode_id.0.to_string(),
        modes: modes
            .available_modes
            .iter()
            .map(|m| Mode {
                id: m.id.0.to_string(),
                name: m.name.clone(),
                description: m.description.clone().unwrap_or_default(),
            })
            .collect(),
        has_set_mode: true,
    })
}

/// The config option of category `mode` among `options`: its id, current value and values.
pub(super) fn mode_option(options: &[SessionConfigOption]) -> Option<(String, String, Vec<Mode>)> {
    options.iter().find_map(|o| {
        if o.category != Some(SessionConfigOptionCategory::Mode) {
            return None;
        }
        let SessionConfigKind::Select(select) = &o.kind else {
            return None;
        };
        let values: Vec<Mode> = match &select.options {
            SessionConfigSelectOptions::Ungrouped(list) => list.iter().collect::<Vec<_>>(),
            SessionConfigSelectOptions::Grouped(groups) => {
                groups.iter().flat_map(|g| g.options.iter()).collect()
            }
            _ => Vec::new(),
        }
        .into_iter()
        .map(|v| Mode {
            id: v.value.0.to_string(),
            name: v.name.clone(),
            description: v.description.clone().unwrap_or_default(),
        })
        .collect();
        (!values.is_empty()).then(|| {
            (
                o.id.0.to_string(),
                select.current_value.0.to_string(),
                values,
            )
        })
    })
}

/// Words that say a mode decides by itself, without asking.
const DECIDES: &[&str] = &[
    "auto",
    "automatic",
    "automatically",
    "accept",
    "accepts",
    "bypass",
    "bypasses",
    "yolo",
    "skip",
    "skips",
    "full",
    "never",
    "dont",
    "without",
    "unrestricted",
    "unsandboxed",
];
/// Words that say a mode asks.
const ASKS: &[&str] = &[
    "ask",
    "asks",
    "approval",
    "approve",
    "confirm",
    "confirms",
    "confirmation",
    "prompt",
    "prompts",
    "manual",
    "manually",
];
/// Words that say a mode asks only about some actions (codex-acp's `workspace-write`: "ask before
/// writing outside the workspace"), so that it writes or runs the others by itself.
const SOME: &[&str] = &["outside", "unsafe", "risky", "dangerous", "sensitive"];
/// Words that say a mode only plans (and refuses the writes a writing phase allows).
const PLANS: &[&str] = &["plan", "planning"];

/// The lower-case words of `text`: camelCase split (`acceptEdits`, `dontAsk`), apostrophes dropped
/// (`don't`), everything else not a letter or digit a separator.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut last_lower = false;
    for c in text.chars() {
        if c == '\'' || c == '’' {
            continue;
        }
        if !c.is_alphanumeric() {
            if !word.is_empty() {
                out.push(std::mem::take(&mut word));
            }
            last_lower = false;
            continue;
        }
        if c.is_uppercase() && last_lower && !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
        last_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// How strongly `mode` says it asks before every write and command: `None` when it decides by
/// itself, asks only about some actions, only plans, or does not say it asks.
fn asks(mode: &Mode) -> Option<usize> {
    let all = words(&format!("{} {} {}", mode.id, mode.name, mode.description));
    if all
        .iter()
        .any(|w| DECIDES.contains(&w.as_str()) || SOME.contains(&w.as_str()))
    {
        return None;
    }
    let named = words(&format!("{} {}", mode.id, mode.name));
    if named.iter().any(|w| PLANS.contains(&w.as_str())) {
        return None;
    }
    let score = ASKS.iter().filter(|a| all.iter().any(|w| w == *a)).count();
    (score > 0).then_some(score)
}

/// The mode that keeps the agent asking, or why there is none.
pub(super) fn choose(advertised: &Advertised) -> Result<Mode, String> {
    if let Some(current) = advertised
        .modes
        .iter()
        .find(|m| m.id == advertised.current && asks(m).is_some())
    {
        return Ok(current.clone());
    }
    let mut best: Option<(usize, &Mode)> = None;
    for mode in &advertised.modes {
        if let Some(score) = asks(mode) {
            if best.is_none_or(|(s, _)| score > s) {
                best = Some((score, mode));
            }
        }
    }
    best.map(|(_, m)| m.clone()).ok_or_else(|| {
        format!(
            "none of its modes says it asks before it writes or runs a command (it offers {})",
            advertised
                .modes
                .iter()
                .map(Mode::shown)
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(id: &str, name: &str, description: &str) -> Mode {
        Mode {
            id: id.to_owned(),
            name: name.to_owned(),
            description: description.to_owned(),
        }
    }

    fn offered(current: &str, modes: Vec<Mode>) -> Advertised {
        Advertised {
            via: Via::Mode,
            current: current.to_owned(),
            modes,
            has_set_mode: true,
        }
    }

    /// What claude-agent-acp 0.101 advertises (its `session/new`), starting in `auto`.
    fn claude() -> Vec<Mode> {
        vec![
            mode("default", "Manual", "Always ask before making changes"),
            mode(
                "acceptEdits",
                "Accept edits",
                "Automatically accept all file edits",
            ),
            mode("plan", "Plan", "Create a plan before making changes"),
            mode("auto", "Auto", "Claude handles permission decisions"),
            mode(
                "dontAsk",
                "Don't Ask",
                "Don't prompt for permissions, deny if not pre-approved",
            ),
            mode(
                "bypassPermissions",
                "Bypass permissions",
                "Accepts all permissions",
            ),
        ]
    }

    #[test]
    fn claude_goes_from_auto_to_manual() {
        assert_eq!(choose(&offered("auto", claude())).unwrap().id, "default");
        // Already asking: it stays.
        assert_eq!(choose(&offered("default", claude())).unwrap().id, "default");
    }

    #[test]
    fn codex_goes_to_read_only_which_asks() {
        let codex = vec![
            mode("read-only", "Read-only", "Requires approval to edit files and run commands."),
            mode("agent", "Agent", "Read and edit files, and run commands."),
            mode(
                "auto-review",
                "Auto review",
                "Read and edit files, and run commands. Approval requests are reviewed automatically by a Codex subagent.",
            ),
            mode(
                "agent-full-access",
                "Agent (full access)",
                "Codex can edit files outside this workspace and run commands with network access. Exercise caution when using.",
            ),
        ];
        assert_eq!(choose(&offered("agent", codex)).unwrap().id, "read-only");
    }

    /// What codex-acp 2.6.0 advertises, word for word (its `modes` and its `mode` config option
    /// alike), in its order.
    fn codex_2_6() -> Vec<Mode> {
        vec![
            mode(
                "read-only",
                "Read-only",
                "Requires approval to edit files and access the internet.",
            ),
            mode(
                "workspace-write",
                "Workspace access",
                "Edit workspace files; ask before writing outside the workspace or accessing the network.",
            ),
            mode(
                "agent",
                "Auto review",
                "Only ask for actions detected as potentially unsafe",
            ),
            mode(
                "agent-full-access",
                "Full access",
                "Unrestricted access to the internet and any file on your computer",
            ),
        ]
    }

    #[test]
    fn codex_2_6_goes_to_read_only_from_any_mode_it_starts_in() {
        // It starts in `agent`, or in the mode of its INITIAL_AGENT_MODE: `workspace-write` asks
        // only outside the workspace, so it is never kept.
        for current in ["agent", "workspace-write", "agent-full-access", "read-only"] {
            assert_eq!(
                choose(&offered(current, codex_2_6())).unwrap().id,
                "read-only",
                "from {current}"
            );
        }
        // Whatever order it lists them in.
        let mut reversed = codex_2_6();
        reversed.reverse();
        assert_eq!(choose(&offered("agent", reversed)).unwrap().id, "read-only");
    }

    #[test]
    fn gemini_stays_in_its_default_and_never_plans() {
        let gemini = vec![
            mode("default", "Default", "Prompts for approval"),
            mode("autoEdit", "Auto Edit", "Auto-approves edit tools"),
            mode("yolo", "YOLO", "Auto-approves all tools"),
            mode("plan", "Plan", "Read-only mode"),
        ];
        assert_eq!(
            choose(&offered("yolo", gemini.clone())).unwrap().id,
            "default"
        );
        assert_eq!(choose(&offered("plan", gemini)).unwrap().id, "default");
    }

    #[test]
    fn an_agent_without_an_asking_mode_cannot_be_made_to_ask() {
        let why = choose(&offered(
            "fast",
            vec![
                mode("fast", "Fast", "Edits and runs commands"),
                mode("plan", "Plan", "Ask before planning"),
                mode("yolo", "YOLO", "Approves everything"),
            ],
        ))
        .unwrap_err();
        assert!(
            why.contains("\"Fast\" (fast), \"Plan\" (plan), \"YOLO\" (yolo)"),
            "{why}"
        );
    }

    #[test]
    fn words_split_camel_case_and_drop_apostrophes() {
        assert_eq!(words("dontAsk"), ["dont", "ask"]);
        assert_eq!(words("Don't prompt"), ["dont", "prompt"]);
        assert_eq!(words("agent-full-access"), ["agent", "full", "access"]);
        assert_eq!(words("YOLO"), ["yolo"]);
    }

    #[test]
    fn the_config_option_of_category_mode_is_preferred() {
        let config: Vec<SessionConfigOption> = serde_json::from_value(serde_json::json!([
            {"id": "model", "name": "Model", "category": "model", "type": "select",
             "currentValue": "m", "options": [{"value": "m", "name": "M"}]},
            {"id": "perm", "name": "Mode", "category": "mode", "type": "select",
             "currentValue": "auto", "options": [
                {"value": "auto", "name": "Auto"},
                {"value": "default", "name": "Manual", "description": "Always ask"}]}
        ]))
        .unwrap();
        let modes: SessionModeState = serde_json::from_value(serde_json::json!({
            "currentModeId": "auto",
            "availableModes": [{"id": "auto", "name": "Auto"}, {"id": "default", "name": "Manual"}]
        }))
        .unwrap();
        let a = advertised(Some(&modes), Some(&config)).unwrap();
        assert_eq!(a.via, Via::Config("perm".to_owned()));
        assert!(a.has_set_mode);
        assert_eq!(choose(&a).unwrap().id, "default");
        let only_modes = advertised(Some(&modes), None).unwrap();
        assert_eq!(only_modes.via, Via::Mode);
        assert!(advertised(None, None).is_none());
    }
}

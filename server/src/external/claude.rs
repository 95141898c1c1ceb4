//! Claude Code's side: what rawko answers to a hook, in the two forms Claude Code reads (a command
//! hook's exit code, stdout and stderr; an `http` hook's JSON body), and the entries
//! `rawko hook install --claude` writes into `.claude/settings.local.json` and `.mcp.json`.

use std::path::Path;

use serde_json::{json, Map, Value};

/// The events `install` wires to rawko (docs/external-agents.md says what rawko does with each of
/// Claude Code's events, and why it leaves the others alone).
pub const EVENTS: [&str; 15] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PermissionDenied",
    "PostToolUse",
    "PostToolUseFailure",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "Notification",
    "SessionEnd",
];

/// The events whose matcher is a tool name: `install` matches every tool.
const TOOL_EVENTS: [&str; 5] = [
    "PreToolUse",
    "PermissionRequest",
    "PermissionDenied",
    "PostToolUse",
    "PostToolUseFailure",
];

/// The events whose hook may wait for the user (an approval, the countdown): they get Claude
/// Code's longest `timeout`.
const WAITING_EVENTS: [&str; 3] = ["PreToolUse", "PermissionRequest", "Stop"];

/// How many Stop blocks in a row Claude Code honours before it lets the agent stop anyway
/// (since 2.1.143; `CLAUDE_CODE_STOP_HOOK_BLOCK_CAP` changes it).
pub const STOP_HOOK_BLOCK_CAP: u32 = 8;

/// Claude Code's cap of consecutive Stop blocks in an environment.
pub fn stop_hook_block_cap(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> u32 {
    env("CLAUDE_CODE_STOP_HOOK_BLOCK_CAP")
        .and_then(|v| v.to_str().and_then(|v| v.trim().parse().ok()))
        .unwrap_or(STOP_HOOK_BLOCK_CAP)
}

/// A warning when rawko would remind the agent more often in a row than Claude Code lets a Stop
/// hook block: past the cap Claude Code stops the agent whatever rawko answers.
pub fn reminders_warning(max_reminders: u32, cap: u32) -> Option<String> {
    (max_reminders > cap).then(|| {
        format!(
            "warning: maxReminders is {max_reminders}, but Claude Code lets a Stop hook block at most {cap} times in a row \
             (CLAUDE_CODE_STOP_HOOK_BLOCK_CAP), so the agent may stop after {cap} reminders; set maxReminders to {cap} or less, \
             or raise CLAUDE_CODE_STOP_HOOK_BLOCK_CAP where Claude Code runs"
        )
    })
}

/// Whether Claude Code runs in its plan mode (`permission_mode` of the hook input): it then
/// changes nothing, and rawko allows nothing past it.
pub fn in_plan_mode(input: &Value) -> bool {
    input["permission_mode"] == "plan"
}

/// rawko's answer to a PreToolUse, in Claude Code's form. In plan mode rawko never answers
/// `allow` (which would skip Claude Code's own check, so widen what plan mode lets the agent
/// do): a call the user allowed is left to Claude Code's rules (`ask` when a hook changed its
/// input, so the change still applies). A call rawko could ask nobody about is Claude Code's to
/// ask its user (`ask`); with nobody at the session (`unattended`, print mode) it is deferred
/// instead (`defer`, which Claude Code offers for PreToolUse in print mode only, and ignores in
/// an interactive session): `claude -p` stops with the call, and `claude -p --resume` asks
/// rawko again, when an editor may be there to answer.
pub fn pre_tool_use_answer(
    decision: crate::external::ToolDecision,
    plan_mode: bool,
    unattended: bool,
) -> HookAnswer {
    use crate::external::ToolDecision;
    let decide = |decision: &str, reason: &str| {
        json!({"hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason
        }})
    };
    let json = match decision {
        ToolDecision::Pass => return HookAnswer::pass(),
        ToolDecision::Deny(reason) => return HookAnswer::block(reason),
        ToolDecision::Ask(reason) if unattended => decide("defer", &reason),
        ToolDecision::Ask(reason) => decide("ask", &reason),
        ToolDecision::Allow {
            updated_input: None,
        } if plan_mode => return HookAnswer::pass(),
        ToolDecision::Allow { updated_input } => {
            let mut out = if plan_mode {
                decide(
                    "ask",
                    "allowed in rawko, with its input changed by a hook; Claude Code is in plan mode",
                )
            } else {
                decide("allow", "allowed in rawko")
            };
            if let Some(u) = updated_input {
                out["hookSpecificOutput"]["updatedInput"] = u;
            }
            out
        }
    };
    HookAnswer {
        json: Some(json),
        ..HookAnswer::default()
    }
}

/// rawko's answer to a PermissionRequest (Claude Code's own rules would ask its user):
/// `decision.behavior` allow or deny, with the reason. A call rawko could ask nobody about is
/// left to Claude Code (it asks its user, or refuses in `-p`), and so is one rawko would allow in
/// plan mode.
pub fn permission_request_answer(
    decision: crate::external::ToolDecision,
    plan_mode: bool,
) -> HookAnswer {
    use crate::external::ToolDecision;
    let decision = match decision {
        ToolDecision::Ask(_) => return HookAnswer::pass(),
        ToolDecision::Deny(reason) => json!({"behavior": "deny", "message": reason}),
        ToolDecision::Pass | ToolDecision::Allow { .. } if plan_mode => return HookAnswer::pass(),
        // The gate and the user allowed it (Pass: an "always" answer of the user's).
        ToolDecision::Pass => json!({"behavior": "allow"}),
        ToolDecision::Allow { updated_input } => {
            let mut d = json!({"behavior": "allow"});
            if let Some(u) = updated_input {
                d["updatedInput"] = u;
            }
            d
        }
    };
    HookAnswer {
        json: Some(json!({"hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": decision
        }})),
        ..HookAnswer::default()
    }
}

/// rawko's MCP tools as Claude Code names them; `install` allows them in the permissions.
pub const MCP_TOOLS: [&str; 3] = [
    "mcp__rawko__workflow_step",
    "mcp__rawko__workflow_status",
    "mcp__rawko__workflow_start",
];

/// rawko's answer to one hook event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookAnswer {
    /// Block, with the reason Claude Code is told.
    pub block: Option<String>,
    /// JSON output for Claude Code (`hookSpecificOutput`, …).
    pub json: Option<Value>,
    /// A note for the user (not a block): shown on stderr by `rawko hook`.
    pub note: Option<String>,
}

impl HookAnswer {
    pub fn pass() -> Self {
        Self::default()
    }

    pub fn block(reason: impl Into<String>) -> Self {
        Self {
            block: Some(reason.into()),
            ..Self::default()
        }
    }

    pub fn context(event: &str, context: Option<String>) -> Self {
        Self {
            json: context.filter(|c| !c.trim().is_empty()).map(
                |c| json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": c}}),
            ),
            ..Self::default()
        }
    }

    /// As a command hook: exit 2 with the reason on stderr for a block, else exit 0 with the
    /// JSON (if any) on stdout.
    pub fn to_command(&self) -> (i32, String, String) {
        match &self.block {
            Some(reason) => (2, String::new(), reason.clone()),
            None => (
                0,
                self.json
                    .as_ref()
                    .map(|j| format!("{j}\n"))
                    .unwrap_or_default(),
                self.note.clone().unwrap_or_default(),
            ),
        }
    }

    /// As an `http` hook's response body: a block is put in the event's JSON form.
    pub fn to_http(&self, event: &str) -> Value {
        match &self.block {
            Some(reason) if event == "PreToolUse" => json!({"hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason
            }}),
            Some(reason) if event == "PermissionRequest" => json!({"hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "decision": {"behavior": "deny", "message": reason}
            }}),
            Some(reason) => json!({"decision": "block", "reason": reason}),
            None => self.json.clone().unwrap_or_else(|| json!({})),
        }
    }
}

/// The command a hook entry runs: `<rawko> hook EVENT [--workflow KEY]`.
pub fn hook_command(exe: &str, event: &str, workflow: Option<&str>) -> String {
    let mut c = format!("{} hook {event}", crate::hooks::template::shell_quote(exe));
    if let Some(w) = workflow {
        c.push_str(&format!(
            " --workflow {}",
            crate::hooks::template::shell_quote(w)
        ));
    }
    c
}

fn is_ours(command: &str, exe: &str) -> bool {
    let prefix = format!("{} hook ", crate::hooks::template::shell_quote(exe));
    command.starts_with(&prefix)
}

/// Removes the hooks whose command `ours` recognises from a settings file's `hooks` in Claude
/// Code's format (event → matcher groups → hooks), which Gemini CLI and Codex share: the groups
/// and events left empty go too, and `hooks` itself when nothing is left. Says what it removed.
pub(super) fn remove_hooks(
    settings: &mut Map<String, Value>,
    path: &Path,
    ours: impl Fn(&str) -> bool,
) -> Option<String> {
    let mut removed = 0;
    if let Some(hooks) = settings.get_mut("hooks").and_then(Value::as_object_mut) {
        for list in hooks.values_mut().filter_map(Value::as_array_mut) {
            for group in list.iter_mut() {
                if let Some(hs) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                    let before = hs.len();
                    hs.retain(|h| !h["command"].as_str().is_some_and(&ours));
                    removed += before - hs.len();
                }
            }
            list.retain(|g| {
                g.get("hooks")
                    .and_then(Value::as_array)
                    .is_none_or(|h| !h.is_empty())
            });
        }
        hooks.retain(|_, v| v.as_array().is_none_or(|a| !a.is_empty()));
    }
    if settings
        .get("hooks")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
    {
        settings.remove("hooks");
    }
    (removed > 0).then(|| format!("removed {removed} rawko hooks from {}", path.display()))
}

pub(super) fn read_json(path: &Path) -> Result<Map<String, Value>, String> {
    match std::fs::read_to_string(path) {
        Ok(t) if t.trim().is_empty() => Ok(Map::new()),
        Ok(t) => match serde_json::from_str::<Value>(&t) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err(format!(
                "{} does not hold a JSON object; nothing was changed",
                path.display()
            )),
            Err(e) => Err(format!(
                "{} is not valid JSON ({e}); fix it first, nothing was changed",
                path.display()
            )),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Map::new()),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

pub(super) fn write_json(path: &Path, map: Map<String, Value>) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(&Value::Object(map)).map_err(|e| e.to_string())?;
    let tmp = path.with_extension("json.rawko-tmp");
    std::fs::write(&tmp, text + "\n")
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Adds rawko's hook entries and MCP server to a workspace's Claude Code settings, keeping
/// everything else. Returns what changed, a line each.
pub fn install(workspace: &Path, exe: &str, workflow: Option<&str>) -> Result<Vec<String>, String> {
    let settings_path = workspace.join(".claude").join("settings.local.json");
    let mcp_path = workspace.join(".mcp.json");
    let mut settings = read_json(&settings_path)?;
    let mut mcp = read_json(&mcp_path)?;
    let mut changes = Vec::new();
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(hooks) = hooks.as_object_mut() else {
        return Err(format!(
            "\"hooks\" in {} is not an object; nothing was changed",
            settings_path.display()
        ));
    };
    for event in EVENTS {
        let list = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Some(list) = list.as_array_mut() else {
            return Err(format!(
                "hooks.{event} in {} is not a list; nothing was changed",
                settings_path.display()
            ));
        };
        let present = list.iter().any(|group| {
            group["hooks"].as_array().is_some_and(|hs| {
                hs.iter()
                    .any(|h| h["command"].as_str().is_some_and(|c| is_ours(c, exe)))
            })
        });
        if present {
            continue;
        }
        let timeout = if WAITING_EVENTS.contains(&event) {
            600
        } else {
            30
        };
        let mut group = json!({"hooks": [{"type": "command", "command": hook_command(exe, event, workflow), "timeout": timeout}]});
        if TOOL_EVENTS.contains(&event) {
            group["matcher"] = json!("*");
        }
        list.push(group);
        changes.push(format!(
            "added the {event} hook to {}",
            settings_path.display()
        ));
    }
    // rawko's workflow tools need no permission prompt: they only move the workflow, and the
    // not-done reminder tells the agent to call them.
    let permissions = settings
        .entry("permissions")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(allow) = permissions
        .as_object_mut()
        .map(|p| p.entry("allow").or_insert_with(|| Value::Array(Vec::new())))
        .and_then(Value::as_array_mut)
    else {
        return Err(format!(
            "\"permissions.allow\" in {} is not a list; nothing was changed",
            settings_path.display()
        ));
    };
    let missing: Vec<&str> = MCP_TOOLS
        .iter()
        .copied()
        .filter(|t| !allow.iter().any(|a| a == t))
        .collect();
    if !missing.is_empty() {
        allow.extend(missing.iter().map(|t| json!(t)));
        changes.push(format!(
            "allowed rawko's workflow tools ({}) in {}",
            missing.join(", "),
            settings_path.display()
        ));
    }
    let servers = mcp
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(servers) = servers.as_object_mut() else {
        return Err(format!(
            "\"mcpServers\" in {} is not an object; nothing was changed",
            mcp_path.display()
        ));
    };
    if servers.contains_key("rawko") {
        changes.push(format!(
            "kept the rawko MCP server already in {}",
            mcp_path.display()
        ));
    } else {
        servers.insert("rawko".into(), json!({"command": exe, "args": ["mcp"]}));
        changes.push(format!(
            "added the rawko MCP server to {}",
            mcp_path.display()
        ));
    }
    write_json(&settings_path, settings)?;
    write_json(&mcp_path, mcp)?;
    Ok(changes)
}

/// Removes exactly what [`install`] added.
pub fn uninstall(workspace: &Path, exe: &str) -> Result<Vec<String>, String> {
    let settings_path = workspace.join(".claude").join("settings.local.json");
    let mcp_path = workspace.join(".mcp.json");
    let mut changes = Vec::new();
    if settings_path.exists() {
        let mut settings = read_json(&settings_path)?;
        changes.extend(remove_hooks(&mut settings, &settings_path, |c| {
            is_ours(c, exe)
        }));
        if let Some(permissions) = settings
            .get_mut("permissions")
            .and_then(Value::as_object_mut)
        {
            if let Some(allow) = permissions.get_mut("allow").and_then(Value::as_array_mut) {
                let before = allow.len();
                allow.retain(|a| !MCP_TOOLS.iter().any(|t| a == t));
                if allow.len() < before {
                    changes.push(format!(
                        "removed the permission of rawko's workflow tools from {}",
                        settings_path.display()
                    ));
                }
                if allow.is_empty() {
                    permissions.remove("allow");
                }
            }
            if permissions.is_empty() {
                settings.remove("permissions");
            }
        }
        write_json(&settings_path, settings)?;
    }
    if mcp_path.exists() {
        let mut mcp = read_json(&mcp_path)?;
        if let Some(servers) = mcp.get_mut("mcpServers").and_then(Value::as_object_mut) {
            if servers
                .get("rawko")
                .is_some_and(|s| s["command"] == json!(exe) && s["args"] == json!(["mcp"]))
            {
                servers.remove("rawko");
                changes.push(format!(
                    "removed the rawko MCP server from {}",
                    mcp_path.display()
                ));
            }
        }
        if mcp
            .get("mcpServers")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
        {
            mcp.remove("mcpServers");
        }
        write_json(&mcp_path, mcp)?;
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn install_merges_and_uninstall_removes_exactly_ours() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join(".claude")).unwrap();
        std::fs::write(
            ws.join(".claude/settings.local.json"),
            r#"{"permissions": {"allow": ["Bash(ls)"]}, "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./mine.sh"}]}]}}"#,
        )
        .unwrap();
        std::fs::write(
            ws.join(".mcp.json"),
            r#"{"mcpServers": {"other": {"command": "x"}}}"#,
        )
        .unwrap();
        let changes = install(ws, "/opt/rawko bin/rawko", Some("feature")).unwrap();
        // A hook for each event, the permission of the workflow tools, the MCP server.
        assert_eq!(changes.len(), EVENTS.len() + 2, "{changes:#?}");
        let again = install(ws, "/opt/rawko bin/rawko", Some("feature")).unwrap();
        assert_eq!(again.len(), 1, "idempotent: {again:#?}");
        let s: Value = serde_json::from_str(
            &std::fs::read_to_string(ws.join(".claude/settings.local.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            s["permissions"]["allow"],
            json!([
                "Bash(ls)",
                "mcp__rawko__workflow_step",
                "mcp__rawko__workflow_status",
                "mcp__rawko__workflow_start"
            ])
        );
        assert_eq!(s["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
        assert_eq!(
            s["hooks"]["Stop"][0]["hooks"][0]["command"],
            "'/opt/rawko bin/rawko' hook Stop --workflow feature"
        );
        uninstall(ws, "/opt/rawko bin/rawko").unwrap();
        let s: Value = serde_json::from_str(
            &std::fs::read_to_string(ws.join(".claude/settings.local.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            s,
            serde_json::from_str::<Value>(r#"{"permissions": {"allow": ["Bash(ls)"]}, "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./mine.sh"}]}]}}"#).unwrap()
        );
        let m: Value =
            serde_json::from_str(&std::fs::read_to_string(ws.join(".mcp.json")).unwrap()).unwrap();
        assert_eq!(m, json!({"mcpServers": {"other": {"command": "x"}}}));
    }

    #[test]
    fn install_wires_every_event_rawko_uses_with_tool_matchers_and_long_waits() {
        let dir = tempfile::tempdir().unwrap();
        install(dir.path(), "/bin/rawko", None).unwrap();
        let s: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(".claude/settings.local.json")).unwrap(),
        )
        .unwrap();
        for event in [
            "PermissionRequest",
            "PermissionDenied",
            "PostToolUseFailure",
            "StopFailure",
            "SubagentStart",
            "SubagentStop",
            "PreCompact",
            "PostCompact",
            "Notification",
        ] {
            let hook = &s["hooks"][event][0];
            assert_eq!(
                hook["hooks"][0]["command"],
                format!("/bin/rawko hook {event}"),
                "{event}: {s}"
            );
        }
        assert_eq!(s["hooks"]["PermissionRequest"][0]["matcher"], "*");
        assert_eq!(s["hooks"]["PostToolUseFailure"][0]["matcher"], "*");
        assert_eq!(
            s["hooks"]["PermissionRequest"][0]["hooks"][0]["timeout"],
            600
        );
        assert_eq!(s["hooks"]["Notification"][0].get("matcher"), None);
        uninstall(dir.path(), "/bin/rawko").unwrap();
        let s = std::fs::read_to_string(dir.path().join(".claude/settings.local.json")).unwrap();
        assert_eq!(s.trim(), "{}");
    }

    #[test]
    fn a_max_reminders_above_claude_codes_stop_block_cap_is_warned_about() {
        assert_eq!(reminders_warning(8, 8), None);
        let w = reminders_warning(12, 8).unwrap();
        assert!(
            w.contains("maxReminders is 12") && w.contains("at most 8"),
            "{w}"
        );
        assert_eq!(stop_hook_block_cap(|_| None), 8);
        assert_eq!(
            stop_hook_block_cap(|k| (k == "CLAUDE_CODE_STOP_HOOK_BLOCK_CAP").then(|| "20".into())),
            20
        );
    }

    #[test]
    fn plan_mode_is_never_widened() {
        use crate::external::ToolDecision;
        let allow = || ToolDecision::Allow {
            updated_input: None,
        };
        let decision = |a: HookAnswer| a.json.map(|j| j["hookSpecificOutput"].clone());
        assert_eq!(
            decision(pre_tool_use_answer(allow(), false, false)).unwrap()["permissionDecision"],
            "allow"
        );
        // In plan mode a call the user allowed in the editor is left to Claude Code's plan mode.
        assert_eq!(
            pre_tool_use_answer(allow(), true, false),
            HookAnswer::pass()
        );
        let changed = pre_tool_use_answer(
            ToolDecision::Allow {
                updated_input: Some(json!({"command": "ls"})),
            },
            true,
            false,
        );
        let changed = decision(changed).unwrap();
        assert_eq!(changed["permissionDecision"], "ask");
        assert_eq!(changed["updatedInput"], json!({"command": "ls"}));
        // A refusal stays a refusal.
        assert_eq!(
            pre_tool_use_answer(ToolDecision::Deny("no".into()), true, true),
            HookAnswer::block("no")
        );
        assert_eq!(permission_request_answer(allow(), true), HookAnswer::pass());
        assert_eq!(
            permission_request_answer(ToolDecision::Pass, true),
            HookAnswer::pass()
        );
    }

    #[test]
    fn a_call_nobody_can_be_asked_about_is_deferred_only_in_print_mode() {
        use crate::external::ToolDecision;
        let decision = |unattended| {
            pre_tool_use_answer(ToolDecision::Ask("no editor".into()), false, unattended)
                .json
                .unwrap()["hookSpecificOutput"]["permissionDecision"]
                .clone()
        };
        assert_eq!(decision(false), "ask");
        assert_eq!(decision(true), "defer");
    }

    #[test]
    fn a_permission_request_is_answered_with_a_behavior() {
        use crate::external::ToolDecision;
        let behavior = |d| {
            permission_request_answer(d, false).json.unwrap()["hookSpecificOutput"]["decision"]
                .clone()
        };
        assert_eq!(
            behavior(ToolDecision::Deny("outside the workspace".into())),
            json!({"behavior": "deny", "message": "outside the workspace"})
        );
        assert_eq!(
            behavior(ToolDecision::Allow {
                updated_input: None
            }),
            json!({"behavior": "allow"})
        );
        assert_eq!(behavior(ToolDecision::Pass), json!({"behavior": "allow"}));
        // Nobody to ask in rawko: Claude Code asks its own user (or refuses, in -p).
        assert_eq!(
            permission_request_answer(ToolDecision::Ask("no editor".into()), false),
            HookAnswer::pass()
        );
        assert_eq!(
            HookAnswer::block("no").to_http("PermissionRequest")["hookSpecificOutput"]["decision"]
                ["behavior"],
            "deny"
        );
    }

    #[test]
    fn answers_in_both_forms() {
        assert_eq!(
            HookAnswer::block("no").to_command(),
            (2, String::new(), "no".into())
        );
        assert_eq!(
            HookAnswer::block("no").to_http("PreToolUse")["hookSpecificOutput"]
                ["permissionDecision"],
            "deny"
        );
        assert_eq!(
            HookAnswer::block("go on").to_http("Stop"),
            json!({"decision": "block", "reason": "go on"})
        );
        let c = HookAnswer::context("SessionStart", Some("phase".into()));
        // Keys in the order they are written (serde_json's `preserve_order`, on with the ACP SDK).
        assert_eq!(c.to_command().1, "{\"hookSpecificOutput\":{\"hookEventName\":\"SessionStart\",\"additionalContext\":\"phase\"}}\n");
        assert_eq!(HookAnswer::pass().to_http("PostToolUse"), json!({}));
    }
}

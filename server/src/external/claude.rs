//! Claude Code's side: what rawko answers to a hook, in the two forms Claude Code reads (a command
//! hook's exit code, stdout and stderr; an `http` hook's JSON body), and the entries
//! `rawko hook install --claude` writes into `.claude/settings.local.json` and `.mcp.json`.

use std::path::Path;

use serde_json::{json, Map, Value};

/// The events rawko answers.
pub const EVENTS: [&str; 6] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SessionEnd",
];

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
        let timeout = if matches!(event, "PreToolUse" | "Stop") {
            600
        } else {
            30
        };
        let mut group = json!({"hooks": [{"type": "command", "command": hook_command(exe, event, workflow), "timeout": timeout}]});
        if matches!(event, "PreToolUse" | "PostToolUse") {
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
        if let Some(hooks) = settings.get_mut("hooks").and_then(Value::as_object_mut) {
            let mut removed = 0;
            for list in hooks.values_mut().filter_map(Value::as_array_mut) {
                for group in list.iter_mut() {
                    if let Some(hs) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                        let before = hs.len();
                        hs.retain(|h| !h["command"].as_str().is_some_and(|c| is_ours(c, exe)));
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
            if removed > 0 {
                changes.push(format!(
                    "removed {removed} rawko hooks from {}",
                    settings_path.display()
                ));
            }
        }
        if settings
            .get("hooks")
            .and_then(Value::as_object)
            .is_some_and(Map::is_empty)
        {
            settings.remove("hooks");
        }
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
        // Six hooks, the permission of the workflow tools, the MCP server.
        assert_eq!(changes.len(), 8, "{changes:#?}");
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

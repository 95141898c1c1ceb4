//! Gemini CLI's side: what rawko answers to its hooks, in the form Gemini CLI reads (exit 0 and
//! one JSON object on stdout: `decision`/`reason`, `hookSpecificOutput.additionalContext`,
//! `hookSpecificOutput.toolConfig`), its tools as the gate knows them, and the entries
//! `rawko hook install --gemini` writes into `.gemini/settings.json`.
//!
//! Gemini CLI 0.61 (its `hookRunner.js`, `hookAggregator.js`, `client.js`): a command hook gets
//! the event's JSON on stdin; exit 0 with JSON on stdout is read as that JSON; exit 2 blocks with
//! stderr as the reason; a hook's `timeout` is in milliseconds (60 s when absent). rawko answers
//! with exit 0 and JSON, so the reason reaches the agent exactly as rawko wrote it (an exit-2
//! reason is trimmed, and a reminder must come back to rawko unchanged).

use std::path::Path;

use serde_json::{json, Map, Value};

use super::claude::{read_json, remove_hooks, write_json, HookAnswer};
use super::ToolDecision;
use crate::workflow::definition::ToolPolicy;
use crate::workflow::tools::{self, Call, ToolClass};
use crate::workflow::{WorkflowSet, WorkflowState};

/// The events `install` wires, in the order Gemini CLI fires them in a turn (SessionEnd when it
/// exits).
pub const EVENTS: [&str; 8] = [
    "SessionStart",
    "BeforeAgent",
    "BeforeToolSelection",
    "BeforeTool",
    "AfterTool",
    "AfterAgent",
    "PreCompress",
    "SessionEnd",
];

/// The name of rawko's MCP server in the settings; Gemini CLI calls its tools `mcp_rawko_*`.
const SERVER: &str = "rawko";

/// rawko's MCP tools as Gemini CLI names them (`mcp_{server}_{tool}`): always offered.
pub const MCP_TOOLS: [&str; 3] = [
    "mcp_rawko_workflow_step",
    "mcp_rawko_workflow_status",
    "mcp_rawko_workflow_start",
];

/// Gemini CLI's own tools (0.61), which BeforeToolSelection may name. Its MCP tools other than
/// rawko's are named only when a phase's whitelist names them.
pub const BUILTIN_TOOLS: &[&str] = &[
    "read_file",
    "read_many_files",
    "write_file",
    "replace",
    "run_shell_command",
    "glob",
    "grep_search",
    "list_directory",
    "web_fetch",
    "google_web_search",
    "write_todos",
    "invoke_agent",
    "activate_skill",
    "ask_user",
    "enter_plan_mode",
    "exit_plan_mode",
    "update_topic",
    "complete_task",
    "get_internal_docs",
    "read_mcp_resource",
    "list_mcp_resources",
];

/// How long Gemini CLI waits for each hook, in milliseconds: an approval in the editor or the
/// countdown take up to [`super::MAX_HOOK_WAIT`], the rest answer at once. SessionEnd runs while
/// Gemini CLI exits, which waits for it: a short bound, so an unreachable rawko does not hold the
/// exit.
fn timeout_ms(event: &str) -> u64 {
    match event {
        "BeforeTool" | "AfterAgent" => 600_000,
        "SessionEnd" => 5_000,
        _ => 30_000,
    }
}

/// The name the gate, the user's hooks and the editor see for a Gemini CLI tool: its Claude Code
/// name when the catalogue has one (`write_file` → `Write`, `run_shell_command` → `Bash`, so the
/// gate reads its command through the shell), else its own. An MCP tool keeps its name: rawko's
/// `mcp_rawko_workflow_step` is run by `rawko mcp`, not by the task as its own `workflow_step`.
pub fn gate_name(tool: &str) -> String {
    if tool.starts_with("mcp_") {
        return tool.to_owned();
    }
    tools::canonical(tool).to_owned()
}

/// A key for a tool call that Gemini CLI gives no id: BeforeTool and AfterTool of one call carry
/// the same name and input.
pub fn call_key(tool: &str, input: &Value) -> String {
    format!("{tool}\u{0}{input}")
}

/// The phase context, appended to the prompt (BeforeAgent, SessionStart) or to a tool's result
/// (AfterTool).
pub fn context(event: &str, context: Option<String>) -> HookAnswer {
    HookAnswer::context(event, context)
}

/// A refusal: the turn (BeforeAgent), the call (BeforeTool) or the stop (AfterAgent, where the
/// reason is the agent's next prompt).
pub fn deny(reason: impl Into<String>) -> HookAnswer {
    HookAnswer {
        json: Some(json!({"decision": "deny", "reason": reason.into()})),
        ..HookAnswer::default()
    }
}

/// rawko's decision about a call, as BeforeTool's answer. Gemini CLI's own policy still applies
/// to a call rawko lets through (a hook's `allow` does not grant what its policy denies).
pub fn tool_answer(decision: ToolDecision) -> HookAnswer {
    match decision {
        ToolDecision::Pass => HookAnswer::pass(),
        ToolDecision::Deny(reason) => deny(reason),
        // No editor could be asked. Gemini CLI takes a hook's `ask` as "ask the user" even in
        // headless `gemini -p`, which has nobody to ask and then waits for ever (0.61), and a
        // hook cannot tell which way it runs: so the call is refused, saying why.
        ToolDecision::Ask(reason) => deny(format!(
            "{reason}\n(no editor is attached to rawko to approve this call: open the folder in an editor with rawko to approve such calls)"
        )),
        ToolDecision::Allow { updated_input } => {
            let mut out = json!({"decision": "allow", "reason": "allowed in rawko"});
            if let Some(input) = updated_input.filter(Value::is_object) {
                // Merged over the model's arguments by Gemini CLI.
                out["hookSpecificOutput"] =
                    json!({"hookEventName": "BeforeTool", "tool_input": input});
            }
            HookAnswer {
                json: Some(out),
                ..HookAnswer::default()
            }
        }
    }
}

/// The functions the current phase lets the model call, for BeforeToolSelection; `None` when it
/// restricts nothing a list could say (no workflow, no tool list, or a blacklist, whose "all but
/// these" Gemini CLI's whitelist cannot say without knowing every MCP server's tools).
pub fn allowed_functions(state: Option<&WorkflowState>, set: &WorkflowSet) -> Option<Vec<String>> {
    let phase = state?.phase(set)?;
    let Some(ToolPolicy::Whitelist(rules)) = &phase.tools else {
        return None;
    };
    let covered = |name: &str| {
        let call = Call::new(name);
        call.class() == ToolClass::Workflow || rules.iter().any(|r| r.covers(&call))
    };
    let mut names: Vec<String> = BUILTIN_TOOLS
        .iter()
        .filter(|n| covered(n))
        .map(|n| (*n).to_owned())
        .collect();
    names.extend(MCP_TOOLS.iter().map(|n| (*n).to_owned()));
    // Another MCP server's tool the whitelist names (`mcp__server__tool`), as Gemini CLI names it.
    for rule in rules.iter() {
        let tool = rule.source().split('(').next().unwrap_or_default();
        if let Some((server, name)) = tool
            .strip_prefix("mcp__")
            .and_then(|rest| rest.split_once("__"))
        {
            let gemini = format!("mcp_{server}_{name}");
            if !names.contains(&gemini) {
                names.push(gemini);
            }
        }
    }
    Some(names)
}

/// BeforeToolSelection's answer: the model may call only `names` (mode AUTO, so it may still
/// answer in text and end its turn); nothing to say when `None`.
pub fn tool_selection(names: Option<Vec<String>>) -> HookAnswer {
    match names {
        None => HookAnswer::pass(),
        Some(names) => HookAnswer {
            json: Some(json!({"hookSpecificOutput": {
                "hookEventName": "BeforeToolSelection",
                "toolConfig": {"mode": "AUTO", "allowedFunctionNames": names}
            }})),
            ..HookAnswer::default()
        },
    }
}

/// Whether the phase context `context` is in the conversation Gemini CLI is about to send
/// (BeforeToolSelection's `llm_request.messages`), found by its first line as Gemini CLI stores
/// it (it escapes `<` and `>` in a hook's context).
pub fn context_in(messages: &Value, context: &str) -> bool {
    let Some(mark) = context.lines().map(str::trim).find(|l| !l.is_empty()) else {
        return true;
    };
    let mark = mark.replace('<', "&lt;").replace('>', "&gt;");
    messages.as_array().into_iter().flatten().any(|m| {
        m["content"]
            .as_str()
            .is_some_and(|text| text.contains(&mark))
    })
}

/// Whether AfterTool's `tool_response` reports a failure (`error` set).
pub fn failed(response: &Value) -> bool {
    response.get("error").is_some_and(|e| !e.is_null())
}

/// The command a hook entry runs: `<rawko> hook EVENT --gemini [--workflow KEY]`.
pub fn hook_command(exe: &str, event: &str, workflow: Option<&str>) -> String {
    let mut c = format!(
        "{} hook {event} --gemini",
        crate::hooks::template::shell_quote(exe)
    );
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
    command.starts_with(&prefix) && command.contains(" --gemini")
}

fn settings_path(workspace: &Path) -> std::path::PathBuf {
    workspace.join(".gemini").join("settings.json")
}

/// Adds rawko's hook entries and MCP server to a workspace's Gemini CLI settings, keeping
/// everything else. Returns what changed, a line each.
pub fn install(workspace: &Path, exe: &str, workflow: Option<&str>) -> Result<Vec<String>, String> {
    let path = settings_path(workspace);
    let mut settings = read_json(&path)?;
    let mut changes = Vec::new();
    let hooks = settings
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(hooks) = hooks.as_object_mut() else {
        return Err(format!(
            "\"hooks\" in {} is not an object; nothing was changed",
            path.display()
        ));
    };
    for event in EVENTS {
        let list = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()));
        let Some(list) = list.as_array_mut() else {
            return Err(format!(
                "hooks.{event} in {} is not a list; nothing was changed",
                path.display()
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
        let mut group = json!({"hooks": [{
            "name": "rawko",
            "type": "command",
            "command": hook_command(exe, event, workflow),
            "timeout": timeout_ms(event),
        }]});
        if matches!(event, "BeforeTool" | "AfterTool") {
            group["matcher"] = json!("*");
        }
        list.push(group);
        changes.push(format!("added the {event} hook to {}", path.display()));
    }
    let servers = settings
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(servers) = servers.as_object_mut() else {
        return Err(format!(
            "\"mcpServers\" in {} is not an object; nothing was changed",
            path.display()
        ));
    };
    if servers.contains_key(SERVER) {
        changes.push(format!(
            "kept the rawko MCP server already in {}",
            path.display()
        ));
    } else {
        // `trust`: Gemini CLI does not ask before the workflow tools, which only move the
        // workflow (the not-done reminder tells the agent to call them).
        servers.insert(
            SERVER.into(),
            json!({"command": exe, "args": ["mcp"], "trust": true}),
        );
        changes.push(format!(
            "added the rawko MCP server to {} (trusted: its workflow tools run unasked)",
            path.display()
        ));
    }
    write_json(&path, settings)?;
    Ok(changes)
}

/// Removes exactly what [`install`] added.
pub fn uninstall(workspace: &Path, exe: &str) -> Result<Vec<String>, String> {
    let path = settings_path(workspace);
    let mut changes = Vec::new();
    if !path.exists() {
        return Ok(changes);
    }
    let mut settings = read_json(&path)?;
    changes.extend(remove_hooks(&mut settings, &path, |c| is_ours(c, exe)));
    if let Some(servers) = settings
        .get_mut("mcpServers")
        .and_then(Value::as_object_mut)
    {
        if servers
            .get(SERVER)
            .is_some_and(|s| s["command"] == json!(exe) && s["args"] == json!(["mcp"]))
        {
            servers.remove(SERVER);
            changes.push(format!(
                "removed the rawko MCP server from {}",
                path.display()
            ));
        }
    }
    if settings
        .get("mcpServers")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
    {
        settings.remove("mcpServers");
    }
    write_json(&path, settings)?;
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINE: &str = r#"{"general": {"vimMode": true}, "hooks": {"BeforeTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "./mine.sh"}]}]}, "mcpServers": {"other": {"command": "x"}}}"#;

    #[test]
    fn install_merges_and_uninstall_removes_exactly_ours() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join(".gemini")).unwrap();
        std::fs::write(ws.join(".gemini/settings.json"), MINE).unwrap();
        let changes = install(ws, "/opt/rawko bin/rawko", Some("feature")).unwrap();
        // Eight hooks and the MCP server.
        assert_eq!(changes.len(), 9, "{changes:#?}");
        let again = install(ws, "/opt/rawko bin/rawko", Some("feature")).unwrap();
        assert_eq!(again.len(), 1, "idempotent: {again:#?}");
        let s: Value = serde_json::from_str(
            &std::fs::read_to_string(ws.join(".gemini/settings.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(s["general"]["vimMode"], true);
        assert_eq!(s["hooks"]["BeforeTool"].as_array().unwrap().len(), 2);
        assert_eq!(
            s["hooks"]["AfterAgent"][0]["hooks"][0]["command"],
            "'/opt/rawko bin/rawko' hook AfterAgent --gemini --workflow feature"
        );
        assert_eq!(s["hooks"]["AfterAgent"][0]["hooks"][0]["timeout"], 600_000);
        assert_eq!(s["hooks"]["BeforeAgent"][0]["hooks"][0]["timeout"], 30_000);
        assert_eq!(
            s["hooks"]["SessionEnd"][0]["hooks"][0]["command"],
            "'/opt/rawko bin/rawko' hook SessionEnd --gemini --workflow feature"
        );
        assert_eq!(s["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"], 5_000);
        assert_eq!(s["mcpServers"]["rawko"]["trust"], true);
        assert_eq!(s["mcpServers"]["other"]["command"], "x");
        uninstall(ws, "/opt/rawko bin/rawko").unwrap();
        let s: Value = serde_json::from_str(
            &std::fs::read_to_string(ws.join(".gemini/settings.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(s, serde_json::from_str::<Value>(MINE).unwrap());
    }

    #[test]
    fn a_broken_settings_file_is_left_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join(".gemini")).unwrap();
        std::fs::write(ws.join(".gemini/settings.json"), "{\"hooks\": ").unwrap();
        let err = install(ws, "rawko", None).unwrap_err();
        assert!(err.contains("is not valid JSON"), "{err}");
        assert!(err.contains("nothing was changed"), "{err}");
        assert_eq!(
            std::fs::read_to_string(ws.join(".gemini/settings.json")).unwrap(),
            "{\"hooks\": "
        );
        std::fs::write(ws.join(".gemini/settings.json"), r#"{"hooks": []}"#).unwrap();
        let err = install(ws, "rawko", None).unwrap_err();
        assert!(err.contains("\"hooks\""), "{err}");
    }

    /// A workflow `w` of one phase with `tools` in its front matter, loaded as rawko loads it,
    /// and its start.
    fn phase_with(tools: &str) -> (WorkflowSet, WorkflowState) {
        let dir = tempfile::tempdir().unwrap();
        let w = dir.path().join("w");
        std::fs::create_dir_all(&w).unwrap();
        std::fs::write(
            w.join("workflow.yaml"),
            "name: W\ncommandName: w\ninitialMessage: \"{description}\"\nphases:\n  - p.md\n",
        )
        .unwrap();
        std::fs::write(
            w.join("p.md"),
            format!("---\nid: p\nname: P\nemoji: \"P\"\n{tools}---\nDo it.\n"),
        )
        .unwrap();
        let root = crate::workflow::definition::WorkflowRoot {
            kind: crate::workflow::definition::RootKind::Project,
            path: dir.path().to_path_buf(),
        };
        let set = crate::workflow::load(&[root]).workflows;
        let state = WorkflowState::start(&set, "w", "x", "task-1", 1).expect("start");
        (set, state)
    }

    #[test]
    fn a_whitelist_phase_offers_what_it_covers_and_nothing_else_is_narrowed() {
        let (set, state) = phase_with(
            "tools:\n  whitelist: [Read, \"Bash(git status*)\", mcp__github__create_pr]\n",
        );
        let names = allowed_functions(Some(&state), &set).expect("narrowed");
        for name in [
            "read_file",
            "read_many_files",
            "run_shell_command",
            "mcp_rawko_workflow_step",
            "mcp_rawko_workflow_status",
            "mcp_rawko_workflow_start",
            "mcp_github_create_pr",
        ] {
            assert!(names.iter().any(|n| n == name), "{name}: {names:?}");
        }
        for name in ["write_file", "replace", "glob", "web_fetch"] {
            assert!(!names.iter().any(|n| n == name), "{name}: {names:?}");
        }
        // A blacklist, a phase without a tool list, no workflow: nothing to narrow.
        let (set, state) = phase_with("tools:\n  blacklist: [Write]\n");
        assert_eq!(allowed_functions(Some(&state), &set), None);
        let (set, state) = phase_with("");
        assert_eq!(allowed_functions(Some(&state), &set), None);
        assert_eq!(allowed_functions(None, &set), None);
    }

    #[test]
    fn answers_are_gemini_clis_json() {
        assert_eq!(
            deny("no").to_command(),
            (
                0,
                "{\"decision\":\"deny\",\"reason\":\"no\"}\n".into(),
                String::new()
            )
        );
        let allow = tool_answer(ToolDecision::Allow {
            updated_input: Some(json!({"content": "x"})),
        });
        let out = allow.json.unwrap();
        assert_eq!(out["decision"], "allow");
        assert_eq!(out["hookSpecificOutput"]["tool_input"]["content"], "x");
        let asked = tool_answer(ToolDecision::Ask("why".into())).json.unwrap();
        assert_eq!(asked["decision"], "deny");
        assert!(asked["reason"]
            .as_str()
            .unwrap()
            .starts_with("why\n(no editor"));
        assert_eq!(tool_answer(ToolDecision::Pass).to_command().1, "");
        let narrowed = tool_selection(Some(vec!["read_file".into()])).json.unwrap();
        assert_eq!(
            narrowed["hookSpecificOutput"]["toolConfig"],
            json!({"mode": "AUTO", "allowedFunctionNames": ["read_file"]})
        );
        assert_eq!(tool_selection(None).to_command().1, "");
        assert!(failed(
            &json!({"llmContent": "x", "error": {"message": "no"}})
        ));
        assert!(!failed(&json!({"llmContent": "x"})));
        assert_eq!(gate_name("run_shell_command"), "Bash");
        let messages = json!([{"role": "user", "content": "do it <hook_context>[Path: a &gt; b]\nmore</hook_context>"}]);
        assert!(context_in(&messages, "[Path: a > b]\nmore"));
        assert!(!context_in(&messages, "[Path: a > c]\nmore"));
        assert_eq!(gate_name("mcp_other_tool"), "mcp_other_tool");
        assert_eq!(
            gate_name("mcp_rawko_workflow_step"),
            "mcp_rawko_workflow_step"
        );
    }
}

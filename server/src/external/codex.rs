//! Codex CLI's side of the hooks: the entries `rawko hook install --codex` writes into
//! `.codex/hooks.json` (and rawko's MCP server into `.codex/config.toml`), and how Codex's tool
//! calls reach the gate. Codex's hooks take Claude Code's format (the same event names, input and
//! exit codes), with three differences rawko minds:
//!
//! - its edits arrive as `apply_patch`, the whole patch in `tool_input.command`: the gate is
//!   asked about an `Edit` (or a `Write`, for a file the patch adds or deletes) of each file the
//!   patch names ([`tool_calls`]), so a phase that forbids editing blocks it;
//! - its PreToolUse honours only a block (exit 2, or `permissionDecision: deny`), not allow, ask
//!   or `updatedInput`: rawko holds the call until it has decided (the editor answered), then
//!   blocks it or says nothing ([`pre_tool_use_answer`]);
//! - `codex exec` runs a project's hooks only once the user has reviewed and trusted them (the
//!   `/hooks` screen of the interactive `codex`): install says so.

use std::path::{Component, Path, PathBuf};

use serde_json::{json, Map, Value};

use super::claude::{read_json, remove_hooks, write_json, HookAnswer};
use super::ToolDecision;
use crate::provider::ToolCall;

/// The events rawko answers (those Codex 0.171 fires).
pub const EVENTS: [&str; 6] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "Stop",
    "SessionEnd",
];

/// What install tells the user: Codex skips hooks nobody has reviewed, and a project's config
/// only counts in a trusted project.
pub const REVIEW_NOTE: &str = "Codex runs these hooks only once you have reviewed and trusted them: start `codex` in this folder and open /hooks (it also lists them when a hook needs review), and trust the project when Codex asks (or run `codex exec --trust` once), since a project's .codex/ is read only in a trusted project. Until then `codex exec` skips them without a word. Changing the hooks (another --workflow) asks for a review again. For one run without a review, `codex exec --dangerously-bypass-hook-trust` runs them.";

/// Codex's name of its edit tool.
pub const APPLY_PATCH: &str = "apply_patch";

/// The command a hook entry runs: `<rawko> hook EVENT --codex [--workflow KEY]`.
pub fn hook_command(exe: &str, event: &str, workflow: Option<&str>) -> String {
    use crate::hooks::template::shell_quote;
    let mut c = format!("{} hook {event} --codex", shell_quote(exe));
    if let Some(w) = workflow {
        c.push_str(&format!(" --workflow {}", shell_quote(w)));
    }
    c
}

fn is_ours(command: &str, exe: &str) -> bool {
    let prefix = format!("{} hook ", crate::hooks::template::shell_quote(exe));
    command.starts_with(&prefix)
}

fn hooks_path(workspace: &Path) -> PathBuf {
    workspace.join(".codex").join("hooks.json")
}

fn config_path(workspace: &Path) -> PathBuf {
    workspace.join(".codex").join("config.toml")
}

/// What rawko adds to `.codex/config.toml`: rawko's MCP server, between two marker lines so
/// that uninstall removes exactly it. Codex hands a stdio MCP server only a few variables of its
/// own environment; `rawko mcp` also needs those that say where the endpoint's file is.
fn mcp_block(exe: &str) -> String {
    format!(
        "{MCP_BEGIN}\n[mcp_servers.rawko]\ncommand = {}\nargs = [\"mcp\"]\nenv_vars = [\"XDG_RUNTIME_DIR\", \"TMPDIR\"]\n{MCP_END}\n",
        toml_string(exe)
    )
}

const MCP_BEGIN: &str = "# rawko: its MCP server (rawko hook install --codex)";
const MCP_END: &str = "# rawko: end";

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Adds rawko's hook entries to `.codex/hooks.json` and its MCP server to `.codex/config.toml`,
/// keeping everything else. Returns what changed, a line each.
pub fn install(workspace: &Path, exe: &str, workflow: Option<&str>) -> Result<Vec<String>, String> {
    let path = hooks_path(workspace);
    let mut file = read_json(&path)?;
    let config = config_path(workspace);
    let toml = match std::fs::read_to_string(&config) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("cannot read {}: {e}", config.display())),
    };
    let mut changes = Vec::new();
    let hooks = file
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
        // An approval in the editor and the countdown take time; rawko answers within
        // MAX_HOOK_WAIT, before Codex gives up.
        let timeout = if matches!(event, "PreToolUse" | "Stop") {
            600
        } else {
            30
        };
        // No matcher: every tool (Codex matches the others against the tool's name).
        list.push(json!({"hooks": [{"type": "command", "command": hook_command(exe, event, workflow), "timeout": timeout}]}));
        changes.push(format!("added the {event} hook to {}", path.display()));
    }
    let new_toml = if has_rawko_server(&toml) {
        changes.push(format!(
            "kept the rawko MCP server already in {}",
            config.display()
        ));
        None
    } else {
        changes.push(format!(
            "added the rawko MCP server to {}",
            config.display()
        ));
        let mut t = toml.clone();
        if !t.is_empty() && !t.ends_with('\n') {
            t.push('\n');
        }
        if !t.is_empty() {
            t.push('\n');
        }
        t.push_str(&mcp_block(exe));
        Some(t)
    };
    write_json(&path, file)?;
    if let Some(t) = new_toml {
        write_text(&config, &t)?;
    }
    Ok(changes)
}

/// Whether a `[mcp_servers.rawko]` table is there (rawko's or the user's own).
fn has_rawko_server(toml: &str) -> bool {
    toml.lines().any(|l| {
        let l: String = l.chars().filter(|c| !c.is_whitespace()).collect();
        l == "[mcp_servers.rawko]" || l == "[mcp_servers.\"rawko\"]"
    })
}

fn write_text(path: &Path, text: &str) -> Result<(), String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let tmp = path.with_extension("toml.rawko-tmp");
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Removes exactly what [`install`] added.
pub fn uninstall(workspace: &Path, exe: &str) -> Result<Vec<String>, String> {
    let path = hooks_path(workspace);
    let config = config_path(workspace);
    let mut changes = Vec::new();
    if path.exists() {
        let mut file = read_json(&path)?;
        changes.extend(remove_hooks(&mut file, &path, |c| is_ours(c, exe)));
        if file.is_empty() {
            std::fs::remove_file(&path)
                .map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
        } else {
            write_json(&path, file)?;
        }
    }
    match std::fs::read_to_string(&config) {
        Ok(toml) => {
            let block = mcp_block(exe);
            if let Some(at) = toml.find(&block) {
                let mut rest = format!("{}{}", &toml[..at], &toml[at + block.len()..]);
                // The blank line install put before it goes too.
                if rest.ends_with("\n\n") {
                    rest.pop();
                }
                if rest.trim().is_empty() {
                    std::fs::remove_file(&config)
                        .map_err(|e| format!("cannot remove {}: {e}", config.display()))?;
                } else {
                    write_text(&config, &rest)?;
                }
                changes.push(format!(
                    "removed the rawko MCP server from {}",
                    config.display()
                ));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot read {}: {e}", config.display())),
    }
    Ok(changes)
}

/// What one `apply_patch` does to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchOp {
    Add,
    Update,
    Delete,
    /// The new name of a file the patch updates (`*** Move to:`).
    MoveTo,
}

/// The files a patch names, in order, with what it does to each: the `*** Add File:`,
/// `*** Update File:`, `*** Delete File:` and `*** Move to:` lines of Codex's patch format.
pub fn patch_files(patch: &str) -> Vec<(PatchOp, String)> {
    let mut out = Vec::new();
    for line in patch.lines() {
        let line = line.trim_end_matches('\r');
        let found = [
            ("*** Add File: ", PatchOp::Add),
            ("*** Update File: ", PatchOp::Update),
            ("*** Delete File: ", PatchOp::Delete),
            ("*** Move to: ", PatchOp::MoveTo),
        ]
        .into_iter()
        .find_map(|(prefix, op)| line.strip_prefix(prefix).map(|p| (op, p.trim())));
        if let Some((op, path)) = found.filter(|(_, p)| !p.is_empty()) {
            out.push((op, path.to_owned()));
        }
    }
    out
}

/// `path` of a patch, absolute: relative ones are read from `cwd` (where Codex applies them),
/// `.` and `..` resolved without the file system.
fn absolute(cwd: &Path, path: &str) -> String {
    let joined = cwd.join(path);
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out.display().to_string()
}

/// The calls the gate is asked about for one PreToolUse of Codex. An `apply_patch` becomes an
/// `Edit` of each file it updates (or moves) and a `Write` of each file it adds, deletes or
/// moves to, with the file's absolute path as `file_path` and the patch as `patch`, so that a
/// phase's rules about editing and paths hold for it; the first keeps Codex's call id, the
/// others add `#2`, `#3`… A patch that names no file is an `Edit` without a path (a phase that
/// allows editing only somewhere blocks it). Every other tool (its shell calls come as `Bash`
/// with the command in `command`) is asked about as it came.
pub fn tool_calls(tool: &str, input: &Value, id: &str, cwd: &Path) -> Vec<ToolCall> {
    if tool != APPLY_PATCH {
        return vec![ToolCall {
            id: id.to_owned(),
            name: tool.to_owned(),
            input: input.clone(),
        }];
    }
    let patch = input["command"]
        .as_str()
        .or_else(|| input["patch"].as_str())
        .or_else(|| input["input"].as_str())
        .unwrap_or_default();
    let files = patch_files(patch);
    if files.is_empty() {
        return vec![ToolCall {
            id: id.to_owned(),
            name: "Edit".to_owned(),
            input: json!({"patch": patch}),
        }];
    }
    files
        .into_iter()
        .enumerate()
        .map(|(i, (op, path))| {
            let name = match op {
                PatchOp::Update => "Edit",
                PatchOp::Add | PatchOp::Delete | PatchOp::MoveTo => "Write",
            };
            let mut input = json!({"file_path": absolute(cwd, &path), "patch": patch});
            if op == PatchOp::Delete {
                input["delete"] = json!(true);
            }
            ToolCall {
                id: if i == 0 {
                    id.to_owned()
                } else {
                    format!("{id}#{}", i + 1)
                },
                name: name.to_owned(),
                input,
            }
        })
        .collect()
}

/// rawko's decision about a call, as Codex's PreToolUse takes it: only a block is honoured, so
/// a refusal is exit 2 with the reason, and anything else (allowed by the phase, by the user in
/// the editor, or by a hook) is no answer at all, so the call runs. Nobody in rawko to ask (no
/// editor attached) is a refusal saying why: Codex would take an `ask` as nothing, and run the
/// call the phase blocks.
pub fn pre_tool_use_answer(decision: ToolDecision) -> HookAnswer {
    match decision {
        ToolDecision::Pass | ToolDecision::Allow { .. } => HookAnswer::pass(),
        ToolDecision::Deny(reason) => HookAnswer::block(reason),
        ToolDecision::Ask(reason) => HookAnswer::block(format!(
            "{reason}\n(no editor is attached to rawko to approve it, and Codex's hooks cannot ask you)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_patch_names_its_files_and_each_is_gated_as_an_edit_or_a_write() {
        let patch = "*** Begin Patch\n*** Add File: new.txt\n+hi\n*** Update File: src/a.rs\n*** Move to: src/b.rs\n@@\n-x\n+y\n*** Delete File: ../out.txt\n*** End Patch\n";
        assert_eq!(
            patch_files(patch),
            vec![
                (PatchOp::Add, "new.txt".to_owned()),
                (PatchOp::Update, "src/a.rs".to_owned()),
                (PatchOp::MoveTo, "src/b.rs".to_owned()),
                (PatchOp::Delete, "../out.txt".to_owned()),
            ]
        );
        let calls = tool_calls(
            APPLY_PATCH,
            &json!({"command": patch}),
            "call_1",
            Path::new("/ws"),
        );
        let seen: Vec<(&str, &str, &str)> = calls
            .iter()
            .map(|c| {
                (
                    c.id.as_str(),
                    c.name.as_str(),
                    c.input["file_path"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                ("call_1", "Write", "/ws/new.txt"),
                ("call_1#2", "Edit", "/ws/src/a.rs"),
                ("call_1#3", "Write", "/ws/src/b.rs"),
                ("call_1#4", "Write", "/out.txt"),
            ]
        );
        let shell = tool_calls(
            "Bash",
            &json!({"command": "ls"}),
            "call_2",
            Path::new("/ws"),
        );
        assert_eq!(shell.len(), 1);
        assert_eq!(shell[0].name, "Bash");
        let nameless = tool_calls(
            APPLY_PATCH,
            &json!({"command": "garbage"}),
            "c",
            Path::new("/ws"),
        );
        assert_eq!(nameless[0].name, "Edit");
        assert!(nameless[0].input.get("file_path").is_none());
    }

    #[test]
    fn only_a_block_is_answered() {
        assert_eq!(
            pre_tool_use_answer(ToolDecision::Allow {
                updated_input: Some(json!({"command": "x"}))
            }),
            HookAnswer::pass()
        );
        assert_eq!(pre_tool_use_answer(ToolDecision::Pass), HookAnswer::pass());
        assert_eq!(
            pre_tool_use_answer(ToolDecision::Deny("no".into())).to_command(),
            (2, String::new(), "no".into())
        );
        let (code, out, err) =
            pre_tool_use_answer(ToolDecision::Ask("blocked".into())).to_command();
        assert_eq!((code, out.as_str()), (2, ""));
        assert!(err.starts_with("blocked"), "{err}");
    }

    #[test]
    fn install_merges_and_uninstall_removes_exactly_ours() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join(".codex")).unwrap();
        let mine = r#"{"description": "mine", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./mine.sh"}]}]}}"#;
        std::fs::write(ws.join(".codex/hooks.json"), mine).unwrap();
        let toml = "model = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\"\n";
        std::fs::write(ws.join(".codex/config.toml"), toml).unwrap();
        let exe = "/opt/rawko bin/rawko";
        let changes = install(ws, exe, Some("feature")).unwrap();
        // Six hooks and the MCP server.
        assert_eq!(changes.len(), 7, "{changes:#?}");
        let again = install(ws, exe, Some("feature")).unwrap();
        assert_eq!(again.len(), 1, "idempotent: {again:#?}");
        let h: Value =
            serde_json::from_str(&std::fs::read_to_string(ws.join(".codex/hooks.json")).unwrap())
                .unwrap();
        assert_eq!(h["description"], "mine");
        assert_eq!(h["hooks"]["PreToolUse"].as_array().unwrap().len(), 2);
        assert_eq!(
            h["hooks"]["Stop"][0]["hooks"][0]["command"],
            "'/opt/rawko bin/rawko' hook Stop --codex --workflow feature"
        );
        let t = std::fs::read_to_string(ws.join(".codex/config.toml")).unwrap();
        assert!(t.starts_with(toml), "{t}");
        assert!(
            t.contains(
                "[mcp_servers.rawko]\ncommand = \"/opt/rawko bin/rawko\"\nargs = [\"mcp\"]\n"
            ),
            "{t}"
        );
        uninstall(ws, exe).unwrap();
        let h: Value =
            serde_json::from_str(&std::fs::read_to_string(ws.join(".codex/hooks.json")).unwrap())
                .unwrap();
        assert_eq!(h, serde_json::from_str::<Value>(mine).unwrap());
        assert_eq!(
            std::fs::read_to_string(ws.join(".codex/config.toml")).unwrap(),
            toml
        );
        // On a project with nothing of Codex's, uninstall leaves nothing behind.
        let empty = tempfile::tempdir().unwrap();
        install(empty.path(), exe, None).unwrap();
        uninstall(empty.path(), exe).unwrap();
        assert!(!empty.path().join(".codex/hooks.json").exists());
        assert!(!empty.path().join(".codex/config.toml").exists());
    }

    #[test]
    fn a_broken_hooks_file_is_left_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        std::fs::create_dir_all(ws.join(".codex")).unwrap();
        std::fs::write(ws.join(".codex/hooks.json"), "{\"hooks\": [").unwrap();
        let e = install(ws, "rawko", None).unwrap_err();
        assert!(
            e.contains("is not valid JSON") && e.contains("nothing was changed"),
            "{e}"
        );
        assert_eq!(
            std::fs::read_to_string(ws.join(".codex/hooks.json")).unwrap(),
            "{\"hooks\": ["
        );
        assert!(!ws.join(".codex/config.toml").exists());
        assert!(uninstall(ws, "rawko").is_err());
    }
}

//! The pure part of the `acp` provider's turn: command lines, the names of the agent's tools,
//! permission answers, and Bash results as terminal exits.

use std::path::Path;

use agent_client_protocol::v1::schema::{
    ContentBlock, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    SelectedPermissionOutcome, TerminalExitStatus, ToolCallContent, ToolCallLocation, ToolKind,
};
use serde_json::{json, Map, Value};

use crate::provider::ToolResult;

/// The most of a tool result the agent reported that rawko keeps.
const RESULT_BYTES: usize = 4000;

/// A terminal rawko ran for the agent: what `terminal/output` and `terminal/wait_for_exit` say.
#[derive(Debug, Clone, Default)]
pub(super) struct Finished {
    pub output: String,
    pub exit_code: Option<u32>,
    pub signal: Option<String>,
}

impl Finished {
    pub(super) fn status(&self) -> TerminalExitStatus {
        TerminalExitStatus::new()
            .exit_code(self.exit_code)
            .signal(self.signal.clone())
    }
}

/// Splits a command line into words as a shell would: spaces separate, quotes group, a backslash
/// escapes the next character (outside single quotes).
pub fn split_command(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(format!("unclosed ' in the agent command: {line}")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c) => word.push(c),
                            None => {
                                return Err(format!("unclosed \" in the agent command: {line}"))
                            }
                        },
                        Some(c) => word.push(c),
                        None => return Err(format!("unclosed \" in the agent command: {line}")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err("the agent command is empty".to_owned());
    }
    Ok(words)
}

/// `words` as one shell command line (quoted where needed).
pub(super) fn join_command(program: &str, args: &[String]) -> String {
    let quote = |w: &str| {
        if !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
        {
            w.to_owned()
        } else {
            format!("'{}'", w.replace('\'', "'\\''"))
        }
    };
    if args.is_empty() {
        // A whole command line given as the program (as claude-code-acp sends it).
        return program.to_owned();
    }
    std::iter::once(quote(program))
        .chain(args.iter().map(|a| quote(a)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The name rawko gives an agent's tool: the one the agent says (`name`, or Claude Code's
/// `_meta.claudeCode.toolName`), its ACP-routed tools by their plain names, else one inferred
/// from the kind.
pub(super) fn tool_name(
    name: Option<&str>,
    meta: Option<&Map<String, Value>>,
    kind: Option<ToolKind>,
    title: Option<&str>,
    input: &Value,
) -> String {
    let said = name.map(str::to_owned).or_else(|| {
        meta.and_then(|m| m.get("claudeCode"))
            .and_then(|c| c.get("toolName"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    if let Some(said) = said.filter(|s| !s.is_empty()) {
        return said
            .strip_prefix("mcp__acp__")
            .map_or(said.clone(), str::to_owned);
    }
    if let Some(name) = title.and_then(mcp_tool_of_title) {
        return name;
    }
    match kind {
        Some(ToolKind::Read) => "Read".to_owned(),
        Some(ToolKind::Edit) if input.get("old_string").is_some() => "Edit".to_owned(),
        Some(ToolKind::Edit) => "Write".to_owned(),
        Some(ToolKind::Execute) => "Bash".to_owned(),
        Some(ToolKind::Search) => "Grep".to_owned(),
        Some(ToolKind::Fetch) => "WebFetch".to_owned(),
        _ => title
            .and_then(|t| t.split_whitespace().next())
            .filter(|w| w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or("AgentTool")
            .to_owned(),
    }
}

/// An MCP tool's name, as Claude Code writes it (`mcp__{server}__{tool}`), from the title Gemini
/// CLI gives a call of it (`{tool} ({server} MCP Server)`): rawko's own `workflow_step` must be
/// known for rawko's, never taken for a call of rawko's tool the agent asks to run.
fn mcp_tool_of_title(title: &str) -> Option<String> {
    let (tool, server) = title.strip_suffix(" MCP Server)")?.split_once(" (")?;
    let word = |w: &str| {
        !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    };
    (word(tool) && word(server)).then(|| format!("mcp__{server}__{tool}"))
}

/// A shell command's input from its title, for a call that says nothing else of it: Gemini CLI
/// titles its `run_shell_command` with the command and sends no `rawInput`, so the editor is shown
/// the command it approves.
pub(super) fn command_of_title(kind: Option<ToolKind>, title: Option<&str>) -> Option<Value> {
    let command = title.filter(|t| !t.trim().is_empty())?;
    (kind == Some(ToolKind::Execute)).then(|| json!({"command": command}))
}

/// Whether rawko's Read of `path` for the agent (`fs/read_text_file`) failed only because
/// nothing is there, beneath the workspace (the Read tool's words for it). The agent is then
/// answered an empty file, as Zed answers for a file of the project that is not on disk (it
/// opens a new buffer for it): Gemini CLI reads a file before it writes it, a new one too, and
/// fails the write on any error it is answered (google-gemini/gemini-cli#9280).
pub(super) fn missing_beneath(path: &Path, workspace: &Path, result: &ToolResult) -> bool {
    result.is_error
        && result.content == format!("file \"{}\" does not exist", path.to_string_lossy())
        && super::grants::beneath(workspace, path).is_some()
        && std::fs::symlink_metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
}

/// An MCP tool call as Codex describes it (`rawInput` `{"server", "tool", "arguments"}`, its
/// title `mcp.<server>.<tool>` or `_meta.is_mcp_tool_call`): the tool's name as the other agents
/// name MCP tools (`mcp__<server>__<tool>`, so rawko's own `workflow_step` is known as rawko's)
/// and its arguments as the input.
pub(super) fn mcp_call(
    input: &Value,
    meta: Option<&Map<String, Value>>,
    title: Option<&str>,
) -> Option<(String, Value)> {
    let server = input.get("server")?.as_str()?;
    let tool = input.get("tool")?.as_str()?;
    let said = meta.and_then(|m| m.get("is_mcp_tool_call")) == Some(&Value::Bool(true))
        || title == Some(format!("mcp.{server}.{tool}").as_str());
    said.then(|| {
        (
            format!("mcp__{server}__{tool}"),
            input
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new())),
        )
    })
}

/// The input of an agent's tool call as rawko decides on it and the editor shows it: its
/// `rawInput` when it sent one; else (Gemini CLI sends none) what its diffs and locations say: a
/// diff's path and new text (`file_path` and `content`, or with its old text `old_string` and
/// `new_string`, an edit), else the path it names. Several paths are all under `paths`, and the
/// `file_path` is the first outside `workspace` when one is (so the workspace check refuses the
/// call), else the first. `None` when the call says none of these.
pub(super) fn input_of(
    raw: Option<&Value>,
    content: &[ToolCallContent],
    locations: &[ToolCallLocation],
    workspace: &Path,
) -> Option<Value> {
    if let Some(raw) = raw.filter(|r| !r.is_null() && r.as_object().is_none_or(|o| !o.is_empty())) {
        return Some(raw.clone());
    }
    let diffs: Vec<_> = content
        .iter()
        .filter_map(|c| match c {
            ToolCallContent::Diff(d) => Some(d),
            _ => None,
        })
        .collect();
    let mut paths: Vec<&Path> = diffs.iter().map(|d| d.path.as_path()).collect();
    paths.extend(locations.iter().map(|l| l.path.as_path()));
    let mut unique: Vec<&Path> = Vec::new();
    for p in paths {
        if !unique.contains(&p) {
            unique.push(p);
        }
    }
    let named = unique
        .iter()
        .find(|p| super::grants::beneath(workspace, p).is_none())
        .or(unique.first())?;
    let mut input = json!({"file_path": named.to_string_lossy()});
    if let Some(diff) = diffs.iter().find(|d| d.path == *named) {
        match &diff.old_text {
            Some(old) => {
                input["old_string"] = json!(old);
                input["new_string"] = json!(diff.new_text);
            }
            None => input["content"] = json!(diff.new_text),
        }
    }
    if unique.len() > 1 {
        input["paths"] = json!(unique
            .iter()
            .map(|p| p.to_string_lossy())
            .collect::<Vec<_>>());
    }
    Some(input)
}

pub(super) fn text_of(content: &[ToolCallContent]) -> String {
    let mut out = String::new();
    for c in content {
        if let ToolCallContent::Content(c) = c {
            if let ContentBlock::Text(t) = &c.content {
                out.push_str(&t.text);
            }
        }
    }
    crate::clip::clip_bytes(&out, RESULT_BYTES).into_owned()
}

/// The option of `kind` (or its sibling) among the agent's, as its answer.
pub(super) fn choose(options: &[PermissionOption], allow: bool) -> RequestPermissionOutcome {
    let kinds = if allow {
        [
            PermissionOptionKind::AllowOnce,
            PermissionOptionKind::AllowAlways,
        ]
    } else {
        [
            PermissionOptionKind::RejectOnce,
            PermissionOptionKind::RejectAlways,
        ]
    };
    kinds
        .iter()
        .find_map(|k| options.iter().find(|o| o.kind == *k))
        .map_or(RequestPermissionOutcome::Cancelled, |o| {
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(o.option_id.clone()))
        })
}

/// Bash's result as a terminal's output and exit: the last line is how it ended (`exit code N`,
/// `killed by SIG…`, `timed out …`); `None` when the call never ran (refused: that text is why).
pub(super) fn terminal_result(content: &str) -> Option<Finished> {
    let (output, last) = match content.rsplit_once('\n') {
        Some((output, last)) => (format!("{output}\n"), last),
        None => (String::new(), content),
    };
    let mut finished = Finished {
        output,
        ..Finished::default()
    };
    if let Some(code) = last.strip_prefix("exit code ") {
        finished.exit_code = Some(code.trim().parse().ok()?);
    } else if let Some(signal) = last.strip_prefix("killed by ") {
        finished.signal = Some(signal.trim().to_owned());
    } else if last.starts_with("timed out after ") {
        finished.output.push_str(last);
        finished.output.push('\n');
        finished.signal = Some("SIGKILL".to_owned());
    } else {
        return None;
    }
    Some(finished)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn command_lines_split_as_a_shell_would() {
        assert_eq!(
            split_command("claude-code-acp").unwrap(),
            ["claude-code-acp"]
        );
        assert_eq!(
            split_command("  gemini   --acp ").unwrap(),
            ["gemini", "--acp"]
        );
        assert_eq!(
            split_command(r#"node "/a b/index.js" 'x y' z\ w"#).unwrap(),
            ["node", "/a b/index.js", "x y", "z w"]
        );
        assert!(split_command("").is_err());
        assert!(split_command("node 'open").is_err());
        assert!(split_command("node \"open").is_err());
    }

    #[test]
    fn tool_names_come_from_the_agent_else_from_the_kind() {
        let meta: Map<String, Value> =
            serde_json::from_value(json!({"claudeCode": {"toolName": "mcp__acp__Write"}})).unwrap();
        assert_eq!(
            tool_name(None, Some(&meta), None, None, &json!({})),
            "Write"
        );
        assert_eq!(
            tool_name(Some("NotebookEdit"), Some(&meta), None, None, &json!({})),
            "NotebookEdit"
        );
        let edit = json!({"file_path": "a", "old_string": "x"});
        assert_eq!(
            tool_name(None, None, Some(ToolKind::Edit), None, &edit),
            "Edit"
        );
        assert_eq!(
            tool_name(None, None, Some(ToolKind::Edit), None, &json!({})),
            "Write"
        );
        assert_eq!(
            tool_name(None, None, Some(ToolKind::Execute), None, &json!({})),
            "Bash"
        );
        assert_eq!(
            tool_name(
                None,
                None,
                Some(ToolKind::Other),
                Some("Frob the widget"),
                &json!({})
            ),
            "Frob"
        );
        assert_eq!(
            tool_name(None, None, Some(ToolKind::Other), Some("`ls`"), &json!({})),
            "AgentTool"
        );
    }

    #[test]
    fn gemini_clis_mcp_tools_are_named_as_mcp_tools() {
        // Gemini CLI names an MCP tool only in its title; rawko's own must never be taken for a
        // call of rawko's `workflow_step` that the agent asks to run.
        assert_eq!(
            tool_name(
                None,
                None,
                Some(ToolKind::Other),
                Some("workflow_step (rawko MCP Server)"),
                &json!({})
            ),
            "mcp__rawko__workflow_step"
        );
        assert_eq!(
            tool_name(
                None,
                None,
                Some(ToolKind::Other),
                Some("search_issues (git-hub MCP Server)"),
                &json!({})
            ),
            "mcp__git-hub__search_issues"
        );
        assert_eq!(
            tool_name(
                None,
                None,
                Some(ToolKind::Other),
                Some("run it (my server) MCP Server)"),
                &json!({})
            ),
            "run"
        );
    }

    #[test]
    fn a_shell_call_without_raw_input_takes_its_command_from_its_title() {
        assert_eq!(
            command_of_title(Some(ToolKind::Execute), Some("echo hi > out.txt")),
            Some(json!({"command": "echo hi > out.txt"}))
        );
        assert_eq!(command_of_title(Some(ToolKind::Execute), Some("  ")), None);
        assert_eq!(command_of_title(Some(ToolKind::Edit), Some("a.txt")), None);
        assert_eq!(command_of_title(None, Some("ls")), None);
    }

    #[test]
    fn only_a_read_of_a_file_that_is_not_there_beneath_the_workspace_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        std::fs::write(ws.join("here.txt"), "x").unwrap();
        let result = |path: &Path, is_error| ToolResult {
            tool_call_id: "r".into(),
            content: format!("file \"{}\" does not exist", path.display()),
            is_error,
        };
        let new = ws.join("new.txt");
        assert!(missing_beneath(&new, &ws, &result(&new, true)));
        let refused = ToolResult {
            content: "[workflow] The tool \"Read\" is blocked".into(),
            ..result(&new, true)
        };
        assert!(!missing_beneath(&new, &ws, &refused), "a refusal stays one");
        let here = ws.join("here.txt");
        assert!(!missing_beneath(&here, &ws, &result(&here, true)));
        let outside = dir.path().parent().unwrap().join("nope-rawko-test.txt");
        assert!(!missing_beneath(&outside, &ws, &result(&outside, true)));
        assert!(!missing_beneath(&new, &ws, &result(&new, false)));
    }

    #[test]
    fn codex_names_an_mcp_tool_by_its_server_and_tool() {
        let input =
            json!({"server": "rawko", "tool": "workflow_step", "arguments": {"action": "next"}});
        let meta: Map<String, Value> =
            serde_json::from_value(json!({"is_mcp_tool_call": true})).unwrap();
        let named = (
            "mcp__rawko__workflow_step".to_owned(),
            json!({"action": "next"}),
        );
        assert_eq!(mcp_call(&input, Some(&meta), None), Some(named.clone()));
        assert_eq!(
            mcp_call(&input, None, Some("mcp.rawko.workflow_step")),
            Some(named)
        );
        // Another tool's input that happens to have these keys is not one.
        assert_eq!(mcp_call(&input, None, Some("Run server")), None);
        assert_eq!(mcp_call(&json!({"command": "ls"}), Some(&meta), None), None);
    }

    #[test]
    fn an_input_comes_from_raw_input_else_from_diffs_and_locations() {
        use agent_client_protocol::v1::schema::Diff;
        let ws = Path::new("/w/p");
        let raw = json!({"file_path": "/w/p/a.txt", "content": "x"});
        let diff = |path: &str, old: Option<&str>, new: &str| {
            ToolCallContent::Diff(Diff::new(path, new).old_text(old.map(str::to_owned)))
        };
        let at = |path: &str| ToolCallLocation::new(path);
        // rawInput wins; an empty one (Claude's first tool_call) says nothing.
        assert_eq!(
            input_of(Some(&raw), &[diff("/w/p/b", None, "y")], &[], ws),
            Some(raw)
        );
        assert_eq!(input_of(Some(&json!({})), &[], &[], ws), None);
        assert_eq!(input_of(Some(&Value::Null), &[], &[], ws), None);
        // Gemini CLI's Write of a new file, and its edit of an existing one.
        assert_eq!(
            input_of(
                None,
                &[diff("/w/p/new.txt", None, "hello\n")],
                &[at("/w/p/new.txt")],
                ws
            ),
            Some(json!({"file_path": "/w/p/new.txt", "content": "hello\n"}))
        );
        assert_eq!(
            input_of(
                Some(&json!({})),
                &[diff("/w/p/a.txt", Some("a\n"), "b\n")],
                &[],
                ws
            ),
            Some(json!({"file_path": "/w/p/a.txt", "old_string": "a\n", "new_string": "b\n"}))
        );
        // Only a location: its path.
        assert_eq!(
            input_of(None, &[], &[at("/w/p/src")], ws),
            Some(json!({"file_path": "/w/p/src"}))
        );
        // Several paths: one outside the workspace is the one named, so it is refused.
        assert_eq!(
            input_of(
                None,
                &[diff("/w/p/ok.txt", None, "x")],
                &[at("/w/p/ok.txt"), at("/etc/passwd")],
                ws
            ),
            Some(json!({"file_path": "/etc/passwd", "paths": ["/w/p/ok.txt", "/etc/passwd"]}))
        );
    }

    #[test]
    fn a_bash_result_becomes_a_terminal_exit() {
        let f = terminal_result("hi\n--- stderr ---\nerr\nexit code 3").unwrap();
        assert_eq!(f.output, "hi\n--- stderr ---\nerr\n");
        assert_eq!(f.exit_code, Some(3));
        let f = terminal_result("killed by SIGTERM").unwrap();
        assert_eq!(
            (f.output.as_str(), f.signal.as_deref()),
            ("", Some("SIGTERM"))
        );
        let f = terminal_result(
            "x\ntimed out after 1 s; the command and every process it started were killed",
        )
        .unwrap();
        assert_eq!(f.signal.as_deref(), Some("SIGKILL"));
        assert!(terminal_result("[workflow] The tool \"Bash\" is blocked").is_none());
    }

    #[test]
    fn terminal_commands_join_with_quotes() {
        assert_eq!(join_command("echo hi > out.txt", &[]), "echo hi > out.txt");
        assert_eq!(
            join_command("printf", &["%s\n".to_owned(), "a b".to_owned()]),
            "printf '%s\n' 'a b'"
        );
    }
}

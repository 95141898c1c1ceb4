//! The tools rawko knows by name: its own (which take Claude Code's names and input schemas),
//! Claude Code's, pi's lower-case ones and Gemini CLI's (`read_file`, `replace`, …). The gate uses this catalogue so that a rule written
//! for one tool also covers its synonyms and the tools that do the same thing another way: `Edit`
//! covers `MultiEdit`, `NotebookEdit` and pi's `edit`; `find` is pi's `Glob`. A phase that forbids
//! editing therefore forbids every way of editing, whichever agent calls it.
//!
//! Pure: a table and lookups.

/// What a tool does, as far as the phase gate cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolClass {
    /// Reads files.
    Read,
    /// Finds files or text (Glob, Grep, LS).
    Search,
    /// Changes part of a file.
    Edit,
    /// Writes whole files.
    Write,
    /// Runs commands.
    Execute,
    /// Reaches the network.
    Web,
    /// Starts another agent.
    Agent,
    /// Plans and to-do lists: no effect outside the agent.
    Plan,
    /// rawko's `workflow_step`.
    Workflow,
    /// Anything else an agent offers.
    Other,
}

impl ToolClass {
    /// `true` for the classes that change files.
    pub fn writes_files(self) -> bool {
        matches!(self, ToolClass::Edit | ToolClass::Write)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ToolClass::Read => "read",
            ToolClass::Search => "search",
            ToolClass::Edit => "edit",
            ToolClass::Write => "write",
            ToolClass::Execute => "execute",
            ToolClass::Web => "web",
            ToolClass::Agent => "agent",
            ToolClass::Plan => "plan",
            ToolClass::Workflow => "workflow",
            ToolClass::Other => "other",
        }
    }
}

/// One known tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownTool {
    /// The name as its agent spells it.
    pub name: &'static str,
    /// The Claude Code name it is a synonym of (itself for Claude Code's and rawko's tools).
    pub canonical: &'static str,
    /// The tool whose rules also cover this one (`MultiEdit` → `Edit`); `None` when only its own
    /// name covers it.
    pub covered_by: Option<&'static str>,
    pub class: ToolClass,
}

const fn tool(
    name: &'static str,
    canonical: &'static str,
    covered_by: Option<&'static str>,
    class: ToolClass,
) -> KnownTool {
    KnownTool {
        name,
        canonical,
        covered_by,
        class,
    }
}

/// Every tool rawko knows, Claude Code's first, then pi's, then Gemini CLI's. Names compare
/// case-insensitively, so pi's `read` and Claude Code's `Read` are one entry.
pub const KNOWN_TOOLS: &[KnownTool] = &[
    tool("Read", "Read", None, ToolClass::Read),
    tool(
        "NotebookRead",
        "NotebookRead",
        Some("Read"),
        ToolClass::Read,
    ),
    tool("Write", "Write", None, ToolClass::Write),
    tool("Edit", "Edit", None, ToolClass::Edit),
    tool("MultiEdit", "MultiEdit", Some("Edit"), ToolClass::Edit),
    tool(
        "NotebookEdit",
        "NotebookEdit",
        Some("Edit"),
        ToolClass::Edit,
    ),
    tool("Bash", "Bash", None, ToolClass::Execute),
    tool("BashOutput", "BashOutput", None, ToolClass::Execute),
    tool("KillShell", "KillShell", None, ToolClass::Execute),
    tool("KillBash", "KillBash", None, ToolClass::Execute),
    tool("Glob", "Glob", None, ToolClass::Search),
    tool("Grep", "Grep", None, ToolClass::Search),
    tool("LS", "LS", None, ToolClass::Search),
    tool("WebFetch", "WebFetch", None, ToolClass::Web),
    tool("WebSearch", "WebSearch", None, ToolClass::Web),
    tool("Task", "Task", None, ToolClass::Agent),
    tool("Agent", "Agent", None, ToolClass::Agent),
    tool("TodoWrite", "TodoWrite", None, ToolClass::Plan),
    tool("TodoRead", "TodoRead", None, ToolClass::Plan),
    tool("ExitPlanMode", "ExitPlanMode", None, ToolClass::Plan),
    tool("SlashCommand", "SlashCommand", None, ToolClass::Other),
    tool("Skill", "Skill", None, ToolClass::Other),
    tool(
        "ListMcpResourcesTool",
        "ListMcpResourcesTool",
        None,
        ToolClass::Other,
    ),
    tool(
        "ReadMcpResourceTool",
        "ReadMcpResourceTool",
        None,
        ToolClass::Read,
    ),
    tool("workflow_step", "workflow_step", None, ToolClass::Workflow),
    // pi's names (pi-coding-agent): the same tools, lower case; `find` is its Glob.
    tool("find", "Glob", None, ToolClass::Search),
    // Gemini CLI's names (0.61); its `glob` is Claude Code's Glob above.
    tool("read_file", "Read", None, ToolClass::Read),
    tool(
        "read_many_files",
        "read_many_files",
        Some("Read"),
        ToolClass::Read,
    ),
    tool("write_file", "Write", None, ToolClass::Write),
    tool("replace", "Edit", None, ToolClass::Edit),
    tool("run_shell_command", "Bash", None, ToolClass::Execute),
    tool("grep_search", "Grep", None, ToolClass::Search),
    tool("search_file_content", "Grep", None, ToolClass::Search),
    tool("list_directory", "LS", None, ToolClass::Search),
    tool("web_fetch", "WebFetch", None, ToolClass::Web),
    tool("google_web_search", "WebSearch", None, ToolClass::Web),
    tool("write_todos", "TodoWrite", None, ToolClass::Plan),
    tool("invoke_agent", "Agent", None, ToolClass::Agent),
    tool("activate_skill", "Skill", None, ToolClass::Other),
    tool("enter_plan_mode", "enter_plan_mode", None, ToolClass::Plan),
    tool("exit_plan_mode", "ExitPlanMode", None, ToolClass::Plan),
    tool("ask_user", "ask_user", None, ToolClass::Plan),
    tool("update_topic", "update_topic", None, ToolClass::Plan),
    tool("complete_task", "complete_task", None, ToolClass::Plan),
    tool(
        "read_mcp_resource",
        "ReadMcpResourceTool",
        None,
        ToolClass::Read,
    ),
    tool(
        "list_mcp_resources",
        "ListMcpResourcesTool",
        None,
        ToolClass::Other,
    ), // pi's subagent extension (rawko runs it: docs/subagents.md).
    tool(
        "delegate_to_subagents",
        "delegate_to_subagents",
        None,
        ToolClass::Agent,
    ),
];

/// The workflow tools rawko's MCP server (`rawko mcp`) offers an external agent.
const MCP_WORKFLOW_TOOLS: &[&str] = &["workflow_step", "workflow_status", "workflow_start"];

/// The catalogue entry for `name` (case-insensitive). rawko's own MCP tools, as an external agent
/// names them (`mcp__rawko__workflow_step`), are `workflow_step`: the way on is never gated.
pub fn known(name: &str) -> Option<&'static KnownTool> {
    // Gemini CLI names them `mcp_rawko_workflow_step`.
    if let Some(tool) = name
        .strip_prefix("mcp__rawko__")
        .or_else(|| name.strip_prefix("mcp_rawko_"))
    {
        // Only the server `rawko hook install` names `rawko`: another server's tool of the same
        // name is not let through.
        return MCP_WORKFLOW_TOOLS
            .contains(&tool)
            .then(|| known("workflow_step"))
            .flatten();
    }
    // The gate asks this for every tool call and for every rule it holds the call against: one
    // lower-cased copy on the stack and a `match` (a switch on the length, then a compare) cost
    // a few nanoseconds where a scan of the table cost dozens.
    let mut buf = [0u8; LONGEST_NAME];
    let lower = buf.get_mut(..name.len())?;
    lower.copy_from_slice(name.as_bytes());
    lower.make_ascii_lowercase();
    KNOWN_TOOLS.get(index_of_lowercase(lower)?)
}

/// The length of the longest name in [`KNOWN_TOOLS`] (`ListMcpResourcesTool`).
const LONGEST_NAME: usize = 21;

/// The index in [`KNOWN_TOOLS`] of the lower-cased name `lower`. The test
/// `the_lookup_knows_every_name_of_the_table_and_no_other` keeps it in step with the table.
fn index_of_lowercase(lower: &[u8]) -> Option<usize> {
    Some(match lower {
        b"read" => 0,
        b"notebookread" => 1,
        b"write" => 2,
        b"edit" => 3,
        b"multiedit" => 4,
        b"notebookedit" => 5,
        b"bash" => 6,
        b"bashoutput" => 7,
        b"killshell" => 8,
        b"killbash" => 9,
        b"glob" => 10,
        b"grep" => 11,
        b"ls" => 12,
        b"webfetch" => 13,
        b"websearch" => 14,
        b"task" => 15,
        b"agent" => 16,
        b"todowrite" => 17,
        b"todoread" => 18,
        b"exitplanmode" => 19,
        b"slashcommand" => 20,
        b"skill" => 21,
        b"listmcpresourcestool" => 22,
        b"readmcpresourcetool" => 23,
        b"workflow_step" => 24,
        b"find" => 25,
        b"read_file" => 26,
        b"read_many_files" => 27,
        b"write_file" => 28,
        b"replace" => 29,
        b"run_shell_command" => 30,
        b"grep_search" => 31,
        b"search_file_content" => 32,
        b"list_directory" => 33,
        b"web_fetch" => 34,
        b"google_web_search" => 35,
        b"write_todos" => 36,
        b"invoke_agent" => 37,
        b"activate_skill" => 38,
        b"enter_plan_mode" => 39,
        b"exit_plan_mode" => 40,
        b"ask_user" => 41,
        b"update_topic" => 42,
        b"complete_task" => 43,
        b"read_mcp_resource" => 44,
        b"list_mcp_resources" => 45,
        b"delegate_to_subagents" => 46,
        _ => return None,
    })
}

/// `true` when `name` is a tool rawko knows, or an MCP tool (`mcp__server__tool`), whose names
/// servers choose freely.
pub fn is_known(name: &str) -> bool {
    known(name).is_some() || name.starts_with("mcp__")
}

/// The Claude Code name of `name` (`find` → `Glob`, `read` → `Read`); an unknown name as it is.
pub fn canonical(name: &str) -> &str {
    known(name).map_or(name, |t| t.canonical)
}

/// What `name` does; [`ToolClass::Other`] for a tool rawko does not know.
pub fn class_of(name: &str) -> ToolClass {
    known(name).map_or(ToolClass::Other, |t| t.class)
}

/// `true` when a rule written for `rule_tool` applies to a call of `tool`: the same tool under
/// any of its names, or a tool the rule's tool covers (`Edit` covers `MultiEdit`).
pub fn rule_covers(rule_tool: &str, tool: &str) -> bool {
    covers(rule_tool, canonical(rule_tool), &Call::new(tool))
}

/// A tool call's name with its catalogue entry looked up once, so that holding it against every
/// rule of a phase costs no further lookup.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub name: &'a str,
    pub known: Option<&'static KnownTool>,
}

impl<'a> Call<'a> {
    pub fn new(name: &'a str) -> Self {
        Self {
            name,
            known: known(name),
        }
    }

    /// What the call's tool does; [`ToolClass::Other`] for a tool rawko does not know.
    pub fn class(&self) -> ToolClass {
        self.known.map_or(ToolClass::Other, |t| t.class)
    }
}

/// [`rule_covers`] for a rule whose tool `rule_tool` has the Claude Code name `rule_canonical`
/// (computed when the rule was parsed) and a call looked up once.
pub fn covers(rule_tool: &str, rule_canonical: &str, call: &Call<'_>) -> bool {
    if rule_tool.eq_ignore_ascii_case(call.name) {
        return true;
    }
    let call_canonical = call.known.map_or(call.name, |t| t.canonical);
    rule_canonical.eq_ignore_ascii_case(call_canonical)
        || call
            .known
            .and_then(|t| t.covered_by)
            .is_some_and(|parent| parent.eq_ignore_ascii_case(rule_canonical))
}

/// The known tool names closest to `name`, for a "did you mean" hint.
pub fn suggestion(name: &str) -> Option<&'static str> {
    let lower = name.to_ascii_lowercase();
    KNOWN_TOOLS
        .iter()
        .map(|t| (distance(&lower, &t.name.to_ascii_lowercase()), t.name))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

/// Levenshtein distance over chars (names are short).
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            let next = (row[j + 1] + 1).min(row[j] + 1).min(prev + cost);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_claude_code_and_pi_tool_has_a_class() {
        for (name, class) in [
            ("Read", ToolClass::Read),
            ("Write", ToolClass::Write),
            ("Edit", ToolClass::Edit),
            ("MultiEdit", ToolClass::Edit),
            ("NotebookEdit", ToolClass::Edit),
            ("Bash", ToolClass::Execute),
            ("Glob", ToolClass::Search),
            ("Grep", ToolClass::Search),
            ("LS", ToolClass::Search),
            ("WebFetch", ToolClass::Web),
            ("WebSearch", ToolClass::Web),
            ("Task", ToolClass::Agent),
            ("TodoWrite", ToolClass::Plan),
            ("read", ToolClass::Read),
            ("bash", ToolClass::Execute),
            ("edit", ToolClass::Edit),
            ("write", ToolClass::Write),
            ("grep", ToolClass::Search),
            ("find", ToolClass::Search),
            ("ls", ToolClass::Search),
            ("workflow_step", ToolClass::Workflow),
        ] {
            assert_eq!(class_of(name), class, "{name}");
            assert!(is_known(name), "{name}");
        }
        assert_eq!(class_of("Frobnicate"), ToolClass::Other);
        assert!(!is_known("Frobnicate"));
        assert!(is_known("mcp__rawko__workflow_step"));
        assert_eq!(class_of("mcp__rawko__workflow_step"), ToolClass::Workflow);
        assert_eq!(class_of("mcp__rawko__workflow_status"), ToolClass::Workflow);
        assert_eq!(class_of("mcp__github__create_pr"), ToolClass::Other);
        assert_eq!(class_of("mcp__evil__workflow_step"), ToolClass::Other);
    }

    #[test]
    fn gemini_clis_tools_are_classed_and_covered_by_claude_codes_names() {
        for (name, class, canonical_name) in [
            ("read_file", ToolClass::Read, "Read"),
            ("read_many_files", ToolClass::Read, "read_many_files"),
            ("write_file", ToolClass::Write, "Write"),
            ("replace", ToolClass::Edit, "Edit"),
            ("run_shell_command", ToolClass::Execute, "Bash"),
            ("glob", ToolClass::Search, "Glob"),
            ("grep_search", ToolClass::Search, "Grep"),
            ("search_file_content", ToolClass::Search, "Grep"),
            ("list_directory", ToolClass::Search, "LS"),
            ("web_fetch", ToolClass::Web, "WebFetch"),
            ("google_web_search", ToolClass::Web, "WebSearch"),
            ("write_todos", ToolClass::Plan, "TodoWrite"),
            ("invoke_agent", ToolClass::Agent, "Agent"),
            (
                "mcp_rawko_workflow_step",
                ToolClass::Workflow,
                "workflow_step",
            ),
        ] {
            assert_eq!(class_of(name), class, "{name}");
            assert_eq!(canonical(name), canonical_name, "{name}");
        }
        // A phase's rules in Claude Code's names hold for Gemini CLI's tools.
        assert!(rule_covers("Edit", "replace"));
        assert!(rule_covers("Write", "write_file"));
        assert!(rule_covers("Read", "read_many_files"));
        assert!(rule_covers("Bash", "run_shell_command"));
        assert!(rule_covers("write_file", "Write"));
        assert!(!rule_covers("Read", "write_file"));
        assert_eq!(class_of("mcp_other_workflow_step"), ToolClass::Other);
    }

    #[test]
    fn a_rule_covers_synonyms_and_the_tools_it_stands_for() {
        assert!(rule_covers("Edit", "MultiEdit"));
        assert!(rule_covers("edit", "MultiEdit"));
        assert!(rule_covers("Edit", "NotebookEdit"));
        assert!(rule_covers("Edit", "edit"));
        assert!(rule_covers("write", "Write"));
        assert!(rule_covers("find", "Glob"));
        assert!(rule_covers("Glob", "find"));
        assert!(rule_covers("read", "NotebookRead"));
        assert!(rule_covers("bash", "Bash"));
        // Not the other way round: allowing MultiEdit does not allow Edit.
        assert!(!rule_covers("MultiEdit", "Edit"));
        assert!(!rule_covers("NotebookEdit", "Write"));
        assert!(!rule_covers("Edit", "Write"));
        assert!(!rule_covers("Read", "Glob"));
        assert!(rule_covers("Frobnicate", "frobnicate"));
        assert!(!rule_covers("Frobnicate", "Edit"));
    }

    #[test]
    fn the_lookup_knows_every_name_of_the_table_and_no_other() {
        for (i, t) in KNOWN_TOOLS.iter().enumerate() {
            assert!(t.name.len() <= LONGEST_NAME, "{}", t.name);
            for name in [
                t.name.to_owned(),
                t.name.to_ascii_lowercase(),
                t.name.to_ascii_uppercase(),
            ] {
                assert_eq!(known(&name), Some(t), "{name}");
            }
            assert_eq!(
                index_of_lowercase(t.name.to_ascii_lowercase().as_bytes()),
                Some(i)
            );
        }
        for name in [
            "",
            "Rea",
            "Reads",
            "Bash ",
            "grép",
            "ListMcpResourcesTools",
            "mcp__other__x",
        ] {
            assert_eq!(known(name), None, "{name}");
        }
    }

    #[test]
    fn near_misses_get_a_suggestion() {
        assert_eq!(suggestion("Grpe"), Some("Grep"));
        assert_eq!(suggestion("multiedit"), Some("MultiEdit"));
        assert_eq!(suggestion("Frobnicate"), None);
    }
}

//! The agent loader's rules, one fixture per rule.
//!
//! Every test writes agent files into temporary folders (as bytes, so non-UTF-8 files are
//! possible), loads them with `rawko::agents::load` from an explicit list of roots, and checks what
//! a user would see: which agents load, and for each problem its severity, its file, its line, and
//! a distinctive part of its message. Every load also checks that each diagnostic prints as
//! `path…: severity: message`. Later tests cover root precedence, `default_roots`, set
//! validation, the tool filter of loaded agents, and the starter agents `rawko init` writes.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use rawko::agents::{
    default_roots, load, parse_str, AgentDefinition, AgentLimits, AgentLoadOutcome, AgentProvider,
    AgentTransitions, Diagnostic, Severity,
};
use tempfile::TempDir;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Writes `content` to `dir/rel`, creating the parent directories; returns the full path.
fn write(dir: &Path, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().expect("a file has a parent"))
        .expect("create parent directories");
    std::fs::write(&path, content).expect("write fixture file");
    path
}

/// A valid YAML agent.
fn yaml_agent(name: &str, on_success: &str) -> String {
    format!(
        "name: {name}\nsystemPrompt: You are {name}.\ntransitions:\n  onSuccess: {on_success}\n"
    )
}

/// Loads and checks what holds for every load: each diagnostic prints as
/// `path[:line[:column]]: severity: message`, starting with its path.
fn load_checked(roots: &[PathBuf]) -> AgentLoadOutcome {
    let outcome = load(roots);
    for d in &outcome.diagnostics {
        let shown = d.to_string();
        let path = d.path.display().to_string();
        assert!(shown.starts_with(&path), "{shown}");
        let rest = &shown[path.len()..];
        let expected_prefix = match d.line {
            Some(line) => format!(":{line}"),
            None => String::new(),
        };
        assert!(rest.starts_with(&expected_prefix), "{shown}");
        assert!(
            shown.contains(&format!(": {}: {}", d.severity.as_str(), d.message)),
            "{shown}"
        );
    }
    outcome
}

/// Loads the one root `dir`.
fn load_dir(dir: &Path) -> AgentLoadOutcome {
    load_checked(&[dir.to_owned()])
}

fn names(outcome: &AgentLoadOutcome) -> Vec<&str> {
    outcome.agents.names().collect()
}

/// The only diagnostic whose message contains `needle`; fails showing all of them otherwise.
#[track_caller]
fn find<'a>(outcome: &'a AgentLoadOutcome, needle: &str) -> &'a Diagnostic {
    let hits: Vec<&Diagnostic> = outcome
        .diagnostics
        .iter()
        .filter(|d| d.message.contains(needle))
        .collect();
    assert_eq!(
        hits.len(),
        1,
        "expected one diagnostic containing {needle:?}, got:\n{}",
        shown(outcome)
    );
    hits[0]
}

fn shown(outcome: &AgentLoadOutcome) -> String {
    outcome
        .diagnostics
        .iter()
        .map(|d| format!("  {d}\n"))
        .collect()
}

/// Asserts one diagnostic: severity, file, line, and a part of its message.
#[track_caller]
fn assert_diag(
    outcome: &AgentLoadOutcome,
    needle: &str,
    severity: Severity,
    file: &Path,
    line: Option<usize>,
) {
    let d = find(outcome, needle);
    assert_eq!(d.severity, severity, "{d}");
    assert_eq!(d.path, file, "{d}");
    assert_eq!(d.line, line, "{d}");
}

/// Asserts a file with one problem: it is the only diagnostic, an error, and the file's agent is
/// not loaded.
#[track_caller]
fn assert_only_error(outcome: &AgentLoadOutcome, needle: &str, file: &Path, line: Option<usize>) {
    assert_eq!(outcome.diagnostics.len(), 1, "{}", shown(outcome));
    assert_diag(outcome, needle, Severity::Error, file, line);
    assert!(outcome.agents.is_empty(), "{:?}", names(outcome));
    assert!(outcome.has_errors());
    assert_eq!(outcome.skipped.len(), 1, "{:?}", outcome.skipped);
    assert_eq!(outcome.skipped[0].file, file);
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

// ---------------------------------------------------------------------------------------------
// The two formats
// ---------------------------------------------------------------------------------------------

#[test]
fn a_yaml_agent_loads_every_field_and_ignores_unknown_keys() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "dev.yaml",
        r#"name: dev
displayName: Developer
whenToUse: When code has to change.
systemPrompt: |
  You write code.
  Carefully.
tools:
  allowed: [Read, Write, Bash]
  blocked:
    - Write
  bashFilter:
    allowedCommands: [cargo, git]
    blockedPatterns: ['\bgit\s+push\b']
transitions:
  onSuccess: complete
  onFailure: dev
  onMaxIterations: complete
limits:
  maxIterations: 20
  timeout: 300000
  maxTokens: 8192
provider:
  name: anthropic
  model: claude-sonnet-4
  maxTokens: 1024
metadata:
  owner: someone
responseSchema:
  type: object
"#,
    );
    let outcome = load_dir(tmp.path());
    assert!(outcome.diagnostics.is_empty(), "{}", shown(&outcome));
    let dev = outcome.agents.get("dev").expect("dev loaded");
    assert_eq!(dev.name, "dev");
    assert_eq!(dev.display_name.as_deref(), Some("Developer"));
    assert_eq!(dev.when_to_use.as_deref(), Some("When code has to change."));
    assert_eq!(dev.system_prompt, "You write code.\nCarefully.\n");
    assert_eq!(dev.tools.allowed, Some(strings(&["Read", "Write", "Bash"])));
    assert_eq!(dev.tools.blocked, strings(&["Write"]));
    let filter = dev.tools.bash_filter.as_ref().expect("a bash filter");
    assert_eq!(filter.allowed_commands, strings(&["cargo", "git"]));
    assert_eq!(
        filter.pattern_sources().collect::<Vec<_>>(),
        [r"\bgit\s+push\b"]
    );
    assert_eq!(
        dev.transitions,
        AgentTransitions {
            on_success: "complete".to_owned(),
            on_failure: Some("dev".to_owned()),
            on_max_iterations: Some("complete".to_owned()),
        }
    );
    assert_eq!(
        dev.limits,
        AgentLimits {
            max_iterations: Some(20),
            timeout_ms: Some(300_000),
            max_tokens: Some(8192),
        }
    );
    assert_eq!(
        dev.provider,
        Some(AgentProvider {
            name: "anthropic".to_owned(),
            model: Some("claude-sonnet-4".to_owned()),
            max_tokens: Some(1024),
        })
    );
    assert_eq!(dev.file, file);
}

#[test]
fn optional_fields_may_be_left_out() {
    let tmp = TempDir::new().expect("temp dir");
    write(tmp.path(), "a.yml", yaml_agent("a", "complete"));
    let outcome = load_dir(tmp.path());
    assert!(outcome.diagnostics.is_empty(), "{}", shown(&outcome));
    let a = outcome.agents.get("a").expect("a .yml file loads");
    assert_eq!(a.display_name, None);
    assert_eq!(a.when_to_use, None);
    assert_eq!(a.tools.allowed, None);
    assert!(a.tools.blocked.is_empty());
    assert_eq!(a.tools.bash_filter, None);
    assert_eq!(a.transitions.on_failure, None);
    assert_eq!(a.failure_target(), "a");
    assert_eq!(a.limits, AgentLimits::default());
    assert_eq!(a.provider, None);
}

#[test]
fn markdown_sections_give_the_system_prompt_and_when_to_use() {
    let tmp = TempDir::new().expect("temp dir");
    write(
        tmp.path(),
        "planner.md",
        "---\nname: planner\ntransitions:\n  onSuccess: complete\n---\n\n# Planner\n\nFor people reading the file.\n\n## When to Use\n\nAt the start of a task.\n\n## System Prompt\n\nYou plan.\n\n### Steps\n\n1. Read.\n",
    );
    let outcome = load_dir(tmp.path());
    assert!(outcome.diagnostics.is_empty(), "{}", shown(&outcome));
    let planner = outcome.agents.get("planner").expect("planner loaded");
    assert_eq!(planner.system_prompt, "You plan.\n\n### Steps\n\n1. Read.");
    assert_eq!(
        planner.when_to_use.as_deref(),
        Some("At the start of a task.")
    );
}

#[test]
fn markdown_without_a_system_prompt_heading_uses_the_body() {
    let tmp = TempDir::new().expect("temp dir");
    write(
        tmp.path(),
        "tester.md",
        "---\nname: tester\ntransitions: {onSuccess: complete}\n---\n# Tester\n\nRun the tests.\n\n## When to Use\n\nAfter changes.\n\n## Reporting\n\nList failures.\n",
    );
    let outcome = load_dir(tmp.path());
    assert!(outcome.diagnostics.is_empty(), "{}", shown(&outcome));
    let tester = outcome.agents.get("tester").expect("tester loaded");
    assert_eq!(
        tester.system_prompt,
        "Run the tests.\n\n## Reporting\n\nList failures."
    );
    assert_eq!(tester.when_to_use.as_deref(), Some("After changes."));
}

#[test]
fn frontmatter_fields_win_over_the_body_with_a_warning() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.md",
        "---\nname: a\nsystemPrompt: From the frontmatter.\nwhenToUse: Always.\ntransitions:\n  onSuccess: complete\n---\n## When to Use\nNever.\n## System Prompt\nFrom the body.\n",
    );
    let outcome = load_dir(tmp.path());
    let a = outcome.agents.get("a").expect("a loaded");
    assert_eq!(a.system_prompt, "From the frontmatter.");
    assert_eq!(a.when_to_use.as_deref(), Some("Always."));
    assert_eq!(outcome.diagnostics.len(), 2, "{}", shown(&outcome));
    assert_diag(
        &outcome,
        "systemPrompt is set in the frontmatter",
        Severity::Warning,
        &file,
        Some(3),
    );
    assert_diag(
        &outcome,
        "whenToUse is set in the frontmatter",
        Severity::Warning,
        &file,
        Some(4),
    );
}

#[test]
fn markdown_with_crlf_line_endings_and_a_bom_loads() {
    let tmp = TempDir::new().expect("temp dir");
    write(
        tmp.path(),
        "a.md",
        "\u{feff}---\r\nname: a\r\ntransitions:\r\n  onSuccess: complete\r\n---\r\n# A\r\n## System Prompt\r\nDo it.\r\n",
    );
    let outcome = load_dir(tmp.path());
    assert!(outcome.diagnostics.is_empty(), "{}", shown(&outcome));
    assert_eq!(outcome.agents.get("a").expect("a").system_prompt, "Do it.");
}

#[test]
fn parse_str_picks_the_format_by_extension() {
    let md = "---\nname: a\ntransitions: {onSuccess: complete}\n---\nBody prompt.\n";
    let parsed = parse_str(Path::new("x/a.MD"), md);
    assert_eq!(
        parsed.agent.map(|a| a.system_prompt),
        Some("Body prompt.".to_owned())
    );
    // The same text read as YAML is two documents, which is not an agent.
    let parsed = parse_str(Path::new("x/a.yaml"), md);
    assert!(parsed.agent.is_none());
    assert!(parsed.has_errors(), "{:?}", parsed.diagnostics);
}

// ---------------------------------------------------------------------------------------------
// One fixture per rule
// ---------------------------------------------------------------------------------------------

#[test]
fn markdown_needs_frontmatter() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(tmp.path(), "a.md", "# A\n\nYou are a.\n");
    let outcome = load_dir(tmp.path());
    assert_only_error(
        &outcome,
        "a Markdown agent must start with YAML frontmatter",
        &file,
        Some(1),
    );
}

#[test]
fn markdown_frontmatter_must_be_closed() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(tmp.path(), "a.md", "---\nname: a\n\nYou are a.\n");
    let outcome = load_dir(tmp.path());
    assert_only_error(&outcome, "the frontmatter is not closed", &file, Some(1));
}

#[test]
fn name_is_required() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.yaml",
        "systemPrompt: x\ntransitions:\n  onSuccess: complete\n",
    );
    let outcome = load_dir(tmp.path());
    assert_only_error(&outcome, "name is required", &file, Some(1));
    assert_eq!(outcome.skipped[0].name, None);
}

#[test]
fn name_must_match_the_pattern() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.yaml",
        "systemPrompt: x\nname: 2nd agent\ntransitions:\n  onSuccess: complete\n",
    );
    let outcome = load_dir(tmp.path());
    assert_only_error(
        &outcome,
        "name \"2nd agent\" must start with a letter and contain only letters, digits, `_` and `-`",
        &file,
        Some(2),
    );
}

#[test]
fn names_are_case_insensitive_in_the_pattern() {
    let tmp = TempDir::new().expect("temp dir");
    write(
        tmp.path(),
        "a.yaml",
        yaml_agent("Code_Reviewer-2", "complete"),
    );
    let outcome = load_dir(tmp.path());
    assert!(outcome.diagnostics.is_empty(), "{}", shown(&outcome));
    assert_eq!(names(&outcome), ["Code_Reviewer-2"]);
}

#[test]
fn complete_is_not_an_agent_name() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(tmp.path(), "c.yaml", yaml_agent("complete", "complete"));
    let outcome = load_dir(tmp.path());
    assert_only_error(&outcome, "name \"complete\" is reserved", &file, Some(1));
}

#[test]
fn system_prompt_is_required() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.yaml",
        "name: a\ntransitions:\n  onSuccess: complete\n",
    );
    let outcome = load_dir(tmp.path());
    assert_only_error(&outcome, "systemPrompt is required", &file, Some(1));
    assert_eq!(outcome.skipped[0].name.as_deref(), Some("a"));
}

#[test]
fn system_prompt_must_not_be_blank() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.yaml",
        "name: a\ntransitions:\n  onSuccess: complete\nsystemPrompt: \"  \"\n",
    );
    let outcome = load_dir(tmp.path());
    assert_only_error(&outcome, "systemPrompt is empty", &file, Some(4));
}

#[test]
fn a_markdown_agent_without_a_body_has_no_system_prompt() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.md",
        "---\nname: a\ntransitions:\n  onSuccess: complete\n---\n# Only a title\n\n## When to Use\nSometimes.\n",
    );
    let outcome = load_dir(tmp.path());
    assert_only_error(&outcome, "the agent has no system prompt", &file, Some(6));
}

#[test]
fn an_empty_system_prompt_section_is_an_error_at_its_heading() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.md",
        "---\nname: a\ntransitions:\n  onSuccess: complete\n---\nIntro.\n\n## System Prompt\n\n## When to Use\nSometimes.\n",
    );
    let outcome = load_dir(tmp.path());
    assert_only_error(
        &outcome,
        "the `## System Prompt` section is empty",
        &file,
        Some(8),
    );
}

#[test]
fn a_second_system_prompt_section_is_a_warning() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.md",
        "---\nname: a\ntransitions:\n  onSuccess: complete\n---\n## System Prompt\nFirst.\n## System Prompt\nSecond.\n",
    );
    let outcome = load_dir(tmp.path());
    assert_diag(
        &outcome,
        "`## System Prompt` appears again",
        Severity::Warning,
        &file,
        Some(8),
    );
    assert_eq!(outcome.agents.get("a").expect("a").system_prompt, "First.");
}

#[test]
fn transitions_are_required() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(tmp.path(), "a.yaml", "name: a\nsystemPrompt: x\n");
    let outcome = load_dir(tmp.path());
    assert_only_error(&outcome, "transitions is required", &file, Some(1));
}

#[test]
fn on_success_is_required() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.yaml",
        "name: a\nsystemPrompt: x\ntransitions:\n  onFailure: a\n",
    );
    let outcome = load_dir(tmp.path());
    assert_only_error(
        &outcome,
        "transitions.onSuccess is required",
        &file,
        Some(3),
    );
}

#[test]
fn a_transition_target_must_look_like_an_agent_name() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.yaml",
        "name: a\nsystemPrompt: x\ntransitions:\n  onSuccess: complete\n  onMaxIterations: the reviewer\n",
    );
    let outcome = load_dir(tmp.path());
    assert_only_error(
        &outcome,
        "transitions.onMaxIterations must name an agent or \"complete\", found \"the reviewer\"",
        &file,
        Some(5),
    );
}

#[test]
fn custom_transitions_are_ignored_with_a_warning() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.yaml",
        "name: a\nsystemPrompt: x\ntransitions:\n  onSuccess: complete\n  custom:\n    - {condition: x, target: a}\n",
    );
    let outcome = load_dir(tmp.path());
    assert_eq!(outcome.diagnostics.len(), 1, "{}", shown(&outcome));
    assert_diag(
        &outcome,
        "transitions.custom is not supported",
        Severity::Warning,
        &file,
        Some(5),
    );
    assert_eq!(names(&outcome), ["a"]);
}

#[test]
fn every_type_error_of_a_file_is_reported_at_its_line() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.yaml",
        r#"name: a
displayName: [A]
systemPrompt: x
tools:
  allowed: Read
  blocked:
    - Write
    - 3
  bashFilter:
    allowedCommands: {ls: true}
transitions:
  onSuccess: complete
  onFailure: true
limits:
  maxIterations: "5"
  timeout: -1
  maxTokens: 1.5
provider: anthropic
"#,
    );
    let outcome = load_dir(tmp.path());
    let expected: [(&str, usize); 9] = [
        ("displayName must be text, found a list", 2),
        ("tools.allowed must be a list of text, found a string", 5),
        (
            "tools.blocked[1] must be text, found a number; put it in quotes to make it text",
            8,
        ),
        (
            "tools.bashFilter.allowedCommands must be a list of text, found a mapping",
            10,
        ),
        (
            "transitions.onFailure must be text, found a boolean; put it in quotes",
            13,
        ),
        (
            "limits.maxIterations must be a positive whole number, found the text \"5\"",
            15,
        ),
        (
            "limits.timeout must be a positive whole number, found -1",
            16,
        ),
        (
            "limits.maxTokens must be a positive whole number, found 1.5",
            17,
        ),
        (
            "provider must be a mapping with name, model and maxTokens, found a string",
            18,
        ),
    ];
    for (needle, line) in expected {
        assert_diag(&outcome, needle, Severity::Error, &file, Some(line));
    }
    assert_eq!(
        outcome.diagnostics.len(),
        expected.len(),
        "{}",
        shown(&outcome)
    );
    assert!(outcome.agents.is_empty());
}

#[test]
fn numbers_must_fit() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.yaml",
        "name: a\nsystemPrompt: x\ntransitions: {onSuccess: complete}\nlimits:\n  maxIterations: 0\n  maxTokens: 4294967296\n  timeout: 4294967296\n",
    );
    let outcome = load_dir(tmp.path());
    assert_diag(
        &outcome,
        "limits.maxIterations must be a positive whole number, found 0",
        Severity::Error,
        &file,
        Some(5),
    );
    assert_diag(
        &outcome,
        "limits.maxTokens is too large: 4294967296",
        Severity::Error,
        &file,
        Some(6),
    );
    // A timeout is in milliseconds and may be larger.
    assert_eq!(outcome.diagnostics.len(), 2, "{}", shown(&outcome));
}

#[test]
fn provider_needs_a_name() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.yaml",
        "name: a\nsystemPrompt: x\ntransitions: {onSuccess: complete}\nprovider:\n  model: m\n",
    );
    let outcome = load_dir(tmp.path());
    assert_only_error(&outcome, "provider.name is required", &file, Some(4));
}

#[test]
fn a_bad_blocked_pattern_is_reported_at_load_naming_the_pattern() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.md",
        "---\nname: a\ntools:\n  bashFilter:\n    blockedPatterns:\n      - 'rm\\s'\n      - '(unclosed'\n      - '[z-a]'\ntransitions:\n  onSuccess: complete\n---\nDo it.\n",
    );
    let outcome = load_dir(tmp.path());
    assert_diag(
        &outcome,
        "tools.bashFilter.blockedPatterns[1]: blocked pattern `(unclosed` is not a valid regular expression: unclosed group",
        Severity::Error,
        &file,
        Some(7),
    );
    assert_diag(
        &outcome,
        "blocked pattern `[z-a]` is not a valid regular expression",
        Severity::Error,
        &file,
        Some(8),
    );
    assert_eq!(outcome.diagnostics.len(), 2, "{}", shown(&outcome));
    assert!(outcome.agents.is_empty());
}

#[test]
fn malformed_yaml_is_located() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.yaml",
        "name: a\nsystemPrompt: x: y\ntransitions: {onSuccess: complete}\n",
    );
    let outcome = load_dir(tmp.path());
    assert_only_error(
        &outcome,
        "invalid YAML: mapping values are not allowed",
        &file,
        Some(2),
    );
    assert!(outcome.diagnostics[0].column.is_some());
}

#[test]
fn malformed_frontmatter_is_located_in_the_file() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.md",
        "---\nname: a\ntransitions: [\n---\nBody.\n",
    );
    let outcome = load_dir(tmp.path());
    assert_eq!(outcome.diagnostics.len(), 1, "{}", shown(&outcome));
    let d = find(&outcome, "invalid YAML");
    assert_eq!(d.path, file);
    // The frontmatter's lines count from the file's line 2.
    assert!(d.line.is_some_and(|l| l >= 3), "{d}");
}

#[test]
fn a_duplicate_key_points_at_the_duplicate() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.md",
        "---\nname: a\ntransitions: {onSuccess: complete}\nname: b\n---\nBody.\n",
    );
    let outcome = load_dir(tmp.path());
    assert_only_error(
        &outcome,
        "duplicate entry with key \"name\"",
        &file,
        Some(4),
    );
}

#[test]
fn a_yaml_file_must_be_a_mapping() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(tmp.path(), "a.yaml", "- name: a\n");
    let outcome = load_dir(tmp.path());
    assert_only_error(
        &outcome,
        "an agent file must be a mapping of fields (name, systemPrompt, transitions, …), found a list",
        &file,
        Some(1),
    );
}

#[test]
fn an_empty_file_is_an_error() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(tmp.path(), "a.yml", "");
    let outcome = load_dir(tmp.path());
    assert_only_error(&outcome, "the file is empty", &file, Some(1));
}

#[test]
fn a_non_utf8_file_is_an_error_at_its_line() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.md",
        b"---\nname: a\n---\nBad \xff byte.\n".as_slice(),
    );
    let outcome = load_dir(tmp.path());
    assert_only_error(&outcome, "agent file is not valid UTF-8", &file, Some(4));
}

#[test]
fn an_unreadable_file_is_an_error() {
    let tmp = TempDir::new().expect("temp dir");
    // A link to nothing cannot be read, whoever runs the test.
    let file = tmp.path().join("gone.yaml");
    std::os::unix::fs::symlink(tmp.path().join("missing"), &file).expect("symlink");
    let outcome = load_dir(tmp.path());
    assert_only_error(&outcome, "cannot read agent file", &file, None);
}

#[test]
fn a_root_that_is_a_file_is_an_error() {
    let tmp = TempDir::new().expect("temp dir");
    let root = write(tmp.path(), "agents", "not a folder");
    let outcome = load_dir(&root);
    assert_eq!(outcome.diagnostics.len(), 1, "{}", shown(&outcome));
    assert_diag(
        &outcome,
        "agents folder is not a directory",
        Severity::Error,
        &root,
        None,
    );
}

#[test]
fn a_missing_root_is_quietly_empty() {
    let tmp = TempDir::new().expect("temp dir");
    let outcome = load_dir(&tmp.path().join("nothing"));
    assert!(outcome.diagnostics.is_empty());
    assert!(outcome.agents.is_empty());
}

#[test]
fn only_agent_files_are_read() {
    let tmp = TempDir::new().expect("temp dir");
    write(tmp.path(), "a.yaml", yaml_agent("a", "complete"));
    write(
        tmp.path(),
        "README.md",
        "# My agents\n\nNotes for people.\n",
    );
    write(tmp.path(), "notes.txt", "not yaml: [");
    write(tmp.path(), ".a.yaml.swp", "garbage: [");
    write(tmp.path(), "sub/b.yaml", yaml_agent("b", "complete"));
    let outcome = load_dir(tmp.path());
    assert!(outcome.diagnostics.is_empty(), "{}", shown(&outcome));
    assert_eq!(names(&outcome), ["a"]);
}

#[test]
fn one_broken_file_never_hides_the_others() {
    let tmp = TempDir::new().expect("temp dir");
    write(tmp.path(), "a.yaml", yaml_agent("a", "c"));
    let broken = write(tmp.path(), "b.md", "---\nname: b\n: [\n---\n");
    write(
        tmp.path(),
        "c.md",
        "---\nname: c\ntransitions: {onSuccess: complete}\n---\nC.\n",
    );
    let unnamed = write(tmp.path(), "d.yaml", "systemPrompt: x\n");
    let outcome = load_dir(tmp.path());
    assert_eq!(names(&outcome), ["a", "c"]);
    assert!(outcome
        .diagnostics
        .iter()
        .any(|d| d.path == broken && d.severity == Severity::Error));
    assert!(outcome
        .diagnostics
        .iter()
        .any(|d| d.path == unnamed && d.message.contains("name is required")));
    assert!(outcome
        .diagnostics
        .iter()
        .any(|d| d.path == unnamed && d.message.contains("transitions is required")));
    let skipped: Vec<&Path> = outcome.skipped.iter().map(|s| s.file.as_path()).collect();
    assert_eq!(skipped, [broken.as_path(), unnamed.as_path()]);
}

// ---------------------------------------------------------------------------------------------
// Duplicates and roots
// ---------------------------------------------------------------------------------------------

#[test]
fn a_duplicate_name_in_one_root_is_an_error_on_the_second_file() {
    let tmp = TempDir::new().expect("temp dir");
    let first = write(tmp.path(), "a.yaml", yaml_agent("dev", "complete"));
    let second = write(
        tmp.path(),
        "b.md",
        "---\ntransitions: {onSuccess: complete}\nname: dev\n---\nOther.\n",
    );
    let outcome = load_dir(tmp.path());
    assert_eq!(outcome.diagnostics.len(), 1, "{}", shown(&outcome));
    let d = find(&outcome, "agent \"dev\" is already defined by");
    assert_eq!(d.severity, Severity::Error);
    assert_eq!(d.path, second);
    assert_eq!(d.line, Some(3));
    assert!(d.message.contains(&first.display().to_string()), "{d}");
    let dev = outcome.agents.get("dev").expect("the first dev stays");
    assert_eq!(dev.file, first);
}

#[test]
fn a_later_root_overrides_an_earlier_one_by_name() {
    let tmp = TempDir::new().expect("temp dir");
    let user = tmp.path().join("user");
    let project = tmp.path().join("project");
    write(&user, "dev.yaml", yaml_agent("dev", "complete"));
    write(&user, "helper.yaml", yaml_agent("helper", "complete"));
    let project_dev = write(
        &project,
        "dev.md",
        "---\nname: dev\ntransitions: {onSuccess: helper}\n---\nProject dev.\n",
    );
    write(&project, "extra.yaml", yaml_agent("extra", "dev"));
    let outcome = load_checked(&[user, project]);
    assert!(outcome.diagnostics.is_empty(), "{}", shown(&outcome));
    // Root order; an overridden agent keeps its place.
    assert_eq!(names(&outcome), ["dev", "helper", "extra"]);
    let dev = outcome.agents.get("dev").expect("dev");
    assert_eq!(dev.file, project_dev);
    assert_eq!(dev.system_prompt, "Project dev.");
}

#[test]
fn an_overridden_broken_agent_only_warns() {
    let tmp = TempDir::new().expect("temp dir");
    let user = tmp.path().join("user");
    let project = tmp.path().join("project");
    let broken = write(
        &user,
        "dev.yaml",
        "name: dev\ntransitions: {onSuccess: x}\n",
    );
    let good = write(&project, "dev.yaml", yaml_agent("dev", "complete"));
    let outcome = load_checked(&[user, project]);
    assert!(!outcome.has_errors(), "{}", shown(&outcome));
    let d = find(&outcome, "systemPrompt is required");
    assert_eq!(d.severity, Severity::Warning);
    assert_eq!(d.path, broken);
    assert!(
        d.message.ends_with(&format!(
            "(this agent is overridden by {} and not used)",
            good.display()
        )),
        "{d}"
    );
    assert_eq!(outcome.agents.get("dev").map(|a| &a.file), Some(&good));
}

#[test]
fn a_broken_override_leaves_the_agent_out() {
    let tmp = TempDir::new().expect("temp dir");
    let user = tmp.path().join("user");
    let project = tmp.path().join("project");
    write(&user, "dev.yaml", yaml_agent("dev", "complete"));
    let broken = write(&project, "dev.yaml", "name: dev\nsystemPrompt: x\n");
    let outcome = load_checked(&[user, project]);
    assert!(outcome.agents.is_empty(), "{:?}", names(&outcome));
    assert_diag(
        &outcome,
        "transitions is required",
        Severity::Error,
        &broken,
        Some(1),
    );
}

#[test]
fn default_roots_honour_xdg_config_home_then_home() {
    let ws = Path::new("/work/project");
    let env_of = |vars: &'static [(&'static str, &'static str)]| {
        move |key: &str| {
            vars.iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| OsString::from(v))
        }
    };
    assert_eq!(
        default_roots(
            ws,
            env_of(&[("HOME", "/home/u"), ("XDG_CONFIG_HOME", "/cfg")])
        ),
        [
            PathBuf::from("/cfg/rawko/agents"),
            PathBuf::from("/work/project/.rawko/agents")
        ]
    );
    let home_only = [
        PathBuf::from("/home/u/.config/rawko/agents"),
        PathBuf::from("/work/project/.rawko/agents"),
    ];
    assert_eq!(default_roots(ws, env_of(&[("HOME", "/home/u")])), home_only);
    // An empty XDG_CONFIG_HOME counts as unset.
    assert_eq!(
        default_roots(ws, env_of(&[("HOME", "/home/u"), ("XDG_CONFIG_HOME", "")])),
        home_only
    );
    assert_eq!(
        default_roots(ws, env_of(&[])),
        [PathBuf::from("/work/project/.rawko/agents")]
    );
}

#[test]
fn default_roots_load_user_then_project_agents() {
    let tmp = TempDir::new().expect("temp dir");
    let cfg = tmp.path().join("cfg");
    let ws = tmp.path().join("ws");
    write(&cfg, "rawko/agents/dev.yaml", yaml_agent("dev", "complete"));
    write(
        &cfg,
        "rawko/agents/mine.yaml",
        yaml_agent("mine", "complete"),
    );
    let project_dev = write(&ws, ".rawko/agents/dev.yaml", yaml_agent("dev", "mine"));
    let cfg_os = cfg.clone().into_os_string();
    let roots = default_roots(&ws, |k| (k == "XDG_CONFIG_HOME").then(|| cfg_os.clone()));
    let outcome = load_checked(&roots);
    assert!(outcome.diagnostics.is_empty(), "{}", shown(&outcome));
    assert_eq!(names(&outcome), ["dev", "mine"]);
    assert_eq!(
        outcome.agents.get("dev").map(|a| &a.file),
        Some(&project_dev)
    );
}

// ---------------------------------------------------------------------------------------------
// Set validation
// ---------------------------------------------------------------------------------------------

#[test]
fn a_missing_transition_target_is_an_error_listing_the_agents() {
    let tmp = TempDir::new().expect("temp dir");
    write(tmp.path(), "a.yaml", yaml_agent("a", "b"));
    write(tmp.path(), "b.yaml", yaml_agent("b", "complete"));
    let c = write(
        tmp.path(),
        "c.md",
        "---\nname: c\ntransitions:\n  onSuccess: a\n  onFailure: ghost\n---\nC.\n",
    );
    let outcome = load_dir(tmp.path());
    assert_eq!(outcome.diagnostics.len(), 1, "{}", shown(&outcome));
    let d = find(&outcome, "transitions.onFailure names no agent");
    assert_eq!(d.severity, Severity::Error);
    assert_eq!(d.path, c);
    assert_eq!(d.line, Some(5));
    assert_eq!(
        d.message,
        "transitions.onFailure names no agent: there is no \"ghost\" (agents: a, b, c; or \"complete\" to end the task)"
    );
    assert_eq!(names(&outcome), ["a", "b"]);
    assert_eq!(outcome.skipped.len(), 1);
    assert_eq!(outcome.skipped[0].name.as_deref(), Some("c"));
}

#[test]
fn leaving_an_agent_out_strands_the_agents_that_lead_to_it() {
    let tmp = TempDir::new().expect("temp dir");
    let a = write(tmp.path(), "a.yaml", yaml_agent("a", "b"));
    write(tmp.path(), "b.yaml", yaml_agent("b", "ghost"));
    let x = write(tmp.path(), "x.yaml", yaml_agent("x", "broken"));
    write(tmp.path(), "broken.yaml", "name: broken\n");
    write(tmp.path(), "ok.yaml", yaml_agent("ok", "complete"));
    let outcome = load_dir(tmp.path());
    assert_eq!(names(&outcome), ["ok"]);
    find(&outcome, "there is no \"ghost\"");
    assert_diag(
        &outcome,
        "transitions.onSuccess names agent \"b\", which has errors and was left out",
        Severity::Error,
        &a,
        Some(4),
    );
    assert_diag(
        &outcome,
        "transitions.onSuccess names agent \"broken\", which has errors and was left out",
        Severity::Error,
        &x,
        Some(4),
    );
}

#[test]
fn complete_is_a_valid_target_everywhere() {
    let tmp = TempDir::new().expect("temp dir");
    write(
        tmp.path(),
        "a.yaml",
        "name: a\nsystemPrompt: x\ntransitions:\n  onSuccess: complete\n  onFailure: complete\n  onMaxIterations: complete\n",
    );
    let outcome = load_dir(tmp.path());
    assert!(outcome.diagnostics.is_empty(), "{}", shown(&outcome));
    assert_eq!(names(&outcome), ["a"]);
}

#[test]
fn succeeding_back_to_itself_is_a_warning() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(tmp.path(), "loop.yaml", yaml_agent("loop", "loop"));
    let outcome = load_dir(tmp.path());
    assert_eq!(outcome.diagnostics.len(), 1, "{}", shown(&outcome));
    assert_diag(
        &outcome,
        "transitions.onSuccess leads back to \"loop\" itself",
        Severity::Warning,
        &file,
        Some(4),
    );
    assert_eq!(names(&outcome), ["loop"]);
    assert!(!outcome.has_errors());
}

#[test]
fn unknown_tool_names_are_warnings_at_their_item() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(
        tmp.path(),
        "a.md",
        "---\nname: a\ntools:\n  allowed:\n    - read\n    - Browser\n  blocked: [WebSearch, workflow_step]\ntransitions: {onSuccess: complete}\n---\nA.\n",
    );
    let outcome = load_dir(tmp.path());
    assert_eq!(outcome.diagnostics.len(), 1, "{}", shown(&outcome));
    assert_diag(
        &outcome,
        "tools.allowed[1]: \"Browser\" is not a tool rawko knows",
        Severity::Warning,
        &file,
        Some(6),
    );
    assert_eq!(names(&outcome), ["a"]);
}

// ---------------------------------------------------------------------------------------------
// Tool filtering of loaded agents
// ---------------------------------------------------------------------------------------------

fn loaded(yaml: &str) -> AgentDefinition {
    let parsed = parse_str(Path::new("agent.yaml"), yaml);
    assert!(parsed.diagnostics.is_empty(), "{:?}", parsed.diagnostics);
    parsed.agent.expect("agent")
}

#[test]
fn a_loaded_agents_tools_are_filtered() {
    let a = loaded(
        "name: reader\nsystemPrompt: x\ntransitions: {onSuccess: complete}\ntools:\n  allowed: [Read, Bash, Write]\n  blocked: [write]\n",
    );
    assert!(a.tool_allowed("read"));
    assert!(a.tool_allowed("BASH"));
    assert!(!a.tool_allowed("Write"));
    assert!(!a.tool_allowed("Edit"));
    assert!(a.tool_allowed("workflow_step"));
}

#[test]
fn a_loaded_bash_filter_checks_first_words_and_patterns() {
    let a = loaded(
        "name: reader\nsystemPrompt: x\ntransitions: {onSuccess: complete}\ntools:\n  bashFilter:\n    allowedCommands: [ls, git]\n    blockedPatterns: ['\\bgit\\s+push\\b']\n",
    );
    assert_eq!(a.check_bash("ls -la"), Ok(()));
    assert_eq!(a.check_bash("GIT_PAGER=cat git log"), Ok(()));
    assert_eq!(
        a.check_bash("FOO=1 rm -rf ."),
        Err("Command 'rm' is not allowed for agent reader".to_owned())
    );
    assert_eq!(
        a.check_bash("git push --force"),
        Err(r"Command blocked by pattern: \bgit\s+push\b".to_owned())
    );
}

// ---------------------------------------------------------------------------------------------
// The starter agents
// ---------------------------------------------------------------------------------------------

fn starter() -> AgentLoadOutcome {
    load_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("starter/agents"))
}

#[test]
fn the_starter_agents_validate_cleanly_together() {
    let outcome = starter();
    assert!(outcome.diagnostics.is_empty(), "{}", shown(&outcome));
    assert_eq!(
        names(&outcome),
        ["developer", "planner", "reviewer", "tester"]
    );
    let flow = |name: &str| {
        let a = outcome.agents.get(name).expect(name);
        assert!(
            a.when_to_use.as_ref().is_some_and(|w| w.len() > 40),
            "{name}"
        );
        assert!(a.system_prompt.len() > 200, "{name}");
        (
            a.transitions.on_success.clone(),
            a.failure_target().to_owned(),
            a.transitions.on_max_iterations.clone(),
        )
    };
    let s = |x: &str| x.to_owned();
    assert_eq!(flow("planner"), (s("developer"), s("planner"), None));
    assert_eq!(
        flow("developer"),
        (s("tester"), s("developer"), Some(s("reviewer")))
    );
    assert_eq!(flow("tester"), (s("reviewer"), s("developer"), None));
    assert_eq!(flow("reviewer"), (s("complete"), s("developer"), None));
}

#[test]
fn the_starter_planner_and_reviewer_are_read_only() {
    let outcome = starter();
    for name in ["planner", "reviewer"] {
        let a = outcome.agents.get(name).expect(name);
        for tool in ["Read", "Glob", "Grep", "Bash", "workflow_step"] {
            assert!(a.tool_allowed(tool), "{name} may use {tool}");
        }
        for tool in ["Write", "Edit"] {
            assert!(!a.tool_allowed(tool), "{name} may not use {tool}");
        }
        assert_eq!(a.check_bash("git status"), Ok(()), "{name}");
        assert_eq!(a.check_bash("ls -la src"), Ok(()), "{name}");
        assert!(a.check_bash("rm -rf src").is_err(), "{name}");
        assert!(a.check_bash("git commit -am wip").is_err(), "{name}");
        assert!(a.check_bash("cat a > b").is_err(), "{name}");
        assert!(a.check_bash("ls && rm x").is_err(), "{name}");
        assert!(a.check_bash("find . -delete").is_err(), "{name}");
    }
    let planner = outcome.agents.get("planner").expect("planner");
    assert_eq!(planner.limits.max_iterations, Some(5));
}

#[test]
fn the_starter_developer_has_every_tool_but_does_not_push() {
    let outcome = starter();
    let dev = outcome.agents.get("developer").expect("developer");
    for tool in ["Read", "Write", "Edit", "Glob", "Grep", "Bash", "WebFetch"] {
        assert!(dev.tool_allowed(tool), "{tool}");
    }
    assert_eq!(dev.check_bash("cargo test && git commit -am x"), Ok(()));
    assert!(dev.check_bash("git push origin main").is_err());
    let tester = outcome.agents.get("tester").expect("tester");
    assert!(!tester.tool_allowed("Write"));
    assert_eq!(tester.check_bash("cargo test 2>&1 | tail -20"), Ok(()));
}

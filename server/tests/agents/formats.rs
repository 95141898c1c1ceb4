//! The two formats.

use super::*;

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

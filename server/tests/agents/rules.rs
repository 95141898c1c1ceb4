//! One fixture per rule: names, system prompts and transitions.

use super::*;

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

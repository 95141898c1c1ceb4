//! Set validation.

use super::*;

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

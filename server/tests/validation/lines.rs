//! Lines point at the exact entry, key or duplicate.

use super::*;

// ---------------------------------------------------------------------------------------------
// Lines point at the exact entry, key or duplicate (regressions)
// ---------------------------------------------------------------------------------------------

#[test]
fn a_missing_phase_file_points_at_its_own_entry_not_a_line_that_mentions_its_name() {
    let fx = Fixture::new();
    fx.write(
        "wf/workflow.yaml",
        workflow_yaml("W", "wf", &["data.md", "a.md"]),
    );
    fx.write("wf/data.md", phase("data"));
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error("wf/workflow.yaml", Some(6), "phase file \"a.md\" not found"),
    );
}

#[test]
fn a_skipped_subworkflow_reference_points_at_its_entry() {
    let fx = Fixture::new();
    fx.write(
        "wf/workflow.yaml",
        workflow_yaml("W", "wf", &["review-prep.md", "subworkflow: rev"]),
    );
    fx.write("wf/review-prep.md", phase("prep"));
    fx.write("rev/workflow.yaml", "name: [broken\n");
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            "wf/workflow.yaml",
            Some(6),
            "references subworkflow \"rev\", which was skipped because of its own errors",
        ),
    );
}

#[test]
fn a_cycle_points_at_the_reference_that_closes_it() {
    let fx = Fixture::new();
    fx.valid("ok");
    fx.write(
        "a/workflow.yaml",
        "name: A\ncommandName: a\ninitialMessage: run the subworkflow now\nphases:\n  - subworkflow: ok\n  - subworkflow: b\n",
    );
    fx.write(
        "b/workflow.yaml",
        "name: B\nshow: workflows\nphases:\n  - subworkflow: a\n",
    );
    let outcome = fx.load();
    let a = outcome
        .diagnostics
        .iter()
        .find(|d| d.workflow.as_deref() == Some("a"))
        .expect("a diagnostic for a");
    assert_eq!(a.line, Some(6), "{}", dump(&outcome));
    let b = outcome
        .diagnostics
        .iter()
        .find(|d| d.workflow.as_deref() == Some("b"))
        .expect("a diagnostic for b");
    assert_eq!(b.line, Some(4), "{}", dump(&outcome));
}

#[test]
fn a_chain_of_missing_references_says_why_each_was_skipped() {
    let fx = Fixture::new();
    fx.write(
        "c/workflow.yaml",
        workflow_yaml("C", "c", &["subworkflow: b"]),
    );
    fx.write(
        "b/workflow.yaml",
        "name: B\nshow: workflows\nphases:\n  - subworkflow: missing\n",
    );
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "b",
        &error(
            "b/workflow.yaml",
            Some(4),
            "references unknown subworkflow \"missing\"",
        ),
    );
    check(
        &fx,
        &outcome,
        "c",
        &error(
            "c/workflow.yaml",
            Some(5),
            "which was skipped because it references a missing workflow",
        ),
    );
}

#[test]
fn a_duplicate_phase_id_points_at_the_id_line() {
    let fx = Fixture::new();
    fx.write(
        "wf/workflow.yaml",
        workflow_yaml("W", "wf", &["one.md", "two.md"]),
    );
    fx.write("wf/one.md", phase("same"));
    fx.write(
        "wf/two.md",
        "---\n# the second file\nid: same\nname: Two\nemoji: 2️⃣\n---\nBody.\n",
    );
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error("wf/two.md", Some(3), "duplicate phase id \"same\""),
    );
}

#[test]
fn a_duplicate_yaml_key_points_at_the_duplicate() {
    let fx = Fixture::new();
    fx.write(
        "wf/workflow.yaml",
        "name: W\ncommandName: wf\nname: X\ninitialMessage: hi\nphases: [p.md]\n",
    );
    fx.write(
        "wf/p.md",
        "---\nid: p\nname: P\nemoji: 🅿️\nname: Q\n---\nBody.\n",
    );
    fx.valid("other");
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            "wf/workflow.yaml",
            Some(3),
            "duplicate entry with key \"name\"",
        ),
    );

    let fx = Fixture::new();
    fx.write("wf/workflow.yaml", workflow_yaml("W", "wf", &["p.md"]));
    fx.write(
        "wf/p.md",
        "---\nid: p\nname: P\nemoji: 🅿️\nname: Q\n---\nBody.\n",
    );
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error("wf/p.md", Some(5), "duplicate entry with key \"name\""),
    );
}

#[test]
fn a_command_name_of_the_wrong_type_is_one_error_on_its_line() {
    let fx = Fixture::new();
    fx.write(
        "wf/workflow.yaml",
        "name: W\ncommandName: [a]\ninitialMessage: {x: 1}\nphases: [p.md]\n",
    );
    fx.write("wf/p.md", phase("p"));
    let outcome = fx.load();
    assert_eq!(outcome.diagnostics.len(), 2, "{}", dump(&outcome));
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            "wf/workflow.yaml",
            Some(2),
            "commandName must be text, found a list",
        ),
    );
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            "wf/workflow.yaml",
            Some(3),
            "initialMessage must be text, found a mapping",
        ),
    );
}

#[test]
fn a_tool_list_with_no_value_is_a_warning() {
    let fx = Fixture::new();
    fx.write("wf/workflow.yaml", workflow_yaml("W", "wf", &["p.md"]));
    fx.write(
        "wf/p.md",
        "---\nid: p\nname: P\nemoji: 🅿️\ntools:\n  whitelist:\n---\nBody.\n",
    );
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &warning("wf/p.md", Some(5), "tools.whitelist has no value"),
    );
    assert_loaded(&outcome, "wf");
}

#[test]
fn a_broken_definition_overridden_by_a_later_root_does_not_make_the_set_invalid() {
    let tmp = TempDir::new().expect("temp dir");
    let global = tmp.path().join("global");
    let project = tmp.path().join("project");
    write(&global, "feature/workflow.yaml", "name: [broken\n");
    write(
        &project,
        "feature/workflow.yaml",
        workflow_yaml("Feature", "feature", &["p.md"]),
    );
    write(&project, "feature/p.md", phase("p"));
    let outcome = load_checked(&[
        root(RootKind::UserConfig, &global),
        root(RootKind::Project, &project),
    ]);
    assert!(!outcome.has_errors(), "{}", dump(&outcome));
    assert_loaded(&outcome, "feature");
    let d = the_diagnostic(&outcome, "overridden by");
    assert_eq!(d.severity, Severity::Warning);
    assert_eq!(d.path, global.join("feature/workflow.yaml"));
}

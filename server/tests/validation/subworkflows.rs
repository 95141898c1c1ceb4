//! Subworkflows: cycles and dangling references.

use super::*;

// ---------------------------------------------------------------------------------------------
// Subworkflows: cycles and dangling references
// ---------------------------------------------------------------------------------------------

#[test]
fn cycle_of_two_skips_both_and_names_the_cycle() {
    let fx = Fixture::new();
    fx.write(
        "a/workflow.yaml",
        workflow_yaml("A", "a", &["a1.md", "subworkflow: b"]),
    );
    fx.write("a/a1.md", phase("a1"));
    fx.write(
        "b/workflow.yaml",
        workflow_yaml("B", "b", &["subworkflow: a"]),
    );
    let outcome = fx.load();
    assert_skipped(&outcome, "a");
    assert_skipped(&outcome, "b");
    let cycle: Vec<&Diagnostic> = outcome
        .diagnostics
        .iter()
        .filter(|d| {
            d.message
                .contains("subworkflow cycle \"a\" → \"b\" → \"a\"")
        })
        .collect();
    assert_eq!(cycle.len(), 2, "{}", dump(&outcome));
    for (d, key, line) in [(cycle[0], "a", 6), (cycle[1], "b", 5)] {
        assert_eq!(d.severity, Severity::Error, "{d}");
        assert_eq!(d.path, fx.path(&format!("{key}/workflow.yaml")), "{d}");
        assert_eq!(d.line, Some(line), "{d}");
        assert_eq!(d.workflow.as_deref(), Some(key), "{d}");
        assert!(
            d.message.ends_with(&format!("workflow \"{key}\" skipped")),
            "{d}"
        );
    }
    assert_eq!(errors(&outcome), 2, "{}", dump(&outcome));
}

#[test]
fn self_reference_is_a_cycle() {
    let fx = Fixture::new();
    fx.write(
        "me/workflow.yaml",
        workflow_yaml("Me", "me", &["m.md", "subworkflow: me"]),
    );
    fx.write("me/m.md", phase("m"));
    fx.valid("other");
    let outcome = fx.load();
    let d = the_diagnostic(&outcome, "subworkflow cycle \"me\" → \"me\"");
    assert_eq!(d.severity, Severity::Error);
    assert_eq!(d.path, fx.path("me/workflow.yaml"));
    assert_eq!(d.line, Some(6));
    assert_skipped(&outcome, "me");
    assert_loaded(&outcome, "other");
}

#[test]
fn workflow_referencing_a_cycle_member_is_removed_in_cascade() {
    let fx = Fixture::new();
    fx.write(
        "ping/workflow.yaml",
        workflow_yaml("Ping", "ping", &["subworkflow: pong"]),
    );
    fx.write(
        "pong/workflow.yaml",
        workflow_yaml("Pong", "pong", &["subworkflow: ping"]),
    );
    fx.write(
        "caller/workflow.yaml",
        workflow_yaml("Caller", "caller", &["c1.md", "subworkflow: ping"]),
    );
    fx.write("caller/c1.md", phase("c1"));
    fx.valid("bystander");
    let outcome = fx.load();
    for key in ["ping", "pong", "caller"] {
        assert_skipped(&outcome, key);
    }
    assert_loaded(&outcome, "bystander");
    the_diagnostic(
        &outcome,
        "subworkflow cycle \"ping\" → \"pong\" → \"ping\"; workflow \"ping\" skipped",
    );
    the_diagnostic(
        &outcome,
        "subworkflow cycle \"ping\" → \"pong\" → \"ping\"; workflow \"pong\" skipped",
    );
    // caller is not part of the cycle…
    assert!(
        !outcome
            .diagnostics
            .iter()
            .any(|d| d.workflow.as_deref() == Some("caller") && d.message.contains("cycle")),
        "{}",
        dump(&outcome)
    );
    // …it is skipped because what it references was.
    check(
        &fx,
        &outcome,
        "caller",
        &error(
            "caller/workflow.yaml",
            Some(6),
            "references subworkflow \"ping\", which was skipped because of its own errors; workflow \"caller\" skipped",
        ),
    );
    assert_eq!(errors(&outcome), 3, "{}", dump(&outcome));
}

#[test]
fn unknown_subworkflow() {
    let fx = Fixture::new();
    fx.write(
        "wf/workflow.yaml",
        workflow_yaml("W", "wf", &["a.md", "subworkflow: nosuch"]),
    );
    fx.write("wf/a.md", phase("a"));
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            WF,
            Some(6),
            "references unknown subworkflow \"nosuch\"; workflow \"wf\" skipped",
        ),
    );
    assert_skipped(&outcome, "wf");
}

#[test]
fn subworkflow_that_failed_to_parse_is_named_as_skipped() {
    let fx = Fixture::new();
    fx.write(
        "outer/workflow.yaml",
        workflow_yaml("O", "outer", &["subworkflow: inner"]),
    );
    fx.write(
        "inner/workflow.yaml",
        "name: Inner\nshow: workflows\nphases: []\n",
    );
    let outcome = fx.load();
    let d = the_diagnostic(&outcome, "workflow \"outer\" skipped");
    assert!(
        d.message.contains(
            "references subworkflow \"inner\", which was skipped because of its own errors"
        ),
        "{d}"
    );
    assert_eq!(d.line, Some(5));
    assert_skipped(&outcome, "outer");
    assert_skipped(&outcome, "inner");
}

#[test]
fn cascade_through_a_missing_workflow() {
    let fx = Fixture::new();
    fx.write(
        "b/workflow.yaml",
        "name: B\nshow: workflows\nphases:\n  - subworkflow: missing\n",
    );
    fx.write(
        "c/workflow.yaml",
        workflow_yaml("C", "c", &["c1.md", "subworkflow: b"]),
    );
    fx.write("c/c1.md", phase("c1"));
    fx.valid("ok");
    let outcome = fx.load();
    assert_skipped(&outcome, "b");
    assert_skipped(&outcome, "c");
    assert_loaded(&outcome, "ok");

    let b = the_diagnostic(&outcome, "workflow \"b\" skipped");
    assert!(
        b.message
            .contains("references unknown subworkflow \"missing\""),
        "{b}"
    );
    assert_eq!(b.path, fx.path("b/workflow.yaml"));
    assert_eq!(b.line, Some(4));

    let c = the_diagnostic(&outcome, "workflow \"c\" skipped");
    assert!(
        c.message
            .starts_with("references subworkflow \"b\", which was skipped"),
        "{c}"
    );
    assert_eq!(c.path, fx.path("c/workflow.yaml"));
    assert_eq!(c.line, Some(6));
    assert_eq!(errors(&outcome), 2, "{}", dump(&outcome));
}

#[test]
fn nested_subworkflows_resolve() {
    let fx = Fixture::new();
    fx.write(
        "outer/workflow.yaml",
        workflow_yaml("Outer", "outer", &["o.md", "subworkflow: mid"]),
    );
    fx.write("outer/o.md", phase("o"));
    fx.write(
        "mid/workflow.yaml",
        "name: Mid\nshow: workflows\nphases:\n  - subworkflow: leaf\n  - m.md\n",
    );
    fx.write("mid/m.md", phase("m"));
    fx.write(
        "leaf/workflow.yaml",
        "name: Leaf\nshow: workflows\nphases:\n  - l.md\n",
    );
    fx.write("leaf/l.md", phase("l"));
    let outcome = fx.load();
    assert!(outcome.diagnostics.is_empty(), "{}", dump(&outcome));
    let outer = outcome.workflows.get("outer").expect("loaded");
    let ids: Vec<&str> = outcome
        .workflows
        .flatten(outer)
        .iter()
        .map(|p| p.id.as_str())
        .collect();
    assert_eq!(ids, ["o", "l", "m"]);
}

//! Phase paths: confinement to the root; and non-UTF-8 files.

use super::*;

// ---------------------------------------------------------------------------------------------
// Phase paths: confinement to the root
// ---------------------------------------------------------------------------------------------

#[test]
fn phase_path_escaping_the_root_with_dot_dot() {
    let fx = Fixture::new();
    // The file exists, outside the root (beside it in the temp dir).
    write(fx.tmp.path(), "outside.md", phase("outside"));
    fx.write(WF, workflow_yaml("W", "wf", &["../../outside.md"]));
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            WF,
            Some(5),
            "phase file path \"../../outside.md\" escapes the workflows root",
        ),
    );
    assert_skipped(&outcome, "wf");
}

#[test]
fn phase_path_escaping_the_root_to_a_file_that_does_not_exist() {
    let fx = Fixture::new();
    fx.write(
        WF,
        workflow_yaml("W", "wf", &["a.md", "../../../nowhere.md"]),
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
            "phase file path \"../../../nowhere.md\" escapes the workflows root",
        ),
    );
    assert_skipped(&outcome, "wf");
}

#[test]
fn absolute_phase_path_outside_the_root() {
    let fx = Fixture::new();
    let outside = write(fx.tmp.path(), "elsewhere/abs.md", phase("abs"));
    let entry = outside.display().to_string();
    fx.write(WF, workflow_yaml("W", "wf", &[&entry]));
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            WF,
            Some(5),
            &format!("phase file path \"{entry}\" escapes the workflows root"),
        ),
    );
    assert_skipped(&outcome, "wf");
}

#[test]
fn symlink_in_the_workflow_dir_pointing_outside_the_root() {
    let fx = Fixture::new();
    let outside = write(fx.tmp.path(), "secret.md", phase("secret"));
    fx.write(WF, workflow_yaml("W", "wf", &["link.md"]));
    std::os::unix::fs::symlink(&outside, fx.path("wf/link.md")).expect("symlink");
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            WF,
            Some(5),
            "phase file path \"link.md\" escapes the workflows root",
        ),
    );
    assert_skipped(&outcome, "wf");
}

#[test]
fn symlink_inside_the_root_is_allowed() {
    let fx = Fixture::new();
    fx.write("_shared/real.md", phase("real"));
    fx.write(WF, workflow_yaml("W", "wf", &["link.md"]));
    std::os::unix::fs::symlink(fx.path("_shared/real.md"), fx.path("wf/link.md")).expect("symlink");
    let outcome = fx.load();
    assert!(outcome.diagnostics.is_empty(), "{}", dump(&outcome));
    assert_loaded(&outcome, "wf");
}

#[test]
fn shared_phase_file_inside_the_root_is_allowed_and_the_shared_dir_is_quiet() {
    let fx = Fixture::new();
    fx.write("_shared/x.md", phase("x"));
    fx.write(WF, workflow_yaml("W", "wf", &["../_shared/x.md"]));
    let outcome = fx.load();
    assert!(outcome.diagnostics.is_empty(), "{}", dump(&outcome));
    assert_loaded(&outcome, "wf");
    assert!(outcome.workflows.get("_shared").is_none());
    assert!(outcome.skipped.is_empty(), "{:?}", outcome.skipped);
    let def = outcome.workflows.get("wf").expect("loaded");
    assert_eq!(def.phases[0].as_phase().map(|p| &p.id[..]), Some("x"));
}

// ---------------------------------------------------------------------------------------------
// Non-UTF-8 files
// ---------------------------------------------------------------------------------------------

#[test]
fn non_utf8_workflow_yaml() {
    let fx = Fixture::new();
    fx.write(
        WF,
        b"name: W\ncommandName: wf\ninitialMessage: caf\xe9\nphases:\n  - a.md\n",
    );
    fx.write("wf/a.md", phase("a"));
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            WF,
            Some(3),
            "workflow.yaml is not valid UTF-8 (invalid byte at offset 43)",
        ),
    );
    assert_skipped(&outcome, "wf");
}

#[test]
fn non_utf8_phase_file() {
    let fx = Fixture::new();
    fx.write(WF, workflow_yaml("W", "wf", &["p.md"]));
    fx.write(P, b"---\nid: p\nname: P\nemoji: x\n---\n\xff\xfe body\n");
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error(P, Some(6), "phase file is not valid UTF-8"),
    );
    assert_skipped(&outcome, "wf");
}

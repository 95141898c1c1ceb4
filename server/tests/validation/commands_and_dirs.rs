//! Command names and directories.

use super::*;

// ---------------------------------------------------------------------------------------------
// Command names and directories
// ---------------------------------------------------------------------------------------------

#[test]
fn duplicate_command_name_warns_on_the_second_and_the_first_wins() {
    let fx = Fixture::new();
    fx.write(
        "alpha/workflow.yaml",
        workflow_yaml("Alpha", "go", &["a.md"]),
    );
    fx.write("alpha/a.md", phase("a"));
    fx.write(
        "beta/workflow.yaml",
        "# the second one\nname: Beta\ninitialMessage: hi\ncommandName: go\nphases:\n  - b.md\n",
    );
    fx.write("beta/b.md", phase("b"));
    let outcome = fx.load();
    let d = the_diagnostic(
        &outcome,
        "commandName \"go\" is also used by workflow \"alpha\"",
    );
    assert_eq!(d.severity, Severity::Warning);
    assert_eq!(d.path, fx.path("beta/workflow.yaml"));
    assert_eq!(d.line, Some(4));
    assert_eq!(d.workflow.as_deref(), Some("beta"));
    assert_eq!(outcome.diagnostics.len(), 1, "{}", dump(&outcome));
    assert_loaded(&outcome, "alpha");
    assert_loaded(&outcome, "beta");
    assert_eq!(
        outcome.workflows.by_command_name("go").map(|d| &d.key[..]),
        Some("alpha")
    );
    assert_eq!(
        outcome.workflows.find("beta").map(|d| &d.key[..]),
        Some("beta")
    );
}

#[test]
fn same_command_name_on_a_subworkflow_is_not_a_duplicate() {
    let fx = Fixture::new();
    fx.valid("go");
    fx.write(
        "sub/workflow.yaml",
        "name: Sub\nshow: workflows\ncommandName: go\nphases:\n  - s.md\n",
    );
    fx.write("sub/s.md", phase("s"));
    let outcome = fx.load();
    assert!(outcome.diagnostics.is_empty(), "{}", dump(&outcome));
    assert_eq!(
        outcome.workflows.by_command_name("go").map(|d| &d.key[..]),
        Some("go")
    );
}

#[test]
fn empty_directory_is_a_warning_naming_it() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.path("hollow")).expect("mkdir");
    fx.valid("ok");
    let outcome = fx.load();
    let d = the_diagnostic(
        &outcome,
        "empty directory: workflow \"hollow\" needs a workflow.yaml",
    );
    assert_eq!(d.severity, Severity::Warning);
    assert_eq!(d.path, fx.path("hollow"));
    assert_eq!(d.line, None);
    assert_eq!(d.workflow.as_deref(), Some("hollow"));
    assert!(outcome.workflows.get("hollow").is_none());
    assert_loaded(&outcome, "ok");
    assert!(!outcome.has_errors());
}

#[test]
fn directory_with_files_but_no_workflow_yaml() {
    let fx = Fixture::new();
    fx.write("notes/plan.md", phase("plan"));
    let outcome = fx.load();
    let d = the_diagnostic(
        &outcome,
        "no workflow.yaml in this directory, so it is not a workflow",
    );
    assert_eq!(d.severity, Severity::Warning);
    assert_eq!(d.path, fx.path("notes"));
    assert!(
        d.message.contains("leading `_`"),
        "the message says how to silence it: {d}"
    );
    assert!(outcome.workflows.is_empty());
}

#[test]
fn files_and_hidden_directories_beside_workflows_are_ignored() {
    let fx = Fixture::new();
    fx.write("README.md", "# my workflows\n");
    fx.write(".git/HEAD", "ref: refs/heads/main\n");
    fx.valid("ok");
    let outcome = fx.load();
    assert!(outcome.diagnostics.is_empty(), "{}", dump(&outcome));
    assert_eq!(outcome.workflows.keys().collect::<Vec<_>>(), ["ok"]);
}

#[test]
fn directory_name_that_is_not_utf8() {
    use std::os::unix::ffi::OsStrExt;
    let fx = Fixture::new();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9");
    let dir = fx.root.join(name);
    write(
        &dir,
        "workflow.yaml",
        workflow_yaml("Cafe", "cafe", &["a.md"]),
    );
    write(&dir, "a.md", phase("a"));
    fx.valid("ok");
    let outcome = fx.load();
    let d = the_diagnostic(&outcome, "workflow directory name is not valid UTF-8");
    assert_eq!(d.severity, Severity::Error);
    assert_eq!(d.path, dir);
    assert_eq!(outcome.workflows.keys().collect::<Vec<_>>(), ["ok"]);
}

#[test]
fn one_broken_workflow_does_not_hide_a_valid_one() {
    let fx = Fixture::new();
    fx.valid("good");
    fx.write("bad/workflow.yaml", "name: [unclosed\n");
    fx.valid("zeta");
    let outcome = fx.load();
    assert_loaded(&outcome, "good");
    assert_loaded(&outcome, "zeta");
    assert_skipped(&outcome, "bad");
    assert_eq!(outcome.workflows.len(), 2);
    assert_eq!(outcome.skipped.len(), 1);
    assert!(outcome
        .diagnostics
        .iter()
        .all(|d| d.workflow.as_deref() == Some("bad")));
    let d = the_diagnostic(&outcome, "invalid YAML");
    assert_eq!(d.path, fx.path("bad/workflow.yaml"));
}

#[test]
fn fingerprint_changes_when_a_phase_file_changes() {
    let fx = Fixture::new();
    fx.valid("wf");
    let before = fx
        .load()
        .workflows
        .get("wf")
        .expect("loaded")
        .fingerprint
        .clone();
    assert_eq!(
        fx.load().workflows.get("wf").expect("loaded").fingerprint,
        before
    );
    fx.write(
        "wf/wf-work.md",
        phase("wf-work").replace("Do the", "Now do the"),
    );
    let after = fx
        .load()
        .workflows
        .get("wf")
        .expect("loaded")
        .fingerprint
        .clone();
    assert_ne!(before, after);
}

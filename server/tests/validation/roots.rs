//! Roots.

use super::*;

// ---------------------------------------------------------------------------------------------
// Roots
// ---------------------------------------------------------------------------------------------

#[test]
fn later_root_wins_for_the_same_key() {
    let tmp = TempDir::new().expect("temp dir");
    let user = tmp.path().join("user");
    let project = tmp.path().join("project");
    write(
        &user,
        "feature/workflow.yaml",
        workflow_yaml("User Feature", "feature", &["u.md"]),
    );
    write(&user, "feature/u.md", phase("u"));
    write(
        &user,
        "only-user/workflow.yaml",
        workflow_yaml("Only User", "only-user", &["o.md"]),
    );
    write(&user, "only-user/o.md", phase("o"));
    write(
        &project,
        "feature/workflow.yaml",
        workflow_yaml("Project Feature", "feature", &["p.md"]),
    );
    write(&project, "feature/p.md", phase("p"));
    let roots = [
        root(RootKind::UserConfig, &user),
        root(RootKind::PiGlobal, &tmp.path().join("does-not-exist")),
        root(RootKind::Project, &project),
    ];
    let outcome = load_checked(&roots);
    assert!(outcome.diagnostics.is_empty(), "{}", dump(&outcome));
    // The root that does not exist is fine, and not among the roots found.
    assert_eq!(
        outcome
            .roots_found
            .iter()
            .map(|r| r.kind)
            .collect::<Vec<_>>(),
        [RootKind::UserConfig, RootKind::Project]
    );
    let feature = outcome.workflows.get("feature").expect("loaded");
    assert_eq!(feature.name, "Project Feature");
    assert_eq!(feature.root.kind, RootKind::Project);
    assert_eq!(feature.dir, project.join("feature"));
    assert_eq!(
        outcome
            .workflows
            .by_command_name("feature")
            .map(|d| &d.name[..]),
        Some("Project Feature")
    );
    let only = outcome.workflows.get("only-user").expect("loaded");
    assert_eq!(only.root.kind, RootKind::UserConfig);
    assert_eq!(outcome.workflows.len(), 2);

    // Swapping the order swaps the winner.
    let swapped = load_checked(&[
        root(RootKind::Project, &project),
        root(RootKind::UserConfig, &user),
    ]);
    assert_eq!(
        swapped.workflows.get("feature").map(|d| &d.name[..]),
        Some("User Feature")
    );
}

#[test]
fn root_that_is_a_file_is_an_error() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(tmp.path(), "workflows", "not a directory");
    let good = tmp.path().join("good");
    write(
        &good,
        "ok/workflow.yaml",
        workflow_yaml("Ok", "ok", &["o.md"]),
    );
    write(&good, "ok/o.md", phase("o"));
    let outcome = load_checked(&[
        root(RootKind::UserConfig, &file),
        root(RootKind::Project, &good),
    ]);
    let d = the_diagnostic(&outcome, "workflows root is not a directory");
    assert_eq!(d.severity, Severity::Error);
    assert_eq!(d.path, file);
    assert_eq!(d.workflow, None);
    assert_eq!(outcome.roots_found.len(), 1);
    assert!(outcome.workflows.get("ok").is_some());
}

#[test]
fn no_roots_at_all_loads_nothing_quietly() {
    let tmp = TempDir::new().expect("temp dir");
    let outcome = load_checked(&[root(RootKind::Project, &tmp.path().join("nope"))]);
    assert!(outcome.workflows.is_empty());
    assert!(outcome.diagnostics.is_empty());
    assert!(outcome.roots_found.is_empty());
    let outcome = load_checked(&[]);
    assert!(outcome.workflows.is_empty() && outcome.diagnostics.is_empty());
}

/// An environment lookup over a fixed list of variables.
fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let vars: Vec<(String, OsString)> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
        .collect();
    move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

fn roots_as_pairs(roots: &[WorkflowRoot]) -> Vec<(RootKind, PathBuf)> {
    roots.iter().map(|r| (r.kind, r.path.clone())).collect()
}

#[test]
fn default_roots_from_home_only() {
    let ws = Path::new("/work/space");
    let roots = default_roots(ws, env_of(&[("HOME", "/home/u")]));
    assert_eq!(
        roots_as_pairs(&roots),
        [
            (
                RootKind::UserConfig,
                PathBuf::from("/home/u/.config/rawko/workflows")
            ),
            (
                RootKind::PiGlobal,
                PathBuf::from("/home/u/.pi/agent/workflows")
            ),
            (
                RootKind::PiProject,
                PathBuf::from("/work/space/.pi/workflows")
            ),
            (
                RootKind::Project,
                PathBuf::from("/work/space/.rawko/workflows")
            ),
        ]
    );
}

#[test]
fn default_roots_honour_xdg_config_home_and_pi_coding_agent_dir() {
    let ws = Path::new("/ws");
    let roots = default_roots(
        ws,
        env_of(&[
            ("HOME", "/home/u"),
            ("XDG_CONFIG_HOME", "/xdg"),
            ("PI_CODING_AGENT_DIR", "/pi-agent"),
        ]),
    );
    assert_eq!(
        roots_as_pairs(&roots),
        [
            (RootKind::UserConfig, PathBuf::from("/xdg/rawko/workflows")),
            (RootKind::PiGlobal, PathBuf::from("/pi-agent/workflows")),
            (RootKind::PiProject, PathBuf::from("/ws/.pi/workflows")),
            (RootKind::Project, PathBuf::from("/ws/.rawko/workflows")),
        ]
    );
}

#[test]
fn default_roots_without_home() {
    let ws = Path::new("/ws");
    // Nothing set: only the workspace's roots.
    assert_eq!(
        roots_as_pairs(&default_roots(ws, env_of(&[]))),
        [
            (RootKind::PiProject, PathBuf::from("/ws/.pi/workflows")),
            (RootKind::Project, PathBuf::from("/ws/.rawko/workflows")),
        ]
    );
    // Empty values count as unset.
    assert_eq!(
        default_roots(ws, env_of(&[("HOME", ""), ("XDG_CONFIG_HOME", "")])).len(),
        2
    );
    // XDG_CONFIG_HOME alone gives the user root but no pi-global one.
    assert_eq!(
        roots_as_pairs(&default_roots(ws, env_of(&[("XDG_CONFIG_HOME", "/xdg")])))[0],
        (RootKind::UserConfig, PathBuf::from("/xdg/rawko/workflows"))
    );
    assert_eq!(
        default_roots(ws, env_of(&[("PI_CODING_AGENT_DIR", "/pi")]))
            .iter()
            .map(|r| r.kind)
            .collect::<Vec<_>>(),
        [RootKind::PiGlobal, RootKind::PiProject, RootKind::Project]
    );
}

#[test]
fn default_roots_load_end_to_end_with_project_overriding_user() {
    let tmp = TempDir::new().expect("temp dir");
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    let user_root = home.join(".config/rawko/workflows");
    write(
        &user_root,
        "feature/workflow.yaml",
        workflow_yaml("Home Feature", "feature", &["h.md"]),
    );
    write(&user_root, "feature/h.md", phase("h"));
    write(
        &home,
        ".pi/agent/workflows/pi/workflow.yaml",
        workflow_yaml("Pi", "pi", &["p.md"]),
    );
    write(&home, ".pi/agent/workflows/pi/p.md", phase("p"));
    let project_root = ws.join(".rawko/workflows");
    write(
        &project_root,
        "feature/workflow.yaml",
        workflow_yaml("Ws Feature", "feature", &["w.md"]),
    );
    write(&project_root, "feature/w.md", phase("w"));
    let home_str = home.display().to_string();
    let roots = default_roots(&ws, env_of(&[("HOME", &home_str)]));
    let outcome = load_checked(&roots);
    assert!(outcome.diagnostics.is_empty(), "{}", dump(&outcome));
    assert_eq!(
        outcome
            .workflows
            .get("feature")
            .map(|d| (&d.name[..], d.root.kind)),
        Some(("Ws Feature", RootKind::Project))
    );
    assert_eq!(
        outcome.workflows.get("pi").map(|d| d.root.kind),
        Some(RootKind::PiGlobal)
    );
}

//! Duplicates and roots.

use super::*;

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

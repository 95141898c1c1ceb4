//! Pinning on its own: what is pinned, that the pinned copies load without the disk, and how
//! the disk is compared with them.

use std::path::Path;
use std::sync::Arc;

use super::*;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A workspace with workflow `outer` (a phase, then subworkflow `inner`), an unrelated
/// workflow `other`, and one agent.
fn workspace() -> (tempfile::TempDir, Vec<WorkflowRoot>, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let wf = ws.join(".rawko/workflows");
    write(
        &wf.join("outer/workflow.yaml"),
        "name: Outer\ncommandName: outer\ninitialMessage: \"Do {description}\"\nphases:\n  - plan.md\n  - subworkflow: inner\n",
    );
    write(
        &wf.join("outer/plan.md"),
        "---\nid: plan\nname: Plan\nemoji: \"📋\"\ntools:\n  whitelist: [Read]\n---\nPlan.\n",
    );
    write(
        &wf.join("inner/workflow.yaml"),
        "name: Inner\nshow: workflows\nphases:\n  - look.md\n",
    );
    write(
        &wf.join("inner/look.md"),
        "---\nid: look\nname: Look\nemoji: \"👀\"\ntools:\n  whitelist: [Read]\n---\nLook.\n",
    );
    write(
        &wf.join("other/workflow.yaml"),
        "name: Other\ncommandName: other\ninitialMessage: \"x\"\nphases:\n  - a.md\n",
    );
    write(
        &wf.join("other/a.md"),
        "---\nid: a\nname: A\nemoji: \"🅰\"\n---\nA.\n",
    );
    write(
        &ws.join(".rawko/agents/reader.md"),
        "---\nname: reader\ntools:\n  allowed: [Read]\ntransitions:\n  onSuccess: complete\n---\n\n## System Prompt\n\nRead.\n",
    );
    let roots = crate::workflow::default_roots(ws, |_| None);
    let agent_roots = vec![ws.join(".rawko/agents")];
    (dir, roots, agent_roots)
}

#[test]
fn a_workflow_is_pinned_with_its_subworkflows_and_loads_from_the_copies_alone() {
    let (dir, roots, _) = workspace();
    let state = tempfile::tempdir().unwrap();
    let set = Arc::new(crate::workflow::load(&roots).workflows);
    let pinned = pin_workflows(state.path(), Some("outer"), set, &roots).unwrap();
    let keys: Vec<&str> = pinned
        .manifest
        .workflows
        .iter()
        .map(|w| w.key.as_str())
        .collect();
    assert_eq!(
        keys,
        ["outer", "inner"],
        "the unrelated workflow is not pinned"
    );
    let files: Vec<String> = pinned.manifest.workflows[0]
        .files
        .iter()
        .map(|f| f.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(files, ["workflow.yaml", "plan.md"]);

    // The workspace goes away: the pinned copies still load, rules and all.
    drop(dir);
    let loaded = load_workflows(state.path(), &pinned.digest).unwrap();
    let look = loaded
        .set
        .get("inner")
        .unwrap()
        .phases
        .iter()
        .find_map(|e| e.as_phase())
        .unwrap();
    assert!(look.tools.is_some(), "the pinned phase keeps its rules");
    assert_eq!(loaded.manifest, pinned.manifest);
}

#[test]
fn the_same_definitions_pin_to_the_same_digest_and_a_changed_one_does_not() {
    let (dir, roots, agent_roots) = workspace();
    let state = tempfile::tempdir().unwrap();
    let set = Arc::new(crate::workflow::load(&roots).workflows);
    let a = pin_workflows(state.path(), Some("outer"), set.clone(), &roots).unwrap();
    let b = pin_workflows(state.path(), Some("outer"), set, &roots).unwrap();
    assert_eq!(a.digest, b.digest);
    let agents = Arc::new(crate::agents::load(&agent_roots).agents);
    let pinned_agents = pin_agents(state.path(), agents, &agent_roots).unwrap();
    assert_eq!(pinned_agents.manifest.agents.len(), 1);

    write(
        &dir.path().join(".rawko/workflows/inner/look.md"),
        "---\nid: look\nname: Look\nemoji: \"👀\"\n---\nAnything.\n",
    );
    let set = Arc::new(crate::workflow::load(&roots).workflows);
    let c = pin_workflows(state.path(), Some("outer"), set, &roots).unwrap();
    assert_ne!(a.digest, c.digest);
    // Both stay loadable.
    assert!(load_workflows(state.path(), &a.digest).is_ok());
    assert!(load_workflows(state.path(), &c.digest).is_ok());
}

#[test]
fn the_disk_is_compared_file_by_file() {
    let (dir, roots, agent_roots) = workspace();
    let ws = dir.path();
    let state = tempfile::tempdir().unwrap();
    let set = Arc::new(crate::workflow::load(&roots).workflows);
    let pinned = pin_workflows(state.path(), Some("outer"), set.clone(), &roots).unwrap();
    let agents = Arc::new(crate::agents::load(&agent_roots).agents);
    let pinned_agents = pin_agents(state.path(), agents.clone(), &agent_roots).unwrap();
    assert!(workflow_changes(&pinned.manifest, &set).is_empty());
    assert!(agent_changes(&pinned_agents.manifest, &agents).is_empty());

    write(
        &ws.join(".rawko/workflows/inner/look.md"),
        "---\nid: look\nname: Look\nemoji: \"👀\"\n---\nAnything.\n",
    );
    // An unrelated workflow's change is none of this task's business.
    write(
        &ws.join(".rawko/workflows/other/a.md"),
        "---\nid: a\nname: A\nemoji: \"🅰\"\n---\nB.\n",
    );
    std::fs::remove_file(ws.join(".rawko/agents/reader.md")).unwrap();
    write(
        &ws.join(".rawko/agents/writer.md"),
        "---\nname: writer\ntransitions:\n  onSuccess: complete\n---\n\n## System Prompt\n\nWrite.\n",
    );
    let disk = crate::workflow::load(&roots).workflows;
    let changes = workflow_changes(&pinned.manifest, &disk);
    assert_eq!(
        changes,
        [Change {
            path: ws.join(".rawko/workflows/inner/look.md"),
            kind: ChangeKind::Changed
        }]
    );
    let disk_agents = crate::agents::load(&agent_roots).agents;
    let mut changes = agent_changes(&pinned_agents.manifest, &disk_agents);
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    assert_eq!(
        changes,
        [
            Change {
                path: ws.join(".rawko/agents/reader.md"),
                kind: ChangeKind::Gone
            },
            Change {
                path: ws.join(".rawko/agents/writer.md"),
                kind: ChangeKind::Added
            },
        ]
    );
    assert_eq!(
        describe(&changes, ws),
        ".rawko/agents/reader.md (gone: deleted, or its definition no longer loads or names it), .rawko/agents/writer.md (added)"
    );
}

#[test]
fn a_workflow_of_the_same_key_in_a_later_root_is_a_change() {
    let (dir, roots, _) = workspace();
    let ws = dir.path();
    // `solo` in `.pi/workflows`, which `.rawko/workflows` overrides by key.
    write(
        &ws.join(".pi/workflows/solo/workflow.yaml"),
        "name: Solo\ncommandName: solo\ninitialMessage: \"x\"\nphases:\n  - a.md\n",
    );
    write(
        &ws.join(".pi/workflows/solo/a.md"),
        "---\nid: a\nname: A\nemoji: \"🅰\"\ntools:\n  whitelist: [Read]\n---\nA.\n",
    );
    let state = tempfile::tempdir().unwrap();
    let set = Arc::new(crate::workflow::load(&roots).workflows);
    let pinned = pin_workflows(state.path(), Some("solo"), set, &roots).unwrap();
    write(
        &ws.join(".rawko/workflows/solo/workflow.yaml"),
        "name: Solo\ncommandName: solo\ninitialMessage: \"x\"\nphases:\n  - a.md\n",
    );
    write(
        &ws.join(".rawko/workflows/solo/a.md"),
        "---\nid: a\nname: A\nemoji: \"🅰\"\n---\nA.\n",
    );
    let disk = crate::workflow::load(&roots).workflows;
    let kinds: Vec<(String, ChangeKind)> = workflow_changes(&pinned.manifest, &disk)
        .into_iter()
        .map(|c| {
            let rel = c.path.strip_prefix(ws).unwrap().display().to_string();
            (rel, c.kind)
        })
        .collect();
    assert_eq!(
        kinds,
        [
            (
                ".pi/workflows/solo/workflow.yaml".to_owned(),
                ChangeKind::Gone
            ),
            (".pi/workflows/solo/a.md".to_owned(), ChangeKind::Gone),
            (
                ".rawko/workflows/solo/workflow.yaml".to_owned(),
                ChangeKind::Added
            ),
            (".rawko/workflows/solo/a.md".to_owned(), ChangeKind::Added),
        ]
    );
}

#[test]
fn a_damaged_copy_stops_the_load_with_a_reason() {
    let (_dir, roots, _) = workspace();
    let state = tempfile::tempdir().unwrap();
    let set = Arc::new(crate::workflow::load(&roots).workflows);
    let pinned = pin_workflows(state.path(), Some("outer"), set, &roots).unwrap();
    let look = &pinned.manifest.workflows[1].files[1];
    std::fs::write(
        state.path().join("definitions").join(&look.sha256),
        "---\nid: look\nname: Look\nemoji: x\n---\nno rules\n",
    )
    .unwrap();
    let err = load_workflows(state.path(), &pinned.digest).expect_err("a damaged copy loads");
    assert!(err.contains("altered"), "{err}");
    std::fs::remove_file(state.path().join("definitions").join(&look.sha256)).unwrap();
    let err = load_workflows(state.path(), &pinned.digest).expect_err("a missing copy loads");
    assert!(err.contains("cannot read the pinned copy"), "{err}");
}

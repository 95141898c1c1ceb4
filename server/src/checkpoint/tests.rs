//! Checkpoints against real repositories in temp dirs: what they record, what of the user's
//! they leave alone, and what of the repository's config they never run.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

use super::*;

struct Fixture {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    task_dir: PathBuf,
    marks: PathBuf,
}

impl Fixture {
    /// A workspace (a git repository with one commit when `git`), a task folder in a store
    /// beside it, and a folder for marks.
    fn new(git: bool) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (ws, task_dir, marks) = (
            root.join("ws"),
            root.join("state/rawko/tasks/task-1-1"),
            root.join("marks"),
        );
        for d in [&ws, &task_dir, &marks] {
            std::fs::create_dir_all(d).unwrap();
        }
        let f = Fixture {
            _dir: dir,
            ws,
            task_dir,
            marks,
        };
        std::fs::write(f.ws.join("README.md"), "# a project\n").unwrap();
        std::fs::write(f.ws.join("lib.rs"), "fn a() {}\n").unwrap();
        if git {
            f.git(&["init", "-q"]);
            f.git(&["add", "-A"]);
            f.git(&["commit", "-qm", "initial"]);
        }
        f
    }

    /// The user's own git.
    fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=Ada",
                "-c",
                "user.email=ada@example.invalid",
            ])
            .args(args)
            .current_dir(&self.ws)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn checkpoints(&self) -> Checkpoints {
        Checkpoints::for_task(&self.ws, &self.task_dir)
    }

    fn write(&self, path: &str, text: &str) {
        std::fs::write(self.ws.join(path), text).unwrap();
    }

    /// What the user has of theirs: HEAD, the index byte for byte, the branches, the stash.
    fn users(&self) -> (String, Vec<u8>, String, String) {
        (
            self.git(&["rev-parse", "HEAD"]),
            std::fs::read(self.ws.join(".git/index")).unwrap(),
            self.git(&["for-each-ref", "refs/heads", "refs/tags"]),
            self.git(&["stash", "list"]),
        )
    }

    /// A script that leaves `name` in the marks folder when it runs.
    fn marker_script(&self, name: &str) -> PathBuf {
        let script = self.marks.join(format!("{name}.sh"));
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\ntouch '{}'\ncat\n",
                self.marks.join(name).display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        script
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn paths(diff: &Diff) -> Vec<(String, &'static str)> {
    diff.files
        .iter()
        .map(|f| (f.path.clone(), f.status.as_str()))
        .collect()
}

#[test]
fn a_git_workspace_keeps_its_checkpoints_in_its_repository_and_nothing_of_the_users_changes() {
    let f = Fixture::new(true);
    // The user has work of their own: a stash, a branch, a staged change and an unstaged one.
    f.write("README.md", "# stashed\n");
    f.git(&["stash", "-q"]);
    f.git(&["branch", "topic"]);
    f.write("lib.rs", "fn a() { staged }\n");
    f.git(&["add", "lib.rs"]);
    f.write("lib.rs", "fn a() { staged and more }\n");
    std::fs::write(f.ws.join(".gitignore"), "secret.env\n").unwrap();
    f.write("secret.env", "KEY=1\n");
    let before = f.users();

    let rt = rt();
    let mut cps = f.checkpoints();
    let first = rt
        .block_on(cps.take(Reason::PhaseEntered, Some(0)))
        .unwrap();
    assert_eq!(first.storage, Storage::Workspace);
    assert!(first.new);
    f.write("lib.rs", "fn a() { changed by the agent }\n");
    f.write("new.rs", "fn b() {}\n");
    std::fs::remove_file(f.ws.join("README.md")).unwrap();
    let second = rt.block_on(cps.take(Reason::ToolCall, None)).unwrap();
    assert!(second.new);
    // Nothing changed: no new commit, the same one named.
    let again = rt.block_on(cps.take(Reason::ToolCall, None)).unwrap();
    assert!(!again.new);
    assert_eq!(again.commit, second.commit);

    assert_eq!(f.users(), before, "HEAD, index, branches or stash changed");
    assert!(!f.task_dir.join("checkpoints.git").exists());
    assert_eq!(
        f.git(&["rev-parse", "refs/rawko/tasks/task-1-1/latest"]),
        second.commit
    );
    assert_eq!(
        f.git(&["rev-parse", "refs/rawko/tasks/task-1-1/phase-0"]),
        first.commit
    );
    assert_eq!(
        f.git(&["rev-parse", &format!("{}^", second.commit)]),
        first.commit
    );
    let tree = f.git(&["ls-tree", "-r", "--name-only", &second.commit]);
    assert_eq!(
        tree.lines().collect::<Vec<_>>(),
        [".gitignore", "lib.rs", "new.rs"]
    );
    // The first checkpoint holds the unstaged edit (the working tree, not the index).
    assert_eq!(
        f.git(&["show", &format!("{}:lib.rs", first.commit)]),
        "fn a() { staged and more }"
    );

    let diff = rt
        .block_on(cps.diff(&first.commit, &second.commit))
        .unwrap();
    assert_eq!(
        paths(&diff),
        [
            ("README.md".to_owned(), "deleted"),
            ("lib.rs".to_owned(), "modified"),
            ("new.rs".to_owned(), "added"),
        ]
    );
    assert!(
        diff.text.contains("+fn a() { changed by the agent }"),
        "{}",
        diff.text
    );
    assert!(
        diff.text.contains("diff --git a/new.rs b/new.rs"),
        "{}",
        diff.text
    );

    // Read again from scratch (as the diff command does).
    let mut fresh = f.checkpoints();
    assert_eq!(
        rt.block_on(fresh.latest()).unwrap(),
        Some(second.commit.clone())
    );
    assert_eq!(
        rt.block_on(fresh.first()).unwrap(),
        Some(first.commit.clone())
    );
    assert_eq!(
        rt.block_on(fresh.phase_entry(0)).unwrap(),
        Some(first.commit)
    );
    assert_eq!(rt.block_on(fresh.phase_entry(1)).unwrap(), None);
}

#[test]
fn a_workspace_outside_git_gets_a_private_repository_in_the_task_folder() {
    let f = Fixture::new(false);
    let rt = rt();
    let mut cps = f.checkpoints();
    let first = rt
        .block_on(cps.take(Reason::PhaseEntered, Some(0)))
        .unwrap();
    assert_eq!(first.storage, Storage::Private);
    f.write("lib.rs", "fn a() { 2 }\n");
    let second = rt.block_on(cps.take(Reason::ToolCall, None)).unwrap();
    assert!(f.task_dir.join("checkpoints.git/HEAD").is_file());
    assert!(
        !f.ws.join(".git").exists(),
        "the workspace became a repository"
    );
    let diff = rt
        .block_on(cps.diff(&first.commit, &second.commit))
        .unwrap();
    assert_eq!(paths(&diff), [("lib.rs".to_owned(), "modified")]);

    // A `.git` the agent makes later does not move the task's checkpoints.
    f.git(&["init", "-q"]);
    let mut fresh = f.checkpoints();
    assert_eq!(rt.block_on(fresh.latest()).unwrap(), Some(second.commit));
    assert_eq!(rt.block_on(fresh.repo()).unwrap().1, Storage::Private);
}

#[test]
fn a_checkpoint_runs_nothing_the_repositorys_config_names() {
    let f = Fixture::new(true);
    let fsmonitor = f.marker_script("fsmonitor");
    let filter = f.marker_script("filter");
    let hook = f.marker_script("hook");
    f.git(&["config", "core.fsmonitor", &fsmonitor.display().to_string()]);
    f.git(&["config", "filter.evil.clean", &filter.display().to_string()]);
    f.git(&[
        "config",
        "filter.evil.smudge",
        &filter.display().to_string(),
    ]);
    f.git(&[
        "config",
        "diff.evil.textconv",
        &filter.display().to_string(),
    ]);
    let hooks = f.ws.join(".git/hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    for name in ["post-index-change", "reference-transaction", "post-commit"] {
        std::fs::copy(&hook, hooks.join(name)).unwrap();
    }
    std::fs::write(f.ws.join(".gitattributes"), "*.rs filter=evil diff=evil\n").unwrap();
    let rt = rt();
    let mut cps = f.checkpoints();
    let first = rt
        .block_on(cps.take(Reason::PhaseEntered, Some(0)))
        .unwrap();
    f.write("lib.rs", "fn a() { 2 }\n");
    let second = rt.block_on(cps.take(Reason::ToolCall, None)).unwrap();
    rt.block_on(cps.diff(&first.commit, &second.commit))
        .unwrap();
    for mark in ["fsmonitor", "filter", "hook"] {
        assert!(
            !f.marks.join(mark).exists(),
            "a checkpoint ran the repository's {mark}"
        );
    }
}

#[test]
fn what_the_agent_sets_in_the_repositorys_config_during_the_task_runs_nothing() {
    // The task has taken checkpoints already when the agent sets a filter and an fsmonitor:
    // the next checkpoint must read the config again, not go by what it read at the first.
    let f = Fixture::new(true);
    let rt = rt();
    let mut cps = f.checkpoints();
    rt.block_on(cps.take(Reason::PhaseEntered, Some(0)))
        .unwrap();
    let filter = f.marker_script("late-filter");
    f.git(&["config", "filter.late.clean", &filter.display().to_string()]);
    f.git(&["config", "filter.late.required", "true"]);
    f.git(&["config", "core.fsmonitor", &filter.display().to_string()]);
    std::fs::write(f.ws.join(".gitattributes"), "*.rs filter=late\n").unwrap();
    f.write("lib.rs", "fn a() { changed after the filter was set }\n");
    let taken = rt.block_on(cps.take(Reason::ToolCall, None)).unwrap();
    assert!(taken.new);
    assert!(
        !f.marks.join("late-filter").exists(),
        "a checkpoint ran a filter or fsmonitor the agent set during the task"
    );
}

#[test]
fn a_config_that_includes_another_file_is_read_again_for_every_checkpoint() {
    // The repository's own config is unchanged; what changes is a file it includes, which the
    // agent can write.
    let f = Fixture::new(true);
    let extra = f.ws.join("extra.gitconfig");
    std::fs::write(&extra, "[user]\n\tname = Ada\n").unwrap();
    f.git(&["config", "include.path", &extra.display().to_string()]);
    let rt = rt();
    let mut cps = f.checkpoints();
    rt.block_on(cps.take(Reason::PhaseEntered, Some(0)))
        .unwrap();
    let filter = f.marker_script("included-filter");
    std::fs::write(
        &extra,
        format!(
            "[filter \"inc\"]\n\tclean = {}\n\trequired = true\n",
            filter.display()
        ),
    )
    .unwrap();
    std::fs::write(f.ws.join(".gitattributes"), "*.rs filter=inc\n").unwrap();
    f.write("lib.rs", "fn a() { changed after the include was }\n");
    rt.block_on(cps.take(Reason::ToolCall, None)).unwrap();
    assert!(
        !f.marks.join("included-filter").exists(),
        "a checkpoint ran a filter set in an included config file"
    );
}

#[test]
fn a_latest_ref_moved_by_someone_else_is_read_again() {
    let f = Fixture::new(true);
    let rt = rt();
    let mut cps = f.checkpoints();
    let first = rt
        .block_on(cps.take(Reason::PhaseEntered, Some(0)))
        .unwrap();
    f.write("lib.rs", "fn a() { 2 }\n");
    let second = rt.block_on(cps.take(Reason::ToolCall, None)).unwrap();
    // A rewind sets `latest` back to the first checkpoint.
    f.git(&[
        "update-ref",
        "refs/rawko/tasks/task-1-1/latest",
        &first.commit,
    ]);
    f.write("lib.rs", "fn a() { 3 }\n");
    let third = rt.block_on(cps.take(Reason::ToolCall, None)).unwrap();
    assert_eq!(
        f.git(&["rev-parse", &format!("{}^", third.commit)]),
        first.commit
    );
    assert_ne!(third.commit, second.commit);
}

#[test]
fn a_repository_the_agent_makes_inside_is_never_looked_into() {
    let f = Fixture::new(true);
    let rt = rt();
    let mut cps = f.checkpoints();
    rt.block_on(cps.take(Reason::PhaseEntered, Some(0)))
        .unwrap();
    // The agent makes a repository of its own inside the workspace, whose config runs a program
    // whenever git looks at its files.
    let nested = f.ws.join("nested");
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::write(nested.join("a.txt"), "a\n").unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=Ada",
                "-c",
                "user.email=ada@example.invalid",
            ])
            .args(args)
            .current_dir(&nested)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "nested"]);
    let fsmonitor = f.marker_script("nested-fsmonitor");
    git(&["config", "core.fsmonitor", &fsmonitor.display().to_string()]);
    git(&[
        "config",
        "filter.evil.clean",
        &fsmonitor.display().to_string(),
    ]);
    std::fs::write(nested.join(".git/info/attributes"), "* filter=evil\n").unwrap();
    let added = rt.block_on(cps.take(Reason::ToolCall, None)).unwrap();
    assert!(added.new);
    std::fs::write(nested.join("a.txt"), "b\n").unwrap();
    f.write("lib.rs", "fn a() { 2 }\n");
    rt.block_on(cps.take(Reason::ToolCall, None)).unwrap();
    rt.block_on(cps.take(Reason::ToolCall, None)).unwrap();
    assert!(
        !f.marks.join("nested-fsmonitor").exists(),
        "a checkpoint ran the nested repository's fsmonitor or filter"
    );
}

#[test]
fn add_verbose_lines_name_a_submodule_when_they_add_a_folder() {
    let f = Fixture::new(false);
    std::fs::create_dir_all(f.ws.join("sub")).unwrap();
    assert!(plain("add 'lib.rs'", &f.ws));
    assert!(plain("remove 'gone.rs'", &f.ws));
    assert!(!plain("add 'sub'", &f.ws));
    assert!(!plain("add 'odd", &f.ws));
    assert!(!plain("something else", &f.ws));
}

#[test]
fn an_id_makes_a_valid_ref_name() {
    assert_eq!(ref_prefix("task-1795-1"), "refs/rawko/tasks/task-1795-1");
    assert_eq!(ref_prefix("ext-a.b_c"), "refs/rawko/tasks/ext-a_b_c");
    assert_eq!(ref_prefix("a..b.lock"), "refs/rawko/tasks/a__b_lock");
}

#[test]
fn name_status_reads_gits_z_output() {
    let files = name_status("M\0a b.rs\0A\0new\0D\0gone\0T\0link\0");
    let got: Vec<(&str, &str)> = files
        .iter()
        .map(|f| (f.path.as_str(), f.status.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("a b.rs", "modified"),
            ("new", "added"),
            ("gone", "deleted"),
            ("link", "modified")
        ]
    );
}

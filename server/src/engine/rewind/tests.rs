//! The workspace's side of a rewind against real repositories in temp dirs: what is restored
//! and removed, what of the user's is left alone byte for byte, and that no symlink is followed.

use std::path::PathBuf;
use std::process::Command;

use super::*;
use crate::git::Git;

struct Fixture {
    _dir: tempfile::TempDir,
    ws: PathBuf,
    outside: PathBuf,
    index: PathBuf,
    scratch: PathBuf,
}

impl Fixture {
    /// A repository with one commit (README.md, lib.rs, a .gitignore of `*.log`), an ignored
    /// build.log, a folder outside it with a file in it, and a task folder for the indexes.
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (ws, outside, task) = (root.join("ws"), root.join("outside"), root.join("task"));
        for d in [&ws, &outside, &task] {
            std::fs::create_dir_all(d).unwrap();
        }
        let f = Fixture {
            _dir: dir,
            index: task.join("checkpoint.index"),
            scratch: task.join("rewind.index"),
            ws,
            outside,
        };
        f.write("README.md", "# a project\n");
        f.write("lib.rs", "fn a() {}\n");
        f.write(".gitignore", "*.log\n");
        f.git(&["init", "-q", "-b", "main"]);
        f.git(&["add", "-A"]);
        f.git(&["commit", "-qm", "initial"]);
        f.write("build.log", "v1\n");
        std::fs::write(f.outside.join("secret.txt"), "outside\n").unwrap();
        f
    }

    /// The user's own git.
    fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=Ada", "-c", "user.email=ada@example.invalid"])
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

    fn write(&self, path: &str, text: &str) {
        let path = self.ws.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.ws.join(path)).ok()
    }

    /// rawko's git in the workspace, its commands on the task's private index.
    async fn repo(&self) -> Repo {
        Git::new(&self.ws)
            .env("GIT_INDEX_FILE", &self.index)
            .env("GIT_AUTHOR_NAME", "rawko")
            .env("GIT_AUTHOR_EMAIL", "rawko@localhost")
            .env("GIT_COMMITTER_NAME", "rawko")
            .env("GIT_COMMITTER_EMAIL", "rawko@localhost")
            .open()
            .await
            .unwrap()
    }

    /// A checkpoint as the task takes one: `add -A` into the private index, a tree, a commit.
    async fn checkpoint(&self) -> String {
        let repo = self.repo().await;
        assert!(repo.add_all(Hooks::Off).await.unwrap().ok());
        let tree = repo.run(Hooks::Off, &["write-tree"]).await.unwrap();
        let tree = tree.stdout.trim().to_owned();
        let commit = repo
            .run(Hooks::Off, &["commit-tree", &tree, "-m", "rawko checkpoint"])
            .await
            .unwrap();
        assert!(commit.ok(), "{}", commit.stderr);
        commit.stdout.trim().to_owned()
    }

    /// The workspace now, as a rewind sees it.
    async fn now(&self) -> String {
        tree_now(&self.repo().await, &self.index, &self.scratch)
            .await
            .unwrap()
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
}

fn change(path: &str, action: Action) -> Change {
    Change {
        path: path.to_owned(),
        action,
    }
}

#[tokio::test]
async fn a_rewind_restores_changed_files_removes_created_ones_and_leaves_the_users_alone() {
    let f = Fixture::new();
    // The user's own state: a branch, a stash, a staged change.
    f.git(&["branch", "feature"]);
    f.write("README.md", "# stashed\n");
    f.git(&["stash", "-q"]);
    f.write("lib.rs", "fn a() {} // staged\n");
    f.git(&["add", "lib.rs"]);
    let users = f.users();
    let target = f.checkpoint().await;

    // The task: edits, deletes, creates (nested), a link out; the ignored log changes too.
    f.write("lib.rs", "fn b() {}\n");
    std::fs::remove_file(f.ws.join("README.md")).unwrap();
    f.write("src/new/mod.rs", "mod x;\n");
    std::os::unix::fs::symlink(&f.outside, f.ws.join("out")).unwrap();
    f.write("build.log", "v2\n");
    let latest = f.checkpoint().await;
    let index_before = std::fs::read(&f.index).unwrap();
    let now = f.now().await;
    assert_eq!(
        std::fs::read(&f.index).unwrap(),
        index_before,
        "the tree of now leaves the task's index as it was"
    );

    let repo = f.repo().await;
    let plan = plan(&repo, &target, Some(&latest), &now).await.unwrap();
    assert_eq!(
        plan.changes,
        [
            change("README.md", Action::Restore),
            change("lib.rs", Action::Restore),
            change("out", Action::Remove),
            change("src/new/mod.rs", Action::Remove),
        ]
    );
    assert!(plan.conflicts.is_empty(), "{:?}", plan.conflicts);

    let skipped = apply(&repo, &f.ws, &target, &plan, &f.scratch)
        .await
        .unwrap();
    assert!(skipped.is_empty());
    assert_eq!(f.read("README.md").as_deref(), Some("# a project\n"));
    assert_eq!(f.read("lib.rs").as_deref(), Some("fn a() {} // staged\n"));
    assert!(!f.ws.join("src").exists(), "the folders it emptied go too");
    assert!(std::fs::symlink_metadata(f.ws.join("out")).is_err());
    assert_eq!(
        std::fs::read_to_string(f.outside.join("secret.txt")).unwrap(),
        "outside\n",
        "the link's target is left alone"
    );
    assert_eq!(f.read("build.log").as_deref(), Some("v2\n"), "ignored: kept");
    assert_eq!(f.users(), users, "HEAD, index, branches and stash as they were");
    assert!(!f.scratch.exists());
    // Nothing is left to change.
    let again = plan_now(&f, &target, &latest).await;
    assert!(again.changes.is_empty(), "{:?}", again.changes);
}

async fn plan_now(f: &Fixture, target: &str, latest: &str) -> Plan {
    let now = f.now().await;
    plan(&f.repo().await, target, Some(latest), &now)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_path_someone_changed_after_the_last_checkpoint_is_a_conflict() {
    let f = Fixture::new();
    let target = f.checkpoint().await;
    f.write("lib.rs", "fn b() {}\n");
    f.write("made.rs", "// by the task\n");
    let latest = f.checkpoint().await;
    // The user, after the task's last checkpoint: an edit of a file the rewind restores, a new
    // file it would remove, and an edit of an ignored file (none of its business).
    f.write("lib.rs", "fn c() {}\n");
    f.write("notes.txt", "mine\n");
    f.write("build.log", "v3\n");
    let plan = plan_now(&f, &target, &latest).await;
    assert_eq!(plan.conflicts, ["lib.rs", "notes.txt"]);
    assert_eq!(plan.removed(), ["made.rs", "notes.txt"]);
}

#[tokio::test]
async fn no_symlink_is_followed_out_of_the_workspace() {
    let f = Fixture::new();
    f.write("a.txt", "a\n");
    f.write("d/f.txt", "in d\n");
    let target = f.checkpoint().await;
    std::fs::write(f.outside.join("f.txt"), "outside f\n").unwrap();
    // The task turns a file and a folder into links out.
    std::fs::remove_file(f.ws.join("a.txt")).unwrap();
    std::os::unix::fs::symlink(f.outside.join("secret.txt"), f.ws.join("a.txt")).unwrap();
    std::fs::remove_dir_all(f.ws.join("d")).unwrap();
    std::os::unix::fs::symlink(&f.outside, f.ws.join("d")).unwrap();
    let latest = f.checkpoint().await;
    let plan = plan_now(&f, &target, &latest).await;
    assert_eq!(
        plan.changes,
        [
            change("a.txt", Action::Restore),
            change("d", Action::Remove),
            change("d/f.txt", Action::Restore),
        ]
    );
    let repo = f.repo().await;
    apply(&repo, &f.ws, &target, &plan, &f.scratch)
        .await
        .unwrap();
    let outside = |name: &str| std::fs::read_to_string(f.outside.join(name)).unwrap();
    assert_eq!(outside("secret.txt"), "outside\n");
    assert_eq!(outside("f.txt"), "outside f\n");
    assert!(!std::fs::symlink_metadata(f.ws.join("a.txt"))
        .unwrap()
        .is_symlink());
    assert_eq!(f.read("a.txt").as_deref(), Some("a\n"));
    assert!(std::fs::symlink_metadata(f.ws.join("d")).unwrap().is_dir());
    assert_eq!(f.read("d/f.txt").as_deref(), Some("in d\n"));
}

#[test]
fn a_removal_through_a_linked_folder_removes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (ws, outside) = (dir.path().join("ws"), dir.path().join("outside"));
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("x"), "keep\n").unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("link")).unwrap();
    assert!(!remove_created(&ws, "link/x").unwrap());
    assert!(outside.join("x").exists());
    assert!(!remove_created(&ws, "../outside/x").unwrap());
    assert!(outside.join("x").exists());
    // A link itself goes, its target stays.
    assert!(remove_created(&ws, "link").unwrap());
    assert!(outside.join("x").exists());
    assert!(!remove_created(&ws, "link").unwrap());
}

#[tokio::test]
async fn a_workspace_below_the_repositorys_top_is_rewound_alone() {
    let f = Fixture::new();
    f.write("app/main.rs", "fn main() {}\n");
    let target = f.checkpoint().await;
    f.write("app/main.rs", "fn main() { x() }\n");
    f.write("app/new.rs", "// new\n");
    f.write("lib.rs", "fn outside_the_workspace() {}\n");
    let latest = f.checkpoint().await;
    let app = f.ws.join("app");
    let repo = Git::new(&app)
        .env("GIT_INDEX_FILE", &f.index)
        .open()
        .await
        .unwrap();
    let now = tree_now(&repo, &f.index, &f.scratch).await.unwrap();
    let plan = plan(&repo, &target, Some(&latest), &now).await.unwrap();
    assert_eq!(
        plan.changes,
        [
            change("main.rs", Action::Restore),
            change("new.rs", Action::Remove),
        ]
    );
    apply(&repo, &app, &target, &plan, &f.scratch)
        .await
        .unwrap();
    assert_eq!(f.read("app/main.rs").as_deref(), Some("fn main() {}\n"));
    assert!(f.read("app/new.rs").is_none());
    assert_eq!(
        f.read("lib.rs").as_deref(),
        Some("fn outside_the_workspace() {}\n")
    );
}

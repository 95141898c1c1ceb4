//! rawko's git against real repositories whose config an agent wrote: each planted command
//! leaves a mark in a directory outside the workspace if it runs.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;
use crate::hooks::git::{changed_files, commit, describe_head, push};

/// A home with the user's git config, a workspace that is a repository on `main` with one
/// commit, a bare remote beside it (`origin`), and an empty directory for marks.
struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    home: PathBuf,
    ws: PathBuf,
    bare: PathBuf,
    marks: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (home, ws, bare, marks) = (
            root.join("home"),
            root.join("ws"),
            root.join("remote.git"),
            root.join("marks"),
        );
        for d in [&home, &ws, &bare, &marks] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(
            home.join(".gitconfig"),
            "[user]\n\tname = Ada\n\temail = ada@example.invalid\n[init]\n\tdefaultBranch = main\n[protocol \"file\"]\n\tallow = always\n",
        )
        .unwrap();
        let f = Fixture {
            _dir: dir,
            root,
            home,
            ws,
            bare,
            marks,
        };
        f.git(&f.bare, &["init", "-q", "--bare"]);
        f.git(&f.ws, &["init", "-q"]);
        std::fs::write(f.ws.join("README.md"), "# a project\n").unwrap();
        f.git(&f.ws, &["add", "-A"]);
        f.git(&f.ws, &["commit", "-qm", "initial"]);
        let url = f.bare.display().to_string();
        f.git(&f.ws, &["remote", "add", "origin", &url]);
        f.git(&f.ws, &["push", "-q", "origin", "main"]);
        f
    }

    /// The test's own git (not rawko's), as the user.
    fn git(&self, dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GIT_CONFIG_GLOBAL")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// What the agent does with Bash: `git config KEY VALUE` in the workspace.
    fn plant(&self, key: &str, value: &str) {
        self.git(&self.ws, &["config", key, value]);
    }

    /// An executable script that leaves the mark `name` (and prints `say`).
    fn marker_script(&self, path: &Path, name: &str, say: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(
            path,
            format!("#!/bin/sh\ntouch {}/{name}\n{say}\n", self.marks.display()),
        )
        .unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// A shell command that leaves the mark `name`.
    fn touch(&self, name: &str) -> String {
        format!("touch {}/{name}", self.marks.display())
    }

    fn marks(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.marks)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// rawko's git for the workspace, as the user runs it.
    fn rawko_git(&self) -> Git {
        Git::new(&self.ws)
            .timeout(Duration::from_secs(30))
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
    }
}

#[tokio::test]
async fn nothing_the_repositorys_config_names_runs() {
    let f = Fixture::new();
    // What an agent can set from Bash.
    f.plant("core.fsmonitor", &f.touch("fsmonitor"));
    let hooks = f.ws.join(".hooks");
    for h in [
        "pre-commit",
        "prepare-commit-msg",
        "commit-msg",
        "post-commit",
        "post-index-change",
        "reference-transaction",
        "pre-push",
    ] {
        f.marker_script(&hooks.join(h), &format!("hooks-path-{h}"), "");
    }
    f.plant("core.hooksPath", ".hooks");
    std::fs::write(f.ws.join(".gitattributes"), "* filter=evil diff=evil\n").unwrap();
    f.plant("filter.evil.clean", &format!("{}; cat", f.touch("clean")));
    f.plant("filter.evil.smudge", &format!("{}; cat", f.touch("smudge")));
    f.plant("filter.evil.process", &f.touch("process"));
    f.plant("filter.evil.required", "true");
    f.plant("diff.evil.textconv", &f.touch("textconv"));
    f.plant("diff.external", &f.touch("diff-external"));
    f.marker_script(&hooks.join("gpg"), "gpg", "exit 1");
    f.plant("gpg.program", &hooks.join("gpg").display().to_string());
    f.plant("commit.gpgSign", "true");
    f.plant("core.pager", &f.touch("pager"));
    f.plant("pager.status", &f.touch("pager-status"));
    f.plant("core.editor", &f.touch("editor"));
    f.plant("core.askPass", &hooks.join("gpg").display().to_string());
    f.plant(
        "remote.origin.receivepack",
        &format!("{}; git-receive-pack", f.touch("receivepack")),
    );
    f.plant(
        "remote.origin.uploadpack",
        &format!("{}; git-upload-pack", f.touch("uploadpack")),
    );
    f.plant("push.negotiate", "true");
    f.plant("core.alternateRefsCommand", &f.touch("alternate-refs"));
    f.plant("gc.auto", "1");
    f.plant("core.worktree", &f.root.display().to_string());
    std::fs::write(f.ws.join("greet.txt"), "hello\n").unwrap();
    // An include is the repository's too.
    let included = f.ws.join("more.cfg");
    std::fs::write(
        &included,
        format!("[core]\n\tfsmonitor = {}\n", f.touch("included-fsmonitor")),
    )
    .unwrap();
    f.plant("include.path", &included.display().to_string());

    let git = f.rawko_git();
    let (branch, head) = describe_head(&git);
    assert_eq!(branch.as_deref(), Some("main"));
    assert_eq!(head.map(|h| h.len()), Some(40));
    let mut changed = changed_files(&git).await;
    changed.sort();
    let mut expected: Vec<String> = [
        "commit-msg",
        "gpg",
        "post-commit",
        "post-index-change",
        "pre-commit",
        "pre-push",
        "prepare-commit-msg",
        "reference-transaction",
    ]
    .map(|h| format!(".hooks/{h}"))
    .into_iter()
    .chain([".gitattributes", "greet.txt", "more.cfg"].map(str::to_owned))
    .collect();
    expected.sort();
    assert_eq!(changed, expected);
    let o = commit(&git, "rawko: greet", false).await;
    assert!(o.ok, "{o:?}");
    assert!(o.message.starts_with("Committed 4 files as "), "{o:?}");
    let o = push(&git, "origin").await;
    assert_eq!(o.message, "Pushed main to origin", "{o:?}");
    assert_eq!(f.marks(), Vec::<String>::new());
    assert_eq!(
        f.git(&f.bare, &["log", "--format=%s%G?", "main"]),
        "rawko: greetN\ninitialN"
    );
    // The committed file is the work tree's, not the filter's.
    assert_eq!(f.git(&f.bare, &["show", "main:greet.txt"]), "hello");
}

/// The user's values for the keys the repository also sets are the ones used: their hooks path,
/// their filter driver (git-lfs's is the usual one), their ssh command.
#[tokio::test]
async fn the_users_own_values_win_over_the_repositorys() {
    let f = Fixture::new();
    let users_hooks = f.root.join("users-hooks");
    f.marker_script(&users_hooks.join("pre-commit"), "users-pre-commit", "");
    f.marker_script(&f.ws.join(".hooks/pre-commit"), "repository-pre-commit", "");
    f.marker_script(
        &f.ws.join(".git/hooks/pre-commit"),
        "default-pre-commit",
        "",
    );
    f.git(
        &f.home,
        &[
            "config",
            "--global",
            "core.hooksPath",
            &users_hooks.display().to_string(),
        ],
    );
    f.git(
        &f.home,
        &[
            "config",
            "--global",
            "filter.lfs.clean",
            &format!("{}; cat", f.touch("users-clean")),
        ],
    );
    f.plant("core.hooksPath", ".hooks");
    f.plant(
        "filter.lfs.clean",
        &format!("{}; cat", f.touch("repository-clean")),
    );
    std::fs::write(f.ws.join(".gitattributes"), "*.bin filter=lfs\n").unwrap();
    std::fs::write(f.ws.join("a.bin"), "data\n").unwrap();
    let o = commit(&f.rawko_git(), "add", false).await;
    assert!(o.ok, "{o:?}");
    assert_eq!(f.marks(), ["users-clean", "users-pre-commit"]);
}

/// With noVerify no hook runs, not even those `git commit --no-verify` still runs; without it,
/// the repository's default hooks directory's do.
#[tokio::test]
async fn no_verify_runs_no_hook_at_all() {
    let f = Fixture::new();
    for h in [
        "pre-commit",
        "post-commit",
        "post-index-change",
        "prepare-commit-msg",
    ] {
        f.marker_script(&f.ws.join(".git/hooks").join(h), h, "");
    }
    std::fs::write(f.ws.join("a.txt"), "a\n").unwrap();
    let o = commit(&f.rawko_git(), "one", true).await;
    assert!(o.ok, "{o:?}");
    assert_eq!(f.marks(), Vec::<String>::new());
    std::fs::write(f.ws.join("a.txt"), "b\n").unwrap();
    let o = commit(&f.rawko_git(), "two", false).await;
    assert!(o.ok, "{o:?}");
    assert_eq!(
        f.marks(),
        [
            "post-commit",
            "post-index-change",
            "pre-commit",
            "prepare-commit-msg"
        ]
    );
}

#[tokio::test]
async fn a_push_over_ssh_runs_the_users_ssh_command_never_the_repositorys() {
    let f = Fixture::new();
    f.plant("core.sshCommand", &f.touch("repository-ssh"));
    f.plant("remote.origin.url", "ssh://git@127.0.0.1:1/project.git");
    // Nothing of the user's: ssh in batch mode, which cannot connect.
    let o = push(&f.rawko_git(), "origin").await;
    assert!(!o.ok, "{o:?}");
    assert_eq!(f.marks(), Vec::<String>::new());
    // The user's own command, from their config or their environment.
    let users_ssh = f.root.join("users-ssh");
    f.marker_script(&users_ssh, "users-ssh", "exit 1");
    f.git(
        &f.home,
        &[
            "config",
            "--global",
            "core.sshCommand",
            &users_ssh.display().to_string(),
        ],
    );
    let o = push(&f.rawko_git(), "origin").await;
    assert!(!o.ok, "{o:?}");
    assert_eq!(f.marks(), ["users-ssh"]);
    std::fs::remove_file(f.marks.join("users-ssh")).unwrap();
    let o = push(&f.rawko_git().env("GIT_SSH_COMMAND", &users_ssh), "origin").await;
    assert!(!o.ok, "{o:?}");
    assert_eq!(f.marks(), ["users-ssh"]);
}

/// A server on loopback that asks every request for a password.
fn asks_for_a_password() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0; 4096];
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(
                b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"r\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    port
}

#[tokio::test]
async fn the_repositorys_credential_helpers_never_run_the_users_do() {
    let f = Fixture::new();
    let port = asks_for_a_password();
    let url = format!("http://127.0.0.1:{port}/project.git");
    f.plant("remote.origin.url", &url);
    f.plant(
        "credential.helper",
        &format!("!{}", f.touch("repository-helper")),
    );
    f.plant(
        &format!("credential.{url}.helper"),
        &format!("!{}", f.touch("repository-url-helper")),
    );
    f.git(
        &f.home,
        &[
            "config",
            "--global",
            "credential.helper",
            &format!("!{}", f.touch("users-helper")),
        ],
    );
    let o = push(&f.rawko_git(), "origin").await;
    assert_eq!(
        o.message,
        "git-push: could not authenticate to origin: check your credentials or SSH key"
    );
    assert_eq!(f.marks(), ["users-helper"]);
}

/// A push to a repository on this machine runs that repository's hooks: refused when the agent
/// can write it (the workspace, the task's temp dir), however the URL names it.
#[tokio::test]
async fn a_push_to_a_repository_the_agent_can_write_is_refused() {
    let f = Fixture::new();
    let temp = f.root.join("state/tasks/t1/tmp");
    std::fs::create_dir_all(&temp).unwrap();
    let inner = f.ws.join("inner.git");
    let in_temp = temp.join("r.git");
    for repo in [&inner, &in_temp] {
        std::fs::create_dir_all(repo).unwrap();
        f.git(repo, &["init", "-q", "--bare"]);
        f.marker_script(&repo.join("hooks/pre-receive"), "pre-receive", "");
    }
    std::os::unix::fs::symlink(&inner, f.root.join("link.git")).unwrap();
    let git = f.rawko_git().agent_writable(vec![temp.clone()]);
    let ws = f.ws.display();
    for (url, shown) in [
        ("inner.git".to_owned(), inner.clone()),
        (format!("{ws}/sub/../inner.git"), inner.clone()),
        (format!("file://{ws}/inner.git"), inner.clone()),
        (
            format!("{}", f.root.join("link.git").display()),
            f.root.join("link.git"),
        ),
        ("../link".to_owned(), f.root.join("link")),
        (format!("{}", in_temp.display()), in_temp.clone()),
        ("here:inner.git".to_owned(), inner.clone()),
    ] {
        if url.starts_with("here:") {
            f.plant(&format!("url.{ws}/.insteadOf"), "here:");
        }
        f.plant("remote.origin.url", &url);
        let o = push(&git, "origin").await;
        assert_eq!(
            o.message,
            format!(
                "git-push: origin leads to {}, a repository the agent can write: a push runs its hooks outside the sandbox, so rawko does not push there",
                shown.display()
            ),
            "{url}"
        );
    }
    assert_eq!(f.marks(), Vec::<String>::new());
}

/// A push whose network settings the repository chose (a proxy, a certificate authority, a
/// remote helper) is refused; the user's own are used.
#[tokio::test]
async fn a_push_with_the_repositorys_network_settings_is_refused() {
    let f = Fixture::new();
    f.plant("http.sslCAInfo", "/tmp/agents-ca.pem");
    f.plant("http.https://example.com.proxy", "http://127.0.0.1:9");
    let o = push(&f.rawko_git(), "origin").await;
    assert_eq!(
        o.message,
        "git-push: the repository's config sets http.sslcainfo, http.https://example.com.proxy, which an agent can write; rawko pushes only with network settings from your own git config (git config --global)"
    );
    f.git(
        &f.home,
        &[
            "config",
            "--global",
            "http.sslCAInfo",
            "/etc/ssl/certs/ca-certificates.crt",
        ],
    );
    f.git(
        &f.home,
        &["config", "--global", "http.https://example.com.proxy", ""],
    );
    let o = push(&f.rawko_git(), "origin").await;
    assert_eq!(o.message, "main is already up to date on origin", "{o:?}");
}

/// A submodule's config is the agent's as well: rawko's status does not look inside it.
#[tokio::test]
async fn a_dirty_submodule_runs_nothing_of_its_config() {
    let f = Fixture::new();
    let lib = f.root.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    f.git(&lib, &["init", "-q"]);
    std::fs::write(lib.join("l.txt"), "l\n").unwrap();
    f.git(&lib, &["add", "-A"]);
    f.git(&lib, &["commit", "-qm", "lib"]);
    f.git(
        &f.ws,
        &["submodule", "add", "-q", &lib.display().to_string(), "lib"],
    );
    f.git(&f.ws, &["commit", "-qm", "with lib"]);
    let sub = f.ws.join("lib");
    f.git(
        &sub,
        &[
            "config",
            "filter.evil.clean",
            &format!("{}; cat", f.touch("submodule-clean")),
        ],
    );
    f.git(
        &sub,
        &["config", "core.fsmonitor", &f.touch("submodule-fsmonitor")],
    );
    std::fs::write(sub.join(".gitattributes"), "* filter=evil\n").unwrap();
    // Touched, not changed: a status inside the submodule would run the filter to tell.
    let later = std::time::SystemTime::now() + Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(sub.join("l.txt"))
        .unwrap()
        .set_modified(later)
        .unwrap();
    std::fs::write(f.ws.join("a.txt"), "a\n").unwrap();
    let changed = changed_files(&f.rawko_git()).await;
    let o = commit(&f.rawko_git(), "a", false).await;
    assert_eq!(f.marks(), Vec::<String>::new());
    assert_eq!(changed, ["a.txt"]);
    assert!(o.ok, "{o:?}");
    assert_eq!(
        f.git(&f.ws, &["show", "--name-only", "--format=", "HEAD"]),
        "a.txt"
    );

    // A new commit in the submodule is staged as `git add -A` stages it; a removed submodule
    // as removed.
    // (The test's own git would run what was planted: it goes first.)
    std::fs::remove_file(sub.join(".gitattributes")).unwrap();
    f.git(&sub, &["config", "--unset", "core.fsmonitor"]);
    f.git(&sub, &["config", "--remove-section", "filter.evil"]);
    f.git(&sub, &["commit", "-qam", "more", "--allow-empty"]);
    let head = f.git(&sub, &["rev-parse", "HEAD"]);
    std::fs::write(f.ws.join("b.txt"), "b\n").unwrap();
    let o = commit(&f.rawko_git(), "b", false).await;
    assert!(o.ok, "{o:?}");
    assert_eq!(f.git(&f.ws, &["rev-parse", "HEAD:lib"]), head);
    std::fs::remove_dir_all(&sub).unwrap();
    let o = commit(&f.rawko_git(), "c", false).await;
    assert!(o.ok, "{o:?}");
    assert_eq!(
        f.git(&f.ws, &["ls-tree", "--name-only", "HEAD"]),
        ".gitmodules\nREADME.md\na.txt\nb.txt"
    );
    assert_eq!(f.marks(), Vec::<String>::new());
}

/// In a worktree, rawko's git runs in the worktree's repository, and reads the config git
/// reads there.
#[tokio::test]
async fn a_worktree_commits_to_its_own_branch() {
    let f = Fixture::new();
    let wt = f.root.join("wt");
    f.git(
        &f.ws,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "side",
            &wt.display().to_string(),
        ],
    );
    std::fs::write(wt.join("b.txt"), "b\n").unwrap();
    let git = Git::new(&wt)
        .env("HOME", &f.home)
        .env("GIT_CONFIG_NOSYSTEM", "1");
    let o = commit(&git, "on the side", false).await;
    assert!(o.ok, "{o:?}");
    assert_eq!(
        f.git(&f.ws, &["log", "-1", "--format=%s", "side"]),
        "on the side"
    );
    assert_eq!(describe_head(&git).0.as_deref(), Some("side"));
}

#[test]
fn local_paths_are_told_from_network_urls() {
    let wt = Path::new("/w");
    for (url, path) in [
        ("../r.git", Some("/r.git")),
        ("/srv/r.git", Some("/srv/r.git")),
        ("file:///srv/r.git", Some("/srv/r.git")),
        ("file://localhost/srv/r.git", Some("/srv/r.git")),
        ("./a:b/r.git", Some("/w/a:b/r.git")),
        ("host:r.git", None),
        ("git@host:r.git", None),
        ("ssh://host/r.git", None),
        ("https://host/r.git", None),
        ("ext::sh -c x", None),
    ] {
        assert_eq!(local_path(url, wt), path.map(PathBuf::from), "{url}");
    }
}

/// git refuses a repository someone else owns unless the user's `safe.directory` names it;
/// rawko names the repository to git itself, so it makes the same check. (Needs root to give
/// the files away.)
#[tokio::test]
async fn a_repository_someone_else_owns_needs_the_users_safe_directory() {
    if !nix::unistd::geteuid().is_root() {
        return;
    }
    let f = Fixture::new();
    let nobody = Some(nix::unistd::Uid::from_raw(65534));
    for p in [&f.ws, &f.ws.join(".git")] {
        nix::unistd::chown(p.as_path(), nobody, None).unwrap();
    }
    std::fs::write(f.ws.join("a.txt"), "a\n").unwrap();
    let o = commit(&f.rawko_git(), "a", false).await;
    assert_eq!(
        o.message,
        format!(
            "git-commit: git does not trust {0}: it is owned by someone else (if you trust it: git config --global --add safe.directory {0}); nothing committed",
            f.ws.display()
        )
    );
    f.git(
        &f.home,
        &[
            "config",
            "--global",
            "--add",
            "safe.directory",
            &f.ws.display().to_string(),
        ],
    );
    let o = commit(&f.rawko_git(), "a", false).await;
    assert!(o.ok, "{o:?}");
}

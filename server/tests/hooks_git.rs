//! The built-in git hooks against real repositories in temporary directories, with a bare
//! repository as the push remote: `rawko::hooks::git::{commit, push}` called directly (and once
//! through `Hooks::dispatch`, which renders the message template), git run through its command
//! line as a hook runs it.
//!
//! Every repository gets its own user.name/user.email (and no signing), so the tests do not depend
//! on the machine's git configuration. The failures a user meets are checked by their message:
//! detached HEAD, a rejected push, an unknown remote, an unreachable remote and one that wants a
//! password (a tiny HTTP server on 127.0.0.1 answering 401).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use rawko::git::Git;
use rawko::hooks::config::{parse, HookSource};
use rawko::hooks::git::{self, GitOutcome};
use rawko::hooks::{HookEvent, Hooks, Invocation, Note};
use serde_json::json;
use tempfile::TempDir;

const TIMEOUT: Duration = Duration::from_secs(30);

/// rawko's git for `dir`, as the hooks run it, reading no system config and an empty user config
/// (so the machine's own, its credential helpers among them, cannot answer for a test).
fn g(dir: &Path) -> Git {
    Git::new(dir)
        .timeout(TIMEOUT)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
}

/// Runs git in `dir` for the test's own set-up and checks; panics when it fails.
fn git_ok(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} in {} failed:\n{}{}",
        dir.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Who commits, and no signing, in this repository only.
fn configure(dir: &Path) {
    git_ok(dir, &["config", "user.name", "Rawko Test"]);
    git_ok(dir, &["config", "user.email", "rawko-test@example.invalid"]);
    git_ok(dir, &["config", "commit.gpgsign", "false"]);
    git_ok(dir, &["config", "core.hooksPath", ".git/hooks"]);
}

/// A temporary directory holding repositories.
struct Lab {
    _tmp: TempDir,
    root: PathBuf,
}

impl Lab {
    fn new() -> Self {
        let tmp = TempDir::new().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        Self { _tmp: tmp, root }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// A work tree on branch `main` with one commit (README.md).
    fn repo(&self, name: &str) -> PathBuf {
        let dir = self.path(name);
        std::fs::create_dir_all(&dir).expect("mkdir");
        git_ok(&dir, &["init", "-q", "-b", "main"]);
        configure(&dir);
        write(&dir, "README.md", "# project\n");
        git_ok(&dir, &["add", "-A"]);
        git_ok(&dir, &["commit", "-q", "-m", "initial"]);
        dir
    }

    /// A bare repository with `main` as its default branch.
    fn bare(&self, name: &str) -> PathBuf {
        let dir = self.path(name);
        std::fs::create_dir_all(&dir).expect("mkdir");
        git_ok(&dir, &["init", "-q", "--bare", "-b", "main"]);
        dir
    }

    /// A work tree with a bare `origin` that already has its `main`.
    fn repo_with_remote(&self, name: &str) -> (PathBuf, PathBuf) {
        let bare = self.bare(&format!("{name}-remote.git"));
        let repo = self.repo(name);
        git_ok(
            &repo,
            &["remote", "add", "origin", bare.to_str().expect("utf-8")],
        );
        git_ok(&repo, &["push", "-q", "origin", "main"]);
        (repo, bare)
    }

    /// A clone of `bare`, configured.
    fn clone(&self, bare: &Path, name: &str) -> PathBuf {
        git_ok(
            &self.root,
            &[
                "clone",
                "-q",
                bare.to_str().expect("utf-8"),
                self.path(name).to_str().expect("utf-8"),
            ],
        );
        let dir = self.path(name);
        configure(&dir);
        dir
    }
}

fn write(dir: &Path, rel: &str, content: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, content).expect("write");
}

fn head_subject(dir: &Path, rev: &str) -> String {
    git_ok(dir, &["log", "-1", "--format=%B", rev])
}

fn commit_count(dir: &Path) -> usize {
    git_ok(dir, &["rev-list", "--count", "HEAD"])
        .parse()
        .expect("a count")
}

fn ok(message: &str) -> GitOutcome {
    GitOutcome {
        ok: true,
        message: message.to_owned(),
    }
}

fn failed(message: &str) -> GitOutcome {
    GitOutcome {
        ok: false,
        message: message.to_owned(),
    }
}

fn assert_failed(o: &GitOutcome, needles: &[&str]) {
    assert!(!o.ok, "expected a failure: {o:?}");
    for n in needles {
        assert!(o.message.contains(n), "missing {n:?} in {:?}", o.message);
    }
}

/// A port on 127.0.0.1 that nothing listens on (bound, then let go): one of `ports` when one is
/// free, else any.
fn closed_port(ports: impl IntoIterator<Item = u16>) -> u16 {
    let l = ports
        .into_iter()
        .find_map(|p| TcpListener::bind(("127.0.0.1", p)).ok())
        .unwrap_or_else(|| TcpListener::bind("127.0.0.1:0").expect("bind"));
    let port = l.local_addr().expect("addr").port();
    drop(l);
    port
}

/// An HTTP server on 127.0.0.1 that answers every request with `status` (401 with
/// `WWW-Authenticate: Basic`, as a git host does for a push without credentials; or 403). Returns
/// its port; the server lives as long as the test process.
fn refusing_server(status: u16) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || refuse(stream, status));
        }
    });
    port
}

fn refuse(stream: TcpStream, status: u16) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    // The request's head; git sends no body with the GET of info/refs.
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) if line == "\r\n" || line == "\n" => break,
            Ok(_) => {}
        }
    }
    let (reason, extra) = match status {
        401 => (
            "Unauthorized",
            "WWW-Authenticate: Basic realm=\"rawko-test\"\r\n",
        ),
        _ => ("Forbidden", ""),
    };
    let body = format!("{reason}\n");
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\n{extra}Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}

#[tokio::test]
async fn a_clean_tree_has_no_changes_to_commit() {
    let lab = Lab::new();
    let repo = lab.repo("clean");
    let o = git::commit(&g(&repo), "rawko: nothing", false).await;
    assert_eq!(o, ok("No changes to commit."));
    assert_eq!(commit_count(&repo), 1);
}

#[tokio::test]
async fn every_change_is_committed_with_the_message() {
    let lab = Lab::new();
    let repo = lab.repo("work");
    write(&repo, "README.md", "# project\n\nChanged.\n");
    write(&repo, "src/new file.txt", "new\n");
    std::fs::remove_file(repo.join("README.md")).expect("rm");
    write(&repo, "notes.md", "n\n");
    let o = git::commit(&g(&repo), "rawko: Add a flag\n\nBody line.", false).await;
    assert!(o.ok, "{o:?}");
    let short = git_ok(&repo, &["rev-parse", "--short", "HEAD"]);
    // README.md deleted, notes.md and src/ untracked: three entries in `git status --porcelain`.
    assert_eq!(
        o.message,
        format!("Committed 3 files as {short}: rawko: Add a flag")
    );
    assert_eq!(
        head_subject(&repo, "HEAD"),
        "rawko: Add a flag\n\nBody line."
    );
    assert_eq!(git_ok(&repo, &["status", "--porcelain"]), "");
    let files = git_ok(&repo, &["show", "--name-status", "--format=", "HEAD"]);
    assert!(files.contains("D\tREADME.md"), "{files}");
    assert!(files.contains("A\tsrc/new file.txt"), "{files}");
    // An empty message is replaced, not refused.
    write(&repo, "more.txt", "m\n");
    let o = git::commit(&g(&repo), "  ", false).await;
    assert!(o.ok, "{o:?}");
    assert_eq!(head_subject(&repo, "HEAD"), "rawko: automatic commit");
}

#[tokio::test]
async fn the_git_commit_hook_renders_its_message_without_shell_quoting() {
    let lab = Lab::new();
    let repo = lab.repo("rendered");
    write(&repo, "greet.sh", "echo hi\n");
    let (hooks, problems) = parse(
        &json!({"PreExecutionEnd": [{"type": "git-commit", "message": "rawko: {{taskDescription}} ({{taskId}}) {{unknown}}"}]}),
        HookSource::User,
    );
    assert!(problems.is_empty(), "{problems:?}");
    let hooks = Hooks::new(hooks, "session-1", repo.clone());
    let description = "Add a $(touch pwned) flag; it's \"quoted\"";
    let d = hooks
        .dispatch(
            Invocation::new(HookEvent::PreExecutionEnd)
                .var("taskDescription", description)
                .var("taskId", "task-7"),
        )
        .await;
    assert_eq!(d.ran, 1);
    assert_eq!(d.blocked, None);
    let expected = format!("rawko: {description} (task-7) {{{{unknown}}}}");
    assert_eq!(head_subject(&repo, "HEAD"), expected);
    assert!(!repo.join("pwned").exists(), "the message ran as a command");
    let short = git_ok(&repo, &["rev-parse", "--short", "HEAD"]);
    assert_eq!(
        d.notes,
        vec![Note::Output(format!(
            "Committed 1 file as {short}: {expected}"
        ))]
    );

    // Without a message the hook uses "rawko: {{taskDescription}}".
    let (hooks, _) = parse(
        &json!({"PostExecutionEnd": [{"type": "git-commit"}]}),
        HookSource::User,
    );
    let hooks = Hooks::new(hooks, "session-1", repo.clone());
    write(&repo, "b.txt", "b\n");
    hooks
        .dispatch(Invocation::new(HookEvent::PostExecutionEnd).var("taskDescription", "Second"))
        .await;
    assert_eq!(head_subject(&repo, "HEAD"), "rawko: Second");
}

#[tokio::test]
async fn no_verify_skips_a_failing_pre_commit_hook_and_a_failure_never_blocks() {
    let lab = Lab::new();
    let repo = lab.repo("verify");
    let hook = repo.join(".git/hooks/pre-commit");
    std::fs::write(&hook, "#!/bin/sh\necho 'lint: 2 problems' >&2\nexit 1\n").expect("hook");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    write(&repo, "a.txt", "a\n");

    let o = git::commit(&g(&repo), "rawko: verified", false).await;
    assert_failed(&o, &["git-commit: the commit failed: lint: 2 problems"]);
    assert_eq!(commit_count(&repo), 1);

    // Through the hooks, on an event that can block: the failure is reported, nothing is blocked.
    let (hooks, _) = parse(
        &json!({"PreExecutionEnd": [{"type": "git-commit", "message": "rawko: {{taskId}}"}]}),
        HookSource::Workspace,
    );
    let d = Hooks::new(hooks, "s", repo.clone())
        .dispatch(Invocation::new(HookEvent::PreExecutionEnd).var("taskId", "t1"))
        .await;
    assert_eq!(d.blocked, None);
    assert_eq!(d.halt, None);
    assert!(
        matches!(&d.notes[..], [Note::Error(m)] if m.contains("lint: 2 problems")),
        "{:?}",
        d.notes
    );
    assert_eq!(commit_count(&repo), 1);

    let o = git::commit(&g(&repo), "rawko: unverified", true).await;
    assert!(o.ok, "{o:?}");
    assert_eq!(commit_count(&repo), 2);
    assert_eq!(head_subject(&repo, "HEAD"), "rawko: unverified");
}

#[tokio::test]
async fn outside_a_repository_nothing_is_committed_or_pushed() {
    let lab = Lab::new();
    let dir = lab.path("plain");
    std::fs::create_dir_all(&dir).expect("mkdir");
    write(&dir, "a.txt", "a\n");
    // The temporary directory must not be inside a repository for this test to mean anything.
    let inside = Command::new("git")
        .args(["rev-parse", "--is-inside-work-tree"])
        .current_dir(&dir)
        .stderr(Stdio::null())
        .output()
        .expect("git");
    assert!(
        !inside.status.success(),
        "the temp dir is inside a repository"
    );

    let o = git::commit(&g(&dir), "rawko: x", false).await;
    assert_failed(
        &o,
        &[&format!(
            "git-commit: {} is not a git repository; nothing committed",
            dir.display()
        )],
    );
    let o = git::push(&g(&dir), "origin").await;
    assert_failed(
        &o,
        &[&format!(
            "git-push: {} is not a git repository; nothing pushed",
            dir.display()
        )],
    );
    assert!(!dir.join(".git").exists());
}

#[tokio::test]
async fn push_sets_the_upstream_and_the_remote_has_the_commit() {
    let lab = Lab::new();
    let bare = lab.bare("remote.git");
    let repo = lab.repo("pusher");
    git_ok(
        &repo,
        &["remote", "add", "origin", bare.to_str().expect("utf-8")],
    );
    git_ok(&repo, &["checkout", "-q", "-b", "feature/flag"]);
    write(&repo, "flag.txt", "--shout\n");
    let o = git::commit(&g(&repo), "rawko: Add a --shout flag", false).await;
    assert!(o.ok, "{o:?}");
    // No upstream yet.
    let none = Command::new("git")
        .args(["rev-parse", "--abbrev-ref", "@{upstream}"])
        .current_dir(&repo)
        .stderr(Stdio::null())
        .output()
        .expect("git");
    assert!(!none.status.success());

    let o = git::push(&g(&repo), "origin").await;
    assert_eq!(o, ok("Pushed feature/flag to origin"));
    assert_eq!(
        git_ok(&repo, &["rev-parse", "--abbrev-ref", "@{upstream}"]),
        "origin/feature/flag"
    );
    assert_eq!(
        head_subject(&bare, "feature/flag"),
        "rawko: Add a --shout flag"
    );
    assert_eq!(
        git_ok(&bare, &["rev-parse", "feature/flag"]),
        git_ok(&repo, &["rev-parse", "HEAD"])
    );

    // Again, with nothing new.
    let o = git::push(&g(&repo), "origin").await;
    assert_eq!(o, ok("feature/flag is already up to date on origin"));
}

#[tokio::test]
async fn a_detached_head_is_not_pushed() {
    let lab = Lab::new();
    let (repo, bare) = lab.repo_with_remote("detached");
    git_ok(&repo, &["checkout", "-q", "--detach", "HEAD"]);
    write(&repo, "x.txt", "x\n");
    // Committing on a detached HEAD works; pushing it does not.
    assert!(git::commit(&g(&repo), "rawko: detached", false).await.ok);
    let o = git::push(&g(&repo), "origin").await;
    assert_failed(
        &o,
        &["git-push: HEAD is detached (no branch is checked out); check out a branch to push"],
    );
    assert_eq!(head_subject(&bare, "main"), "initial");
}

#[tokio::test]
async fn a_push_behind_the_remote_is_rejected_with_advice() {
    let lab = Lab::new();
    let (_first, bare) = lab.repo_with_remote("first");
    let mine = lab.clone(&bare, "mine");
    let theirs = lab.clone(&bare, "theirs");
    write(&theirs, "theirs.txt", "t\n");
    assert!(git::commit(&g(&theirs), "theirs", false).await.ok);
    assert!(git::push(&g(&theirs), "origin").await.ok);

    write(&mine, "mine.txt", "m\n");
    assert!(git::commit(&g(&mine), "mine", false).await.ok);
    let o = git::push(&g(&mine), "origin").await;
    assert_failed(
        &o,
        &[
            "git-push: the push of main was rejected",
            "origin has commits this branch does not have",
            "pull (or rebase) first",
        ],
    );
    assert_eq!(head_subject(&bare, "main"), "theirs");
}

#[tokio::test]
async fn an_unknown_remote_is_named_with_the_remotes_there_are() {
    let lab = Lab::new();
    let (repo, _bare) = lab.repo_with_remote("remotes");
    let o = git::push(&g(&repo), "upstream").await;
    assert_failed(
        &o,
        &["git-push: there is no remote named \"upstream\" (remotes: origin); set one with rawko config set-push-remote NAME"],
    );
    let lonely = lab.repo("lonely");
    let o = git::push(&g(&lonely), "origin").await;
    assert_failed(
        &o,
        &["git-push: there is no remote named \"origin\"; this repository has no remotes"],
    );
}

#[tokio::test]
async fn an_unreachable_remote_is_a_network_failure() {
    let lab = Lab::new();
    let repo = lab.repo("offline");
    // Any closed port, and one with "403" in it: a port is not an HTTP status.
    for port in [closed_port([]), closed_port(40300..=40399)] {
        let url = format!("http://127.0.0.1:{port}/project.git");
        let _ = Command::new("git")
            .args(["remote", "remove", "origin"])
            .current_dir(&repo)
            .stderr(Stdio::null())
            .status();
        git_ok(&repo, &["remote", "add", "origin", &url]);
        let o = git::push(&g(&repo), "origin").await;
        assert_failed(
            &o,
            &[
                "git-push: cannot reach origin: ",
                &format!("127.0.0.1:{port}"),
                "(check the network and the remote's address)",
            ],
        );
    }
}

#[tokio::test]
async fn a_remote_that_wants_a_password_is_an_authentication_failure() {
    let lab = Lab::new();
    let repo = lab.repo("auth");
    // No credential helper from the machine's config may answer for the test.
    git_ok(&repo, &["config", "credential.helper", ""]);
    // 401 with Basic: git would ask for a user name, but hooks run with GIT_TERMINAL_PROMPT=0.
    // 403: the host refuses the credentials it has.
    for status in [401, 403] {
        let port = refusing_server(status);
        let url = format!("http://127.0.0.1:{port}/project.git");
        let _ = Command::new("git")
            .args(["remote", "remove", "origin"])
            .current_dir(&repo)
            .stderr(Stdio::null())
            .status();
        git_ok(&repo, &["remote", "add", "origin", &url]);
        let o = git::push(&g(&repo), "origin").await;
        assert_eq!(
            o,
            failed("git-push: could not authenticate to origin: check your credentials or SSH key"),
            "HTTP {status}"
        );
    }
}

#[tokio::test]
async fn an_ssh_remote_uses_the_users_ssh_command_and_its_failures_are_told_apart() {
    let lab = Lab::new();
    let repo = lab.repo("ssh");
    git_ok(
        &repo,
        &[
            "remote",
            "add",
            "origin",
            "ssh://git@example.invalid/project.git",
        ],
    );
    // The user's own ssh command (say, one that picks a key) is what git runs, not rawko's.
    let log = lab.path("ssh.log");
    let fake = lab.path("fake-ssh");
    let global = lab.path("gitconfig");
    for (said, expected) in [
        (
            "git@example.invalid: Permission denied (publickey).",
            "git-push: could not authenticate to origin: check your credentials or SSH key",
        ),
        (
            "ssh: connect to host example.invalid port 22: Connection refused",
            "git-push: cannot reach origin: ssh: connect to host example.invalid port 22: Connection refused (check the network and the remote's address)",
        ),
    ] {
        std::fs::write(
            &fake,
            format!(
                "#!/bin/sh\necho \"$@\" >> '{}'\n[ \"$1\" = -G ] && exit 0\necho '{said}' >&2\nexit 255\n",
                log.display()
            ),
        )
        .expect("fake ssh");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        // The user's config (a repository's core.sshCommand is the agent's, never run).
        git_ok(
            &repo,
            &[
                "config",
                "--file",
                global.to_str().expect("utf-8"),
                "core.sshCommand",
                fake.to_str().expect("utf-8"),
            ],
        );
        let o = git::push(&g(&repo).env("GIT_CONFIG_GLOBAL", &global), "origin").await;
        assert_eq!(o, failed(expected));
    }
    let calls = std::fs::read_to_string(&log).expect("the user's ssh command ran");
    assert!(
        calls.contains("git@example.invalid") && calls.contains("git-receive-pack"),
        "{calls}"
    );
    assert!(!calls.contains("BatchMode"), "{calls}");
}

#[tokio::test]
async fn the_head_and_changed_files_are_described() {
    let lab = Lab::new();
    let repo = lab.repo("describe");
    let (branch, commit) = git::describe_head(&g(&repo));
    assert_eq!(branch.as_deref(), Some("main"));
    assert_eq!(commit, Some(git_ok(&repo, &["rev-parse", "HEAD"])));
    write(&repo, "dir/a b.txt", "x\n");
    write(&repo, "README.md", "changed\n");
    git_ok(&repo, &["mv", "README.md", "READ.md"]);
    let mut files = git::changed_files(&g(&repo)).await;
    files.sort();
    assert_eq!(files, vec!["READ.md", "dir/a b.txt"]);
    let plain = lab.path("plain");
    std::fs::create_dir_all(&plain).expect("mkdir");
    assert_eq!(git::describe_head(&g(&plain)), (None, None));
}

//! The built-in hooks `git-commit` and `git-push`, through the git command line. Neither ever
//! blocks: what went wrong is told in one clear line.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

/// What a built-in hook did, for the output panel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitOutcome {
    pub ok: bool,
    pub message: String,
}

impl GitOutcome {
    fn ok(message: impl Into<String>) -> Self {
        Self {
            ok: true,
            message: message.into(),
        }
    }
    fn failed(message: impl Into<String>) -> Self {
        Self {
            ok: false,
            message: message.into(),
        }
    }
}

struct Output {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

async fn git(dir: &Path, args: &[&str], timeout: Duration) -> Result<Output, String> {
    git_with(dir, args, timeout, None).await
}

/// `ssh_command`: `GIT_SSH_COMMAND` for this command.
async fn git_with(
    dir: &Path,
    args: &[&str],
    timeout: Duration,
    ssh_command: Option<&str>,
) -> Result<Output, String> {
    let mut command = tokio::process::Command::new("git");
    if let Some(ssh) = ssh_command {
        command.env("GIT_SSH_COMMAND", ssh);
    }
    let child = command
        .args(args)
        .current_dir(dir)
        // Never wait for a password prompt: a hook has no terminal.
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => "git is not installed (not found on PATH)".to_owned(),
            _ => format!("cannot run git: {e}"),
        })?;
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(Ok(out)) => Ok(Output {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }),
        Ok(Err(e)) => Err(format!("cannot run git: {e}")),
        Err(_) => Err(format!(
            "git {} did not finish within {} s",
            args.first().unwrap_or(&""),
            timeout.as_secs()
        )),
    }
}

fn first_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .trim_start_matches("fatal: ")
        .trim_start_matches("error: ")
        .to_owned()
}

async fn in_repository(dir: &Path, timeout: Duration) -> Result<(), GitOutcome> {
    match git(dir, &["rev-parse", "--is-inside-work-tree"], timeout).await {
        Ok(o) if o.code == Some(0) && o.stdout.trim() == "true" => Ok(()),
        Ok(_) => Err(GitOutcome::failed(format!(
            "{} is not a git repository",
            dir.display()
        ))),
        Err(e) => Err(GitOutcome::failed(e)),
    }
}

/// `git add -A` and `git commit -m MESSAGE [--no-verify]`; "No changes to commit." when clean.
pub async fn commit(dir: &Path, message: &str, no_verify: bool, timeout: Duration) -> GitOutcome {
    if let Err(o) = in_repository(dir, timeout).await {
        return GitOutcome::failed(format!("git-commit: {}; nothing committed", o.message));
    }
    let status = match git(dir, &["status", "--porcelain"], timeout).await {
        Ok(o) if o.code == Some(0) => o.stdout,
        Ok(o) => return GitOutcome::failed(format!("git-commit: {}", first_line(&o.stderr))),
        Err(e) => return GitOutcome::failed(format!("git-commit: {e}")),
    };
    if status.trim().is_empty() {
        return GitOutcome::ok("No changes to commit.");
    }
    match git(dir, &["add", "-A"], timeout).await {
        Ok(o) if o.code == Some(0) => {}
        Ok(o) => {
            return GitOutcome::failed(format!(
                "git-commit: git add failed: {}",
                first_line(&o.stderr)
            ))
        }
        Err(e) => return GitOutcome::failed(format!("git-commit: {e}")),
    }
    let message = if message.trim().is_empty() {
        "rawko: automatic commit"
    } else {
        message
    };
    let mut args = vec!["commit", "-m", message];
    if no_verify {
        args.push("--no-verify");
    }
    match git(dir, &args, timeout).await {
        Ok(o) if o.code == Some(0) => {
            let head = git(dir, &["rev-parse", "--short", "HEAD"], timeout)
                .await
                .map(|o| o.stdout.trim().to_owned())
                .unwrap_or_default();
            let files = status.lines().count();
            GitOutcome::ok(format!(
                "Committed {files} file{} as {head}: {}",
                if files == 1 { "" } else { "s" },
                message.lines().next().unwrap_or_default()
            ))
        }
        Ok(o) => {
            let why = if o.stderr.contains("Please tell me who you are")
                || o.stderr.contains("user.email")
            {
                "git does not know who you are; set user.name and user.email (git config --global user.email you@example.com)".to_owned()
            } else {
                let text = if o.stderr.trim().is_empty() {
                    &o.stdout
                } else {
                    &o.stderr
                };
                first_line(text)
            };
            GitOutcome::failed(format!("git-commit: the commit failed: {why}"))
        }
        Err(e) => GitOutcome::failed(format!("git-commit: {e}")),
    }
}

/// The ssh command a push runs with: ssh in batch mode, so it fails instead of asking for a
/// password or passphrase on the terminal; `None` when the user chose an ssh command of their own
/// (`GIT_SSH_COMMAND`, `GIT_SSH` or `core.sshCommand`), which is left as it is.
async fn batch_ssh(dir: &Path, timeout: Duration) -> Option<&'static str> {
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| !v.is_empty());
    if set("GIT_SSH_COMMAND") || set("GIT_SSH") {
        return None;
    }
    match git(dir, &["config", "--get", "core.sshCommand"], timeout).await {
        Ok(o) if o.code == Some(0) && !o.stdout.trim().is_empty() => None,
        _ => Some("ssh -o BatchMode=yes"),
    }
}

/// Pushes the current branch to `remote` with `--set-upstream`.
pub async fn push(dir: &Path, remote: &str, timeout: Duration) -> GitOutcome {
    if let Err(o) = in_repository(dir, timeout).await {
        return GitOutcome::failed(format!("git-push: {}; nothing pushed", o.message));
    }
    let branch =
        match git(dir, &["symbolic-ref", "--short", "-q", "HEAD"], timeout).await {
            Ok(o) if o.code == Some(0) && !o.stdout.trim().is_empty() => o.stdout.trim().to_owned(),
            Ok(_) => return GitOutcome::failed(
                "git-push: HEAD is detached (no branch is checked out); check out a branch to push",
            ),
            Err(e) => return GitOutcome::failed(format!("git-push: {e}")),
        };
    match git(dir, &["remote", "get-url", remote], timeout).await {
        Ok(o) if o.code == Some(0) => {}
        Ok(_) => {
            let remotes = git(dir, &["remote"], timeout)
                .await
                .map(|o| o.stdout.split_whitespace().collect::<Vec<_>>().join(", "))
                .unwrap_or_default();
            return GitOutcome::failed(format!(
                "git-push: there is no remote named \"{remote}\"{}",
                if remotes.is_empty() {
                    "; this repository has no remotes".to_owned()
                } else {
                    format!(" (remotes: {remotes}); set one with rawko config set-push-remote NAME")
                }
            ));
        }
        Err(e) => return GitOutcome::failed(format!("git-push: {e}")),
    }
    let ssh = batch_ssh(dir, timeout).await;
    match git_with(
        dir,
        &["push", "--set-upstream", "--porcelain", remote, &branch],
        timeout,
        ssh,
    )
    .await
    {
        Ok(o) if o.code == Some(0) => {
            let up_to_date = o.stdout.contains("[up to date]");
            GitOutcome::ok(if up_to_date {
                format!("{branch} is already up to date on {remote}")
            } else {
                format!("Pushed {branch} to {remote}")
            })
        }
        Ok(o) => {
            let all = format!("{}\n{}", o.stdout, o.stderr);
            let lower = all.to_ascii_lowercase();
            let why = if lower.contains("[rejected]")
                || lower.contains("non-fast-forward")
                || lower.contains("fetch first")
                || lower.contains("rejected")
            {
                format!("the push of {branch} was rejected: {remote} has commits this branch does not have; pull (or rebase) first, then push again")
            } else if lower.contains("authentication failed")
                || lower.contains("permission denied")
                || lower.contains("could not read username")
                || lower.contains("terminal prompts disabled")
                // "The requested URL returned error: 403"; not any 403 (a port, a host name).
                || lower.contains("error: 403")
            {
                format!("could not authenticate to {remote}: check your credentials or SSH key")
            } else if lower.contains("could not resolve host")
                || lower.contains("connection refused")
                || lower.contains("network is unreachable")
                || lower.contains("timed out")
                || lower.contains("unable to access")
                || lower.contains("could not read from remote repository")
            {
                format!(
                    "cannot reach {remote}: {} (check the network and the remote's address)",
                    first_line(&o.stderr)
                )
            } else {
                first_line(if o.stderr.trim().is_empty() {
                    &o.stdout
                } else {
                    &o.stderr
                })
            };
            GitOutcome::failed(format!("git-push: {why}"))
        }
        Err(e) => GitOutcome::failed(format!("git-push: {e}")),
    }
}

/// The current branch and commit, for a session's metadata; `None` outside a repository.
pub fn describe_head(dir: &Path) -> (Option<String>, Option<String>) {
    let run = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    (
        run(&["symbolic-ref", "--short", "-q", "HEAD"]),
        run(&["rev-parse", "HEAD"]),
    )
}

/// Files changed in the work tree (`git status --porcelain`), for `filesModified`.
pub async fn changed_files(dir: &Path, timeout: Duration) -> Vec<String> {
    match git(
        dir,
        &["status", "--porcelain", "--untracked-files=all"],
        timeout,
    )
    .await
    {
        Ok(o) if o.code == Some(0) => o
            .stdout
            .lines()
            .filter_map(|l| l.get(3..))
            .map(|p| match p.split_once(" -> ") {
                Some((_, to)) => to.to_owned(),
                None => p.to_owned(),
            })
            .map(|p| p.trim_matches('"').to_owned())
            .collect(),
        _ => Vec::new(),
    }
}

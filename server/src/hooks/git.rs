//! The built-in hooks `git-commit` and `git-push`, through rawko's own hardened git
//! ([`crate::git`]). Neither ever blocks: what went wrong is told in one clear line.

use crate::git::{first_line, Git, Hooks, Output, Repo};

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

/// The repository's git, opened for a hook's commands; what to say when there is none.
async fn open(git: &Git, hook: &str, nothing: &str) -> Result<Repo, GitOutcome> {
    git.clone()
        .open()
        .await
        .map_err(|e| GitOutcome::failed(format!("{hook}: {e}; {nothing}")))
}

/// `git add -A` and `git commit -m MESSAGE [--no-verify]`; "No changes to commit." when clean.
pub async fn commit(git: &Git, message: &str, no_verify: bool) -> GitOutcome {
    let repo = match open(git, "git-commit", "nothing committed").await {
        Ok(r) => r,
        Err(o) => return o,
    };
    // The repository's hooks run for the commit only when the user lets them (see
    // docs/hooks.md); with noVerify none runs, not even those `--no-verify` leaves on.
    let hooks = if no_verify {
        Hooks::Off
    } else {
        Hooks::Repository
    };
    let status = match repo.run(Hooks::Off, STATUS).await {
        Ok(o) if o.ok() => o.stdout,
        Ok(o) => return GitOutcome::failed(format!("git-commit: {}", first_line(&o.stderr))),
        Err(e) => return GitOutcome::failed(format!("git-commit: {e}")),
    };
    if status.trim().is_empty() {
        return GitOutcome::ok("No changes to commit.");
    }
    match repo.add_all(hooks).await {
        Ok(o) if o.ok() => {}
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
    match repo.run(hooks, &args).await {
        Ok(o) if o.ok() => {
            let head = repo
                .run(Hooks::Off, &["rev-parse", "--short", "HEAD"])
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

/// `git status` as the hooks read it: porcelain, and a submodule counted changed only when its
/// commit is (looking inside it would run git there, under its own config).
const STATUS: &[&str] = &["status", "--porcelain", "--ignore-submodules=dirty"];

/// Pushes the current branch to `remote` with `--set-upstream`.
pub async fn push(git: &Git, remote: &str) -> GitOutcome {
    let repo = match open(git, "git-push", "nothing pushed").await {
        Ok(r) => r,
        Err(o) => return o,
    };
    let branch =
        match repo
            .run(Hooks::Off, &["symbolic-ref", "--short", "-q", "HEAD"])
            .await
        {
            Ok(o) if o.ok() && !o.stdout.trim().is_empty() => o.stdout.trim().to_owned(),
            Ok(_) => return GitOutcome::failed(
                "git-push: HEAD is detached (no branch is checked out); check out a branch to push",
            ),
            Err(e) => return GitOutcome::failed(format!("git-push: {e}")),
        };
    match repo.run(Hooks::Off, &["remote", "get-url", remote]).await {
        Ok(o) if o.ok() => {}
        Ok(_) => {
            let remotes = repo
                .run(Hooks::Off, &["remote"])
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
    if let Err(why) = repo.check_push_remote(remote).await {
        return GitOutcome::failed(format!("git-push: {why}"));
    }
    match repo.push(remote, &branch).await {
        Ok(o) if o.ok() => {
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
pub fn describe_head(git: &Git) -> (Option<String>, Option<String>) {
    let Ok(repo) = git.clone().open_blocking() else {
        return (None, None);
    };
    let run = |args: &[&str]| {
        repo.run_blocking(Hooks::Off, args)
            .ok()
            .filter(Output::ok)
            .map(|o| o.stdout.trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    (
        run(&["symbolic-ref", "--short", "-q", "HEAD"]),
        run(&["rev-parse", "HEAD"]),
    )
}

/// Files changed in the work tree (`git status --porcelain`), for `filesModified`.
pub async fn changed_files(git: &Git) -> Vec<String> {
    let Ok(repo) = git.clone().open().await else {
        return Vec::new();
    };
    let mut args = STATUS.to_vec();
    args.push("--untracked-files=all");
    match repo.run(Hooks::Off, &args).await {
        Ok(o) if o.ok() => o
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

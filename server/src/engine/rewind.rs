//! The workspace's side of a rewind: what taking it back to a checkpoint changes, and doing it.
//!
//! Three trees are compared: the target checkpoint C, the task's latest checkpoint L and the
//! workspace now W (a tree of it made with the task's private index). A path where C and W
//! differ is restored from C, or removed when C does not have it (the task, or someone, created
//! it since). A path where W differs from L was changed after the task's last checkpoint, by
//! someone else than the task: when the rewind would restore or remove it, it is a conflict,
//! and the caller stops unless told to force it.
//!
//! Restoring is git's own: `read-tree C` into a scratch index (never the user's, never the
//! task's private one), then `checkout-index -f` of the paths, which writes a symlink as a link
//! and replaces a symlinked folder on the way instead of writing through it. Removing is done
//! here, one path at a time from a descriptor of the workspace down (`openat` with
//! `O_NOFOLLOW` for every folder on the way), so a symlink anywhere on the path is never
//! followed: a link is removed itself, never its target, and a path whose folder became a link
//! is left alone. The folders a removal empties go too, up to the workspace. Nothing ignored is
//! in any of the trees, so an ignored file is never touched; a path outside the workspace (the
//! repository's top may be above it) is left out of the comparison; a submodule is never
//! touched.

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use nix::fcntl::{open, openat, OFlag};
use nix::sys::stat::{fstatat, Mode, SFlag};
use nix::unistd::{unlinkat, UnlinkatFlags};

use crate::git::{first_line, Hooks, Repo};

/// What a rewind does to one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Written back as the checkpoint has it.
    Restore,
    /// Removed: the checkpoint does not have it.
    Remove,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Restore => "restore",
            Action::Remove => "remove",
        }
    }
}

/// One path a rewind changes, relative to the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub action: Action,
}

/// What a rewind would change, and which of those paths someone other than the task changed
/// after its last checkpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Sorted by path.
    pub changes: Vec<Change>,
    /// Sorted.
    pub conflicts: Vec<String>,
}

impl Plan {
    pub fn restored(&self) -> Vec<String> {
        self.of(Action::Restore)
    }

    pub fn removed(&self) -> Vec<String> {
        self.of(Action::Remove)
    }

    fn of(&self, action: Action) -> Vec<String> {
        self.changes
            .iter()
            .filter(|c| c.action == action)
            .map(|c| c.path.clone())
            .collect()
    }
}

/// How many paths one `checkout-index` is given (the command line stays far below its limit).
const PATHS_PER_COMMAND: usize = 500;

/// The tree of the workspace as it is now, built in `scratch` (a copy of `seed`, the task's
/// private index, whose stat data spares hashing unchanged files; the private index itself is
/// left as it was). For a dry run, which records nothing.
pub async fn tree_now(repo: &Repo, seed: &Path, scratch: &Path) -> Result<String, String> {
    let _ = std::fs::remove_file(scratch);
    if seed.is_file() {
        std::fs::copy(seed, scratch).map_err(|e| format!("cannot copy the task's index: {e}"))?;
    }
    let repo = repo.clone().with_env("GIT_INDEX_FILE", scratch);
    let result = async {
        let added = repo.add_all(Hooks::Off).await?;
        if !added.ok() {
            return Err(format!("git add failed: {}", first_line(&added.stderr)));
        }
        let tree = repo.run(Hooks::Off, &["write-tree"]).await?;
        if !tree.ok() {
            return Err(format!("git write-tree failed: {}", first_line(&tree.stderr)));
        }
        Ok(tree.stdout.trim().to_owned())
    }
    .await;
    let _ = std::fs::remove_file(scratch);
    result
}

/// What taking the workspace, whose tree is `now`, back to `target` changes; the conflicts are
/// the changed paths that differ between `latest` (the task's last checkpoint) and `now`.
pub async fn plan(
    repo: &Repo,
    target: &str,
    latest: Option<&str>,
    now: &str,
) -> Result<Plan, String> {
    let mut changes: Vec<Change> = differing(repo, target, now)
        .await?
        .into_iter()
        .map(|(path, status)| Change {
            action: if status == 'A' {
                Action::Remove
            } else {
                Action::Restore
            },
            path,
        })
        .collect();
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    let mut conflicts = Vec::new();
    if let Some(latest) = latest {
        let touched: std::collections::HashSet<String> = differing(repo, latest, now)
            .await?
            .into_iter()
            .map(|(path, _)| path)
            .collect();
        conflicts = changes
            .iter()
            .filter(|c| touched.contains(&c.path))
            .map(|c| c.path.clone())
            .collect();
    }
    Ok(Plan { changes, conflicts })
}

/// The paths under the workspace that differ from tree-ish `from` to `to`, relative to the
/// workspace, each with git's status letter (`A` added in `to`, `D` deleted, `M` modified, `T`
/// type changed). Submodules are left out.
async fn differing(repo: &Repo, from: &str, to: &str) -> Result<Vec<(String, char)>, String> {
    // Plumbing, so no `diff.*` setting of the repository changes what it says; `--relative`
    // keeps to the workspace (the command runs there) and names paths from it.
    let out = repo
        .run(
            Hooks::Off,
            &[
                "diff-tree",
                "-r",
                "-z",
                "--raw",
                "--no-renames",
                "--relative",
                from,
                to,
                "--",
            ],
        )
        .await?;
    if !out.ok() {
        return Err(format!("git diff-tree failed: {}", first_line(&out.stderr)));
    }
    // `:OLDMODE NEWMODE OLDSHA NEWSHA STATUS\0PATH\0` for each path.
    let mut found = Vec::new();
    let mut fields = out.stdout.split('\0');
    while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
        let mut meta = meta.trim_start_matches(':').split(' ');
        let (Some(old_mode), Some(new_mode)) = (meta.next(), meta.next()) else {
            break;
        };
        let Some(status) = meta.nth(2).and_then(|s| s.chars().next()) else {
            break;
        };
        if old_mode == "160000" || new_mode == "160000" {
            continue;
        }
        found.push((path.to_owned(), status));
    }
    Ok(found)
}

/// Takes the workspace back to `target` as `plan` says: the removals first (a created file may
/// stand where a folder of the checkpoint goes), then the restores, through `scratch` (a
/// scratch index file, removed after). Returns the paths it did not remove because a folder on
/// their way is now a link or not a folder.
pub async fn apply(
    repo: &Repo,
    workspace: &Path,
    target: &str,
    plan: &Plan,
    scratch: &Path,
) -> Result<Vec<String>, String> {
    let mut skipped = Vec::new();
    for path in plan.removed() {
        if !remove_created(workspace, &path)? {
            skipped.push(path);
        }
    }
    let restored = plan.restored();
    if restored.is_empty() {
        return Ok(skipped);
    }
    let _ = std::fs::remove_file(scratch);
    let repo = repo.clone().with_env("GIT_INDEX_FILE", scratch);
    let result = async {
        let read = repo.run(Hooks::Off, &["read-tree", target]).await?;
        if !read.ok() {
            return Err(format!("git read-tree failed: {}", first_line(&read.stderr)));
        }
        for chunk in restored.chunks(PATHS_PER_COMMAND) {
            let mut args = vec!["checkout-index", "-f", "-q", "--"];
            args.extend(chunk.iter().map(String::as_str));
            let out = repo.run(Hooks::Off, &args).await?;
            if !out.ok() {
                return Err(format!(
                    "git checkout-index failed: {}",
                    first_line(&out.stderr)
                ));
            }
        }
        Ok(())
    }
    .await;
    let _ = std::fs::remove_file(scratch);
    result.map(|()| skipped)
}

/// Removes `path` (relative to `workspace`, `/`-separated as git names it) without following a
/// symlink anywhere: a link is removed itself, and when a folder on the way is a link (or no
/// folder) nothing is removed. A folder at `path` is left alone. The folders the removal leaves
/// empty go too, up to the workspace. `Ok(false)` when nothing was there to remove.
fn remove_created(workspace: &Path, path: &str) -> Result<bool, String> {
    let parts: Vec<&str> = path.split('/').collect();
    if parts
        .iter()
        .any(|p| p.is_empty() || *p == "." || *p == "..")
    {
        return Ok(false);
    }
    let (leaf, folders) = parts.split_last().expect("split gives one part at least");
    let dir_flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    // The workspace itself is named by the user (it may be reached through a link).
    let top = open(workspace, dir_flags - OFlag::O_NOFOLLOW, Mode::empty())
        .map_err(|e| format!("cannot open {}: {e}", workspace.display()))?;
    // The descriptor of each folder on the way, the workspace first.
    let mut fds: Vec<OwnedFd> = vec![top];
    for folder in folders {
        let parent = fds.last().expect("the workspace at least");
        match openat(parent.as_fd(), *folder, dir_flags, Mode::empty()) {
            Ok(fd) => fds.push(fd),
            // Gone, a link (ELOOP) or a file (ENOTDIR): nothing of the path to remove here.
            Err(_) => return Ok(false),
        }
    }
    let parent = fds.last().expect("the workspace at least");
    let Ok(stat) = fstatat(parent.as_fd(), *leaf, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) else {
        return Ok(false);
    };
    if SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT == SFlag::S_IFDIR {
        return Ok(false);
    }
    unlinkat(parent.as_fd(), *leaf, UnlinkatFlags::NoRemoveDir)
        .map_err(|e| format!("cannot remove {path}: {e}"))?;
    // The folders it leaves empty, innermost first; one that is not empty ends it.
    for (i, folder) in folders.iter().enumerate().rev() {
        if unlinkat(fds[i].as_fd(), *folder, UnlinkatFlags::RemoveDir).is_err() {
            break;
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests;

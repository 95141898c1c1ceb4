//! The walk behind Glob and Grep, through the workspace handle.
//!
//! It leaves out what ripgrep's walker (the `ignore` crate) would with the options the tools used
//! to give it: `.gitignore` (whether or not the workspace is a git repository), `.ignore` and
//! `.git/info/exclude`, each file's rules matched by the `ignore` crate's own matcher, with the
//! crate's precedence (`.ignore` over `.gitignore` over the exclude file, a deeper directory's
//! rules over a shallower one's); hidden files are included, `.git` never is, and nothing above
//! the workspace is read (no parent ignore files, no global git excludes). Entries come in the
//! order of the crate's sorted walk: a directory, then what is in it, by name.
//!
//! Unlike that walker it never opens a path by its absolute name. Each directory is opened beneath
//! the workspace handle by its path relative to the workspace, without following a symlink at its
//! last component, and listed through that handle; ignore files and searched files are opened
//! beneath the same handle. A directory swapped for a symlink mid-walk is then either not opened
//! (a symlink where a directory was listed) or refused (a symlink on the way that leads outside):
//! the walk cannot be led out of the workspace (invariant 7). Symlinks are listed, never followed.
//!
//! A `.git` that is a file (a worktree or submodule) names a repository elsewhere, usually outside
//! the workspace: its `info/exclude` is not read.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::fs::{FileType, OpenOptions, ReadDir};
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::ToolContext;

/// A file, directory or symlink the walk found.
pub(super) struct Entry {
    /// Its path below the workspace.
    pub(super) relative: PathBuf,
    /// Its own type: a symlink is a symlink, whatever it points at.
    pub(super) kind: FileType,
}

/// Walks the workspace from its root, descending only on the way to `base` (relative to the
/// workspace; empty for the workspace itself) and below it, and calls `visit` with each entry
/// that is not left out, until `visit` answers false.
///
/// Directories that cannot be opened or listed (gone, not readable, swapped for a symlink) are
/// skipped, as ripgrep skips them.
pub(super) fn walk(ctx: &ToolContext, base: &Path, visit: &mut dyn FnMut(&Entry) -> bool) {
    let mut levels = Vec::new();
    walk_dir(ctx, Path::new(""), base, &mut levels, visit);
}

/// The ignore rules one directory adds, each matcher rooted at that directory.
struct Level {
    ignore: Gitignore,
    gitignore: Gitignore,
    exclude: Gitignore,
}

/// Walks the directory `dir` (relative to the workspace) below the `levels` of its parents;
/// false once `visit` asked to stop.
fn walk_dir(
    ctx: &ToolContext,
    dir: &Path,
    base: &Path,
    levels: &mut Vec<Level>,
    visit: &mut dyn FnMut(&Entry) -> bool,
) -> bool {
    let Some(entries) = list(ctx, dir) else {
        return true;
    };
    levels.push(Level::load(ctx, dir, &entries));
    let mut going_on = true;
    for (name, kind) in entries {
        if name == ".git" {
            continue;
        }
        let relative = dir.join(&name);
        if !(relative.starts_with(base) || base.starts_with(&relative)) {
            continue;
        }
        if ignored(ctx, levels, &relative, kind.is_dir()) {
            continue;
        }
        let entry = Entry { relative, kind };
        if !visit(&entry) || (kind.is_dir() && !walk_dir(ctx, &entry.relative, base, levels, visit))
        {
            going_on = false;
            break;
        }
    }
    levels.pop();
    going_on
}

/// The entries of the directory `dir`, sorted by name, with the type of each; `None` when it
/// cannot be opened beneath the workspace as a directory (no symlink followed at its last
/// component) or listed.
fn list(ctx: &ToolContext, dir: &Path) -> Option<Vec<(OsString, FileType)>> {
    let read: ReadDir = if dir.as_os_str().is_empty() {
        ctx.root.entries().ok()?
    } else {
        ctx.root
            .open_dir_nofollow(dir)
            .and_then(|handle| handle.entries())
            .ok()?
    };
    let mut entries: Vec<(OsString, FileType)> = read
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name();
            let mut kind = entry.file_type().ok()?;
            if !(kind.is_dir() || kind.is_file() || kind.is_symlink()) {
                // The file system gave no type (or an unusual one): look without following.
                kind = entry
                    .metadata()
                    .map_or(kind, |metadata| metadata.file_type());
            }
            Some((name, kind))
        })
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Some(entries)
}

impl Level {
    /// The rules of the ignore files in `dir`, whose `entries` tell which there are.
    fn load(ctx: &ToolContext, dir: &Path, entries: &[(OsString, FileType)]) -> Self {
        let has = |name: &str| entries.iter().any(|(entry, _)| entry == name);
        let matcher = |file: Option<PathBuf>| {
            let mut builder = GitignoreBuilder::new(ctx.workspace.join(dir));
            if let Some(file) = file {
                add_file(ctx, &mut builder, &file);
            }
            builder.build().unwrap_or_else(|_| Gitignore::empty())
        };
        let git_dir = dir.join(".git");
        let exclude = has(".git")
            && ctx
                .root
                .metadata(&git_dir)
                .is_ok_and(|metadata| metadata.is_dir());
        Level {
            ignore: matcher(has(".ignore").then(|| dir.join(".ignore"))),
            gitignore: matcher(has(".gitignore").then(|| dir.join(".gitignore"))),
            exclude: matcher(exclude.then(|| git_dir.join("info/exclude"))),
        }
    }
}

/// Adds the rules of the ignore file `file` (relative to the workspace) to `builder`, read as the
/// `ignore` crate reads one: line by line up to the first that is not UTF-8, a leading byte-order
/// mark dropped, bad lines skipped. A file that cannot be opened beneath the workspace, or is not
/// a regular file, adds nothing.
fn add_file(ctx: &ToolContext, builder: &mut GitignoreBuilder, file: &Path) {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .follow(FollowSymlinks::Yes)
        .nonblock(true);
    let Ok(handle) = ctx.root.open_with(file, &options) else {
        return;
    };
    if !handle.metadata().is_ok_and(|metadata| metadata.is_file()) {
        return;
    }
    let from = ctx.workspace.join(file);
    for (index, line) in BufReader::new(handle).lines().enumerate() {
        let Ok(line) = line else {
            break;
        };
        let line = if index == 0 {
            line.trim_start_matches('\u{feff}')
        } else {
            &line
        };
        let _ = builder.add_line(Some(from.clone()), line);
    }
}

/// Whether the rules of `levels` (the workspace first) leave out `relative`: the deepest
/// directory with a rule that matches decides, `.ignore` files first, then `.gitignore` files,
/// then `.git/info/exclude`.
fn ignored(ctx: &ToolContext, levels: &[Level], relative: &Path, is_dir: bool) -> bool {
    let path = ctx.workspace.join(relative);
    let deepest = |matcher: fn(&Level) -> &Gitignore| {
        levels
            .iter()
            .rev()
            .map(|level| matcher(level).matched(&path, is_dir))
            .find(|found| !found.is_none())
            .unwrap_or(ignore::Match::None)
    };
    deepest(|level| &level.ignore)
        .or(deepest(|level| &level.gitignore))
        .or(deepest(|level| &level.exclude))
        .is_ignore()
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::super::test_support::workspace;
    use super::super::ToolContext;
    use super::walk;

    /// What the tools' walk used to be: ripgrep's walker with the tools' options, by path.
    fn reference(ctx: &ToolContext, base: &Path) -> Vec<(PathBuf, bool)> {
        let base = ctx.workspace.join(base);
        ignore::WalkBuilder::new(&ctx.workspace)
            .hidden(false)
            .parents(false)
            .git_global(false)
            .require_git(false)
            .follow_links(false)
            .sort_by_file_path(|a, b| a.cmp(b))
            .filter_entry(move |entry| {
                let path = entry.path();
                entry.file_name() != ".git" && (path.starts_with(&base) || base.starts_with(path))
            })
            .build()
            .filter_map(Result::ok)
            .filter(|entry| entry.depth() > 0)
            .map(|entry| {
                let relative = entry.path().strip_prefix(&ctx.workspace).unwrap();
                let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
                (relative.to_path_buf(), is_dir)
            })
            .collect()
    }

    fn walked(ctx: &ToolContext, base: &Path) -> Vec<(PathBuf, bool)> {
        let mut found = Vec::new();
        walk(ctx, base, &mut |entry| {
            found.push((entry.relative.clone(), entry.kind.is_dir()));
            true
        });
        found
    }

    fn files(root: &Path, files: &[(&str, &str)]) {
        for (path, content) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
    }

    #[test]
    fn the_walk_leaves_out_what_ripgreps_walker_leaves_out_in_its_order() {
        let (dir, ctx) = workspace();
        files(
            dir.path(),
            &[
                (
                    ".gitignore",
                    "\u{feff}target/\n*.log\n!keep.log\n/build\nsub/**/gen.rs\nlogs/\n# note\n\n",
                ),
                (".ignore", "secret.*\n!secret.keep\n"),
                (".git/HEAD", "ref: refs/heads/main\n"),
                (".git/info/exclude", "excluded.txt\n"),
                (".hidden/file", ""),
                ("a/.gitignore", "!*.log\nlocal.txt\n[bad\n"),
                ("a/.ignore", "*.tmp\n"),
                ("a/b/.gitignore", "!local.txt\n"),
                ("a/x.log", ""),
                ("a/local.txt", ""),
                ("a/b/local.txt", ""),
                ("a/b/c.tmp", ""),
                ("a/build/y", ""),
                ("a/excluded.txt", ""),
                ("a/nested/.git/info/exclude", "n.txt\n"),
                ("a/nested/n.txt", ""),
                ("a/nested/m.txt", ""),
                ("a/n.txt", ""),
                ("a/.gitignore.d/x", ""),
                ("build/x", ""),
                ("keep.log", ""),
                ("run.log", ""),
                ("logs", "a file, not the directory the rule names"),
                ("secret.txt", ""),
                ("secret.keep", ""),
                ("sub/gen.rs", ""),
                ("sub/q/gen.rs", ""),
                ("sub/q/main.rs", ""),
                ("target/t.rs", ""),
                ("excluded.txt", ""),
                ("Z.txt", ""),
                ("z.txt", ""),
            ],
        );
        std::os::unix::fs::symlink("a", dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink("keep.log", dir.path().join("flink")).unwrap();
        std::os::unix::fs::symlink("missing", dir.path().join("dangling")).unwrap();
        for base in ["", "a", "a/b", "a/nested", "sub/q", "target", "link"] {
            let base = Path::new(base);
            let expected = reference(&ctx, base);
            assert!(
                !expected.is_empty() || base == Path::new("target"),
                "{base:?}"
            );
            assert_eq!(walked(&ctx, base), expected, "base {base:?}");
        }
    }

    #[test]
    fn the_walk_stops_when_asked() {
        let (dir, ctx) = workspace();
        files(dir.path(), &[("a/1", ""), ("a/2", ""), ("b", "")]);
        let mut seen = Vec::new();
        walk(&ctx, Path::new(""), &mut |entry| {
            seen.push(entry.relative.clone());
            seen.len() < 2
        });
        assert_eq!(seen, [PathBuf::from("a"), PathBuf::from("a/1")]);
    }
}

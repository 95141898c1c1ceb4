//! Which git repository a workspace belongs to, found without taking the agent's word for it
//! (invariant 10).
//!
//! Two things follow from the answer: the directories Bash gets the workspace's access to under
//! Landlock (a worktree's git directory lives outside it), and the repository rawko's own git
//! runs in ([`crate::git`]). Both would widen what an agent can do if they followed a file the
//! agent wrote: one Write of `.git` (`gitdir: /anywhere`) would open `/anywhere` to every later
//! Bash call, and point rawko's unconfined git at a repository of the agent's choosing. So:
//!
//! - A `.git` the agent cannot write (at an ancestor outside the workspace, the task's temp dir
//!   and the user's `allowWrite` paths) is the user's and followed as git follows it.
//! - A `.git` directory in the workspace is the workspace's own repository: nothing outside.
//! - A `.git` *file* (or symbolic link) the agent could have written is followed only when
//!   something outside the agent's reach that git wrote confirms it: the admin directory of a
//!   worktree (`<common>/worktrees/<id>`, whose `gitdir` file names exactly this `.git`, as
//!   `git worktree add` writes it), or a submodule's git directory (under a superproject's
//!   `modules/`, whose `core.worktree` is this directory). A git directory that is itself within
//!   the agent's reach gives Bash nothing it does not have already.
//! - A git directory's `commondir` is followed only where git puts a worktree's admin directory
//!   (`<common>/worktrees/<id>` naming `<common>`), since Bash may write the git directory it
//!   is granted.
//!
//! Everything else is ignored, with a note saying why. Paths are compared canonical (symbolic
//! links and `..` resolved); files are read only when they are regular files, without blocking
//! and up to a bound, since the agent may leave a FIFO where rawko expects a file.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The most of a `.git`, `gitdir` or `commondir` file rawko reads.
const SMALL_FILE: u64 = 4096;
/// The most of a submodule's `config` rawko reads.
const CONFIG_FILE: u64 = 1 << 20;

/// A repository rawko's git may run in: its directories, canonical.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repository {
    /// The directory that holds `.git` (or the submodule's `core.worktree`).
    pub work_tree: PathBuf,
    pub git_dir: PathBuf,
    /// Where the objects, refs, config and hooks are: the main repository's git directory for a
    /// worktree, else the git directory itself.
    pub common_dir: PathBuf,
}

/// What [`discover`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovery {
    /// The repository, when there is one rawko may use.
    pub repository: Option<Repository>,
    /// Its directories outside the workspace, which Bash gets the workspace's access to.
    pub outside: Vec<PathBuf>,
    /// Why a `.git` was not followed, for the user: one note per task.
    pub ignored: Option<String>,
}

impl Discovery {
    fn ignored(note: String) -> Self {
        Discovery {
            ignored: Some(note),
            ..Discovery::default()
        }
    }
}

/// The git directories of a workspace that live outside it (a worktree's and its main
/// repository's, or the repository's when the workspace is a directory inside one), with nothing
/// else an agent could write counted as its own.
pub fn repository_dirs(workspace: &Path) -> Vec<PathBuf> {
    discover(workspace, &[]).outside
}

/// Finds the repository of `workspace` (canonical). `agent_writable` lists what Bash may write
/// besides the workspace (the task's temp dir, the user's `allowWrite` paths): a `.git` or a git
/// directory there is the agent's as much as one in the workspace.
pub fn discover(workspace: &Path, agent_writable: &[PathBuf]) -> Discovery {
    let writable = Writable::new(workspace, agent_writable);
    let ceilings = ceiling_dirs();
    let across = std::env::var_os("GIT_DISCOVERY_ACROSS_FILESYSTEM")
        .is_some_and(|v| matches!(v.to_str(), Some("1" | "true" | "yes" | "on")));
    let device = std::fs::metadata(workspace).map(|m| m.dev()).ok();
    for dir in workspace.ancestors() {
        if dir != workspace {
            // Where git's own discovery stops (setup.c): not into a ceiling directory, and not
            // across a file system boundary unless asked.
            if ceilings.iter().any(|c| c == dir) {
                break;
            }
            if !across && std::fs::metadata(dir).map(|m| m.dev()).ok() != device {
                break;
            }
        }
        let dot_git = dir.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
            continue;
        };
        return examine(workspace, dir, &dot_git, &meta, &writable);
    }
    Discovery::default()
}

/// The directories Bash may write: a file in one is the agent's to write.
struct Writable {
    roots: Vec<PathBuf>,
}

impl Writable {
    fn new(workspace: &Path, others: &[PathBuf]) -> Self {
        let mut roots = vec![workspace.to_owned()];
        for root in others {
            roots.push(root.clone());
            if let Ok(canonical) = root.canonicalize() {
                roots.push(canonical);
            }
        }
        Writable { roots }
    }

    fn contains(&self, path: &Path) -> bool {
        self.roots.iter().any(|r| path.starts_with(r))
    }
}

/// The `.git` found at `dir`.
fn examine(
    workspace: &Path,
    dir: &Path,
    dot_git: &Path,
    meta: &std::fs::Metadata,
    writable: &Writable,
) -> Discovery {
    let agents = writable.contains(dir);
    let place = if dir == workspace {
        "the workspace's .git".to_owned()
    } else {
        format!("{}", dot_git.display())
    };
    let not_followed = "Bash gets no access to it, and rawko's git does not run there";
    // A link is followed to what it names, which must then pass as if it were there.
    let (target, is_dir) = if meta.file_type().is_symlink() {
        let Ok(target) = dot_git.canonicalize() else {
            return Discovery::ignored(format!(
                "{place} is a symbolic link to nothing that exists: {not_followed}"
            ));
        };
        if agents && !writable.contains(&target) {
            return Discovery::ignored(format!(
                "{place} is a symbolic link to {}, which rawko does not follow: {not_followed}",
                target.display()
            ));
        }
        let is_dir = target.is_dir();
        (target, is_dir)
    } else {
        (dot_git.to_owned(), meta.is_dir())
    };
    if is_dir {
        let git_dir = target.canonicalize().unwrap_or(target);
        return found(workspace, dir, git_dir, writable, &place);
    }
    let Some(named) = read_small(&target, SMALL_FILE)
        .as_deref()
        .and_then(gitdir_line)
        .map(|p| dir.join(p))
    else {
        return Discovery::ignored(format!(
            "{place} is not a git directory or a file naming one (\"gitdir: PATH\"): {not_followed}"
        ));
    };
    let Ok(git_dir) = named.canonicalize() else {
        return Discovery::ignored(format!(
            "{place} names {}, which does not exist: {not_followed}",
            named.display()
        ));
    };
    if agents
        && !writable.contains(&git_dir)
        && !is_worktree_of(&git_dir, dir)
        && !is_submodule_of(&git_dir, dir)
    {
        return Discovery::ignored(format!(
            "{place} names {}, which git does not know as a worktree or submodule of {}: {not_followed}",
            git_dir.display(),
            dir.display()
        ));
    }
    found(workspace, dir, git_dir, writable, &place)
}

/// The repository whose git directory is `git_dir`, with its common directory checked.
fn found(
    workspace: &Path,
    work_tree: &Path,
    git_dir: PathBuf,
    writable: &Writable,
    place: &str,
) -> Discovery {
    let common_dir = match common_dir(&git_dir, writable) {
        Ok(c) => c,
        Err(why) => {
            return Discovery::ignored(format!(
                "{place} leads to {}, {why}: Bash gets no access to it, and rawko's git does not run there",
                git_dir.display()
            ))
        }
    };
    let mut outside = Vec::new();
    for d in [&git_dir, &common_dir] {
        if !d.starts_with(workspace) && !outside.contains(d) {
            outside.push(d.clone());
        }
    }
    Discovery {
        repository: Some(Repository {
            work_tree: work_tree.to_owned(),
            git_dir,
            common_dir,
        }),
        outside,
        ignored: None,
    }
}

/// The common directory of `git_dir`: itself, or what its `commondir` file names when that is
/// where git keeps a worktree's admin directory (`<common>/worktrees/<id>`), or, for a git
/// directory the agent may write, when the common directory is the agent's too.
fn common_dir(git_dir: &Path, writable: &Writable) -> Result<PathBuf, String> {
    let file = git_dir.join("commondir");
    if std::fs::symlink_metadata(&file).is_err() {
        return Ok(git_dir.to_owned());
    }
    let named = read_small(&file, SMALL_FILE)
        .map(|t| t.trim_end_matches(['\n', '\r']).to_owned())
        .filter(|t| !t.is_empty())
        .map(|t| git_dir.join(t))
        .and_then(|p| p.canonicalize().ok())
        .ok_or_else(|| "whose commondir file names no directory".to_owned())?;
    // A git directory the agent may write leads only to what it may write: where git keeps a
    // worktree's admin directory says nothing when the agent made that directory itself.
    let allowed = if writable.contains(git_dir) {
        writable.contains(&named)
    } else {
        in_worktrees(git_dir) && git_dir.parent().and_then(Path::parent) == Some(named.as_path())
    };
    if allowed {
        Ok(named)
    } else {
        Err(format!(
            "whose commondir file names {}, which is not where git keeps a worktree's repository",
            named.display()
        ))
    }
}

/// Whether `git_dir` is the admin directory of the worktree at `dir`, as `git worktree add`
/// leaves it: under a `worktrees` directory, with a `gitdir` file naming exactly `dir/.git`.
fn is_worktree_of(git_dir: &Path, dir: &Path) -> bool {
    if !in_worktrees(git_dir) {
        return false;
    }
    let Some(named) = read_small(&git_dir.join("gitdir"), SMALL_FILE)
        .map(|t| t.trim_end_matches(['\n', '\r']).to_owned())
        .filter(|t| !t.is_empty())
        .map(|t| git_dir.join(t))
    else {
        return false;
    };
    named.file_name().is_some_and(|n| n == ".git")
        && named
            .parent()
            .and_then(|p| p.canonicalize().ok())
            .is_some_and(|p| p == dir)
}

/// Whether `git_dir` is where git keeps a worktree's admin directory: `<common>/worktrees/<id>`.
fn in_worktrees(git_dir: &Path) -> bool {
    git_dir
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|n| n == "worktrees")
}

/// Whether `git_dir` is the git directory of the submodule checked out at `dir`: under a
/// `modules` directory, not a worktree's, with `core.worktree` naming `dir`.
fn is_submodule_of(git_dir: &Path, dir: &Path) -> bool {
    let under_modules = git_dir
        .ancestors()
        .skip(1)
        .any(|a| a.file_name().is_some_and(|n| n == "modules"));
    if !under_modules || std::fs::symlink_metadata(git_dir.join("commondir")).is_ok() {
        return false;
    }
    read_small(&git_dir.join("config"), CONFIG_FILE)
        .as_deref()
        .and_then(core_worktree)
        .and_then(|w| git_dir.join(w).canonicalize().ok())
        .is_some_and(|w| w == dir)
}

/// The path of a `.git` file's `gitdir: PATH` line.
fn gitdir_line(text: &str) -> Option<&str> {
    let line = text.lines().next()?;
    let path = line.strip_prefix("gitdir:")?.trim();
    (!path.is_empty()).then_some(path)
}

/// A regular file's text, up to `limit` bytes; `None` for anything else (a FIFO, a directory,
/// a device), opened without blocking and without following a final symbolic link.
fn read_small(path: &Path, limit: u64) -> Option<String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NONBLOCK | nix::libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(limit).read_to_string(&mut text).ok()?;
    Some(text)
}

/// `GIT_CEILING_DIRECTORIES`: the directories git's discovery does not look at, canonical.
fn ceiling_dirs() -> Vec<PathBuf> {
    let Some(list) = std::env::var_os("GIT_CEILING_DIRECTORIES") else {
        return Vec::new();
    };
    std::env::split_paths(&list)
        .filter(|p| p.is_absolute())
        .flat_map(|p| {
            let canonical = p.canonicalize().ok();
            std::iter::once(p).chain(canonical)
        })
        .collect()
}

/// The last `core.worktree` of a git config file, read as git reads it (sections, quotes,
/// escapes, comments, continued lines); includes are not followed. `None` when there is none
/// or the text is not what git writes.
fn core_worktree(text: &str) -> Option<String> {
    let mut in_core = false;
    let mut found = None;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let mut rest = line.trim_start();
        if let Some(header) = rest.strip_prefix('[') {
            let end = header.find(']')?;
            let name = header[..end].trim();
            in_core = name.eq_ignore_ascii_case("core");
            rest = header[end + 1..].trim_start();
        }
        if rest.is_empty() || rest.starts_with('#') || rest.starts_with(';') {
            continue;
        }
        let name_end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .unwrap_or(rest.len());
        let (name, after) = rest.split_at(name_end);
        if !in_core || !name.eq_ignore_ascii_case("worktree") {
            // A value of another key may continue onto the next lines.
            let mut tail = after.to_owned();
            while tail.ends_with('\\') {
                tail = lines.next().unwrap_or_default().to_owned();
            }
            continue;
        }
        let value = after.trim_start().strip_prefix('=')?;
        let mut text = value.to_owned();
        while text.ends_with('\\') && !text.ends_with("\\\\") {
            text.pop();
            text.push_str(lines.next().unwrap_or_default());
        }
        found = Some(config_value(&text)?);
    }
    found
}

/// A git config value as written after `=`: quotes removed, escapes read, a comment cut,
/// surrounding white space trimmed.
fn config_value(raw: &str) -> Option<String> {
    let mut out = String::new();
    let mut quoted = false;
    let mut pending_space = String::new();
    let mut chars = raw.trim_start().chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => quoted = !quoted,
            '\\' => {
                out.push_str(&pending_space);
                pending_space.clear();
                out.push(match chars.next()? {
                    'n' => '\n',
                    't' => '\t',
                    'b' => '\u{8}',
                    c @ ('\\' | '"') => c,
                    _ => return None,
                });
            }
            '#' | ';' if !quoted => break,
            c if c.is_whitespace() && !quoted => pending_space.push(c),
            c => {
                out.push_str(&pending_space);
                pending_space.clear();
                out.push(c);
            }
        }
    }
    (!quoted).then_some(out)
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    #[test]
    fn a_worktrees_git_directories_go_with_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let main_git = root.join("main/.git");
        let wt_git = main_git.join("worktrees/wt");
        std::fs::create_dir_all(&wt_git).unwrap();
        std::fs::write(wt_git.join("commondir"), "../..\n").unwrap();
        // What `git worktree add` writes beside commondir: the worktree's .git.
        std::fs::write(
            wt_git.join("gitdir"),
            format!("{}\n", root.join("wt/.git").display()),
        )
        .unwrap();
        std::fs::create_dir_all(root.join("wt/sub")).unwrap();
        std::fs::write(
            root.join("wt/.git"),
            format!("gitdir: {}\n", wt_git.display()),
        )
        .unwrap();
        assert_eq!(
            repository_dirs(&root.join("wt")),
            vec![wt_git.clone(), main_git.clone()]
        );
        assert_eq!(
            repository_dirs(&root.join("wt/sub")),
            vec![wt_git, main_git.clone()]
        );
        assert_eq!(repository_dirs(&root.join("main")), Vec::<PathBuf>::new());
        std::fs::create_dir_all(root.join("main/src")).unwrap();
        assert_eq!(repository_dirs(&root.join("main/src")), vec![main_git]);
    }

    fn git(dir: &Path, args: &[&str]) {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@e.invalid"])
            .args([
                "-c",
                "protocol.file.allow=always",
                "-c",
                "init.defaultBranch=main",
            ])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .expect("run git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn repo(dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        git(dir, &["init", "-q"]);
        std::fs::write(dir.join("a.txt"), "a\n").unwrap();
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-qm", "one"]);
    }

    #[test]
    fn a_real_worktree_gets_its_git_directories() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        repo(&root.join("main"));
        git(&root.join("main"), &["worktree", "add", "-q", "../wt"]);
        let found = discover(&root.join("wt"), &[]);
        let main_git = root.join("main/.git");
        assert_eq!(
            found.outside,
            vec![main_git.join("worktrees/wt"), main_git.clone()]
        );
        assert_eq!(found.ignored, None);
        assert_eq!(
            found.repository,
            Some(Repository {
                work_tree: root.join("wt"),
                git_dir: main_git.join("worktrees/wt"),
                common_dir: main_git,
            })
        );
    }

    #[test]
    fn a_real_submodule_gets_its_git_directory() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        repo(&root.join("lib"));
        repo(&root.join("app"));
        git(
            &root.join("app"),
            &["submodule", "add", "-q", "../lib", "vendor/lib"],
        );
        let module = root.join("app/.git/modules/vendor/lib");
        let found = discover(&root.join("app/vendor/lib"), &[]);
        assert_eq!(found.outside, vec![module.clone()]);
        assert_eq!(found.ignored, None);
        assert_eq!(
            found.repository.map(|r| (r.work_tree, r.common_dir)),
            Some((root.join("app/vendor/lib"), module))
        );
    }

    /// The agent writes `.git` (or links it) to name a directory outside: nothing is given, and
    /// the note says why.
    #[test]
    fn a_git_file_the_agent_wrote_opens_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        repo(&root.join("other"));
        git(
            &root.join("other"),
            &["worktree", "add", "-q", "../other-wt"],
        );
        let ws = root.join("ws");
        let tmp = root.join("state/t1/tmp");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&tmp).unwrap();
        let secret = root.join("secret");
        std::fs::create_dir_all(secret.join("objects")).unwrap();

        let write_git = |text: String| {
            let _ = std::fs::remove_file(ws.join(".git"));
            std::fs::write(ws.join(".git"), text).unwrap();
        };
        let nothing = |what: &str, expected: &str| {
            let found = discover(&ws, std::slice::from_ref(&tmp));
            assert_eq!(found.outside, Vec::<PathBuf>::new(), "{what}");
            assert_eq!(found.repository, None, "{what}");
            let note = found.ignored.unwrap_or_default();
            assert!(note.contains(expected), "{what}: {note}");
            assert!(
                note.ends_with("Bash gets no access to it, and rawko's git does not run there"),
                "{what}: {note}"
            );
        };

        // Any directory.
        write_git(format!("gitdir: {}\n", secret.display()));
        nothing(
            "a plain directory",
            &format!(
                "the workspace's .git names {}, which git does not know as a worktree or submodule of {}",
                secret.display(),
                ws.display()
            ),
        );
        // With `..`, relative to the workspace.
        write_git("gitdir: ../secret\n".into());
        nothing("a relative path", "which git does not know as a worktree");
        // Another worktree's real admin directory: its gitdir names the other worktree.
        write_git(format!(
            "gitdir: {}\n",
            root.join("other/.git/worktrees/other-wt").display()
        ));
        nothing(
            "another worktree's",
            "which git does not know as a worktree",
        );
        // An admin directory the agent made where it may write, naming this .git, whose
        // commondir leads outside.
        let fake = tmp.join("worktrees/x");
        std::fs::create_dir_all(&fake).unwrap();
        std::fs::write(
            fake.join("gitdir"),
            format!("{}\n", ws.join(".git").display()),
        )
        .unwrap();
        std::fs::write(fake.join("commondir"), format!("{}\n", secret.display())).unwrap();
        write_git(format!("gitdir: {}\n", fake.display()));
        nothing(
            "a fake admin directory",
            &format!("whose commondir file names {}", secret.display()),
        );
        // A link to a directory outside.
        std::fs::remove_file(ws.join(".git")).unwrap();
        std::os::unix::fs::symlink(&secret, ws.join(".git")).unwrap();
        nothing(
            "a symbolic link",
            &format!(
                "is a symbolic link to {}, which rawko does not follow",
                secret.display()
            ),
        );
        // A FIFO is not read (the test would hang if it were).
        std::fs::remove_file(ws.join(".git")).unwrap();
        nix::unistd::mkfifo(&ws.join(".git"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        nothing("a FIFO", "is not a git directory or a file naming one");

        // A git directory in the workspace itself is the agent's anyway: followed, nothing given.
        std::fs::remove_file(ws.join(".git")).unwrap();
        std::fs::create_dir_all(ws.join("inner")).unwrap();
        write_git("gitdir: inner\n".into());
        let found = discover(&ws, std::slice::from_ref(&tmp));
        assert_eq!((found.outside, found.ignored), (vec![], None));
        assert_eq!(found.repository.map(|r| r.git_dir), Some(ws.join("inner")));
        // But not with a commondir leading out of it.
        std::fs::write(
            ws.join("inner/commondir"),
            format!("{}\n", secret.display()),
        )
        .unwrap();
        nothing("an inner commondir", "whose commondir file names");

        // A workspace named `worktrees` whose .git names its parent as the common directory,
        // the way a worktree's admin directory would.
        let named = root.join("worktrees");
        std::fs::create_dir_all(named.join(".git")).unwrap();
        std::fs::write(named.join(".git/commondir"), "../..\n").unwrap();
        let found = discover(&named, &[]);
        assert_eq!((found.outside, found.repository), (vec![], None));
        assert!(
            found.ignored.is_some_and(
                |n| n.contains(&format!("whose commondir file names {}", root.display()))
            ),
        );
    }

    #[test]
    fn core_worktree_is_read_as_git_writes_it() {
        assert_eq!(
            core_worktree("[core]\n\trepositoryformatversion = 0\n\tworktree = ../../../lib\n"),
            Some("../../../lib".into())
        );
        assert_eq!(
            core_worktree(
                "[Core]\n  WorkTree = \"a b\\\"c\" # note\n[remote \"o\"]\n\tworktree = x\n"
            ),
            Some("a b\"c".into())
        );
        assert_eq!(
            core_worktree("[core] worktree = /x\n[core]\nworktree=/y"),
            Some("/y".into())
        );
        assert_eq!(core_worktree("[core]\n\tbare = false\n"), None);
        assert_eq!(core_worktree("[core]\n\tworktree = \"open\n"), None);
    }
}

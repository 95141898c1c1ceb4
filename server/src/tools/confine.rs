//! Workspace confinement (invariant 7): turns a path an agent gave into a path inside the
//! workspace, or refuses it with a message that names the path and says why; the tools then open
//! what it names beneath the workspace in one race-free step.
//!
//! Two steps, and only the second one guards. [`resolve`] reads the path as it is now, following
//! symlinks, to refuse an escape with a clear message ("a symlink leads to …") and to name the
//! file a link points at; a path that does not exist yet is checked through the real path of its
//! nearest existing ancestor, and the parts below that may not contain `..` (the kernel would
//! resolve them against directories that do not exist yet, which cannot be checked). Then the tool
//! opens the resolved path through the workspace's directory handle ([`ToolContext`]'s `root`, a
//! `cap_std::fs::Dir`), which resolves it beneath that handle in the kernel (`openat2` with
//! `RESOLVE_BENEATH` on Linux): a directory swapped for a symlink to outside between the two steps
//! makes the open fail, never leads it out. [`open_failed`] words that failure like an escape
//! refused up front. A check-then-open by path would let such a swap redirect the call.

use std::io::{self, ErrorKind};
use std::path::{Component, Path, PathBuf};

use super::ToolContext;

/// How many dangling symlinks one path may pass through, as the kernel's own limit for loops.
const MAX_DANGLING_LINKS: u32 = 40;

/// The real path inside the workspace that `path` names, or why it is refused.
///
/// Relative paths are relative to the workspace; absolute paths must lie inside it. The answer has
/// every existing symlink resolved; the parts that do not exist yet are appended unchanged.
pub fn resolve(ctx: &ToolContext, path: &str) -> Result<PathBuf, String> {
    if path.is_empty() {
        return Err("path is empty".to_owned());
    }
    resolve_from(ctx, path, &ctx.workspace.join(path), 0)
}

fn resolve_from(
    ctx: &ToolContext,
    given: &str,
    candidate: &Path,
    dangling_links: u32,
) -> Result<PathBuf, String> {
    for ancestor in candidate.ancestors() {
        let metadata = match std::fs::symlink_metadata(ancestor) {
            Ok(metadata) => metadata,
            Err(error)
                if matches!(error.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) =>
            {
                continue
            }
            Err(error) => return Err(format!("cannot check path \"{given}\": {error}")),
        };
        let rest = candidate
            .strip_prefix(ancestor)
            .expect("an ancestor is a prefix of its path");
        let real = match ancestor.canonicalize() {
            Ok(real) => real,
            Err(error) if metadata.is_symlink() && error.kind() == ErrorKind::NotFound => {
                // A link whose target does not exist yet: follow it by hand, so that writing
                // through it is checked like writing to its target.
                if dangling_links >= MAX_DANGLING_LINKS {
                    return Err(format!("path \"{given}\" passes through too many symlinks"));
                }
                let target = std::fs::read_link(ancestor)
                    .map_err(|error| format!("cannot follow path \"{given}\": {error}"))?;
                let parent = ancestor.parent().unwrap_or(ancestor);
                return resolve_from(
                    ctx,
                    given,
                    &parent.join(target).join(rest),
                    dangling_links + 1,
                );
            }
            Err(error) => return Err(format!("cannot resolve path \"{given}\": {error}")),
        };
        if !real.starts_with(&ctx.workspace) {
            // (Joining an empty rest would add a trailing slash to the message.)
            let leads_to = if rest.as_os_str().is_empty() {
                real
            } else {
                real.join(rest)
            };
            return Err(outside(ctx, given, candidate, &leads_to));
        }
        let mut resolved = real;
        for component in rest.components() {
            match component {
                Component::Normal(name) => resolved.push(name),
                Component::CurDir => {}
                _ => {
                    return Err(format!(
                        "path \"{given}\" is refused: \"..\" may not follow a directory that does not exist"
                    ))
                }
            }
        }
        return Ok(resolved);
    }
    Err(format!("cannot resolve path \"{given}\""))
}

fn outside(ctx: &ToolContext, given: &str, candidate: &Path, real: &Path) -> String {
    let looks_inside = candidate.starts_with(&ctx.workspace)
        && !candidate
            .components()
            .any(|component| component == Component::ParentDir);
    let workspace = ctx.workspace.display();
    if looks_inside {
        format!(
            "path \"{given}\" is outside the workspace {workspace}: a symlink leads to {}",
            real.display()
        )
    } else {
        format!("path \"{given}\" is outside the workspace {workspace}")
    }
}

/// A path an agent gave, confined to the workspace: `real` (absolute, every existing symlink
/// resolved) for messages, `relative` (below the workspace; empty for the workspace itself) to
/// open through the workspace handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Confined {
    pub(super) real: PathBuf,
    pub(super) relative: PathBuf,
}

impl Confined {
    /// The path to open beneath the workspace handle (`.` for the workspace itself).
    pub(super) fn beneath(&self) -> &Path {
        if self.relative.as_os_str().is_empty() {
            Path::new(".")
        } else {
            &self.relative
        }
    }
}

/// [`resolve`]s `given` and says where it is below the workspace.
pub(super) fn confine(ctx: &ToolContext, given: &str) -> Result<Confined, String> {
    let real = resolve(ctx, given)?;
    let relative = real
        .strip_prefix(&ctx.workspace)
        .map_err(|_| outside(ctx, given, &ctx.workspace.join(given), &real))?
        .to_path_buf();
    Ok(Confined { real, relative })
}

/// Whether `error` is the refusal of a path that led outside the directory it was opened
/// beneath: cap-std's own error, or the kernel's `EXDEV` from `openat2(RESOLVE_BENEATH)`.
pub(super) fn led_outside(error: &io::Error) -> bool {
    error.raw_os_error() == Some(nix::libc::EXDEV)
        || (error.kind() == ErrorKind::PermissionDenied
            && error.raw_os_error().is_none()
            && error.to_string().contains("outside of the filesystem"))
}

/// The message for opening `given` beneath the workspace having failed with `error`; `failed`
/// words any failure other than an escape.
///
/// A path that led outside (a directory swapped for a symlink after [`resolve`] looked) is
/// refused like an escape found up front; when the path still leads out, the message says where.
/// A symlink found where [`resolve`] saw none (`ELOOP` at a last component opened without
/// following) is reported that way too when it leads out.
pub(super) fn open_failed(
    ctx: &ToolContext,
    given: &str,
    error: &io::Error,
    failed: impl FnOnce(&io::Error) -> String,
) -> String {
    let escaped = led_outside(error);
    if escaped || error.raw_os_error() == Some(nix::libc::ELOOP) {
        if let Err(message) = resolve(ctx, given) {
            return message;
        }
    }
    if escaped {
        return format!(
            "path \"{given}\" is outside the workspace {}: a symlink on the way leads out of it",
            ctx.workspace.display()
        );
    }
    failed(error)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use serde_json::json;

    use super::super::{run, ToolContext};
    use super::*;

    /// A temp dir holding the workspace `w/` and, beside it, `outside/secret.txt`.
    struct Fixture {
        _root: tempfile::TempDir,
        ctx: ToolContext,
        outside: PathBuf,
    }

    impl Fixture {
        fn new() -> Self {
            let root = tempfile::tempdir().unwrap();
            std::fs::create_dir(root.path().join("w")).unwrap();
            let outside = root.path().canonicalize().unwrap().join("outside");
            std::fs::create_dir(&outside).unwrap();
            std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
            let ctx = ToolContext::new(&root.path().join("w")).unwrap();
            Fixture {
                _root: root,
                ctx,
                outside,
            }
        }

        fn ws(&self) -> &Path {
            &self.ctx.workspace
        }

        fn secret(&self) -> String {
            std::fs::read_to_string(self.outside.join("secret.txt")).unwrap()
        }

        async fn refused(&self, tool: &str, input: serde_json::Value) -> String {
            let out = run(tool, &input, &self.ctx).await;
            assert!(out.is_error, "{tool} {input} was allowed: {out:?}");
            assert!(
                out.content.contains("outside the workspace") || out.content.contains("refused"),
                "{tool} {input}: {}",
                out.content
            );
            assert!(!out.content.contains("secret\n"), "{}", out.content);
            out.content
        }
    }

    #[test]
    fn relative_and_absolute_paths_inside_resolve() {
        let f = Fixture::new();
        std::fs::create_dir(f.ws().join("sub")).unwrap();
        std::fs::write(f.ws().join("a.txt"), "").unwrap();
        assert_eq!(resolve(&f.ctx, "a.txt").unwrap(), f.ws().join("a.txt"));
        assert_eq!(
            resolve(&f.ctx, "./sub/../a.txt").unwrap(),
            f.ws().join("a.txt")
        );
        assert_eq!(resolve(&f.ctx, ".").unwrap(), f.ws());
        let absolute = f.ws().join("sub/new/file.md");
        assert_eq!(
            resolve(&f.ctx, absolute.to_str().unwrap()).unwrap(),
            absolute
        );
        assert_eq!(resolve(&f.ctx, "").unwrap_err(), "path is empty");
    }

    #[test]
    fn symlinks_inside_the_workspace_resolve_to_their_targets() {
        let f = Fixture::new();
        std::fs::create_dir(f.ws().join("real")).unwrap();
        symlink("real", f.ws().join("alias")).unwrap();
        symlink("real/later.txt", f.ws().join("dangling")).unwrap();
        assert_eq!(
            resolve(&f.ctx, "alias/x.txt").unwrap(),
            f.ws().join("real/x.txt")
        );
        assert_eq!(
            resolve(&f.ctx, "dangling").unwrap(),
            f.ws().join("real/later.txt")
        );
    }

    #[test]
    fn escapes_are_refused_with_the_path_and_the_reason() {
        let f = Fixture::new();
        let ws = f.ws().display().to_string();
        assert_eq!(
            resolve(&f.ctx, "../x").unwrap_err(),
            format!("path \"../x\" is outside the workspace {ws}")
        );
        assert_eq!(
            resolve(&f.ctx, "/etc/passwd").unwrap_err(),
            format!("path \"/etc/passwd\" is outside the workspace {ws}")
        );
        assert_eq!(
            resolve(&f.ctx, "nope/../../x").unwrap_err(),
            "path \"nope/../../x\" is refused: \"..\" may not follow a directory that does not exist"
        );
        symlink(&f.outside, f.ws().join("out")).unwrap();
        assert_eq!(
            resolve(&f.ctx, "out/new.txt").unwrap_err(),
            format!(
                "path \"out/new.txt\" is outside the workspace {ws}: a symlink leads to {}",
                f.outside.join("new.txt").display()
            )
        );
        symlink(f.outside.join("secret.txt"), f.ws().join("file")).unwrap();
        assert_eq!(
            resolve(&f.ctx, "file").unwrap_err(),
            format!(
                "path \"file\" is outside the workspace {ws}: a symlink leads to {}",
                f.outside.join("secret.txt").display()
            )
        );
        symlink("a", f.ws().join("b")).unwrap();
        symlink("b", f.ws().join("a")).unwrap();
        assert!(resolve(&f.ctx, "a").is_err());
    }

    #[test]
    fn a_directory_swapped_for_a_symlink_after_the_check_is_refused_by_the_open() {
        let f = Fixture::new();
        let ws = f.ws().display().to_string();
        std::fs::create_dir(f.ws().join("d")).unwrap();
        std::fs::write(f.ws().join("d/secret.txt"), "inside\n").unwrap();
        let confined = confine(&f.ctx, "d/secret.txt").unwrap();
        assert_eq!(confined.relative, Path::new("d/secret.txt"));
        assert_eq!(confined.real, f.ws().join("d/secret.txt"));
        // Between the check and the open, the directory becomes a symlink to outside: by an
        // absolute target, then by a relative one.
        std::fs::rename(f.ws().join("d"), f.ws().join("d.old")).unwrap();
        for target in [f.outside.clone(), PathBuf::from("../outside")] {
            symlink(&target, f.ws().join("d")).unwrap();
            let error = f.ctx.root.open(confined.beneath()).unwrap_err();
            assert!(led_outside(&error), "{error}");
            assert_eq!(
                open_failed(&f.ctx, "d/secret.txt", &error, |e| e.to_string()),
                format!(
                    "path \"d/secret.txt\" is outside the workspace {ws}: a symlink leads to {}",
                    f.outside.join("secret.txt").display()
                )
            );
            assert!(f.ctx.root.metadata(confined.beneath()).is_err());
            // Swapped back before the message is made: still refused, in general words.
            std::fs::remove_file(f.ws().join("d")).unwrap();
            assert_eq!(
                open_failed(&f.ctx, "d/secret.txt", &error, |e| e.to_string()),
                format!(
                    "path \"d/secret.txt\" is outside the workspace {ws}: a symlink on the way leads out of it"
                )
            );
        }
        // Other failures keep their own words.
        let error = f.ctx.root.open("d/secret.txt").unwrap_err();
        assert!(!led_outside(&error));
        assert_eq!(
            open_failed(&f.ctx, "d/secret.txt", &error, |_| "gone".to_owned()),
            "gone"
        );
        assert_eq!(f.secret(), "secret\n");
    }

    #[test]
    fn the_workspace_itself_is_opened_as_dot() {
        let f = Fixture::new();
        let confined = confine(&f.ctx, ".").unwrap();
        assert_eq!(confined.relative, Path::new(""));
        assert_eq!(confined.beneath(), Path::new("."));
        assert!(f.ctx.root.metadata(confined.beneath()).unwrap().is_dir());
    }

    #[tokio::test]
    async fn absolute_path_outside_is_refused() {
        let f = Fixture::new();
        let secret = f.outside.join("secret.txt").display().to_string();
        let message = f.refused("Read", json!({"path": secret})).await;
        assert_eq!(
            message,
            format!(
                "path \"{secret}\" is outside the workspace {}",
                f.ws().display()
            )
        );
        let new = f.outside.join("new.txt").display().to_string();
        f.refused("Write", json!({"path": new, "content": "x"}))
            .await;
        assert!(!f.outside.join("new.txt").exists());
        f.refused(
            "Edit",
            json!({"path": secret, "old_text": "secret", "new_text": "gone"}),
        )
        .await;
        assert_eq!(f.secret(), "secret\n");
    }

    #[tokio::test]
    async fn parent_dir_escape_is_refused() {
        let f = Fixture::new();
        f.refused("Read", json!({"path": "../outside/secret.txt"}))
            .await;
        f.refused(
            "Write",
            json!({"file_path": "../outside/new.txt", "content": "x"}),
        )
        .await;
        f.refused("Write", json!({"path": "../made/new.txt", "content": "x"}))
            .await;
        f.refused(
            "Write",
            json!({"path": "sub/../../made.txt", "content": "x"}),
        )
        .await;
        f.refused(
            "Edit",
            json!({"path": "../outside/secret.txt", "old_text": "secret", "new_text": "gone"}),
        )
        .await;
        f.refused("Glob", json!({"pattern": "*", "path": ".."}))
            .await;
        f.refused("Grep", json!({"pattern": "secret", "path": "../outside"}))
            .await;
        assert!(!f.outside.join("new.txt").exists());
        assert!(!f.outside.parent().unwrap().join("made").exists());
        assert!(!f.outside.parent().unwrap().join("made.txt").exists());
        assert!(!f.ws().join("sub").exists());
        assert_eq!(f.secret(), "secret\n");
    }

    #[tokio::test]
    async fn symlinked_file_leading_outside_is_refused() {
        let f = Fixture::new();
        symlink(f.outside.join("secret.txt"), f.ws().join("link.txt")).unwrap();
        f.refused("Read", json!({"path": "link.txt"})).await;
        f.refused("Write", json!({"path": "link.txt", "content": "pwned"}))
            .await;
        f.refused(
            "Edit",
            json!({"path": "link.txt", "old_text": "secret", "new_text": "pwned"}),
        )
        .await;
        assert_eq!(f.secret(), "secret\n");
        // Grep does not follow the link either.
        let out = run("Grep", &json!({"pattern": "secret"}), &f.ctx).await;
        assert!(!out.content.contains("link.txt"), "{out:?}");
    }

    #[tokio::test]
    async fn dangling_symlink_leading_outside_is_refused() {
        let f = Fixture::new();
        symlink(f.outside.join("planted.txt"), f.ws().join("trap.txt")).unwrap();
        f.refused("Write", json!({"path": "trap.txt", "content": "x"}))
            .await;
        assert!(!f.outside.join("planted.txt").exists());
    }

    #[tokio::test]
    async fn symlinked_directory_leading_outside_is_refused() {
        let f = Fixture::new();
        symlink(&f.outside, f.ws().join("dir")).unwrap();
        f.refused("Read", json!({"path": "dir/secret.txt"})).await;
        f.refused("Read", json!({"path": "dir"})).await;
        f.refused(
            "Write",
            json!({"path": "dir/secret.txt", "content": "pwned"}),
        )
        .await;
        f.refused("Glob", json!({"pattern": "**/*", "path": "dir"}))
            .await;
        f.refused("Grep", json!({"pattern": "secret", "path": "dir"}))
            .await;
        assert_eq!(f.secret(), "secret\n");
        // Walking the workspace does not descend into the link.
        let out = run("Grep", &json!({"pattern": "secret"}), &f.ctx).await;
        assert!(!out.content.contains("secret.txt"), "{out:?}");
        let out = run("Glob", &json!({"pattern": "**/*.txt"}), &f.ctx).await;
        assert!(!out.content.contains("secret.txt"), "{out:?}");
    }

    #[tokio::test]
    async fn new_file_under_a_symlinked_directory_leading_outside_is_refused() {
        let f = Fixture::new();
        symlink(&f.outside, f.ws().join("dir")).unwrap();
        std::fs::create_dir(f.ws().join("inner")).unwrap();
        symlink(&f.outside, f.ws().join("inner/deeper")).unwrap();
        f.refused("Write", json!({"path": "dir/new.txt", "content": "x"}))
            .await;
        f.refused("Write", json!({"path": "dir/sub/new.txt", "content": "x"}))
            .await;
        f.refused(
            "Write",
            json!({"path": "inner/deeper/sub/new.txt", "content": "x"}),
        )
        .await;
        assert!(!f.outside.join("new.txt").exists());
        assert!(!f.outside.join("sub").exists());
    }
}

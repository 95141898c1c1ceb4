//! Workspace confinement: turns a path an agent gave into a real path inside the workspace, or
//! refuses it with a message that names the path and says why.
//!
//! The check runs on the real path, after following symlinks, so a link inside the workspace that
//! leads out of it is refused. A path that does not exist yet is checked through the real path of
//! its nearest existing ancestor; the parts below that may not contain `..` (the kernel would
//! resolve them against directories that do not exist yet, which cannot be checked).

use std::io::ErrorKind;
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

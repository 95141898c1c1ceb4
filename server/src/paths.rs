//! Paths taken apart by name, without the file system.

use std::path::{Component, Path, PathBuf};

/// `path` with `.` and `..` resolved by name (symlinks are not followed: a `..` after one goes up
/// from the link's name, not from its target).
pub fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_are_resolved_by_name() {
        assert_eq!(lexical(Path::new("/a/./b/../c")), Path::new("/a/c"));
        assert_eq!(lexical(Path::new("/a/..")), Path::new("/"));
        assert_eq!(lexical(Path::new("a/b/../../c")), Path::new("c"));
    }
}

//! The directories Bash may read and run programs from because the environment it is given
//! names them: every directory on its `PATH`, and the toolchain homes the usual variables name
//! (`CARGO_HOME`, `RUSTUP_HOME`, `GOPATH`…), wherever they are. The fixed lists (the system's
//! directories, the usual names under the home) miss a toolchain installed elsewhere, as on CI
//! machines and in containers, and `cargo` then fails with "Permission denied". Read only.
//!
//! An entry that would open too much is left out, and the task says so once: an empty or
//! relative `PATH` entry (it names whatever directory Bash is in), `/`, and the home directory or
//! a directory above it (the home's secrets: `~/.ssh`, the keys in `~/.config`).
//!
//! The environment comes in as a function, so tests give one of their own: rawko's, changed by
//! what SessionStart hooks wrote to `CLAUDE_ENV_FILE`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The variables that name a toolchain's directory. `GOPATH` may be a list, like `PATH`.
pub const TOOLCHAIN_VARS: &[&str] = &[
    "CARGO_HOME",
    "RUSTUP_HOME",
    "GOPATH",
    "GOMODCACHE",
    "GOROOT",
    "NVM_DIR",
    "PYENV_ROOT",
    "RBENV_ROOT",
    "VOLTA_HOME",
    "BUN_INSTALL",
    "DENO_DIR",
    "NPM_CONFIG_PREFIX",
    "npm_config_prefix",
    "JAVA_HOME",
    "SDKMAN_DIR",
    "CONDA_PREFIX",
    "VIRTUAL_ENV",
];

/// What the environment adds to what Bash may read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolchainDirs {
    /// Directories Bash may read and run programs from (canonical, each once).
    pub dirs: Vec<PathBuf>,
    /// The entries left out because they would open too much, as `NAME entry`, for the note.
    pub left_out: Vec<String>,
}

impl ToolchainDirs {
    /// The directories `PATH` and [`TOOLCHAIN_VARS`] name in `env`; `home` is the user's home,
    /// which no entry may open whole. Entries that do not exist are skipped (there is nothing to
    /// read); so are the rest of a variable that is not a list of paths.
    pub fn from_env(env: impl Fn(&str) -> Option<OsString>, home: Option<&Path>) -> Self {
        let home = home.and_then(|h| h.canonicalize().ok());
        let mut out = ToolchainDirs::default();
        for name in std::iter::once("PATH").chain(TOOLCHAIN_VARS.iter().copied()) {
            let Some(value) = env(name) else { continue };
            // Only PATH and GOPATH are lists; a `:` in another is part of its one path.
            let entries: Vec<PathBuf> = if matches!(name, "PATH" | "GOPATH") {
                std::env::split_paths(&value).collect()
            } else {
                vec![PathBuf::from(value)]
            };
            for entry in entries {
                if name != "PATH" && entry.as_os_str().is_empty() {
                    continue;
                }
                match admit(&entry, home.as_deref()) {
                    Admit::Dir(dir) => {
                        if !out.dirs.contains(&dir) {
                            out.dirs.push(dir);
                        }
                    }
                    Admit::TooMuch => {
                        let shown = if entry.as_os_str().is_empty() {
                            "\"\"".to_owned()
                        } else {
                            entry.display().to_string()
                        };
                        let text = format!("{name} entry {shown}");
                        if !out.left_out.contains(&text) {
                            out.left_out.push(text);
                        }
                    }
                    Admit::Missing => {}
                }
            }
        }
        out
    }

    /// What the task says once when entries were left out.
    pub fn note(&self) -> Option<String> {
        (!self.left_out.is_empty()).then(|| {
            format!(
                "Bash's sandbox does not open {}: it would open too much (the whole file system, the home directory, or whatever directory a command is in). Programs there run only where the sandbox allows reading anyway; add a narrower directory to \"sandbox\": {{\"allowRead\": […]}} in ~/.config/rawko/config.json if one is needed.",
                self.left_out.join(", ")
            )
        })
    }
}

enum Admit {
    Dir(PathBuf),
    TooMuch,
    Missing,
}

/// Whether `entry` may be opened to Bash: an absolute directory that is neither `/` nor the
/// home directory nor above it.
fn admit(entry: &Path, home: Option<&Path>) -> Admit {
    if !entry.is_absolute() {
        return Admit::TooMuch;
    }
    let Ok(dir) = entry.canonicalize() else {
        return Admit::Missing;
    };
    if !dir.is_dir() {
        return Admit::Missing;
    }
    let too_much = dir.parent().is_none() || home.is_some_and(|h| h.starts_with(&dir));
    if too_much {
        Admit::TooMuch
    } else {
        Admit::Dir(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, String)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn path_and_toolchain_variables_name_readable_directories() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let (home, tools, cargo, go1, go2) = (
            root.join("home"),
            root.join("tools/bin"),
            root.join("ci/cargo"),
            root.join("go1"),
            root.join("go2"),
        );
        for d in [&home, &tools, &cargo, &go1, &go2] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::os::unix::fs::symlink(&tools, root.join("linked")).unwrap();
        let pairs = [
            (
                "PATH",
                format!(
                    "{}::/:relative/bin:{}:{}:{}:{}/missing:{}/..",
                    tools.display(),
                    home.display(),
                    root.join("linked").display(),
                    root.display(),
                    root.display(),
                    home.display(),
                ),
            ),
            ("CARGO_HOME", cargo.display().to_string()),
            ("RUSTUP_HOME", home.display().to_string()),
            ("GOPATH", format!("{}:{}", go1.display(), go2.display())),
            ("JAVA_HOME", String::new()),
            ("UNRELATED", "/srv".to_owned()),
        ];
        let found = ToolchainDirs::from_env(env(&pairs), Some(&home));
        assert_eq!(found.dirs, vec![tools, cargo, go1, go2]);
        assert_eq!(
            found.left_out,
            vec![
                "PATH entry \"\"".to_owned(),
                "PATH entry /".to_owned(),
                "PATH entry relative/bin".to_owned(),
                format!("PATH entry {}", home.display()),
                format!("PATH entry {}", root.display()),
                format!("PATH entry {}/..", home.display()),
                format!("RUSTUP_HOME entry {}", home.display()),
            ]
        );
        let note = found.note().unwrap();
        assert!(
            note.starts_with("Bash's sandbox does not open PATH entry \"\", PATH entry /, "),
            "{note}"
        );
        assert_eq!(
            ToolchainDirs::from_env(env(&[]), None),
            ToolchainDirs::default()
        );
        assert_eq!(ToolchainDirs::default().note(), None);
    }
}

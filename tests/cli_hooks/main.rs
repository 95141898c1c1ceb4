//! `rawko config`, `rawko trust`, `rawko sessions` and `rawko run` with hooks, as a user runs them:
//! the real binary, HOME and the XDG directories in a temporary directory, real git repositories
//! with a bare repository as the remote.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};
use tempfile::TempDir;

mod config_set;
mod config_show;
mod git_config;
mod run;
mod trust_and_sessions;

struct Sandbox {
    _tmp: TempDir,
    root: PathBuf,
}

impl Sandbox {
    fn new() -> Self {
        let tmp = TempDir::new().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join("project")).expect("mkdir");
        Sandbox { _tmp: tmp, root }
    }

    fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn user_config_file(&self) -> PathBuf {
        self.home().join(".config/rawko/config.json")
    }

    fn workspace_config_file(&self) -> PathBuf {
        self.project().join(".rawko/config.json")
    }

    /// AutoAgent's config in the workspace, read for its hooks.
    fn autoagent_config_file(&self) -> PathBuf {
        self.project().join(".autoagent/config.json")
    }

    fn sessions_dir(&self) -> PathBuf {
        self.home().join(".local/state/rawko/sessions")
    }

    fn trust_file(&self) -> PathBuf {
        self.home().join(".config/rawko/trusted-workspaces.json")
    }

    fn command(&self, args: &[&str]) -> Command {
        let home = self.home();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rawko"));
        cmd.args(args)
            .current_dir(self.project())
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("PI_CODING_AGENT_DIR", home.join(".pi"))
            // The git hooks commit as this user; no system or user git config is read.
            .env("GIT_AUTHOR_NAME", "Rawko Test")
            .env("GIT_AUTHOR_EMAIL", "rawko-test@example.invalid")
            .env("GIT_COMMITTER_NAME", "Rawko Test")
            .env("GIT_COMMITTER_EMAIL", "rawko-test@example.invalid")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("RUST_LOG")
            .env_remove("RAWKO_LOG")
            // Not a terminal: rawko cannot ask, and says so.
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run rawko")
    }

    /// Runs rawko, expects exit 0, returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}:\n{}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn ok_json(&self, args: &[&str]) -> Value {
        let stdout = self.ok(args);
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{args:?}: {e}:\n{stdout}"))
    }

    fn write(&self, path: &Path, content: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }

    fn write_json(&self, path: &Path, value: &Value) {
        self.write(path, &serde_json::to_string_pretty(value).expect("json"));
    }

    /// A script of model turns outside the project (so a commit does not pick it up).
    fn script(&self, name: &str, yaml: &str) -> String {
        let path = self.root.join(format!("{name}.yaml"));
        self.write(&path, yaml);
        path.display().to_string()
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}:\n{text}", path.display()))
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The project as a git repository on `main` with one commit, and a bare `origin` that has it.
fn git_project(sb: &Sandbox) -> PathBuf {
    let bare = sb.root.join("remote.git");
    std::fs::create_dir_all(&bare).expect("mkdir");
    git(&bare, &["init", "-q", "--bare", "-b", "main"]);
    let p = sb.project();
    git(&p, &["init", "-q", "-b", "main"]);
    git(&p, &["config", "user.name", "Rawko Test"]);
    git(&p, &["config", "user.email", "rawko-test@example.invalid"]);
    git(&p, &["config", "commit.gpgsign", "false"]);
    sb.write(&p.join("README.md"), "# a project\n");
    git(&p, &["add", "-A"]);
    git(&p, &["commit", "-q", "-m", "initial"]);
    git(
        &p,
        &["remote", "add", "origin", bare.to_str().expect("utf-8")],
    );
    git(&p, &["push", "-q", "origin", "main"]);
    bare
}

const DONE: &str = "turns:\n  - text: \"All done.\"\n";

const WRITE_THEN_DONE: &str = r#"
turns:
  - tool_calls:
      - {name: Write, input: {path: greet.txt, content: "hello\n"}}
  - text: "Wrote the greeting."
"#;

// --- rawko config -----------------------------------------------------------------------------

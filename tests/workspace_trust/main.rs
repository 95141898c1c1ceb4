//! A workspace's settings that choose what runs or where keys go (`providers`, `arbiter`,
//! `apiKeys` in `.rawko/config.json`) apply only once the user trusted the workspace with exactly
//! them: an agent's Write of that file must not make the user's next task start a command of its
//! choosing or send the user's key to a base URL of its choosing. Through every face: `rawko run`,
//! `rawko trust` and `rawko config show` (run.rs), the editor (editor.rs), `rawko acp` (acp.rs).
//! The models are loopback fakes of the Anthropic API; the "agents" are marker scripts.

#[path = "../support/mod.rs"]
mod support;

mod acp;
mod editor;
mod run;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use support::fake_anthropic::{FakeAnthropic, Turn};
use tempfile::TempDir;

/// The user's own key, in the environment.
const USERS_KEY: &str = "sk-ant-the-users-own-key-0001";

/// A project and a home directory of their own.
struct Sandbox {
    _tmp: TempDir,
    root: PathBuf,
}

impl Sandbox {
    fn new() -> Self {
        let tmp = TempDir::new().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join("project")).expect("mkdir");
        std::fs::create_dir_all(root.join("home")).expect("mkdir");
        let sb = Sandbox { _tmp: tmp, root };
        sb.write("README.md", "# a project\n");
        sb
    }

    fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn write(&self, rel: &str, content: &str) {
        let path = self.project().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }

    /// The workspace's `.rawko/config.json`, as an agent with Write would leave it.
    fn workspace_config(&self, config: serde_json::Value) {
        self.write(".rawko/config.json", &config.to_string());
    }

    /// The workspace's config file, as rawko names it.
    fn config_file(&self) -> String {
        self.project()
            .join(".rawko/config.json")
            .display()
            .to_string()
    }

    /// A script outside the workspace that leaves `marker` when it runs (an "agent" that must
    /// not start unless the user trusted the setting that names it). The marker is in the
    /// workspace: a trusted agent runs confined, and may write only there.
    fn marker_script(&self, name: &str) -> (PathBuf, PathBuf) {
        let marker = self.project().join(format!("{name}.ran"));
        let script = self.root.join(format!("{name}.sh"));
        std::fs::write(
            &script,
            format!("#!/bin/sh\ntouch '{}'\nexit 1\n", marker.display()),
        )
        .expect("script");
        let mut perms = std::fs::metadata(&script).expect("meta").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
        std::fs::set_permissions(&script, perms).expect("chmod");
        (script, marker)
    }

    /// `rawko ARGS…` in the project, with no terminal, the user's key in the environment and
    /// `ANTHROPIC_BASE_URL` (the user's own setting) at `users_api`, if given.
    fn command(&self, args: &[&str], users_api: Option<&str>) -> Command {
        let home = self.home();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rawko"));
        cmd.args(args)
            .current_dir(self.project())
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("XDG_RUNTIME_DIR", home.join("run"))
            .env("PI_CODING_AGENT_DIR", home.join(".pi"))
            .env_remove("OPENAI_API_KEY")
            .env_remove("ANTHROPIC_BASE_URL")
            .env_remove("RAWKO_LOG")
            .stdin(Stdio::null());
        match users_api {
            Some(url) => cmd
                .env("ANTHROPIC_API_KEY", USERS_KEY)
                .env("ANTHROPIC_BASE_URL", url),
            None => cmd.env_remove("ANTHROPIC_API_KEY"),
        };
        cmd
    }

    fn run(&self, args: &[&str], users_api: Option<&str>) -> Output {
        self.command(args, users_api).output().expect("run rawko")
    }

    /// `rawko trust`, which must succeed; its stdout.
    fn trust(&self) -> String {
        let out = self.run(&["trust"], None);
        assert!(out.status.success(), "{}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A fake Anthropic API whose model says `words` and stops.
fn fake_model(words: &'static str) -> FakeAnthropic {
    FakeAnthropic::start(move |_| Turn::text(words))
}

/// The `x-api-key` of every request `api` received.
fn keys_seen(api: &FakeAnthropic) -> Vec<String> {
    api.requests()
        .iter()
        .map(|r| r.header("x-api-key").unwrap_or("(none)").to_owned())
        .collect()
}

/// Waits (at most 20 s) until `path` exists.
fn wait_for_file(path: &Path) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        if path.exists() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

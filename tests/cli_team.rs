//! The team's commands (`rawko worker`, `rawko submit`, `rawko tasks list | show --nats`) as a
//! new user tries them wrongly: each says what is wrong and how to do it, with exit status 2 for
//! a command line that cannot run, and never touches NATS for it. Where NATS is comes from the
//! command line or the user's config (`team.nats`), never from the workspace's
//! `.rawko/config.json`. (scripts/test-team.sh runs the commands for real on a cluster.)

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

struct Sandbox {
    _tmp: TempDir,
    ws: PathBuf,
    home: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let tmp = TempDir::new().unwrap();
        let ws = tmp.path().join("ws");
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        Sandbox {
            ws,
            home,
            _tmp: tmp,
        }
    }

    fn rawko(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_rawko"))
            .args(args)
            .arg("--workspace")
            .arg(&self.ws)
            .current_dir(&self.ws)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_STATE_HOME", self.home.join(".state"))
            .env_remove("RAWKO_LOG")
            .output()
            .unwrap()
    }

    fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn commands_without_nats_say_where_to_give_it() {
    let sb = Sandbox::new();
    for args in [&["submit", "a task"][..], &["worker"][..]] {
        let out = sb.rawko(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("--nats URL") && err.contains("team.nats.url"),
            "{args:?}: {err}"
        );
    }
    // Without --nats, `tasks list` is the local store's, as before.
    let out = sb.rawko(&["tasks", "list"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

#[test]
fn a_workspace_config_never_names_the_teams_nats() {
    let sb = Sandbox::new();
    // The agent may write the workspace: its config is not where NATS comes from.
    sb.write(
        &sb.ws.join(".rawko/config.json"),
        r#"{"team": {"nats": {"url": "nats://attacker.example:4222"}}}"#,
    );
    let out = sb.rawko(&["submit", "a task"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("say where the team's NATS is"),
        "{}",
        stderr(&out)
    );
    // The user's config is.
    sb.write(
        &sb.home.join(".config/rawko/config.json"),
        r#"{"team": {"nats": "nats://x"}}"#,
    );
    let out = sb.rawko(&["submit", "a task"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("team.nats must be an object"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_values_are_named() {
    let sb = Sandbox::new();
    let cases: &[(&[&str], &str)] = &[
        (
            &["submit", "  ", "--nats", "nats://127.0.0.1:1"],
            "say what the task is",
        ),
        (&["submit", "t", "--nats", " , "], "no NATS URL given"),
        (
            &[
                "submit",
                "t",
                "--nats",
                "nats://127.0.0.1:1",
                "--script",
                "missing.yaml",
                "--repo",
                "x",
            ],
            "cannot read the script",
        ),
        (
            &["submit", "t", "--nats", "nats://127.0.0.1:1"],
            "is not a clone with an `origin` remote",
        ),
        (
            &["worker", "--nats", "nats://127.0.0.1:1"],
            "is not a git clone",
        ),
        (
            &["worker", "--nats", "nats://127.0.0.1:1", "--max-tasks", "0"],
            "--max-tasks must be 1 to 64",
        ),
        (
            &["worker", "--nats", "nats://127.0.0.1:1", "--ack-wait", "1"],
            "--ack-wait must be 2 to 3600",
        ),
        (
            &["tasks", "show", "../x", "--nats", "nats://127.0.0.1:1"],
            "is not a task id",
        ),
    ];
    std::fs::create_dir_all(sb.ws.join(".git")).unwrap();
    for (args, want) in cases {
        // `worker … is not a git clone` needs a folder without .git.
        let is_clone_case = want.contains("not a git clone");
        if is_clone_case {
            std::fs::remove_dir_all(sb.ws.join(".git")).unwrap();
        }
        let out = sb.rawko(args);
        if is_clone_case {
            std::fs::create_dir_all(sb.ws.join(".git")).unwrap();
        }
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: expected {want:?} in {err}");
    }
    // A worker name that would make a path.
    let out = sb.rawko(&["worker", "--nats", "nats://127.0.0.1:1", "--name", "../w"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--name may hold"), "{}", stderr(&out));
}

#[test]
fn help_explains_the_team_commands() {
    let sb = Sandbox::new();
    for (args, want) in [
        (&["worker", "--help"][..], "rawko/TASK_ID"),
        (&["submit", "--help"][..], "Queue a task for the team"),
        (&["tasks", "list", "--help"][..], "with --nats, the team's"),
        (&["tasks", "show", "--help"][..], "--nats-creds"),
        (&["serve", "--help"][..], "with --nats, the team's"),
        (&["web", "--help"][..], "--nats <URLS>"),
    ] {
        let out = sb.rawko(args);
        assert_eq!(out.status.code(), Some(0));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(want), "{args:?}: {text}");
    }
}

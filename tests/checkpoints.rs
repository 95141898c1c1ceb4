//! Checkpoints as a user meets them: `rawko run` of the starter `feature` workflow with a scripted
//! agent in a real git repository (and in a folder that is none), the `checkpoint` records of
//! its log, `rawko diff` per phase and for the whole task, and what of the user's repository it
//! leaves alone.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;
use tempfile::TempDir;

struct Sandbox {
    _tmp: TempDir,
    root: PathBuf,
}

/// Plan: step on. Implement: a Write, an Edit, a read-only Bash call, a writing one. Then on
/// through Test and the Review subworkflow to the end.
const SCRIPT: &str = r##"
turns:
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: Write, input: {path: feature.txt, content: "a new feature\n"}}
  - tool_calls:
      - {name: Edit, input: {path: README.md, old_string: "# a project", new_string: "# a better project"}}
  - tool_calls:
      - {name: Bash, input: {command: "ls"}}
  - tool_calls:
      - {name: Bash, input: {command: "echo built > built.txt && echo noise > out.log"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "All done."
"##;

impl Sandbox {
    fn new() -> Self {
        let tmp = TempDir::new().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join("project")).expect("mkdir");
        std::fs::create_dir_all(root.join("marks")).expect("mkdir");
        std::fs::create_dir_all(root.join("home")).expect("mkdir");
        std::fs::write(
            root.join("home/.gitconfig"),
            "[user]\n\tname = Ada\n\temail = ada@example.invalid\n[init]\n\tdefaultBranch = main\n",
        )
        .expect("gitconfig");
        let sb = Sandbox { _tmp: tmp, root };
        let init = sb.rawko(&["init"]);
        assert!(init.status.success(), "{init:?}");
        sb.write("README.md", "# a project\n");
        sb.write("s.yaml", SCRIPT);
        sb
    }

    fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    fn write(&self, rel: &str, content: &str) {
        std::fs::write(self.project().join(rel), content).expect("write");
    }

    fn env(&self, cmd: &mut Command) {
        let home = self.root.join("home");
        cmd.current_dir(self.project())
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("PI_CODING_AGENT_DIR", home.join(".pi"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null());
    }

    fn rawko(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rawko"));
        cmd.args(args);
        self.env(&mut cmd);
        cmd.output().expect("run rawko")
    }

    /// The user's git.
    fn git(&self, args: &[&str]) -> String {
        let mut cmd = Command::new("git");
        cmd.args(args);
        self.env(&mut cmd);
        let out = cmd.output().expect("git");
        assert!(out.status.success(), "git {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Runs the script's task through `feature`; its id.
    fn run_task(&self) -> String {
        let out = self.rawko(&[
            "run",
            "Add a feature",
            "--workflow",
            "feature",
            "--script",
            "s.yaml",
            "--yes",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        let tasks = self.root.join("home/.local/state/rawko/tasks");
        let ids: Vec<String> = std::fs::read_dir(&tasks)
            .expect("the task store")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("task-"))
            .collect();
        assert_eq!(ids.len(), 1, "{ids:?}");
        ids[0].clone()
    }

    fn task_dir(&self, id: &str) -> PathBuf {
        self.root.join("home/.local/state/rawko/tasks").join(id)
    }

    /// The `checkpoint` records of the task's log.
    fn checkpoints(&self, id: &str) -> Vec<Value> {
        std::fs::read_to_string(self.task_dir(id).join("events.jsonl"))
            .expect("the log")
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("a record"))
            .map(|r| r["event"].clone())
            .filter(|e| e["type"] == "checkpoint")
            .collect()
    }

    /// A script that leaves `name` in the marks folder when it runs.
    fn marker_script(&self, name: &str) -> String {
        let script = self.root.join("marks").join(format!("{name}.sh"));
        let mark = self.root.join("marks").join(name);
        std::fs::write(
            &script,
            format!("#!/bin/sh\ntouch '{}'\ncat\n", mark.display()),
        )
        .expect("script");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        script.display().to_string()
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The files a diff names, as `a/PATH` headers.
fn diffed(diff: &str) -> Vec<String> {
    diff.lines()
        .filter_map(|l| l.strip_prefix("diff --git a/"))
        .map(|l| l.split(" b/").next().unwrap_or_default().to_owned())
        .collect()
}

fn users(sb: &Sandbox) -> (String, Vec<u8>, String, String) {
    (
        sb.git(&["rev-parse", "HEAD"]),
        std::fs::read(sb.project().join(".git/index")).expect("the index"),
        sb.git(&["for-each-ref", "refs/heads", "refs/tags"]),
        sb.git(&["stash", "list"]),
    )
}

#[test]
fn a_task_in_a_git_repository_checkpoints_each_phase_and_write_and_diffs_them() {
    let sb = Sandbox::new();
    sb.write(".gitignore", "*.log\nsecret.env\n");
    sb.write("secret.env", "KEY=1\n");
    sb.git(&["init", "-q"]);
    sb.git(&["add", "-A"]);
    sb.git(&["commit", "-qm", "initial"]);
    // The user's own work: a branch, a stash, a staged change.
    sb.git(&["branch", "topic"]);
    sb.write("notes.txt", "stashed\n");
    sb.git(&["add", "notes.txt"]);
    sb.git(&["stash", "-q"]);
    sb.write("staged.txt", "staged\n");
    sb.git(&["add", "staged.txt"]);
    // The repository's config (the agent's to write) names programs: none may run.
    let fsmonitor = sb.marker_script("fsmonitor");
    let filter = sb.marker_script("filter");
    sb.git(&["config", "core.fsmonitor", &fsmonitor]);
    sb.git(&["config", "filter.evil.clean", &filter]);
    sb.git(&["config", "diff.evil.textconv", &filter]);
    std::fs::write(
        sb.project().join(".git/info/attributes"),
        "*.txt filter=evil diff=evil\n*.md filter=evil diff=evil\n",
    )
    .expect("attributes");
    let before = users(&sb);

    let id = sb.run_task();

    // A checkpoint at each phase's entry (Plan, Implement, Test, Static Analysis, Peer Review)
    // and after each call that wrote (the Write, the Edit, the writing Bash call): not after `ls`.
    let cps = sb.checkpoints(&id);
    let got: Vec<(String, Value)> = cps
        .iter()
        .map(|c| {
            (
                c["reason"].as_str().unwrap_or_default().to_owned(),
                c["phaseIndex"].clone(),
            )
        })
        .collect();
    let want: Vec<(String, Value)> = [
        ("phase_entered", 0),
        ("phase_entered", 1),
        ("tool_call", 1),
        ("tool_call", 1),
        ("tool_call", 1),
        ("phase_entered", 2),
        ("phase_entered", 3),
        ("phase_entered", 4),
    ]
    .iter()
    .map(|(r, i)| (r.to_string(), Value::from(*i)))
    .collect();
    assert_eq!(got, want, "{cps:#?}");
    for c in &cps {
        assert_eq!(c["repository"], "workspace");
        assert_eq!(c["commit"].as_str().map(str::len), Some(40));
    }
    assert_eq!(cps[0]["phase"], "Plan");
    assert!(cps[2]["toolCallId"].is_string());
    // `rawko tasks show` lists them.
    let show = stdout(&sb.rawko(&["tasks", "show", &id]));
    assert_eq!(show.matches("  checkpoint  ").count(), cps.len(), "{show}");

    // What each phase changed.
    let implement = sb.rawko(&["diff", &id, "--phase", "implement"]);
    assert_eq!(implement.status.code(), Some(0), "{}", text(&implement));
    let shown = stdout(&implement);
    assert_eq!(
        diffed(&shown),
        ["README.md", "built.txt", "feature.txt"],
        "{shown}"
    );
    assert!(shown.contains("+# a better project"), "{shown}");
    assert!(shown.contains("+a new feature"), "{shown}");
    let by_name = sb.rawko(&["diff", &id, "--phase", "IMPLEMENT"]);
    let by_number = sb.rawko(&["diff", &id, "--phase", "2"]);
    assert_eq!(stdout(&by_name), shown);
    assert_eq!(stdout(&by_number), shown);
    for quiet in ["plan", "test", "peer-review"] {
        let out = sb.rawko(&["diff", &id, "--phase", quiet]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert_eq!(stdout(&out), "", "{quiet} changed something");
    }
    let whole = sb.rawko(&["diff", &id, "--json"]);
    let whole: Value = serde_json::from_slice(&whole.stdout).expect("json");
    let files: Vec<(String, String)> = whole["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_owned(),
                f["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("README.md", "modified"),
        ("built.txt", "added"),
        ("feature.txt", "added"),
    ]
    .map(|(p, s)| (p.to_owned(), s.to_owned()));
    assert_eq!(files, expected);
    assert_eq!(whole["from"], cps[0]["commit"]);
    assert_eq!(whole["to"], cps[cps.len() - 1]["commit"]);

    // Nothing of the user's changed, the ignored files are in no checkpoint, nothing ran.
    assert_eq!(
        users(&sb),
        before,
        "HEAD, the index, the branches or the stash changed"
    );
    for c in &cps {
        let tree = sb.git(&[
            "ls-tree",
            "-r",
            "--name-only",
            c["commit"].as_str().unwrap(),
        ]);
        assert!(
            !tree.contains("out.log") && !tree.contains("secret.env"),
            "{tree}"
        );
    }
    let latest = sb.git(&["rev-parse", &format!("refs/rawko/tasks/{id}/latest")]);
    assert_eq!(Value::from(latest), cps[cps.len() - 1]["commit"]);
    let phase1 = sb.git(&["rev-parse", &format!("refs/rawko/tasks/{id}/phase-1")]);
    assert_eq!(Value::from(phase1), cps[1]["commit"]);
    for mark in ["fsmonitor", "filter"] {
        assert!(
            !sb.root.join("marks").join(mark).exists(),
            "the repository's {mark} ran"
        );
    }

    // Helpful errors.
    let unknown_phase = sb.rawko(&["diff", &id, "--phase", "deploy"]);
    assert_eq!(unknown_phase.status.code(), Some(2));
    let err = String::from_utf8_lossy(&unknown_phase.stderr);
    assert!(
        err.contains("has no phase \"deploy\"") && err.contains("2 implement (Implement)"),
        "{err}"
    );
    let unknown_task = sb.rawko(&["diff", "task-0-0"]);
    assert_eq!(unknown_task.status.code(), Some(1));
    let err = String::from_utf8_lossy(&unknown_task.stderr);
    assert!(err.contains("unknown task \"task-0-0\""), "{err}");
}

#[test]
fn a_workspace_outside_git_gets_a_private_repository() {
    let sb = Sandbox::new();
    let id = sb.run_task();
    let cps = sb.checkpoints(&id);
    assert_eq!(cps.len(), 8, "{cps:#?}");
    assert!(cps.iter().all(|c| c["repository"] == "private"));
    assert!(sb.task_dir(&id).join("checkpoints.git/HEAD").is_file());
    assert!(
        !sb.project().join(".git").exists(),
        "the workspace became a repository"
    );
    let out = sb.rawko(&["diff", &id, "--phase", "implement"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        diffed(&stdout(&out)),
        ["README.md", "built.txt", "feature.txt", "out.log"]
    );
}

#[test]
fn a_task_without_checkpoints_says_so() {
    let sb = Sandbox::new();
    let dir = sb.task_dir("task-1-1");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let started = serde_json::json!({"v": 1, "seq": 1, "at": 0, "event": {"type": "started",
        "taskId": "task-1-1", "description": "old", "workflow": null,
        "workspace": sb.project(), "provider": {"name": "scripted"}, "startedAt": 0}});
    std::fs::write(dir.join("events.jsonl"), format!("{started}\n")).expect("log");
    let out = sb.rawko(&["diff", "task-1-1"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("task \"task-1-1\" has no checkpoints"),
        "{err}"
    );
}

#[test]
fn diff_explains_itself() {
    let sb = Sandbox::new();
    let out = sb.rawko(&["diff", "--help"]);
    let help = stdout(&out);
    for needle in [
        "--phase <PHASE>",
        "file name without .md",
        "docs/checkpoints.md",
    ] {
        assert!(help.contains(needle), "{help}");
    }
}

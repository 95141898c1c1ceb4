//! `rawko run` as a user runs it: the real binary in a project directory, a scripted provider,
//! the terminal output, the exit status, Ctrl-C, and `--resume`.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

struct Sandbox {
    _tmp: TempDir,
    root: PathBuf,
}

impl Sandbox {
    fn new() -> Self {
        let tmp = TempDir::new().expect("tempdir");
        let root = tmp.path().to_owned();
        std::fs::create_dir_all(root.join("project")).expect("mkdir");
        let sb = Sandbox { _tmp: tmp, root };
        let init = sb.command(&["init"]).output().expect("rawko init");
        assert!(init.status.success(), "{init:?}");
        sb.write("README.md", "# a project\n");
        sb
    }

    fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    fn write(&self, rel: &str, content: &str) {
        let path = self.project().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }

    fn command(&self, args: &[&str]) -> Command {
        let home = self.root.join("home");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rawko"));
        cmd.args(args)
            .current_dir(self.project())
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("PI_CODING_AGENT_DIR", home.join(".pi"))
            // A developer's real keys would pick a provider by default (docs/providers.md).
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run rawko")
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

const FEATURE: &str = r#"
turns:
  - text: "Reading."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - tool_calls:
      - {name: Write, input: {path: plan.md, content: "x"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "All done."
"#;

#[test]
fn a_scripted_task_runs_to_completion_and_exits_0() {
    let sb = Sandbox::new();
    sb.write("s.yaml", FEATURE);
    let out = sb.run(&[
        "run",
        "Add a flag",
        "--workflow",
        "feature",
        "--script",
        "s.yaml",
        "--deny",
    ]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    for needle in [
        "▶ Feature > 📋 Plan [1/4]",
        "🔒 Write is blocked in the Plan phase",
        "denied",
        "▶ Feature > Review [4/4] > 👀 Peer Review [2/2]",
        "✅ **Feature Complete**",
    ] {
        assert!(shown.contains(needle), "missing {needle:?}:\n{shown}");
    }
    assert!(
        !sb.project().join("plan.md").exists(),
        "the denied Write ran"
    );
}

#[test]
fn yes_allows_blocked_calls() {
    let sb = Sandbox::new();
    sb.write("s.yaml", FEATURE);
    let out = sb.run(&[
        "run",
        "Add a flag",
        "--workflow",
        "feature",
        "--script",
        "s.yaml",
        "--yes",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(sb.project().join("plan.md").exists(), "{}", text(&out));
}

#[test]
fn without_a_terminal_or_a_flag_blocked_calls_are_denied_and_said_so() {
    let sb = Sandbox::new();
    sb.write("s.yaml", FEATURE);
    let out = sb.run(&[
        "run",
        "Add a flag",
        "--workflow",
        "feature",
        "--script",
        "s.yaml",
    ]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("no terminal to ask on"), "{shown}");
    assert!(!sb.project().join("plan.md").exists());
}

#[test]
fn a_failed_task_exits_1() {
    let sb = Sandbox::new();
    sb.write("s.yaml", "turns:\n  - error: authentication_failed\n");
    let out = sb.run(&["run", "Do it", "--script", "s.yaml"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(shown.contains("authentication_failed"), "{shown}");
}

#[test]
fn bad_arguments_are_clear() {
    let sb = Sandbox::new();
    sb.write("s.yaml", "turns: []\n");
    let cases: [(&[&str], i32, &str); 5] = [
        (&["run"], 2, "say what the task is"),
        (&["run", "x"], 2, "no provider"),
        (
            &["run", "x", "--script", "s.yaml", "--workflow", "nope"],
            1,
            "unknown workflow \"nope\"; available: feature",
        ),
        (
            &["run", "x", "--script", "s.yaml", "--agent", "nobody"],
            1,
            "unknown agent \"nobody\"",
        ),
        (&["run", "x", "--script", "missing.yaml"], 1, "missing.yaml"),
    ];
    for (args, code, needle) in cases {
        let out = sb.run(args);
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {shown}");
        assert!(
            shown.contains(needle),
            "{args:?}: missing {needle:?}:\n{shown}"
        );
    }
    let out = sb.run(&["run", "x", "--yes", "--deny", "--script", "s.yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

fn wait_for_output(child: &mut Child, needle: &str) -> String {
    let mut stdout = child.stdout.take().expect("stdout");
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        let n = stdout.read(&mut buf).expect("read");
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
        if String::from_utf8_lossy(&seen).contains(needle) {
            child.stdout = Some(stdout);
            return String::from_utf8_lossy(&seen).into_owned();
        }
    }
    panic!(
        "{needle:?} never appeared in:\n{}",
        String::from_utf8_lossy(&seen)
    );
}

fn task_id(text: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix("task "))
        .expect("the task id line")
        .trim()
        .to_owned()
}

fn interrupt(child: &Child) {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(status.success());
}

#[test]
fn ctrl_c_cancels_cleanly_with_exit_130() {
    let sb = Sandbox::new();
    sb.write(
        "s.yaml",
        "turns:\n  - text: \"Thinking…\"\n    delay_ms: 60000\n",
    );
    let mut child = sb
        .command(&["run", "Think long", "--script", "s.yaml"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let seen = wait_for_output(&mut child, "task ");
    let id = task_id(&seen);
    // The task is running once its id is out; the interrupt goes to the whole process.
    interrupt(&child);
    let out = child.wait_with_output().expect("wait");
    let shown = format!("{seen}{}", text(&out));
    assert_eq!(out.status.code(), Some(130), "{shown}");
    assert!(shown.contains("cancelling the task"), "{shown}");
    let list = sb.run(&["tasks", "list"]);
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(
        listed.contains(&id) && listed.contains("cancelled"),
        "{listed}"
    );
}

#[test]
fn resume_continues_an_interrupted_task() {
    let sb = Sandbox::new();
    // The first run is killed while the model "thinks" about its second turn: the log has the
    // first turn and its finished tool call.
    let script = "turns:\n  - tool_calls:\n      - {name: Bash, input: {command: \"echo one >> ledger.txt\"}}\n  - text: \"Thought it over.\"\n    delay_ms: 1500\n    tool_calls:\n      - {name: Bash, input: {command: \"echo two >> ledger.txt\"}}\n  - text: \"Done.\"\n";
    sb.write("s.yaml", script);
    let mut child = sb
        // The built-in agent: `rawko init`'s planner would refuse `echo`.
        .command(&[
            "run",
            "Two steps",
            "--script",
            "s.yaml",
            "--agent",
            "default",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let seen = wait_for_output(&mut child, "↳");
    let id = task_id(&seen);
    child.kill().expect("kill -9");
    let _ = child.wait();
    let listed = sb.run(&["tasks", "list"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("interrupted"),
        "{}",
        text(&listed)
    );
    // The second turn was not recorded, so the resumed task plays it; the first call is not rerun.
    let out = sb.run(&["run", "--resume", &id]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("resuming task"), "{shown}");
    let ledger = std::fs::read_to_string(sb.project().join("ledger.txt")).expect("ledger");
    assert_eq!(ledger, "one\ntwo\n", "each Bash call ran once:\n{shown}");
    let again = sb.run(&["run", "--resume", &id]);
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again).contains("already finished"),
        "{}",
        text(&again)
    );
}

/// Without a workflow the starter agents run the task in turn (planner, developer, tester,
/// reviewer): each new agent is announced by a handoff line between their turns, the first one
/// by none.
#[test]
fn agents_taking_over_are_separated_by_handoff_lines() {
    let sb = Sandbox::new();
    sb.write(
        "s.yaml",
        "turns:\n  - text: \"Planned.\"\n  - text: \"Coded.\"\n  - text: \"Tested.\"\n  - text: \"Reviewed.\"\n",
    );
    let out = sb.run(&["run", "Add a flag", "--script", "s.yaml"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("🤖") || l.contains("handoff"))
        .collect();
    assert_eq!(
        lines,
        [
            "  🤖 Planned.",
            "  ── handoff: planner → developer ──",
            "  🤖 Coded.",
            "  ── handoff: developer → tester ──",
            "  🤖 Tested.",
            "  ── handoff: tester → reviewer ──",
            "  🤖 Reviewed.",
        ],
        "{shown}"
    );
}

/// A blocked call is told in the user's words: the tool, the phase and what the phase allows.
#[test]
fn a_blocked_call_is_told_with_what_the_phase_allows() {
    let sb = Sandbox::new();
    sb.write("s.yaml", FEATURE);
    let out = sb.run(&[
        "run",
        "Add a flag",
        "--workflow",
        "feature",
        "--script",
        "s.yaml",
        "--deny",
    ]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("  🔒 Write is blocked in the Plan phase (allowed: Read, Glob, Grep)\n"),
        "{shown}"
    );
    assert!(!shown.contains("🔒 [workflow]"), "{shown}");
}

/// A key the user pasted into the task (`rawko run "…"`) stays out of every file the run leaves
/// under the state directory: the log, the snapshot, the history, the transcript and the session
/// file (which keeps the command line).
#[test]
fn a_key_in_the_task_stays_out_of_the_state_directory() {
    let sb = Sandbox::new();
    let key = "sk-ant-pasted-key-0123456789";
    sb.write("s.yaml", "turns:\n  - text: \"Done.\"\n");
    let task = format!("use the key {key} to call the API");
    let out = sb
        .command(&["run", &task, "--script", "s.yaml"])
        .env("ANTHROPIC_API_KEY", key)
        .output()
        .expect("run rawko");
    // The starter agents hand the task on until the script runs out: how it ends is not the
    // point, what it wrote is.
    assert!(out.status.code().is_some(), "{}", text(&out));
    let state = sb.root.join("home/.local/state/rawko");
    let mut dirs = vec![state.clone()];
    let mut files = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => dirs.push(entry.path()),
                Ok(t) if t.is_file() => files.push(entry.path()),
                _ => {}
            }
        }
    }
    assert!(
        files.iter().any(|f| f.ends_with("snapshot.json"))
            && files
                .iter()
                .any(|f| f.to_string_lossy().contains("session-")),
        "{files:?}"
    );
    let leaks: Vec<&PathBuf> = files
        .iter()
        .filter(|f| String::from_utf8_lossy(&std::fs::read(f).unwrap_or_default()).contains(key))
        .collect();
    assert!(leaks.is_empty(), "the key is in {leaks:?}");
}

//! A task keeps the definitions it started with (issue 30): the workflow, every subworkflow and
//! phase file, and the agents are pinned in the store when the task starts, and a task that
//! resumes (`rawko run --resume`, `rawko/resumeTask` after a killed server, ACP `session/load`
//! from another folder) runs under the pinned copies, whatever its agent wrote to the files
//! meanwhile. A changed file is named in the task's output, at the resume and at the end.

mod support;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tempfile::TempDir;

/// A project and a home for `rawko run`, without the starter (each test writes what it needs).
struct Sandbox {
    _tmp: TempDir,
    root: PathBuf,
}

impl Sandbox {
    fn new() -> Self {
        let tmp = TempDir::new().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical temp dir");
        std::fs::create_dir_all(root.join("project")).expect("mkdir");
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

    fn command(&self, args: &[&str]) -> Command {
        let home = self.home();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rawko"));
        cmd.args(args)
            .current_dir(self.project())
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("PI_CODING_AGENT_DIR", home.join(".pi"))
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .env_remove("RAWKO_LOG")
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run rawko")
    }

    /// Starts `rawko run ARGS`, waits until its first tool call has its result, and kills it
    /// (SIGKILL) while the model "thinks" about its next turn. Returns the task id.
    fn run_and_kill(&self, args: &[&str]) -> String {
        let mut child = self
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let seen = wait_for_output(&mut child, "↳");
        let id = task_id(&seen);
        child.kill().expect("kill -9");
        let _ = child.wait();
        id
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn wait_for_output(child: &mut Child, needle: &str) -> String {
    let mut stdout = child.stdout.take().expect("stdout");
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
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

/// A Read, then (after a pause in which the test kills rawko) a Write the phase forbids, then the
/// step out of the workflow and the end.
const READ_THEN_WRITE: &str = r#"
turns:
  - text: "Looking."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "Writing."
    delay_ms: 1500
    tool_calls:
      - {name: Write, input: {path: escaped.txt, content: "written"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Done."
"#;

/// A phase that may only read.
const LOOK: &str = "---\nid: look\nname: Look\nemoji: \"👀\"\ntools:\n  whitelist: [Read]\n---\nLook around only (pinned instructions).\n";

/// The same phase as an agent rewrites it: no rules, other instructions.
const LOOK_REWRITTEN: &str =
    "---\nid: look\nname: Look\nemoji: \"👀\"\n---\nWrite anything you like (rewritten).\n";

const GUARD: &str =
    "name: Guard\ncommandName: guard\ninitialMessage: \"Do {description}\"\nphases:\n  - look.md\n";

fn guarded_project(sb: &Sandbox) {
    sb.write(".rawko/workflows/guard/workflow.yaml", GUARD);
    sb.write(".rawko/workflows/guard/look.md", LOOK);
    sb.write("s.yaml", READ_THEN_WRITE);
}

#[test]
fn a_phase_rewritten_while_the_task_was_stopped_keeps_its_rules_when_the_task_resumes() {
    let sb = Sandbox::new();
    guarded_project(&sb);
    let id = sb.run_and_kill(&[
        "run",
        "Look",
        "--workflow",
        "guard",
        "--script",
        "s.yaml",
        "--deny",
    ]);
    // The agent's Write (in an earlier task, or by hand) removed the phase's rules.
    sb.write(".rawko/workflows/guard/look.md", LOOK_REWRITTEN);

    let out = sb.run(&["run", "--resume", &id, "--deny"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("🔒 Write is blocked in the Look phase"),
        "the pinned phase's rules gate the resumed task:\n{shown}"
    );
    assert!(
        !sb.project().join("escaped.txt").exists(),
        "the Write ran under the rewritten phase:\n{shown}"
    );
    assert!(
        shown.contains(".rawko/workflows/guard/look.md"),
        "the output names the changed file:\n{shown}"
    );
    assert!(
        shown.contains("changed on disk"),
        "the output says the file changed:\n{shown}"
    );
}

#[test]
fn a_subworkflows_phase_rewritten_while_the_task_was_stopped_keeps_its_rules() {
    let sb = Sandbox::new();
    sb.write(
        ".rawko/workflows/outer/workflow.yaml",
        "name: Outer\ncommandName: outer\ninitialMessage: \"Do {description}\"\nphases:\n  - subworkflow: inner\n",
    );
    sb.write(
        ".rawko/workflows/inner/workflow.yaml",
        "name: Inner\nshow: workflows\nphases:\n  - look.md\n",
    );
    sb.write(".rawko/workflows/inner/look.md", LOOK);
    sb.write("s.yaml", READ_THEN_WRITE);
    let id = sb.run_and_kill(&[
        "run",
        "Look",
        "--workflow",
        "outer",
        "--script",
        "s.yaml",
        "--deny",
    ]);
    sb.write(".rawko/workflows/inner/look.md", LOOK_REWRITTEN);

    let out = sb.run(&["run", "--resume", &id, "--deny"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("🔒 Write is blocked in the Look phase"),
        "{shown}"
    );
    assert!(
        !sb.project().join("escaped.txt").exists(),
        "the Write ran under the rewritten subworkflow phase:\n{shown}"
    );
    assert!(
        shown.contains(".rawko/workflows/inner/look.md"),
        "the output names the changed file:\n{shown}"
    );
}

const READER: &str = "---\nname: reader\ntools:\n  allowed: [Read]\ntransitions:\n  onSuccess: complete\n---\n\n# Reader\n\n## System Prompt\n\nYou read and never write.\n";

const READER_REWRITTEN: &str = "---\nname: reader\ntransitions:\n  onSuccess: complete\n---\n\n# Reader\n\n## System Prompt\n\nYou may write.\n";

#[test]
fn an_agent_rewritten_while_the_task_was_stopped_keeps_its_tool_list() {
    let sb = Sandbox::new();
    sb.write(".rawko/agents/reader.md", READER);
    sb.write(
        "s.yaml",
        r#"
turns:
  - text: "Looking."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "Writing."
    delay_ms: 1500
    tool_calls:
      - {name: Write, input: {path: escaped.txt, content: "written"}}
  - text: "Done."
"#,
    );
    let id = sb.run_and_kill(&[
        "run", "Look", "--agent", "reader", "--script", "s.yaml", "--deny",
    ]);
    sb.write(".rawko/agents/reader.md", READER_REWRITTEN);

    let out = sb.run(&["run", "--resume", &id, "--deny"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("not available to agent reader"),
        "the pinned agent's tool list holds:\n{shown}"
    );
    assert!(
        !sb.project().join("escaped.txt").exists(),
        "the Write ran under the rewritten agent:\n{shown}"
    );
    assert!(
        shown.contains(".rawko/agents/reader.md"),
        "the output names the changed file:\n{shown}"
    );
}

#[test]
fn a_definition_the_agent_changed_during_the_task_is_named_when_the_task_ends() {
    let sb = Sandbox::new();
    // Phase 1 may write anything, phase 2 only read: the agent rewrites phase 2 in phase 1.
    sb.write(
        ".rawko/workflows/two/workflow.yaml",
        "name: Two\ncommandName: two\ninitialMessage: \"Do {description}\"\nphases:\n  - work.md\n  - look.md\n",
    );
    sb.write(
        ".rawko/workflows/two/work.md",
        "---\nid: work\nname: Work\nemoji: \"🛠️\"\n---\nWork.\n",
    );
    sb.write(".rawko/workflows/two/look.md", LOOK);
    let rewritten = serde_json::to_string(LOOK_REWRITTEN).unwrap();
    sb.write(
        "s.yaml",
        &format!(
            r#"
turns:
  - tool_calls:
      - {{name: Write, input: {{path: .rawko/workflows/two/look.md, content: {rewritten}}}}}
  - tool_calls:
      - {{name: workflow_step, input: {{action: next}}}}
  - tool_calls:
      - {{name: Write, input: {{path: escaped.txt, content: "written"}}}}
  - tool_calls:
      - {{name: workflow_step, input: {{action: next}}}}
  - text: "Done."
"#
        ),
    );
    let out = sb.run(&[
        "run",
        "Work",
        "--workflow",
        "two",
        "--script",
        "s.yaml",
        "--deny",
    ]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("🔒 Write is blocked in the Look phase"),
        "the task keeps its own phase's rules:\n{shown}"
    );
    assert!(!sb.project().join("escaped.txt").exists(), "{shown}");
    let end = shown
        .rfind("Write is blocked")
        .map_or(shown.as_str(), |at| &shown[at..]);
    assert!(
        end.contains(".rawko/workflows/two/look.md") && end.contains("next task"),
        "at its end the task says which definition changed and that the next task reads it:\n{shown}"
    );
}

#[test]
fn a_task_stored_before_pinning_resumes_as_before_and_says_so_once() {
    let sb = Sandbox::new();
    guarded_project(&sb);
    // Two pauses: the test stops the task twice.
    sb.write(
        "s.yaml",
        r#"
turns:
  - text: "Looking."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "Looking again."
    delay_ms: 1500
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "Writing."
    delay_ms: 1500
    tool_calls:
      - {name: Write, input: {path: escaped.txt, content: "written"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Done."
"#,
    );
    let id = sb.run_and_kill(&[
        "run",
        "Look",
        "--workflow",
        "guard",
        "--script",
        "s.yaml",
        "--deny",
    ]);
    // The log as a rawko before pinning wrote it: its start names no pinned definitions.
    let log = sb
        .home()
        .join(".local/state/rawko/tasks")
        .join(&id)
        .join("events.jsonl");
    let lines: Vec<String> = std::fs::read_to_string(&log)
        .expect("log")
        .lines()
        .map(|l| {
            let mut record: Value = serde_json::from_str(l).expect("json");
            if let Some(event) = record["event"].as_object_mut() {
                event.remove("definitions");
            }
            record.to_string()
        })
        .collect();
    std::fs::write(&log, lines.join("\n") + "\n").expect("rewrite the log");

    let mut child = sb
        .command(&["run", "--resume", &id, "--deny"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let first = wait_for_output(&mut child, "↳");
    child.kill().expect("kill -9");
    let _ = child.wait();
    assert!(
        first.contains("started before rawko pinned"),
        "the first resume says the task was not pinned:\n{first}"
    );
    // From here on the task keeps what it resumed with.
    sb.write(".rawko/workflows/guard/look.md", LOOK_REWRITTEN);
    let out = sb.run(&["run", "--resume", &id, "--deny"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        !shown.contains("started before rawko pinned"),
        "said once only:\n{shown}"
    );
    assert!(
        shown.contains("🔒 Write is blocked in the Look phase"),
        "{shown}"
    );
    assert!(!sb.project().join("escaped.txt").exists(), "{shown}");
}

// ---- rawko serve ----

use support::{Editor, Project};

const TIMEOUT: Duration = Duration::from_secs(20);

fn serve(project: &Project, home: &Path, answer: &'static str) -> Editor {
    let mut ed = Editor::spawn_in(&project.path(""), home);
    ed.set_approval_policy(move |_| Some(answer));
    ed.initialize(json!({"countdownTickMillis": 2, "approvalTimeoutSeconds": 30}));
    ed
}

fn outputs(ed: &mut Editor, task: &str) -> String {
    ed.notifications(task)
        .iter()
        .filter(|m| m["method"] == "rawko/output")
        .filter_map(|m| m["params"]["text"].as_str().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_killed_servers_task_resumes_under_its_pinned_phase_and_shows_it() {
    let project = Project::empty();
    project.write("README.md", "# a project\n");
    project.write(".rawko/workflows/guard/workflow.yaml", GUARD);
    project.write(".rawko/workflows/guard/look.md", LOOK);
    let script = project.script("s", READ_THEN_WRITE);
    let home = tempfile::tempdir().expect("home");

    let mut ed = serve(&project, home.path(), "reject_once");
    let r = ed
        .request(
            "rawko/startTask",
            json!({"description": "Look", "workflow": "guard", "provider": "scripted", "script": script}),
        )
        .expect("startTask");
    let task = r["taskId"].as_str().expect("taskId").to_owned();
    ed.wait_for("the Read's result", TIMEOUT, |m| {
        m["method"] == "rawko/output"
            && m["params"]["taskId"] == task.as_str()
            && m["params"]["kind"] == "tool_result"
    });
    ed.kill9();
    drop(ed);
    project.write(".rawko/workflows/guard/look.md", LOOK_REWRITTEN);

    let mut ed = serve(&project, home.path(), "reject_once");
    // A stored task shows the phase it was started with.
    let prompt = ed
        .request("rawko/phasePrompt", json!({"taskId": task, "index": 0}))
        .expect("phasePrompt");
    let prompt = prompt["prompt"].as_str().unwrap_or_default().to_owned();
    assert!(
        prompt.contains("pinned instructions") && !prompt.contains("rewritten"),
        "the stored task's phase prompt is the pinned one: {prompt}"
    );
    assert_eq!(
        ed.request("rawko/resumeTask", json!({"taskId": task})),
        Ok(json!({}))
    );
    let finished = ed.wait_for("taskFinished", TIMEOUT, |m| {
        m["method"] == "rawko/taskFinished" && m["params"]["taskId"] == task.as_str()
    });
    assert_eq!(finished["params"]["outcome"], "complete", "{finished}");
    assert!(
        ed.approval_requests()
            .iter()
            .any(|a| a["params"]["tool"] == "Write" && a["params"]["phase"] == "Look"),
        "the resumed task asked before its Write: {:?}",
        ed.approval_requests()
    );
    assert!(
        !project.path("escaped.txt").exists(),
        "the Write ran under the rewritten phase"
    );
    let shown = outputs(&mut ed, &task);
    assert!(
        shown.contains(".rawko/workflows/guard/look.md") && shown.contains("changed on disk"),
        "the output names the changed file: {shown}"
    );
}

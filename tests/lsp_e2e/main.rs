//! End-to-end tests of `rawko serve`: a fake editor (tests/support) drives the real binary over
//! real pipes with LSP framing, and the agent is the scripted provider replaying a script written
//! by each test. Each test has its own server, workspace and home directory; countdowns tick every
//! 20 ms unless a test needs time to act during one. Nothing sleeps: every wait is for a message,
//! with a time limit.

#[path = "../support/mod.rs"]
mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{is_note, is_response, Editor, Project, TIMEOUT};

mod approvals;
mod bad_input;
mod cancel;
mod concurrency;
mod countdown;
mod phase_tree;
mod provider_failures;
mod steps;
mod whole_task;
mod workflows;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

const DESCRIPTION: &str = "Add a --shout flag to greet.sh";

const OPTIONS: [&str; 4] = ["allow_once", "allow_always", "reject_once", "reject_always"];

/// A countdown too slow to run out while a test acts during it.
const SLOW_TICK_MILLIS: u64 = 5_000;

fn fast() -> Value {
    json!({"countdownTickMillis": 20})
}

/// A server for `project`, initialized with `options`.
fn serve(project: &Project, options: Value) -> Editor {
    let mut ed = Editor::spawn(&project.ws);
    ed.initialize(options);
    ed
}

fn start_params(script: &str) -> Value {
    json!({
        "description": DESCRIPTION,
        "workflow": "feature",
        "provider": "scripted",
        "script": script,
    })
}

/// Starts a feature task replaying `script`; returns its id.
fn start(ed: &mut Editor, script: &str) -> String {
    let result = ed
        .request("rawko/startTask", start_params(script))
        .unwrap_or_else(|e| panic!("rawko/startTask failed: {e}"));
    task_id(&result)
}

fn task_id(result: &Value) -> String {
    result["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("no taskId in {result}"))
        .to_owned()
}

/// Waits for a notification `method` about `task` whose params fit `pred`; returns the params.
fn wait_note(
    ed: &mut Editor,
    task: &str,
    method: &str,
    what: &str,
    pred: impl Fn(&Value) -> bool,
) -> Value {
    let description = format!("{method} of {task}: {what}");
    ed.wait_for(&description, TIMEOUT, |m| {
        is_note(m, method, task) && pred(&m["params"])
    })["params"]
        .clone()
}

fn wait_status(ed: &mut Editor, task: &str, state: &str) -> Value {
    wait_note(ed, task, "rawko/status", &format!("state {state}"), |p| {
        p["state"] == state
    })
}

fn wait_output(ed: &mut Editor, task: &str, kind: &str, pred: impl Fn(&Value) -> bool) -> Value {
    wait_note(ed, task, "rawko/output", &format!("kind {kind}"), |p| {
        p["kind"] == kind && pred(p)
    })
}

fn wait_finished(ed: &mut Editor, task: &str) -> Value {
    wait_note(
        ed,
        task,
        "rawko/taskFinished",
        "the end of the task",
        |_| true,
    )
}

/// The approval request the server sends for `task`.
fn wait_approval(ed: &mut Editor, task: &str) -> Value {
    ed.wait_for(&format!("rawko/approveToolCall of {task}"), TIMEOUT, |m| {
        m["method"] == "rawko/approveToolCall"
            && m.get("id").is_some()
            && m["params"]["taskId"] == json!(task)
    })
}

/// The params of the task's notifications of `method` (and `kind`, for outputs).
fn notes_of(notes: &[Value], method: &str, kind: Option<&str>) -> Vec<Value> {
    notes
        .iter()
        .filter(|m| m["method"] == method && kind.is_none_or(|k| m["params"]["kind"] == k))
        .map(|m| m["params"].clone())
        .collect()
}

fn seq(params: &Value) -> u64 {
    params["seq"]
        .as_u64()
        .unwrap_or_else(|| panic!("no seq in {params}"))
}

fn text(params: &Value) -> &str {
    params["text"].as_str().unwrap_or_default()
}

#[track_caller]
fn assert_error(answer: Result<Value, Value>, code: i64) -> Value {
    match answer {
        Ok(result) => panic!("expected error {code}, got the result {result}"),
        Err(error) => {
            assert_eq!(error["code"], code, "error {error}");
            let message = error["message"].as_str().unwrap_or_default();
            assert!(!message.is_empty(), "an error message is expected: {error}");
            error
        }
    }
}

/// A request the server must still answer normally.
#[track_caller]
fn assert_still_serving(ed: &mut Editor) {
    let tasks = ed
        .request("rawko/listTasks", json!({}))
        .unwrap_or_else(|e| panic!("rawko/listTasks after bad input failed: {e}"));
    assert!(tasks["tasks"].is_array(), "{tasks}");
}

fn lower(s: &str) -> String {
    s.to_lowercase()
}

const WRITE_IN_PLAN: &str = r#"
turns:
  - text: "Writing the plan down."
    tool_calls:
      - {name: Write, input: {path: PLAN.md, content: "1. shout\n"}}
  - text: "Carrying on."
    tool_calls:
      - {name: Read, input: {path: README.md}}
"#;

const SLOW_TURN: &str = "turns:\n  - text: \"Thinking.\"\n    delay_ms: 60000\n";

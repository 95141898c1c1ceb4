#[path = "../support/mod.rs"]
mod support;

// End-to-end tests of the orchestrator behind `rawko serve`: agents (rawko-sdk format) that hand
// the task to each other by their transitions, their tool filters, a workflow phase that names
// its agent, the agent and task iteration limits, the model arbiter (a scripted provider answering
// in JSON), the manual overrides (`rawko/forceAgent`, `rawko/skipStep`) and `rawko tasks
// list | show` reading what a server stored.
//
// A fake editor (tests/support) drives the real binary; the agent (and the model arbiter) replay
// scripts written by each test. What is checked is what a user sees: notifications, tool results,
// approval requests, files in the workspace, and the task history of `rawko/getTask` (each
// orchestrator transition with its states and guard). Nothing sleeps for a fixed time: every wait
// is for a message or for a `rawko/getTask` answer that fits, with a time limit.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{is_note, Editor, Project, TIMEOUT};

mod arbiter;
mod limits;
mod overrides;
mod phase_agents;
mod tasks_cli;
mod tool_filter;
mod without_a_workflow;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

const DESCRIPTION: &str = "Add a --shout flag to greet.sh";

/// A model turn long enough that the task is surely still in it when the test acts; the test
/// ends it by an override or a cancel, so nobody waits for it.
const SLOW_MS: u64 = 20_000;

fn fast() -> Value {
    json!({"countdownTickMillis": 20})
}

/// A workspace with a README and a small script.
fn project() -> Project {
    let project = Project::empty();
    project.write("README.md", "# greet\n\nSays hello.\n");
    project.write(
        "greet.sh",
        "#!/bin/sh\nname=\"${1:-world}\"\necho \"Hello, $name!\"\n",
    );
    project
}

/// A workspace with the four starter agents in `.rawko/agents`.
fn project_with_starter_agents() -> Project {
    let project = project();
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("starter/agents");
    let mut copied = 0;
    for entry in std::fs::read_dir(&from).expect("read the starter agents") {
        let entry = entry.expect("directory entry");
        let name = entry.file_name().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(entry.path()).expect("read a starter agent");
        project.write(&format!(".rawko/agents/{name}"), &text);
        copied += 1;
    }
    assert_eq!(copied, 4, "the starter agents in {}", from.display());
    project
}

/// A server for `project`, initialized with `options`.
fn serve(project: &Project, options: Value) -> Editor {
    let mut ed = Editor::spawn(&project.ws);
    ed.initialize(options);
    ed
}

/// Starts a task with the scripted provider; `extra` adds fields (workflow, agent).
fn start(ed: &mut Editor, script: &str, extra: Value) -> String {
    let mut params = json!({
        "description": DESCRIPTION,
        "provider": "scripted",
        "script": script,
    });
    if let (Some(p), Some(extra)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(extra.clone());
    }
    let result = ed
        .request("rawko/startTask", params)
        .unwrap_or_else(|e| panic!("rawko/startTask failed: {e}"));
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

fn wait_finished(ed: &mut Editor, task: &str) -> Value {
    wait_note(
        ed,
        task,
        "rawko/taskFinished",
        "the end of the task",
        |_| true,
    )
}

/// The params of the task's notifications of `method` (and `kind`, for outputs).
fn notes_of(notes: &[Value], method: &str, kind: Option<&str>) -> Vec<Value> {
    notes
        .iter()
        .filter(|m| m["method"] == method && kind.is_none_or(|k| m["params"]["kind"] == k))
        .map(|m| m["params"].clone())
        .collect()
}

fn text(params: &Value) -> &str {
    params["text"].as_str().unwrap_or_default()
}

/// Everything the agent said, its streamed pieces joined.
fn streamed(notes: &[Value]) -> String {
    notes_of(notes, "rawko/output", Some("assistant_delta"))
        .iter()
        .map(|p| text(p).to_owned())
        .collect()
}

/// The `tool_result` output of the call `id`.
fn tool_result(notes: &[Value], id: &str) -> Value {
    notes_of(notes, "rawko/output", Some("tool_result"))
        .into_iter()
        .find(|p| p["toolCallId"] == id)
        .unwrap_or_else(|| panic!("no tool_result of {id} among {notes:#?}"))
}

fn get_task(ed: &mut Editor, task: &str) -> Value {
    ed.request("rawko/getTask", json!({"taskId": task}))
        .unwrap_or_else(|e| panic!("rawko/getTask failed: {e}"))["task"]
        .clone()
}

/// Asks `rawko/getTask` until its answer fits `pred` (the task moves on its own meanwhile).
fn wait_task(ed: &mut Editor, task: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let detail = get_task(ed, task);
        if pred(&detail) {
            return detail;
        }
        assert!(
            Instant::now() < deadline,
            "waiting for {what}: rawko/getTask still says {detail:#}"
        );
        // A poll interval, not a wait for something to happen by itself.
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn history(detail: &Value) -> Vec<Value> {
    detail["history"]
        .as_array()
        .unwrap_or_else(|| panic!("no history in {detail:#}"))
        .clone()
}

/// The orchestrator transitions of a history (`machine:…` entries).
fn machine_entries(history: &[Value]) -> Vec<Value> {
    history
        .iter()
        .filter(|h| {
            h["event"]
                .as_str()
                .is_some_and(|e| e.starts_with("machine:"))
        })
        .cloned()
        .collect()
}

/// A transition as one line: `EVENT before→after [guard]`.
fn transition(entry: &Value) -> String {
    let mut line = format!(
        "{} {}→{}",
        entry["event"]
            .as_str()
            .unwrap_or("?")
            .trim_start_matches("machine:"),
        entry["stateBefore"].as_str().unwrap_or("-"),
        entry["stateAfter"].as_str().unwrap_or("-"),
    );
    if let Some(guard) = entry["guard"].as_str() {
        line.push_str(&format!(" [{guard}]"));
    }
    line
}

fn detail_of(entry: &Value) -> &str {
    entry["detail"].as_str().unwrap_or_default()
}

/// One line per history entry, for failure messages.
fn show_history(history: &[Value]) -> String {
    history
        .iter()
        .map(|h| {
            format!(
                "{} {} → {} [{}] {}",
                h["event"].as_str().unwrap_or("?"),
                h["stateBefore"].as_str().unwrap_or("-"),
                h["stateAfter"].as_str().unwrap_or("-"),
                h["guard"].as_str().unwrap_or("-"),
                h["detail"].as_str().unwrap_or("")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
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

/// Four text-only turns: one for each starter agent.
const FOUR_AGENTS_SCRIPT: &str = r#"
turns:
  - text: "Plan: add the flag to greet.sh and a test."
  - text: "Implemented the flag."
  - text: "All tests pass."
  - text: "Approved: the change is small and tested."
"#;

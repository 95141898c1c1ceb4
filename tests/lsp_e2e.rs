//! End-to-end tests of `rawko serve`: a fake editor (tests/support) drives the real binary over
//! real pipes with LSP framing, and the agent is the scripted provider replaying a script written
//! by each test. Each test has its own server, workspace and home directory; countdowns tick every
//! 20 ms unless a test needs time to act during one. Nothing sleeps: every wait is for a message,
//! with a time limit.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{is_note, is_response, Editor, Project, TIMEOUT};

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

// ---------------------------------------------------------------------------------------------
// A whole task
// ---------------------------------------------------------------------------------------------

/// Completes the feature workflow: two turns per phase, the second one calling workflow_step.
const FEATURE_SCRIPT: &str = r#"
turns:
  - text: "Reading the project first."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "The plan: add a shout flag to greet.sh, test it, review it."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Adding the flag."
    tool_calls:
      - {name: Write, input: {path: shout.txt, content: "HELLO\n"}}
  - text: "Implemented."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Running the tests."
    tool_calls:
      - {name: Bash, input: {command: "cat shout.txt"}}
  - text: "Tests pass."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Checking the syntax."
    tool_calls:
      - {name: Bash, input: {command: "sh -n greet.sh && echo syntax ok"}}
  - text: "Nothing to report."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Reading the change."
    tool_calls:
      - {name: Read, input: {path: shout.txt}}
  - text: "Looks good."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Done: greet.sh can shout, tested and reviewed."
"#;

/// The turns of FEATURE_SCRIPT while the workflow is active: phase, text, tool.
const FEATURE_TURNS: [(&str, &str, &str); 10] = [
    ("📋 Plan", "Reading the project first.", "Read"),
    (
        "📋 Plan",
        "The plan: add a shout flag to greet.sh, test it, review it.",
        "workflow_step",
    ),
    ("🛠️ Implement", "Adding the flag.", "Write"),
    ("🛠️ Implement", "Implemented.", "workflow_step"),
    ("🧪 Test", "Running the tests.", "Bash"),
    ("🧪 Test", "Tests pass.", "workflow_step"),
    ("🔍 Static Analysis", "Checking the syntax.", "Bash"),
    ("🔍 Static Analysis", "Nothing to report.", "workflow_step"),
    ("👀 Peer Review", "Reading the change.", "Read"),
    ("👀 Peer Review", "Looks good.", "workflow_step"),
];

/// Runs FEATURE_SCRIPT to its end; returns the editor and the task's notifications.
fn run_feature_task() -> (Project, Editor, String, Vec<Value>) {
    let project = Project::with_starter();
    let script = project.script("feature", FEATURE_SCRIPT);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "complete", "{finished}");
    let notes = ed.notifications(&task);
    (project, ed, task, notes)
}

#[test]
fn a_feature_task_shows_each_phase_in_the_status_bar_in_order() {
    let (_project, _ed, _task, notes) = run_feature_task();
    let mut shown: Vec<String> = Vec::new();
    for status in notes_of(&notes, "rawko/status", None) {
        if status["breadcrumb"]
            .as_array()
            .is_some_and(|b| !b.is_empty())
        {
            let t = text(&status).to_owned();
            if shown.last() != Some(&t) {
                shown.push(t);
            }
        }
    }
    assert_eq!(
        shown,
        [
            "Feature > 📋 Plan [1/4]",
            "Feature > 🛠️ Implement [2/4]",
            "Feature > 🧪 Test [3/4]",
            "Feature > Review [4/4] > 🔍 Static Analysis [1/2]",
            "Feature > Review [4/4] > 👀 Peer Review [2/2]",
        ]
    );
    let statuses = notes_of(&notes, "rawko/status", None);
    let nested = statuses
        .iter()
        .find(|s| text(s) == "Feature > Review [4/4] > 👀 Peer Review [2/2]")
        .expect("the peer review status");
    assert_eq!(
        nested["breadcrumb"],
        json!([
            {"name": "Feature", "phaseName": "Review", "emoji": "", "index": 4, "total": 4},
            {"name": "Review", "phaseName": "Peer Review", "emoji": "👀", "index": 2, "total": 2},
        ])
    );
    assert_eq!(statuses[0]["state"], "running", "{}", statuses[0]);
}

#[test]
fn every_status_names_the_workflow_and_where_the_task_is_without_its_state() {
    let (_project, _ed, _task, notes) = run_feature_task();
    let statuses = notes_of(&notes, "rawko/status", None);
    for status in &statuses {
        assert_eq!(status["workflow"], "feature", "{status}");
        assert_eq!(status["workflowName"], "Feature", "{status}");
        let place = status["breadcrumbText"].as_str().unwrap_or_default();
        let line = text(status);
        if status["state"] == "running" {
            assert_eq!(
                line, place,
                "a running task's line is where it is: {status}"
            );
        } else {
            assert!(
                line.starts_with(&format!("{place} — ")),
                "the line adds the state to where the task is: {status}"
            );
        }
    }
    assert!(statuses.iter().any(|s| s["breadcrumbText"]
        == "Feature > Review [4/4] > 👀 Peer Review [2/2]"
        && s["breadcrumb"].as_array().map(Vec::len) == Some(2)));
    let last = statuses.last().expect("statuses");
    assert_eq!(last["state"], "complete", "{last}");
    assert_eq!(
        last["breadcrumbText"], "Feature",
        "the finished workflow: {last}"
    );
}

#[test]
fn a_task_without_a_workflow_has_no_workflow_in_its_status() {
    let project = Project::with_starter();
    let script = project.script("plain", "turns:\n  - text: \"Nothing to do.\"\n");
    let mut ed = serve(&project, fast());
    let result = ed
        .request(
            "rawko/startTask",
            json!({"description": DESCRIPTION, "provider": "scripted", "script": script}),
        )
        .expect("startTask");
    let task = task_id(&result);
    wait_finished(&mut ed, &task);
    let statuses = notes_of(&ed.notifications(&task), "rawko/status", None);
    assert!(!statuses.is_empty());
    for status in &statuses {
        assert!(status.get("workflow").is_none(), "{status}");
        assert!(status.get("workflowName").is_none(), "{status}");
        assert_eq!(status["breadcrumb"], json!([]), "{status}");
        assert_eq!(status["breadcrumbText"], DESCRIPTION, "{status}");
    }
}

#[test]
fn a_task_numbers_its_notifications_from_one_without_gaps() {
    let (_project, _ed, _task, notes) = run_feature_task();
    let seqs: Vec<u64> = notes.iter().map(|m| seq(&m["params"])).collect();
    let expected: Vec<u64> = (1..=notes.len() as u64).collect();
    assert_eq!(seqs, expected, "seq in arrival order");
    let last = notes.last().expect("notifications");
    assert_eq!(
        last["method"], "rawko/taskFinished",
        "the last notification"
    );
}

#[test]
fn the_phase_context_is_injected_before_every_model_turn() {
    let (_project, _ed, _task, notes) = run_feature_task();
    // Split the task's output at each context_injected: every piece is one model turn.
    let outputs = notes_of(&notes, "rawko/output", None);
    let mut turns: Vec<(String, Vec<Value>)> = Vec::new();
    let mut before_first = Vec::new();
    for out in outputs {
        if out["kind"] == "context_injected" {
            turns.push((text(&out).to_owned(), Vec::new()));
        } else if let Some((_, outs)) = turns.last_mut() {
            outs.push(out);
        } else {
            before_first.push(out);
        }
    }
    assert!(
        before_first.is_empty(),
        "output before the first context: {before_first:?}"
    );
    assert_eq!(turns.len(), FEATURE_TURNS.len(), "one context per turn");
    for (i, ((context, outs), (phase, said, tool))) in turns.iter().zip(FEATURE_TURNS).enumerate() {
        assert!(
            context.contains(phase),
            "turn {}: the context should name {phase}:\n{context}",
            i + 1
        );
        let streamed: String = outs
            .iter()
            .filter(|o| o["kind"] == "assistant_delta")
            .map(text)
            .collect();
        assert!(
            streamed.starts_with(said),
            "turn {}: streamed {streamed:?}, scripted {said:?}",
            i + 1
        );
        let calls: Vec<&Value> = outs
            .iter()
            .filter(|o| o["kind"] == "tool_call")
            .map(|o| &o["tool"])
            .collect();
        assert_eq!(calls, [tool], "turn {}: the tool calls", i + 1);
    }
}

#[test]
fn a_completed_task_ends_with_the_completion_message_and_task_finished() {
    let (project, _ed, task, notes) = run_feature_task();
    let n = notes.len();
    assert!(n >= 3, "{notes:?}");
    let completion = &notes[n - 3]["params"];
    assert_eq!(notes[n - 3]["method"], "rawko/output");
    assert_eq!(completion["kind"], "completion", "{completion}");
    assert!(
        text(completion).contains("Feature Complete"),
        "{completion}"
    );
    assert!(text(completion).contains(DESCRIPTION), "{completion}");
    let status = &notes[n - 2]["params"];
    assert_eq!(notes[n - 2]["method"], "rawko/status");
    assert_eq!(status["state"], "complete", "{status}");
    let finished = &notes[n - 1]["params"];
    assert_eq!(finished["taskId"], json!(task));
    assert_eq!(finished["outcome"], "complete");
    assert!(
        finished["summary"]
            .as_str()
            .is_some_and(|s| s.contains("greet.sh can shout")),
        "the summary says what was done: {finished}"
    );
    // The tools really ran.
    assert_eq!(
        std::fs::read_to_string(project.path("shout.txt")).expect("shout.txt written"),
        "HELLO\n"
    );
    let results = notes_of(&notes, "rawko/output", Some("tool_result"));
    assert!(
        results.iter().all(|r| r["isError"] == false),
        "no tool failed: {results:?}"
    );
    let bash = results
        .iter()
        .find(|r| r["tool"] == "Bash")
        .expect("a Bash result");
    assert!(text(bash).contains("HELLO"), "{bash}");
}

// ---------------------------------------------------------------------------------------------
// Approval of blocked tool calls
// ---------------------------------------------------------------------------------------------

const WRITE_IN_PLAN: &str = r#"
turns:
  - text: "Writing the plan down."
    tool_calls:
      - {name: Write, input: {path: PLAN.md, content: "1. shout\n"}}
  - text: "Carrying on."
    tool_calls:
      - {name: Read, input: {path: README.md}}
"#;

/// Runs WRITE_IN_PLAN with the editor answering `outcome`; returns the approval request, the
/// Write's tool_call and tool_result.
fn write_in_plan(outcome: &'static str) -> (Project, Editor, String, Value, Value, Value) {
    let project = Project::with_starter();
    let script = project.script("write", WRITE_IN_PLAN);
    let mut ed = serve(&project, fast());
    ed.set_approval_policy(move |_| Some(outcome));
    let task = start(&mut ed, &script);
    let approval = wait_approval(&mut ed, &task);
    let call = wait_output(&mut ed, &task, "tool_call", |p| p["tool"] == "Write");
    let result = wait_output(&mut ed, &task, "tool_result", |p| p["tool"] == "Write");
    (project, ed, task, approval, call, result)
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[test]
fn a_blocked_write_asks_the_editor_with_tool_input_phase_reason_and_options() {
    let before = now_ms();
    let (_project, _ed, task, approval, call, _) = write_in_plan("reject_once");
    let after = now_ms();
    let p = &approval["params"];
    assert_eq!(p["summary"], "Write PLAN.md (9 bytes)", "{p}");
    // The default approval timeout, and the deadline it sets.
    assert_eq!(p["timeoutSeconds"], 120, "{p}");
    let expires = p["expiresAt"].as_u64().unwrap_or_default();
    assert!(
        (before + 120_000..=after + 120_000).contains(&expires),
        "expiresAt {expires} is 120 s after the request ({before}..{after})"
    );
    assert_eq!(p["taskId"], json!(task));
    assert_eq!(p["toolCallId"], call["toolCallId"], "{p}\n{call}");
    assert_eq!(p["tool"], "Write");
    assert_eq!(
        p["input"],
        // Claude Code's field names, whatever the model wrote (this script says `path`).
        json!({"file_path": "PLAN.md", "content": "1. shout\n"})
    );
    assert_eq!(p["phase"], "Plan");
    let reason = p["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("Write") && reason.contains("Plan"),
        "the reason names the tool and the phase: {reason:?}"
    );
    assert_eq!(p["options"], json!(OPTIONS));
}

#[test]
fn a_blocked_write_allowed_once_runs() {
    let (project, mut ed, task, _, _, result) = write_in_plan("allow_once");
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(
        std::fs::read_to_string(project.path("PLAN.md")).expect("PLAN.md written"),
        "1. shout\n"
    );
    // The task waited for the answer, then went on.
    let waiting = wait_status(&mut ed, &task, "waiting_approval");
    let running = wait_note(&mut ed, &task, "rawko/status", "running again", |p| {
        p["state"] == "running" && seq(p) > seq(&waiting)
    });
    assert!(seq(&running) < seq(&result), "{running}\n{result}");
}

#[test]
fn a_blocked_write_rejected_once_does_not_run_and_the_agent_is_told_why() {
    let (project, mut ed, task, approval, _, result) = write_in_plan("reject_once");
    assert!(!project.path("PLAN.md").exists(), "PLAN.md must not exist");
    assert_eq!(result["isError"], true, "{result}");
    let reason = approval["params"]["reason"].as_str().unwrap_or_default();
    assert!(
        text(&result).contains(reason),
        "the tool result carries the block reason {reason:?}: {result}"
    );
    assert!(lower(text(&result)).contains("blocked"), "{result}");
    // The agent goes on with its next turn.
    wait_output(&mut ed, &task, "tool_call", |p| p["tool"] == "Read");
}

#[test]
fn allow_always_is_remembered_for_the_rest_of_the_task() {
    let project = Project::with_starter();
    let script = project.script(
        "always",
        r#"
turns:
  - tool_calls:
      - {name: Write, input: {path: a.md, content: "a"}}
  - tool_calls:
      - {name: Write, input: {path: b.md, content: "b"}}
  - text: "Both written."
    tool_calls:
      - {name: Read, input: {path: b.md}}
"#,
    );
    let mut ed = serve(&project, fast());
    ed.set_approval_policy(|_| Some("allow_always"));
    let task = start(&mut ed, &script);
    let first = wait_output(&mut ed, &task, "tool_result", |p| p["tool"] == "Write");
    let second = wait_output(&mut ed, &task, "tool_result", |p| p["tool"] == "Write");
    wait_output(&mut ed, &task, "tool_result", |p| p["tool"] == "Read");
    assert_eq!(first["isError"], false, "{first}");
    assert_eq!(second["isError"], false, "{second}");
    assert!(project.path("a.md").exists() && project.path("b.md").exists());
    let asked: Vec<Value> = ed
        .approval_requests()
        .into_iter()
        .filter(|a| a["params"]["taskId"] == json!(task))
        .collect();
    assert_eq!(asked.len(), 1, "asked once only: {asked:?}");
    assert_eq!(asked[0]["params"]["input"]["file_path"], "a.md");
    let waits = notes_of(&ed.notifications(&task), "rawko/status", None)
        .into_iter()
        .filter(|s| s["state"] == "waiting_approval")
        .count();
    assert_eq!(waits, 1, "the task waited for approval once");
}

#[test]
fn an_unanswered_approval_times_out_as_rejected_and_the_task_goes_on() {
    let project = Project::with_starter();
    let script = project.script(
        "late",
        r#"
turns:
  - tool_calls:
      - {name: Write, input: {path: late.md, content: "too late"}}
  - text: "Carrying on without the file."
    tool_calls:
      - {name: Read, input: {path: README.md}}
"#,
    );
    let mut ed = serve(
        &project,
        json!({"countdownTickMillis": 20, "approvalTimeoutSeconds": 0.3}),
    );
    // The editor never answers.
    let task = start(&mut ed, &script);
    let approval = wait_approval(&mut ed, &task);
    // A timeout configured only on the server still reaches the client, rounded up to 1 s.
    assert_eq!(approval["params"]["timeoutSeconds"], 1, "{approval}");
    let expires = approval["params"]["expiresAt"].as_u64().unwrap_or_default();
    assert!(
        expires <= now_ms() + 300,
        "expiresAt {expires} is 0.3 s after the request"
    );
    let status = wait_note(&mut ed, &task, "rawko/status", "a reason", |p| {
        p["state"] == "running" && p.get("reason").is_some()
    });
    let reason = lower(status["reason"].as_str().unwrap_or_default());
    assert!(
        reason.contains("no answer") && reason.contains("write"),
        "the status says no answer came for Write: {status}"
    );
    let result = wait_output(&mut ed, &task, "tool_result", |p| p["tool"] == "Write");
    assert_eq!(result["isError"], true, "{result}");
    assert!(!project.path("late.md").exists(), "late.md must not exist");
    let next = wait_output(&mut ed, &task, "tool_call", |p| p["tool"] == "Read");
    assert!(seq(&next) > seq(&result));
}

// ---------------------------------------------------------------------------------------------
// Countdown and reminder
// ---------------------------------------------------------------------------------------------

/// The agent stops during Plan, then (after the reminder or the user) goes on.
const STOPS_EARLY: &str = r#"
turns:
  - text: "I think that is all."
  - text: "Back to the plan."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "Plan done."
    tool_calls:
      - {name: workflow_step, input: {action: next}}
"#;

#[test]
fn an_agent_that_stops_early_gets_a_countdown_then_a_reminder() {
    let project = Project::with_starter();
    let script = project.script("stops", STOPS_EARLY);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    let next_turn = wait_output(&mut ed, &task, "tool_call", |p| p["tool"] == "Read");
    let notes = ed.notifications(&task);
    let at = |method: &str, pred: &dyn Fn(&Value) -> bool| -> u64 {
        notes
            .iter()
            .find(|m| m["method"] == method && pred(&m["params"]))
            .map(|m| seq(&m["params"]))
            .unwrap_or_else(|| panic!("no {method} of that kind in {notes:#?}"))
    };
    let countdown_status = at("rawko/status", &|p| p["state"] == "countdown");
    let ticks: Vec<Value> = notes_of(&notes, "rawko/countdown", None);
    let seconds: Vec<u64> = ticks
        .iter()
        .map(|t| t["secondsLeft"].as_u64().unwrap_or(99))
        .collect();
    assert_eq!(seconds.get(..3), Some(&[3, 2, 1][..]), "{ticks:?}");
    assert!(text(&ticks[0]).contains("3s"), "{}", ticks[0]);
    let reminder = notes_of(&notes, "rawko/output", Some("reminder"));
    assert_eq!(reminder.len(), 1, "one reminder: {reminder:?}");
    let reminder = &reminder[0];
    assert!(
        text(reminder).contains("📋 Plan") && lower(text(reminder)).contains("still active"),
        "{reminder}"
    );
    let second_context = notes_of(&notes, "rawko/output", Some("context_injected"))
        .get(1)
        .map(seq)
        .expect("a context for the next turn");
    assert!(countdown_status < seq(&ticks[0]));
    assert!(seq(&ticks[0]) < seq(&ticks[1]) && seq(&ticks[1]) < seq(&ticks[2]));
    assert!(seq(ticks.last().expect("ticks")) < seq(reminder));
    assert!(seq(reminder) < second_context && second_context < seq(&next_turn));
}

#[test]
fn the_countdown_ticks_three_two_one_then_the_reminder_follows() {
    // docs/protocol.md: 3, 2, 1 by default; the reminder follows the tick of 1.
    let project = Project::with_starter();
    let script = project.script("stops", STOPS_EARLY);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    wait_output(&mut ed, &task, "reminder", |_| true);
    let ticks = notes_of(&ed.notifications(&task), "rawko/countdown", None);
    let seconds: Vec<Value> = ticks.iter().map(|t| t["secondsLeft"].clone()).collect();
    assert_eq!(seconds, [json!(3), json!(2), json!(1)]);
    let labels: Vec<&str> = ticks
        .iter()
        .map(|t| t["label"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        labels,
        [
            "⏳ Auto-continuing in 3s",
            "⏳ Auto-continuing in 2s",
            "⏳ Auto-continuing in 1s"
        ]
    );
    for tick in &ticks {
        let label = tick["label"].as_str().unwrap_or_default();
        assert!(
            text(tick).starts_with(label),
            "the text has the label: {tick}"
        );
    }
}

#[test]
fn interrupting_the_countdown_blocks_the_task_until_the_user_speaks() {
    let project = Project::with_starter();
    let script = project.script("stops", STOPS_EARLY);
    let mut ed = serve(&project, json!({"countdownTickMillis": SLOW_TICK_MILLIS}));
    let task = start(&mut ed, &script);
    wait_note(&mut ed, &task, "rawko/countdown", "3s left", |p| {
        p["secondsLeft"] == 3
    });
    assert_eq!(
        ed.request("rawko/interrupt", json!({"taskId": task})),
        Ok(json!({}))
    );
    let blocked = wait_status(&mut ed, &task, "blocked");
    assert!(blocked.get("reason").is_some(), "{blocked}");
    let summary = ed
        .request("rawko/getTask", json!({"taskId": task}))
        .expect("getTask");
    assert_eq!(summary["task"]["state"], "blocked");

    assert_eq!(
        ed.request(
            "rawko/sendMessage",
            json!({"taskId": task, "text": "Go on with the plan."})
        ),
        Ok(json!({}))
    );
    let next_turn = wait_output(&mut ed, &task, "tool_call", |p| p["tool"] == "Read");
    let running = wait_note(&mut ed, &task, "rawko/status", "running again", |p| {
        p["state"] == "running" && seq(p) > seq(&blocked)
    });
    assert!(seq(&running) < seq(&next_turn));
    let notes = ed.notifications(&task);
    assert!(
        notes_of(&notes, "rawko/output", Some("reminder")).is_empty(),
        "no reminder after an interrupt: {notes:#?}"
    );
}

#[test]
fn a_message_during_the_countdown_stops_it_and_becomes_the_next_turn() {
    let project = Project::with_starter();
    let script = project.script("stops", STOPS_EARLY);
    let mut ed = serve(&project, json!({"countdownTickMillis": SLOW_TICK_MILLIS}));
    let task = start(&mut ed, &script);
    let tick = wait_note(&mut ed, &task, "rawko/countdown", "3s left", |p| {
        p["secondsLeft"] == 3
    });
    assert_eq!(
        ed.request(
            "rawko/sendMessage",
            json!({"taskId": task, "text": "Please keep planning."})
        ),
        Ok(json!({}))
    );
    let running = wait_note(&mut ed, &task, "rawko/status", "running again", |p| {
        p["state"] == "running" && seq(p) > seq(&tick)
    });
    let next_turn = wait_output(&mut ed, &task, "tool_call", |p| p["tool"] == "Read");
    assert!(seq(&running) < seq(&next_turn));
    let notes = ed.notifications(&task);
    assert!(
        notes_of(&notes, "rawko/output", Some("reminder")).is_empty(),
        "no reminder after the user spoke: {notes:#?}"
    );
    let ticks = notes_of(&notes, "rawko/countdown", None);
    assert_eq!(ticks.len(), 1, "the countdown stopped: {ticks:?}");
}

#[test]
fn interrupt_during_a_turn_stops_it_and_a_second_interrupt_is_a_state_conflict() {
    // docs/protocol.md: rawko/interrupt stops a countdown or the current turn; it fails with
    // -32003 when the task is already interrupted.
    let project = Project::with_starter();
    let script = project.script(
        "slow",
        "turns:\n  - text: \"Thinking hard.\"\n    delay_ms: 60000\n  - text: \"Back again.\"\n",
    );
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    wait_output(&mut ed, &task, "context_injected", |_| true);
    assert_eq!(
        ed.request("rawko/interrupt", json!({"taskId": task})),
        Ok(json!({}))
    );
    wait_status(&mut ed, &task, "blocked");
    assert_error(
        ed.request("rawko/interrupt", json!({"taskId": task})),
        -32003,
    );
    let detail = ed
        .request("rawko/getTask", json!({"taskId": task}))
        .expect("getTask");
    assert_eq!(detail["task"]["state"], "blocked", "{detail}");
    // The interrupted turn's text never came: the next turn is the second one.
    assert_eq!(
        ed.request("rawko/resumeTask", json!({"taskId": task})),
        Ok(json!({}))
    );
    wait_output(&mut ed, &task, "assistant_delta", |p| {
        p["text"].as_str().unwrap_or_default().contains("Back")
    });
}

#[test]
fn an_agent_that_keeps_stopping_fails_at_the_reminder_limit() {
    let project = Project::with_starter();
    let script = project.script(
        "lazy",
        r#"
turns:
  - text: "Done, I think."
  - text: "Still done."
  - text: "Really done."
  - text: "Done for good."
  - text: "Nothing more to do."
"#,
    );
    let mut ed = serve(
        &project,
        json!({"countdownTickMillis": 20, "maxReminders": 2}),
    );
    let task = start(&mut ed, &script);
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "failed", "{finished}");
    let summary = finished["summary"].as_str().unwrap_or_default();
    assert!(
        lower(summary).contains("reminder") && summary.contains('2'),
        "the summary names the limit of 2 reminders: {summary:?}"
    );
    let notes = ed.notifications(&task);
    let failed = notes_of(&notes, "rawko/status", None)
        .into_iter()
        .find(|s| s["state"] == "failed")
        .expect("a failed status");
    let reason = failed["reason"].as_str().unwrap_or_default();
    assert!(lower(reason).contains("reminder"), "{failed}");
    assert_eq!(
        notes_of(&notes, "rawko/output", Some("reminder")).len(),
        2,
        "two reminders were sent"
    );
}

// ---------------------------------------------------------------------------------------------
// Cancel
// ---------------------------------------------------------------------------------------------

/// Cancels `task`, sees it end as cancelled, then a second cancel is a state conflict.
fn cancel_and_check(ed: &mut Editor, task: &str) {
    assert_eq!(
        ed.request("rawko/cancelTask", json!({"taskId": task})),
        Ok(json!({}))
    );
    let status = wait_status(ed, task, "cancelled");
    let finished = wait_finished(ed, task);
    assert_eq!(finished["outcome"], "cancelled", "{finished}");
    assert!(seq(&status) < seq(&finished));
    let notes = ed.notifications(task);
    assert_eq!(
        notes.last().map(|m| &m["method"]),
        Some(&json!("rawko/taskFinished")),
        "taskFinished is the last notification"
    );
    let again = assert_error(
        ed.request("rawko/cancelTask", json!({"taskId": task})),
        -32003,
    );
    assert!(
        lower(again["message"].as_str().unwrap_or_default()).contains("ended")
            || lower(again["message"].as_str().unwrap_or_default()).contains("finished"),
        "{again}"
    );
}

#[test]
fn cancel_while_an_approval_is_pending_ends_the_task() {
    let project = Project::with_starter();
    let script = project.script("write", WRITE_IN_PLAN);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    wait_approval(&mut ed, &task);
    wait_status(&mut ed, &task, "waiting_approval");
    cancel_and_check(&mut ed, &task);
    assert!(!project.path("PLAN.md").exists());
}

#[test]
fn cancel_during_a_slow_model_turn_ends_the_task_at_once() {
    let project = Project::with_starter();
    let script = project.script(
        "slow",
        "turns:\n  - text: \"Too slow to be seen.\"\n    delay_ms: 60000\n",
    );
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    wait_output(&mut ed, &task, "context_injected", |_| true);
    cancel_and_check(&mut ed, &task);
    let notes = ed.notifications(&task);
    assert!(
        notes_of(&notes, "rawko/output", Some("assistant_delta")).is_empty(),
        "the turn never played: {notes:#?}"
    );
}

#[test]
fn a_message_to_a_finished_task_is_a_state_conflict() {
    let project = Project::with_starter();
    let script = project.script("slow", "turns:\n  - text: \"Slow.\"\n    delay_ms: 60000\n");
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    assert_eq!(
        ed.request("rawko/cancelTask", json!({"taskId": task})),
        Ok(json!({}))
    );
    wait_finished(&mut ed, &task);
    assert_error(
        ed.request(
            "rawko/sendMessage",
            json!({"taskId": task, "text": "hello?"}),
        ),
        -32003,
    );
    assert_error(
        ed.request("rawko/step", json!({"taskId": task, "action": "status"})),
        -32003,
    );
}

// ---------------------------------------------------------------------------------------------
// Steps and commands from the editor
// ---------------------------------------------------------------------------------------------

const SLOW_TURN: &str = "turns:\n  - text: \"Thinking.\"\n    delay_ms: 60000\n";

#[test]
fn the_editor_moves_the_task_with_step_next_loop_and_status() {
    let project = Project::with_starter();
    let script = project.script("slow", SLOW_TURN);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    wait_output(&mut ed, &task, "context_injected", |_| true);

    let status = ed
        .request("rawko/step", json!({"taskId": task, "action": "status"}))
        .expect("step status");
    let t = text(&status);
    assert!(t.contains("Feature") && t.contains("📋 Plan"), "{status}");

    let next = ed
        .request("rawko/step", json!({"taskId": task, "action": "next"}))
        .expect("step next");
    assert!(
        text(&next).contains("Plan") && text(&next).contains("🛠️ Implement"),
        "{next}"
    );
    let moved = wait_note(&mut ed, &task, "rawko/status", "Implement", |p| {
        text(p) == "Feature > 🛠️ Implement [2/4]"
    });
    assert_eq!(moved["breadcrumb"][0]["phaseName"], "Implement");

    let looped = ed
        .request("rawko/step", json!({"taskId": task, "action": "loop"}))
        .expect("step loop");
    assert!(text(&looped).contains("📋 Plan"), "{looped}");
    let back = wait_note(&mut ed, &task, "rawko/status", "back at Plan", |p| {
        text(p) == "Feature > 📋 Plan [1/4]" && seq(p) > seq(&moved)
    });
    assert_eq!(back["breadcrumb"][0]["index"], 1);

    let detail = ed
        .request("rawko/getTask", json!({"taskId": task}))
        .expect("getTask");
    assert_eq!(detail["task"]["breadcrumbText"], "Feature > 📋 Plan [1/4]");
}

#[test]
fn step_loop_in_a_subworkflow_that_is_not_loopable_is_refused() {
    let project = Project::with_starter();
    let script = project.script("slow", SLOW_TURN);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    wait_output(&mut ed, &task, "context_injected", |_| true);
    for _ in 0..3 {
        ed.request("rawko/step", json!({"taskId": task, "action": "next"}))
            .expect("step next");
    }
    wait_note(&mut ed, &task, "rawko/status", "in the review", |p| {
        text(p) == "Feature > Review [4/4] > 🔍 Static Analysis [1/2]"
    });
    assert_error(
        ed.request("rawko/step", json!({"taskId": task, "action": "loop"})),
        -32003,
    );
}

#[test]
fn execute_command_starts_steps_and_cancels_a_task() {
    let project = Project::with_starter();
    let script = project.script("slow", SLOW_TURN);
    let mut ed = Editor::spawn(&project.ws);
    let init = ed.initialize(fast());
    let commands = &init["capabilities"]["executeCommandProvider"]["commands"];
    for c in ["rawko.startTask", "rawko.cancelTask", "rawko.step"] {
        assert!(
            commands.as_array().is_some_and(|a| a.contains(&json!(c))),
            "{c} in {commands}"
        );
    }

    let started = ed
        .request(
            "workspace/executeCommand",
            json!({"command": "rawko.startTask", "arguments": [start_params(&script)]}),
        )
        .expect("rawko.startTask");
    let task = task_id(&started);
    wait_output(&mut ed, &task, "context_injected", |_| true);

    let stepped = ed
        .request(
            "workspace/executeCommand",
            json!({"command": "rawko.step", "arguments": [{"taskId": task, "action": "status"}]}),
        )
        .expect("rawko.step");
    assert!(text(&stepped).contains("📋 Plan"), "{stepped}");

    let cancelled = ed
        .request(
            "workspace/executeCommand",
            json!({"command": "rawko.cancelTask", "arguments": [{"taskId": task}]}),
        )
        .expect("rawko.cancelTask");
    assert_eq!(cancelled, json!({}));
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "cancelled");
}

#[test]
fn an_unknown_command_is_method_not_found() {
    // docs/protocol.md: -32601 "rawko has no such method (or command)".
    let project = Project::with_starter();
    let mut ed = serve(&project, fast());
    assert_error(
        ed.request(
            "workspace/executeCommand",
            json!({"command": "rawko.explode", "arguments": [{}]}),
        ),
        -32601,
    );
    assert_still_serving(&mut ed);
}

// ---------------------------------------------------------------------------------------------
// Workflows and tasks
// ---------------------------------------------------------------------------------------------

#[test]
fn list_workflows_offers_feature_and_marks_review_as_a_subworkflow() {
    let project = Project::with_starter();
    let mut ed = serve(&project, fast());
    let result = ed
        .request("rawko/listWorkflows", json!({}))
        .expect("listWorkflows");
    let list = result["workflows"].as_array().expect("workflows");
    let find = |key: &str| {
        list.iter()
            .find(|w| w["key"] == key)
            .unwrap_or_else(|| panic!("{key} in {result}"))
    };
    let feature = find("feature");
    assert_eq!(feature["name"], "Feature");
    assert_eq!(feature["commandName"], "feature");
    assert_eq!(feature["show"], "user");
    let source = feature["source"].as_str().unwrap_or_default();
    assert!(
        source.ends_with(".rawko/workflows/feature"),
        "source {source:?}"
    );
    let review = find("review");
    assert_eq!(review["show"], "workflows");
    assert_eq!(review["commandName"], "");
    assert_eq!(review["phaseCount"], 2);
    assert_eq!(list.len(), 2, "{result}");
}

#[test]
fn list_workflows_counts_the_phases_a_task_goes_through() {
    // docs/protocol.md: phaseCount counts the concrete phases, a subworkflow by its own phases:
    // plan, implement, test, static analysis, peer review.
    let project = Project::with_starter();
    let mut ed = serve(&project, fast());
    let result = ed
        .request("rawko/listWorkflows", json!({}))
        .expect("listWorkflows");
    let feature = result["workflows"]
        .as_array()
        .and_then(|l| l.iter().find(|w| w["key"] == "feature"))
        .cloned()
        .expect("feature");
    assert_eq!(feature["phaseCount"], 5, "{feature}");
}

#[test]
fn list_tasks_and_get_task_describe_a_running_task() {
    let project = Project::with_starter();
    let script = project.script("slow", SLOW_TURN);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    wait_output(&mut ed, &task, "context_injected", |_| true);

    let list = ed.request("rawko/listTasks", json!({})).expect("listTasks");
    let tasks = list["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 1, "{list}");
    let t = &tasks[0];
    assert_eq!(t["taskId"], json!(task));
    assert_eq!(t["description"], DESCRIPTION);
    assert_eq!(t["workflow"], "feature");
    assert_eq!(t["state"], "running");
    assert_eq!(t["breadcrumbText"], "Feature > 📋 Plan [1/4]");
    assert!(
        t["startedAt"]
            .as_u64()
            .is_some_and(|ms| ms > 1_600_000_000_000),
        "{t}"
    );

    let detail = ed
        .request("rawko/getTask", json!({"taskId": task}))
        .expect("getTask");
    let d = &detail["task"];
    assert_eq!(d["taskId"], json!(task));
    assert_eq!(d["state"], "running");
    assert_eq!(d["breadcrumbText"], "Feature > 📋 Plan [1/4]");
    assert_eq!(
        d["breadcrumb"],
        json!([{"name": "Feature", "phaseName": "Plan", "emoji": "📋", "index": 1, "total": 4}])
    );
    let history = d["history"].as_array().expect("history");
    assert!(!history.is_empty(), "{detail}");
    for (i, h) in history.iter().enumerate() {
        assert_eq!(h["seq"], i as u64 + 1, "{h}");
        assert!(h["at"].as_u64().is_some(), "{h}");
        assert!(h["event"].as_str().is_some_and(|e| !e.is_empty()), "{h}");
    }
}

#[test]
fn list_tasks_shows_the_most_recently_started_first() {
    // docs/protocol.md: "every task, most recently started first".
    let project = Project::with_starter();
    let script = project.script("slow", SLOW_TURN);
    let mut ed = serve(&project, fast());
    let first = start(&mut ed, &script);
    wait_output(&mut ed, &first, "context_injected", |_| true);
    let second = start(&mut ed, &script);
    wait_output(&mut ed, &second, "context_injected", |_| true);
    let list = ed.request("rawko/listTasks", json!({})).expect("listTasks");
    let ids: Vec<&Value> = list["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| &t["taskId"])
        .collect();
    assert_eq!(ids, [&json!(second), &json!(first)], "{list}");
}

// ---------------------------------------------------------------------------------------------
// Provider failures
// ---------------------------------------------------------------------------------------------

#[test]
fn a_script_that_runs_out_fails_the_task_with_script_exhausted() {
    let project = Project::with_starter();
    let script = project.script(
        "short",
        "turns:\n  - tool_calls:\n      - {name: Read, input: {path: README.md}}\n",
    );
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "failed", "{finished}");
    assert!(
        finished["summary"]
            .as_str()
            .is_some_and(|s| s.contains("script exhausted")),
        "{finished}"
    );
    let notes = ed.notifications(&task);
    let errors = notes_of(&notes, "rawko/output", Some("error"));
    assert!(
        errors.iter().any(|e| text(e).contains("script exhausted")),
        "an error output: {errors:?}"
    );
    let failed = wait_status(&mut ed, &task, "failed");
    assert!(seq(&failed) < seq(&finished));
}

#[test]
fn a_recoverable_provider_error_is_retried_and_the_task_goes_on() {
    // rawko-sdk's machine: rate_limited and network_error are recoverable.
    let project = Project::with_starter();
    let script = project.script(
        "limited",
        "turns:\n  - error: rate_limited\n  - text: \"Back after the pause.\"\n",
    );
    let mut ed = serve(&project, fast());
    let started = ed
        .request(
            "rawko/startTask",
            json!({"description": DESCRIPTION, "provider": "scripted", "script": script}),
        )
        .expect("startTask");
    let task = started["taskId"].as_str().expect("taskId").to_owned();
    wait_output(&mut ed, &task, "error", |p| {
        text(p).contains("rate_limited")
    });
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "complete", "{finished}");
    let detail = ed
        .request("rawko/getTask", json!({"taskId": task}))
        .expect("getTask");
    let history = detail["task"]["history"].as_array().expect("history");
    assert!(
        history.iter().any(|h| h["event"] == "machine:AGENT_ERROR"
            && h["guard"] == "isRecoverableError"
            && h["stateAfter"] == "selecting"),
        "{detail:#}"
    );
}

#[test]
fn an_unrecoverable_provider_error_fails_the_task_naming_the_error_code() {
    let project = Project::with_starter();
    let script = project.script("denied", "turns:\n  - error: authentication_failed\n");
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "failed", "{finished}");
    assert!(
        finished["summary"]
            .as_str()
            .is_some_and(|s| s.contains("authentication_failed")),
        "{finished}"
    );
    wait_output(&mut ed, &task, "error", |p| {
        text(p).contains("authentication_failed")
    });
}

#[test]
fn three_failures_in_a_row_end_the_task() {
    let project = Project::with_starter();
    let script = project.script(
        "flaky",
        "turns:\n  - error: network_error\n  - error: rate_limited\n  - error: network_error\n  - text: never\n",
    );
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "failed", "{finished}");
    let summary = finished["summary"].as_str().unwrap_or_default();
    assert!(summary.contains("3 consecutive failures"), "{finished}");
}

// ---------------------------------------------------------------------------------------------
// Bad input: a clear JSON-RPC error, and the server keeps serving
// ---------------------------------------------------------------------------------------------

/// Waits for an error response without an id (a frame that could not be read as a request).
fn wait_error_without_id(ed: &mut Editor, code: i64) -> Value {
    ed.wait_for(&format!("an error {code} with id null"), TIMEOUT, |m| {
        is_response(m) && m["id"].is_null() && m["error"]["code"] == code
    })
}

#[test]
fn invalid_json_is_a_parse_error_and_the_server_keeps_serving() {
    let project = Project::with_starter();
    let mut ed = serve(&project, fast());
    ed.send_frame(br#"{"jsonrpc": "2.0", "id": 99, "method": nope"#);
    wait_error_without_id(&mut ed, -32700);
    assert_still_serving(&mut ed);
}

#[test]
fn json_that_is_not_a_request_is_an_invalid_request_and_the_server_keeps_serving() {
    let project = Project::with_starter();
    let mut ed = serve(&project, fast());
    ed.send_frame(br#"{"hello": "world"}"#);
    wait_error_without_id(&mut ed, -32600);
    assert_still_serving(&mut ed);
}

#[test]
fn a_too_short_content_length_is_a_parse_error_and_the_server_keeps_serving() {
    let project = Project::with_starter();
    let mut ed = serve(&project, fast());
    let body =
        json!({"jsonrpc": "2.0", "id": 98, "method": "rawko/listTasks", "params": {}}).to_string();
    let mut bytes = format!("Content-Length: {}\r\n\r\n", body.len() - 12).into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    ed.send_raw(&bytes);
    wait_error_without_id(&mut ed, -32700);
    assert_still_serving(&mut ed);
}

#[test]
fn a_too_long_content_length_is_a_parse_error_and_later_traffic_is_served() {
    let project = Project::with_starter();
    let mut ed = serve(&project, fast());
    let body =
        json!({"jsonrpc": "2.0", "id": 97, "method": "rawko/listTasks", "params": {}}).to_string();
    let mut bytes = format!("Content-Length: {}\r\n\r\n", body.len() + 20).into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    ed.send_raw(&bytes);
    // More traffic: the first 20 bytes of this notification complete the bad frame.
    ed.notify("$/rawko/filler", json!({"padding": "x".repeat(64)}));
    wait_error_without_id(&mut ed, -32700);
    assert_still_serving(&mut ed);
    assert_still_serving(&mut ed);
}

#[test]
fn an_unknown_method_is_method_not_found() {
    let project = Project::with_starter();
    let mut ed = serve(&project, fast());
    assert_error(ed.request("rawko/explode", json!({})), -32601);
    assert_still_serving(&mut ed);
}

#[test]
fn params_that_do_not_fit_are_invalid_params() {
    let project = Project::with_starter();
    let script = project.script("slow", SLOW_TURN);
    let mut ed = serve(&project, fast());
    let e = assert_error(
        ed.request(
            "rawko/startTask",
            json!({"workflow": "feature", "script": script}),
        ),
        -32602,
    );
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("description")),
        "{e}"
    );
    let task = start(&mut ed, &script);
    let e = assert_error(
        ed.request("rawko/step", json!({"taskId": task, "action": "jump"})),
        -32602,
    );
    assert!(
        e["message"].as_str().is_some_and(|m| m.contains("jump")),
        "{e}"
    );
    assert_error(
        ed.request(
            "rawko/startTask",
            json!({"description": 42, "script": script}),
        ),
        -32602,
    );
    assert_still_serving(&mut ed);
}

#[test]
fn a_ten_megabyte_message_is_refused_naming_the_limit() {
    let project = Project::with_starter();
    let script = project.script("slow", SLOW_TURN);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    let huge = "x".repeat(10 * 1024 * 1024);
    let e = assert_error(
        ed.request_within(
            "rawko/sendMessage",
            json!({"taskId": task, "text": huge}),
            Duration::from_secs(60),
        ),
        -32602,
    );
    let message = e["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("limit")
            && (message.contains("1048576")
                || message.contains("1 MiB")
                || message.contains("1 MB")),
        "the message names the limit: {message:?}"
    );
    assert_still_serving(&mut ed);
    let detail = ed
        .request("rawko/getTask", json!({"taskId": task}))
        .expect("getTask");
    assert_eq!(detail["task"]["state"], "running", "the task goes on");
}

#[test]
fn a_request_before_initialize_is_refused_as_not_initialized() {
    let project = Project::with_starter();
    let mut ed = Editor::spawn(&project.ws);
    assert_error(ed.request("rawko/listTasks", json!({})), -32002);
    assert_error(
        ed.request("rawko/startTask", start_params("x.yaml")),
        -32002,
    );
    ed.initialize(fast());
    assert_still_serving(&mut ed);
}

#[test]
fn an_unknown_method_before_initialize_is_not_initialized() {
    // docs/protocol.md: any request before `initialize` is answered -32002, known or not.
    let project = Project::with_starter();
    let mut ed = Editor::spawn(&project.ws);
    assert_error(ed.request("rawko/explode", json!({})), -32002);
    assert_error(ed.request("textDocument/hover", json!({})), -32002);
    ed.initialize(fast());
    assert_error(ed.request("rawko/explode", json!({})), -32601);
    assert_still_serving(&mut ed);
}

#[test]
fn a_rejected_shutdown_changes_nothing() {
    let project = Project::with_starter();
    let script = project.script("slow", SLOW_TURN);
    let mut ed = serve(&project, fast());
    // `shutdown` takes no params: refused, and the server goes on as if it had not come.
    assert_error(ed.request("shutdown", json!({})), -32602);
    assert_error(ed.request("shutdown", json!({"now": true})), -32602);
    assert_still_serving(&mut ed);
    let task = start(&mut ed, &script);
    wait_output(&mut ed, &task, "context_injected", |_| true);
    assert_error(ed.request("rawko/explode", json!({})), -32601);
    // A proper shutdown is accepted; only after it are requests refused.
    assert_eq!(ed.request("shutdown", Value::Null), Ok(Value::Null));
    assert_error(ed.request("rawko/listTasks", json!({})), -32600);
    assert_error(ed.request("rawko/explode", json!({})), -32600);
}

/// The most an error may take, whatever the size of the input it refuses: a short prefix of the
/// input is quoted, never the whole of it.
const SHORT_ERROR_BYTES: usize = 400;

#[track_caller]
fn assert_short(error: &Value, what: &str) {
    let whole = error.to_string();
    assert!(
        whole.len() <= SHORT_ERROR_BYTES,
        "{what}: the error quotes too much ({} bytes): {}",
        whole.len(),
        support::shorten(&whole, 300)
    );
}

#[test]
fn error_messages_quote_only_a_short_prefix_of_huge_input() {
    let project = Project::with_starter();
    let script = project.script("slow", SLOW_TURN);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    let long = Duration::from_secs(60);
    let huge = "x".repeat(1 << 20);
    let check = |ed: &mut Editor, method: &str, params: Value, code: i64| {
        let e = assert_error(ed.request_within(method, params, long), code);
        assert_short(&e, method);
        let message = e["message"].as_str().unwrap_or_default();
        assert!(
            !message.contains("xxxx") || message.contains("xxxx…"),
            "{method}: a cut quote ends with an ellipsis: {message}"
        );
    };
    // A huge task id, to every method that takes one.
    for method in [
        "rawko/getTask",
        "rawko/cancelTask",
        "rawko/interrupt",
        "rawko/resumeTask",
        "rawko/skipStep",
        "rawko/retry",
        "rawko/reset",
    ] {
        check(&mut ed, method, json!({"taskId": huge}), -32001);
    }
    check(
        &mut ed,
        "rawko/step",
        json!({"taskId": huge, "action": "status"}),
        -32001,
    );
    check(
        &mut ed,
        "rawko/sendMessage",
        json!({"taskId": huge, "text": "hi"}),
        -32001,
    );
    check(
        &mut ed,
        "rawko/setWorkflow",
        json!({"taskId": huge, "workflow": "feature"}),
        -32001,
    );
    check(
        &mut ed,
        "rawko/forceAgent",
        json!({"taskId": huge, "agent": "default"}),
        -32001,
    );
    // Huge names of other things.
    let mut params = start_params(&script);
    params["workflow"] = json!(huge);
    check(&mut ed, "rawko/startTask", params, -32004);
    let mut params = start_params(&script);
    params["agent"] = json!(huge);
    check(&mut ed, "rawko/startTask", params, -32602);
    let mut params = start_params(&script);
    params["provider"] = json!(huge);
    check(&mut ed, "rawko/startTask", params, -32602);
    let mut params = start_params(&script);
    params["script"] = json!(huge);
    check(&mut ed, "rawko/startTask", params, -32602);
    check(
        &mut ed,
        "rawko/setWorkflow",
        json!({"taskId": task, "workflow": huge}),
        -32004,
    );
    check(
        &mut ed,
        "rawko/forceAgent",
        json!({"taskId": task, "agent": huge}),
        -32602,
    );
    check(
        &mut ed,
        "rawko/step",
        json!({"taskId": task, "action": huge}),
        -32602,
    );
    check(
        &mut ed,
        "workspace/executeCommand",
        json!({"command": huge, "arguments": []}),
        -32601,
    );
    check(
        &mut ed,
        "workspace/executeCommand",
        json!({"command": "rawko.step", "arguments": [{"taskId": task, "action": huge}]}),
        -32602,
    );
    check(&mut ed, &huge, json!({}), -32601);
    check(&mut ed, "shutdown", json!({"why": huge}), -32602);
    // The attack's size: a 16 MiB task id.
    let bigger = "x".repeat(16 << 20);
    check(&mut ed, "rawko/getTask", json!({"taskId": bigger}), -32001);
    assert_still_serving(&mut ed);
}

#[test]
fn an_unknown_task_id_is_unknown_task() {
    let project = Project::with_starter();
    let mut ed = serve(&project, fast());
    let id = json!({"taskId": "task-does-not-exist"});
    for (method, params) in [
        ("rawko/getTask", id.clone()),
        ("rawko/cancelTask", id.clone()),
        ("rawko/interrupt", id.clone()),
        ("rawko/resumeTask", id.clone()),
        (
            "rawko/step",
            json!({"taskId": "task-does-not-exist", "action": "status"}),
        ),
        (
            "rawko/sendMessage",
            json!({"taskId": "task-does-not-exist", "text": "hi"}),
        ),
    ] {
        let e = assert_error(ed.request(method, params), -32001);
        assert!(
            e["message"]
                .as_str()
                .is_some_and(|m| m.contains("task-does-not-exist")),
            "{method}: {e}"
        );
    }
    assert_still_serving(&mut ed);
}

#[test]
fn an_unknown_workflow_is_workflow_not_found() {
    let project = Project::with_starter();
    let script = project.script("slow", SLOW_TURN);
    let mut ed = serve(&project, fast());
    let mut params = start_params(&script);
    params["workflow"] = json!("bugfix");
    let e = assert_error(ed.request("rawko/startTask", params), -32004);
    let message = e["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("bugfix") && message.contains("feature"),
        "{e}"
    );
    assert_still_serving(&mut ed);
}

#[test]
fn a_subworkflow_only_workflow_cannot_be_started() {
    let project = Project::with_starter();
    let script = project.script("slow", SLOW_TURN);
    let mut ed = serve(&project, fast());
    let mut params = start_params(&script);
    params["workflow"] = json!("review");
    let e = assert_error(ed.request("rawko/startTask", params), -32004);
    assert!(
        e["message"].as_str().is_some_and(|m| m.contains("review")),
        "{e}"
    );
    let list = ed.request("rawko/listTasks", json!({})).expect("listTasks");
    assert_eq!(list["tasks"], json!([]), "no task was started");
}

#[test]
fn a_missing_script_file_is_invalid_params_naming_the_path() {
    let project = Project::with_starter();
    let mut ed = serve(&project, fast());
    let e = assert_error(
        ed.request("rawko/startTask", start_params("scripts/missing.yaml")),
        -32602,
    );
    let message = e["message"].as_str().unwrap_or_default();
    assert!(message.contains("scripts/missing.yaml"), "{e}");
    assert_still_serving(&mut ed);
}

// ---------------------------------------------------------------------------------------------
// Concurrency (DESIGN invariant 4)
// ---------------------------------------------------------------------------------------------

#[test]
fn requests_are_answered_while_eight_tasks_wait_for_approval() {
    let project = Project::with_starter();
    let script = project.script("write", WRITE_IN_PLAN);
    let mut ed = serve(&project, fast());
    // The editor leaves every approval unanswered.
    let tasks: Vec<String> = (0..8).map(|_| start(&mut ed, &script)).collect();
    for task in &tasks {
        wait_approval(&mut ed, task);
    }

    let mut sent = Vec::new();
    for i in 0..200 {
        let task = &tasks[i % tasks.len()];
        let (method, params) = match i % 3 {
            0 => ("rawko/listTasks", json!({})),
            1 => ("rawko/getTask", json!({"taskId": task})),
            _ => ("rawko/listWorkflows", json!({})),
        };
        sent.push((ed.send_request(method, params), method));
    }
    for (id, method) in sent {
        let answer = ed.response(id, &format!("the response to {method} (id {id})"), TIMEOUT);
        let result = answer.unwrap_or_else(|e| panic!("{method} (id {id}) failed: {e}"));
        match method {
            "rawko/listTasks" => assert_eq!(result["tasks"].as_array().map(Vec::len), Some(8)),
            "rawko/getTask" => assert_eq!(result["task"]["state"], "waiting_approval"),
            _ => assert!(result["workflows"].is_array(), "{result}"),
        }
    }

    for task in &tasks {
        assert_eq!(
            ed.request("rawko/cancelTask", json!({"taskId": task})),
            Ok(json!({})),
            "cancel {task}"
        );
    }
    for task in &tasks {
        wait_status(&mut ed, task, "cancelled");
        let finished = wait_finished(&mut ed, task);
        assert_eq!(finished["outcome"], "cancelled", "{finished}");
    }
    let list = ed.request("rawko/listTasks", json!({})).expect("listTasks");
    assert!(
        list["tasks"]
            .as_array()
            .is_some_and(|l| l.iter().all(|t| t["state"] == "cancelled")),
        "{list}"
    );
}

#[test]
fn every_client_request_in_the_protocol_is_dispatched() {
    // rawko_protocol::ALL_METHODS is the list the schema and the docs are made from; the server
    // must answer each of its client → server requests (with a result or an error of its own,
    // never "method not found").
    let project = Project::with_starter();
    let mut ed = serve(&project, fast());
    let mut asked = 0;
    for info in rawko_protocol::ALL_METHODS {
        if info.direction != rawko_protocol::Direction::ClientToServer {
            continue;
        }
        asked += 1;
        let answer = ed.request(info.method, json!({}));
        if let Err(error) = &answer {
            assert_ne!(
                error["code"],
                json!(-32601),
                "{} is in ALL_METHODS but the server does not dispatch it: {error}",
                info.method
            );
        }
    }
    assert!(asked >= 15, "{asked}");
    assert_still_serving(&mut ed);
}

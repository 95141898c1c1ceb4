//! A whole task.

use super::*;

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

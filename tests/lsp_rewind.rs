//! `rawko/rewindTask` through `rawko serve`, in a workspace that is no git repository (its
//! checkpoints are in the task's private repository): a dry run, a rewind of a finished task
//! and its resume to the end, a running task refused, an unknown task.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::{Editor, Project};

const TIMEOUT: Duration = Duration::from_secs(20);

/// Into Implement, a Write there, then on to the end.
const SCRIPT: &str = "turns:
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: Write, input: {file_path: a.txt, content: \"from the task\"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: \"All done.\"
";

fn serve(project: &Project, home: &std::path::Path) -> Editor {
    let mut ed = Editor::spawn_in(&project.path(""), home);
    ed.set_approval_policy(|_| Some("allow_once"));
    ed.initialize(json!({"countdownTickMillis": 2, "approvalTimeoutSeconds": 30}));
    ed
}

fn start(ed: &mut Editor, script: &str) -> String {
    let r = ed
        .request(
            "rawko/startTask",
            json!({"description": "Add a flag", "workflow": "feature", "agent": "default",
                "provider": "scripted", "script": script}),
        )
        .expect("startTask");
    r["taskId"].as_str().expect("taskId").to_owned()
}

/// The task's next `rawko/taskFinished` (one waited for is taken).
fn finished(ed: &mut Editor, task: &str) -> Value {
    ed.wait_for("the task finishing", TIMEOUT, |m| {
        m["method"] == "rawko/taskFinished" && m["params"]["taskId"] == task
    })["params"]
        .clone()
}

#[test]
fn a_finished_task_is_rewound_to_implement_and_resumed_to_its_end() {
    let project = Project::with_starter();
    let home = tempfile::tempdir().expect("home");
    let script = project.script("rewind", SCRIPT);
    let mut ed = serve(&project, home.path());
    let task = start(&mut ed, &script);
    assert_eq!(finished(&mut ed, &task)["outcome"], "complete");
    assert!(project.path("a.txt").exists());

    let dry = ed
        .request(
            "rawko/rewindTask",
            json!({"taskId": task, "index": 1, "dryRun": true}),
        )
        .expect("a dry run");
    assert_eq!(
        dry,
        json!({"rewound": false, "phase": "Implement",
            "changes": [{"path": "a.txt", "action": "remove"}], "conflicts": [],
            "text": "would restore 0 files and remove 1 file to rewind to the start of Implement (dry run: nothing changed)"})
    );
    assert!(project.path("a.txt").exists(), "a dry run changes nothing");

    let done = ed
        .request("rawko/rewindTask", json!({"taskId": task, "index": 1}))
        .expect("a rewind");
    assert_eq!(done["rewound"], true, "{done}");
    assert_eq!(done["changes"], json!([{"path": "a.txt", "action": "remove"}]));
    assert!(!project.path("a.txt").exists());
    let detail = ed
        .request("rawko/getTask", json!({"taskId": task}))
        .expect("getTask");
    assert_eq!(detail["task"]["state"], "interrupted", "{detail:#}");
    let text = detail["task"]["breadcrumbText"].as_str().unwrap_or_default();
    assert!(text.contains("Implement [2/4]"), "{text}");

    assert_eq!(
        ed.request("rawko/resumeTask", json!({"taskId": task})),
        Ok(json!({}))
    );
    assert_eq!(finished(&mut ed, &task)["outcome"], "complete");
    assert!(project.path("a.txt").exists(), "Implement ran again");
}

#[test]
fn a_running_task_and_an_unknown_one_are_refused() {
    let project = Project::with_starter();
    let home = tempfile::tempdir().expect("home");
    let script = project.script(
        "slow",
        "turns:\n  - text: \"Thinking.\"\n    delay_ms: 20000\n",
    );
    let mut ed = serve(&project, home.path());
    let task = start(&mut ed, &script);
    ed.wait_for("the task running", TIMEOUT, |m| {
        m["method"] == "rawko/status"
            && m["params"]["taskId"] == task.as_str()
            && m["params"]["state"] == "running"
    });
    // Its first records are in the store once the turn is asked for.
    std::thread::sleep(Duration::from_millis(300));
    let err = ed
        .request("rawko/rewindTask", json!({"taskId": task, "index": 0}))
        .expect_err("a running task");
    assert_eq!(err["code"], -32003, "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap_or_default()
            .contains("interrupt it first"),
        "{err}"
    );
    let _ = ed.request("rawko/cancelTask", json!({"taskId": task}));
    let err = ed
        .request(
            "rawko/rewindTask",
            json!({"taskId": "task-nope", "index": 0}),
        )
        .expect_err("an unknown task");
    assert_eq!(err["code"], -32001, "{err}");
}

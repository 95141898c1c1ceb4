//! Many tasks over one connection (issue 19), at suite size: 200 tasks on one `rawko serve`, each
//! through the nested starter workflow (Read and Grep in Plan, `workflow_step` through Implement,
//! Test and the Review subworkflow) with a blocked Write whose approval the editor holds until all
//! 200 have started and wait, and an early stop whose reminder comes at once (countdown 0). Every
//! task must complete, its notifications must arrive in `seq` order from 1 without a gap, its
//! approval must be asked once, and `rawko/listTasks` must list all 200 as complete. No time is
//! asserted: `cargo bench -p rawko --bench scale -- concurrent` measures the full-size run.

#[path = "support/mod.rs"]
mod support;

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use serde_json::{json, Value};
use support::{Editor, Project};

const TASKS: usize = 200;

/// The longest wait for any one message: generous, for a debug build on a small machine.
const PATIENCE: Duration = Duration::from_secs(120);

/// Plan reads, then its Write is blocked and waits for the editor; in Implement the agent stops
/// early, the reminder follows at once, and the agent walks the rest of the workflow.
const NESTED: &str = r#"
turns:
  - text: "Reading first."
    tool_calls:
      - {name: Read, input: {path: README.md}}
      - {name: Grep, input: {pattern: Hello}}
  - tool_calls:
      - {name: Write, input: {path: PLAN.md, content: "1. shout\n"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "I think that is all."
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: Grep, input: {pattern: name}}
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: Read, input: {path: greet.sh}}
      - {name: workflow_step, input: {action: next}}
  - text: "Done."
"#;

fn is_approval(m: &Value) -> bool {
    m["method"] == "rawko/approveToolCall" && m.get("id").is_some()
}

#[test]
fn two_hundred_nested_tasks_held_at_an_approval_all_complete_in_order() {
    let project = Project::with_starter();
    let script = project.script("nested", NESTED);
    let mut ed = Editor::spawn(&project.ws);
    // The editor's default policy leaves every approval unanswered: the test answers them.
    ed.initialize(json!({
        "countdownTickMillis": 20,
        "countdownSeconds": 0,
        "approvalTimeoutSeconds": 3600,
    }));
    let before = stats(&mut ed);

    let requests: Vec<i64> = (0..TASKS)
        .map(|i| {
            ed.send_request(
                "rawko/startTask",
                json!({
                    "description": format!("scale task {i}"),
                    "workflow": "feature",
                    "provider": "scripted",
                    "script": script,
                }),
            )
        })
        .collect();
    let tasks: Vec<String> = requests
        .iter()
        .map(|&id| {
            let result = ed
                .response(
                    id,
                    &format!("the response to rawko/startTask {id}"),
                    PATIENCE,
                )
                .unwrap_or_else(|e| panic!("rawko/startTask failed: {e}"));
            result["taskId"]
                .as_str()
                .unwrap_or_else(|| panic!("no taskId in {result}"))
                .to_owned()
        })
        .collect();
    let started: BTreeSet<&str> = tasks.iter().map(String::as_str).collect();
    assert_eq!(started.len(), TASKS, "task ids are distinct");

    // Every task reaches its blocked Write; none goes past it while the approvals are held.
    let held: Vec<Value> = (0..TASKS)
        .map(|_| ed.wait_for("an approval request", PATIENCE, is_approval))
        .collect();
    let asked: BTreeSet<&str> = held
        .iter()
        .map(|m| m["params"]["taskId"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(asked, started, "one approval for each task");
    for m in &held {
        assert_eq!(m["params"]["tool"], "Write", "{m}");
    }
    let early: Vec<Value> = ed
        .received()
        .into_iter()
        .filter(|m| m["method"] == "rawko/taskFinished")
        .collect();
    assert!(early.is_empty(), "finished while held: {early:?}");

    for m in &held {
        ed.reply(&m["id"], json!({"outcome": "allow_once"}));
    }
    for _ in 0..TASKS {
        ed.wait_for("a rawko/taskFinished", PATIENCE, |m| {
            m["method"] == "rawko/taskFinished"
        });
    }

    let list = ed
        .request_within("rawko/listTasks", json!({}), PATIENCE)
        .unwrap_or_else(|e| panic!("rawko/listTasks failed: {e}"));
    let listed: HashMap<&str, &Value> = list["tasks"]
        .as_array()
        .unwrap_or_else(|| panic!("no tasks in {list}"))
        .iter()
        .map(|t| (t["taskId"].as_str().unwrap_or_default(), &t["state"]))
        .collect();
    assert_eq!(listed.len(), TASKS, "{list}");
    for task in &tasks {
        assert_eq!(
            listed.get(task.as_str()).copied(),
            Some(&json!("complete")),
            "{task} in rawko/listTasks"
        );
    }

    // Each task's notifications, in arrival order.
    let mut notes: HashMap<String, Vec<Value>> = HashMap::new();
    for m in ed.received() {
        if m.get("id").is_none() {
            if let Some(task) = m["params"]["taskId"].as_str() {
                notes.entry(task.to_owned()).or_default().push(m.clone());
            }
        }
    }
    for task in &tasks {
        let notes = notes
            .get(task)
            .unwrap_or_else(|| panic!("no notification of {task}"));
        let seqs: Vec<u64> = notes
            .iter()
            .map(|m| m["params"]["seq"].as_u64().unwrap_or(0))
            .collect();
        let want: Vec<u64> = (1..=notes.len() as u64).collect();
        assert_eq!(seqs, want, "{task}: seq in arrival order");
        let last = notes.last().expect("a notification");
        assert_eq!(last["method"], "rawko/taskFinished", "{task}: {last}");
        assert_eq!(last["params"]["outcome"], "complete", "{task}: {last}");
        let finished = notes
            .iter()
            .filter(|m| m["method"] == "rawko/taskFinished")
            .count();
        assert_eq!(finished, 1, "{task}: one rawko/taskFinished");
        let outputs = |kind: &str| {
            notes
                .iter()
                .filter(|m| m["method"] == "rawko/output" && m["params"]["kind"] == kind)
                .count()
        };
        assert_eq!(outputs("reminder"), 1, "{task}: the early stop's reminder");
        let tools: BTreeSet<&str> = notes
            .iter()
            .filter(|m| m["method"] == "rawko/output" && m["params"]["kind"] == "tool_call")
            .filter_map(|m| m["params"]["tool"].as_str())
            .collect();
        assert_eq!(
            tools,
            BTreeSet::from(["Grep", "Read", "Write", "workflow_step"]),
            "{task}: the tools it called"
        );
    }

    // Each approval was asked once, also counting any that came after the release.
    let approvals = ed.approval_requests();
    assert_eq!(approvals.len(), TASKS, "approval requests in all");

    // Nothing of the finished tasks is left behind: no task in memory, no open log, no pending
    // request, no runtime task and no file handle more than before the first task. A task is
    // forgotten just after its last notification (once its files are written): wait for it.
    let deadline = std::time::Instant::now() + PATIENCE;
    let mut after = stats(&mut ed);
    while after["tasksInMemory"] != 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        after = stats(&mut ed);
    }
    for (key, want) in [
        ("tasksInMemory", 0),
        ("openLogs", 0),
        ("pendingClientRequests", 0),
    ] {
        assert_eq!(after[key], want, "{key} after all tasks finished: {after}");
    }
    for key in ["runtimeTasks", "openFiles"] {
        let (b, a) = (
            before[key].as_u64().unwrap_or(0),
            after[key].as_u64().unwrap_or(u64::MAX),
        );
        assert!(a <= b, "{key}: {b} before the tasks, {a} after: {after}");
    }
    assert!(
        after["logRecords"].as_u64().unwrap_or(0) > after["logSyncs"].as_u64().unwrap_or(0),
        "group commit: fewer syncs than records: {after}"
    );
    // Nothing is left queued for the log writer, and every announcement's wait was counted:
    // at least one per notification the tasks sent (they all went out behind their records).
    assert_eq!(after["logBacklogBytes"], 0, "log backlog: {after}");
    let counted: u64 = after["announceLatencyMicros"]
        .as_array()
        .map(|b| b.iter().filter_map(|b| b[1].as_u64()).sum())
        .unwrap_or(0);
    let notes: u64 = notes.values().map(|n| n.len() as u64).sum();
    assert!(
        counted >= notes,
        "{counted} announcements timed, {notes} notifications: {after}"
    );
}

fn stats(ed: &mut Editor) -> Value {
    ed.request_within("rawko/serverStats", json!({}), PATIENCE)
        .unwrap_or_else(|e| panic!("rawko/serverStats failed: {e}"))
}

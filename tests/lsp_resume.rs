//! Persistence and resume of `rawko serve`, with real crashes: the server is killed with SIGKILL
//! at random points of a scripted task, a new server finds the task unfinished (listed as
//! `interrupted`), and `rawko/resumeTask` carries it to the end. After each kill: no recorded
//! event is lost (the log before the kill is a prefix of the log after), and no tool call whose
//! completion was recorded runs twice (each Bash call appends its own marker to a ledger file).

mod support;

use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use support::{Editor, Project};

const TIMEOUT: Duration = Duration::from_secs(20);

/// The feature workflow, with side effects that tell how often each call ran.
fn script() -> String {
    let mut s = String::from("turns:\n");
    s.push_str("  - text: \"Planning.\"\n    tool_calls:\n      - {name: Read, input: {path: README.md}}\n");
    s.push_str(
        "  - tool_calls:\n      - {name: Write, input: {path: plan.md, content: \"the plan\"}}\n",
    );
    s.push_str("  - tool_calls:\n      - {name: workflow_step, input: {action: next}}\n");
    for i in 0..12 {
        s.push_str(&format!(
            "  - text: \"Step {i}.\"\n    delay_ms: 3\n    tool_calls:\n      - {{name: Bash, input: {{command: \"echo m{i:02} >> ledger.txt\"}}}}\n"
        ));
    }
    s.push_str("  - tool_calls:\n      - {name: workflow_step, input: {action: next}}\n");
    s.push_str("  - text: \"Tests pass.\"\n");
    for i in 12..16 {
        s.push_str(&format!(
            "  - delay_ms: 3\n    tool_calls:\n      - {{name: Bash, input: {{command: \"echo m{i:02} >> ledger.txt\"}}}}\n"
        ));
    }
    for _ in 0..3 {
        s.push_str("  - tool_calls:\n      - {name: workflow_step, input: {action: next}}\n");
    }
    s.push_str("  - text: \"All done.\"\n");
    s
}

fn project() -> Project {
    let project = Project::with_starter();
    project.write("README.md", "# a project\n");
    project
}

fn options() -> Value {
    json!({"countdownTickMillis": 2, "approvalTimeoutSeconds": 30})
}

fn serve(project: &Project, home: &Path) -> Editor {
    let mut ed = Editor::spawn_in(&project.path(""), home);
    ed.set_approval_policy(|_| Some("allow_once"));
    ed.initialize(options());
    ed
}

fn log_lines(home: &Path, task: &str) -> Vec<String> {
    let path = Editor::state_dir(home)
        .join("tasks")
        .join(task)
        .join("events.jsonl");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    // Only complete lines count: a line cut by the kill was never recorded.
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    complete.lines().map(str::to_owned).collect()
}

fn events(lines: &[String]) -> Vec<Value> {
    lines
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).expect("a log line is JSON")["event"].clone())
        .collect()
}

/// The ledger markers of the Bash calls whose completion the log records.
fn finished_markers(events: &[Value]) -> Vec<String> {
    let mut commands: HashMap<String, String> = HashMap::new();
    let mut done = Vec::new();
    for e in events {
        if e["type"] == "turn" {
            for c in e["toolCalls"].as_array().into_iter().flatten() {
                if let Some(cmd) = c["input"]["command"].as_str() {
                    commands.insert(
                        c["id"].as_str().unwrap_or_default().to_owned(),
                        cmd.to_owned(),
                    );
                }
            }
        }
        if e["type"] == "tool_finished" {
            if let Some(cmd) = commands.get(e["id"].as_str().unwrap_or_default()) {
                done.push(cmd.split_whitespace().nth(1).unwrap_or_default().to_owned());
            }
        }
    }
    done
}

fn ledger(project: &Project) -> Vec<String> {
    std::fs::read_to_string(project.path("ledger.txt"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn wait_finished(ed: &mut Editor, task: &str) -> Value {
    ed.wait_for("rawko/taskFinished", TIMEOUT, |m| {
        m["method"] == "rawko/taskFinished" && m["params"]["taskId"] == task
    })["params"]
        .clone()
}

fn start(ed: &mut Editor, script: &str) -> String {
    let r = ed
        .request(
            "rawko/startTask",
            json!({"description": "Crash me", "workflow": "feature", "provider": "scripted", "script": script}),
        )
        .expect("startTask");
    r["taskId"].as_str().expect("taskId").to_owned()
}

/// Runs the task once without a crash; returns how many notifications it sends.
fn notifications_of_a_whole_run() -> usize {
    let project = project();
    let home = tempfile::tempdir().expect("home");
    let script = project.script("crash", &script());
    let mut ed = serve(&project, home.path());
    let task = start(&mut ed, &script);
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "complete", "{finished}");
    let markers = ledger(&project);
    assert_eq!(markers.len(), 16, "{markers:?}");
    ed.notifications(&task).len()
}

/// A small deterministic generator, so a failing run can be repeated from its seed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % below.max(1)
    }
}

#[test]
fn a_task_killed_at_fifty_random_points_resumes_without_losing_or_repeating_anything() {
    let total = notifications_of_a_whole_run();
    let seed = std::env::var("RAWKO_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_2026_u64);
    let mut rng = Lcg(seed);
    let mut resumed = 0;
    for round in 0..50 {
        let project = project();
        let home = tempfile::tempdir().expect("home");
        let script = project.script("crash", &script());
        // Kill after a random number of notifications: anywhere from the first to the last.
        let kill_after = 1 + rng.next(total);
        let mut ed = serve(&project, home.path());
        let task = start(&mut ed, &script);
        let mut seen = 0;
        let mut finished_before_kill = false;
        while seen < kill_after {
            let m = ed.wait_for("a notification of the task", TIMEOUT, |m| {
                m["params"]["taskId"] == task.as_str()
                    && m.get("method").is_some()
                    && m.get("id").is_none()
            });
            seen += 1;
            if m["method"] == "rawko/taskFinished" {
                finished_before_kill = true;
                break;
            }
        }
        ed.kill9();
        drop(ed);
        let before = log_lines(home.path(), &task);
        let context = format!(
            "round {round} (seed {seed}, killed after {kill_after} of {total} notifications)"
        );
        assert!(
            !before.is_empty(),
            "{context}: the task start was not recorded"
        );

        let mut ed = serve(&project, home.path());
        let listed = ed.request("rawko/listTasks", json!({})).expect("listTasks");
        let entry = listed["tasks"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["taskId"] == task.as_str()))
            .cloned()
            .unwrap_or_else(|| {
                panic!("{context}: the new server does not list the task: {listed}")
            });
        let was_finished = events(&before).iter().any(|e| e["type"] == "finished");
        if was_finished {
            assert_eq!(entry["state"], "complete", "{context}: {entry}");
        } else {
            assert!(
                !finished_before_kill,
                "{context}: a finished task left no finished record"
            );
            assert_eq!(entry["state"], "interrupted", "{context}: {entry}");
            assert_eq!(
                ed.request("rawko/resumeTask", json!({"taskId": task})),
                Ok(json!({})),
                "{context}"
            );
            let finished = wait_finished(&mut ed, &task);
            let tail: Vec<String> = events(&before)
                .iter()
                .rev()
                .take(8)
                .rev()
                .map(|e| e.to_string().chars().take(160).collect())
                .collect();
            assert_eq!(
                finished["outcome"], "complete",
                "{context}: {finished}; the log before ended with {tail:#?}"
            );
            resumed += 1;
        }

        // No recorded event lost: the log before the kill is where the log after begins.
        let after = log_lines(home.path(), &task);
        assert!(after.len() >= before.len(), "{context}");
        assert_eq!(
            &after[..before.len()],
            &before[..],
            "{context}: recorded events changed"
        );
        // Every Bash call ran; none whose completion was recorded ran twice.
        let recorded = finished_markers(&events(&before));
        let markers = ledger(&project);
        for i in 0..16 {
            let marker = format!("m{i:02}");
            let runs = markers.iter().filter(|m| **m == marker).count();
            assert!(runs >= 1, "{context}: {marker} never ran: {markers:?}");
            if recorded.contains(&marker) {
                assert_eq!(
                    runs, 1,
                    "{context}: {marker} completed before the kill and ran again"
                );
            } else {
                assert!(runs <= 2, "{context}: {marker} ran {runs} times");
            }
        }
        // The resumed task went through the whole workflow.
        let all = events(&after);
        assert!(
            all.iter()
                .any(|e| e["type"] == "workflow" && e["state"]["active"] == false),
            "{context}: the workflow did not finish"
        );
    }
    assert!(
        resumed >= 40,
        "only {resumed} of 50 kills hit an unfinished task"
    );
}

#[test]
fn a_log_cut_after_any_record_of_the_first_turn_resumes_under_its_workflow() {
    // A whole run, in which the editor refuses every blocked call: the Write of the Plan phase
    // never happens.
    let project = project();
    let home = tempfile::tempdir().expect("home");
    let script = project.script("crash", &script());
    let mut ed = Editor::spawn_in(&project.path(""), home.path());
    ed.set_approval_policy(|_| Some("reject_once"));
    ed.initialize(options());
    let task = start(&mut ed, &script);
    assert_eq!(wait_finished(&mut ed, &task)["outcome"], "complete");
    drop(ed);
    let whole = log_lines(home.path(), &task);
    let kinds: Vec<String> = events(&whole)
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
        .collect();
    let turns: Vec<usize> = kinds
        .iter()
        .enumerate()
        .filter(|(_, k)| *k == "turn")
        .map(|(i, _)| i)
        .collect();
    assert!(turns.len() >= 2, "{kinds:?}");
    assert_eq!(kinds[0], "started");
    // The definitions the task pinned when it started, which its log names.
    let pinned = Editor::state_dir(home.path()).join("definitions");
    // Cut the log after each record up to the second turn: a kill at that point.
    for keep in 1..=turns[1] {
        let context = format!("log cut after record {keep} ({})", kinds[keep - 1]);
        let project = self::project();
        let home = tempfile::tempdir().expect("home");
        let dir = Editor::state_dir(home.path()).join("tasks").join(&task);
        std::fs::create_dir_all(&dir).unwrap();
        let copies = Editor::state_dir(home.path()).join("definitions");
        std::fs::create_dir_all(&copies).unwrap();
        for file in std::fs::read_dir(&pinned).expect("the pinned definitions") {
            let file = file.unwrap();
            std::fs::copy(file.path(), copies.join(file.file_name())).unwrap();
        }
        let mut cut = whole[..keep].join("\n");
        cut.push('\n');
        // The log names the first run's workspace; this run's is another directory.
        let here = project.ws.canonicalize().unwrap().display().to_string();
        let cut = cut.replace(&whole_workspace(&whole), &here);
        std::fs::write(dir.join("events.jsonl"), cut).unwrap();
        project.script("crash", &self::script());

        let mut ed = Editor::spawn_in(&project.path(""), home.path());
        ed.set_approval_policy(|_| Some("reject_once"));
        ed.initialize(options());
        assert_eq!(
            ed.request("rawko/resumeTask", json!({"taskId": task})),
            Ok(json!({})),
            "{context}"
        );
        let finished = wait_finished(&mut ed, &task);
        assert_eq!(finished["outcome"], "complete", "{context}: {finished}");
        // The phase gate held: the Write in Plan went to the editor, which refused it.
        assert!(
            !project.path("plan.md").exists(),
            "{context}: the Plan phase's Write ran"
        );
        assert!(
            ed.approval_requests()
                .iter()
                .any(|a| a["params"]["tool"] == "Write" && a["params"]["phase"] == "Plan"),
            "{context}: no approval was asked for the Write in Plan: {:?}",
            ed.approval_requests()
        );
        let all = events(&log_lines(home.path(), &task));
        assert!(
            all.iter()
                .any(|e| e["type"] == "workflow" && e["state"]["active"] == false),
            "{context}: the workflow did not run to its end"
        );
    }
}

/// The workspace the task of `lines` was started in.
fn whole_workspace(lines: &[String]) -> String {
    events(lines)[0]["workspace"]
        .as_str()
        .expect("the start names the workspace")
        .to_owned()
}

#[test]
fn a_finished_task_is_listed_by_a_new_server_and_cannot_be_resumed() {
    let project = project();
    let home = tempfile::tempdir().expect("home");
    let script = project.script("short", "turns:\n  - text: \"Done at once.\"\n");
    let mut ed = serve(&project, home.path());
    let r = ed
        .request(
            "rawko/startTask",
            json!({"description": "quick", "provider": "scripted", "script": script}),
        )
        .expect("startTask");
    let task = r["taskId"].as_str().expect("taskId").to_owned();
    wait_finished(&mut ed, &task);
    drop(ed);
    let mut ed = serve(&project, home.path());
    let listed = ed.request("rawko/listTasks", json!({})).expect("listTasks");
    assert_eq!(listed["tasks"][0]["state"], "complete", "{listed}");
    let err = ed
        .request("rawko/resumeTask", json!({"taskId": task}))
        .expect_err("a finished task is not resumed");
    assert_eq!(err["code"], -32003, "{err}");
    let detail = ed
        .request("rawko/getTask", json!({"taskId": task}))
        .expect("getTask");
    let history = detail["task"]["history"].as_array().expect("history");
    assert!(
        history
            .iter()
            .any(|h| h["event"] == "machine:START_TASK" && h["stateAfter"] == "selecting"),
        "{detail:#}"
    );
}

#[test]
fn a_failed_task_can_be_retried_and_a_finished_one_reset() {
    let project = project();
    let home = tempfile::tempdir().expect("home");
    // Fails at once (not recoverable), then, on retry, the script goes on and finishes.
    let script = project.script(
        "retry",
        "turns:\n  - error: authentication_failed\n  - text: \"Second try worked.\"\n  - text: \"And once more after the reset.\"\n",
    );
    let mut ed = serve(&project, home.path());
    let r = ed
        .request(
            "rawko/startTask",
            json!({"description": "retry me", "provider": "scripted", "script": script}),
        )
        .expect("startTask");
    let task = r["taskId"].as_str().expect("taskId").to_owned();
    let first = wait_finished(&mut ed, &task);
    assert_eq!(first["outcome"], "failed", "{first}");
    assert_eq!(
        ed.request("rawko/retry", json!({"taskId": task})),
        Ok(json!({}))
    );
    let second = ed.wait_for("the retried task finishing", TIMEOUT, |m| {
        m["method"] == "rawko/taskFinished"
            && m["params"]["taskId"] == task.as_str()
            && m["params"]["outcome"] == "complete"
    });
    assert_eq!(
        second["params"]["summary"], "Second try worked.",
        "{second}"
    );
    // Retry does not apply to a complete task; reset does.
    let err = ed
        .request("rawko/retry", json!({"taskId": task}))
        .expect_err("retry of a complete task");
    assert_eq!(err["code"], -32003, "{err}");
    assert_eq!(
        ed.request("rawko/reset", json!({"taskId": task})),
        Ok(json!({}))
    );
    let third = ed.wait_for("the reset task finishing", TIMEOUT, |m| {
        m["method"] == "rawko/taskFinished"
            && m["params"]["taskId"] == task.as_str()
            && m["params"]["summary"] == "And once more after the reset."
    });
    assert_eq!(third["params"]["outcome"], "complete", "{third}");
}

#[test]
fn overrides_on_unknown_tasks_and_agents_are_clear_errors() {
    let project = project();
    let home = tempfile::tempdir().expect("home");
    let mut ed = serve(&project, home.path());
    for method in [
        "rawko/skipStep",
        "rawko/retry",
        "rawko/reset",
        "rawko/resumeTask",
    ] {
        let err = ed
            .request(method, json!({"taskId": "task-nope"}))
            .expect_err(method);
        assert_eq!(err["code"], -32001, "{method}: {err}");
    }
    let err = ed
        .request(
            "rawko/forceAgent",
            json!({"taskId": "task-nope", "agent": "nobody"}),
        )
        .expect_err("unknown agent");
    assert_eq!(err["code"], -32602, "{err}");
}

/// The `.wal` files in the state directory's journal (each process logs through its own).
fn wal_files(home: &Path) -> Vec<String> {
    let dir = Editor::state_dir(home).join("journal");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".wal"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The WAL each server makes its task records durable through: left behind by a killed server
/// (its records are all in the task log: only a crash of the machine loses unsynced writes),
/// recovered and removed by the next one, and removed by a server that exits cleanly.
#[test]
fn a_killed_servers_wal_is_recovered_by_the_next_and_a_clean_exit_leaves_none() {
    let project = project();
    let home = tempfile::tempdir().expect("home");
    let script = project.script(
        "short.yaml",
        "turns:\n  - tool_calls: [{name: Read, input: {path: README.md}}]\n  - text: Done.\n",
    );
    let mut ed = serve(&project, home.path());
    let first = ed.pid();
    let task = ed
        .request(
            "rawko/startTask",
            json!({"description": "Log me", "provider": "scripted", "script": script}),
        )
        .expect("startTask")["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    assert_eq!(wal_files(home.path()).len(), 1, "the server's own WAL");
    wait_finished(&mut ed, &task);
    let logged = log_lines(home.path(), &task);
    ed.kill9();
    let left = wal_files(home.path());
    assert_eq!(left.len(), 1, "a killed server leaves its WAL: {left:?}");
    assert!(left[0].starts_with(&format!("{first}-")), "{left:?}");

    // The next server recovers it (nothing was missing) and removes it; it has its own.
    let mut ed = serve(&project, home.path());
    let second = ed.pid();
    let now = wal_files(home.path());
    assert_eq!(now.len(), 1, "{now:?}");
    assert!(now[0].starts_with(&format!("{second}-")), "{now:?}");
    assert_eq!(
        log_lines(home.path(), &task),
        logged,
        "the log is as it was"
    );
    let listed = ed.request("rawko/listTasks", json!({})).expect("listTasks");
    assert_eq!(listed["tasks"][0]["state"], "complete", "{listed}");

    // A clean exit checkpoints and removes it.
    assert_eq!(ed.request("shutdown", Value::Null), Ok(Value::Null));
    ed.notify("exit", Value::Null);
    assert!(ed.exit_status(TIMEOUT).is_some_and(|s| s.success()));
    assert_eq!(wal_files(home.path()), Vec::<String>::new());
}

/// After a crash of the machine a task's log lacks its last records (their pages never reached
/// the disk) and the WAL holds them, one of them damaged in place (a zero byte inside it). The
/// next server puts every good record back, notes the damaged one where it stood (the WAL kept
/// aside, the byte it starts at) in the task's log, its own log, `rawko/getTask` and `rawko tasks
/// show`, and does not resume the task as if nothing was lost.
#[test]
fn a_damaged_wal_record_is_reported_and_every_good_record_after_it_comes_back() {
    let project = project();
    let home = tempfile::tempdir().expect("home");
    let script = project.script(
        "short.yaml",
        "turns:\n  - tool_calls: [{name: Read, input: {path: README.md}}]\n  - tool_calls: [{name: Read, input: {path: README.md}}]\n  - text: Done.\n",
    );
    let mut ed = serve(&project, home.path());
    let task = ed
        .request(
            "rawko/startTask",
            json!({"description": "Damage me", "provider": "scripted", "script": script}),
        )
        .expect("startTask")["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    wait_finished(&mut ed, &task);
    let logged = log_lines(home.path(), &task);
    assert!(logged.len() > 8, "{logged:#?}");
    ed.kill9();

    // The crash: the log keeps its first 3 records; the WAL's copy of record 5 is damaged.
    let journal = Editor::state_dir(home.path()).join("journal");
    let wal = journal.join(&wal_files(home.path())[0]);
    let mut bytes = std::fs::read(&wal).expect("the killed server's WAL");
    let head = format!("{task}\t{{\"v\":1,\"seq\":5,");
    let at = bytes
        .windows(head.len())
        .position(|w| w == head.as_bytes())
        .expect("record 5 in the WAL");
    bytes[at + head.len() + 10] = 0;
    std::fs::write(&wal, &bytes).expect("damage the WAL");
    let log = Editor::state_dir(home.path())
        .join("tasks")
        .join(&task)
        .join("events.jsonl");
    std::fs::write(&log, logged[..3].join("\n") + "\n").expect("cut the log");

    let mut ed = serve(&project, home.path());
    let aside = format!("{}.damaged", wal.display());
    let place = format!("byte {at} of {aside}");
    // Every record is back but the damaged one, whose place a note takes.
    let now = log_lines(home.path(), &task);
    assert_eq!(now.len(), logged.len(), "{now:#?}");
    assert_eq!(now[..4], logged[..4]);
    assert_eq!(now[5..], logged[5..]);
    let note: Value = serde_json::from_str(&now[4]).expect("a log line");
    assert_eq!(note["event"]["type"], "damaged", "{note}");
    assert_eq!(note["event"]["lost"], true, "{note}");
    assert_eq!(note["event"]["file"], aside.as_str(), "{note}");
    assert_eq!(note["event"]["offset"], at, "{note}");
    assert_eq!(
        wal_files(home.path()).len(),
        1,
        "only the new server's own WAL"
    );
    assert!(Path::new(&aside).is_file(), "the damaged WAL is kept aside");
    assert!(
        ed.stderr().contains(&aside),
        "the server says where: {}",
        ed.stderr()
    );

    let detail = ed
        .request("rawko/getTask", json!({"taskId": task}))
        .expect("getTask")["task"]
        .clone();
    let damaged: Vec<&Value> = detail["history"]
        .as_array()
        .expect("history")
        .iter()
        .filter(|h| h["event"] == "damaged")
        .collect();
    assert_eq!(damaged.len(), 1, "{detail}");
    let text = damaged[0]["detail"].as_str().unwrap_or_default();
    assert!(
        text.contains("record 5 was lost") && text.contains(&place),
        "{text}"
    );
    let err = ed
        .request("rawko/resumeTask", json!({"taskId": task}))
        .expect_err("a task that lost a record is not resumed");
    assert!(
        err["message"].as_str().unwrap_or_default().contains("lost"),
        "{err}"
    );

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rawko"))
        .args(["tasks", "show", &task])
        .current_dir(project.path(""))
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .env("XDG_STATE_HOME", home.path().join(".local/state"))
        .output()
        .expect("rawko tasks show");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown
            .lines()
            .any(|l| l.contains("record 5 was lost") && l.contains(&place)),
        "{shown}"
    );
}

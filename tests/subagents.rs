//! Subagents (`delegate_to_subagents`, docs/subagents.md) through `rawko serve` and a fake editor:
//! a scripted orchestrator whose Plan phase's subagents may not write (one tries, is asked about in
//! the editor and denied), then an Implement phase where the orchestrator may not write but two
//! subagents write a file each in parallel while a third fails; cancel mid-way; and a `kill -9`
//! mid-way, after which the resumed parent completes and no completed call of a subagent runs
//! twice.

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use support::{Editor, Project};

const TIMEOUT: Duration = Duration::from_secs(30);

/// The workflow pi's documented orchestrator example describes: the orchestrator never writes;
/// in Plan its subagents may only read, in Implement they write.
fn project() -> Project {
    let project = Project::empty();
    project.write(
        ".rawko/workflows/orchestrate/workflow.yaml",
        "name: Orchestrate\ncommandName: orchestrate\ninitialMessage: \"Task: {description}\"\nphases:\n  - plan.md\n  - implement.md\n",
    );
    project.write(
        ".rawko/workflows/orchestrate/plan.md",
        "---\nid: plan\nname: Plan\nemoji: \"📋\"\ntools:\n  whitelist: [Read, Grep, delegate_to_subagents]\nsubagentTools:\n  whitelist: [Read, Grep]\navailableProfiles: [reviewer]\n---\nPlan the work with a reviewer.\n",
    );
    project.write(
        ".rawko/workflows/orchestrate/implement.md",
        "---\nid: implement\nname: Implement\nemoji: \"🔨\"\ntools:\n  blacklist: [Write, Edit, Bash]\navailableProfiles: [frontend, backend]\n---\nDelegate the implementation.\n",
    );
    for (name, prompt) in [
        ("reviewer", "You review plans."),
        ("frontend", "You write the frontend."),
        ("backend", "You write the backend."),
        ("ghost", "You are not in the script."),
    ] {
        project.write(
            &format!(".pi/agents/{name}.md"),
            &format!("---\nname: {name}\ndescription: {name}\n---\n{prompt}\n"),
        );
    }
    project
}

fn serve(project: &Project, home: &Path) -> Editor {
    let mut ed = Editor::spawn_in(&project.path(""), home);
    ed.initialize(json!({"countdownTickMillis": 2, "approvalTimeoutSeconds": 30}));
    ed
}

fn start(ed: &mut Editor, script: &str) -> String {
    let r = ed
        .request(
            "rawko/startTask",
            json!({"description": "Build the app", "workflow": "orchestrate",
                "provider": "scripted", "script": script}),
        )
        .expect("startTask");
    r["taskId"].as_str().expect("taskId").to_owned()
}

fn finished(ed: &mut Editor, task: &str) -> Value {
    ed.wait_for("the task finishing", TIMEOUT, |m| {
        m["method"] == "rawko/taskFinished" && m["params"]["taskId"] == task
    })["params"]
        .clone()
}

/// The listed subagents of `parent`, by index.
fn children(ed: &mut Editor, parent: &str) -> Vec<Value> {
    let listed = ed.request("rawko/listTasks", json!({})).expect("listTasks");
    let mut kids: Vec<Value> = listed["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter(|t| t["subagent"]["parentTaskId"] == parent)
        .cloned()
        .collect();
    kids.sort_by_key(|t| {
        (
            t["subagent"]["toolCallId"]
                .as_str()
                .unwrap_or("")
                .to_owned(),
            t["subagent"]["index"].as_u64(),
        )
    });
    kids
}

/// The result the orchestrator got for its call `id`.
fn result_of(ed: &mut Editor, task: &str, id: &str) -> Value {
    ed.wait_for("the delegation's result", TIMEOUT, |m| {
        m["method"] == "rawko/output"
            && m["params"]["taskId"] == task
            && m["params"]["kind"] == "tool_result"
            && m["params"]["toolCallId"] == id
    })["params"]
        .clone()
}

const SCRIPT: &str = r#"turns:
  - tool_calls:
      - id: plan_review
        name: delegate_to_subagents
        input: {tasks: [{profile: reviewer, task: "Check the plan and note it in review.md"}]}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - id: build
        name: delegate_to_subagents
        input:
          tasks:
            - {profile: frontend, prompt: "Write ui.txt", name: UI}
            - {profile: backend, prompt: "Write api.txt", files: [README.md]}
            - {profile: ghost, prompt: "Nothing"}
  - tool_calls:
      - {name: Write, input: {file_path: orchestrator.txt, content: "no"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Built."
subagents:
  reviewer:
    - tool_calls:
        - {name: Read, input: {file_path: README.md}}
        - {name: Write, input: {file_path: review.md, content: "looks fine"}}
    - text: "The plan looks fine; I could not write review.md."
  frontend:
    - tool_calls:
        - {name: Write, input: {file_path: ui.txt, content: "the ui"}}
      delay_ms: 300
    - text: "Wrote ui.txt."
  backend:
    - tool_calls:
        - {name: Write, input: {file_path: api.txt, content: "the api"}}
      delay_ms: 300
    - text: "Wrote api.txt."
"#;

#[test]
fn an_orchestrator_fans_out_to_subagents_that_stay_on_the_phases_rails() {
    let project = project();
    project.write("README.md", "# app\n");
    let home = tempfile::tempdir().expect("home");
    let script = project.script("orchestrate", SCRIPT);
    let mut ed = serve(&project, home.path());
    // Subagents' blocked calls are denied; the orchestrator's too.
    ed.set_approval_policy(|_| Some("reject_once"));
    let task = start(&mut ed, &script);

    // Plan: the reviewer's Write is blocked by the phase's subagentTools and asked about in the
    // editor, naming the subagent.
    let review = result_of(&mut ed, &task, "plan_review");
    assert_eq!(review["isError"], false, "{review}");
    let text = review["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("## reviewer: done\nThe plan looks fine"),
        "{text}"
    );
    let asked = ed.approval_requests();
    let first = &asked.first().expect("the reviewer's Write was asked about")["params"];
    assert_eq!(first["tool"], "Write", "{first}");
    let label = format!("reviewer (subagent of {task})");
    assert_eq!(first["subagent"]["label"], label.as_str(), "{first}");
    assert_eq!(first["subagent"]["profile"], "reviewer");
    assert_eq!(first["subagent"]["parentTaskId"], task.as_str());
    assert_eq!(first["subagent"]["phaseIndex"], 0);
    assert!(
        first["detail"]
            .as_str()
            .unwrap_or_default()
            .starts_with(&format!("{label}: Write is blocked in the Plan phase")),
        "{first}"
    );
    assert!(!project.path("review.md").exists(), "denied");

    // Implement: two write in parallel, the third fails.
    let build = result_of(&mut ed, &task, "build");
    let text = build["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("## UI (frontend): done\nWrote ui.txt.\n\n## backend: done\nWrote api.txt.\n\n## ghost: failed\n"),
        "{text}"
    );
    assert!(text.contains("script exhausted"), "{text}");
    assert_eq!(build["isError"], false, "not every subagent failed");
    assert_eq!(
        std::fs::read_to_string(project.path("ui.txt"))
            .ok()
            .as_deref(),
        Some("the ui")
    );
    assert_eq!(
        std::fs::read_to_string(project.path("api.txt"))
            .ok()
            .as_deref(),
        Some("the api")
    );
    // The orchestrator itself may not write in Implement (denied too).
    assert_eq!(finished(&mut ed, &task)["outcome"], "complete");
    assert!(!project.path("orchestrator.txt").exists());

    let kids = children(&mut ed, &task);
    let states: Vec<(&str, &str, &str)> = kids
        .iter()
        .map(|k| {
            (
                k["subagent"]["name"].as_str().unwrap_or(""),
                k["subagent"]["profile"].as_str().unwrap_or(""),
                k["state"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            ("UI", "frontend", "complete"),
            ("backend", "backend", "complete"),
            ("ghost", "ghost", "failed"),
            ("reviewer", "reviewer", "complete"),
        ],
        "{kids:#?}"
    );
    assert!(kids.iter().all(|k| k["subagent"]["label"]
        .as_str()
        .is_some_and(|l| l.ends_with(&format!("(subagent of {task})")))));
    let implement_kids: Vec<&Value> = kids
        .iter()
        .filter(|k| k["subagent"]["toolCallId"] == "build")
        .collect();
    assert!(implement_kids
        .iter()
        .all(|k| k["subagent"]["phaseIndex"] == 1));

    // In parallel: the backend started before the frontend finished (both wait 300 ms first).
    let ui = kids[0]["taskId"].as_str().expect("id").to_owned();
    let api = kids[1]["taskId"].as_str().expect("id").to_owned();
    let log = ed.received();
    let at = |pred: &dyn Fn(&Value) -> bool| log.iter().position(pred);
    let api_started =
        at(&|m| m["method"] == "rawko/status" && m["params"]["taskId"] == api.as_str());
    let ui_done =
        at(&|m| m["method"] == "rawko/taskFinished" && m["params"]["taskId"] == ui.as_str());
    assert!(
        api_started.expect("the backend's status") < ui_done.expect("the frontend's end"),
        "the subagents ran one after the other"
    );
    // Each subagent's status names it.
    assert!(log.iter().any(|m| m["method"] == "rawko/status"
        && m["params"]["taskId"] == ui.as_str()
        && m["params"]["subagent"]["name"] == "UI"));
    // A subagent sees the phase's context and its own prompt, never workflow_step.
    let detail = ed
        .request("rawko/getTask", json!({"taskId": ui}))
        .expect("getTask");
    assert_eq!(
        detail["task"]["subagent"]["profile"], "frontend",
        "{detail}"
    );
    // It runs no workflow of its own: no phase tree, no workflow actions; its parent is rewound.
    assert_eq!(detail["task"]["phases"], json!([]), "{detail}");
    assert!(detail["task"].get("workflow").is_none(), "{detail}");
    assert!(log.iter().all(|m| m["method"] != "rawko/status"
        || m["params"]["taskId"] != ui.as_str()
        || (m["params"].get("workflow").is_none() && m["params"].get("phaseIndex").is_none())));
    let refused = ed
        .request("rawko/rewindTask", json!({"taskId": ui, "index": 0}))
        .expect_err("a subagent is not rewound");
    assert!(
        refused["message"]
            .as_str()
            .unwrap_or_default()
            .contains(&format!("is a subagent of task \"{task}\"")),
        "{refused}"
    );
    assert!(log.iter().any(|m| m["method"] == "rawko/output"
        && m["params"]["taskId"] == ui.as_str()
        && m["params"]["kind"] == "context_injected"
        && m["params"]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("Delegate the implementation.")));
}

#[test]
fn an_unknown_profile_and_a_bad_call_are_error_results_naming_the_known_ones() {
    let project = project();
    let home = tempfile::tempdir().expect("home");
    let script = project.script(
        "bad",
        r#"turns:
  - tool_calls:
      - {id: unknown, name: delegate_to_subagents, input: {tasks: [{profile: nobody, prompt: x}]}}
      - {id: empty, name: delegate_to_subagents, input: {tasks: []}}
  - text: "Gave up."
"#,
    );
    let mut ed = serve(&project, home.path());
    let task = start(&mut ed, &script);
    let unknown = result_of(&mut ed, &task, "unknown");
    assert_eq!(unknown["isError"], true);
    assert_eq!(
        unknown["text"],
        "unknown profile \"nobody\"; the profiles are backend, frontend, ghost, reviewer"
    );
    let empty = result_of(&mut ed, &task, "empty");
    assert_eq!(
        empty["text"],
        "delegate_to_subagents needs at least one task"
    );
    assert!(children(&mut ed, &task).is_empty());
}

#[test]
fn cancelling_the_parent_leaves_no_subagent_running() {
    let project = project();
    let home = tempfile::tempdir().expect("home");
    let script = project.script(
        "slow",
        r#"turns:
  - tool_calls:
      - {id: slow, name: delegate_to_subagents, input: {tasks: [{profile: reviewer, prompt: a}, {profile: frontend, prompt: b}]}}
  - text: "never"
subagents:
  reviewer:
    - text: "thinking"
      delay_ms: 20000
  frontend:
    - text: "thinking"
      delay_ms: 20000
"#,
    );
    let mut ed = serve(&project, home.path());
    let task = start(&mut ed, &script);
    // Both subagents run.
    for _ in 0..2 {
        ed.wait_for("a subagent running", TIMEOUT, |m| {
            m["method"] == "rawko/status"
                && m["params"]["subagent"]["parentTaskId"] == task.as_str()
        });
    }
    ed.request("rawko/cancelTask", json!({"taskId": task}))
        .expect("cancel");
    assert_eq!(finished(&mut ed, &task)["outcome"], "cancelled");
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        let kids = children(&mut ed, &task);
        assert_eq!(kids.len(), 2, "{kids:#?}");
        if kids.iter().all(|k| k["state"] == "cancelled") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "subagents still running after the cancel: {kids:#?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_parent_killed_mid_way_resumes_its_subagents_and_no_completed_call_runs_twice() {
    let project = project();
    let home = tempfile::tempdir().expect("home");
    // Each subagent appends a line (a completed call that must not run again), then thinks.
    let script = project.script(
        "crash",
        r#"turns:
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {id: fan, name: delegate_to_subagents, input: {tasks: [{profile: frontend, prompt: a}, {profile: backend, prompt: b}]}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Done."
subagents:
  frontend:
    - tool_calls:
        - {name: Bash, input: {command: "echo frontend >> calls.log"}}
    - text: "thinking"
      delay_ms: 1500
    - text: "Frontend done."
  backend:
    - tool_calls:
        - {name: Bash, input: {command: "echo backend >> calls.log"}}
    - text: "Backend done."
"#,
    );
    // Two turns of the frontend: a delay before its second.
    let script_text = std::fs::read_to_string(project.path(&script)).expect("script");
    project.write(
        &script,
        &script_text.replace(
            "    - text: \"thinking\"\n      delay_ms: 1500\n    - text: \"Frontend done.\"\n",
            "    - text: \"Frontend done.\"\n      delay_ms: 1500\n",
        ),
    );
    let mut ed = serve(&project, home.path());
    let task = start(&mut ed, &script);
    // Both appended their line, and the backend ended; the frontend is in its slow turn.
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        let lines = std::fs::read_to_string(project.path("calls.log")).unwrap_or_default();
        if lines.lines().count() == 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the subagents did not run: {lines:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    ed.kill9();
    drop(ed);

    let mut ed = serve(&project, home.path());
    let kids = children(&mut ed, &task);
    assert_eq!(kids.len(), 2, "{kids:#?}");
    assert_eq!(
        ed.request("rawko/resumeTask", json!({"taskId": task})),
        Ok(json!({}))
    );
    let fan = result_of(&mut ed, &task, "fan");
    assert_eq!(
        fan["text"],
        "## frontend: done\nFrontend done.\n\n## backend: done\nBackend done."
    );
    assert_eq!(finished(&mut ed, &task)["outcome"], "complete");
    let lines = std::fs::read_to_string(project.path("calls.log")).expect("calls.log");
    let mut lines: Vec<&str> = lines.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines, ["backend", "frontend"], "a completed call ran again");
    let kids = children(&mut ed, &task);
    assert!(kids.iter().all(|k| k["state"] == "complete"), "{kids:#?}");
}

#[test]
fn rawko_run_prints_each_subagents_lines_after_its_profile_and_asks_its_calls() {
    let project = project();
    project.write("README.md", "# app\n");
    let home = tempfile::tempdir().expect("home");
    let script = project.script("orchestrate", SCRIPT);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rawko"))
        .args([
            "run",
            "Build the app",
            "--workflow",
            "orchestrate",
            "--provider",
            "scripted",
            "--script",
            &script,
        ])
        .current_dir(project.path(""))
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .env("XDG_STATE_HOME", home.path().join(".local/state"))
        .env("PI_CODING_AGENT_DIR", home.path().join(".pi"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("rawko run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let all = format!(
        "{stdout}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{all}");
    for line in [
        "  [reviewer] ⤷ started",
        "  [reviewer] 🔧 Write review.md",
        "  🔒 reviewer (subagent of task-",
        "  [reviewer] ✓ done: The plan looks fine; I could not write review.md.",
        "  [frontend:UI] 🔧 Write ui.txt",
        "  [frontend:UI] ✓ done: Wrote ui.txt.",
        "  [backend] ✓ done: Wrote api.txt.",
        "  [ghost] ✗ failed: ",
    ] {
        assert!(stdout.contains(line), "no {line:?} in:\n{all}");
    }
    // Without a terminal the subagent's blocked call was denied, like the task's own.
    assert!(!project.path("review.md").exists());
    assert!(project.path("ui.txt").exists() && project.path("api.txt").exists());

    // `rawko tasks list`: the task, then its subagents under it, each named by its label.
    let listed = std::process::Command::new(env!("CARGO_BIN_EXE_rawko"))
        .args(["tasks", "list"])
        .current_dir(project.path(""))
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path().join(".config"))
        .env("XDG_STATE_HOME", home.path().join(".local/state"))
        .output()
        .expect("rawko tasks list");
    let listed = String::from_utf8_lossy(&listed.stdout);
    let lines: Vec<&str> = listed.lines().collect();
    assert_eq!(lines.len(), 5, "{listed}");
    assert!(lines[0].contains("Build the app"), "{listed}");
    let parent = lines[0].split_whitespace().next().expect("id");
    let kids: Vec<String> = lines[1..]
        .iter()
        .map(|l| l.split("  ↳ ").nth(1).unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        kids,
        [
            format!("reviewer (subagent of {parent}) — Check the plan and note it in review.md"),
            format!("UI (subagent of {parent}) — Write ui.txt"),
            format!("backend (subagent of {parent}) — Write api.txt"),
            format!("ghost (subagent of {parent}) — Nothing"),
        ],
        "{listed}"
    );
}

#[test]
fn interrupting_the_parent_stops_its_subagents_and_resume_goes_on() {
    let project = project();
    let home = tempfile::tempdir().expect("home");
    let script = project.script(
        "interrupt",
        r#"turns:
  - tool_calls:
      - {id: slow, name: delegate_to_subagents, input: {tasks: [{profile: reviewer, prompt: a}]}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Went on without it."
subagents:
  reviewer:
    - text: "thinking"
      delay_ms: 20000
"#,
    );
    let mut ed = serve(&project, home.path());
    let task = start(&mut ed, &script);
    ed.wait_for("the subagent running", TIMEOUT, |m| {
        m["method"] == "rawko/status" && m["params"]["subagent"]["parentTaskId"] == task.as_str()
    });
    ed.request("rawko/interrupt", json!({"taskId": task}))
        .expect("interrupt");
    ed.wait_for("the parent waiting for the user", TIMEOUT, |m| {
        m["method"] == "rawko/status"
            && m["params"]["taskId"] == task.as_str()
            && m["params"]["state"] == "blocked"
    });
    let deadline = std::time::Instant::now() + TIMEOUT;
    while children(&mut ed, &task)
        .iter()
        .any(|k| k["state"] != "cancelled")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the subagent still runs"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        ed.request("rawko/resumeTask", json!({"taskId": task})),
        Ok(json!({}))
    );
    assert_eq!(finished(&mut ed, &task)["outcome"], "complete");
}

#[test]
fn a_subagent_neither_moves_the_workflow_nor_delegates_and_its_excluded_tool_is_refused() {
    let project = project();
    project.write(
        ".pi/agents/reader.md",
        "---\nname: reader\nexcludeTools: [bash]\n---\nYou read.\n",
    );
    let home = tempfile::tempdir().expect("home");
    let script = project.script(
        "depth",
        r#"turns:
  - tool_calls:
      - {id: one, name: delegate_to_subagents, input: {tasks: [{profile: reader, prompt: "Try everything"}]}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Done."
subagents:
  reader:
    - tool_calls:
        - {id: step, name: workflow_step, input: {action: next}}
        - {id: deeper, name: delegate_to_subagents, input: {tasks: [{profile: reviewer, prompt: x}]}}
        - {id: shell, name: Bash, input: {command: "echo hi > shell.txt"}}
    - text: "Could do none of it."
"#,
    );
    let mut ed = serve(&project, home.path());
    ed.set_approval_policy(|_| Some("allow_once"));
    let task = start(&mut ed, &script);
    let result = result_of(&mut ed, &task, "one");
    assert_eq!(result["text"], "## reader: done\nCould do none of it.");
    assert_eq!(finished(&mut ed, &task)["outcome"], "complete");
    let kid = children(&mut ed, &task)
        .first()
        .and_then(|k| k["taskId"].as_str().map(str::to_owned))
        .expect("the subagent");
    let log = ed.received();
    let result_of_call = |id: &str| {
        log.iter()
            .find(|m| {
                m["method"] == "rawko/output"
                    && m["params"]["taskId"] == kid.as_str()
                    && m["params"]["kind"] == "tool_result"
                    && m["params"]["toolCallId"] == id
            })
            .map(|m| (m["params"]["isError"].clone(), m["params"]["text"].clone()))
            .unwrap_or_else(|| panic!("no result of {id}"))
    };
    assert_eq!(
        result_of_call("step"),
        (json!(true), json!("a subagent does not move the workflow: do the task you were given, then answer with what you did"))
    );
    assert_eq!(
        result_of_call("deeper"),
        (
            json!(true),
            json!("a subagent cannot delegate further: do the work yourself")
        )
    );
    assert_eq!(
        result_of_call("shell"),
        (
            json!(true),
            json!("the tool \"Bash\" is not available to agent reader")
        )
    );
    assert!(!project.path("shell.txt").exists());
    assert!(
        ed.approval_requests().is_empty(),
        "an excluded tool is not asked about"
    );
    // The parent's workflow did not move for the subagent's step: it moved twice, by its own.
    assert_eq!(children(&mut ed, &task).len(), 1, "no grandchild");
}

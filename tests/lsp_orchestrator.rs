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

// ---------------------------------------------------------------------------------------------
// 1. Agents without a workflow hand the task over by their transitions
// ---------------------------------------------------------------------------------------------

#[test]
fn without_a_workflow_the_starter_agents_run_planner_developer_tester_reviewer_then_complete() {
    let project = project_with_starter_agents();
    let script = project.script("four", FOUR_AGENTS_SCRIPT);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script, json!({}));
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "complete", "{finished}");
    // The reviewer's onSuccess is `complete`: its last words are the summary.
    assert_eq!(
        finished["summary"], "Approved: the change is small and tested.",
        "{finished}"
    );
    let notes = ed.notifications(&task);
    assert_eq!(
        streamed(&notes),
        "Plan: add the flag to greet.sh and a test.Implemented the flag.All tests pass.Approved: the change is small and tested."
    );

    let detail = get_task(&mut ed, &task);
    assert_eq!(detail["state"], "complete", "{detail:#}");
    assert!(detail.get("workflow").is_none(), "{detail:#}");
    assert_eq!(detail["breadcrumb"], json!([]), "{detail:#}");
    let history = history(&detail);
    let shown = show_history(&history);
    let machine = machine_entries(&history);
    let steps: Vec<String> = machine.iter().map(transition).collect();
    let handover = [
        "AGENT_COMPLETE executing→evaluating [agentSucceeded]",
        "ARBITER_DECISION evaluating→executing [shouldSelectMode]",
    ];
    let mut expected = vec![
        "START_TASK idle→selecting",
        "AGENT_SELECTED selecting→executing",
    ];
    for _ in 0..3 {
        expected.extend(handover);
    }
    expected.extend([
        "AGENT_COMPLETE executing→evaluating [agentSucceeded]",
        "ARBITER_DECISION evaluating→complete [isComplete]",
    ]);
    assert_eq!(steps, expected, "history:\n{shown}");

    // Who ran: the planner was selected first, then each decision named the next agent.
    let selected = &machine[1];
    assert!(
        detail_of(selected).contains("planner"),
        "the first AGENT_SELECTED should name the planner: {selected}\nhistory:\n{shown}"
    );
    let decisions: Vec<&Value> = machine
        .iter()
        .filter(|h| h["guard"] == "shouldSelectMode")
        .collect();
    for (decision, agent) in decisions.iter().zip(["developer", "tester", "reviewer"]) {
        assert!(
            detail_of(decision).contains(agent),
            "the decision should name {agent}: {decision}\nhistory:\n{shown}"
        );
    }
}

#[test]
fn get_task_while_an_agent_runs_shows_that_agent_in_the_history() {
    let project = project_with_starter_agents();
    let script = project.script(
        "slow-planner",
        &format!("turns:\n  - text: \"Still reading.\"\n    delay_ms: {SLOW_MS}\n"),
    );
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script, json!({}));
    let detail = wait_task(&mut ed, &task, "the planner's run", |d| {
        history(d)
            .iter()
            .any(|h| h["event"] == "machine:AGENT_SELECTED")
    });
    assert_eq!(detail["state"], "running", "{detail:#}");
    let history = history(&detail);
    let shown = show_history(&history);
    let last = machine_entries(&history)
        .pop()
        .expect("a machine transition");
    assert_eq!(last["event"], "machine:AGENT_SELECTED", "history:\n{shown}");
    assert_eq!(last["stateBefore"], "selecting", "history:\n{shown}");
    assert_eq!(last["stateAfter"], "executing", "history:\n{shown}");
    assert!(
        history.iter().any(|h| detail_of(h).contains("planner")),
        "the history of a running task should say which agent runs (the planner):\n{shown}"
    );
    ed.request("rawko/cancelTask", json!({"taskId": task}))
        .expect("cancelTask");
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "cancelled", "{finished}");
}

// ---------------------------------------------------------------------------------------------
// 2. An agent's tool filter
// ---------------------------------------------------------------------------------------------

#[test]
fn the_planner_may_not_write_nor_run_commands_outside_its_bash_filter() {
    let project = project_with_starter_agents();
    let script = project.script(
        "planner-tools",
        r#"
turns:
  - text: "Looking around."
    tool_calls:
      - {id: w1, name: Write, input: {path: plan.md, content: "the plan"}}
      - {id: b1, name: Bash, input: {command: "touch planner-was-here.txt"}}
      - {id: b2, name: Bash, input: {command: "ls"}}
  - text: "Plan: add the flag."
  - text: "Implemented."
  - text: "Tests pass."
  - text: "Approved."
"#,
    );
    let mut ed = serve(&project, fast());
    // An approval request would be answered "allow": the filter must refuse before any gate.
    ed.set_approval_policy(|_| Some("allow_once"));
    let task = start(&mut ed, &script, json!({}));
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "complete", "{finished}");
    let notes = ed.notifications(&task);

    let write = tool_result(&notes, "w1");
    assert_eq!(write["isError"], true, "{write}");
    assert_eq!(write["tool"], "Write", "{write}");
    assert!(
        text(&write).contains("the tool \"Write\" is not available to agent planner"),
        "{write}"
    );
    assert!(
        !project.path("plan.md").exists(),
        "the planner wrote a file"
    );

    let touch = tool_result(&notes, "b1");
    assert_eq!(touch["isError"], true, "{touch}");
    assert_eq!(
        text(&touch),
        "Command 'touch' is not allowed for agent planner",
        "{touch}"
    );
    assert!(
        !project.path("planner-was-here.txt").exists(),
        "a refused command ran"
    );

    let ls = tool_result(&notes, "b2");
    assert_eq!(ls["isError"], false, "{ls}");
    assert!(text(&ls).contains("README.md"), "{ls}");
    assert!(text(&ls).contains("greet.sh"), "{ls}");

    assert!(
        ed.approval_requests().is_empty(),
        "no approval is asked for a call the agent may not make: {:?}",
        ed.approval_requests()
    );
    // The calls were reported before their results, as any call is.
    let calls = notes_of(&notes, "rawko/output", Some("tool_call"));
    let ids: Vec<&str> = calls
        .iter()
        .filter_map(|c| c["toolCallId"].as_str())
        .collect();
    assert_eq!(ids, ["w1", "b1", "b2"]);
}

// ---------------------------------------------------------------------------------------------
// 3. A workflow phase that names its agent
// ---------------------------------------------------------------------------------------------

/// A two-phase workflow whose second phase is the reviewer's, with a writer and a reviewer agent.
fn handover_project() -> Project {
    let project = project();
    project.write(
        ".rawko/workflows/handover/workflow.yaml",
        "name: Handover\ncommandName: handover\ninitialMessage: \"Do this: {description}\"\nphases:\n  - draft.md\n  - review.md\n",
    );
    project.write(
        ".rawko/workflows/handover/draft.md",
        "---\nid: draft\nname: Draft\nemoji: ✏️\n---\nWrite the first draft of: {description}\n",
    );
    project.write(
        ".rawko/workflows/handover/review.md",
        "---\nid: review\nname: Review\nemoji: 🔎\nagent: reviewer\ntools:\n  whitelist: [Read, Bash]\n---\nReview the draft; change nothing.\n",
    );
    project.write(
        ".rawko/agents/writer.yaml",
        "name: writer\nsystemPrompt: You write drafts.\ntransitions:\n  onSuccess: reviewer\n",
    );
    project.write(
        ".rawko/agents/reviewer.md",
        "---\nname: reviewer\ntools:\n  bashFilter:\n    allowedCommands: [ls, cat]\ntransitions:\n  onSuccess: complete\n  onFailure: writer\n---\n\n# Reviewer\n\n## System Prompt\n\nYou review drafts.\n",
    );
    project
}

#[test]
fn a_phase_with_an_agent_hands_the_task_to_that_agent_and_its_gate_still_applies() {
    let project = handover_project();
    let script = project.script(
        "handover",
        r#"
turns:
  - text: "Drafting."
    tool_calls:
      - {id: d1, name: Write, input: {path: draft.md, content: "draft"}}
  - tool_calls:
      - {id: s1, name: workflow_step, input: {action: next}}
  - text: "The draft is written."
  - text: "Reviewing."
    tool_calls:
      - {id: r1, name: Write, input: {path: review.md, content: "notes"}}
      - {id: r2, name: Bash, input: {command: "touch reviewed.txt"}}
      - {id: r3, name: Bash, input: {command: "cat draft.md"}}
  - tool_calls:
      - {id: s2, name: workflow_step, input: {action: next}}
  - text: "Reviewed: the draft is fine."
"#,
    );
    let mut ed = serve(&project, fast());
    ed.set_approval_policy(|_| Some("reject_once"));
    let task = start(
        &mut ed,
        &script,
        json!({"workflow": "handover", "agent": "writer"}),
    );
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "complete", "{finished}");
    let notes = ed.notifications(&task);

    // The writer drafted in the Draft phase, which restricts nothing.
    assert_eq!(tool_result(&notes, "d1")["isError"], false);
    assert_eq!(
        std::fs::read_to_string(project.path("draft.md"))
            .ok()
            .as_deref(),
        Some("draft")
    );
    // The Review phase's status came.
    let statuses = notes_of(&notes, "rawko/status", None);
    assert!(
        statuses
            .iter()
            .any(|s| text(s).starts_with("Handover > 🔎 Review [2/2]")),
        "{statuses:#?}"
    );

    // The reviewer ran the Review phase: its own Bash filter refused `touch`...
    let touch = tool_result(&notes, "r2");
    assert_eq!(touch["isError"], true, "{touch}");
    assert_eq!(
        text(&touch),
        "Command 'touch' is not allowed for agent reviewer"
    );
    assert!(!project.path("reviewed.txt").exists());
    assert_eq!(tool_result(&notes, "r3")["isError"], false);
    let cat = tool_result(&notes, "r3");
    assert!(text(&cat).starts_with("draft"), "{cat}");

    // ...and the phase's whitelist still gated Write: the editor was asked, and said no.
    let approvals = ed.approval_requests();
    assert_eq!(approvals.len(), 1, "{approvals:#?}");
    let asked = &approvals[0]["params"];
    assert_eq!(asked["taskId"], json!(task));
    assert_eq!(asked["tool"], "Write");
    assert_eq!(asked["toolCallId"], "r1");
    assert_eq!(asked["phase"], "Review");
    let write = tool_result(&notes, "r1");
    assert_eq!(write["isError"], true, "{write}");
    assert!(text(&write).contains("Review"), "{write}");
    assert!(!project.path("review.md").exists(), "a rejected Write ran");

    // The history: the phase changed, then the arbiter selected the reviewer.
    let history = history(&get_task(&mut ed, &task));
    let shown = show_history(&history);
    let phase_at = history
        .iter()
        .position(|h| h["event"] == "phase" && detail_of(h).contains("Review"))
        .unwrap_or_else(|| panic!("no phase change to Review:\n{shown}"));
    let selected: Vec<&Value> = history[phase_at..]
        .iter()
        .filter(|h| h["event"] == "machine:AGENT_SELECTED")
        .collect();
    assert_eq!(
        selected.len(),
        1,
        "one selection after the phase change:\n{shown}"
    );
    assert_eq!(selected[0]["stateBefore"], "selecting");
    assert_eq!(selected[0]["stateAfter"], "executing");
    assert!(
        detail_of(selected[0]).contains("reviewer"),
        "the selection after the phase change should name the reviewer: {}\nhistory:\n{shown}",
        selected[0]
    );
}

// ---------------------------------------------------------------------------------------------
// 4. Limits
// ---------------------------------------------------------------------------------------------

#[test]
fn an_agent_stopped_at_its_turn_limit_hands_over_by_on_max_iterations() {
    let project = project();
    project.write(
        ".rawko/agents/looper.yaml",
        "name: looper\nsystemPrompt: Keep looking around.\ntransitions:\n  onSuccess: complete\n  onMaxIterations: closer\nlimits:\n  maxIterations: 2\n",
    );
    project.write(
        ".rawko/agents/closer.yaml",
        "name: closer\nsystemPrompt: Wrap up.\ntools:\n  blocked: [Bash]\ntransitions:\n  onSuccess: complete\n",
    );
    let script = project.script(
        "looper",
        r#"
turns:
  - tool_calls:
      - {id: l1, name: Bash, input: {command: "echo one >> ledger.txt"}}
  - tool_calls:
      - {id: l2, name: Bash, input: {command: "echo two >> ledger.txt"}}
  - tool_calls:
      - {id: l3, name: Bash, input: {command: "echo three >> ledger.txt"}}
  - text: "Closed after the limit."
"#,
    );
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script, json!({"agent": "looper"}));
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "complete", "{finished}");
    assert_eq!(finished["summary"], "Closed after the limit.", "{finished}");
    // The looper made two turns; the third call was the closer's, which may not use Bash.
    let ledger = std::fs::read_to_string(project.path("ledger.txt")).unwrap_or_default();
    assert_eq!(ledger, "one\ntwo\n");
    let notes = ed.notifications(&task);
    let third = tool_result(&notes, "l3");
    assert_eq!(third["isError"], true, "{third}");
    assert!(
        text(&third).contains("not available to agent closer"),
        "{third}"
    );

    let history = history(&get_task(&mut ed, &task));
    let shown = show_history(&history);
    let limit_at = history
        .iter()
        .position(|h| h["event"] == "agent_limit")
        .unwrap_or_else(|| panic!("no agent_limit entry:\n{shown}"));
    assert!(
        detail_of(&history[limit_at]).contains("looper")
            && detail_of(&history[limit_at]).contains('2'),
        "{}",
        history[limit_at]
    );
    let after: Vec<&Value> = history[limit_at..]
        .iter()
        .filter(|h| {
            h["event"]
                .as_str()
                .is_some_and(|e| e.starts_with("machine:"))
        })
        .collect();
    assert!(after.len() >= 2, "history:\n{shown}");
    assert_eq!(after[0]["event"], "machine:AGENT_COMPLETE", "{shown}");
    assert_eq!(after[0]["guard"], "agentSucceeded", "{shown}");
    assert_eq!(after[1]["event"], "machine:ARBITER_DECISION", "{shown}");
    assert_eq!(after[1]["guard"], "shouldSelectMode", "{shown}");
    assert_eq!(after[1]["stateAfter"], "executing", "{shown}");
    let last = machine_entries(&history).pop().expect("a transition");
    assert_eq!(last["guard"], "isComplete", "{shown}");
}

#[test]
fn the_task_iteration_limit_completes_a_task_whose_agents_keep_handing_over() {
    let project = project();
    project.write(
        ".rawko/agents/ping.yaml",
        "name: ping\nsystemPrompt: Ping.\ntransitions:\n  onSuccess: pong\n",
    );
    project.write(
        ".rawko/agents/pong.yaml",
        "name: pong\nsystemPrompt: Pong.\ntransitions:\n  onSuccess: ping\n",
    );
    let script = project.script(
        "pingpong",
        "turns:\n  - text: \"Ping.\"\n  - text: \"Pong.\"\n  - text: \"Ping again.\"\n  - text: \"Pong again.\"\n",
    );
    let mut ed = serve(
        &project,
        json!({"countdownTickMillis": 20, "maxIterations": 2}),
    );
    let task = start(&mut ed, &script, json!({"agent": "ping"}));
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "complete", "{finished}");
    // MAX_ITERATIONS_SUMMARY in server/src/machine/transition.rs.
    assert_eq!(finished["summary"], "Max iterations reached", "{finished}");
    let notes = ed.notifications(&task);
    assert_eq!(streamed(&notes), "Ping.Pong.", "two agent runs, no third");

    let history = history(&get_task(&mut ed, &task));
    let shown = show_history(&history);
    let machine = machine_entries(&history);
    let last = machine.last().expect("a transition");
    assert_eq!(last["event"], "machine:ARBITER_DECISION", "{shown}");
    assert_eq!(last["stateBefore"], "evaluating", "{shown}");
    assert_eq!(last["stateAfter"], "complete", "{shown}");
    assert_eq!(last["guard"], "maxIterationsReached", "{shown}");
    assert_eq!(
        machine
            .iter()
            .filter(|h| h["stateAfter"] == "executing")
            .count(),
        2,
        "two runs:\n{shown}"
    );
}

// ---------------------------------------------------------------------------------------------
// 5. The model arbiter
// ---------------------------------------------------------------------------------------------

fn model_arbiter() -> Value {
    json!({
        "countdownTickMillis": 20,
        "arbiter": {"type": "model", "provider": "scripted", "script": "arbiter.yaml"},
    })
}

#[test]
fn a_model_arbiter_chooses_the_agent_and_completes_the_task_with_its_summary() {
    let project = project_with_starter_agents();
    project.write(
        "arbiter.yaml",
        r#"
turns:
  - text: '{"decision":"SELECT_MODE","mode":"developer","reason":"a small change needs no plan"}'
  - text: '{"decision":"COMPLETE","summary":"The flag is in; nothing else to do."}'
"#,
    );
    let script = project.script(
        "developer",
        r#"
turns:
  - text: "Adding the flag."
    tool_calls:
      - {id: t1, name: Bash, input: {command: "touch shout.flag"}}
  - text: "Implemented the flag."
"#,
    );
    let mut ed = serve(&project, model_arbiter());
    let task = start(&mut ed, &script, json!({}));
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "complete", "{finished}");
    assert_eq!(
        finished["summary"], "The flag is in; nothing else to do.",
        "the summary is the arbiter's: {finished}"
    );
    // The developer ran (the planner, the default agent, may not run `touch`).
    let notes = ed.notifications(&task);
    let touch = tool_result(&notes, "t1");
    assert_eq!(touch["isError"], false, "{touch}");
    assert!(project.path("shout.flag").exists());
    let completion = notes_of(&notes, "rawko/output", Some("completion"));
    assert!(
        completion
            .iter()
            .any(|c| text(c).contains("The flag is in; nothing else to do.")),
        "{completion:#?}"
    );

    // The deterministic arbiter would have gone on to the tester; this one completed.
    let history = history(&get_task(&mut ed, &task));
    let shown = show_history(&history);
    let steps: Vec<String> = machine_entries(&history).iter().map(transition).collect();
    assert_eq!(
        steps,
        [
            "START_TASK idle→selecting",
            "AGENT_SELECTED selecting→executing",
            "AGENT_COMPLETE executing→evaluating [agentSucceeded]",
            "ARBITER_DECISION evaluating→complete [isComplete]",
        ],
        "history:\n{shown}"
    );
}

#[test]
fn an_unparseable_arbiter_answer_fails_the_task_naming_it() {
    let project = project_with_starter_agents();
    project.write(
        "arbiter.yaml",
        r#"
turns:
  - text: '{"decision":"SELECT_MODE","mode":"developer","reason":"start coding"}'
  - text: "Sure, let me think…"
"#,
    );
    let script = project.script("developer", "turns:\n  - text: \"Implemented.\"\n");
    let mut ed = serve(&project, model_arbiter());
    let task = start(&mut ed, &script, json!({}));
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "failed", "{finished}");
    let summary = finished["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("unparseable arbiter answer"),
        "the summary should name the unparseable answer: {finished}"
    );
    let notes = ed.notifications(&task);
    let errors = notes_of(&notes, "rawko/output", Some("error"));
    assert!(
        errors
            .iter()
            .any(|e| text(e).contains("unparseable arbiter answer")),
        "{errors:#?}"
    );

    let detail = get_task(&mut ed, &task);
    assert_eq!(detail["state"], "failed", "{detail:#}");
    let history = history(&detail);
    let shown = show_history(&history);
    let last = machine_entries(&history).pop().expect("a transition");
    // ARBITER_ERROR → error_handling (not recoverable, one failure of three) → failed.
    assert_eq!(last["event"], "machine:ARBITER_ERROR", "{shown}");
    assert_eq!(last["stateBefore"], "evaluating", "{shown}");
    assert_eq!(last["stateAfter"], "failed", "{shown}");
    assert!(
        last.get("guard").is_none(),
        "neither maxFailuresReached nor isRecoverableError: {last}"
    );
}

// ---------------------------------------------------------------------------------------------
// 6. Overrides
// ---------------------------------------------------------------------------------------------

#[test]
fn force_agent_during_a_run_stops_it_and_the_forced_agent_runs_next() {
    let project = project_with_starter_agents();
    let script = project.script(
        "forced",
        &format!(
            r#"
turns:
  - text: "The planner's slow plan."
    delay_ms: {SLOW_MS}
  - text: "Reviewing."
    tool_calls:
      - {{id: f1, name: Bash, input: {{command: "touch reviewed.txt"}}}}
  - text: "Approved after the override."
"#
        ),
    );
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script, json!({}));
    wait_task(&mut ed, &task, "the planner's run", |d| {
        d["state"] == "running"
            && history(d)
                .iter()
                .any(|h| h["event"] == "machine:AGENT_SELECTED")
    });

    // An agent nobody defined is refused, naming the agents there are.
    let unknown = assert_error(
        ed.request(
            "rawko/forceAgent",
            json!({"taskId": task, "agent": "nobody"}),
        ),
        -32602,
    );
    let message = unknown["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("nobody") && message.contains("reviewer"),
        "{unknown}"
    );

    let started = Instant::now();
    assert_eq!(
        ed.request(
            "rawko/forceAgent",
            json!({"taskId": task, "agent": "reviewer"}),
        ),
        Ok(json!({}))
    );
    let finished = wait_finished(&mut ed, &task);
    assert!(
        started.elapsed() < Duration::from_millis(SLOW_MS / 2),
        "the planner's turn was not stopped"
    );
    assert_eq!(finished["outcome"], "complete", "{finished}");
    assert_eq!(finished["summary"], "Approved after the override.");
    // The task has finished: overrides no longer apply.
    assert_error(
        ed.request(
            "rawko/forceAgent",
            json!({"taskId": task, "agent": "reviewer"}),
        ),
        -32003,
    );
    assert_error(
        ed.request("rawko/skipStep", json!({"taskId": task})),
        -32003,
    );
    let notes = ed.notifications(&task);
    assert!(
        !streamed(&notes).contains("slow plan"),
        "the stopped turn's text was shown: {}",
        streamed(&notes)
    );
    // The reviewer ran: its Bash filter refused `touch`.
    let touch = tool_result(&notes, "f1");
    assert_eq!(
        text(&touch),
        "Command 'touch' is not allowed for agent reviewer"
    );

    let history = history(&get_task(&mut ed, &task));
    let shown = show_history(&history);
    let forced = history
        .iter()
        .find(|h| h["event"] == "machine:FORCE_AGENT")
        .unwrap_or_else(|| panic!("no FORCE_AGENT:\n{shown}"));
    assert_eq!(forced["stateBefore"], "executing", "{shown}");
    assert_eq!(forced["stateAfter"], "executing", "{shown}");
    let machine = machine_entries(&history);
    let at = machine
        .iter()
        .position(|h| h["event"] == "machine:FORCE_AGENT")
        .expect("FORCE_AGENT");
    let next: Vec<&str> = machine[at + 1..]
        .iter()
        .filter_map(|h| h["event"].as_str())
        .collect();
    assert_eq!(
        next,
        ["machine:AGENT_COMPLETE", "machine:ARBITER_DECISION"],
        "the forced agent's run, then the end:\n{shown}"
    );
    assert!(
        detail_of(forced).contains("reviewer"),
        "FORCE_AGENT should name the forced agent: {forced}\nhistory:\n{shown}"
    );
}

#[test]
fn skip_step_moves_a_workflow_task_to_its_next_phase() {
    let project = project();
    project.add_starter_workflows();
    let script = project.script(
        "skipped",
        &format!(
            r#"
turns:
  - text: "A plan that never ends."
    delay_ms: {SLOW_MS}
  - text: "Implementing."
    tool_calls:
      - {{id: i1, name: Write, input: {{path: shout.txt, content: "HELLO"}}}}
  - text: "Waiting for the user."
    delay_ms: {SLOW_MS}
"#
        ),
    );
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script, json!({"workflow": "feature"}));
    wait_note(
        &mut ed,
        &task,
        "rawko/output",
        "the Plan phase's context",
        |p| p["kind"] == "context_injected",
    );
    let started = Instant::now();
    assert_eq!(
        ed.request("rawko/skipStep", json!({"taskId": task})),
        Ok(json!({}))
    );
    let status = wait_note(&mut ed, &task, "rawko/status", "the Implement phase", |p| {
        text(p) == "Feature > 🛠️ Implement [2/4]"
    });
    assert_eq!(
        status["breadcrumb"],
        json!([{"name": "Feature", "phaseName": "Implement", "emoji": "🛠️", "index": 2, "total": 4}])
    );
    // The agent goes on in Implement, where Write runs without asking.
    let write = wait_note(&mut ed, &task, "rawko/output", "the Write result", |p| {
        p["kind"] == "tool_result" && p["toolCallId"] == "i1"
    });
    assert_eq!(write["isError"], false, "{write}");
    assert!(project.path("shout.txt").exists());
    assert!(
        started.elapsed() < Duration::from_millis(SLOW_MS / 2),
        "the Plan turn was not stopped"
    );
    assert!(ed.approval_requests().is_empty());

    let detail = get_task(&mut ed, &task);
    assert_eq!(detail["breadcrumbText"], "Feature > 🛠️ Implement [2/4]");
    let history = history(&detail);
    let shown = show_history(&history);
    let skip = history
        .iter()
        .position(|h| h["event"] == "machine:SKIP_STEP")
        .unwrap_or_else(|| panic!("no SKIP_STEP:\n{shown}"));
    assert_eq!(history[skip]["stateBefore"], "executing", "{shown}");
    assert_eq!(history[skip]["stateAfter"], "selecting", "{shown}");
    assert!(
        history[..skip]
            .iter()
            .any(|h| h["event"] == "phase" && detail_of(h).contains("Implement")),
        "the phase change comes with the skip:\n{shown}"
    );
    assert!(
        history[skip..]
            .iter()
            .any(|h| h["event"] == "machine:AGENT_SELECTED"),
        "the arbiter selects again after the skip:\n{shown}"
    );

    ed.request("rawko/cancelTask", json!({"taskId": task}))
        .expect("cancelTask");
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "cancelled", "{finished}");
    let err = assert_error(
        ed.request("rawko/skipStep", json!({"taskId": task})),
        -32003,
    );
    assert!(
        err["message"]
            .as_str()
            .is_some_and(|m| m.contains("cancelled")),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------------
// 7. `rawko tasks list | show`
// ---------------------------------------------------------------------------------------------

/// Runs `rawko --workspace <ws> ARGS…` with the server's HOME and state directory.
fn rawko_cli(ws: &Path, home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rawko"))
        .arg("--workspace")
        .arg(ws)
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env_remove("RUST_LOG")
        .env_remove("RAWKO_LOG")
        .output()
        .expect("run rawko")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[track_caller]
fn assert_ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "rawko failed ({}):\n{}\n{}",
        out.status,
        stdout(out),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout(out)
}

#[test]
fn rawko_tasks_list_and_show_read_what_the_server_stored() {
    let project = project_with_starter_agents();
    let home = tempfile::tempdir().expect("home");
    let script = project.script("four", FOUR_AGENTS_SCRIPT);
    let mut ed = Editor::spawn_in(&project.ws, home.path());
    ed.initialize(fast());
    let task = start(&mut ed, &script, json!({}));
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "complete", "{finished}");

    let ws = project.ws.as_path();
    let list = assert_ok(&rawko_cli(ws, home.path(), &["tasks", "list"]));
    let line = list
        .lines()
        .find(|l| l.contains(&task))
        .unwrap_or_else(|| panic!("the task is not listed:\n{list}"));
    assert!(line.contains("complete"), "{line}");
    assert!(line.contains(DESCRIPTION), "{line}");

    let show = assert_ok(&rawko_cli(ws, home.path(), &["tasks", "show", &task]));
    assert!(show.contains(&task), "{show}");
    assert!(show.contains("complete"), "{show}");
    assert!(
        show.lines()
            .any(|l| l.contains("machine:START_TASK") && l.contains("idle → selecting")),
        "{show}"
    );
    assert!(
        show.lines()
            .any(|l| l.contains("machine:ARBITER_DECISION") && l.contains("[isComplete]")),
        "{show}"
    );
    assert_eq!(
        show.lines()
            .filter(|l| l.contains("[shouldSelectMode]"))
            .count(),
        3,
        "{show}"
    );

    let listed: Value = serde_json::from_str(&assert_ok(&rawko_cli(
        ws,
        home.path(),
        &["--json", "tasks", "list"],
    )))
    .expect("tasks list --json is JSON");
    let entry = listed["tasks"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["taskId"] == json!(task)))
        .unwrap_or_else(|| panic!("{listed:#}"));
    assert_eq!(entry["state"], "complete", "{entry}");
    assert_eq!(entry["description"], DESCRIPTION, "{entry}");

    let shown: Value = serde_json::from_str(&assert_ok(&rawko_cli(
        ws,
        home.path(),
        &["--json", "tasks", "show", &task],
    )))
    .expect("tasks show --json is JSON");
    assert_eq!(shown["taskId"], json!(task), "{shown:#}");
    assert_eq!(shown["state"], "complete", "{shown:#}");
    let history = shown["history"].as_array().expect("history");
    assert!(
        history.iter().any(|h| h["event"] == "machine:START_TASK"
            && h["stateBefore"] == "idle"
            && h["stateAfter"] == "selecting"),
        "{shown:#}"
    );
    assert!(
        history
            .iter()
            .any(|h| h["event"] == "machine:ARBITER_DECISION" && h["guard"] == "isComplete"),
        "{shown:#}"
    );

    let unknown = rawko_cli(ws, home.path(), &["tasks", "show", "task-nope"]);
    assert_eq!(unknown.status.code(), Some(1), "{unknown:?}");
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(err.contains("unknown task"), "{err}");
    assert!(err.contains("task-nope"), "{err}");
}

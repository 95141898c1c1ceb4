//! What a client needs to draw a task's phase tree (issue 18): the counts of `rawko/listWorkflows`,
//! `TaskDetail.phases`, `rawko/status`'s `phaseIndex`, `rawko/phasePrompt`, and the human-facing
//! `detail` of an approval.

use super::*;

/// Walks the starter feature workflow with `next` only, ending in a model turn that lasts until
/// the test cancels the task: it stands in Static Analysis (phase 3) meanwhile.
const TO_STATIC_ANALYSIS: &str = r#"
turns:
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Analysing."
    delay_ms: 60000
"#;

/// Walks the whole starter feature workflow with `next` only, then says it is done.
const WHOLE_WALK: &str = r#"
turns:
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Done."
"#;

/// Waits until the task of TO_STATIC_ANALYSIS stands in its long turn in Static Analysis.
fn wait_in_static_analysis(ed: &mut Editor, task: &str) {
    wait_output(ed, task, "context_injected", |p| {
        text(p).contains("**Current Phase:** 🔍 Static Analysis")
    });
}

fn get_task(ed: &mut Editor, task: &str) -> Value {
    ed.request("rawko/getTask", json!({"taskId": task}))
        .unwrap_or_else(|e| panic!("rawko/getTask failed: {e}"))["task"]
        .clone()
}

/// The phase tree as lines `depth status index name | breadcrumb`.
fn tree(task: &Value) -> Vec<String> {
    task["phases"]
        .as_array()
        .unwrap_or_else(|| panic!("no phases in {task}"))
        .iter()
        .map(|n| {
            let index = n["index"]
                .as_u64()
                .map_or("-".to_owned(), |i| i.to_string());
            format!(
                "{}{} {} {} {}{} | {}",
                "  ".repeat(n["depth"].as_u64().unwrap_or(0) as usize),
                n["kind"].as_str().unwrap_or("?"),
                n["status"].as_str().unwrap_or("?"),
                index,
                n["emoji"]
                    .as_str()
                    .map(|e| format!("{e} "))
                    .unwrap_or_default(),
                n["name"].as_str().unwrap_or("?"),
                n["breadcrumbText"].as_str().unwrap_or("?"),
            )
        })
        .collect()
}

#[test]
fn list_workflows_counts_the_outer_phases_and_the_steps() {
    let project = Project::with_starter();
    let mut ed = serve(&project, fast());
    let result = ed
        .request("rawko/listWorkflows", json!({}))
        .unwrap_or_else(|e| panic!("rawko/listWorkflows failed: {e}"));
    let find = |key: &str| {
        result["workflows"]
            .as_array()
            .and_then(|w| w.iter().find(|w| w["key"] == key))
            .unwrap_or_else(|| panic!("no workflow {key} in {result}"))
            .clone()
    };
    let feature = find("feature");
    // Plan, Implement, Test and the Review subworkflow; Review has two phases of its own.
    assert_eq!(feature["outerPhaseCount"], 4, "{feature}");
    assert_eq!(feature["phaseCount"], 5, "{feature}");
    let review = find("review");
    assert_eq!(review["outerPhaseCount"], 2, "{review}");
    assert_eq!(review["phaseCount"], 2, "{review}");
}

#[test]
fn get_task_draws_the_phase_tree_and_status_names_the_current_phase() {
    let project = Project::with_starter();
    let script = project.script("walk", TO_STATIC_ANALYSIS);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    wait_in_static_analysis(&mut ed, &task);

    let detail = get_task(&mut ed, &task);
    assert_eq!(
        tree(&detail),
        [
            "phase done 0 📋 Plan | Feature > 📋 Plan [1/4]",
            "phase done 1 🛠️ Implement | Feature > 🛠️ Implement [2/4]",
            "phase done 2 🧪 Test | Feature > 🧪 Test [3/4]",
            "scope current - Review | Feature > Review [4/4]",
            "  phase current 3 🔍 Static Analysis | Feature > Review [4/4] > 🔍 Static Analysis [1/2]",
            "  phase todo 4 👀 Peer Review | Feature > Review [4/4] > 👀 Peer Review [2/2]",
        ]
    );
    // The current phase's breadcrumb is the task's.
    assert_eq!(
        detail["breadcrumbText"],
        "Feature > Review [4/4] > 🔍 Static Analysis [1/2]"
    );

    // Every status named the phase it was in, in order, and its breadcrumb is that phase's.
    let notes = ed.notifications(&task);
    let statuses = notes_of(&notes, "rawko/status", None);
    let mut indexes: Vec<u64> = statuses
        .iter()
        .map(|s| {
            s["phaseIndex"]
                .as_u64()
                .unwrap_or_else(|| panic!("a status without phaseIndex: {s}"))
        })
        .collect();
    indexes.dedup();
    assert_eq!(indexes, [0, 1, 2, 3], "{statuses:#?}");
    for status in &statuses {
        assert_eq!(status["phasesDone"], status["phaseIndex"], "{status}");
    }
    let phases = detail["phases"].as_array().cloned().unwrap_or_default();
    for status in &statuses {
        let node = phases
            .iter()
            .find(|n| n["index"] == status["phaseIndex"])
            .unwrap_or_else(|| panic!("no phase {} in the tree", status["phaseIndex"]));
        assert_eq!(node["breadcrumbText"], status["breadcrumbText"], "{status}");
    }

    // Cancelled where it stood: the phases done stay done, no phase is current.
    ed.request("rawko/cancelTask", json!({"taskId": task}))
        .unwrap_or_else(|e| panic!("rawko/cancelTask failed: {e}"));
    let last = wait_status(&mut ed, &task, "cancelled");
    assert!(last.get("phaseIndex").is_none(), "{last}");
    // The status counts the phases done as the tree marks them: a client renders it as it is.
    assert_eq!(last["phasesDone"], 3, "{last}");
    let statuses: Vec<String> = get_task(&mut ed, &task)["phases"]
        .as_array()
        .map(|p| p.iter().map(|n| n["status"].to_string()).collect())
        .unwrap_or_default();
    assert_eq!(
        statuses,
        ["\"done\"", "\"done\"", "\"done\"", "\"todo\"", "\"todo\"", "\"todo\""]
    );
}

#[test]
fn a_complete_task_has_every_phase_done_and_its_last_status_no_phase_index() {
    let project = Project::with_starter();
    let script = project.script("whole", WHOLE_WALK);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    let finished = wait_finished(&mut ed, &task);
    assert_eq!(finished["outcome"], "complete", "{finished}");
    let notes = ed.notifications(&task);
    let statuses = notes_of(&notes, "rawko/status", None);
    let last = statuses.last().expect("statuses");
    assert_eq!(last["state"], "complete", "{last}");
    assert!(last.get("phaseIndex").is_none(), "{last}");
    assert_eq!(last["phasesDone"], u32::MAX, "every phase done: {last}");
    let indexes: Vec<u64> = statuses
        .iter()
        .filter_map(|s| s["phaseIndex"].as_u64())
        .collect();
    assert!(indexes.contains(&4), "{statuses:#?}");
    let detail = get_task(&mut ed, &task);
    let phases = detail["phases"].as_array().cloned().unwrap_or_default();
    assert_eq!(phases.len(), 6, "{detail}");
    assert!(
        phases.iter().all(|n| n["status"] == "done"),
        "{:#?}",
        tree(&detail)
    );
}

#[test]
fn a_task_without_a_workflow_has_no_phases_and_no_phase_index() {
    let project = Project::with_starter();
    let script = project.script("plain", "turns:\n  - text: \"Hello.\"\n");
    let mut ed = serve(&project, fast());
    let result = ed
        .request(
            "rawko/startTask",
            json!({"description": DESCRIPTION, "provider": "scripted", "script": script}),
        )
        .unwrap_or_else(|e| panic!("rawko/startTask failed: {e}"));
    let task = task_id(&result);
    wait_finished(&mut ed, &task);
    let notes = ed.notifications(&task);
    for status in notes_of(&notes, "rawko/status", None) {
        assert!(status.get("phaseIndex").is_none(), "{status}");
        assert!(status.get("phasesDone").is_none(), "{status}");
    }
    assert_eq!(get_task(&mut ed, &task)["phases"], json!([]));
    let error = assert_error(
        ed.request("rawko/phasePrompt", json!({"taskId": task, "index": 0})),
        -32602,
    );
    assert!(
        error["message"]
            .as_str()
            .unwrap_or_default()
            .contains("runs no workflow"),
        "{error}"
    );
}

/// `rawko workflows show feature --task DESCRIPTION --json` in the project, with the home the
/// editor's server does not share (the workflows are the project's).
fn preview(project: &Project) -> Value {
    let home = tempfile::TempDir::new().expect("temp home");
    let h = home.path();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_rawko"))
        .args([
            "workflows",
            "show",
            "feature",
            "--task",
            DESCRIPTION,
            "--json",
        ])
        .arg("--workspace")
        .arg(&project.ws)
        .env("HOME", h)
        .env("XDG_CONFIG_HOME", h.join(".config"))
        .env("XDG_STATE_HOME", h.join(".local/state"))
        .env("PI_CODING_AGENT_DIR", h.join(".pi/agent"))
        .output()
        .expect("run rawko workflows show");
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("JSON from workflows show --json")
}

#[test]
fn phase_prompt_renders_any_phase_as_workflows_show_does_with_the_task_filled_in() {
    let project = Project::with_starter();
    let script = project.script("walk", TO_STATIC_ANALYSIS);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    wait_in_static_analysis(&mut ed, &task);
    let preview = preview(&project);
    let phases = preview["phases"].as_array().cloned().unwrap_or_default();
    assert_eq!(phases.len(), 5, "{preview}");
    for (i, shown) in phases.iter().enumerate() {
        let answer = ed
            .request("rawko/phasePrompt", json!({"taskId": task, "index": i}))
            .unwrap_or_else(|e| panic!("rawko/phasePrompt {i} failed: {e}"));
        assert_eq!(answer["name"], shown["name"], "{answer}");
        assert_eq!(answer["breadcrumbText"], shown["breadcrumb"], "{answer}");
        let expected = shown["prompt"]
            .as_str()
            .unwrap_or_default()
            .replace("**Task ID:** preview", &format!("**Task ID:** {task}"));
        assert_eq!(
            answer["prompt"].as_str(),
            Some(expected.as_str()),
            "phase {i}"
        );
        assert!(expected.contains(&format!("**Task:** {DESCRIPTION}")));
    }
    // The phase the task stands in is the one its context came from.
    let injected = notes_of(
        &ed.notifications(&task),
        "rawko/output",
        Some("context_injected"),
    );
    let now = ed
        .request("rawko/phasePrompt", json!({"taskId": task, "index": 3}))
        .unwrap_or_else(|e| panic!("rawko/phasePrompt failed: {e}"));
    assert!(
        injected.iter().any(|p| p["text"] == now["prompt"]),
        "the prompt of phase 3 is what was injected there: {now}"
    );
    ed.request("rawko/cancelTask", json!({"taskId": task}))
        .unwrap_or_else(|e| panic!("rawko/cancelTask failed: {e}"));
}

#[test]
fn phase_prompt_refuses_a_bad_index_and_an_unknown_task() {
    let project = Project::with_starter();
    let script = project.script("walk", TO_STATIC_ANALYSIS);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    let error = assert_error(
        ed.request("rawko/phasePrompt", json!({"taskId": task, "index": 5})),
        -32602,
    );
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("5") && message.contains("0 to 4"),
        "the message says which indexes exist: {message}"
    );
    for bad in [
        json!({"taskId": task, "index": -1}),
        json!({"taskId": task, "index": 1.5}),
        json!({"taskId": task, "index": "2"}),
        json!({"taskId": task, "index": 4_294_967_296u64}),
        json!({"taskId": task}),
        json!({"index": 0}),
    ] {
        assert_error(ed.request("rawko/phasePrompt", bad.clone()), -32602);
    }
    let long = "x".repeat(10_000);
    let error = assert_error(
        ed.request("rawko/phasePrompt", json!({"taskId": long, "index": 0})),
        -32001,
    );
    assert!(
        error["message"].as_str().unwrap_or_default().len() < 200,
        "the unknown id is clipped: {error}"
    );
    assert_error(
        ed.request(
            "rawko/phasePrompt",
            json!({"taskId": "task-nope", "index": 0}),
        ),
        -32001,
    );
    assert_error(
        ed.request("rawko/getTask", json!({"taskId": "task-nope"})),
        -32001,
    );
    assert_still_serving(&mut ed);
    ed.request("rawko/cancelTask", json!({"taskId": task}))
        .unwrap_or_else(|e| panic!("rawko/cancelTask failed: {e}"));
}

#[test]
fn a_blocked_call_carries_the_human_facing_detail_beside_the_agents_reason() {
    let project = Project::with_starter();
    let script = project.script("write", WRITE_IN_PLAN);
    let mut ed = serve(&project, fast());
    ed.set_approval_policy(|_| Some("reject_once"));
    let task = start(&mut ed, &script);
    let approval = wait_approval(&mut ed, &task);
    let p = &approval["params"];
    assert_eq!(
        p["detail"], "Write is blocked in the Plan phase (allowed: Read, Glob, Grep)",
        "{p}"
    );
    // The reason is still the text written for the model.
    let reason = p["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("workflow_step"), "{reason}");
    let result = wait_output(&mut ed, &task, "tool_result", |p| p["tool"] == "Write");
    assert!(text(&result).contains(reason), "{result}");
}

#[test]
fn a_blocked_bash_command_that_writes_is_explained_in_the_detail() {
    let project = Project::with_starter();
    project.write(
        ".rawko/workflows/check/workflow.yaml",
        "name: Check\ncommandName: check\ninitialMessage: \"Check: {description}\"\nphases:\n  - look.md\n",
    );
    project.write(
        ".rawko/workflows/check/look.md",
        "---\nid: look\nname: Look\nemoji: 👁️\ntools:\n  whitelist: [Read, Bash]\n---\nLook; change nothing.\n",
    );
    let script = project.script(
        "bash",
        r#"
turns:
  - tool_calls:
      - {name: Bash, input: {command: "echo plan > PLAN.md"}}
  - text: "Fine."
"#,
    );
    let mut ed = serve(&project, fast());
    ed.set_approval_policy(|_| Some("reject_once"));
    let mut params = start_params(&script);
    params["workflow"] = json!("check");
    let task = task_id(
        &ed.request("rawko/startTask", params)
            .unwrap_or_else(|e| panic!("rawko/startTask failed: {e}")),
    );
    let approval = wait_approval(&mut ed, &task);
    let detail = approval["params"]["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("echo plan > PLAN.md")
            && detail.contains("Look phase")
            && detail.contains("writes files")
            && !detail.starts_with("[workflow]"),
        "{detail}"
    );
}

#[test]
fn a_stored_task_keeps_its_phase_tree_and_its_prompts_after_a_restart() {
    let project = Project::with_starter();
    let home = tempfile::TempDir::new().expect("temp home");
    let script = project.script("walk", TO_STATIC_ANALYSIS);
    let mut ed = Editor::spawn_in(&project.ws, home.path());
    ed.initialize(fast());
    let task = start(&mut ed, &script);
    wait_in_static_analysis(&mut ed, &task);
    let before = get_task(&mut ed, &task);
    // The server dies mid-task; a new one finds the task in the store.
    ed.kill9();
    let mut ed = Editor::spawn_in(&project.ws, home.path());
    ed.initialize(fast());
    let after = get_task(&mut ed, &task);
    assert_eq!(after["state"], "interrupted", "{after}");
    assert_eq!(tree(&after), tree(&before));
    let prompt = ed
        .request("rawko/phasePrompt", json!({"taskId": task, "index": 4}))
        .unwrap_or_else(|e| panic!("rawko/phasePrompt of a stored task failed: {e}"));
    assert_eq!(prompt["name"], "Peer Review", "{prompt}");
    assert_error(
        ed.request("rawko/phasePrompt", json!({"taskId": task, "index": 5})),
        -32602,
    );

    // The snapshot is written after the records it reflects, on a thread of its own and up to
    // 250 ms late in a burst: a kill can come before it is written, which the kill above does
    // only by luck. Without the snapshot (as before a task's first one is written), what the
    // next server shows comes from the log alone, and it is the same.
    ed.kill9();
    let snapshot = Editor::state_dir(home.path())
        .join("tasks")
        .join(&task)
        .join("snapshot.json");
    std::fs::remove_file(&snapshot).expect("the task has a snapshot");
    let mut ed = Editor::spawn_in(&project.ws, home.path());
    ed.initialize(fast());
    let again = get_task(&mut ed, &task);
    assert_eq!(again["state"], "interrupted", "{again}");
    assert_eq!(again["breadcrumbText"], before["breadcrumbText"], "{again}");
    assert_eq!(tree(&again), tree(&before));
    let listed = ed
        .request("rawko/listTasks", json!({}))
        .unwrap_or_else(|e| panic!("rawko/listTasks failed: {e}"));
    let summary = listed["tasks"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["taskId"] == task))
        .unwrap_or_else(|| panic!("{task} is not listed: {listed}"));
    assert_eq!(
        summary["breadcrumbText"], before["breadcrumbText"],
        "{summary}"
    );
}

/// Walks the starter feature workflow, writing a file in Implement.
const WALK_WITH_A_WRITE: &str = r#"
turns:
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: Write, input: {path: shout.txt, content: "HELLO\n"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Done."
"#;

#[test]
fn the_phase_tree_names_each_phase_and_its_checkpoint_and_phase_diff_shows_what_it_changed() {
    let project = Project::with_starter();
    let script = project.script("walk", WALK_WITH_A_WRITE);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    wait_finished(&mut ed, &task);

    let detail = get_task(&mut ed, &task);
    let phases: Vec<(Value, Value)> = detail["phases"]
        .as_array()
        .unwrap_or_else(|| panic!("no phases in {detail}"))
        .iter()
        .map(|n| (n["id"].clone(), n["hasCheckpoint"].clone()))
        .collect();
    let expected: Vec<(Value, Value)> = [
        (json!("plan"), json!(true)),
        (json!("implement"), json!(true)),
        (json!("test"), json!(true)),
        (Value::Null, json!(false)),
        (json!("static-analysis"), json!(true)),
        (json!("peer-review"), json!(true)),
    ]
    .into();
    assert_eq!(phases, expected, "{detail}");

    let implement = ed
        .request("rawko/phaseDiff", json!({"taskId": task, "index": 1}))
        .unwrap_or_else(|e| panic!("rawko/phaseDiff failed: {e}"));
    assert_eq!(
        implement["files"],
        json!([{"path": "shout.txt", "status": "added"}]),
        "{implement}"
    );
    assert!(
        implement["diff"]
            .as_str()
            .unwrap_or_default()
            .contains("+HELLO"),
        "{implement}"
    );
    let plan = ed
        .request("rawko/phaseDiff", json!({"taskId": task, "index": 0}))
        .unwrap_or_else(|e| panic!("rawko/phaseDiff failed: {e}"));
    assert_eq!(plan["files"], json!([]), "{plan}");
    assert_eq!(plan["diff"], "", "{plan}");
    let whole = ed
        .request("rawko/phaseDiff", json!({"taskId": task}))
        .unwrap_or_else(|e| panic!("rawko/phaseDiff failed: {e}"));
    assert_eq!(whole["files"], implement["files"], "{whole}");
    assert_eq!(whole["from"], plan["from"], "{whole}");
    assert_eq!(whole["from"].as_str().map(str::len), Some(40), "{whole}");

    assert_error(
        ed.request("rawko/phaseDiff", json!({"taskId": task, "index": 5})),
        -32602,
    );
    assert_error(
        ed.request("rawko/phaseDiff", json!({"taskId": "task-0-0"})),
        -32001,
    );
}

//! Steps and commands from the editor.

use super::*;

// ---------------------------------------------------------------------------------------------
// Steps and commands from the editor
// ---------------------------------------------------------------------------------------------

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

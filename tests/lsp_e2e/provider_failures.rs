//! Provider failures.

use super::*;

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

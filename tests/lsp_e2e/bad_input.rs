//! Bad input: a clear JSON-RPC error, and the server keeps serving.

use super::*;

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

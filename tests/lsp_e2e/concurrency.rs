//! Concurrency (DESIGN invariant 4).

use super::*;

// ---------------------------------------------------------------------------------------------
// Concurrency (DESIGN invariant 4)
// ---------------------------------------------------------------------------------------------

#[test]
fn requests_are_answered_while_eight_tasks_wait_for_approval() {
    let project = Project::with_starter();
    let script = project.script("write", WRITE_IN_PLAN);
    let mut ed = serve(&project, fast());
    // The editor leaves every approval unanswered.
    let tasks: Vec<String> = (0..8).map(|_| start(&mut ed, &script)).collect();
    for task in &tasks {
        wait_approval(&mut ed, task);
    }

    let mut sent = Vec::new();
    for i in 0..200 {
        let task = &tasks[i % tasks.len()];
        let (method, params) = match i % 3 {
            0 => ("rawko/listTasks", json!({})),
            1 => ("rawko/getTask", json!({"taskId": task})),
            _ => ("rawko/listWorkflows", json!({})),
        };
        sent.push((ed.send_request(method, params), method));
    }
    for (id, method) in sent {
        let answer = ed.response(id, &format!("the response to {method} (id {id})"), TIMEOUT);
        let result = answer.unwrap_or_else(|e| panic!("{method} (id {id}) failed: {e}"));
        match method {
            "rawko/listTasks" => assert_eq!(result["tasks"].as_array().map(Vec::len), Some(8)),
            "rawko/getTask" => assert_eq!(result["task"]["state"], "waiting_approval"),
            _ => assert!(result["workflows"].is_array(), "{result}"),
        }
    }

    for task in &tasks {
        assert_eq!(
            ed.request("rawko/cancelTask", json!({"taskId": task})),
            Ok(json!({})),
            "cancel {task}"
        );
    }
    for task in &tasks {
        wait_status(&mut ed, task, "cancelled");
        let finished = wait_finished(&mut ed, task);
        assert_eq!(finished["outcome"], "cancelled", "{finished}");
    }
    let list = ed.request("rawko/listTasks", json!({})).expect("listTasks");
    assert!(
        list["tasks"]
            .as_array()
            .is_some_and(|l| l.iter().all(|t| t["state"] == "cancelled")),
        "{list}"
    );
}

#[test]
fn every_client_request_in_the_protocol_is_dispatched() {
    // rawko_protocol::ALL_METHODS is the list the schema and the docs are made from; the server
    // must answer each of its client → server requests (with a result or an error of its own,
    // never "method not found").
    let project = Project::with_starter();
    let mut ed = serve(&project, fast());
    let mut asked = 0;
    for info in rawko_protocol::ALL_METHODS {
        if info.direction != rawko_protocol::Direction::ClientToServer {
            continue;
        }
        asked += 1;
        let answer = ed.request(info.method, json!({}));
        if let Err(error) = &answer {
            assert_ne!(
                error["code"],
                json!(-32601),
                "{} is in ALL_METHODS but the server does not dispatch it: {error}",
                info.method
            );
        }
    }
    assert!(asked >= 15, "{asked}");
    assert_still_serving(&mut ed);
}

//! Workflows and tasks.

use super::*;

// ---------------------------------------------------------------------------------------------
// Workflows and tasks
// ---------------------------------------------------------------------------------------------

#[test]
fn list_workflows_offers_feature_and_marks_review_as_a_subworkflow() {
    let project = Project::with_starter();
    let mut ed = serve(&project, fast());
    let result = ed
        .request("rawko/listWorkflows", json!({}))
        .expect("listWorkflows");
    let list = result["workflows"].as_array().expect("workflows");
    let find = |key: &str| {
        list.iter()
            .find(|w| w["key"] == key)
            .unwrap_or_else(|| panic!("{key} in {result}"))
    };
    let feature = find("feature");
    assert_eq!(feature["name"], "Feature");
    assert_eq!(feature["commandName"], "feature");
    assert_eq!(feature["show"], "user");
    let source = feature["source"].as_str().unwrap_or_default();
    assert!(
        source.ends_with(".rawko/workflows/feature"),
        "source {source:?}"
    );
    let review = find("review");
    assert_eq!(review["show"], "workflows");
    assert_eq!(review["commandName"], "");
    assert_eq!(review["phaseCount"], 2);
    assert_eq!(list.len(), 2, "{result}");
}

#[test]
fn list_workflows_counts_the_phases_a_task_goes_through() {
    // docs/protocol.md: phaseCount counts the concrete phases, a subworkflow by its own phases:
    // plan, implement, test, static analysis, peer review.
    let project = Project::with_starter();
    let mut ed = serve(&project, fast());
    let result = ed
        .request("rawko/listWorkflows", json!({}))
        .expect("listWorkflows");
    let feature = result["workflows"]
        .as_array()
        .and_then(|l| l.iter().find(|w| w["key"] == "feature"))
        .cloned()
        .expect("feature");
    assert_eq!(feature["phaseCount"], 5, "{feature}");
}

#[test]
fn list_tasks_and_get_task_describe_a_running_task() {
    let project = Project::with_starter();
    let script = project.script("slow", SLOW_TURN);
    let mut ed = serve(&project, fast());
    let task = start(&mut ed, &script);
    wait_output(&mut ed, &task, "context_injected", |_| true);

    let list = ed.request("rawko/listTasks", json!({})).expect("listTasks");
    let tasks = list["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 1, "{list}");
    let t = &tasks[0];
    assert_eq!(t["taskId"], json!(task));
    assert_eq!(t["description"], DESCRIPTION);
    assert_eq!(t["workflow"], "feature");
    assert_eq!(t["state"], "running");
    assert_eq!(t["breadcrumbText"], "Feature > 📋 Plan [1/4]");
    assert!(
        t["startedAt"]
            .as_u64()
            .is_some_and(|ms| ms > 1_600_000_000_000),
        "{t}"
    );

    let detail = ed
        .request("rawko/getTask", json!({"taskId": task}))
        .expect("getTask");
    let d = &detail["task"];
    assert_eq!(d["taskId"], json!(task));
    assert_eq!(d["state"], "running");
    assert_eq!(d["breadcrumbText"], "Feature > 📋 Plan [1/4]");
    assert_eq!(
        d["breadcrumb"],
        json!([{"name": "Feature", "phaseName": "Plan", "emoji": "📋", "index": 1, "total": 4}])
    );
    let history = d["history"].as_array().expect("history");
    assert!(!history.is_empty(), "{detail}");
    for (i, h) in history.iter().enumerate() {
        assert_eq!(h["seq"], i as u64 + 1, "{h}");
        assert!(h["at"].as_u64().is_some(), "{h}");
        assert!(h["event"].as_str().is_some_and(|e| !e.is_empty()), "{h}");
    }
}

#[test]
fn list_tasks_shows_the_most_recently_started_first() {
    // docs/protocol.md: "every task, most recently started first".
    let project = Project::with_starter();
    let script = project.script("slow", SLOW_TURN);
    let mut ed = serve(&project, fast());
    let first = start(&mut ed, &script);
    wait_output(&mut ed, &first, "context_injected", |_| true);
    let second = start(&mut ed, &script);
    wait_output(&mut ed, &second, "context_injected", |_| true);
    let list = ed.request("rawko/listTasks", json!({})).expect("listTasks");
    let ids: Vec<&Value> = list["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| &t["taskId"])
        .collect();
    assert_eq!(ids, [&json!(second), &json!(first)], "{list}");
}

//! 7. `rawko tasks list | show`.

use super::*;

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

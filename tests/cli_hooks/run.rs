//! `rawko run` with hooks.

use super::*;

#[test]
fn run_commits_and_pushes_with_the_users_git_hooks() {
    let sb = Sandbox::new();
    let bare = git_project(&sb);
    let stop_file = sb.root.join("stop.json");
    sb.write_json(
        &sb.user_config_file(),
        &json!({"hooks": {
            "PostExecutionEnd": [
                {"type": "git-commit", "message": "rawko: {{taskDescription}}"},
                {"type": "git-push"}
            ],
            // AutoAgent's Stop: the session ends.
            "Stop": [{"type": "command", "command": format!("cat > {}; echo session {{{{sessionId}}}} ended", stop_file.display())}]
        }}),
    );
    let script = sb.script("write", WRITE_THEN_DONE);
    let out = sb.run(&["run", "Add a greeting", "--script", &script, "--yes"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");

    // The remote has the commit, with the rendered message and the agent's file.
    assert_eq!(
        git(&bare, &["log", "--format=%s", "main"]),
        "rawko: Add a greeting\ninitial"
    );
    assert_eq!(git(&bare, &["show", "main:greet.txt"]), "hello");
    let project = sb.project();
    assert_eq!(
        git(&project, &["rev-parse", "--abbrev-ref", "@{upstream}"]),
        "origin/main"
    );
    assert_eq!(git(&project, &["status", "--porcelain"]), "");
    let short = git(&project, &["rev-parse", "--short", "HEAD"]);

    // The hooks' lines, in order.
    let commit_line = format!("  🪝 Committed 1 file as {short}: rawko: Add a greeting");
    let push_line = "  🪝 Pushed main to origin";
    let stdout = String::from_utf8_lossy(&out.stdout);
    let at = |needle: &str| {
        stdout
            .find(needle)
            .unwrap_or_else(|| panic!("missing {needle:?}:\n{shown}"))
    };
    assert!(at(&commit_line) < at(push_line), "{shown}");

    // The session: completed, with the task counted; the Stop hook saw it end.
    let session = sb.ok_json(&["sessions", "show", "--json"]);
    assert_eq!(session["status"], "completed", "{session:#}");
    assert_eq!(
        session["tasks"],
        json!({"planned": 1, "completed": 1, "failed": 0, "cancelled": 0})
    );
    assert_eq!(session["metadata"]["gitBranch"], "main");
    let id = session["id"].as_str().expect("id");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("  🪝 Stop hook `cat > ")
                && l.ends_with(&format!(": session {id} ended"))),
        "{shown}"
    );
    assert!(at(push_line) < at(&format!("session {id} ended")));
    let stop = read_json(&stop_file);
    assert_eq!(stop["eventName"], "Stop");
    assert_eq!(stop["reason"], "completed");
    assert_eq!(stop["sessionId"], json!(id));
    assert_eq!(stop["tasksCompleted"], json!(1));
    assert_eq!(stop["tasksFailed"], json!(0));
    assert_eq!(stop["workspace"], json!(project.display().to_string()));
}

/// At the terminal: quiet JSON answers print nothing, and a hook that cannot run is one line for
/// the task (not one per call, and not once more as the status's reason).
#[test]
fn run_shows_a_broken_hook_once_and_quiet_answers_not_at_all() {
    let sb = Sandbox::new();
    sb.write_json(
        &sb.user_config_file(),
        &json!({"hooks": {"PreToolUse": [{"hooks": [
            {"type": "command", "command": "echo '{\"continue\": true}'"},
            {"type": "command", "command": "./no-such-guard.sh"}
        ]}]}}),
    );
    let script = sb.script(
        "three",
        "turns:\n  - tool_calls:\n      - {name: Bash, input: {command: \"echo one\"}}\n      - {name: Bash, input: {command: \"echo two\"}}\n  - tool_calls:\n      - {name: Bash, input: {command: \"echo three\"}}\n  - text: done\n",
    );
    let out = sb.run(&["run", "Do it", "--script", &script]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert_eq!(
        shown.matches("hook configuration error").count(),
        1,
        "{shown}"
    );
    assert!(!shown.contains("🪝"), "{shown}");
    assert_eq!(shown.matches("↳ three").count(), 1, "{shown}");
}

/// A broken hook configured at several events, the session's end included, is one line for the
/// whole run; quiet JSON answers at any event print nothing.
#[test]
fn run_shows_a_broken_hook_once_whatever_events_it_fails_at() {
    let sb = Sandbox::new();
    let broken = json!({"type": "command", "command": "./no-such-guard.sh"});
    let quiet = json!({"type": "command", "command": "echo '{}'"});
    let go_on = json!({"type": "command", "command": "echo '{\"continue\": true}'"});
    sb.write_json(
        &sb.user_config_file(),
        &json!({"hooks": {
            "SessionStart": [{"hooks": [quiet.clone(), broken.clone()]}],
            "UserPromptSubmit": [{"hooks": [go_on.clone()]}],
            "PreToolUse": [{"hooks": [broken.clone(), go_on.clone()]}],
            "PostToolUse": [{"hooks": [quiet.clone(), broken.clone()]}],
            "PostExecutionEnd": [broken.clone(), go_on.clone()],
            // AutoAgent's Stop: the end of the session, outside the task.
            "Stop": [broken, quiet]
        }}),
    );
    let script = sb.script(
        "two",
        "turns:\n  - tool_calls:\n      - {name: Bash, input: {command: \"echo one\"}}\n  - tool_calls:\n      - {name: Bash, input: {command: \"echo two\"}}\n  - text: done\n",
    );
    let out = sb.run(&["run", "Do it", "--script", &script]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert_eq!(
        shown.matches("hook configuration error").count(),
        1,
        "{shown}"
    );
    assert_eq!(
        shown.matches("./no-such-guard.sh` could not run").count(),
        1,
        "{shown}"
    );
    assert!(!shown.contains("🪝"), "a quiet answer was echoed:\n{shown}");
    assert!(!shown.contains("{}"), "{shown}");
    assert!(!shown.contains("continue"), "{shown}");
    assert_eq!(shown.matches("↳ two").count(), 1, "{shown}");
}

/// A session's end whose Stop hook cannot run says so once, as a configuration error.
#[test]
fn a_broken_session_stop_hook_is_told_as_a_configuration_error() {
    let sb = Sandbox::new();
    sb.write_json(
        &sb.user_config_file(),
        &json!({"hooks": {"Stop": [{"type": "command", "command": "./no-such-end.sh"}]}}),
    );
    let script = sb.script("done", DONE);
    let out = sb.run(&["run", "Do it", "--script", &script]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    let lines: Vec<&str> = shown
        .lines()
        .filter(|l| l.contains("no-such-end.sh"))
        .collect();
    assert_eq!(lines.len(), 1, "{shown}");
    assert!(
        lines[0].starts_with(
            "  ✗ hook configuration error: Stop hook `./no-such-end.sh` could not run"
        ),
        "{shown}"
    );
}

#[test]
fn without_a_terminal_untrusted_workspace_hooks_do_not_run_and_rawko_says_how_to_trust() {
    let sb = Sandbox::new();
    sb.write_json(
        &sb.workspace_config_file(),
        &json!({"hooks": {"PreExecutionStart": [{"type": "command", "command": "echo ran >> ran.txt; echo workspace hook ran"}]}}),
    );
    let script = sb.script("done", DONE);
    let ran = sb.project().join("ran.txt");
    let note = format!(
        "note: the hooks in {}/.rawko/config.json do not run: this workspace is not trusted (`rawko trust` trusts it)",
        sb.project().display()
    );

    let out = sb.run(&["run", "Do it", "--script", &script]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&note),
        "{shown}"
    );
    assert!(!ran.exists(), "an untrusted hook ran:\n{shown}");
    assert!(!shown.contains("workspace hook ran"), "{shown}");

    // Trusted, it runs, and there is no note.
    sb.ok(&["trust"]);
    let out = sb.run(&["run", "Do it", "--script", &script]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(!shown.contains("note: the hooks in"), "{shown}");
    assert!(
        shown.contains(
            "  🪝 PreExecutionStart hook `echo ran >> ran.txt; echo workspace hook ran`: workspace hook ran"
        ),
        "{shown}"
    );
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "ran\n");

    // Changed since: they do not run again until trusted again.
    sb.write_json(
        &sb.workspace_config_file(),
        &json!({"hooks": {"PreExecutionStart": [{"type": "command", "command": "echo changed >> ran.txt"}]}}),
    );
    let out = sb.run(&["run", "Do it", "--script", &script]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains(&format!(
            "note: the hooks in {}/.rawko/config.json do not run: they changed since you trusted this workspace (`rawko trust` trusts it)",
            sb.project().display()
        )),
        "{shown}"
    );
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "ran\n");

    // The user's own hooks run in any case.
    sb.write_json(
        &sb.user_config_file(),
        &json!({"hooks": {"PreExecutionStart": [{"type": "command", "command": "echo user hook ran"}]}}),
    );
    let out = sb.run(&["run", "Do it", "--script", &script]);
    let shown = text(&out);
    assert!(shown.contains("they changed since you trusted"), "{shown}");
    assert!(
        shown.contains("  🪝 PreExecutionStart hook `echo user hook ran`: user hook ran"),
        "{shown}"
    );
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "ran\n");
}

//! Editing the hooks config, and what a bad value or a broken file changes (nothing).

use super::*;

#[test]
fn config_set_commands_edit_the_hooks_as_autoagent_does() {
    let sb = Sandbox::new();
    let ws = sb.workspace_config_file();
    let at = ws.display().to_string();
    sb.write_json(&ws, &json!({"maxReminders": 3}));

    let said = sb.ok(&["config", "set-auto-push", "true"]);
    assert_eq!(
        said,
        format!("{at}: added a git-push hook to PostExecutionEnd\n")
    );
    let said = sb.ok(&["config", "set-auto-commit", "TRUE"]);
    assert_eq!(
        said,
        format!("{at}: added a git-commit hook to PostExecutionEnd\n")
    );
    // The commit goes before the push, whatever the order they were turned on in.
    assert_eq!(
        read_json(&ws),
        json!({"maxReminders": 3, "hooks": {"PostExecutionEnd": [
            {"type": "git-commit", "message": "rawko: {{taskDescription}}"},
            {"type": "git-push", "remote": "origin"}
        ]}})
    );
    let said = sb.ok(&["config", "set-auto-commit", "true"]);
    assert_eq!(
        said,
        format!("{at}: a git-commit hook is already in PostExecutionEnd; nothing changed\n")
    );
    let said = sb.ok(&["config", "set-git-no-verify", "true"]);
    assert_eq!(said, format!("{at}: set noVerify on 1 git-commit hook\n"));
    let said = sb.ok(&["config", "set-push-remote", "upstream"]);
    assert_eq!(
        said,
        format!("{at}: pushes go to upstream (1 git-push hook)\n")
    );
    assert_eq!(
        read_json(&ws)["hooks"]["PostExecutionEnd"],
        json!([
            {"type": "git-commit", "message": "rawko: {{taskDescription}}", "noVerify": true},
            {"type": "git-push", "remote": "upstream"}
        ])
    );
    // The workspace had no hooks, so the user's own edit leaves it trusted: the hooks run.
    let shown = sb.ok(&["config", "show"]);
    for line in [
        "  PostExecutionEnd: git-commit \"rawko: {{taskDescription}}\" --no-verify  (workspace)",
        "  PostExecutionEnd: git-push to upstream  (workspace)",
    ] {
        assert!(
            shown.lines().any(|l| l == line),
            "missing {line:?}:\n{shown}"
        );
    }
    let said = sb.ok(&["config", "set-git-no-verify", "false"]);
    assert_eq!(
        said,
        format!("{at}: cleared noVerify on 1 git-commit hook\n")
    );
    assert_eq!(
        read_json(&ws)["hooks"]["PostExecutionEnd"][0]["noVerify"],
        json!(false)
    );

    // Turned off, the hooks go, and so does the empty section; the other keys stay.
    let said = sb.ok(&["config", "set-auto-push", "false"]);
    assert_eq!(said, format!("{at}: removed 1 git-push hook\n"));
    let said = sb.ok(&["config", "set-auto-commit", "False"]);
    assert_eq!(said, format!("{at}: removed 1 git-commit hook\n"));
    assert_eq!(read_json(&ws), json!({"maxReminders": 3}));
    let said = sb.ok(&["config", "set-auto-commit", "false"]);
    assert_eq!(
        said,
        format!("{at}: there was no git-commit hook; nothing changed\n")
    );
    let said = sb.ok(&["config", "set-git-no-verify", "true"]);
    assert_eq!(
        said,
        format!("{at}: there is no git-commit hook to change (rawko config set-auto-commit true adds one)\n")
    );

    // --global edits the user's file.
    let user = sb.user_config_file();
    let said = sb.ok(&["config", "set-auto-commit", "true", "--global"]);
    assert_eq!(
        said,
        format!(
            "{}: added a git-commit hook to PostExecutionEnd\n",
            user.display()
        )
    );
    sb.ok(&["config", "set-auto-push", "true", "-g"]);
    sb.ok(&["config", "set-push-remote", "mirror", "--global"]);
    assert_eq!(
        read_json(&user),
        json!({"hooks": {"PostExecutionEnd": [
            {"type": "git-commit", "message": "rawko: {{taskDescription}}"},
            {"type": "git-push", "remote": "mirror"}
        ]}})
    );
    assert_eq!(read_json(&ws), json!({"maxReminders": 3}));
    let json = sb.ok_json(&["config", "show", "--json"]);
    let sources: Vec<(&str, &str)> = json["hooks"]
        .as_array()
        .expect("hooks")
        .iter()
        .map(|h| (h["hook"].as_str().unwrap(), h["source"].as_str().unwrap()))
        .collect();
    assert_eq!(
        sources,
        vec![
            (
                "PostExecutionEnd: git-commit \"rawko: {{taskDescription}}\"",
                "user"
            ),
            ("PostExecutionEnd: git-push to mirror", "user"),
        ]
    );
}

#[test]
fn a_value_that_is_not_true_or_false_is_refused() {
    let sb = Sandbox::new();
    for args in [
        &["config", "set-auto-commit", "maybe"][..],
        &["config", "set-auto-push", "yes"][..],
        &["config", "set-git-no-verify", "1", "--global"][..],
    ] {
        let out = sb.run(args);
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {shown}");
        assert!(
            shown.contains(&format!("expected true or false, found \"{}\"", args[2])),
            "{args:?}: {shown}"
        );
    }
    assert!(!sb.workspace_config_file().exists());
    assert!(!sb.user_config_file().exists());
}

#[test]
fn a_broken_config_file_or_a_bad_remote_changes_nothing() {
    let sb = Sandbox::new();
    let ws = sb.workspace_config_file();

    // Not a remote name: refused before any file is read.
    for bad in ["two words", ""] {
        let out = sb.run(&["config", "set-push-remote", bad]);
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(2), "{shown}");
        assert!(
            shown.contains(&format!("error: \"{bad}\" is not a remote name")),
            "{shown}"
        );
    }
    // Nothing to change: no file is created.
    let said = sb.ok(&["config", "set-push-remote", "upstream"]);
    assert_eq!(
        said,
        format!(
            "{}: there is no git-push hook to change (rawko config set-auto-push true adds one)\n",
            ws.display()
        )
    );
    assert!(!ws.exists(), "a file was written for nothing");

    let broken = "{\"hooks\": {\"PostExecutionEnd\": [{\"type\": \"git-push\"}]\n";
    sb.write(&ws, broken);
    let out = sb.run(&["config", "set-push-remote", "upstream"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains(&format!("error: {} is not valid JSON (", ws.display())),
        "{shown}"
    );
    assert!(
        shown.contains("); fix it first, nothing was changed"),
        "{shown}"
    );
    assert_eq!(std::fs::read_to_string(&ws).unwrap(), broken);
    // `config show` reports the file and goes on with the rest.
    let out = sb.run(&["config", "show"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains(&format!("warning: {}: invalid JSON", ws.display())),
        "{}",
        text(&out)
    );

    for (content, needle) in [
        ("[1, 2]\n", "must hold a JSON object"),
        (
            "{\"hooks\": 3}\n",
            "\"hooks\" in FILE is not an object; fix it first, nothing was changed",
        ),
    ] {
        sb.write(&ws, content);
        let out = sb.run(&["config", "set-push-remote", "upstream"]);
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(1), "{shown}");
        let needle = needle.replace("FILE", &ws.display().to_string());
        assert!(shown.contains(&needle), "missing {needle:?}: {shown}");
        assert_eq!(std::fs::read_to_string(&ws).unwrap(), content);
    }
}

// --- rawko trust ------------------------------------------------------------------------------

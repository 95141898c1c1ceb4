//! `rawko hooks config show`, and AutoAgent's documented config read unchanged.

use super::*;

#[test]
fn config_show_lists_both_shapes_with_where_each_hook_comes_from() {
    let sb = Sandbox::new();
    let shown = sb.ok(&["config", "show"]);
    assert!(
        shown.contains(
            "Hooks: none (`rawko config set-auto-commit true` adds a git commit after each task)"
        ),
        "{shown}"
    );
    let empty = sb.ok_json(&["config", "show", "--json"]);
    assert_eq!(empty["hooks"], json!([]));
    assert_eq!(
        empty["files"],
        json!([
            {"path": sb.user_config_file().display().to_string(), "exists": false},
            {"path": sb.autoagent_config_file().display().to_string(), "exists": false},
            {"path": sb.workspace_config_file().display().to_string(), "exists": false},
        ])
    );

    // AutoAgent's shape in the user's file (timeout in ms), Claude Code's in the workspace's (s).
    sb.write_json(
        &sb.user_config_file(),
        &json!({"maxReminders": 4, "hooks": {
            "PreExecutionStart": [{"type": "command", "command": "./pre.sh", "timeout": 1500}],
            "PostExecutionEnd": [{"type": "git-commit", "message": "done {{taskId}}", "noVerify": true}, {"type": "git-push", "remote": "up"}]
        }}),
    );
    sb.write_json(
        &sb.workspace_config_file(),
        &json!({"hooks": {
            "PreToolUse": [{"matcher": "Bash|Write", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5, "failClosed": true}]}]
        }}),
    );
    let shown = sb.ok(&["config", "show"]);
    for line in [
        "  maxReminders            4",
        "Hooks, in the order they run:",
        "  PreExecutionStart: ./pre.sh  (user)",
        "  PostExecutionEnd: git-commit \"done {{taskId}}\" --no-verify  (user)",
        "  PostExecutionEnd: git-push to up  (user)",
        "  PreToolUse [Bash|Write]: ./guard.sh  (workspace, not trusted: does not run (`rawko trust`))",
    ] {
        assert!(
            shown.lines().any(|l| l == line),
            "missing line {line:?}:\n{shown}"
        );
    }
    let json = sb.ok_json(&["config", "show", "--json"]);
    assert_eq!(json["maxReminders"], json!(4));
    let hooks = json["hooks"].as_array().expect("hooks");
    assert_eq!(hooks.len(), 4, "{json:#}");
    let of = |hook: &str| {
        hooks
            .iter()
            .find(|h| h["hook"] == hook)
            .unwrap_or_else(|| panic!("no {hook} in {json:#}"))
            .clone()
    };
    assert_eq!(
        of("PreExecutionStart: ./pre.sh"),
        json!({"event": "PreExecutionStart", "hook": "PreExecutionStart: ./pre.sh", "source": "user", "runs": true, "timeoutSeconds": 1.5, "failClosed": false})
    );
    assert_eq!(
        of("PreToolUse [Bash|Write]: ./guard.sh"),
        json!({"event": "PreToolUse", "hook": "PreToolUse [Bash|Write]: ./guard.sh", "source": "workspace", "runs": false, "timeoutSeconds": 5.0, "failClosed": true})
    );
    assert_eq!(
        of("PostExecutionEnd: git-push to up")["timeoutSeconds"],
        60.0
    );

    // Trusted, the workspace's hook runs.
    sb.ok(&["trust"]);
    let shown = sb.ok(&["config", "show"]);
    assert!(
        shown
            .lines()
            .any(|l| l == "  PreToolUse [Bash|Write]: ./guard.sh  (workspace)"),
        "{shown}"
    );
    let json = sb.ok_json(&["config", "show", "--json"]);
    assert!(
        json["hooks"]
            .as_array()
            .expect("hooks")
            .iter()
            .all(|h| h["runs"] == true),
        "{json:#}"
    );

    // A hook rawko cannot use (Claude Code's `prompt` type; `http` runs since issue 33) is left
    // out and reported; the exit status says so.
    sb.write_json(
        &sb.workspace_config_file(),
        &json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "prompt", "prompt": "is it safe?"}]}], "Nope": []}}),
    );
    let out = sb.run(&["config", "show"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains(
            "hooks.PreToolUse[0].hooks[0]: \"prompt\" hooks are not supported by rawko, so this PreToolUse hook does not run"
        ),
        "{shown}"
    );
    assert!(shown.contains("hooks.Nope: no such event"), "{shown}");
    let json = sb.ok_json(&["config", "show", "--json"]);
    assert_eq!(
        json["problems"].as_array().map(Vec::len),
        Some(2),
        "{json:#}"
    );
}

/// AutoAgent's documented `.autoagent/config.json` (its hooks design, as published), unchanged.
const AUTOAGENT_DOCUMENTED_CONFIG: &str = r#"{
  "providers": ["claude", "gemini"],
  "failoverDelay": 5000,
  "retryAttempts": 3,
  "maxTokens": 100000,
  "rateLimitCooldown": 3600000,
  "gitAutoCommit": false,
  "logLevel": "info",
  "hooks": {
    "PreExecutionStart": [
      {
        "type": "command",
        "command": "echo 'About to start issue {{issueNumber}}: {{issueTitle}}' >> ~/.autoagent/execution.log"
      }
    ],
    "PostExecutionStart": [
      {
        "type": "command",
        "command": "bash .autoagent/hooks/track-execution-start.sh"
      }
    ],
    "PreExecutionEnd": [
      {
        "type": "command",
        "command": "bash .autoagent/hooks/validate-execution.sh",
        "blocking": true,
        "timeout": 60000
      }
    ],
    "PostExecutionEnd": [
      {
        "type": "command",
        "command": "bash .autoagent/hooks/notify-completion.sh"
      },
      {
        "type": "git-commit",
        "message": "Complete issue #{{issueNumber}}: {{issueTitle}}"
      }
    ]
  }
}"#;

#[test]
fn autoagents_documented_config_is_read_unchanged() {
    let sb = Sandbox::new();
    let ws = sb.project().display().to_string();
    sb.write(&sb.autoagent_config_file(), AUTOAGENT_DOCUMENTED_CONFIG);

    // `config show` lists its hooks, says once that AutoAgent's settings are not rawko's, exits 0.
    let out = sb.run(&["config", "show"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    let untrusted = "(workspace, not trusted: does not run (`rawko trust`))";
    let expected = [
        "PreExecutionStart: echo 'About to start issue {{issueNumber}}: {{issueTitle}}' >> ~/.autoagent/execution.log",
        "PostExecutionStart: bash .autoagent/hooks/track-execution-start.sh",
        "PreExecutionEnd: bash .autoagent/hooks/validate-execution.sh",
        "PostExecutionEnd: bash .autoagent/hooks/notify-completion.sh",
        "PostExecutionEnd: git-commit \"Complete issue #{{issueNumber}}: {{issueTitle}}\"",
    ];
    for hook in expected {
        let line = format!("  {hook}  {untrusted}");
        assert!(shown.lines().any(|l| l == line), "no {line:?}:\n{shown}");
    }
    assert!(
        shown.contains(&format!(
            "  {ws}/.autoagent/config.json (AutoAgent's: only its hooks are read)\n"
        )),
        "{shown}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let notes: Vec<&str> = stderr.lines().filter(|l| l.starts_with("note: ")).collect();
    assert_eq!(notes.len(), 1, "{stderr}");
    assert!(
        notes[0].contains("providers") && notes[0].contains("failoverDelay"),
        "{stderr}"
    );
    assert!(!stderr.contains("warning"), "{stderr}");
    let json = sb.ok_json(&["config", "show", "--json"]);
    assert_eq!(json["problems"], json!([]), "{json:#}");
    assert_eq!(json["notes"].as_array().map(Vec::len), Some(1), "{json:#}");
    assert_eq!(
        json["providers"],
        json!([]),
        "AutoAgent's provider names are not rawko's"
    );
    assert_eq!(json["hooks"].as_array().map(Vec::len), Some(5), "{json:#}");

    // A hook written the same way in rawko's own file runs once; AutoAgent's file comes first.
    sb.write_json(
        &sb.workspace_config_file(),
        &json!({"hooks": {
            "PreExecutionStart": [{"type": "command", "command": "echo 'About to start issue {{issueNumber}}: {{issueTitle}}' >> ~/.autoagent/execution.log"}],
            "PostExecutionEnd": [{"type": "command", "command": "echo rawko ran >> ledger.txt"}]
        }}),
    );
    let shown = sb.ok(&["config", "show"]);
    let hooks: Vec<&str> = shown
        .lines()
        .skip_while(|l| *l != "Hooks, in the order they run:")
        .skip(1)
        .collect();
    assert_eq!(hooks.len(), 6, "{shown}");
    let of = |event: &str| -> Vec<&str> {
        hooks
            .iter()
            .copied()
            .filter(|l| l.starts_with(&format!("  {event}: ")))
            .collect()
    };
    assert_eq!(of("PreExecutionStart").len(), 1, "{shown}");
    let end = of("PostExecutionEnd");
    assert!(
        end.len() == 3 && end[0].contains("notify-completion") && end[2].contains("rawko ran"),
        "{shown}"
    );

    // Trust covers both files.
    let said = sb.ok(&["trust"]);
    assert!(
        said.ends_with(&format!(
            "If the hooks in {ws}/.autoagent/config.json and {ws}/.rawko/config.json change, rawko asks again.\n"
        )),
        "{said}"
    );

    // A run runs them: the documented scripts, the echo once, the commit (not a git repository).
    for (name, what) in [
        ("track-execution-start.sh", "started"),
        ("validate-execution.sh", "validated"),
        ("notify-completion.sh", "notified"),
    ] {
        sb.write(
            &sb.project().join(".autoagent/hooks").join(name),
            &format!("echo {what} >> ledger.txt\n"),
        );
    }
    std::fs::create_dir_all(sb.home().join(".autoagent")).unwrap();
    let script = sb.script("done", DONE);
    let out = sb.run(&["run", "Add auth (it's \"urgent\")", "--script", &script]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    let log = std::fs::read_to_string(sb.home().join(".autoagent/execution.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert!(
        lines[0].starts_with("About to start issue task-")
            && lines[0].ends_with(": Add auth (it's \"urgent\")"),
        "{log}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.project().join("ledger.txt")).unwrap(),
        "started\nvalidated\nnotified\nrawko ran\n"
    );
    assert!(shown.contains("is not a git repository"), "{shown}");

    // A change in AutoAgent's file needs trust again.
    let changed = AUTOAGENT_DOCUMENTED_CONFIG.replace("notify-completion", "notify-others");
    sb.write(&sb.autoagent_config_file(), &changed);
    let out = sb.run(&["run", "Again", "--script", &script]);
    let shown = text(&out);
    assert!(
        shown.contains(&format!(
            "note: the hooks in {ws}/.autoagent/config.json and {ws}/.rawko/config.json do not run: they changed since you trusted this workspace"
        )),
        "{shown}"
    );
    assert_eq!(
        log,
        std::fs::read_to_string(sb.home().join(".autoagent/execution.log")).unwrap()
    );
}

/// `config show` lists the hooks by when they run in a task's life, whatever order the file
/// gives them in; an event's own hooks keep their order (the order they run in).
#[test]
fn config_show_lists_hooks_in_the_order_a_task_meets_them() {
    let sb = Sandbox::new();
    sb.write(
        &sb.user_config_file(),
        r#"{"hooks": {
  "SessionEnd": [{"hooks": [{"type": "command", "command": "./end.sh"}]}],
  "Stop": [{"hooks": [{"type": "command", "command": "./stop.sh"}]}],
  "PostToolUse": [{"hooks": [{"type": "command", "command": "./post.sh"}]}],
  "PreToolUse": [{"hooks": [{"type": "command", "command": "./pre-b.sh"}, {"type": "command", "command": "./pre-a.sh"}]}],
  "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "./prompt.sh"}]}],
  "SessionStart": [{"hooks": [{"type": "command", "command": "./start.sh"}]}]
}}"#,
    );
    let expected = [
        "SessionStart: ./start.sh",
        "UserPromptSubmit: ./prompt.sh",
        "PreToolUse: ./pre-b.sh",
        "PreToolUse: ./pre-a.sh",
        "PostToolUse: ./post.sh",
        "Stop: ./stop.sh",
        "SessionEnd: ./end.sh",
    ];
    let shown = sb.ok(&["config", "show"]);
    let listed: Vec<&str> = shown
        .lines()
        .skip_while(|l| *l != "Hooks, in the order they run:")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.trim().trim_end_matches("(user)").trim_end())
        .collect();
    assert_eq!(listed, expected, "{shown}");
    let json = sb.ok_json(&["config", "show", "--json"]);
    let hooks: Vec<&str> = json["hooks"]
        .as_array()
        .expect("hooks")
        .iter()
        .filter_map(|h| h["hook"].as_str())
        .collect();
    assert_eq!(hooks, expected, "{json:#}");
}

//! Session start, lifecycle hooks and their templates, pre hooks, prompts and workspace trust.

use super::*;

/// Claude Code's CLAUDE_ENV_FILE: what a SessionStart hook exports there, the task's later Bash
/// calls have. The file is read, not run: a command in it is reported and does nothing.
#[test]
fn session_start_hooks_set_the_environment_of_bash_calls_through_claude_env_file() {
    let home = Home::new();
    let pwned = home.path().join("pwned");
    let write_env = format!(
        r#"[ -n "$CLAUDE_ENV_FILE" ] && {{ echo 'export FOO=bar' >> "$CLAUDE_ENV_FILE"; echo 'export GREETING="it'"'"'s $FOO"' >> "$CLAUDE_ENV_FILE"; echo 'touch {}' >> "$CLAUDE_ENV_FILE"; }}"#,
        pwned.display()
    );
    home.config(json!({"hooks": {
        "SessionStart": [{"hooks": [
            {"type": "command", "command": write_env},
            // A second hook has a file of its own: a `>` here does not wipe the first one's.
            {"type": "command", "command": "echo 'export PATH=\"$PATH:/opt/rawko-test\"' > \"$CLAUDE_ENV_FILE\""}
        ]}]
    }}));
    let project = Project::empty();
    let script = project.script(
        "turns",
        r#"turns:
  - tool_calls:
      - {name: Bash, input: {command: "echo \"$FOO|$GREETING|${PATH##*:}\""}}
  - text: done
"#,
    );
    let mut ed = serve(&project, &home, fast());
    let task = start(&mut ed, "env", None, &script);
    let end = wait_finished(&mut ed, &task);
    assert_eq!(end["outcome"], "complete", "{end}");
    let results = tool_results(&mut ed, &task);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(
        results[0].0.starts_with("bar|it's bar|/opt/rawko-test\n"),
        "{results:#?}"
    );
    assert!(!pwned.exists(), "a command in CLAUDE_ENV_FILE ran");
    let errors = outputs(&mut ed, &task, "error");
    assert!(
        errors.len() == 1 && errors[0].contains("`touch ") && errors[0].contains("skipped"),
        "{errors:#?}"
    );
    let hook_out = outputs(&mut ed, &task, "hook_output");
    assert!(
        hook_out.contains(
            &"CLAUDE_ENV_FILE: the task's Bash commands get FOO, GREETING, PATH".to_owned()
        ),
        "{hook_out:#?}"
    );
}

#[test]
fn lifecycle_hooks_run_in_order_with_quoted_template_variables() {
    let home = Home::new();
    let ledger = home.path().join("events.txt");
    let pwned = home.path().join("pwned");
    let line = |event: &str| json!([{"type": "command", "command": format!("printf '%s|%s|%s\\n' {event} {{{{phaseName}}}} {{{{taskDescription}}}} >> {}", ledger.display())}]);
    let mut hooks = serde_json::Map::new();
    for e in [
        "PreExecutionStart",
        "PostExecutionStart",
        "SessionStart",
        "UserPromptSubmit",
        "PhaseEnter",
        "PhaseExit",
        "WorkflowComplete",
        "ApprovalRequested",
        "ApprovalResolved",
        "PreExecutionEnd",
        "PostExecutionEnd",
        "SessionEnd",
    ] {
        hooks.insert(e.to_owned(), line(e));
    }
    home.config(json!({ "hooks": hooks }));
    let project = Project::empty();
    project.write(
        ".rawko/workflows/tiny/workflow.yaml",
        "name: Tiny\ncommandName: tiny\ninitialMessage: \"Do it: {description}\"\nphases:\n  - plan.md\n  - build.md\n",
    );
    project.write(
        ".rawko/workflows/tiny/plan.md",
        "---\nid: plan\nname: Plan\nemoji: 📋\ntools:\n  whitelist: [Read]\n---\nPlan it.\n",
    );
    project.write(
        ".rawko/workflows/tiny/build.md",
        "---\nid: build\nname: Build\nemoji: 🔨\n---\nBuild it.\n",
    );
    let script = project.script(
        "turns",
        r#"turns:
  - tool_calls:
      - {name: Write, input: {path: PLAN.md, content: "plan"}}
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: finished
"#,
    );
    let description = format!("$(touch {}) it's `id`", pwned.display());
    let mut ed = serve(&project, &home, fast());
    ed.set_approval_policy(|_| Some("allow_once"));
    let task = start(&mut ed, &description, Some("tiny"), &script);
    let end = wait_finished(&mut ed, &task);
    assert_eq!(end["outcome"], "complete", "{end}");
    assert!(
        !pwned.exists(),
        "a task description is never run by the shell"
    );
    let text = std::fs::read_to_string(&ledger).unwrap();
    let events: Vec<&str> = text.lines().map(|l| l.split('|').next().unwrap()).collect();
    assert_eq!(
        events,
        vec![
            "PreExecutionStart",
            "SessionStart",
            "UserPromptSubmit",
            "PhaseEnter",
            "PostExecutionStart",
            "ApprovalRequested",
            "ApprovalResolved",
            "PhaseExit",
            "PhaseEnter",
            "PhaseExit",
            "WorkflowComplete",
            "PreExecutionEnd",
            "PostExecutionEnd",
            "SessionEnd",
        ],
        "{text}"
    );
    let first = text.lines().next().unwrap();
    assert!(first.ends_with(&format!("|{description}")), "{first}");
    assert!(
        text.lines().nth(3).unwrap().starts_with("PhaseEnter|Plan|"),
        "{text}"
    );
}

/// AutoAgent's documented hook writes the value inside single quotes:
/// `echo 'About to start issue {{issueNumber}}: {{issueTitle}}' >> log`. A description with quotes,
/// `$( … )`, backticks, `(` or a newline is logged exactly as written and runs nothing.
#[test]
fn a_template_inside_quotes_logs_a_nasty_description_exactly() {
    let home = Home::new();
    let log = home.path().join("execution.log");
    let pwned = home.path().join("pwned");
    let hook = |command: String| json!([{"type": "command", "command": command}]);
    home.config(json!({"hooks": {
        "PreExecutionStart": hook(format!("echo 'About to start: {{{{taskDescription}}}}' >> {}", log.display())),
        "PostExecutionStart": hook(format!("echo \"Started {{{{taskId}}}}: {{{{issueTitle}}}}\" >> {}", log.display())),
        "PostExecutionEnd": hook(format!("cat >> {} <<'EOF'\nDone ($HOME stays): {{{{taskDescription}}}}\nEOF", log.display())),
    }}));
    let project = Project::empty();
    let script = project.script("turns", "turns:\n  - text: done\n");
    // No `\b`, `\c`, `\n`…: dash's echo would read them as escapes.
    let description = format!(
        "Fix it's \"quoted\" $(touch {p}) `touch {p}` C:\\Users\\dev (paren; semi & pipe | \\q\nsecond line: 日本 ✓",
        p = pwned.display()
    );
    let mut ed = serve(&project, &home, fast());
    let task = start(&mut ed, &description, None, &script);
    let end = wait_finished(&mut ed, &task);
    assert_eq!(end["outcome"], "complete", "{end}");
    assert!(!pwned.exists(), "the description ran");
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        format!("About to start: {description}\nStarted {task}: {description}\nDone ($HOME stays): {description}\n")
    );
    let errors = outputs(&mut ed, &task, "error");
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn pre_hooks_can_stop_a_task_from_starting_or_completing() {
    let home = Home::new();
    let deny = home.script(
        "deny.sh",
        "#!/bin/sh\necho 'the build is red' >&2\nexit 2\n",
    );
    home.config(json!({"hooks": {"PreExecutionStart": [{"type": "command", "command": deny}]}}));
    let project = Project::empty();
    let script = project.script("turns", "turns:\n  - text: done\n");
    let mut ed = serve(&project, &home, fast());
    let task = start(&mut ed, "blocked at start", None, &script);
    let end = wait_finished(&mut ed, &task);
    assert_eq!(end["outcome"], "failed");
    assert_eq!(
        end["summary"],
        "execution blocked by a PreExecutionStart hook: the build is red"
    );
    drop(ed);

    let home = Home::new();
    let json_block = home.script(
        "end.sh",
        "#!/bin/sh\necho '{\"decision\": \"block\", \"reason\": \"no tests ran\", \"feedback\": \"run cargo test\"}'\n",
    );
    home.config(json!({"hooks": {
        "PreExecutionEnd": [{"type": "command", "command": json_block}],
        "PostExecutionEnd": [{"type": "git-commit"}, {"type": "git-push"}]
    }}));
    let mut ed = serve(&project, &home, fast());
    let task = start(&mut ed, "blocked at the end", None, &script);
    let end = wait_finished(&mut ed, &task);
    assert_eq!(end["outcome"], "failed", "{end}");
    assert!(
        end["summary"]
            .as_str()
            .unwrap()
            .starts_with("completion blocked by a PreExecutionEnd hook: no tests ran"),
        "{end}"
    );
    // The work of a task that did not complete is never committed or pushed.
    let notes = outputs(&mut ed, &task, "hook_output");
    assert!(
        notes.contains(&"git-commit skipped: the task did not complete".to_owned())
            && notes.contains(&"git-push (origin) skipped: the task did not complete".to_owned()),
        "{notes:#?}"
    );
}

#[test]
fn user_prompt_submit_can_block_a_message_and_add_context() {
    let home = Home::new();
    let hook = python_hook(
        &home,
        "prompt.py",
        r#"if "password" in data["prompt"]:
    print(json.dumps({"decision": "block", "reason": "no passwords in prompts"}))
else:
    print("Team rule: keep commits small.")
"#,
    );
    home.config(json!({"hooks": {"UserPromptSubmit": [{"hooks": [{"command": hook}]}]}}));
    let project = Project::empty();
    let script = project.script(
        "turns",
        "turns:\n  - text: first\n  - text: second\n  - text: third\n",
    );
    let mut ed = serve(&project, &home, json!({"countdownTickMillis": 20}));
    let task = start(&mut ed, "say hi", None, &script);
    // No workflow: the task completes after the first turn. The context joined the prompt.
    wait_finished(&mut ed, &task);
    let entries = home.entries();
    assert_eq!(entries[0]["prompt"], "say hi");
    // A blocked message (sent to a task that waits) is dropped with the reason shown.
    let script2 = project.script("wf", "turns:\n  - text: stopping\n  - text: after\n");
    let project2 = Project::with_starter();
    std::fs::copy(project.path(&script2), project2.path("wf.yaml")).unwrap();
    let mut ed2 = serve(&project2, &home, json!({"countdownTickMillis": 5000}));
    let task2 = start(&mut ed2, "feature work", Some("feature"), "wf.yaml");
    ed2.wait_for("the countdown", TIMEOUT, |m| {
        is_note(m, "rawko/countdown", &task2)
    });
    ed2.request("rawko/interrupt", json!({"taskId": task2}))
        .unwrap();
    ed2.request(
        "rawko/sendMessage",
        json!({"taskId": task2, "text": "my password is hunter2"}),
    )
    .unwrap();
    ed2.wait_for("the blocked message", TIMEOUT, |m| {
        is_note(m, "rawko/output", &task2)
            && m["params"]["kind"] == "error"
            && m["params"]["text"].as_str().is_some_and(|t| {
                t.contains("blocked by a UserPromptSubmit hook: no passwords in prompts")
            })
    });
    ed2.request("rawko/cancelTask", json!({"taskId": task2}))
        .unwrap();
    wait_finished(&mut ed2, &task2);
}

#[test]
fn workspace_hooks_run_only_once_the_workspace_is_trusted() {
    let home = Home::new();
    let project = Project::empty();
    let marker = home.path().join("ran");
    let hooks = json!({"PreExecutionStart": [{"type": "command", "command": format!("touch {}", marker.display())}]});
    project.write(
        ".rawko/config.json",
        &serde_json::to_string(&json!({ "hooks": hooks })).unwrap(),
    );
    let script = project.script("turns", "turns:\n  - text: done\n");

    // Not trusted: the editor is asked, says no; the hook does not run.
    let mut ed = serve(&project, &home, fast());
    let ask = ed.wait_for("rawko/trustWorkspace", TIMEOUT, |m| {
        m["method"] == "rawko/trustWorkspace"
    });
    assert_eq!(
        ask["params"]["workspace"],
        json!(project.ws.display().to_string())
    );
    assert_eq!(ask["params"]["changed"], json!(false));
    assert_eq!(
        ask["params"]["hooks"],
        json!([format!("PreExecutionStart: touch {}", marker.display())])
    );
    ed.reply(&ask["id"], json!({"trusted": false}));
    ed.wait_for("the warning", TIMEOUT, |m| {
        m["method"] == "window/showMessage"
            && m["params"]["message"]
                .as_str()
                .is_some_and(|t| t.contains("not trusted"))
    });
    let task = start(&mut ed, "untrusted", None, &script);
    wait_finished(&mut ed, &task);
    assert!(!marker.exists(), "an untrusted workspace's hook ran");
    drop(ed);

    // Trusted: it runs, and the trust is remembered.
    let mut ed = serve(&project, &home, fast());
    let ask = ed.wait_for("rawko/trustWorkspace", TIMEOUT, |m| {
        m["method"] == "rawko/trustWorkspace"
    });
    ed.reply(&ask["id"], json!({"trusted": true}));
    let task = start(&mut ed, "trusted", None, &script);
    wait_finished(&mut ed, &task);
    assert!(marker.exists(), "the trusted workspace's hook did not run");
    drop(ed);
    std::fs::remove_file(&marker).unwrap();
    let mut ed = serve(&project, &home, fast());
    let task = start(&mut ed, "still trusted", None, &script);
    wait_finished(&mut ed, &task);
    assert!(marker.exists());
    assert!(
        !ed.received()
            .iter()
            .any(|m| m["method"] == "rawko/trustWorkspace"),
        "a trusted workspace is not asked again"
    );
    drop(ed);

    // Changed hooks ask again.
    project.write(
        ".rawko/config.json",
        &serde_json::to_string(
            &json!({"hooks": {"PreExecutionStart": [{"type": "command", "command": "true"}]}}),
        )
        .unwrap(),
    );
    let mut ed = serve(&project, &home, fast());
    let ask = ed.wait_for("rawko/trustWorkspace", TIMEOUT, |m| {
        m["method"] == "rawko/trustWorkspace"
    });
    assert_eq!(ask["params"]["changed"], json!(true));
}

//! PreToolUse and Stop hooks, hook faults and quiet answers.

use super::*;

#[test]
fn pre_tool_use_hooks_block_deny_ask_allow_and_rewrite_like_claude_code() {
    let home = Home::new();
    let guard = python_hook(
        &home,
        "guard.py",
        r#"cmd = data["tool_input"].get("command", "")
if "rm -rf" in cmd:
    sys.stderr.write("no rm -rf in this project")
    sys.exit(2)
if "secret" in cmd:
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "secrets stay secret"}}))
elif "please ask" in cmd:
    print(json.dumps({"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "this one needs a human"}}))
elif "rewrite me" in cmd:
    print(json.dumps({"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": {"command": "echo rewritten"}, "additionalContext": "the command was rewritten"}}))
else:
    print("checked " + cmd)
"#,
    );
    home.config(json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": guard}]}]}}));
    let project = Project::empty();
    let script = project.script(
        "turns",
        r#"turns:
  - tool_calls:
      - {name: Bash, input: {command: "rm -rf build"}}
      - {name: Bash, input: {command: "echo secret"}}
      - {name: Bash, input: {command: "echo please ask"}}
      - {name: Bash, input: {command: "echo rewrite me"}}
      - {name: Bash, input: {command: "echo plain"}}
      - {name: Read, input: {path: notes.txt}}
  - text: "done"
"#,
    );
    project.write("notes.txt", "hello\n");
    let mut ed = serve(&project, &home, fast());
    ed.set_approval_policy(|p| (p["tool"] == "Bash").then_some("allow_once"));
    let task = start(&mut ed, "try the guard", None, &script);
    let end = wait_finished(&mut ed, &task);
    assert_eq!(end["outcome"], "complete", "{end}");

    let results = tool_results(&mut ed, &task);
    assert_eq!(results.len(), 6, "{results:#?}");
    assert_eq!(
        results[0],
        (
            "blocked by a PreToolUse hook: no rm -rf in this project".to_owned(),
            true
        )
    );
    assert_eq!(
        results[1],
        (
            "blocked by a PreToolUse hook: secrets stay secret".to_owned(),
            true
        )
    );
    // `ask` went to the editor, which allowed it.
    let approvals = ed.approval_requests();
    assert_eq!(approvals.len(), 1, "{approvals:#?}");
    assert!(
        approvals[0]["params"]["reason"]
            .as_str()
            .unwrap()
            .contains("this one needs a human"),
        "{}",
        approvals[0]
    );
    assert!(results[2].0.starts_with("please ask"), "{results:?}");
    assert!(
        results[3].0.starts_with("rewritten") && results[3].0.contains("the command was rewritten"),
        "{results:?}"
    );
    assert!(results[4].0.starts_with("plain"));
    assert_eq!(
        results[5],
        ("hello\n".to_owned(), false),
        "Read is not matched"
    );
    // stdout is shown as hook output.
    let hook_out = outputs(&mut ed, &task, "hook_output");
    assert!(
        hook_out.iter().any(|t| t.contains("checked echo plain")),
        "{hook_out:#?}"
    );

    // What the hook was told: AutoAgent's names and Claude Code's.
    let entries = home.entries();
    assert_eq!(entries.len(), 5, "only Bash calls: {entries:#?}");
    let e = &entries[4];
    assert_eq!(e["hook_event_name"], "PreToolUse");
    assert_eq!(e["eventName"], "PreToolUse");
    assert_eq!(e["tool_name"], "Bash");
    assert_eq!(e["tool_input"], json!({"command": "echo plain"}));
    assert!(e["tool_use_id"].is_string());
    assert_eq!(e["session_id"], json!(task));
    assert_eq!(e["taskId"], json!(task));
    assert_eq!(e["cwd"], json!(project.ws.display().to_string()));
    assert_eq!(e["workspace"], json!(project.ws.display().to_string()));
    assert!(e["sessionId"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(e["timestamp"].is_i64());
}

#[test]
fn a_blocking_stop_hook_sends_the_agent_on_then_lets_it_stop() {
    let home = Home::new();
    let stop = python_hook(
        &home,
        "stop.py",
        r#"if not data["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": "run the tests before you stop"}))
"#,
    );
    home.config(json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": stop}]}]}}));
    let project = Project::empty();
    let script = project.script(
        "turns",
        "turns:\n  - text: \"all done\"\n  - text: \"tests ran, now done\"\n",
    );
    let mut ed = serve(&project, &home, fast());
    let task = start(&mut ed, "stop early", None, &script);
    let end = wait_finished(&mut ed, &task);
    assert_eq!(end["outcome"], "complete", "{end}");
    let reminders = outputs(&mut ed, &task, "reminder");
    assert_eq!(reminders, vec!["run the tests before you stop".to_owned()]);
    let entries = home.entries();
    let active: Vec<&Value> = entries.iter().map(|e| &e["stop_hook_active"]).collect();
    assert_eq!(active, vec![&json!(false), &json!(true)]);
    assert_eq!(entries[0]["last_assistant_message"], "all done");
}

#[test]
fn a_stop_hook_that_always_blocks_hits_the_reminder_cap() {
    let home = Home::new();
    let stop = home.script("stop.sh", "#!/bin/sh\necho 'keep going' >&2\nexit 2\n");
    home.config(json!({"maxReminders": 2, "hooks": {"Stop": [{"hooks": [{"command": stop}]}]}}));
    let project = Project::empty();
    let script = project.script(
        "turns",
        "turns:\n  - text: one\n  - text: two\n  - text: three\n  - text: four\n",
    );
    let mut ed = serve(&project, &home, fast());
    let task = start(&mut ed, "never stop", None, &script);
    let end = wait_finished(&mut ed, &task);
    assert_eq!(end["outcome"], "failed", "{end}");
    assert!(
        end["summary"]
            .as_str()
            .unwrap()
            .contains("a Stop hook kept the agent going 3 times"),
        "{end}"
    );
    assert_eq!(outputs(&mut ed, &task, "reminder").len(), 2);
}

#[test]
fn hook_faults_are_reported_and_fail_closed_blocks() {
    let home = Home::new();
    let hang = home.script("hang.sh", "#!/bin/sh\nsleep 30\n");
    let crash = home.script("crash.sh", "#!/bin/sh\nkill -SEGV $$\n");
    let huge = home.script(
        "huge.sh",
        "#!/bin/sh\nhead -c 5000000 /dev/zero | tr '\\0' 'x'\nprintf '\\377\\376 tail'\n",
    );
    home.config(json!({"hooks": {
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [
                {"type": "command", "command": hang.display().to_string(), "timeout": 0.3},
                {"type": "command", "command": crash.display().to_string()},
                {"type": "command", "command": "./no-such-guard.sh"},
                {"type": "command", "command": huge.display().to_string()}
            ]},
            {"matcher": "Write", "hooks": [
                {"type": "command", "command": "./missing-guard.sh", "failClosed": true}
            ]},
            {"matcher": "Edit", "hooks": [
                {"type": "command", "command": hang.display().to_string(), "timeout": 0.3, "failClosed": true}
            ]}
        ]
    }}));
    let project = Project::empty();
    project.write("a.txt", "a\n");
    let script = project.script(
        "turns",
        r#"turns:
  - tool_calls:
      - {name: Bash, input: {command: "echo still runs"}}
      - {name: Write, input: {path: b.txt, content: "b"}}
      - {name: Edit, input: {path: a.txt, old_text: "a", new_text: "c"}}
  - text: done
"#,
    );
    let mut ed = serve(&project, &home, fast());
    let task = start(&mut ed, "faults", None, &script);
    let end = wait_finished(&mut ed, &task);
    assert_eq!(end["outcome"], "complete", "{end}");
    let results = tool_results(&mut ed, &task);
    assert!(results[0].0.starts_with("still runs"), "{results:?}");
    assert!(!results[0].1);
    assert!(results[1].1, "{results:?}");
    assert!(
        results[1]
            .0
            .contains("could not run (command not found, exit 127)")
            && results[1].0.contains("failClosed"),
        "{results:?}"
    );
    assert!(
        !project.path("b.txt").exists(),
        "the failClosed Write did not run"
    );
    assert!(
        results[2].1 && results[2].0.contains("timed out"),
        "{results:?}"
    );
    assert_eq!(
        std::fs::read_to_string(project.path("a.txt")).unwrap(),
        "a\n"
    );

    let errors = outputs(&mut ed, &task, "error");
    let joined = errors.join("\n");
    assert!(joined.contains("timed out after 0.3 s"), "{joined}");
    assert!(joined.contains("crashed (killed by SIGSEGV"), "{joined}");
    assert!(
        joined.contains("hook configuration error") && joined.contains("./no-such-guard.sh"),
        "{joined}"
    );
    // A configuration error is in the status too.
    let statuses: Vec<Value> = ed
        .notifications(&task)
        .into_iter()
        .filter(|m| m["method"] == "rawko/status")
        .collect();
    assert!(
        statuses
            .iter()
            .any(|s| s["params"]["reason"].as_str().is_some_and(|r| r
                .starts_with("hook configuration error")
                && r.contains("no-such-guard"))),
        "{statuses:#?}"
    );
    // Huge and non-UTF-8 output is cut and shown.
    let hook_out = outputs(&mut ed, &task, "hook_output");
    let big = hook_out
        .iter()
        .find(|t| t.contains("huge.sh"))
        .expect("the huge hook's output is shown");
    assert!(big.len() < 20_000, "cut to a readable size: {}", big.len());
    assert!(
        big.contains("more bytes of output not shown"),
        "{}",
        &big[big.len() - 200..]
    );
}

/// Hooks that answer `{}` or `{"continue": true}` at every call add no output; a hook that
/// cannot run is told once for the task, not at every call it would have checked.
#[test]
fn quiet_answers_add_no_output_and_a_broken_hook_is_told_once() {
    let home = Home::new();
    home.config(json!({"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": "echo '{}'"},
            {"type": "command", "command": "echo '{\"continue\": true}'"},
            {"type": "command", "command": "./no-such-guard.sh"}
        ]}],
        "PostToolUse": [{"hooks": [{"type": "command", "command": "./no-such-guard.sh"}]}]
    }}));
    let project = Project::empty();
    let script = project.script(
        "turns",
        r#"turns:
  - tool_calls:
      - {name: Bash, input: {command: "echo one"}}
      - {name: Bash, input: {command: "echo two"}}
  - tool_calls:
      - {name: Bash, input: {command: "echo three"}}
  - text: done
"#,
    );
    let mut ed = serve(&project, &home, fast());
    let task = start(&mut ed, "quiet hooks", None, &script);
    let end = wait_finished(&mut ed, &task);
    assert_eq!(end["outcome"], "complete", "{end}");
    assert_eq!(tool_results(&mut ed, &task).len(), 3);
    let hook_out = outputs(&mut ed, &task, "hook_output");
    assert!(hook_out.is_empty(), "{hook_out:#?}");
    let errors = outputs(&mut ed, &task, "error");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].starts_with(
            "hook configuration error: PreToolUse hook `./no-such-guard.sh` could not run"
        ),
        "{errors:#?}"
    );
    let reasons: Vec<Value> = ed
        .notifications(&task)
        .into_iter()
        .filter(|m| {
            m["method"] == "rawko/status"
                && m["params"]["reason"]
                    .as_str()
                    .is_some_and(|r| r.starts_with("hook configuration error"))
        })
        .collect();
    assert_eq!(reasons.len(), 1, "{reasons:#?}");
}

//! Hooks end to end: real hook scripts (bash and python) configured in the user's and the
//! workspace's config, run by the real `rawko serve` while a scripted agent works, driven by the
//! fake editor of tests/support. Each hook writes what it was given to a ledger file, so the tests
//! check both what rawko told the hook and what it did with the answer.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use support::{is_note, Editor, Project, TIMEOUT};
use tempfile::TempDir;

/// A home directory with the user's config (and hook scripts) in it.
struct Home {
    dir: TempDir,
}

impl Home {
    fn new() -> Self {
        Self {
            dir: TempDir::new().expect("temp home"),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes an executable script under `<home>/hooks/`; returns its path.
    fn script(&self, name: &str, body: &str) -> PathBuf {
        let path = self.path().join("hooks").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, body).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// The user's `~/.config/rawko/config.json`.
    fn config(&self, value: Value) {
        let path = self.path().join(".config/rawko/config.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    }

    fn ledger(&self) -> PathBuf {
        self.path().join("ledger.jsonl")
    }

    /// Every JSON line the hooks wrote to the ledger.
    fn entries(&self) -> Vec<Value> {
        std::fs::read_to_string(self.ledger())
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("ledger line {l}: {e}")))
            .collect()
    }
}

/// A python hook that appends its stdin to the ledger, then runs `then` (python, with `data`).
fn python_hook(home: &Home, name: &str, then: &str) -> String {
    let ledger = home.ledger();
    let body = format!(
        "#!/usr/bin/env python3\nimport json, sys\ndata = json.load(sys.stdin)\nwith open({ledger:?}, 'a') as f:\n    f.write(json.dumps(data) + '\\n')\n{then}\n",
        ledger = ledger.display().to_string()
    );
    home.script(name, &body).display().to_string()
}

fn serve(project: &Project, home: &Home, options: Value) -> Editor {
    let mut ed = Editor::spawn_in(&project.ws, home.path());
    ed.initialize(options);
    ed
}

fn fast() -> Value {
    json!({"countdownTickMillis": 20, "approvalTimeoutSeconds": 10})
}

fn start(ed: &mut Editor, description: &str, workflow: Option<&str>, script: &str) -> String {
    let mut params = json!({"description": description, "provider": "scripted", "script": script});
    if let Some(w) = workflow {
        params["workflow"] = json!(w);
    }
    let result = ed
        .request("rawko/startTask", params)
        .unwrap_or_else(|e| panic!("rawko/startTask failed: {e}"));
    result["taskId"].as_str().unwrap().to_owned()
}

fn wait_finished(ed: &mut Editor, task: &str) -> Value {
    ed.wait_for("taskFinished", Duration::from_secs(30), |m| {
        is_note(m, "rawko/taskFinished", task)
    })["params"]
        .clone()
}

fn outputs(ed: &mut Editor, task: &str, kind: &str) -> Vec<String> {
    ed.notifications(task)
        .iter()
        .filter(|m| m["method"] == "rawko/output" && m["params"]["kind"] == kind)
        .map(|m| m["params"]["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn tool_results(ed: &mut Editor, task: &str) -> Vec<(String, bool)> {
    ed.notifications(task)
        .iter()
        .filter(|m| m["method"] == "rawko/output" && m["params"]["kind"] == "tool_result")
        .map(|m| {
            (
                m["params"]["text"].as_str().unwrap_or_default().to_owned(),
                m["params"]["isError"] == json!(true),
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------

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

#[test]
fn a_session_is_recorded_and_its_stop_hooks_run_when_it_ends() {
    let home = Home::new();
    let stop_ledger = home.path().join("stop.txt");
    home.config(json!({"hooks": {"Stop": [{"type": "command", "command": format!("cat >> {}; echo >> {}", stop_ledger.display(), stop_ledger.display())}]}}));
    let project = Project::empty();
    let script = project.script("turns", "turns:\n  - text: done\n");
    let mut ed = serve(&project, &home, fast());
    let task = start(&mut ed, "one task", None, &script);
    wait_finished(&mut ed, &task);
    ed.request("shutdown", Value::Null).unwrap();
    ed.notify("exit", Value::Null);
    assert!(ed.exit_status(TIMEOUT).is_some());
    let current = Editor::state_dir(home.path()).join("sessions/current");
    let session: Value = serde_json::from_str(&std::fs::read_to_string(&current).unwrap()).unwrap();
    assert_eq!(session["status"], "completed", "{session}");
    assert_eq!(session["command"], "serve");
    assert_eq!(session["tasks"]["planned"], 1);
    assert_eq!(session["tasks"]["completed"], 1);
    assert!(session["endTime"].is_i64());
    let stop: Value =
        serde_json::from_str(std::fs::read_to_string(&stop_ledger).unwrap().trim()).unwrap();
    assert_eq!(stop["eventName"], "Stop");
    assert_eq!(stop["reason"], "completed");
    assert_eq!(stop["sessionId"], session["id"]);
    assert_eq!(stop["issuesCompleted"], 1);

    // SIGTERM: interrupted, and Stop runs with that reason.
    std::fs::remove_file(&stop_ledger).unwrap();
    let mut ed = serve(&project, &home, fast());
    let pid = ed.pid();
    let _ = std::process::Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status();
    assert!(ed.exit_status(TIMEOUT).is_some());
    let session: Value = serde_json::from_str(&std::fs::read_to_string(&current).unwrap()).unwrap();
    assert_eq!(session["status"], "interrupted", "{session}");
    let stop: Value =
        serde_json::from_str(std::fs::read_to_string(&stop_ledger).unwrap().trim()).unwrap();
    assert_eq!(stop["reason"], "interrupted");
}

#[test]
fn hooks_see_claude_codes_tool_input_and_transcript() {
    // The usual guard of a Claude Code user: it reads `.tool_input.file_path`. The scripted model
    // writes rawko's older field names (`path`, `old_text`), which the hook must not miss.
    let home = Home::new();
    let guard = python_hook(
        &home,
        "env_guard.py",
        r#"path = data["tool_input"].get("file_path", "")
if path.endswith(".env"):
    sys.stderr.write("never touch " + path)
    sys.exit(2)
"#,
    );
    // A Stop hook that reads the conversation: it lets the agent stop only once the last
    // assistant message holds the promise.
    let stop = python_hook(
        &home,
        "promise.py",
        r#"last = None
with open(data["transcript_path"]) as t:
    for line in t:
        entry = json.loads(line)
        if entry["type"] == "assistant":
            last = entry
text = "".join(b.get("text", "") for b in last["message"]["content"] if b["type"] == "text")
if "<promise>DONE</promise>" not in text:
    print(json.dumps({"decision": "block", "reason": "say <promise>DONE</promise> when you are done"}))
"#,
    );
    home.config(json!({"hooks": {
        "PreToolUse": [{"matcher": "Write|Edit|MultiEdit", "hooks": [{"type": "command", "command": guard}]}],
        "Stop": [{"hooks": [{"type": "command", "command": stop}]}]
    }}));
    let project = Project::empty();
    project.write(".env", "KEY=1\n");
    project.write("a.txt", "one\n");
    let script = project.script(
        "turns",
        r#"turns:
  - tool_calls:
      - {name: Write, input: {path: .env, content: "KEY=stolen\n"}}
      - {name: Edit, input: {path: .env, old_text: "KEY=1", new_text: "KEY=2"}}
      - {name: MultiEdit, input: {file_path: .env, edits: [{old_string: "KEY=1", new_string: "KEY=3"}]}}
      - {name: Edit, input: {path: a.txt, old_text: one, new_text: two}}
  - text: "All done."
  - text: "All done. <promise>DONE</promise>"
"#,
    );
    let mut ed = serve(&project, &home, fast());
    let task = start(&mut ed, "try the guard", None, &script);
    let end = wait_finished(&mut ed, &task);
    assert_eq!(end["outcome"], "complete", "{end}");
    assert_eq!(
        std::fs::read_to_string(project.path(".env")).unwrap(),
        "KEY=1\n",
        "the guard must block every write to .env"
    );
    assert_eq!(
        std::fs::read_to_string(project.path("a.txt")).unwrap(),
        "two\n"
    );
    let results = tool_results(&mut ed, &task);
    assert_eq!(results.len(), 4, "{results:#?}");
    for r in &results[..3] {
        assert!(r.1 && r.0.contains("never touch .env"), "{results:#?}");
    }
    // What the hook was given: Claude Code's names only.
    let inputs: Vec<Value> = home
        .entries()
        .into_iter()
        .filter(|e| e["hook_event_name"] == "PreToolUse")
        .map(|e| e["tool_input"].clone())
        .collect();
    assert_eq!(
        inputs[1],
        json!({"file_path": ".env", "old_string": "KEY=1", "new_string": "KEY=2"})
    );
    // The Stop hook read the transcript: it sent the agent on once, then let it stop.
    let stops: Vec<Value> = home
        .entries()
        .into_iter()
        .filter(|e| e["hook_event_name"] == "Stop")
        .collect();
    assert_eq!(stops.len(), 2, "{stops:#?}");
    let transcript = stops[0]["transcript_path"].as_str().unwrap();
    assert!(transcript.ends_with("transcript.jsonl"), "{transcript}");
    let reminders = outputs(&mut ed, &task, "reminder");
    assert_eq!(reminders.len(), 1, "{reminders:?}");
    assert!(reminders[0].contains("<promise>DONE</promise>"));
}

#[test]
fn a_fault_inside_a_task_fails_it_and_the_server_keeps_serving() {
    let home = Home::new();
    // A hook that closes its output and then outlives its timeout once panicked rawko's hook
    // runner and left the task running forever.
    let wedge = home.script("wedge.sh", "#!/bin/sh\nexec >/dev/null 2>&1\nsleep 30\n");
    home.config(json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": wedge.display().to_string(), "timeout": 0.3}]}]}}));
    let project = Project::empty();
    let wedged = project.script(
        "wedged",
        "turns:\n  - tool_calls:\n      - {name: Bash, input: {command: \"echo hi\"}}\n  - text: done\n",
    );
    let panics = project.script("panics", "turns:\n  - panic: \"boom in the actor\"\n");
    let mut ed = serve(&project, &home, fast());
    let task = start(&mut ed, "a wedged hook", None, &wedged);
    let end = wait_finished(&mut ed, &task);
    assert_eq!(end["outcome"], "complete", "{end}");
    assert!(
        outputs(&mut ed, &task, "error")
            .iter()
            .any(|e| e.contains("timed out")),
        "the timeout is reported"
    );

    // A panic inside the actor (fault injection through the scripted provider).
    let task = start(&mut ed, "a bug", None, &panics);
    let end = wait_finished(&mut ed, &task);
    assert_eq!(end["outcome"], "failed", "{end}");
    assert!(
        end["summary"]
            .as_str()
            .unwrap()
            .contains("boom in the actor"),
        "{end}"
    );
    let got = ed
        .request("rawko/getTask", json!({"taskId": task}))
        .unwrap();
    assert_eq!(got["task"]["state"], "failed", "{got}");
    let cancel = ed.request("rawko/cancelTask", json!({"taskId": task}));
    assert!(cancel.is_err(), "{cancel:?}");
    // The server goes on: another task runs to the end.
    let again = start(&mut ed, "after the bug", None, &wedged);
    assert_eq!(wait_finished(&mut ed, &again)["outcome"], "complete");
    // A new server lists the task as failed, not interrupted.
    ed.kill9();
    drop(ed);
    let mut ed = serve(&project, &home, fast());
    let listed = ed.request("rawko/listTasks", json!({})).unwrap();
    let entry = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["taskId"] == json!(task))
        .cloned()
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(entry["state"], "failed", "{entry}");
}

#[test]
fn a_guard_answer_past_the_display_cap_is_read_in_full_and_a_broken_one_fails_closed() {
    let home = Home::new();
    // A deny after a megabyte of whitespace, and broken JSON from a failClosed guard.
    let padded = python_hook(
        &home,
        "padded.py",
        r#"cmd = data["tool_input"].get("command", "")
if "padded" in cmd:
    sys.stdout.write(" " * (1024 * 1024) + json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "denied after the padding"}}))
"#,
    );
    let broken = python_hook(
        &home,
        "broken.py",
        r#"cmd = data["tool_input"].get("command", "")
if "broken" in cmd:
    sys.stdout.write('{"hookSpecificOutput": {"permissionDecision": "deny"' + "x" * 300000)
"#,
    );
    home.config(
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": padded},
            {"type": "command", "command": broken, "failClosed": true}
        ]}]}}),
    );
    let project = Project::empty();
    let script = project.script(
        "turns",
        "turns:\n  - tool_calls:\n      - {name: Bash, input: {command: \"echo padded > a.txt\"}}\n      - {name: Bash, input: {command: \"echo broken > b.txt\"}}\n      - {name: Bash, input: {command: \"echo fine > c.txt\"}}\n  - text: done\n",
    );
    let mut ed = serve(&project, &home, fast());
    let task = start(&mut ed, "guards", None, &script);
    assert_eq!(wait_finished(&mut ed, &task)["outcome"], "complete");
    let results = tool_results(&mut ed, &task);
    assert_eq!(results.len(), 3, "{results:#?}");
    assert_eq!(
        results[0],
        (
            "blocked by a PreToolUse hook: denied after the padding".to_owned(),
            true
        )
    );
    assert!(
        results[1].1 && results[1].0.contains("cannot read"),
        "{results:#?}"
    );
    assert!(!results[2].1, "{results:#?}");
    assert!(!project.path("a.txt").exists() && !project.path("b.txt").exists());
    assert!(project.path("c.txt").exists());
}

#[test]
fn keys_stay_out_of_bash_and_out_of_everything_rawko_shows_or_logs() {
    let home = Home::new();
    let anthropic = "sk-ant-e2e-secret-0123456789";
    let token = "tok-user-secret-9876543210";
    let config_key = "sk-openai-from-config-5555";
    let hook = home.script(
        "leak.sh",
        &format!("#!/bin/sh\ncat >/dev/null\necho \"hook saw {token}\"\n"),
    );
    home.config(json!({
        "secrets": {"env": ["MY_TOKEN"]},
        "apiKeys": {"openai": config_key},
        "hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": hook.display().to_string()}]}]}
    }));
    let project = Project::empty();
    project.write("notes.txt", &format!("the key is {config_key}\n"));
    let script = project.script(
        "turns",
        &format!(
            "turns:\n  - text: \"I will not say {anthropic}\"\n    tool_calls:\n      - {{name: Bash, input: {{command: \"env; echo key=$ANTHROPIC_API_KEY tok=$MY_TOKEN\"}}}}\n      - {{name: Read, input: {{file_path: notes.txt}}}}\n  - text: done\n"
        ),
    );
    let mut ed = Editor::spawn_with_env(
        &project.ws,
        home.path(),
        &[("ANTHROPIC_API_KEY", anthropic), ("MY_TOKEN", token)],
    );
    ed.initialize(fast());
    let task = start(&mut ed, "print the environment", None, &script);
    assert_eq!(wait_finished(&mut ed, &task)["outcome"], "complete");
    let results = tool_results(&mut ed, &task);
    assert!(results[0].0.contains("key= tok="), "{}", results[0].0);
    assert!(
        results[1].0.contains("the key is <redacted>"),
        "{}",
        results[1].0
    );
    let mut seen = serde_json::to_string(&ed.notifications(&task)).unwrap();
    let dir = Editor::state_dir(home.path()).join("tasks").join(&task);
    for file in ["events.jsonl", "transcript.jsonl"] {
        seen.push_str(&std::fs::read_to_string(dir.join(file)).unwrap());
    }
    for secret in [anthropic, token, config_key] {
        assert!(!seen.contains(secret), "{secret} leaked");
    }
    assert!(
        seen.contains("hook saw <redacted>"),
        "the hook's output is shown, redacted"
    );
}

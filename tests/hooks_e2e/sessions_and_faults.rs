//! Recorded sessions, Claude Code's tool input, faults inside a task, guard answers and keys.

use super::*;

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
            "turns:\n  - text: \"I will not say {anthropic}\"\n    tool_calls:\n      - {{name: Bash, input: {{command: \"env; echo key=$ANTHROPIC_API_KEY tok=$MY_TOKEN\"}}}}\n      - {{name: Read, input: {{file_path: notes.txt}}}}\n  - text: \"done; the keys are {anthropic} and {config_key}\"\n"
        ),
    );
    let mut ed = Editor::spawn_with_env(
        &project.ws,
        home.path(),
        &[("ANTHROPIC_API_KEY", anthropic), ("MY_TOKEN", token)],
    );
    ed.initialize(fast());
    // A description that quotes a key (pasted by the user) is redacted like the model's text.
    let description = format!("print the environment, not {token}");
    let task = start(&mut ed, &description, None, &script);
    assert_eq!(wait_finished(&mut ed, &task)["outcome"], "complete");
    let results = tool_results(&mut ed, &task);
    assert!(results[0].0.contains("key= tok="), "{}", results[0].0);
    assert!(
        results[1].0.contains("the key is <redacted>"),
        "{}",
        results[1].0
    );
    let seen = serde_json::to_string(&ed.notifications(&task)).unwrap();
    for secret in [anthropic, token, config_key] {
        assert!(!seen.contains(secret), "{secret} leaked in a notification");
    }
    // Every file the task wrote under the state directory, the WAL of the live server included:
    // the log, the snapshot, the history (whose AGENT_COMPLETE detail is the model's last text),
    // the transcript, the session file. The history is written with the last snapshot, after
    // the task's end is announced: it is waited for.
    let state = Editor::state_dir(home.path());
    let history = state.join("tasks").join(&task).join("history.json");
    let deadline = std::time::Instant::now() + TIMEOUT;
    while !history.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let files = files_under(&state);
    for name in [
        "events.jsonl",
        "snapshot.json",
        "history.json",
        "transcript.jsonl",
    ] {
        assert!(
            files.iter().any(|(p, _)| p.ends_with(name)),
            "no {name} under {}: {files:?}",
            state.display()
        );
    }
    assert!(
        files
            .iter()
            .any(|(p, _)| p.extension().is_some_and(|e| e == "wal")),
        "the live server's WAL is scanned too: {files:?}"
    );
    let mut leaks = Vec::new();
    for (path, bytes) in &files {
        for secret in [anthropic, token, config_key] {
            if bytes.windows(secret.len()).any(|w| w == secret.as_bytes()) {
                leaks.push(format!("{secret} in {}", path.display()));
            }
        }
    }
    assert!(leaks.is_empty(), "keys leaked: {leaks:#?}");
    assert!(
        seen.contains("hook saw <redacted>"),
        "the hook's output is shown, redacted"
    );
}

/// Every file under `dir` (symbolic links not followed) with its bytes.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(d) = dirs.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            match entry.file_type() {
                Ok(t) if t.is_dir() => dirs.push(path),
                Ok(t) if t.is_file() => {
                    if let Ok(bytes) = std::fs::read(&path) {
                        files.push((path, bytes));
                    }
                }
                _ => {}
            }
        }
    }
    files
}

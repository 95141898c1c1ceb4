//! Scenarios: the real Gemini CLI driven through a workflow by rawko's hooks.

use super::*;

/// The phase context reaches the model (SessionStart and BeforeAgent); BeforeToolSelection
/// narrows the Plan phase's functions to what it allows (with rawko's workflow tools) and the
/// Implement phase's not at all; a stop while the workflow is active sends the agent on with the
/// reminder, and the agent moves the workflow itself with `mcp_rawko_workflow_step` (through
/// `rawko mcp`) until it is complete, then may stop. No approval is asked for: the read and the
/// workflow tool are allowed in Plan, the write in Implement.
#[test]
fn context_narrowing_reminders_and_workflow_step_take_a_session_through_the_workflow() {
    let Some(mut s) = Scenario::new("workflow", None, |f| {
        turns(vec![
            Turn::call("read_file", json!({"file_path": f.at("a.txt")})),
            Turn::text("Here is my plan: change a.txt."),
            Turn::call(STEP, json!({"action": "next"})),
            Turn::call(
                "write_file",
                json!({"file_path": f.at("impl.txt"), "content": "implemented\n"}),
            ),
            Turn::text("Implemented."),
            Turn::call(STEP, json!({"action": "next"})),
            Turn::text("All done."),
        ])
    }) else {
        return;
    };
    s.ed.set_approval_policy(|_| Some("reject_once"));
    let outcome = s.run("Change a.txt, following the workflow.");
    s.print_timings();
    let main = s.api.main_requests();
    let result = match &outcome {
        Ok(r) => r.clone(),
        Err(why) => panic!("{}", s.failure(why)),
    };

    // The context: SessionStart's and BeforeAgent's both reach the first request.
    assert!(
        main[0].count(PLAN_MARKER) >= 2,
        "{}",
        s.failure(&format!(
            "the first model request should carry the Plan phase's context from SessionStart and \
             BeforeAgent; it mentions {PLAN_MARKER} {} times",
            main[0].count(PLAN_MARKER)
        ))
    );
    // The narrowing: Plan allows reading and searching, and rawko's workflow tools.
    let plan = allowed_functions(&main[0]).unwrap_or_else(|| {
        panic!(
            "{}",
            s.failure("the Plan phase's request should name the allowed functions")
        )
    });
    for name in ["read_file", "glob", "grep_search", STEP] {
        assert!(
            plan.iter().any(|n| n == name),
            "{}",
            s.failure(&format!("{name} should be allowed in Plan: {plan:?}"))
        );
    }
    for name in ["write_file", "replace", "run_shell_command"] {
        assert!(
            !plan.iter().any(|n| n == name),
            "{}",
            s.failure(&format!("{name} should not be allowed in Plan: {plan:?}"))
        );
    }
    assert!(
        s.ed.approval_requests().is_empty(),
        "{}",
        s.failure(&format!(
            "nothing here needs an approval, but the editor was asked about {:?}",
            s.approved_tools()
        ))
    );
    // The first stop: the reminder with the Plan phase's instructions, as the next prompt.
    let reminded = |i: usize, marker: &str| {
        main.get(i)
            .is_some_and(|r| r.last_text().contains(REMINDER) && r.last_text().contains(marker))
    };
    assert!(
        reminded(2, PLAN_MARKER),
        "{}",
        s.failure("the request after the first stop should carry rawko's reminder for Plan")
    );
    let step = s.api.response_to(STEP).map(|r| r.to_string());
    assert!(
        step.as_deref().is_some_and(|r| r.contains("Implement")),
        "{}",
        s.failure(&format!(
            "the first workflow_step should move to Implement: {step:?}"
        ))
    );
    // Implement restricts nothing: no list of functions.
    let implement = main
        .iter()
        .find(|r| r.count(IMPLEMENT_MARKER) > 0 && r.index > 3)
        .map(allowed_functions);
    assert_eq!(
        implement,
        Some(None),
        "{}",
        s.failure("the Implement phase's requests should not narrow the functions")
    );
    assert_eq!(
        s.read("impl.txt").as_deref(),
        Some("implemented\n"),
        "{}",
        s.failure("Implement allows writing: Gemini CLI should have written impl.txt")
    );
    // The context is not repeated with every tool result: the conversation still held it.
    let read = s.api.response_to("read_file").map(|r| r.to_string());
    assert!(
        read.as_deref().is_some_and(|r| !r.contains(PLAN_MARKER)),
        "{}",
        s.failure(&format!(
            "read_file's result should not repeat the context: {read:?}"
        ))
    );
    // The phase moved on between two model requests: the next tool result brings the new
    // phase's context (what PreCompress's check does when the context is gone).
    let wrote = s.api.response_to("write_file").map(|r| r.to_string());
    assert!(
        wrote
            .as_deref()
            .is_some_and(|r| r.contains(IMPLEMENT_MARKER)),
        "{}",
        s.failure(&format!(
            "write_file's result should carry the Implement phase's context: {wrote:?}"
        ))
    );
    assert!(
        reminded(5, IMPLEMENT_MARKER),
        "{}",
        s.failure("the request after the second stop should carry the reminder for Implement")
    );
    // Done: the agent may stop, and gemini ends with its answer.
    assert_eq!(
        main.len(),
        7,
        "{}",
        s.failure(
            "once the workflow is complete the agent may stop: no reminder after \"All done.\""
        )
    );
    assert_eq!(
        result["response"],
        "All done.",
        "{}",
        s.failure("gemini's result")
    );
    let finished =
        s.ed.received()
            .into_iter()
            .find(|m| m["method"] == "rawko/taskFinished")
            .map(|m| m["params"]["outcome"].clone());
    assert_eq!(
        finished,
        Some(json!("complete")),
        "{}",
        s.failure("rawko's task for the session should be complete")
    );
    // The editor is told which agent the session fronts.
    let status =
        s.ed.received()
            .into_iter()
            .find(|m| m["method"] == "rawko/status")
            .expect("a status");
    assert_eq!(status["params"]["externalAgent"], "gemini", "{status}");
    assert_eq!(
        status["params"]["externalAgentName"], "Gemini CLI",
        "{status}"
    );
    assert!(
        s.api.script_errors().is_empty(),
        "{}",
        s.failure("the script failed")
    );
}

/// The calls of the approval scenarios: a read (which passes), then every way Gemini CLI writes a
/// file, then the workflow's two steps and a stop.
fn writes(f: &Files) -> Vec<Turn> {
    vec![
        Turn::call("read_file", json!({"file_path": f.at("a.txt")})),
        Turn::call(
            "write_file",
            json!({"file_path": f.at("new.txt"), "content": "new\n"}),
        ),
        Turn::call(
            "replace",
            json!({"file_path": f.at("a.txt"), "instruction": "Say bye.", "old_string": "hello", "new_string": "bye"}),
        ),
        Turn::call(
            "run_shell_command",
            json!({"command": "echo x > shell.txt", "description": "Write shell.txt"}),
        ),
        // Allowed, but it fails: recorded as a failure.
        Turn::call("read_file", json!({"file_path": f.at("missing.txt")})),
        Turn::call(STEP, json!({"action": "next"})),
        Turn::call(STEP, json!({"action": "next"})),
        Turn::text("Done."),
    ]
}

/// In a read-only (whitelist) phase, BeforeToolSelection leaves the writing tools out, but a
/// model that calls them anyway meets the gate: read_file passes and every write (write_file,
/// replace, a shell command that writes) goes to the editor under rawko's names; the editor
/// refuses, Gemini CLI tells the model why and nothing changes on disk.
#[test]
fn writes_in_a_read_only_phase_are_refused_in_the_editor_and_change_nothing() {
    let Some(mut s) = Scenario::new("deny", None, |f| turns(writes(&f))) else {
        return;
    };
    s.ed.set_approval_policy(|_| Some("reject_once"));
    let outcome = s.run("Tidy the project.");
    s.print_timings();
    assert_eq!(
        s.approved_tools(),
        ["Write", "Edit", "Bash"],
        "{}",
        s.failure("every write in the Plan phase, and only those, should reach the editor")
    );
    for a in s.ed.approval_requests() {
        assert_eq!(a["params"]["phase"], "Plan", "{a}");
    }
    let read = s.api.response_to("read_file").map(|r| r.to_string());
    assert!(
        read.as_deref().is_some_and(|r| r.contains("hello")),
        "{}",
        s.failure(&format!("read_file should have run: {read:?}"))
    );
    for tool in ["write_file", "replace", "run_shell_command"] {
        let answer = s.api.response_to(tool).map(|r| r.to_string());
        assert!(
            answer
                .as_deref()
                .is_some_and(|r| r.contains("error") && r.contains("Plan")),
            "{}",
            s.failure(&format!(
                "{tool} was refused: Gemini CLI should tell the model so, with rawko's reason; it said {answer:?}"
            ))
        );
    }
    // AfterTool recorded both reads, the one that failed as a failure.
    let reads: Vec<bool> =
        s.ed.received()
            .into_iter()
            .filter(|m| {
                m["method"] == "rawko/output"
                    && m["params"]["kind"] == "tool_result"
                    && m["params"]["tool"] == "Read"
            })
            .map(|m| m["params"]["isError"] == true)
            .collect();
    assert_eq!(
        reads,
        [false, false, false, true],
        "{}",
        s.failure("each read's decision, then its result as AfterTool reported it (the missing file's as a failure)")
    );
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("hello\n"),
        "{}",
        s.failure("a.txt changed")
    );
    assert_eq!(
        s.read("new.txt"),
        None,
        "{}",
        s.failure("new.txt was written")
    );
    assert_eq!(
        s.read("shell.txt"),
        None,
        "{}",
        s.failure("shell.txt was written")
    );
    if let Err(why) = &outcome {
        panic!("{}", s.failure(why));
    }
}

/// The same writes, allowed once in the editor: Gemini CLI really carries them out.
#[test]
fn writes_allowed_in_the_editor_are_carried_out_by_gemini_cli() {
    let Some(mut s) = Scenario::new("allow", None, |f| turns(writes(&f))) else {
        return;
    };
    s.ed.set_approval_policy(|_| Some("allow_once"));
    let outcome = s.run("Tidy the project.");
    s.print_timings();
    assert_eq!(
        s.approved_tools(),
        ["Write", "Edit", "Bash"],
        "{}",
        s.failure("every write in the Plan phase, and only those, should reach the editor")
    );
    assert_eq!(
        s.read("new.txt").as_deref(),
        Some("new\n"),
        "{}",
        s.failure("write_file")
    );
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("bye\n"),
        "{}",
        s.failure("replace")
    );
    assert_eq!(
        s.read("shell.txt").as_deref(),
        Some("x\n"),
        "{}",
        s.failure("run_shell_command")
    );
    // A tool that failed is recorded as failed: the shell tool succeeded, so no error here,
    // while every call has its result in the task's output.
    if let Err(why) = &outcome {
        panic!("{}", s.failure(why));
    }
}

/// After AfterAgent's reminder Gemini CLI fires BeforeAgent with the reminder as its prompt: that
/// is not the user speaking, so the reminders count on, and past `maxReminders` the agent may
/// stop. The loop ends; the task waits on the user.
#[test]
fn the_reminder_given_back_as_a_prompt_does_not_reset_the_count_and_the_loop_ends() {
    let Some(mut s) = Scenario::new("reminder-cap", Some(json!({"maxReminders": 2})), |_| {
        |_: &Request| Turn::text("Done.")
    }) else {
        return;
    };
    let outcome = s.run("Change a.txt.");
    s.print_timings();
    let main = s.api.main_requests();
    let reminders = main
        .iter()
        .filter(|r| r.last_text().contains(REMINDER))
        .count();
    assert_eq!(
        (main.len(), reminders),
        (3, 2),
        "{}",
        s.failure("the prompt, then two reminders (maxReminders), then the agent may stop")
    );
    if let Err(why) = &outcome {
        panic!("{}", s.failure(why));
    }
    let blocked =
        s.ed.received()
            .into_iter()
            .filter(|m| m["method"] == "rawko/status")
            .any(|m| m["params"]["state"] == "blocked");
    assert!(
        blocked,
        "{}",
        s.failure("past the cap the task should wait on the user (blocked)")
    );
}

/// `rawko hook install --gemini` merges rawko's hooks and MCP server into the project's
/// `.gemini/settings.json`, a second run changes nothing, `--uninstall` leaves the file as it
/// was, and a settings file that does not read is left alone with a clear error.
#[test]
fn install_and_uninstall_round_trip_the_settings_file() {
    let home = TempDir::new().expect("home");
    let p = Project::empty();
    let mine = r#"{"general": {"vimMode": true}, "mcpServers": {"other": {"command": "x"}}}"#;
    p.write(".gemini/settings.json", mine);
    let settings = || -> Value {
        serde_json::from_str(&std::fs::read_to_string(p.path(".gemini/settings.json")).unwrap())
            .unwrap()
    };
    let out = install(&p.ws, home.path(), &["--workflow", "gated"]);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("Gemini CLI"), "{said}");
    let s = settings();
    assert_eq!(s["general"]["vimMode"], true);
    for event in [
        "SessionStart",
        "BeforeAgent",
        "BeforeToolSelection",
        "BeforeTool",
        "AfterTool",
        "AfterAgent",
        "PreCompress",
        "SessionEnd",
    ] {
        let command = s["hooks"][event][0]["hooks"][0]["command"]
            .as_str()
            .unwrap_or_default();
        assert!(
            command.ends_with(&format!("hook {event} --gemini --workflow gated")),
            "{event}: {s}"
        );
    }
    assert_eq!(s["mcpServers"]["rawko"]["args"], json!(["mcp"]), "{s}");
    let before = settings();
    let again = install(&p.ws, home.path(), &["--workflow", "gated"]);
    assert!(again.status.success());
    assert_eq!(settings(), before, "a second install changes nothing");
    let out = install(&p.ws, home.path(), &["--uninstall"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(settings(), serde_json::from_str::<Value>(mine).unwrap());
    // A broken file: an error, and the file as it was.
    p.write(".gemini/settings.json", "{\"hooks\": ");
    let out = install(&p.ws, home.path(), &[]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{err}");
    assert!(
        err.contains("is not valid JSON") && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(p.path(".gemini/settings.json")).unwrap(),
        "{\"hooks\": "
    );
    // The help names both agents.
    let help = Command::new(env!("CARGO_BIN_EXE_rawko"))
        .args(["hook", "--help"])
        .output()
        .expect("rawko hook --help");
    let help = String::from_utf8_lossy(&help.stdout).into_owned();
    assert!(
        help.contains("--gemini") && help.contains("--claude"),
        "{help}"
    );
}

/// With no editor attached (`rawko serve` in a terminal), a call the phase blocks cannot be
/// approved in rawko, and it is refused, saying so: Gemini CLI takes a hook's `ask` as "ask the
/// user" even in headless `gemini -p`, which then waits for ever (this test did, for its whole
/// timeout, while rawko answered `ask`).
#[test]
fn without_an_editor_a_blocked_call_is_refused_saying_why() {
    let Some(mut s) = Scenario::with_editor(
        "no-editor",
        Some(json!({"maxReminders": 1, "countdownSeconds": 1})),
        false,
        |f| {
            turns(vec![
                Turn::call(
                    "write_file",
                    json!({"file_path": f.at("new.txt"), "content": "new\n"}),
                ),
                Turn::text("Stopped."),
            ])
        },
    ) else {
        return;
    };
    let outcome = s.run("Write new.txt.");
    s.print_timings();
    let answer = s.api.response_to("write_file").map(|r| r.to_string());
    assert!(
        answer.as_deref().is_some_and(|r| r.contains("error")),
        "{}",
        s.failure(&format!("the write should have been refused: {answer:?}"))
    );
    assert!(
        answer
            .as_deref()
            .is_some_and(|r| r.contains("no editor is attached")),
        "{}",
        s.failure(&format!("the refusal should say why: {answer:?}"))
    );
    assert_eq!(
        s.read("new.txt"),
        None,
        "{}",
        s.failure("new.txt was written")
    );
    if let Err(why) = &outcome {
        panic!("{}", s.failure(why));
    }
}

/// Every `gemini -p` exit ends its session (SessionEnd). The task is suspended, not left shown as
/// running: blocked, saying so and how to resume. `gemini -p --resume ID` brings the same session
/// back under the same id: the task goes on in the phase it was in (its context with the prompt,
/// the functions narrowed to the phase's), and the editor sees it go on.
#[test]
fn a_session_that_ends_is_suspended_and_resumes_in_its_phase() {
    let Some(mut s) = Scenario::new("resume", Some(json!({"maxReminders": 0})), |f| {
        // Each run reads a.txt, then stops (Plan is read-only; no reminders).
        move |r: &Request| {
            let answered = r.body["contents"]
                .as_array()
                .and_then(|c| c.last())
                .and_then(|m| m["parts"].as_array())
                .is_some_and(|p| p.iter().any(|p| p["functionResponse"].is_object()));
            if answered {
                Turn::text("Stopping for now.")
            } else {
                Turn::call("read_file", json!({"file_path": f.at("a.txt")}))
            }
        }
    }) else {
        return;
    };
    s.ed.set_approval_policy(|_| Some("reject_once"));
    let first = s.run("FIRST-RUN: plan the change to a.txt.");
    s.print_timings();
    let first = first.unwrap_or_else(|why| panic!("{}", s.failure(&why)));
    let session = first["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", s.failure("gemini's JSON result names no session")))
        .to_owned();
    let resume = format!("gemini --resume {session}");
    let suspended =
        s.ed.wait_for("the suspended status", Duration::from_secs(10), |m| {
            m["method"] == "rawko/status"
                && m["params"]["state"] == "blocked"
                && m["params"]["reason"]
                    .as_str()
                    .is_some_and(|t| t.contains("suspended"))
        });
    let task = suspended["params"]["taskId"].as_str().unwrap().to_owned();
    let reason = suspended["params"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("the Gemini CLI session ended") && reason.contains(&resume),
        "{}",
        s.failure(&format!(
            "the reason should say the session ended and how to resume it: {reason}"
        ))
    );
    let finished =
        s.ed.received()
            .into_iter()
            .any(|m| m["method"] == "rawko/taskFinished");
    assert!(
        !finished,
        "{}",
        s.failure("the session's end should suspend its task, not end it")
    );

    // The same session, resumed headless: Plan's context comes with the new prompt, and the
    // functions are Plan's.
    let before = s.api.main_requests().len();
    let second = s.run_with("SECOND-RUN: go on.", &["--resume", &session]);
    s.print_timings();
    let second = second.unwrap_or_else(|why| panic!("{}", s.failure(&why)));
    assert_eq!(
        second["session_id"].as_str(),
        Some(session.as_str()),
        "{}",
        s.failure("gemini --resume should go on with the same session id")
    );
    let resumed = s.api.main_requests().split_off(before);
    let first_request = resumed
        .first()
        .unwrap_or_else(|| panic!("{}", s.failure("the resumed run made no model request")));
    assert!(
        first_request.last_text().contains("SECOND-RUN")
            && first_request.last_text().contains(PLAN_MARKER),
        "{}",
        s.failure("the resumed run's prompt should carry the Plan phase's context")
    );
    let functions = allowed_functions(first_request).unwrap_or_default();
    assert!(
        functions.iter().any(|n| n == "read_file") && !functions.iter().any(|n| n == "write_file"),
        "{}",
        s.failure(&format!(
            "the resumed run should be narrowed to Plan's functions: {functions:?}"
        ))
    );
    s.ed.wait_for("the task going on", Duration::from_secs(10), |m| {
        m["method"] == "rawko/status"
            && m["params"]["taskId"] == json!(task)
            && m["params"]["reason"]
                .as_str()
                .is_some_and(|t| t.contains("the Gemini CLI session resumed"))
    });
    // And its end suspends it again.
    s.ed.wait_for("the task suspended again", Duration::from_secs(10), |m| {
        m["method"] == "rawko/status"
            && m["params"]["taskId"] == json!(task)
            && m["params"]["state"] == "blocked"
            && m["params"]["reason"]
                .as_str()
                .is_some_and(|t| t.contains("suspended"))
    });
}

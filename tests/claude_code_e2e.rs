//! rawko in front of the real Claude Code CLI. Each scenario installs rawko's hooks and MCP server
//! into a temporary project (`rawko hook install --claude --workflow KEY`), runs `rawko serve` with
//! a fake editor answering approvals, and runs `claude -p` against a loopback fake of the
//! Anthropic Messages API whose scripted turns call the tools. So what is tested is what a user
//! gets: Claude Code's own hook runner, its tool implementations and its MCP client, talking to
//! the real `rawko hook` and `rawko mcp`.
//!
//! The CLI is `RAWKO_CLAUDE_BIN` (scripts/install-claude-code.sh installs the pinned version and
//! prints its path; scripts/test.sh sets it). Without it the tests are skipped, except under CI,
//! where they fail. Each scenario prints its timings (`[claude-e2e timing]` lines; run with
//! `--nocapture` to see them on success): the run's wall time, each hook event's duration as
//! Claude Code's debug log measures it, and the time from a tool call leaving the fake model to
//! the next model request (hook, tool and Claude Code together).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::claude_code::{self, Claude, HookTiming};
use support::fake_anthropic::{FakeAnthropic, Request, Turn};
use support::{Editor, Project};
use tempfile::TempDir;

/// The longest a scenario's `claude -p` may run. Claude Code waits up to 600 s for a hook, so a
/// hook that never answers shows up here as a timeout.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// How long claude may still run after rawko's task for its session has finished.
const AFTER_FINISH: Duration = Duration::from_secs(10);

/// In the first phase's instructions (so in its context and its reminder).
const PLAN_MARKER: &str = "PHASE-PLAN-MARKER";
/// In the second phase's instructions.
const IMPLEMENT_MARKER: &str = "PHASE-IMPLEMENT-MARKER";
/// A sentence of rawko's not-done reminder.
const REMINDER: &str = "You must NOT stop yet";
/// The MCP tool that moves the workflow, as Claude Code names it.
const STEP: &str = "mcp__rawko__workflow_step";

const NOTEBOOK: &str = r#"{"cells": [{"cell_type": "code", "execution_count": null, "id": "c1", "metadata": {}, "outputs": [], "source": ["print(1)"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}"#;

// ---------------------------------------------------------------------------------------------
// Set-up
// ---------------------------------------------------------------------------------------------

/// One scenario: a project, `rawko serve`, the fake API and (once started) claude. Fields drop in
/// order: claude (and the hooks it runs) first, the server last.
struct Scenario {
    name: &'static str,
    claude: Option<Claude>,
    api: FakeAnthropic,
    ed: Editor,
    project: Project,
    home: TempDir,
    bin: PathBuf,
}

/// How a scenario's project and server are set up.
struct Options {
    /// The workflow `rawko hook install --workflow` names.
    workflow: &'static str,
    /// `<ws>/.rawko/config.json`, if any.
    config: Option<Value>,
    /// Whether the fake editor sends `initialize` (and so is there to answer approvals).
    initialize: bool,
}

impl Options {
    fn workflow(workflow: &'static str) -> Self {
        Self {
            workflow,
            config: None,
            initialize: true,
        }
    }
}

/// Absolute paths in the workspace, for the scripted tool calls.
#[derive(Clone)]
struct Files(PathBuf);

impl Files {
    fn at(&self, rel: &str) -> String {
        self.0.join(rel).display().to_string()
    }
}

/// The project: two workflows, a text file and a notebook.
fn project() -> Project {
    let p = Project::empty();
    p.write(
        ".rawko/workflows/gated/workflow.yaml",
        "name: Gated\ncommandName: gated\ninitialMessage: \"Do this: {description}\"\nphases:\n  - plan.md\n  - implement.md\n",
    );
    p.write(
        ".rawko/workflows/gated/plan.md",
        &format!("---\nid: plan\nname: Plan\nemoji: \"📋\"\ntools:\n  whitelist: [Read, Glob, Grep]\n---\n{PLAN_MARKER}: read the code and change nothing.\n"),
    );
    p.write(
        ".rawko/workflows/gated/implement.md",
        &format!("---\nid: implement\nname: Implement\nemoji: \"🛠\"\n---\n{IMPLEMENT_MARKER}: make the change.\n"),
    );
    p.write(
        ".rawko/workflows/blacklisted/workflow.yaml",
        "name: Blacklisted\ncommandName: blacklisted\ninitialMessage: \"Do this: {description}\"\nphases:\n  - review.md\n  - implement.md\n",
    );
    p.write(
        ".rawko/workflows/blacklisted/review.md",
        &format!("---\nid: review\nname: Review\nemoji: \"🔍\"\ntools:\n  blacklist: [Write, Edit]\n---\n{PLAN_MARKER}: review; no file changes.\n"),
    );
    p.write(
        ".rawko/workflows/blacklisted/implement.md",
        &format!("---\nid: implement\nname: Implement\nemoji: \"🛠\"\n---\n{IMPLEMENT_MARKER}: make the change.\n"),
    );
    p.write("a.txt", "hello\n");
    p.write("n.ipynb", NOTEBOOK);
    p
}

impl Scenario {
    /// Sets the scenario up (project, hooks, server, fake API); `None` when the CLI is not
    /// available and the test is skipped.
    fn new<S>(name: &'static str, options: Options, script: impl FnOnce(Files) -> S) -> Option<Self>
    where
        S: FnMut(&Request) -> Turn + Send + 'static,
    {
        let bin = claude_code::binary(&format!("claude_code_e2e ({name})"))?;
        let home = TempDir::new().expect("temp home");
        let h = home.path();
        let project = project();
        if let Some(config) = &options.config {
            project.write(".rawko/config.json", &config.to_string());
        }
        let out = Command::new(env!("CARGO_BIN_EXE_rawko"))
            .args([
                "hook",
                "install",
                "--claude",
                "--workflow",
                options.workflow,
            ])
            .arg("--workspace")
            .arg(&project.ws)
            .env("HOME", h)
            .env("XDG_CONFIG_HOME", h.join(".config"))
            .output()
            .expect("run rawko hook install");
        assert!(
            out.status.success(),
            "rawko hook install --claude failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut ed = Editor::spawn_in(&project.ws, h);
        if options.initialize {
            ed.initialize(json!({"countdownTickMillis": 20, "approvalTimeoutSeconds": 30}));
            assert!(
                wait_endpoint(h, Duration::from_secs(10)),
                "rawko serve wrote no endpoint file in {}",
                h.join("run/rawko").display()
            );
        }
        Some(Self {
            name,
            claude: None,
            api: FakeAnthropic::start(script(Files(project.ws.clone()))),
            ed,
            project,
            home,
            bin,
        })
    }

    /// Starts `claude -p PROMPT`.
    fn start(&mut self, prompt: &str) {
        self.claude = Some(Claude::spawn(
            &self.bin,
            &self.project.ws,
            self.home.path(),
            &self.api.url(),
            prompt,
        ));
    }

    /// Waits for claude to exit (see [`Claude::wait`]); `check` sees the editor and the fake API
    /// while it runs and may end the wait with a failure. Once rawko's task for the session has
    /// finished, nothing is left for a hook to wait on: if claude still runs [`AFTER_FINISH`]
    /// later, a hook was left unanswered, and the wait fails saying so.
    fn wait(
        &mut self,
        timeout: Duration,
        mut check: impl FnMut(&mut Editor, &FakeAnthropic) -> Option<String>,
    ) -> Result<ExitStatus, String> {
        let Self {
            claude, ed, api, ..
        } = self;
        let mut finished: Option<(Instant, Value)> = None;
        claude
            .as_mut()
            .expect("claude was started")
            .wait(timeout, || {
                if finished.is_none() {
                    finished = ed
                        .received()
                        .into_iter()
                        .find(|m| m["method"] == "rawko/taskFinished")
                        .map(|m| (Instant::now(), m["params"].clone()));
                }
                if let Some((at, params)) = &finished {
                    if at.elapsed() > AFTER_FINISH {
                        return Some(format!(
                            "rawko's task for the session finished {:?} ago ({}: {}), but claude still runs: \
                             the hook call that was pending then (a Stop) was never answered",
                            at.elapsed(),
                            params["outcome"],
                            params["summary"]
                        ));
                    }
                }
                check(ed, api)
            })
    }

    /// Starts claude and waits until it exits (or the wait fails: see [`Scenario::wait`]).
    /// The outcome is claude's JSON result if it exited successfully with one, else what went
    /// wrong; a test looks at the effects first and at the outcome with [`Scenario::ended_well`].
    fn run(
        &mut self,
        prompt: &str,
        check: impl FnMut(&mut Editor, &FakeAnthropic) -> Option<String>,
    ) -> Result<Value, String> {
        self.start(prompt);
        let status = self.wait(RUN_TIMEOUT, check)?;
        if !status.success() {
            return Err(format!("claude exited with {status}"));
        }
        let result = self
            .claude()
            .result()
            .ok_or("claude printed no JSON result")?;
        if result["type"] != "result" || result["is_error"] != json!(false) {
            return Err(format!("claude's result is not a success: {result}"));
        }
        Ok(result)
    }

    /// The result of a run that ended well; panics with everything known otherwise.
    fn ended_well<'a>(&self, outcome: &'a Result<Value, String>) -> &'a Value {
        match outcome {
            Ok(result) => result,
            Err(why) => panic!("{}", self.failure(why)),
        }
    }

    fn claude(&self) -> &Claude {
        self.claude.as_ref().expect("claude was started")
    }

    fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.project.path(rel)).ok()
    }

    /// A failure message: `why`, then claude's output and what the fake API saw. (The editor's
    /// view and rawko's stderr follow when the Editor drops during the panic.)
    fn failure(&self, why: &str) -> String {
        let claude = self.claude.as_ref().map(Claude::report).unwrap_or_default();
        format!(
            "[{}] {why}\n{claude}--- the fake Anthropic API's requests:\n{}",
            self.name,
            self.api.report()
        )
    }

    /// The tools of the approvals the editor was asked for, in order, leaving out rawko's own MCP
    /// tools.
    fn approved_tools(&self) -> Vec<String> {
        self.ed
            .approval_requests()
            .iter()
            .map(|a| a["params"]["tool"].as_str().unwrap_or_default().to_owned())
            .filter(|t| !t.starts_with("mcp__rawko__"))
            .collect()
    }

    /// Prints the timings of the run.
    #[allow(clippy::print_stderr)]
    fn print_timings(&self) {
        let Some(claude) = &self.claude else { return };
        let label = format!("[claude-e2e timing] {}:", self.name);
        let main = self.api.main_requests();
        eprintln!(
            "{label} claude -p wall time {} ms, {} model requests ({} in all), Claude Code {}",
            claude.wall().as_millis(),
            main.len(),
            self.api.requests().len(),
            claude_code::version(&self.bin)
        );
        let hooks = claude.hook_timings();
        if hooks.is_empty() {
            eprintln!("{label} no hook timings in Claude Code's debug log");
        }
        let mut events: Vec<&str> = hooks.iter().map(HookTiming::event).collect();
        events.sort_unstable();
        events.dedup();
        for event in events {
            let ms: Vec<u64> = hooks
                .iter()
                .filter(|t| t.event() == event)
                .map(|t| t.millis)
                .collect();
            eprintln!("{label} hook {event}: {}", stats(&ms));
        }
        let each: Vec<String> = hooks
            .iter()
            .map(|t| format!("{}={}ms/exit {}", t.hook, t.millis, t.status))
            .collect();
        eprintln!("{label} hooks in order: {}", each.join(", "));
        // A tool call leaves the fake in a reply; the next model request carries its result.
        let mut trips: Vec<(String, u64)> = Vec::new();
        for pair in main.windows(2) {
            let names: Vec<String> = pair[0].tool_uses().into_iter().map(|u| u.1).collect();
            if let (false, Some(sent)) = (names.is_empty(), pair[0].replied) {
                let ms = pair[1].received.saturating_duration_since(sent).as_millis() as u64;
                trips.push((names.join("+"), ms));
            }
        }
        if !trips.is_empty() {
            let ms: Vec<u64> = trips.iter().map(|t| t.1).collect();
            let each: Vec<String> = trips.iter().map(|(n, ms)| format!("{n}={ms}ms")).collect();
            eprintln!(
                "{label} tool call to next model request: {}; {}",
                stats(&ms),
                each.join(", ")
            );
        }
    }
}

fn stats(ms: &[u64]) -> String {
    let mut v = ms.to_vec();
    v.sort_unstable();
    match (v.first(), v.last()) {
        (Some(min), Some(max)) => format!(
            "n={} min={min}ms median={}ms max={max}ms",
            v.len(),
            v[v.len() / 2]
        ),
        _ => "n=0".to_owned(),
    }
}

/// Waits until the server's endpoint file is there; false if it is not within `timeout`.
fn wait_endpoint(home: &Path, timeout: Duration) -> bool {
    let dir = home.join("run/rawko");
    let deadline = Instant::now() + timeout;
    loop {
        if std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some()) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The editor's answer to approvals: `outcome` for every tool but rawko's own MCP tools, which it
/// allows. (rawko's gate should never ask about those; `workflow_step_is_never_gated` checks that.
/// Here they are let through so that the other scenarios do not depend on it.)
fn answer_all_but_mcp(outcome: &'static str) -> impl Fn(&Value) -> Option<&'static str> {
    move |params| {
        if params["tool"]
            .as_str()
            .is_some_and(|t| t.starts_with("mcp__rawko__"))
        {
            Some("allow_once")
        } else {
            Some(outcome)
        }
    }
}

/// A script playing `turns` in order, then saying "Done." forever.
fn turns(turns: Vec<Turn>) -> impl FnMut(&Request) -> Turn + Send + 'static {
    let mut turns = turns.into_iter();
    move |_| turns.next().unwrap_or_else(|| Turn::text("Done."))
}

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------

/// (a) the phase context reaches the model; (c) a Stop while the workflow is active sends the
/// agent on with the reminder, and the agent moves the workflow itself with
/// `mcp__rawko__workflow_step` (through `rawko mcp`) until it is complete, then may stop; (d) the
/// session ends with claude's JSON result. The editor refuses every approval, and none should be
/// asked for: `workflow_step` is always allowed, whatever the phase's tool list says.
#[test]
fn context_reminders_and_workflow_step_take_a_session_through_the_workflow() {
    let Some(mut s) = Scenario::new("workflow", Options::workflow("gated"), |f| {
        turns(vec![
            Turn::tool("Read", json!({"file_path": f.at("a.txt")})),
            Turn::text("Here is my plan: change a.txt."),
            Turn::tool(STEP, json!({"action": "next"})),
            Turn::tool(
                "Write",
                json!({"file_path": f.at("impl.txt"), "content": "implemented\n"}),
            ),
            Turn::text("Implemented."),
            Turn::tool(STEP, json!({"action": "next"})),
            Turn::text("All done."),
        ])
    }) else {
        return;
    };
    s.ed.set_approval_policy(|_| Some("reject_once"));
    // Nothing here needs an approval: the first one ends the run (and fails the test below).
    let outcome = s.run("Change a.txt, following the workflow.", |ed, _| {
        let asked = ed.approval_requests();
        asked.first().map(|a| {
            format!(
                "stopped at the first approval request ({} in the {} phase)",
                a["params"]["tool"], a["params"]["phase"]
            )
        })
    });
    s.print_timings();
    let main = s.api.main_requests();

    // (a) SessionStart's and UserPromptSubmit's additionalContext both reach the model.
    let first = &main[0];
    assert!(
        first.count(PLAN_MARKER) >= 2,
        "{}",
        s.failure(&format!(
            "the first model request should carry the Plan phase's context from both SessionStart \
             and UserPromptSubmit; it mentions {PLAN_MARKER} {} times",
            first.count(PLAN_MARKER)
        ))
    );
    let asked: Vec<String> =
        s.ed.approval_requests()
            .iter()
            .map(|a| format!("{} in {}", a["params"]["tool"], a["params"]["phase"]))
            .collect();
    assert!(
        asked.is_empty(),
        "{}",
        s.failure(&format!(
            "rawko asked the editor to approve {asked:?}: workflow_step ({STEP}) must always be \
             allowed, whatever the phase's tool list says, and Implement allows the Write"
        ))
    );
    // (c) The first stop: the reminder, with the phase's instructions.
    let reminded = |i: usize, marker: &str| {
        main.get(i)
            .is_some_and(|r| r.last_text().contains(REMINDER) && r.last_text().contains(marker))
    };
    assert!(
        reminded(2, PLAN_MARKER),
        "{}",
        s.failure(
            "the request after the first stop should carry rawko's reminder for the Plan phase"
        )
    );
    let steps: Vec<_> = s
        .api
        .tool_calls()
        .into_iter()
        .filter(|c| c.0 == STEP)
        .map(|c| c.2)
        .collect();
    let step = |i: usize| steps.get(i).cloned().flatten();
    assert!(
        step(0).is_some_and(|r| !r.is_error && r.text.contains("Implement")),
        "{}",
        s.failure(&format!(
            "the first workflow_step should move to Implement; its result: {:?}",
            step(0)
        ))
    );
    assert_eq!(
        s.read("impl.txt").as_deref(),
        Some("implemented\n"),
        "{}",
        s.failure("Implement allows writing: Claude Code should have written impl.txt")
    );
    assert!(
        reminded(5, IMPLEMENT_MARKER),
        "{}",
        s.failure("the request after the second stop should carry the reminder for Implement")
    );
    assert!(
        step(1).is_some_and(|r| !r.is_error && r.text.to_lowercase().contains("complete")),
        "{}",
        s.failure(&format!(
            "the second workflow_step should complete the workflow; its result: {:?}",
            step(1)
        ))
    );
    // (d) Done: the agent may stop, and claude ends with its result.
    let result = s.ended_well(&outcome);
    assert_eq!(
        main.len(),
        7,
        "{}",
        s.failure(
            "once the workflow is complete the agent may stop: no reminder after \"All done.\""
        )
    );
    assert_eq!(
        result["result"],
        "All done.",
        "{}",
        s.failure("claude's result")
    );
    assert!(
        s.api.script_errors().is_empty(),
        "{}",
        s.failure("the script failed")
    );
}

/// The calls of the approval scenarios: reads (which pass), then every way Claude Code writes a
/// file, then the workflow's two steps and a stop.
fn writes(f: &Files) -> Vec<Turn> {
    vec![
        // Two calls in one reply: Claude Code runs them (and their hooks) together.
        Turn::tool("Read", json!({"file_path": f.at("a.txt")}))
            .then_tool("Read", json!({"file_path": f.at("n.ipynb")})),
        Turn::tool(
            "Write",
            json!({"file_path": f.at("new.txt"), "content": "new\n"}),
        ),
        Turn::tool(
            "Edit",
            json!({"file_path": f.at("a.txt"), "old_string": "hello", "new_string": "bye"}),
        ),
        Turn::tool(
            "MultiEdit",
            json!({"file_path": f.at("a.txt"), "edits": [{"old_string": "hello", "new_string": "multi"}]}),
        ),
        Turn::tool(
            "NotebookEdit",
            json!({"notebook_path": f.at("n.ipynb"), "cell_id": "c1", "new_source": "print(2)", "edit_mode": "replace"}),
        ),
        Turn::tool(
            "Bash",
            json!({"command": "echo x > shell.txt", "description": "Write shell.txt"}),
        ),
        Turn::tool(STEP, json!({"action": "next"})),
        Turn::tool(STEP, json!({"action": "next"})),
        Turn::text("Done."),
    ]
}

/// Whether this Claude Code has a MultiEdit tool: recent ones answer a call of it with "No such
/// tool available" and run no hook.
fn has_multiedit(s: &Scenario) -> bool {
    s.api
        .result_of("MultiEdit", |_| true)
        .is_some_and(|r| !r.text.contains("No such tool available"))
}

/// The tools that must reach the editor as approvals, in call order.
fn expected_approvals(s: &Scenario, order: &[&str]) -> Vec<String> {
    let multiedit = has_multiedit(s);
    order
        .iter()
        .filter(|t| **t != "MultiEdit" || multiedit)
        .map(|t| (*t).to_owned())
        .collect()
}

/// (b) In a read-only (whitelist) phase, Read passes and every write goes to the editor; the
/// editor refuses, Claude Code is told why and nothing changes on disk.
#[test]
fn writes_in_a_read_only_phase_are_refused_in_the_editor_and_change_nothing() {
    let Some(mut s) = Scenario::new("deny", Options::workflow("gated"), |f| turns(writes(&f)))
    else {
        return;
    };
    s.ed.set_approval_policy(answer_all_but_mcp("reject_once"));
    let outcome = s.run("Tidy the project.", |_, _| None);
    s.print_timings();
    assert_eq!(
        s.approved_tools(),
        expected_approvals(&s, &["Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"]),
        "{}",
        s.failure("every write in the Plan phase, and only those, should reach the editor")
    );
    for a in s.ed.approval_requests() {
        assert_eq!(a["params"]["phase"], "Plan", "{a}");
    }
    for (tool, input, result) in s.api.tool_calls() {
        let Some(result) = result else { continue };
        match tool.as_str() {
            "Read" => assert!(!result.is_error, "{}", s.failure(&format!("Read {input}: {result:?}"))),
            "Write" | "Edit" | "NotebookEdit" | "Bash" => assert!(
                result.is_error && result.text.contains("Plan"),
                "{}",
                s.failure(&format!(
                    "{tool} was refused: Claude Code should tell the model so, with rawko's reason; it said {result:?}"
                ))
            ),
            _ => {}
        }
    }
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("hello\n"),
        "{}",
        s.failure("a.txt changed")
    );
    assert_eq!(
        s.read("n.ipynb").as_deref(),
        Some(NOTEBOOK),
        "{}",
        s.failure("n.ipynb changed")
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
    // (d) The session ends with its result.
    s.ended_well(&outcome);
}

/// (b) The same writes, allowed once in the editor: Claude Code really writes them.
#[test]
fn writes_allowed_in_the_editor_are_carried_out_by_claude_code() {
    let Some(mut s) = Scenario::new("allow", Options::workflow("gated"), |f| turns(writes(&f)))
    else {
        return;
    };
    s.ed.set_approval_policy(answer_all_but_mcp("allow_once"));
    let outcome = s.run("Tidy the project.", |_, _| None);
    s.print_timings();
    assert_eq!(
        s.approved_tools(),
        expected_approvals(&s, &["Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"]),
        "{}",
        s.failure("every write in the Plan phase, and only those, should reach the editor")
    );
    for (tool, input, result) in s.api.tool_calls() {
        if tool == "MultiEdit" && !has_multiedit(&s) {
            continue;
        }
        let result =
            result.unwrap_or_else(|| panic!("{}", s.failure(&format!("{tool} got no result"))));
        assert!(
            !result.is_error,
            "{}",
            s.failure(&format!(
                "{tool} {input} was allowed and should have run: {result:?}"
            ))
        );
    }
    assert_eq!(
        s.read("new.txt").as_deref(),
        Some("new\n"),
        "{}",
        s.failure("Write")
    );
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("bye\n"),
        "{}",
        s.failure("Edit")
    );
    assert_eq!(
        s.read("shell.txt").as_deref(),
        Some("x\n"),
        "{}",
        s.failure("Bash")
    );
    let notebook: Value = serde_json::from_str(&s.read("n.ipynb").unwrap_or_default())
        .unwrap_or_else(|e| panic!("{}", s.failure(&format!("n.ipynb is not JSON: {e}"))));
    let source = &notebook["cells"][0]["source"];
    assert!(
        source == "print(2)" || source == &json!(["print(2)"]),
        "{}",
        s.failure(&format!(
            "NotebookEdit should have replaced the cell: {notebook}"
        ))
    );
    // (d) The session ends with its result.
    s.ended_well(&outcome);
}

/// (b) A blacklist phase (`blacklist: [Write, Edit]`) covers every tool that edits files:
/// MultiEdit and NotebookEdit too, and a shell write.
#[test]
fn a_blacklist_of_write_and_edit_covers_every_edit_tool() {
    let Some(mut s) = Scenario::new("blacklist", Options::workflow("blacklisted"), |f| {
        turns(writes(&f))
    }) else {
        return;
    };
    s.ed.set_approval_policy(answer_all_but_mcp("reject_once"));
    let outcome = s.run("Review the project.", |_, _| None);
    s.print_timings();
    assert_eq!(
        s.approved_tools(),
        expected_approvals(&s, &["Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"]),
        "{}",
        s.failure(
            "with Write and Edit blacklisted, every tool that edits files (MultiEdit and NotebookEdit \
             too) and a writing shell command should reach the editor"
        )
    );
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("hello\n"),
        "{}",
        s.failure("a.txt changed")
    );
    assert_eq!(
        s.read("n.ipynb").as_deref(),
        Some(NOTEBOOK),
        "{}",
        s.failure(
            "n.ipynb changed: NotebookEdit got through a phase that blacklists Write and Edit"
        )
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
    // (d) The session ends with its result.
    s.ended_well(&outcome);
}

/// A model that keeps stopping more often than `maxReminders` allows: rawko gives up reminding,
/// and the Stop hook still answers, so the session ends (rather than Claude Code waiting out its
/// 600 s hook timeout).
#[test]
fn more_stops_than_max_reminders_still_end_the_session() {
    const MAX_REMINDERS: usize = 2;
    let Some(mut s) = Scenario::new(
        "max-reminders",
        Options {
            config: Some(json!({"maxReminders": MAX_REMINDERS})),
            ..Options::workflow("gated")
        },
        |_| |_: &Request| Turn::text("I am done."),
    ) else {
        return;
    };
    s.ed.set_approval_policy(|_| Some("reject_once"));
    let outcome = s.run("Say you are done.", |_, _| None);
    s.print_timings();
    s.ended_well(&outcome);
    let reminders = s
        .api
        .main_requests()
        .iter()
        .filter(|r| r.last_text().contains(REMINDER))
        .count();
    assert_eq!(
        reminders,
        MAX_REMINDERS,
        "{}",
        s.failure("the agent should be reminded maxReminders times, then allowed to stop")
    );
    // Every stop the model was sent on from is answered with the reminder, the first one too.
    let first = &s.api.main_requests()[1];
    assert!(
        first.last_text().contains(REMINDER),
        "{}",
        s.failure(&format!(
            "the first stop should be answered with rawko's reminder; the model was told: {}",
            first.last_text()
        ))
    );
}

/// `rawko serve` whose editor never sent `initialize`: the hooks must still find it, and a Write
/// the phase blocks must not pass silently. With nobody to approve it, rawko answers Claude Code
/// `permissionDecision: "ask"` with its reason; in -p mode Claude Code then refuses the call.
#[test]
fn a_server_without_an_editor_does_not_let_a_blocked_write_pass() {
    let Some(mut s) = Scenario::new(
        "no-editor",
        Options {
            config: Some(json!({"maxReminders": 1, "countdownSeconds": 0})),
            initialize: false,
            ..Options::workflow("gated")
        },
        |f| {
            turns(vec![
                Turn::tool(
                    "Write",
                    json!({"file_path": f.at("new.txt"), "content": "new\n"}),
                ),
                Turn::text("Stopping."),
            ])
        },
    ) else {
        return;
    };
    let endpoint = wait_endpoint(s.home.path(), Duration::from_secs(5));
    s.start("Write new.txt.");
    // The request after the Write carries its result.
    let answered = s.api.wait_for(RUN_TIMEOUT, |r| r.main && r.index == 1);
    s.print_timings();
    let note = format!("(endpoint file written by the editor-less server: {endpoint})");
    assert!(
        answered.is_some(),
        "{}",
        s.failure(&format!(
            "the Write's PreToolUse hook did not answer within {RUN_TIMEOUT:?} {note}"
        ))
    );
    let written = s.read("new.txt");
    let result = s.api.result_of("Write", |_| true);
    assert_eq!(
        written,
        None,
        "{}",
        s.failure(&format!(
            "a Write the Plan phase blocks went through with no editor to approve it {note}; \
             the model was told {result:?}"
        ))
    );
    assert!(
        result
            .as_ref()
            .is_some_and(|r| r.is_error && !r.text.trim().is_empty()),
        "{}",
        s.failure(&format!(
            "the model should be told why the Write did not run: {result:?}"
        ))
    );
    let debug = std::fs::read_to_string(&s.claude().debug_log).unwrap_or_default();
    assert!(
        debug.contains("returned permissionDecision: ask"),
        "{}",
        s.failure("rawko should answer the Write with permissionDecision \"ask\"")
    );
    // What claude does next is not this test's concern; it is killed when `s` drops.
}

#[test]
fn claude_codes_hook_timing_lines_parse() {
    let t = HookTiming::parse(
        "2026-11-23T19:28:58.975Z [DEBUG] Hooks: PreToolUse:Write [/tmp/a b/rawko hook PreToolUse --workflow gated] finished with status 2 (14ms)",
    )
    .expect("a timing line");
    assert_eq!(
        (t.hook.as_str(), t.event(), t.status, t.millis),
        ("PreToolUse:Write", "PreToolUse", 2, 14)
    );
    assert!(t.command.ends_with("--workflow gated"));
}

/// The fake API itself, without Claude Code: a streamed and a plain reply to the main agent on one
/// kept-alive connection, a side request, a token count and an unknown path.
#[test]
fn the_fake_api_answers_streamed_and_plain_requests() {
    use std::io::{BufRead, BufReader, Read, Write};
    let api = FakeAnthropic::start(|r: &Request| {
        Turn::text(format!("turn {}", r.index)).then_tool("Read", json!({"file_path": "/x/é.txt"}))
    });
    let stream = std::net::TcpStream::connect(api.url().trim_start_matches("http://")).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    let mut call = |method: &str, path: &str, body: &Value| -> (u16, String) {
        let body = body.to_string();
        write!(
            writer,
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let status: u16 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        let mut length = 0;
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            if line.trim().is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
        }
        let mut out = vec![0; length];
        reader.read_exact(&mut out).unwrap();
        (status, String::from_utf8(out).unwrap())
    };
    let tools = json!([{"name": "Read", "input_schema": {}}]);
    let (status, plain) = call(
        "POST",
        "/v1/messages?beta=true",
        &json!({"model": "m", "messages": [], "tools": tools}),
    );
    let plain: Value = serde_json::from_str(&plain).unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        plain["content"][0],
        json!({"type": "text", "text": "turn 0"})
    );
    assert_eq!(plain["content"][1]["name"], "Read");
    assert_eq!(plain["stop_reason"], "tool_use");

    let (status, sse) = call(
        "POST",
        "/v1/messages",
        &json!({"model": "m", "messages": [], "tools": tools, "stream": true}),
    );
    assert_eq!(status, 200);
    let events: Vec<Value> = sse
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(events[2]["delta"]["text"], "turn 1");
    let input: String = events[5..7]
        .iter()
        .map(|e| e["delta"]["partial_json"].as_str().unwrap())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&input).unwrap(),
        json!({"file_path": "/x/é.txt"})
    );
    assert_eq!(events[8]["delta"]["stop_reason"], "tool_use");
    let id = events[4]["content_block"]["id"].as_str().unwrap();
    assert!(
        id.starts_with("toolu_") && id != plain["content"][1]["id"],
        "{id}"
    );

    let (_, side) = call(
        "POST",
        "/v1/messages",
        &json!({"model": "m", "messages": []}),
    );
    assert_eq!(
        serde_json::from_str::<Value>(&side).unwrap()["content"][0]["text"],
        "OK"
    );
    let (_, count) = call("POST", "/v1/messages/count_tokens", &json!({}));
    assert!(serde_json::from_str::<Value>(&count).unwrap()["input_tokens"].is_u64());
    let (status, _) = call("GET", "/v1/models", &Value::Null);
    assert_eq!(status, 404);

    let requests = api.requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(
        requests.iter().map(|r| r.main).collect::<Vec<_>>(),
        [true, true, false, false, false]
    );
    assert_eq!(api.main_requests()[1].index, 1);
    assert_eq!(api.tool_calls().len(), 2);
}

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

#[path = "../support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::claude_code::{self, Claude, HookTiming};
use support::fake_anthropic::{FakeAnthropic, Request, Turn};
use support::{Editor, Project};
use tempfile::TempDir;

mod hook_surface;
mod scenarios;
mod self_checks;

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
        self.start_with(prompt, &[], &[]);
    }

    /// Starts `claude -p PROMPT ARGS…` with more environment variables.
    fn start_with(&mut self, prompt: &str, args: &[&str], env: &[(&str, &str)]) {
        self.claude = Some(Claude::spawn_with(
            &self.bin,
            &self.project.ws,
            self.home.path(),
            &self.api.url(),
            prompt,
            args,
            env,
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
        // The endpoint file itself, not the temporary file it is written to before its rename.
        let written = std::fs::read_dir(&dir).is_ok_and(|d| {
            d.filter_map(Result::ok)
                .any(|e| e.path().extension().is_some_and(|x| x == "json"))
        });
        if written {
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

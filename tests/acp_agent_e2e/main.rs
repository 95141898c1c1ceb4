//! The `acp` provider with a real agent no one here wrote: claude-agent-acp (npm
//! `@agentclientprotocol/claude-agent-acp`, pinned in scripts/install-claude-code-acp.sh, with the
//! Claude Code it bundles) runs a rawko task against a loopback fake of the Anthropic API, started
//! by the real `rawko serve` and driven by a fake editor that answers approvals. The agent runs its
//! own tools (Read, Write, Edit, Bash: it no longer routes them through its client); rawko puts it
//! in its mode that asks ("Manual") at the start, so every write and command it makes is a
//! permission request that the phase gate decides. Its MCP tools are deferred behind ToolSearch:
//! the fake model loads `workflow_step` with it first. Fault cases with a scripted agent are in
//! `faults.rs`, `gate.rs`, `confined.rs` and `asking.rs`.
//!
//! `RAWKO_CLAUDE_ACP` names the adapter's entry point (scripts/test.sh sets it); without it the
//! test is skipped for a developer and fails under CI. With `--nocapture` the scenario prints the
//! session's wall time and the decision latency measured inside it:
//!
//!   RAWKO_CLAUDE_ACP=$(scripts/install-claude-code-acp.sh) cargo test -p rawko --test acp_agent_e2e claude_agent_acp_runs_a_workflow_on_rawkos_rails -- --nocapture

#[path = "../support/mod.rs"]
mod support;

mod asking;
mod codex;
mod confined;
mod faults;
mod gate;
mod gemini;
mod measure;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::fake_anthropic::{FakeAnthropic, Request, Turn};
use support::{is_note, Editor, Project};

pub(crate) use support::{installed, Agent};

/// claude-agent-acp.
const CLAUDE: Agent = Agent {
    var: "RAWKO_CLAUDE_ACP",
    skip: "RAWKO_CLAUDE_E2E",
    script: "scripts/install-claude-code-acp.sh",
    name: "claude-agent-acp",
    filter: "--test acp_agent_e2e",
};

fn adapter(test: &str) -> Option<PathBuf> {
    installed(test, &CLAUDE)
}

const PLAN_MARKER: &str = "PLAN-PHASE-CONTEXT";
const BUILD_MARKER: &str = "BUILD-PHASE-CONTEXT";

/// A workspace with a two-phase workflow whose first phase only reads.
fn project() -> Project {
    let p = Project::empty();
    p.write(
        ".rawko/workflows/gated/workflow.yaml",
        "name: Gated\ncommandName: gated\ninitialMessage: \"Do this: {description}\"\nphases:\n  - plan.md\n  - build.md\n",
    );
    p.write(
        ".rawko/workflows/gated/plan.md",
        &format!("---\nid: plan\nname: Plan\nemoji: \"📋\"\ntools:\n  whitelist: [Read, Glob, Grep]\n---\n{PLAN_MARKER}: read the code and change nothing. Then call workflow_step.\n"),
    );
    p.write(
        ".rawko/workflows/gated/build.md",
        &format!("---\nid: build\nname: Build\nemoji: \"🔨\"\n---\n{BUILD_MARKER}: make the change. Then call workflow_step.\n"),
    );
    p.write("a.txt", "hello from a.txt\n");
    p
}

/// The `acp` provider's entry: the adapter under node (under `tap` when given), sealed to the fake
/// API; its state in `CLAUDE_CONFIG_DIR` under `home` when `config_dir`, else where Claude Code
/// keeps it by default (`~/.claude` and `~/.claude.json`, in the server's home, which is `home`).
fn provider(
    entry: &Path,
    api: &str,
    home: &Path,
    config_dir: bool,
    tap: Option<&measure::Tap>,
) -> Value {
    let mut env = json!({
        "ANTHROPIC_BASE_URL": api,
        "ANTHROPIC_API_KEY": "sk-ant-rawko-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "IS_SANDBOX": "1",
        // Claude Code asks its model for a "next prompt" suggestion after each turn (a request
        // that offers the tools, as the main agent's do): off, as it is no part of the task.
        "CLAUDE_CODE_ENABLE_PROMPT_SUGGESTION": "false",
    });
    if config_dir {
        env["CLAUDE_CONFIG_DIR"] = json!(home.join(".claude"));
    }
    let args = vec![entry.display().to_string()];
    let (command, args) = match tap {
        Some(tap) => tap.wrap("node", &args),
        None => ("node".to_owned(), args),
    };
    json!({"name": "acp", "command": command, "args": args, "env": env})
}

/// The editor's settings: the agent as the user's provider (a workspace's providers need trust
/// first), and the tap's directory writable to it.
fn settings(provider: Value, tap: Option<&measure::Tap>) -> Value {
    let mut settings = json!({"providers": [provider]});
    if let Some(tap) = tap {
        settings["sandbox"] = json!({"agentWrite": [tap.dir()]});
    }
    settings
}

/// The notifications of `task` so far, as `kind: text` lines for failure messages.
fn outputs(ed: &mut Editor, task: &str) -> Vec<String> {
    ed.notifications(task)
        .iter()
        .filter(|n| n["method"] == "rawko/output")
        .map(|n| {
            format!(
                "{}: {}",
                n["params"]["kind"].as_str().unwrap_or_default(),
                support::shorten(n["params"]["text"].as_str().unwrap_or_default(), 160)
            )
        })
        .collect()
}

/// The model's script as the fake API's answer to each of the main agent's requests, in order;
/// a request that carries a tool result of a write the kernel refused (the agent's own Write of
/// a call the user approved in a read-only phase, which rawko then makes itself) is answered
/// with a plain text and does not move the script on: whether Claude asks again before rawko
/// stops its turn is a race. So is a prompt suggestion, should Claude Code ask for one.
fn scripted(script: Vec<Turn>) -> impl FnMut(&Request) -> Turn + Send + 'static {
    let mut turns = script.into_iter();
    move |req: &Request| {
        if req.last_text().contains("[SUGGESTION MODE") {
            return Turn::text("(no suggestion)");
        }
        let refused = req
            .last_message()
            .to_string()
            .to_lowercase()
            .contains("permission denied");
        if refused {
            return Turn::text("(waiting)");
        }
        turns
            .next()
            .unwrap_or_else(|| Turn::text("(the script is over)"))
    }
}

/// The turn that loads rawko's MCP tool, which Claude Code defers behind ToolSearch.
fn tool_search() -> Turn {
    Turn::text("Loading rawko's tool.").then_tool(
        "ToolSearch",
        json!({"query": "select:mcp__rawko__workflow_step", "max_results": 5}),
    )
}

/// The whole scenario of the issue: context reaches the model, `workflow_step` is among its tools
/// (loaded through ToolSearch), a read goes through, a Write in the read-only phase goes to the
/// editor and the denial keeps the disk unchanged; allowed when the agent tries again, rawko makes
/// it (the agent's own process cannot write in that phase); a shell write is denied; an early stop
/// is answered by the countdown and the reminder; `workflow_step` through rawko's MCP server; a
/// Write in the writing phase; the workflow complete; no agent process left. Prints the session's
/// wall time and the decision latency measured inside it.
#[test]
#[allow(clippy::print_stderr)]
fn claude_agent_acp_runs_a_workflow_on_rawkos_rails() {
    let Some(entry) = adapter("acp_agent_e2e") else {
        return;
    };
    let tap = measure::Tap::new();
    let took = workflow_on_rails(&entry, true, Some(&tap));
    eprintln!(
        "{}",
        tap.report("claude-agent-acp 0.101.0 (Claude Code 2.1.318)", took)
    );
}

/// The same with Claude Code's state where it keeps it by default: the agent runs confined, and
/// its own `~/.claude` and `~/.claude.json` are what it may write beside its temporary directory.
#[test]
fn claude_agent_acp_runs_confined_with_its_state_in_the_home() {
    let Some(entry) = adapter("acp_agent_e2e") else {
        return;
    };
    workflow_on_rails(&entry, false, None);
}

/// Runs the scenario; the task's wall time.
fn workflow_on_rails(entry: &Path, config_dir: bool, tap: Option<&measure::Tap>) -> Duration {
    let project = project();
    let ws = project.ws.clone();
    let at = |rel: &str| ws.join(rel).display().to_string();
    // The model's script, one turn per request of the main agent, in order.
    let script = vec![
        tool_search(),
        Turn::text("Reading first.").then_tool("Read", json!({"file_path": at("a.txt")})),
        Turn::tool(
            "Write",
            json!({"file_path": at("plan.txt"), "content": "the plan\n"}),
        ),
        // After the denial: try the same Write again (allowed this time).
        Turn::tool(
            "Write",
            json!({"file_path": at("plan.txt"), "content": "the plan\n"}),
        ),
        Turn::tool(
            "Bash",
            json!({"command": "echo sneaky > shell.txt", "description": "write a file"}),
        ),
        // After the Bash denial: stop early.
        Turn::text("I think I am done."),
        // The reminder: move the workflow on.
        Turn::tool("mcp__rawko__workflow_step", json!({"action": "next"})),
        Turn::tool(
            "Write",
            json!({"file_path": at("built.txt"), "content": "built\n"}),
        ),
        Turn::tool("mcp__rawko__workflow_step", json!({"action": "next"})),
        Turn::text("All done."),
    ];
    let api = FakeAnthropic::start(scripted(script));
    let home = tempfile::TempDir::new().expect("home");
    project.write(
        ".rawko/config.json",
        &json!({"countdownSeconds": 1, "approvalTimeoutSeconds": 60}).to_string(),
    );
    let mut ed = Editor::spawn_in(&ws, home.path());
    ed.initialize(settings(
        provider(entry, &api.url(), home.path(), config_dir, tap),
        tap,
    ));
    // The editor: the first Write denied, the second allowed; the shell write denied.
    let first_write = std::sync::Mutex::new(None::<Value>);
    ed.set_approval_policy(move |req| match req["tool"].as_str() {
        Some("Write") => {
            let id = req["toolCallId"].clone();
            let mut first = first_write.lock().unwrap();
            let first = first.get_or_insert_with(|| id.clone());
            Some(if *first == id {
                "reject_once"
            } else {
                "allow_once"
            })
        }
        _ => Some("reject_once"),
    });
    let started_at = Instant::now();
    let started = ed
        .request_within(
            "rawko/startTask",
            json!({"description": "Write the plan, then build it", "workflow": "gated", "provider": "acp"}),
            Duration::from_secs(30),
        )
        .expect("startTask");
    let task = started["taskId"].as_str().expect("taskId").to_owned();
    let finished = ed.wait_for("the task's end", Duration::from_secs(240), |m| {
        is_note(m, "rawko/taskFinished", &task)
    });
    let took = started_at.elapsed();
    let stderr = ed.stderr();
    let report = || {
        format!(
            "\nmodel requests:\n{}\nserver stderr (end):\n{}",
            api.report(),
            &stderr[stderr.len().saturating_sub(4000)..]
        )
    };
    let lines = outputs(&mut ed, &task);
    assert_eq!(
        finished["params"]["outcome"],
        "complete",
        "{finished}\n{}\n{}",
        lines.join("\n"),
        report()
    );
    // The phase context reached the model as the prompt's first block.
    let main = api.main_requests();
    assert!(
        main[0].mentions(PLAN_MARKER),
        "the first request carries the plan phase's context{}",
        report()
    );
    assert!(
        main.iter().any(|r| r.mentions(BUILD_MARKER)),
        "a later prompt carries the build phase's context{}",
        report()
    );
    // rawko's workflow_step is among the model's tools: deferred (named) at first, loaded by
    // ToolSearch after.
    assert!(
        main[0].mentions("mcp__rawko__workflow_step"),
        "{}",
        report()
    );
    assert!(
        main.iter()
            .any(|r| r.tool_names().contains(&"mcp__rawko__workflow_step")),
        "workflow_step was never among the model's tools{}",
        report()
    );
    // rawko put the agent in its mode that asks.
    assert!(
        lines
            .iter()
            .any(|l| l.contains("rawko put it in its mode \"Manual\" (default)")),
        "{}",
        lines.join("\n")
    );
    // The read went through (the agent's own Read, reported to rawko): its result is the file.
    let read = api.result_of("Read", |_| true).expect("the Read's result");
    assert!(read.text.contains("hello from a.txt"), "{read:?}");
    // Approvals: Write denied then allowed in the plan phase, the shell write denied; nothing
    // else asked (the build phase's Write needs none).
    let asked: Vec<String> = ed
        .approval_requests()
        .iter()
        .map(|a| format!("{} in {}", a["params"]["tool"], a["params"]["phase"]))
        .collect();
    assert_eq!(
        asked,
        [
            "\"Write\" in \"Plan\"",
            "\"Write\" in \"Plan\"",
            "\"Bash\" in \"Plan\""
        ],
        "{}{}",
        lines.join("\n"),
        report()
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("plan.txt")).ok().as_deref(),
        Some("the plan\n"),
        "the allowed Write wrote plan.txt{}",
        report()
    );
    assert!(
        !ws.join("shell.txt").exists(),
        "the denied shell write must not run"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("built.txt"))
            .ok()
            .as_deref(),
        Some("built\n"),
        "{}",
        report()
    );
    // The early stop: a countdown, then the reminder as the next prompt.
    let notes = ed.notifications(&task);
    assert!(
        notes.iter().any(|n| n["method"] == "rawko/countdown"),
        "a countdown before the reminder"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("reminder:")),
        "{}",
        lines.join("\n")
    );
    // The refusal's reason reached the agent in a later prompt; so did the Write rawko made.
    assert!(
        main.iter()
            .any(|r| r.mentions("rawko refused your Write call")),
        "{}",
        report()
    );
    assert!(
        main.iter().any(|r| r.mentions("rawko made it for you")),
        "{}",
        report()
    );
    // Every tool of the agent showed as a tool call of the task.
    for tool in ["Read", "Write", "Bash", "workflow_step"] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("tool_call:") && l.contains(tool)),
            "no {tool} call shown:\n{}",
            lines.join("\n")
        );
    }
    // Claude Code kept its state where it was allowed to.
    let state = if config_dir {
        home.path().join(".claude/.claude.json")
    } else {
        home.path().join(".claude.json")
    };
    assert!(state.is_file(), "{} is missing", state.display());
    // Nothing of the agent is left running: not Claude Code, not its `rawko mcp`.
    let left = measure::processes_left(&ws, ed.pid(), Duration::from_secs(10));
    assert!(left.is_empty(), "left running: {left:?}");
    took
}

/// A phase that takes the workspace away ends Claude Code's process at once, before it hears the
/// answer to its `workflow_step`, and starts it again read-only in the same session
/// (`session/load`): the next prompt carries what it missed, the conversation goes on, and the
/// new phase's gate holds.
#[test]
fn claude_agent_acp_is_restarted_read_only_in_its_session_when_the_phase_forbids_writing() {
    let Some(entry) = adapter("acp_agent_e2e") else {
        return;
    };
    let p = Project::empty();
    p.write(
        ".rawko/workflows/br/workflow.yaml",
        "name: BR\ncommandName: br\ninitialMessage: \"Do this: {description}\"\nphases:\n  - build.md\n  - review.md\n",
    );
    p.write(
        ".rawko/workflows/br/build.md",
        &format!("---\nid: build\nname: Build\nemoji: \"B\"\n---\n{BUILD_MARKER}: write build.txt, then call workflow_step.\n"),
    );
    p.write(
        ".rawko/workflows/br/review.md",
        &format!("---\nid: review\nname: Review\nemoji: \"R\"\ntools:\n  whitelist: [Read, Glob, Grep]\n---\n{PLAN_MARKER}: review, change nothing.\n"),
    );
    let ws = p.ws.clone();
    let at = |rel: &str| ws.join(rel).display().to_string();
    let script = vec![
        tool_search(),
        Turn::tool(
            "Write",
            json!({"file_path": at("build.txt"), "content": "built\n"}),
        ),
        Turn::tool("mcp__rawko__workflow_step", json!({"action": "next"})),
        // The restarted agent's first request: a Write the Review phase blocks.
        Turn::tool(
            "Write",
            json!({"file_path": at("review.txt"), "content": "changed\n"}),
        ),
        Turn::tool("mcp__rawko__workflow_step", json!({"action": "next"})),
        Turn::text("Reviewed."),
    ];
    let api = FakeAnthropic::start(scripted(script));
    let home = tempfile::TempDir::new().expect("home");
    p.write(
        ".rawko/config.json",
        &json!({"countdownSeconds": 1}).to_string(),
    );
    let mut ed = Editor::spawn_in(&ws, home.path());
    ed.initialize(settings(
        provider(&entry, &api.url(), home.path(), true, None),
        None,
    ));
    ed.set_approval_policy(|_| Some("reject_once"));
    let started = ed
        .request_within(
            "rawko/startTask",
            json!({"description": "Build, then review", "workflow": "br", "provider": "acp"}),
            Duration::from_secs(30),
        )
        .expect("startTask");
    let task = started["taskId"].as_str().expect("taskId").to_owned();
    let finished = ed.wait_for("the task's end", Duration::from_secs(180), |m| {
        is_note(m, "rawko/taskFinished", &task)
    });
    let lines = outputs(&mut ed, &task);
    let report = format!("{}\nmodel requests:\n{}", lines.join("\n"), api.report());
    assert_eq!(finished["params"]["outcome"], "complete", "{report}");
    assert!(ws.join("build.txt").is_file(), "{report}");
    assert!(!ws.join("review.txt").exists(), "{report}");
    // The restarted agent was told the answer it missed, in a session that still holds the
    // Build phase's conversation (loaded, not primed).
    let main = api.main_requests();
    let after = main
        .iter()
        .find(|r| r.mentions("rawko restarted you with the workspace read-only"))
        .unwrap_or_else(|| panic!("no request after the restart\n{report}"));
    assert!(after.mentions(BUILD_MARKER), "{report}");
    assert!(!after.mentions("interrupted and resumed"), "{report}");
    let asked: Vec<String> = ed
        .approval_requests()
        .iter()
        .map(|a| format!("{} in {}", a["params"]["tool"], a["params"]["phase"]))
        .collect();
    assert_eq!(asked, ["\"Write\" in \"Review\""], "{report}");
    // Nothing of the agent is left running.
    let left = measure::processes_left(&ws, ed.pid(), Duration::from_secs(10));
    assert!(left.is_empty(), "left running: {left:?}");
}

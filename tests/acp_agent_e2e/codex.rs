//! The `acp` provider with Codex: `codex-acp` (npm `@agentclientprotocol/codex-acp`, pinned in
//! scripts/install-codex-acp.sh, with the `codex app-server` of the Codex it bundles) runs a
//! rawko task against a loopback fake of the OpenAI Responses API (tests/support/fake_openai.rs),
//! started by the real `rawko serve` and driven by a fake editor that answers approvals. Codex
//! takes the fake as a model provider from `~/.codex/config.toml` in a temporary home, its key
//! from the environment: no login. It runs its own tools (a shell command, `apply_patch`) and
//! asks rawko, its ACP client, before it writes; its MCP tools, rawko's `workflow_step` among
//! them, are deferred behind its `tool_search`.
//!
//! `RAWKO_CODEX_ACP` names the adapter's entry point (scripts/test.sh sets it); without it the
//! test is skipped for a developer and fails under CI. The session's wall time and the decision
//! latency measured inside it are printed:
//!
//!   RAWKO_CODEX_ACP=$(scripts/install-codex-acp.sh) cargo test -p rawko --test acp_agent_e2e codex -- --nocapture

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::fake_openai::{add_file_patch, FakeOpenAi, Item, Request, Turn};
use crate::support::{is_note, Editor, Project};
use crate::{outputs, BUILD_MARKER, PLAN_MARKER};

/// The adapter's entry point, or `None` (with a note) when this test should be skipped.
fn adapter(test: &str) -> Option<PathBuf> {
    crate::installed(
        test,
        &crate::Agent {
            var: "RAWKO_CODEX_ACP",
            skip: "RAWKO_CODEX_E2E",
            script: "scripts/install-codex-acp.sh",
            name: "codex-acp",
            filter: "--test acp_agent_e2e codex",
        },
    )
}

/// The variable that holds the fake's key for Codex's model provider.
const KEY_VAR: &str = "RAWKO_TEST_OPENAI_KEY";

/// A model Codex knows (its metadata decides the tools it offers: `apply_patch` among them).
const MODEL: &str = "gpt-5.5";

/// The `acp` provider's entry: codex-acp under node, with `env`; Codex's `config.toml` (in
/// `home`, the server's home) is `config`.
fn provider(entry: &Path, home: &Path, config: &str, env: Value) -> Value {
    let codex = home.join(".codex");
    std::fs::create_dir_all(&codex).expect("mkdir ~/.codex");
    std::fs::write(codex.join("config.toml"), config).expect("config.toml");
    json!({"name": "acp", "command": "node", "args": [entry], "env": env})
}

/// The decisions on the agent's permission requests the server logged: (tool, microseconds from
/// the request to rawko's answer).
fn decisions(stderr: &str) -> Vec<(String, u64)> {
    stderr
        .lines()
        .filter_map(|l| {
            let rest = l
                .split("answered the agent's permission request for ")
                .nth(1)?;
            let (tool, rest) = rest.split_once(" in ")?;
            let us = rest.split(' ').next()?.parse().ok()?;
            Some((tool.to_owned(), us))
        })
        .collect()
}

/// The fake model: `script`'s turns in order, except that a shell command Codex could not run in
/// its own sandbox is asked again with escalated permissions, as Codex's prompt tells a model to
/// (its bubblewrap sandbox cannot start inside rawko's Landlock sandbox, so under rawko every
/// command it runs is one it asked for).
fn model(script: Vec<Turn>) -> impl FnMut(&Request) -> Turn + Send + 'static {
    let mut turns = script.into_iter();
    let mut last: Option<Turn> = None;
    move |req: &Request| {
        let failed_in_sandbox = req
            .outputs()
            .last()
            .is_some_and(|o| o.text.contains("bubblewrap"));
        if let (true, Some(Turn { items })) = (failed_in_sandbox, &last) {
            if let [Item::Function {
                namespace: None,
                name,
                arguments,
            }] = items.as_slice()
            {
                if name == "exec_command" && arguments.get("sandbox_permissions").is_none() {
                    let mut escalated = arguments.clone();
                    escalated["sandbox_permissions"] = json!("require_escalated");
                    escalated["justification"] = json!("my sandbox cannot start here");
                    let turn = Turn::function("exec_command", escalated);
                    last = Some(turn.clone());
                    return turn;
                }
            }
        }
        let turn = turns
            .next()
            .unwrap_or_else(|| Turn::text("(the script is over)"));
        last = Some(turn.clone());
        turn
    }
}

/// The scenario of issue 31 with Codex: the phase context reaches the model, `workflow_step` is
/// among the tools its tool search finds, a read (a shell command) goes through, an
/// `apply_patch` in the read-only phase goes to the editor and the editor's deny keeps the disk
/// unchanged, the workflow moves on (Codex's call of rawko's MCP tool is rawko's, not a shell
/// command to gate) and Codex writes in the phase that allows it, the task ends, and no process
/// of the agent (its `codex app-server` included) is left. Codex runs confined, its state in
/// `~/.codex`. The session's wall time and the decision latency are printed.
#[test]
fn codex_acp_runs_a_workflow_on_rawkos_rails() {
    let Some(entry) = adapter("codex_acp_runs_a_workflow_on_rawkos_rails") else {
        return;
    };
    workflow(&entry, "agent", json!({}));
}

/// The same when the user starts codex-acp in `workspace-write` (its `INITIAL_AGENT_MODE`), which
/// writes the workspace without asking: rawko puts it in `read-only` too.
#[test]
fn codex_acp_started_in_workspace_write_is_made_to_ask() {
    let Some(entry) = adapter("codex_acp_started_in_workspace_write_is_made_to_ask") else {
        return;
    };
    workflow(
        &entry,
        "workspace-write",
        json!({"INITIAL_AGENT_MODE": "workspace-write"}),
    );
}

/// The gated workflow with Codex started in its mode `mode` (by `extra`, added to its `env`).
#[allow(clippy::print_stderr)]
fn workflow(entry: &Path, mode: &str, extra: Value) {
    let project = crate::project();
    let ws = project.ws.clone();
    // Codex reads with shell commands: the plan phase allows Bash (rawko's reading of a command
    // keeps it from writing, and the agent runs with the workspace read-only).
    project.write(
        ".rawko/workflows/gated/plan.md",
        &format!("---\nid: plan\nname: Plan\nemoji: \"📋\"\ntools:\n  whitelist: [Read, Bash, Glob, Grep]\n---\n{PLAN_MARKER}: read the code and change nothing. Then call workflow_step.\n"),
    );
    let script = vec![
        Turn::tool_search("workflow_step"),
        Turn::function("exec_command", json!({"cmd": "cat a.txt"})),
        Turn::custom("apply_patch", add_file_patch("plan.txt", "the plan\n")),
        // Codex ends its turn when its edit is refused; the reminder comes as the next prompt.
        Turn::mcp("rawko", "workflow_step", json!({"action": "next"})),
        Turn::text("On to the build."),
        Turn::custom("apply_patch", add_file_patch("built.txt", "built\n")),
        Turn::mcp("rawko", "workflow_step", json!({"action": "next"})),
        Turn::text("All done."),
    ];
    let home = tempfile::TempDir::new().expect("home");
    let home = home.path().canonicalize().expect("canonical home");
    // What runs with the server's HOME while the model is first asked: the server, the agent,
    // its `codex app-server` and `rawko mcp`.
    let running = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut model = model(script);
    let (seen, at) = (running.clone(), home.clone());
    let api = FakeOpenAi::start(move |req: &Request| {
        if req.index == 0 {
            *seen.lock().unwrap() = crate::measure::started_with_home(&at, 0);
        }
        model(req)
    });
    project.write(
        ".rawko/config.json",
        &json!({"countdownSeconds": 1, "approvalTimeoutSeconds": 60}).to_string(),
    );
    let mut ed = Editor::spawn_in(&ws, &home);
    // The agent is the user's setting (the editor's): a workspace's providers need trust first.
    let config = api.codex_config(MODEL, KEY_VAR);
    let mut env = json!({KEY_VAR: "sk-rawko-test", "NO_BROWSER": "1"});
    for (k, v) in extra.as_object().into_iter().flatten() {
        env[k] = v.clone();
    }
    ed.initialize(json!({"providers": [provider(entry, &home, &config, env)]}));
    ed.set_approval_policy(|_| Some("reject_once"));
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
    let wall = started_at.elapsed();
    let stderr = ed.stderr();
    let lines = outputs(&mut ed, &task);
    let said: String = ed
        .notifications(&task)
        .iter()
        .filter(|n| n["method"] == "rawko/output")
        .filter_map(|n| n["params"]["text"].as_str().map(str::to_owned))
        .collect();
    let report = format!(
        "\ntask output:\n{}\nmodel requests:\n{}\nserver stderr (end):\n{}",
        lines.join("\n"),
        api.report(),
        &stderr[stderr.len().saturating_sub(6000)..]
    );
    assert_eq!(
        finished["params"]["outcome"], "complete",
        "{finished}{report}"
    );
    // The task says which mode rawko took Codex out of and put it in: the one that asks.
    assert!(
        said.contains(&format!("[rawko: the agent started in its mode \"{mode}\"; rawko put it in its mode \"Read-only\" (read-only), in which it asks before it writes or runs a command")),
        "{report}"
    );
    let main = api.main_requests();
    // The phase context reached the model as the prompt's first block, each phase's in turn.
    assert!(main[0].mentions(PLAN_MARKER), "{report}");
    assert!(main.iter().any(|r| r.mentions(BUILD_MARKER)), "{report}");
    // rawko's MCP tool is among the tools Codex's tool search found.
    assert!(
        main.iter().any(|r| r
            .searched_tools()
            .contains(&"mcp__rawko/workflow_step".to_owned())),
        "{report}"
    );
    // The read went through (Codex ran it, rawko allowed it): its output reached the model.
    assert!(
        api.calls()
            .iter()
            .any(|(name, args, out)| name == "exec_command"
                && args["cmd"] == "cat a.txt"
                && out
                    .as_ref()
                    .is_some_and(|o| o.text.contains("hello from a.txt"))),
        "{report}"
    );
    // Only the edit in the read-only phase went to the editor, which refused it: nothing
    // written; the reason reached the model. The edit in the build phase needed no one.
    let asked: Vec<String> = ed
        .approval_requests()
        .iter()
        .map(|a| format!("{} in {}", a["params"]["tool"], a["params"]["phase"]))
        .collect();
    assert_eq!(asked, ["\"Write\" in \"Plan\""], "{report}");
    assert!(!ws.join("plan.txt").exists(), "{report}");
    assert!(
        main.iter()
            .any(|r| r.mentions("rawko refused your Write call")),
        "{report}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("built.txt"))
            .ok()
            .as_deref(),
        Some("built\n"),
        "{report}"
    );
    // Codex's call of rawko's MCP tool is shown as workflow_step, never as a shell command.
    let calls: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("tool_call:"))
        .collect();
    assert!(
        calls.iter().any(|l| l.contains("workflow_step")),
        "{calls:?}{report}"
    );
    assert!(
        !calls
            .iter()
            .any(|l| l.contains("Bash") && !l.contains("cat a.txt")),
        "{calls:?}{report}"
    );
    // Codex kept its sessions where it may write, and nothing of it is left running.
    assert!(home.join(".codex/sessions").is_dir(), "{report}");
    let during = running.lock().unwrap().clone();
    assert!(
        during.iter().any(|p| p.contains("app-server")),
        "no codex app-server seen during the session: {during:?}{report}"
    );
    let left = crate::measure::left_with_home(&home, ed.pid(), Duration::from_secs(10));
    assert!(left.is_empty(), "still running: {left:?}{report}");
    let decided = decisions(&stderr);
    assert!(!decided.is_empty(), "no decision logged{report}");
    eprintln!(
        "codex-acp session (started in {mode}): wall time {:.2} s (rawko/startTask to rawko/taskFinished); decisions on its permission requests (request to rawko's answer): {}",
        wall.as_secs_f64(),
        decided
            .iter()
            .map(|(tool, us)| format!("{tool} {:.1} ms", *us as f64 / 1000.0))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// A one-phase task without a workflow, with Codex whose model provider takes the key of its
/// login: the text it says, and how the task ended.
fn login_task(entry: &Path, env: Value) -> (Value, Vec<String>, FakeOpenAi) {
    let project = Project::empty();
    let ws = project.ws.clone();
    let api = FakeOpenAi::start(model(vec![Turn::text("Hello from Codex.")]));
    let home = tempfile::TempDir::new().expect("home");
    let home = home.path().canonicalize().expect("canonical home");
    let mut ed = Editor::spawn_in(&ws, &home);
    let config = api.codex_config_with_login(MODEL);
    ed.initialize(json!({"providers": [provider(entry, &home, &config, env)]}));
    let started = ed
        .request_within(
            "rawko/startTask",
            json!({"description": "Say hello", "provider": "acp"}),
            Duration::from_secs(30),
        )
        .expect("startTask");
    let task = started["taskId"].as_str().expect("taskId").to_owned();
    let finished = ed.wait_for("the task's end", Duration::from_secs(120), |m| {
        is_note(m, "rawko/taskFinished", &task)
    });
    let lines = outputs(&mut ed, &task);
    let left = crate::measure::left_with_home(&home, ed.pid(), Duration::from_secs(10));
    assert!(left.is_empty(), "still running: {left:?}");
    (finished, lines, api)
}

/// codex-acp 2.6 asks its client to log it in (`auth_required` from `session/new`) when its model
/// provider takes the key of a login, as OpenAI's own does: rawko logs it in with its API key
/// method, whose key codex-acp reads from its environment, and the task runs.
#[test]
fn codex_acp_is_logged_in_with_the_api_key_in_its_environment() {
    let Some(entry) = adapter("codex_acp_is_logged_in_with_the_api_key_in_its_environment") else {
        return;
    };
    let (finished, lines, api) = login_task(
        &entry,
        json!({"OPENAI_API_KEY": "sk-rawko-login", "CODEX_API_KEY": "", "NO_BROWSER": "1"}),
    );
    let report = format!("{}\nmodel requests:\n{}", lines.join("\n"), api.report());
    assert_eq!(
        finished["params"]["outcome"], "complete",
        "{finished}\n{report}"
    );
    assert!(
        lines.iter().any(|l| l.contains("Hello from Codex.")),
        "{report}"
    );
    let main = api.main_requests();
    assert_eq!(
        main[0].header("authorization"),
        Some("Bearer sk-rawko-login"),
        "{report}"
    );
}

/// Without a key, the login rawko can give fails, and the task says why and what to do.
#[test]
fn codex_acp_without_a_key_fails_saying_how_to_log_in() {
    let Some(entry) = adapter("codex_acp_without_a_key_fails_saying_how_to_log_in") else {
        return;
    };
    let (finished, lines, api) = login_task(
        &entry,
        json!({"OPENAI_API_KEY": "", "CODEX_API_KEY": "", "NO_BROWSER": "1"}),
    );
    let report = format!("{finished}\n{}", lines.join("\n"));
    assert_eq!(finished["params"]["outcome"], "failed", "{report}");
    let summary = finished["params"]["summary"].as_str().unwrap_or_default();
    assert!(
        summary.contains("needs a login: rawko tried its API Key method (api-key), which failed: CODEX_API_KEY or OPENAI_API_KEY is not set; log in once with the agent's own command (Codex: `codex login`)"),
        "{report}"
    );
    assert!(api.main_requests().is_empty(), "{report}");
}

/// Codex's call of another MCP server's tool, asked about with the same `rawInput` after its
/// `tool_call` (the scripted agent, as codex-acp sends them): the task shows and decides
/// `mcp__other__lookup` with the tool's own arguments, not Codex's `{server, tool, arguments}`.
#[test]
fn codexs_call_of_an_mcp_tool_is_decided_with_its_own_arguments() {
    let Some(agent) = crate::faults::fault_agent("codexmcp") else {
        return;
    };
    let project = Project::empty();
    let home = tempfile::TempDir::new().expect("home");
    let mut ed = Editor::spawn_in(&project.ws, home.path());
    ed.initialize(json!({"providers": [{"name": "acp", "command": "node",
        "args": [agent, "codexmcp"]}]}));
    let started = ed
        .request(
            "rawko/startTask",
            json!({"description": "Look it up", "provider": "acp"}),
        )
        .expect("startTask");
    let task = started["taskId"].as_str().expect("taskId").to_owned();
    ed.wait_for("the task's end", Duration::from_secs(60), |m| {
        is_note(m, "rawko/taskFinished", &task)
    });
    let shown: Vec<(Value, Value)> = ed
        .notifications(&task)
        .iter()
        .filter(|n| n["method"] == "rawko/output" && n["params"]["kind"] == "tool_call")
        .map(|n| (n["params"]["tool"].clone(), n["params"]["input"].clone()))
        .collect();
    let lines = outputs(&mut ed, &task);
    assert_eq!(
        shown,
        [(json!("mcp__other__lookup"), json!({"query": "where is x"}))],
        "{}",
        lines.join("\n")
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(r#"permission: {"outcome":"selected","optionId":"yes"}"#)),
        "{}",
        lines.join("\n")
    );
}

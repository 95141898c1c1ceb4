//! The `acp` provider with Gemini CLI (npm `@google/gemini-cli`, pinned in
//! scripts/install-gemini-cli.sh; `gemini --acp`) as the agent, against a loopback fake of the
//! Gemini API (tests/support/fake_gemini.rs), started by the real `rawko serve` and driven by a
//! fake editor that answers approvals. Gemini CLI sends its permission requests without
//! `rawInput` (the file and its new text are in the request's diff), reads files with its own
//! hands (only its writes go through `fs/*`), reads a file before it writes it (a new file too),
//! and names MCP tools `mcp_{server}_{tool}`.
//!
//! Its stdio runs through tests/acp_agent_e2e/tap.mjs, which timestamps every message, so the
//! session's decision latency (from the agent's `session/request_permission` to rawko's answer)
//! is measured on the wire. See them with
//! `RAWKO_GEMINI_CLI=$(scripts/install-gemini-cli.sh) cargo test -p rawko --test acp_agent_e2e
//! gemini -- --nocapture`.
//!
//! `RAWKO_GEMINI_CLI` names the CLI's entry point (scripts/test.sh sets it); without it the test
//! is skipped for a developer and fails under CI. `RAWKO_GEMINI_E2E=0` skips it on purpose.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::measure::Tap;
use super::support::fake_gemini::{FakeGemini, Request, Turn};
use super::support::{is_note, Editor};
use super::{outputs, project, BUILD_MARKER, PLAN_MARKER};

/// The adapter's entry point, or `None` (with a note) when this test should be skipped.
fn gemini_cli(test: &str) -> Option<PathBuf> {
    crate::installed(
        test,
        &crate::Agent {
            var: "RAWKO_GEMINI_CLI",
            skip: "RAWKO_GEMINI_E2E",
            script: "scripts/install-gemini-cli.sh",
            name: "Gemini CLI",
            filter: "--test acp_agent_e2e gemini",
        },
    )
}

/// Gemini CLI's home as a user who set it up for rawko has it: the workspace trusted (else it
/// drops the stdio MCP servers a client gives it, rawko's `workflow_step` with them, without a
/// word), no usage statistics, no update checks.
fn gemini_home(home: &Path, ws: &Path) {
    let dir = home.join(".gemini");
    std::fs::create_dir_all(&dir).expect("mkdir ~/.gemini");
    std::fs::write(
        dir.join("trustedFolders.json"),
        json!({ws.display().to_string(): "TRUST_FOLDER"}).to_string(),
    )
    .expect("trustedFolders.json");
    std::fs::write(
        dir.join("settings.json"),
        json!({
            "privacy": {"usageStatisticsEnabled": false},
            "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
        })
        .to_string(),
    )
    .expect("settings.json");
}

/// What the model does next, from what the conversation holds so far (not from how many
/// requests came: a prompt rawko cancels may take a scripted turn with it): read a.txt; write
/// it (denied); write it again (allowed); move the workflow on; create built.txt; move on; done.
fn next_turn(req: &Request, ws: &Path) -> Turn {
    let at = |rel: &str| ws.join(rel).display().to_string();
    let answered = req.function_responses();
    let count = |name: &str| answered.iter().filter(|(n, _)| n == name).count();
    let (reads, writes) = (count("read_file"), count("write_file"));
    if req.index > 20 {
        return Turn::text("(the script is over)");
    }
    // Like a model, it goes by the phase rawko's context names, not by how many steps its
    // history holds: when the workflow moves on, rawko ends the agent's turn to give it the next
    // phase's context, and Gemini CLI may drop the step's response from its history if the end
    // comes before it recorded it (seen under load).
    // Nor by how many writes it holds: an agent started again between the phases (a read-only
    // one given the workspace) loads the session, and what its history then holds twice or not
    // at all depends on when Gemini CLI saved it.
    let in_build = req.mentions(BUILD_MARKER);
    let built = answered
        .iter()
        .any(|(n, r)| n == "write_file" && r.to_string().contains("built.txt"));
    let finished = req.mentions("All phases complete") || req.mentions("No active workflow");
    match (reads, writes) {
        (0, _) => {
            Turn::text("Reading first.").then_call("read_file", json!({"file_path": at("a.txt")}))
        }
        (_, 0) => Turn::call(
            "write_file",
            json!({"file_path": at("a.txt"), "content": "denied\n"}),
        ),
        (_, 1) => Turn::call(
            "write_file",
            json!({"file_path": at("a.txt"), "content": "approved\n"}),
        ),
        _ if !in_build => Turn::call("mcp_rawko_workflow_step", json!({"action": "next"})),
        _ if !built => Turn::call(
            "write_file",
            json!({"file_path": at("built.txt"), "content": "built\n"}),
        ),
        _ if !finished => Turn::call("mcp_rawko_workflow_step", json!({"action": "next"})),
        _ => Turn::text("All done."),
    }
}

/// The scenario of the issue with Gemini CLI: the phase context reaches the model with
/// `workflow_step` among its tools; a read goes through; in the read-only phase a write goes to
/// the editor with its path and content, a deny keeps the disk unchanged, an allow is asked once
/// (not again when the agent then sends `fs/write_text_file`); in the writing phase Gemini CLI
/// creates a new file (rawko answers its read of the missing file as Zed does); the workflow
/// completes and no process of the agent is left.
#[test]
#[allow(clippy::print_stderr)]
fn gemini_cli_runs_a_workflow_on_rawkos_rails() {
    let Some(entry) = gemini_cli("gemini_cli_runs_a_workflow_on_rawkos_rails") else {
        return;
    };
    let project = project();
    let ws = project.ws.clone();
    let script_ws = ws.clone();
    let api = FakeGemini::start(move |req: &Request| next_turn(req, &script_ws));
    let home = tempfile::TempDir::new().expect("home");
    gemini_home(home.path(), &ws);
    let tap = Tap::new();
    let (command, args) = tap.wrap("node", &[entry.display().to_string(), "--acp".to_owned()]);
    project.write(
        ".rawko/config.json",
        &json!({"countdownSeconds": 1, "approvalTimeoutSeconds": 60}).to_string(),
    );
    let mut ed = Editor::spawn_in(&ws, home.path());
    // The agent is the user's setting (the editor's): a workspace's providers need trust first.
    // The tap writes its log where the user's sandbox setting lets the agent write.
    ed.initialize(json!({
        "providers": [{
            "name": "acp",
            "command": command,
            "args": args,
            "env": {
                "GOOGLE_GEMINI_BASE_URL": api.url(),
                "GEMINI_API_KEY": "gemini-rawko-test",
            },
        }],
        "sandbox": {"mode": "auto", "agentWrite": [tap.dir()]},
    }));
    // The editor: the first write denied, any later one allowed; what a.txt held when the
    // second was asked is kept.
    let first_write = Mutex::new(None::<Value>);
    let on_disk = Arc::new(Mutex::new(None::<String>));
    let seen = on_disk.clone();
    let a_txt = ws.join("a.txt");
    ed.set_approval_policy(move |req| match req["tool"].as_str() {
        Some("Write" | "Edit") => {
            let id = req["toolCallId"].clone();
            let mut first = first_write.lock().unwrap();
            let first = first.get_or_insert_with(|| id.clone());
            if *first == id {
                return Some("reject_once");
            }
            seen.lock()
                .unwrap()
                .get_or_insert_with(|| std::fs::read_to_string(&a_txt).unwrap_or_default());
            Some("allow_once")
        }
        _ => Some("reject_once"),
    });
    let started = Instant::now();
    let task = ed
        .request_within(
            "rawko/startTask",
            json!({"description": "Change a.txt, then build", "workflow": "gated", "provider": "acp"}),
            Duration::from_secs(30),
        )
        .expect("startTask");
    let task = task["taskId"].as_str().expect("taskId").to_owned();
    let finished = ed.wait_for("the task's end", Duration::from_secs(180), |m| {
        is_note(m, "rawko/taskFinished", &task)
    });
    let wall = started.elapsed();
    let stderr = ed.stderr();
    let lines = outputs(&mut ed, &task);
    let report = format!(
        "\ntask output:\n{}\nmodel requests:\n{}\nserver stderr (end):\n{}",
        lines.join("\n"),
        api.report(),
        &stderr[stderr.len().saturating_sub(4000)..]
    );
    assert_eq!(
        finished["params"]["outcome"], "complete",
        "{finished}{report}"
    );

    // The phase context reached the model, with rawko's workflow_step among its tools.
    let main = api.main_requests();
    assert!(main[0].mentions(PLAN_MARKER), "{report}");
    assert!(
        main[0]
            .function_names()
            .contains(&"mcp_rawko_workflow_step"),
        "workflow_step is not among the model's tools: {:?}{report}",
        main[0].function_names()
    );
    assert!(main.iter().any(|r| r.mentions(BUILD_MARKER)), "{report}");
    // The read went through: the file's text reached the model, and the task showed the read.
    let read = api.response_to("read_file").expect("read_file's response");
    assert!(read.to_string().contains("hello from a.txt"), "{read}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("tool_call:") && l.contains("Read")),
        "{report}"
    );
    // The editor was asked about each write in the read-only phase once, with its path and
    // new text (a Write's content, or an Edit's new string: Gemini CLI's diff holds the whole
    // file before and after); nothing else was asked (the writing phase's new file needs no one).
    let asked: Vec<(String, Value, Value)> = ed
        .approval_requests()
        .iter()
        .map(|a| {
            let p = &a["params"];
            let input = &p["input"];
            let new_text = match input.get("content") {
                Some(content) => content.clone(),
                None => input["new_string"].clone(),
            };
            (
                p["phase"].as_str().unwrap_or_default().to_owned(),
                input["file_path"].clone(),
                new_text,
            )
        })
        .collect();
    let a_txt = json!(ws.join("a.txt").display().to_string());
    assert_eq!(
        asked,
        [
            ("Plan".into(), a_txt.clone(), json!("denied\n")),
            ("Plan".into(), a_txt, json!("approved\n")),
        ],
        "{report}"
    );
    for a in ed.approval_requests() {
        let tool = a["params"]["tool"].as_str().unwrap_or_default().to_owned();
        assert!(tool == "Write" || tool == "Edit", "{a}");
    }
    // The deny kept the disk unchanged; the allowed write changed it.
    assert_eq!(
        on_disk.lock().unwrap().as_deref(),
        Some("hello from a.txt\n"),
        "a.txt when the second write was asked{report}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("a.txt")).ok().as_deref(),
        Some("approved\n"),
        "{report}"
    );
    // Gemini CLI created a new file in the writing phase.
    assert_eq!(
        std::fs::read_to_string(ws.join("built.txt"))
            .ok()
            .as_deref(),
        Some("built\n"),
        "{report}"
    );
    // No process of the agent is left.
    let left = super::measure::left_with_home(home.path(), ed.pid(), Duration::from_secs(10));
    assert!(left.is_empty(), "left running: {left:?}");

    eprintln!("{}", tap.report("gemini-cli 0.61.0", wall));
}

/// Gemini CLI in a folder it does not trust drops the stdio MCP servers its client gives it,
/// rawko's `workflow_step` with them, without a word: the task's output says so once, naming the
/// folder trust, and no process of the agent is left.
#[test]
fn gemini_cli_in_an_untrusted_folder_is_named_once() {
    let Some(entry) = gemini_cli("gemini_cli_in_an_untrusted_folder_is_named_once") else {
        return;
    };
    let project = project();
    let ws = project.ws.clone();
    let api = FakeGemini::start(|_: &Request| Turn::text("Nothing to do."));
    let home = tempfile::TempDir::new().expect("home");
    gemini_home(home.path(), &ws);
    std::fs::remove_file(home.path().join(".gemini/trustedFolders.json")).expect("untrust");
    project.write(
        ".rawko/config.json",
        &json!({"countdownSeconds": 1, "maxReminders": 1}).to_string(),
    );
    let mut ed = Editor::spawn_in(&ws, home.path());
    ed.initialize(json!({
        "providers": [{
            "name": "acp",
            "command": "node",
            "args": [entry, "--acp"],
            "env": {"GOOGLE_GEMINI_BASE_URL": api.url(), "GEMINI_API_KEY": "gemini-rawko-test"},
        }],
        "sandbox": {"mode": "auto"},
    }));
    let task = ed
        .request_within(
            "rawko/startTask",
            json!({"description": "Change a.txt", "workflow": "gated", "provider": "acp"}),
            Duration::from_secs(30),
        )
        .expect("startTask");
    let task = task["taskId"].as_str().expect("taskId").to_owned();
    let finished = ed.wait_for("the task's end", Duration::from_secs(120), |m| {
        is_note(m, "rawko/taskFinished", &task)
    });
    let lines = outputs(&mut ed, &task);
    let report = format!(
        "\n{finished}\ntask output:\n{}\nmodel requests:\n{}",
        lines.join("\n"),
        api.report()
    );
    // The cause is real: the model was never offered workflow_step.
    let main = api.main_requests();
    assert!(!main.is_empty(), "{report}");
    assert!(
        main.iter()
            .all(|r| !r.function_names().contains(&"mcp_rawko_workflow_step")),
        "{report}"
    );
    let said: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("never connected to rawko's MCP server"))
        .collect();
    assert_eq!(said.len(), 1, "{report}");
    let full: String = ed
        .notifications(&task)
        .iter()
        .filter(|n| n["method"] == "rawko/output")
        .filter_map(|n| n["params"]["text"].as_str().map(str::to_owned))
        .find(|t| t.contains("never connected to rawko's MCP server"))
        .unwrap_or_default();
    assert!(
        full.contains("trustedFolders.json"),
        "the note names Gemini CLI's folder trust: {full}"
    );
    let left = super::measure::left_with_home(home.path(), ed.pid(), Duration::from_secs(10));
    assert!(left.is_empty(), "left running: {left:?}");
}

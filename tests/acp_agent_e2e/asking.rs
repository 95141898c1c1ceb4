//! What rawko does so that an agent asks before it acts, against the scripted agent
//! (tests/acp/fault-agent.mjs): it puts the agent in the mode that asks, chosen from what the
//! agent advertises, and puts it back when the agent leaves it; an agent with no such mode is
//! said to be confined only by its sandbox; a permission request without `rawInput` (as Gemini
//! CLI sends them) is shown and decided by its diff; and an agent that never connects to
//! `rawko mcp` is named as such, once.

use std::time::Duration;

use serde_json::json;

use crate::faults::{command, fault_agent, text, Place};
use crate::support::{is_note, Editor, Project};

/// `rawko run` with the fault agent in `mode` (and `arg`), its whole output.
fn run(mode: &str, arg: &str) -> (std::process::ExitStatus, String) {
    let agent = fault_agent(mode).expect("the fault agent");
    let place = Place::new(json!({}));
    let cmd = format!("{} {arg}", command(&agent, mode));
    let (out, _) = place.run(
        &[
            "Do it",
            "--provider",
            "acp",
            "--agent-command",
            &cmd,
            "--yes",
        ],
        Duration::from_secs(60),
    );
    (out.status, text(&out))
}

/// claude-agent-acp's way: a config option of category `mode` beside `modes`, starting in a mode
/// that does not ask. rawko sets the mode that asks through the config option before the first
/// prompt, and sets it again when the agent switches itself away.
#[test]
fn the_agent_is_put_in_its_mode_that_asks_and_kept_there() {
    if fault_agent("modes").is_none() {
        return;
    }
    let (status, all) = run("modes", "config");
    assert!(status.success(), "{all}");
    assert!(all.contains("MODE default set_config_option"), "{all}");
    assert!(
        all.contains("rawko put it in its mode \"Manual\" (default), in which it asks"),
        "{all}"
    );
    assert!(all.contains("BACK default set_config_option"), "{all}");
    assert_eq!(
        all.matches("switched itself to its mode \"acceptEdits\"; rawko put it back in \"Manual\" (default)")
            .count(),
        1,
        "the switch is told once: {all}"
    );
}

/// An agent with `modes` only (the deprecated form older adapters send) is set with
/// `session/set_mode`.
#[test]
fn an_agent_with_modes_only_is_set_with_set_mode() {
    if fault_agent("modes").is_none() {
        return;
    }
    let (status, all) = run("modes", "legacy");
    assert!(status.success(), "{all}");
    assert!(all.contains("MODE default set_mode"), "{all}");
    assert!(all.contains("BACK default set_mode"), "{all}");
}

/// An agent none of whose modes asks is left as it is, and the task says it is confined only by
/// the sandbox around its process; so is one that advertises no modes at all.
#[test]
fn an_agent_that_cannot_be_made_to_ask_is_said_to_be_confined_only_by_its_sandbox() {
    if fault_agent("modes").is_none() {
        return;
    }
    let (status, all) = run("modes", "noask");
    assert!(status.success(), "{all}");
    assert!(all.contains("MODE auto unset"), "{all}");
    assert!(all.contains("the agent cannot be made to ask before it writes or runs a command (none of its modes says it asks"), "{all}");
    assert!(
        all.contains("confined only by the sandbox around its process"),
        "{all}"
    );
    let (status, all) = run("malformed", "");
    assert!(status.success(), "{all}");
    assert!(
        all.contains(
            "cannot be made to ask before it writes or runs a command (it advertises no modes)"
        ),
        "{all}"
    );
}

/// Gemini CLI's permission request carries no `rawInput`, only a diff and a location: the editor
/// is asked about the Write with its path and content, once, and the approved path is then
/// written through rawko (`fs/write_text_file`) without a second question.
#[test]
fn a_permission_request_without_raw_input_is_decided_by_its_diff_and_asked_once() {
    let Some(agent) = fault_agent("norawinput") else {
        return;
    };
    let project = Project::empty();
    let dir = project.ws.join(".rawko/workflows/look");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("workflow.yaml"),
        "name: Look\ncommandName: look\ninitialMessage: \"{description}\"\nphases:\n  - look.md\n",
    )
    .expect("workflow");
    std::fs::write(
        dir.join("look.md"),
        "---\nid: look\nname: Look\nemoji: \"L\"\ntools:\n  whitelist: [Read]\n---\nLook only.\n",
    )
    .expect("phase");
    let home = tempfile::TempDir::new().expect("home");
    let mut ed = Editor::spawn_in(&project.ws, home.path());
    ed.initialize(json!({"providers": [{"name": "acp", "command": "node",
        "args": [agent, "norawinput"]}]}));
    ed.set_approval_policy(|_| Some("allow_once"));
    let started = ed
        .request(
            "rawko/startTask",
            json!({"description": "Make new.txt", "provider": "acp", "workflow": "look"}),
        )
        .expect("startTask");
    let task = started["taskId"].as_str().expect("taskId").to_owned();
    ed.wait_for("the task's end", Duration::from_secs(60), |m| {
        is_note(m, "rawko/taskFinished", &task)
    });
    let said: Vec<String> = ed
        .notifications(&task)
        .iter()
        .filter(|n| n["method"] == "rawko/output")
        .map(|n| n["params"]["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    let asked = ed.approval_requests();
    assert_eq!(asked.len(), 1, "asked once: {asked:?}\n{}", said.join("\n"));
    let path = project.ws.join("new.txt");
    assert_eq!(asked[0]["params"]["tool"], "Write", "{asked:?}");
    assert_eq!(
        asked[0]["params"]["input"],
        json!({"file_path": path, "content": "made by the agent\n"}),
        "{asked:?}"
    );
    assert!(
        said.iter().any(|t| t.contains("write: DONE")),
        "{}",
        said.join("\n")
    );
    assert_eq!(
        std::fs::read_to_string(&path).ok().as_deref(),
        Some("made by the agent\n")
    );
}

/// An agent that never starts `rawko mcp` in its first prompt is named as such, once; one that
/// lists its tools is not.
#[test]
fn an_agent_that_never_connects_to_rawko_mcp_is_told_once() {
    if fault_agent("mcp").is_none() {
        return;
    }
    let note = "the agent never connected to rawko's MCP server (`rawko mcp`) in its first prompt";
    let (status, all) = run("malformed", "");
    assert!(status.success(), "{all}");
    assert_eq!(all.matches(note).count(), 1, "{all}");
    assert!(
        all.contains("check that the agent starts the stdio MCP servers"),
        "{all}"
    );
    let (status, all) = run("mcp", "");
    assert!(status.success(), "{all}");
    assert!(
        all.contains("TOOLS workflow_step,workflow_status,workflow_start"),
        "{all}"
    );
    assert!(!all.contains(note), "{all}");
}

//! The agent's own process runs confined: what it writes with its own hands (not through rawko's
//! `fs/write_text_file`) stays inside what the phase allows, and nothing it starts outlives the
//! task. The scripted agent (tests/acp/fault-agent.mjs) writes with node's fs and detaches a child.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::faults::{fault_agent, text, Place};

/// A workflow `lookmake` whose first phase only reads and whose second writes, and `makelook`, the
/// other way round.
fn workflow(ws: &std::path::Path) {
    for (key, phases) in [
        ("lookmake", "look.md\n  - make.md"),
        ("makelook", "make.md\n  - look.md"),
    ] {
        let dir = ws.join(".rawko/workflows").join(key);
        std::fs::create_dir_all(&dir).expect("mkdir");
        std::fs::write(
            dir.join("workflow.yaml"),
            format!("name: {key}\ncommandName: {key}\ninitialMessage: \"{{description}}\"\nphases:\n  - {phases}\n"),
        )
        .expect("workflow");
        std::fs::write(
            dir.join("look.md"),
            "---\nid: look\nname: Look\nemoji: \"L\"\ntools:\n  whitelist: [Read, Bash]\n---\nLook.\n",
        )
        .expect("phase");
        std::fs::write(
            dir.join("make.md"),
            "---\nid: make\nname: Make\nemoji: \"M\"\n---\nMake.\n",
        )
        .expect("phase");
    }
}

/// The agent writes with its own fs: outside the workspace never, in the workspace only once the
/// phase allows writing (rawko restarts it with `session/load` when the phase's access changes),
/// in its own TMPDIR always; it reads the workspace.
#[test]
fn the_agents_own_writes_follow_the_phase() {
    let Some(agent) = fault_agent("direct") else {
        return;
    };
    own_writes(&agent, "lookmake", ["FAILED EACCES", "DONE"]);
}

/// The other way round: the agent that could write is ended as soon as the phase forbids it (it
/// never hears the answer to its `workflow_step` in that process) and goes on read-only.
#[test]
fn the_agent_is_restarted_read_only_when_the_phase_forbids_writing() {
    let Some(agent) = fault_agent("direct") else {
        return;
    };
    own_writes(&agent, "makelook", ["DONE", "FAILED EACCES"]);
}

/// Runs the `direct` agent through `workflow`, which it moves on after writing in each phase:
/// its writes in the workspace end as `results` say, one per phase.
fn own_writes(agent: &std::path::Path, workflow_key: &str, results: [&str; 2]) {
    let place = Place::new(json!({}));
    workflow(&place.ws);
    let outside = place.root.join("outside.txt");
    std::fs::write(
        // The agent is the user's setting: a workspace's providers would need trust first.
        place.user_config(),
        json!({"providers": [{"name": "acp", "command": "node",
            "args": [agent, "direct", outside],
            "env": {"FAULT_STEP": "1", "FAULT_LOAD": "1"}}]})
        .to_string(),
    )
    .expect("config");
    let (out, _) = place.run(
        &[
            "Write things",
            "--provider",
            "acp",
            "--workflow",
            workflow_key,
            "--yes",
        ],
        Duration::from_secs(90),
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(
        !outside.exists(),
        "the agent wrote outside the workspace:\n{all}"
    );
    let ws_write = format!("write {}/direct.txt", place.ws.display());
    // One attempt per phase, one process per phase.
    let attempts: Vec<&str> = all.lines().filter(|l| l.starts_with(&ws_write)).collect();
    let expected = results.map(|r| format!("{ws_write}: {r}"));
    assert_eq!(attempts, expected, "{all}");
    assert!(all.contains("agent-scratch.txt: DONE"), "its TMPDIR: {all}");
    assert!(all.contains("read README.md: a project"), "{all}");
}

/// An agent that cannot load its session again is never given the workspace to write: its
/// writes go through rawko's `fs/write_text_file`, which the gate decides.
#[test]
fn an_agent_that_cannot_reload_keeps_the_workspace_read_only() {
    let Some(agent) = fault_agent("direct") else {
        return;
    };
    let place = Place::new(json!({}));
    let outside = place.root.join("outside.txt");
    let cmd = format!("node {} direct {}", agent.display(), outside.display());
    let (out, _) = place.run(
        &["Write things", "--provider", "acp", "--agent-command", &cmd],
        Duration::from_secs(90),
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(!outside.exists(), "{all}");
    assert!(!place.ws.join("direct.txt").exists(), "{all}");
    assert!(all.contains("agent-scratch.txt: DONE"), "{all}");
}

/// A child the agent detaches (a session of its own) is ended with the task, even where the
/// sandbox would let it write (`sandbox.agentWrite`).
#[test]
fn nothing_the_agent_starts_outlives_the_task() {
    let Some(agent) = fault_agent("detach") else {
        return;
    };
    let place = Place::new(json!({}));
    let outbox = place.root.join("outbox");
    std::fs::create_dir_all(&outbox).expect("mkdir");
    let config = place.root.join("home/.config/rawko");
    std::fs::create_dir_all(&config).expect("mkdir");
    std::fs::write(
        config.join("config.json"),
        json!({"sandbox": {"agentWrite": [outbox]}}).to_string(),
    )
    .expect("config");
    let cmd = format!("node {} detach {}", agent.display(), outbox.display());
    let (out, _) = place.run(
        &["Detach", "--provider", "acp", "--agent-command", &cmd],
        Duration::from_secs(60),
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(all.contains("early.txt: DONE"), "agentWrite: {all}");
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until && !outbox.join("late.txt").exists() {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        !outbox.join("late.txt").exists(),
        "the agent's detached child wrote after the task ended:\n{all}"
    );
}

/// Where the kernel sandbox cannot be used, `"required"` refuses to start the agent, and
/// `"auto"` starts it unconfined and says so.
#[test]
fn without_landlock_the_sandbox_setting_decides() {
    let Some(agent) = fault_agent("direct") else {
        return;
    };
    let place = Place::new(json!({}));
    let outside = place.root.join("outside.txt");
    let config = place.root.join("home/.config/rawko");
    std::fs::create_dir_all(&config).expect("mkdir");
    let cmd = format!("node {} direct {}", agent.display(), outside.display());
    let no_landlock = [("RAWKO_TEST_NO_LANDLOCK", "1")];
    std::fs::write(config.join("config.json"), r#"{"sandbox": "required"}"#).expect("config");
    let (out, _) = place.run_with(
        &["Write things", "--provider", "acp", "--agent-command", &cmd],
        &no_landlock,
        Duration::from_secs(60),
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(1), "{all}");
    assert!(
        all.contains("is not started: the \"sandbox\" setting is \"required\""),
        "{all}"
    );
    assert!(!all.contains("agent-scratch.txt"), "the agent ran: {all}");
    std::fs::write(config.join("config.json"), r#"{"sandbox": "auto"}"#).expect("config");
    let (out, _) = place.run_with(
        &["Write things", "--provider", "acp", "--agent-command", &cmd],
        &no_landlock,
        Duration::from_secs(60),
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(
        all.contains("the agent runs without the kernel sandbox"),
        "{all}"
    );
    assert!(all.contains("agent-scratch.txt: DONE"), "{all}");
}

/// The phase gives the workspace while the agent is in the middle of a prompt: the agent is
/// started again with it at once (in its session, told the answer it missed), so what it writes
/// with its own hands right after moving the workflow on is written, not refused by the kernel.
#[test]
fn the_agent_is_given_the_workspace_as_soon_as_the_phase_allows_writing() {
    let Some(agent) = fault_agent("stepwrite") else {
        return;
    };
    let place = Place::new(json!({}));
    workflow(&place.ws);
    std::fs::write(
        place.user_config(),
        json!({"providers": [{"name": "acp", "command": "node",
            "args": [agent, "stepwrite"], "env": {"FAULT_LOAD": "1"}}]})
        .to_string(),
    )
    .expect("config");
    let (out, _) = place.run(
        &[
            "Write things",
            "--provider",
            "acp",
            "--workflow",
            "lookmake",
            "--yes",
        ],
        Duration::from_secs(90),
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    let write = format!("write {}/direct.txt", place.ws.display());
    let attempts: Vec<&str> = all
        .lines()
        .filter_map(|l| l.find(&write).map(|at| &l[at..]))
        .collect();
    assert_eq!(attempts, [format!("{write}: DONE")], "{all}");
    assert!(
        all.contains("rawko restarted you with the workspace writable"),
        "{all}"
    );
}

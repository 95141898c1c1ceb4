//! The `acp` provider's gate against a scripted agent (tests/acp/fault-agent.mjs) that asks for
//! only what the phase allows and then tries to make more of it: a terminal the phase allowed
//! that writes in a read-only phase, a write beside the path the user approved, a flood of text,
//! a turn that never ends, and a Write it only says it made.

use std::time::Duration;

use serde_json::{json, Value};

use crate::faults::{fault_agent, text, Place};
use crate::support::{is_note, Editor, Project};

/// A workflow of one phase that allows Read and Bash but no writing: the gate lets through the
/// shell commands it does not see writing; the kernel sandbox must stop them.
fn look_workflow(ws: &std::path::Path, tools: &str) {
    let dir = ws.join(".rawko/workflows/look");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("workflow.yaml"),
        "name: Look\ncommandName: look\ninitialMessage: \"{description}\"\nphases:\n  - look.md\n",
    )
    .expect("workflow");
    std::fs::write(
        dir.join("look.md"),
        format!("---\nid: look\nname: Look\nemoji: \"L\"\ntools:\n  whitelist: {tools}\n---\nLook only.\n"),
    )
    .expect("phase");
}

/// The agent's entry in `providers`: the fault agent in `mode` with `args`, moving the workflow
/// on once it has acted.
fn provider(agent: &std::path::Path, mode: &str, args: &[&str]) -> Value {
    let mut all = vec![agent.display().to_string(), mode.to_owned()];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    json!({"name": "acp", "command": "node", "args": all, "env": {"FAULT_STEP": "1"}})
}

/// A terminal the *phase* allowed (the agent's permission request for Bash passed the gate, no
/// user asked) runs with the workspace read-only in a read-only phase, like any Bash call: the
/// writers the gate's reading misses write nothing. A command the user approved may write.
#[test]
fn a_terminal_the_phase_allowed_cannot_write_in_a_read_only_phase() {
    let Some(agent) = fault_agent("terminals") else {
        return;
    };
    let place = Place::new(json!({}));
    look_workflow(&place.ws, "[Read, Bash]");
    std::fs::write(
        // The agent is the user's setting: a workspace's providers would need trust first.
        place.user_config(),
        json!({"providers": [provider(&agent, "terminals", &[
            "script -qc 'touch ro1' /dev/null",
            "openssl rand -out ro2 4",
            "touch approved.txt",
        ])]})
        .to_string(),
    )
    .expect("config");
    let (out, _) = place.run(
        &[
            "Look around",
            "--provider",
            "acp",
            "--workflow",
            "look",
            "--yes",
        ],
        Duration::from_secs(90),
    );
    let all = text(&out);
    assert!(
        all.contains("touch approved.txt: EXIT"),
        "the agent ran its terminals: {all}"
    );
    for f in ["ro1", "ro2"] {
        assert!(
            !place.ws.join(f).exists(),
            "a terminal the phase allowed wrote {f} in the read-only phase:\n{all}"
        );
    }
    assert!(
        place.ws.join("approved.txt").exists(),
        "the command the user approved may write: {all}"
    );
}

/// The user approved the agent's Write of `a.txt`: that approval covers `<ws>/a.txt` only, not
/// `locked/a.txt` (which ends with it), which is gated again and refused.
#[test]
fn an_approved_write_covers_exactly_its_path() {
    let Some(agent) = fault_agent("paths") else {
        return;
    };
    let project = Project::empty();
    look_workflow(&project.ws, "[Read]");
    std::fs::create_dir_all(project.ws.join("locked")).expect("mkdir");
    let home = tempfile::TempDir::new().expect("home");
    let mut ed = Editor::spawn_in(&project.ws, home.path());
    // The agent is the user's setting (the editor's): a workspace's providers need trust first.
    ed.initialize(json!({"providers": [provider(&agent, "paths", &[])]}));
    // The user allows writing a.txt, nothing under locked/.
    ed.set_approval_policy(|req| {
        let path = req["input"]["file_path"].as_str().unwrap_or_default();
        Some(if path.contains("locked") {
            "reject_once"
        } else {
            "allow_once"
        })
    });
    let started = ed
        .request(
            "rawko/startTask",
            json!({"description": "Write a.txt", "provider": "acp", "workflow": "look"}),
        )
        .expect("startTask");
    let task = started["taskId"].as_str().expect("taskId").to_owned();
    ed.wait_for("the task's end", Duration::from_secs(60), |m| {
        is_note(m, "rawko/taskFinished", &task)
    });
    let said: Vec<String> = ed
        .notifications(&task)
        .iter()
        .filter_map(|n| n["params"]["text"].as_str().map(str::to_owned))
        .collect();
    assert!(
        !project.ws.join("locked/a.txt").exists(),
        "the approval of a.txt wrote locked/a.txt:\n{}",
        said.join("\n")
    );
    assert_eq!(
        std::fs::read_to_string(project.ws.join("a.txt"))
            .ok()
            .as_deref(),
        Some("written\n"),
        "{}",
        said.join("\n")
    );
    let asked: Vec<String> = ed
        .approval_requests()
        .iter()
        .map(|a| {
            a["params"]["input"]["file_path"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(
        asked,
        [
            "a.txt".to_owned(),
            project.ws.join("locked/a.txt").display().to_string()
        ],
        "the user is asked about a.txt, then about locked/a.txt, not again about a.txt"
    );
}

/// All the files under `dir`, with their sizes.
fn sizes(dir: &std::path::Path) -> Vec<(std::path::PathBuf, u64)> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.metadata() {
            Ok(m) if m.is_dir() => out.extend(sizes(&path)),
            Ok(m) => out.push((path, m.len())),
            Err(_) => {}
        }
    }
    out
}

/// 20 MiB of agent text in one prompt: cut at the turn's cap with a note, so the task's log and
/// what it shows stay small.
#[test]
fn a_flood_of_agent_text_is_cut_at_the_turns_cap() {
    let Some(agent) = fault_agent("flood") else {
        return;
    };
    let place = Place::new(json!({}));
    let cmd = format!("node {} flood", agent.display());
    let (out, _) = place.run(
        &["Say a lot", "--provider", "acp", "--agent-command", &cmd],
        Duration::from_secs(180),
    );
    let all = text(&out);
    let shown = all.len();
    let tail = &all[all.len().saturating_sub(3000)..];
    assert_eq!(out.status.code(), Some(0), "{tail}");
    assert!(
        all.contains("the rest of this turn's text is not shown"),
        "the cap's note: {tail}"
    );
    assert!(!all.contains("FLOOD OVER"), "the text past the cap: {tail}");
    assert!(shown < 4 << 20, "rawko run showed {shown} bytes");
    let state = place.root.join("home/.local/state/rawko");
    let files = sizes(&state);
    let total: u64 = files.iter().map(|(_, n)| n).sum();
    assert!(
        total < 8 << 20,
        "the state directory holds {total} bytes: {files:?}"
    );
}

/// An agent that never stops talking (so never stalls) ends its turn at `turnSeconds`.
#[test]
fn a_turn_that_keeps_talking_ends_at_turn_seconds() {
    let Some(agent) = fault_agent("endless") else {
        return;
    };
    let place = Place::new(json!({
        "providers": [{"name": "acp", "command": "node", "args": [agent, "endless"],
                       "stallSeconds": 2, "turnSeconds": 3}],
    }));
    let (out, took) = place.run(&["Talk", "--provider", "acp"], Duration::from_secs(60));
    let all = text(&out);
    let tail = &all[all.len().saturating_sub(3000)..];
    assert_eq!(out.status.code(), Some(1), "{tail}");
    assert!(
        all.contains("kept its turn going for 3 s (the provider's turnSeconds)"),
        "{tail}"
    );
    assert!(took < Duration::from_secs(40), "took {took:?}");
}

/// A Write the agent only reports as done (a tool call it ran itself, never through rawko) is
/// shown and logged as the agent's report, not as a Write rawko made.
#[test]
fn a_write_the_agent_reports_is_logged_as_its_report() {
    let Some(agent) = fault_agent("report") else {
        return;
    };
    let place = Place::new(json!({}));
    let cmd = format!("node {} report", agent.display());
    let (out, _) = place.run(
        &["Report", "--provider", "acp", "--agent-command", &cmd],
        Duration::from_secs(60),
    );
    let all = text(&out);
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(!place.ws.join("reported.txt").exists());
    assert!(all.contains("reported by the agent"), "{all}");
    // The task's log (its events.jsonl, or the WAL not yet checkpointed into it).
    let mut events = Vec::new();
    for (path, _) in sizes(&place.root.join("home/.local/state/rawko")) {
        let bytes = std::fs::read(&path).unwrap_or_default();
        for line in String::from_utf8_lossy(&bytes).lines() {
            if let Ok(v) = serde_json::from_str::<Value>(line.trim_matches('\0')) {
                find_events(&v, &mut events);
            }
        }
    }
    let log = format!("{events:#?}");
    let started: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_started")
        .collect();
    assert!(!started.is_empty(), "{log}");
    assert!(started.iter().all(|e| e["reported"] == true), "{log}");
    let turn = events
        .iter()
        .find(|e| e["type"] == "turn" && e["toolCalls"].as_array().is_some_and(|c| !c.is_empty()))
        .expect("the turn with the reported call");
    assert_eq!(turn["toolCalls"][0]["reported"], true, "{log}");
}

/// The logged events (objects with a `type`) anywhere in `v`.
fn find_events(v: &Value, into: &mut Vec<Value>) {
    match v {
        Value::Object(map) => {
            if map
                .get("type")
                .is_some_and(|t| t == "tool_started" || t == "turn")
            {
                into.push(v.clone());
            }
            map.values().for_each(|x| find_events(x, into));
        }
        Value::Array(items) => items.iter().for_each(|x| find_events(x, into)),
        _ => {}
    }
}

/// The user approves a Write the agent makes with its own hands in a read-only phase: its
/// process cannot write there, so its attempt fails at the kernel; rawko then makes that write
/// (exactly the approved input), stops the agent's prompt and tells it at once. Asked once.
#[test]
fn an_approved_write_the_agents_process_cannot_make_is_made_by_rawko() {
    let Some(agent) = fault_agent("ownwrite") else {
        return;
    };
    let project = Project::empty();
    look_workflow(&project.ws, "[Read]");
    let home = tempfile::TempDir::new().expect("home");
    let mut ed = Editor::spawn_in(&project.ws, home.path());
    ed.initialize(json!({"providers": [{"name": "acp", "command": "node",
        "args": [agent, "ownwrite"], "env": {"FAULT_LOAD": "1"}}]}));
    ed.set_approval_policy(|_| Some("allow_once"));
    let started = ed
        .request(
            "rawko/startTask",
            json!({"description": "Write own.txt", "provider": "acp", "workflow": "look"}),
        )
        .expect("startTask");
    let task = started["taskId"].as_str().expect("taskId").to_owned();
    // The workflow never ends (the agent does not move it on): its second prompt says what it
    // was told, and the task is cancelled then.
    let said = ed.wait_for("the agent's next prompt", Duration::from_secs(60), |m| {
        is_note(m, "rawko/output", &task)
            && m["params"]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("NEXT: "))
    });
    let _ = ed.request("rawko/cancelTask", json!({"taskId": task}));
    let next = said["params"]["text"].as_str().unwrap_or_default();
    assert!(
        next.contains("rawko made it for you") && next.contains("own.txt"),
        "{next}"
    );
    assert_eq!(
        std::fs::read_to_string(project.ws.join("own.txt"))
            .ok()
            .as_deref(),
        Some("written for the agent\n")
    );
    assert_eq!(ed.approval_requests().len(), 1, "asked once");
}

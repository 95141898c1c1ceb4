//! Trusting and revoking hooks, and the recorded sessions.

use super::*;

#[test]
fn trust_records_the_hooks_hash_and_revoke_forgets_it() {
    let sb = Sandbox::new();
    let ws = sb.project().display().to_string();
    let file = sb.workspace_config_file().display().to_string();

    let said = sb.ok(&["trust"]);
    assert_eq!(
        said,
        format!("{file} defines no hooks; there is nothing to trust.\n")
    );
    assert_eq!(
        sb.ok_json(&["trust", "--json"]),
        json!({"workspace": ws, "trusted": false, "hooks": []})
    );
    assert!(!sb.trust_file().exists());

    sb.write_json(
        &sb.workspace_config_file(),
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}], "Stop": [{"type": "command", "command": "echo bye"}]}}),
    );
    let said = sb.ok(&["trust"]);
    assert_eq!(
        said,
        format!(
            "Trusted {ws}. These hooks will run:\n  PreToolUse [Bash]: ./guard.sh\n  Stop: echo bye\nIf the hooks in {file} change, rawko asks again.\n"
        )
    );
    let store = read_json(&sb.trust_file());
    let entry = &store["workspaces"][&ws];
    assert_eq!(store["v"], json!(1));
    let hash = entry["hooksHash"].as_str().expect("hooksHash");
    assert!(
        hash.starts_with("sha256:") && hash.len() == "sha256:".len() + 64,
        "{hash}"
    );
    assert!(entry["trustedAt"].as_i64().is_some(), "{store:#}");

    let said = sb.ok(&["trust"]);
    assert!(
        said.starts_with(&format!("Trusted {ws} (it already was).")),
        "{said}"
    );
    let json = sb.ok_json(&["trust", "--json"]);
    assert_eq!(
        json,
        json!({"workspace": ws, "trusted": true, "hooksHash": hash, "hooks": ["PreToolUse [Bash]: ./guard.sh", "Stop: echo bye"]})
    );

    // Reformatting the file is not a change; a different hook is.
    let same = serde_json::to_string(&read_json(&sb.workspace_config_file())).unwrap();
    sb.write(&sb.workspace_config_file(), &same);
    assert!(sb.ok(&["trust"]).contains("(it already was)"));
    sb.write_json(
        &sb.workspace_config_file(),
        &json!({"hooks": {"Stop": [{"type": "command", "command": "echo changed"}]}}),
    );
    assert!(sb.ok(&["config", "show"]).contains(
        "  Stop: echo changed  (workspace, changed since trusted: does not run (`rawko trust`))"
    ));
    let said = sb.ok(&["trust"]);
    assert!(
        said.starts_with(&format!(
            "Trusted {ws} again (its hooks changed). These hooks will run:\n  Stop: echo changed\n"
        )),
        "{said}"
    );
    assert_ne!(
        read_json(&sb.trust_file())["workspaces"][&ws]["hooksHash"],
        json!(hash)
    );

    let said = sb.ok(&["trust", "--revoke"]);
    assert_eq!(
        said,
        format!("{ws} is no longer trusted: its hooks will not run until you trust it again.\n")
    );
    assert_eq!(read_json(&sb.trust_file())["workspaces"], json!({}));
    assert_eq!(
        sb.ok(&["trust", "--revoke"]),
        format!("{ws} was not trusted.\n")
    );
    assert_eq!(
        sb.ok_json(&["trust", "--revoke", "--json"]),
        json!({"workspace": ws, "trusted": false, "wasTrusted": false})
    );
    assert!(sb
        .ok(&["config", "show"])
        .contains("  Stop: echo changed  (workspace, not trusted: does not run (`rawko trust`))"));
}

// --- rawko sessions ---------------------------------------------------------------------------

#[test]
fn sessions_are_listed_and_shown_in_text_and_json() {
    let sb = Sandbox::new();
    assert_eq!(
        sb.ok(&["sessions", "list"]),
        "No sessions in this workspace yet. Each `rawko serve` or `rawko run` is one.\n"
    );
    assert_eq!(
        sb.ok(&["sessions", "list", "--all"]),
        "No sessions yet. Each `rawko serve` or `rawko run` is one.\n"
    );
    assert_eq!(sb.ok_json(&["sessions", "list", "--json"]), json!([]));
    let out = sb.run(&["sessions", "show"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("error: there is no current session yet"),
        "{}",
        text(&out)
    );

    let done = sb.script("done", DONE);
    sb.ok(&["run", "First task", "--script", &done]);
    let failing = sb.script("failing", "turns:\n  - error: authentication_failed\n");
    let out = sb.run(&["run", "Second task", "--script", &failing]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // A session of another workspace.
    let other = sb.root.join("other");
    std::fs::create_dir_all(&other).expect("mkdir");
    sb.ok(&[
        "run",
        "Elsewhere",
        "--script",
        &done,
        "--workspace",
        other.to_str().unwrap(),
    ]);

    let list = sb.ok_json(&["sessions", "list", "--json"]);
    let list = list.as_array().expect("a list");
    assert_eq!(list.len(), 2, "{list:#?}");
    let (second, first) = (&list[0], &list[1]);
    let ws = sb.project().display().to_string();
    for s in [first, second] {
        assert_eq!(s["command"], "run");
        assert_eq!(s["workspace"], json!(ws));
        assert_eq!(s["provider"], "scripted");
        assert_eq!(s["currentTask"], Value::Null);
        assert!(s["endTime"].as_i64() >= s["startTime"].as_i64(), "{s:#}");
        let id = s["id"].as_str().expect("id");
        let (ms, random) = id.split_once('-').expect("<ms>-<random>");
        assert_eq!(ms, s["startTime"].as_i64().unwrap().to_string());
        assert!(
            random.len() == 16 && random.chars().all(|c| c.is_ascii_hexdigit()),
            "{id}"
        );
        // Not a git repository.
        assert_eq!(s["metadata"]["gitBranch"], Value::Null);
    }
    assert_eq!(first["status"], "completed");
    assert_eq!(
        first["tasks"],
        json!({"planned": 1, "completed": 1, "failed": 0, "cancelled": 0})
    );
    assert_eq!(
        first["args"],
        json!(["run", "First task", "--script", done])
    );
    assert_eq!(second["status"], "failed");
    assert_eq!(
        second["tasks"],
        json!({"planned": 1, "completed": 0, "failed": 1, "cancelled": 0})
    );
    let all = sb.ok_json(&["sessions", "list", "--all", "--json"]);
    assert_eq!(all.as_array().map(Vec::len), Some(3));
    assert_eq!(all[0]["workspace"], json!(other.display().to_string()));

    let table = sb.ok(&["sessions", "list"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        ["ID", "STATUS", "COMMAND", "STARTED", "TOOK", "TASKS"]
    );
    for (line, s, tasks) in [
        (lines[1], second, "0 done, 1 failed of 1"),
        (lines[2], first, "1 done, 0 failed of 1"),
    ] {
        assert!(line.starts_with(s["id"].as_str().unwrap()), "{line}");
        assert!(
            line.contains(&format!("  {}  ", s["status"].as_str().unwrap())),
            "{line}"
        );
        assert!(line.contains("  run  "), "{line}");
        assert!(line.ends_with(tasks), "{line}");
    }

    // The files: one per session, and `current` pointing at the newest.
    let dir = sb.home().join(".local/state/rawko/sessions");
    assert_eq!(dir, sb.sessions_dir());
    let current = std::fs::read_link(dir.join("current")).expect("the current symlink");
    assert_eq!(
        current,
        PathBuf::from(format!("session-{}.json", all[0]["id"].as_str().unwrap()))
    );
    for s in all.as_array().unwrap() {
        let file = dir.join(format!("session-{}.json", s["id"].as_str().unwrap()));
        assert_eq!(&read_json(&file), s);
    }

    // `show` takes an id, a start of one, or `current` (the default).
    let id = first["id"].as_str().unwrap();
    let shown = sb.ok(&["sessions", "show", &id[..id.len() - 4]]);
    let expected_start = format!(
        "session {id}\n  status     completed\n  command    rawko run 'First task' --script {done}\n  workspace  {ws}\n  started    "
    );
    assert!(shown.starts_with(&expected_start), "{shown}");
    for line in [
        "  tasks      1 planned, 1 complete, 0 failed, 0 cancelled",
        "  provider   scripted",
    ] {
        assert!(
            shown.lines().any(|l| l == line),
            "missing {line:?}:\n{shown}"
        );
    }
    assert!(shown.contains("\n  ended      "), "{shown}");
    assert_eq!(
        sb.ok_json(&["sessions", "show", &format!("session-{id}.json"), "--json"]),
        *first
    );
    assert_eq!(sb.ok_json(&["sessions", "show", "--json"]), all[0]);
    let out = sb.run(&["sessions", "show", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("error: no session nope; `rawko sessions list` shows the sessions"),
        "{}",
        text(&out)
    );
}

// --- rawko run with hooks ---------------------------------------------------------------------

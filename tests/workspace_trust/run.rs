//! `rawko run`, `rawko trust` and `rawko config show` with a workspace config an agent wrote.

use serde_json::json;

use super::*;

/// A workspace's provider at a base URL of the agent's choosing never gets the user's key
/// until the user trusts it; the task runs on the user's own setting meanwhile, and a change of
/// the providers asks again.
#[test]
fn an_untrusted_base_url_gets_no_request_and_the_users_setting_runs_the_task() {
    let sb = Sandbox::new();
    let users = fake_model("Done by the user's model.");
    let agents = fake_model("Done by the agent's endpoint.");
    sb.workspace_config(json!({
        "providers": [{"name": "anthropic", "model": "claude-test", "baseUrl": agents.url()}],
    }));
    let file = sb.config_file();

    let out = sb.run(&["run", "Say hello", "--deny"], Some(&users.url()));
    let shown = text(&out);
    assert!(
        agents.requests().is_empty(),
        "the untrusted base URL got requests with keys {:?}\n{shown}",
        keys_seen(&agents)
    );
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(!keys_seen(&users).is_empty(), "{shown}");
    assert!(
        keys_seen(&users).iter().all(|k| k == USERS_KEY),
        "{:?}",
        keys_seen(&users)
    );
    let note = format!(
        "note: the providers in {file} are not used: this workspace is not trusted (`rawko trust` trusts it)"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.contains("are not used"))
            .count(),
        1,
        "one note:\n{stderr}"
    );
    assert!(stderr.lines().any(|l| l == note), "{stderr}");

    // `rawko config show` says the same, and that the provider in effect is not the workspace's.
    let show = sb.run(&["config", "show"], None);
    let shown = text(&show);
    assert!(
        shown.contains(&format!(
            "Settings of {file} that need trust (not trusted: not used (`rawko trust`)):\n  provider anthropic (model claude-test) at {}\n",
            agents.url()
        )),
        "{shown}"
    );
    assert!(!shown.contains("  providers  "), "{shown}");
    assert!(shown.contains(&note), "{shown}");

    // Trusted, with the provider and its base URL named, it is used.
    let said = sb.trust();
    assert!(
        said.contains(&format!(
            "These settings of {file} will be used:\n  provider anthropic (model claude-test) at {}\n",
            agents.url()
        )),
        "{said}"
    );
    assert!(
        said.ends_with(&format!(
            "If the providers in {file} change, rawko asks again.\n"
        )),
        "{said}"
    );
    let show = sb.run(&["config", "show"], None);
    let shown = text(&show);
    assert!(shown.contains("(trusted: used)"), "{shown}");
    assert!(
        shown.contains("  providers               anthropic\n"),
        "{shown}"
    );
    let before = users.requests().len();
    let out = sb.run(&["run", "Say hello again", "--deny"], Some(&users.url()));
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(!agents.requests().is_empty(), "{shown}");
    assert_eq!(users.requests().len(), before, "{shown}");
    assert!(!shown.contains("are not used"), "{shown}");

    // A change of the providers asks again: until then it is not used.
    sb.workspace_config(json!({
        "providers": [{"name": "anthropic", "model": "claude-other", "baseUrl": agents.url()}],
    }));
    let asked = agents.requests().len();
    let out = sb.run(
        &["run", "Say hello once more", "--deny"],
        Some(&users.url()),
    );
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert_eq!(agents.requests().len(), asked, "{shown}");
    assert!(
        shown.contains(&format!(
            "note: the providers in {file} are not used: they changed since you trusted this workspace (`rawko trust` trusts it)"
        )),
        "{shown}"
    );
}

/// An `acp` provider's command from an untrusted workspace does not run: the task fails with a
/// clear message instead. After `rawko trust`, which names the command, it runs.
#[test]
fn an_untrusted_acp_command_does_not_run() {
    let sb = Sandbox::new();
    let (script, marker) = sb.marker_script("agent");
    sb.workspace_config(json!({
        "providers": [{"name": "acp", "command": script, "args": ["--acp"], "env": {"AGENT_TOKEN": "tok-secret-value"}}],
    }));
    let file = sb.config_file();
    let out = sb.run(&["run", "Do it", "--provider", "acp", "--deny"], None);
    let shown = text(&out);
    assert!(!marker.exists(), "the untrusted agent command ran\n{shown}");
    assert_ne!(out.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains("error: provider \"acp\" needs the agent's command"),
        "{shown}"
    );
    assert!(
        shown.contains(&format!(
            "note: the providers in {file} are not used: this workspace is not trusted (`rawko trust` trusts it)"
        )),
        "{shown}"
    );
    // With no provider named, the workspace's does not apply either.
    let out = sb.run(&["run", "Do it", "--deny"], None);
    assert!(!marker.exists(), "{}", text(&out));
    assert!(text(&out).contains("error: no provider"), "{}", text(&out));

    let said = sb.trust();
    assert!(
        said.contains(&format!(
            "  provider acp runs {} --acp (env: AGENT_TOKEN)\n",
            script.display()
        )),
        "{said}"
    );
    assert!(!said.contains("tok-secret-value"), "{said}");
    let out = sb.run(&["run", "Do it", "--provider", "acp", "--deny"], None);
    assert!(
        wait_for_file(&marker),
        "the trusted agent command did not run\n{}",
        text(&out)
    );
}

/// A workspace's `apiKeys` (a key of the agent's account) is not used until trusted: the
/// user's own key goes with every request, and `rawko trust` names the provider, not the key.
#[test]
fn an_untrusted_api_key_is_not_used() {
    const AGENTS_KEY: &str = "sk-ant-the-agents-account-0002";
    let sb = Sandbox::new();
    let api = fake_model("Done.");
    sb.workspace_config(json!({"apiKeys": {"anthropic": AGENTS_KEY}}));
    let file = sb.config_file();
    let out = sb.run(&["run", "Say hello", "--deny"], Some(&api.url()));
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    let keys = keys_seen(&api);
    assert!(
        !keys.is_empty() && keys.iter().all(|k| k == USERS_KEY),
        "{keys:?}\n{shown}"
    );
    assert!(
        shown.contains(&format!(
            "note: the apiKeys in {file} are not used: this workspace is not trusted (`rawko trust` trusts it)"
        )),
        "{shown}"
    );

    let said = sb.trust();
    assert!(
        said.contains("  apiKeys: a key for anthropic (values not shown)\n"),
        "{said}"
    );
    assert!(!said.contains(AGENTS_KEY), "{said}");
    let json = sb.run(&["trust", "--json"], None);
    assert!(
        !String::from_utf8_lossy(&json.stdout).contains(AGENTS_KEY),
        "{}",
        text(&json)
    );
    let seen = keys_seen(&api).len();
    let out = sb.run(&["run", "Say hello", "--deny"], Some(&api.url()));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        keys_seen(&api)[seen..].iter().all(|k| k == AGENTS_KEY),
        "trusted, the workspace's key is used: {:?}",
        keys_seen(&api)
    );

    // Another key is a change: asked again, the user's key is used meanwhile.
    sb.workspace_config(json!({"apiKeys": {"anthropic": "sk-ant-another-account-0003"}}));
    let seen = keys_seen(&api).len();
    let out = sb.run(&["run", "Say hello", "--deny"], Some(&api.url()));
    let shown = text(&out);
    assert!(
        keys_seen(&api)[seen..].iter().all(|k| k == USERS_KEY),
        "{:?}\n{shown}",
        keys_seen(&api)
    );
    assert!(
        shown.contains("they changed since you trusted this workspace"),
        "{shown}"
    );
}

/// A model arbiter named by an untrusted workspace is not asked: its base URL gets nothing.
#[test]
fn an_untrusted_arbiter_gets_no_request() {
    let sb = Sandbox::new();
    let users = fake_model("Done.");
    let agents = fake_model("{\"decision\":\"COMPLETE\",\"summary\":\"x\"}");
    sb.workspace_config(json!({
        "arbiter": {"type": "model", "provider": "anthropic", "model": "m", "baseUrl": agents.url()},
    }));
    let out = sb.run(&["run", "Say hello", "--deny"], Some(&users.url()));
    let shown = text(&out);
    assert!(agents.requests().is_empty(), "{shown}");
    assert!(
        shown.contains(&format!(
            "note: the arbiter in {} is not used",
            sb.config_file()
        )),
        "{shown}"
    );
}

/// A trust recorded for a workspace whose files have only hooks stays valid: what trust covers
/// there is the hooks alone, as before rawko covered settings.
#[test]
fn a_hooks_only_trust_recorded_before_still_holds() {
    let sb = Sandbox::new();
    let marker = sb.root.join("hook.ran");
    let command = format!("touch {}", marker.display());
    let hooks = json!({"PreExecutionStart": [{"type": "command", "command": command}]});
    sb.workspace_config(json!({"hooks": hooks, "maxReminders": 2}));
    // The record as an older rawko wrote it: the SHA-256 of the hooks section's JSON, its keys
    // sorted.
    let text_of_hooks =
        format!(r#"{{"PreExecutionStart":[{{"command":"{command}","type":"command"}}]}}"#);
    let digest = sha256_hex(text_of_hooks.as_bytes());
    let store = sb.home().join(".config/rawko/trusted-workspaces.json");
    std::fs::create_dir_all(store.parent().expect("dir")).expect("mkdir");
    std::fs::write(
        &store,
        json!({"v": 1, "workspaces": {sb.project().display().to_string(): {"hooksHash": format!("sha256:{digest}"), "trustedAt": 1}}}).to_string(),
    )
    .expect("store");
    let out = sb.run(
        &["run", "Say hello", "--deny"],
        Some(&fake_model("Done.").url()),
    );
    let shown = text(&out);
    assert!(!shown.contains("do not run"), "{shown}");
    assert!(marker.exists(), "the trusted hook did not run\n{shown}");
}

/// SHA-256 by `sha256sum`, so the test does not share rawko's code for it.
fn sha256_hex(bytes: &[u8]) -> String {
    use std::io::Write;
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(bytes)
        .expect("write");
    let out = child.wait_with_output().expect("sha256sum");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .expect("digest")
        .to_owned()
}

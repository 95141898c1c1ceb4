//! The editor's face (`rawko serve`): the trust question names the providers and their base
//! URLs; a no leaves them out, with a message; a yes uses them; a change asks again.

use std::time::Duration;

use serde_json::{json, Value};

use super::support::Editor;
use super::*;

const WAIT: Duration = Duration::from_secs(20);

fn serve(sb: &Sandbox, users_api: &str) -> Editor {
    let mut ed = Editor::spawn_with_env(
        &sb.project(),
        &sb.home(),
        &[
            ("ANTHROPIC_API_KEY", USERS_KEY),
            ("ANTHROPIC_BASE_URL", users_api),
        ],
    );
    ed.initialize(json!({}));
    ed
}

fn asked(ed: &mut Editor) -> Value {
    ed.wait_for("rawko/trustWorkspace", WAIT, |m| {
        m["method"] == "rawko/trustWorkspace"
    })
}

/// Starts a task and waits for its end; returns its outcome.
fn run_task(ed: &mut Editor) -> Value {
    let started = ed
        .request_within(
            "rawko/startTask",
            json!({"description": "Say hello", "agent": "default"}),
            WAIT,
        )
        .expect("startTask");
    let task = started["taskId"].as_str().expect("taskId").to_owned();
    ed.wait_for("the task's end", WAIT, |m| {
        m["method"] == "rawko/taskFinished" && m["params"]["taskId"] == task
    })["params"]["outcome"]
        .clone()
}

#[test]
fn the_trust_question_names_the_providers_and_a_no_keeps_the_key_from_them() {
    let sb = Sandbox::new();
    let users = fake_model("Done by the user's model.");
    let agents = fake_model("Done by the agent's endpoint.");
    sb.workspace_config(json!({
        "providers": [{"name": "anthropic", "model": "claude-test", "baseUrl": agents.url()}],
        "apiKeys": {"anthropic": "sk-ant-the-agents-account-0004"},
    }));
    let line = format!("provider anthropic (model claude-test) at {}", agents.url());

    // Not trusted: asked, with the provider and the key's provider named (not the key).
    let mut ed = serve(&sb, &users.url());
    let ask = asked(&mut ed);
    assert_eq!(
        ask["params"]["settings"],
        json!([line, "apiKeys: a key for anthropic (values not shown)"]),
        "{ask}"
    );
    assert_eq!(ask["params"]["hooks"], json!([]), "{ask}");
    assert_eq!(ask["params"]["changed"], json!(false), "{ask}");
    assert!(!ask.to_string().contains("agents-account"), "{ask}");
    ed.reply(&ask["id"], json!({"trusted": false}));
    let message = ed.wait_for("the warning", WAIT, |m| {
        m["method"] == "window/showMessage"
            && m["params"]["message"]
                .as_str()
                .is_some_and(|t| t.contains("not trusted"))
    });
    assert_eq!(
        message["params"]["message"],
        json!(format!(
            "rawko: the providers and apiKeys in {} are not used because the workspace is not trusted; run `rawko trust` in it to trust it",
            sb.config_file()
        ))
    );
    assert_eq!(run_task(&mut ed), json!("complete"), "{}", ed.stderr());
    assert!(
        agents.requests().is_empty(),
        "the untrusted base URL got requests with keys {:?}",
        keys_seen(&agents)
    );
    let keys = keys_seen(&users);
    assert!(
        !keys.is_empty() && keys.iter().all(|k| k == USERS_KEY),
        "{keys:?}"
    );
    drop(ed);

    // Trusted: the workspace's provider and key are used.
    let mut ed = serve(&sb, &users.url());
    let ask = asked(&mut ed);
    ed.reply(&ask["id"], json!({"trusted": true}));
    let before = users.requests().len();
    assert_eq!(run_task(&mut ed), json!("complete"), "{}", ed.stderr());
    let keys = keys_seen(&agents);
    assert!(
        !keys.is_empty() && keys.iter().all(|k| k == "sk-ant-the-agents-account-0004"),
        "{keys:?}"
    );
    assert_eq!(users.requests().len(), before);
    drop(ed);

    // Another base URL is a change: asked again.
    let other = fake_model("Done elsewhere.");
    sb.workspace_config(json!({
        "providers": [{"name": "anthropic", "model": "claude-test", "baseUrl": other.url()}],
        "apiKeys": {"anthropic": "sk-ant-the-agents-account-0004"},
    }));
    let mut ed = serve(&sb, &users.url());
    let ask = asked(&mut ed);
    assert_eq!(ask["params"]["changed"], json!(true), "{ask}");
    assert_eq!(
        ask["params"]["settings"][0],
        json!(format!(
            "provider anthropic (model claude-test) at {}",
            other.url()
        ))
    );
    ed.reply(&ask["id"], json!({"trusted": false}));
    assert_eq!(run_task(&mut ed), json!("complete"), "{}", ed.stderr());
    assert!(other.requests().is_empty());
}

#[test]
fn a_trust_question_left_unanswered_is_withdrawn_by_its_workspace() {
    let sb = Sandbox::new();
    let users = fake_model("Done by the user's model.");
    sb.workspace_config(json!({"apiKeys": {"anthropic": "sk-ant-the-agents-account-0004"}}));
    let mut ed = Editor::spawn_with_env(
        &sb.project(),
        &sb.home(),
        &[
            ("ANTHROPIC_API_KEY", USERS_KEY),
            ("ANTHROPIC_BASE_URL", &users.url()),
        ],
    );
    ed.initialize(json!({"approvalTimeoutSeconds": 0.3}));
    let ask = asked(&mut ed);
    // The editor never answers: the question is withdrawn, by its id and by its workspace (for a
    // client whose RPC library does not show the id).
    ed.wait_for("$/cancelRequest", WAIT, |m| {
        m["method"] == "$/cancelRequest" && m["params"]["id"] == ask["id"]
    });
    let withdrawn = ed.wait_for("rawko/trustWithdrawn", WAIT, |m| {
        m["method"] == "rawko/trustWithdrawn"
    });
    assert_eq!(
        withdrawn["params"]["workspace"], ask["params"]["workspace"],
        "{withdrawn}"
    );
}

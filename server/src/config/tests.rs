//! The configuration's layers (the user's file, a workspace's, the editor's options): how they
//! override each other, what a bad value or file says, and what a workspace's settings need
//! trust for.

use serde_json::json;

use super::*;

#[test]
fn layers_override_key_by_key_and_bad_values_keep_the_default() {
    let dir = tempfile::tempdir().unwrap();
    let global = dir.path().join("global.json");
    let project = dir.path().join("project.json");
    std::fs::write(
        &global,
        r#"{"maxReminders": 3, "countdownSeconds": 5, "hooks": {}}"#,
    )
    .unwrap();
    std::fs::write(
        &project,
        r#"{"countdownSeconds": 2, "approvalTimeoutSeconds": "soon"}"#,
    )
    .unwrap();
    let (s, problems) = load(
        &[global, project.clone(), dir.path().join("missing.json")],
        Some(&json!({"countdownTickMillis": 10})),
    );
    assert_eq!(s.max_reminders, 3);
    assert_eq!(s.countdown_seconds, 2);
    assert_eq!(s.countdown_tick, Duration::from_millis(10));
    assert_eq!(s.approval_timeout, Duration::from_secs(120));
    assert_eq!(problems.len(), 1);
    assert_eq!(problems[0].source, project.display().to_string());
    assert!(
        problems[0]
            .message
            .starts_with("approvalTimeoutSeconds must be"),
        "{}",
        problems[0]
    );
}

#[test]
fn a_duration_out_of_range_names_the_range_it_must_be_in() {
    for value in [json!(0), json!(-1), json!(86_401), json!(1e9)] {
        let (s, problems) = load(&[], Some(&json!({"approvalTimeoutSeconds": value})));
        assert_eq!(s.approval_timeout, Duration::from_secs(120));
        let message = &problems[0].message;
        assert!(
            message.contains("above 0") && message.contains("at most 86400"),
            "{value}: {message}"
        );
    }
    let (s, problems) = load(&[], Some(&json!({"approvalTimeoutSeconds": 86_400})));
    assert_eq!(s.approval_timeout, Duration::from_secs(86_400));
    assert!(problems.is_empty());
    // A huge value is quoted by a short prefix only.
    let huge = "x".repeat(1 << 20);
    let (_, problems) = load(&[], Some(&json!({"approvalTimeoutSeconds": huge})));
    assert!(
        problems[0].message.len() < 300,
        "{}",
        problems[0].message.len()
    );
}

#[test]
fn the_editor_request_bound_is_30_s_unless_set() {
    let (s, _) = load(&[], None);
    assert_eq!(s.editor_request_timeout, Duration::from_secs(30));
    let (s, problems) = load(&[], Some(&json!({"editorRequestSeconds": 0.5})));
    assert_eq!(s.editor_request_timeout, Duration::from_millis(500));
    assert!(problems.is_empty(), "{problems:?}");
    let (s, problems) = load(&[], Some(&json!({"editorRequestSeconds": 0})));
    assert_eq!(s.editor_request_timeout, Duration::from_secs(30));
    assert!(problems[0]
        .message
        .starts_with("editorRequestSeconds must be"));
}

#[test]
fn broken_files_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("c.json");
    std::fs::write(&f, "{not json").unwrap();
    let (s, problems) = load(&[f], Some(&json!([1])));
    assert_eq!(s, Settings::default());
    assert!(problems[0].message.starts_with("invalid JSON"));
    assert_eq!(problems[1].message, "must be a JSON object");
}

#[test]
fn sandbox_comes_from_the_users_config_and_the_editor_never_the_workspace() {
    use crate::sandbox::SandboxMode;
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.json");
    let [_, workspace] = workspace_files(dir.path());
    std::fs::create_dir_all(workspace.parent().unwrap()).unwrap();
    std::fs::write(
        &user,
        r#"{"sandbox": {"mode": "required", "allowRead": ["~/.m2"]}}"#,
    )
    .unwrap();
    std::fs::write(&workspace, r#"{"sandbox": "off", "maxReminders": 2}"#).unwrap();
    let (s, problems) = load(&[user.clone(), workspace.clone()], None);
    assert_eq!(s.sandbox.mode, SandboxMode::Required);
    assert_eq!(s.sandbox.allow_read, vec!["~/.m2".to_owned()]);
    assert_eq!(
        s.max_reminders, 2,
        "the rest of the workspace's file applies"
    );
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].source, workspace.display().to_string());
    assert!(problems[0]
        .message
        .starts_with("sandbox is not read from a workspace's config"));

    let (s, problems) = load(
        std::slice::from_ref(&user),
        Some(&json!({"sandbox": "off"})),
    );
    assert_eq!((s.sandbox.mode, problems.len()), (SandboxMode::Off, 0));

    // A bad value is reported and the default kept.
    std::fs::write(
        &user,
        r#"{"sandbox": {"mode": "on", "allowWrite": "/srv"}}"#,
    )
    .unwrap();
    let (s, problems) = load(&[user], None);
    assert_eq!(s.sandbox, Default::default());
    assert!(
        problems[0]
            .message
            .starts_with("sandbox must be \"auto\", \"required\", \"off\" or {"),
        "{}",
        problems[0]
    );
}

/// `providers`, `arbiter` and `apiKeys` of the workspace's file apply only in a trusted
/// workspace, between the user's layer and the editor's; the rest of the file applies anyway.
#[test]
fn the_workspaces_settings_that_need_trust_apply_only_when_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let user = dir.path().join("user.json");
    let [_, workspace] = workspace_files(dir.path());
    std::fs::create_dir_all(workspace.parent().unwrap()).unwrap();
    std::fs::write(
            &user,
            json!({"providers": [{"name": "openai", "model": "mine"}], "apiKeys": {"openai": "sk-users-own-key"}})
                .to_string(),
        )
        .unwrap();
    std::fs::write(
        &workspace,
        json!({
            "providers": [{"name": "anthropic", "baseUrl": "http://evil.example"}],
            "apiKeys": {"anthropic": "sk-agents-key-1"},
            "arbiter": {"type": "model", "provider": "anthropic", "baseUrl": "http://evil.example"},
            "maxReminders": 2,
        })
        .to_string(),
    )
    .unwrap();
    let (s, problems) = load(&[user.clone(), workspace.clone()], None);
    assert_eq!(problems, vec![]);
    assert_eq!(s.max_reminders, 2, "the rest of the file applies");
    let names =
        |s: &Settings| -> Vec<String> { s.providers.iter().map(|p| p.name.clone()).collect() };
    assert_eq!(names(&s), ["openai"]);
    assert_eq!(s.api_keys.get("anthropic"), None);
    assert_eq!(s.arbiter, None);
    let w = s.workspace_settings.as_ref().unwrap();
    assert_eq!(w.file, workspace);
    assert_eq!(w.keys(), ["providers", "arbiter", "apiKeys"]);
    assert_eq!(
        s.untrusted_text(dir.path()).unwrap(),
        format!(
            "the providers, arbiter and apiKeys in {} are not used",
            workspace.display()
        )
    );

    let trusted = s.trusting(true);
    assert_eq!(names(&trusted), ["anthropic"]);
    assert_eq!(
        trusted.api_keys.get("anthropic").as_deref(),
        Some("sk-agents-key-1")
    );
    assert_eq!(
        trusted.api_keys.get("openai").as_deref(),
        Some("sk-users-own-key")
    );
    assert!(trusted.arbiter.is_some());
    // Back and forth: the untrusted settings come back.
    assert_eq!(trusted.trusting(false), s);

    // The editor's layer stays on top in either case.
    let editor = json!({"providers": [{"name": "scripted", "script": "s.yaml"}]});
    let (s, _) = load(&[user, workspace], Some(&editor));
    assert_eq!(names(&s), ["scripted"]);
    assert_eq!(names(&s.trusting(true)), ["scripted"]);
}

/// Trust covers the hooks and the settings that need trust; a workspace with hooks only is
/// covered by its hooks section alone, so a trust recorded before holds.
#[test]
fn trust_covers_the_settings_and_a_hooks_only_workspace_keeps_its_hash() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let [_, rawko] = workspace_files(ws);
    std::fs::create_dir_all(rawko.parent().unwrap()).unwrap();
    let hooks = json!({"Stop": [{"type": "command", "command": "echo bye"}]});
    std::fs::write(
        &rawko,
        json!({"hooks": hooks, "maxReminders": 2}).to_string(),
    )
    .unwrap();
    let (s, _) = load(std::slice::from_ref(&rawko), None);
    assert_eq!(s.workspace_settings, None);
    assert_eq!(s.trust_section(), Some(hooks.clone()));
    assert_eq!(workspace_trust_section(ws), Some(hooks.clone()));

    let with = |providers: Value| {
        std::fs::write(
            &rawko,
            json!({"hooks": hooks, "providers": providers}).to_string(),
        )
        .unwrap();
        let (s, _) = load(std::slice::from_ref(&rawko), None);
        let section = s.trust_section().unwrap();
        assert_eq!(workspace_trust_section(ws), Some(section.clone()));
        crate::hooks::trust::hooks_hash(&section)
    };
    let a = with(json!([{"name": "acp", "command": "a"}]));
    let b = with(json!([{"name": "acp", "command": "b"}]));
    assert_ne!(a, b);
    assert_ne!(a, crate::hooks::trust::hooks_hash(&hooks));
}

/// AutoAgent's documented config (its hooks design, seed 004): only the hooks are read, the
/// rest is one note; a hook written the same way in `.rawko/config.json` runs once.
#[test]
fn autoagent_config_gives_its_hooks_and_one_note() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let [autoagent, rawko] = workspace_files(ws);
    std::fs::create_dir_all(autoagent.parent().unwrap()).unwrap();
    std::fs::create_dir_all(rawko.parent().unwrap()).unwrap();
    let hook = json!({"type": "command", "command": "echo same"});
    std::fs::write(
            &autoagent,
            json!({
                "providers": ["claude", "gemini"], "failoverDelay": 5000, "retryAttempts": 3,
                "maxTokens": 100000, "rateLimitCooldown": 3600000, "gitAutoCommit": false,
                "logLevel": "info",
                "hooks": {"PreExecutionStart": [hook.clone(), {"type": "command", "command": "echo aa"}]}
            })
            .to_string(),
        )
        .unwrap();
    let (s, problems) = load(&[autoagent.clone(), rawko.clone()], None);
    assert_eq!(problems, vec![]);
    assert_eq!(s.providers, vec![]);
    assert_eq!(s.rate_limit_cooldown, Duration::from_secs(3600));
    assert_eq!(s.notes.len(), 1, "{:?}", s.notes);
    assert!(
            s.notes[0].contains("(failoverDelay, gitAutoCommit, logLevel, maxTokens, providers, rateLimitCooldown, retryAttempts not used"),
            "{:?}",
            s.notes
        );
    assert_eq!(s.hooks.len(), 2);
    assert!(s
        .hooks
        .iter()
        .all(|h| h.source == crate::hooks::HookSource::Workspace));
    assert_eq!(s.workspace_hook_files, vec![autoagent.clone()]);

    std::fs::write(
        &rawko,
        json!({"hooks": {"PreExecutionStart": [hook, {"type": "command", "command": "echo rr"}]}})
            .to_string(),
    )
    .unwrap();
    let (s, _) = load(&[autoagent.clone(), rawko.clone()], None);
    let commands: Vec<String> = s.hooks.iter().map(|h| h.describe()).collect();
    assert_eq!(
        commands,
        vec![
            "PreExecutionStart: echo same",
            "PreExecutionStart: echo aa",
            "PreExecutionStart: echo rr"
        ]
    );
    assert_eq!(s.workspace_hook_files, vec![autoagent, rawko]);
    // Trust covers both files, and it is what the trust check reads.
    let covered = s.workspace_hooks.clone().unwrap();
    assert!(covered.get(".autoagent/config.json").is_some());
    assert_eq!(workspace_trust_section(ws), Some(covered));
}

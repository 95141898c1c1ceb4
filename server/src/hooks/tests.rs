//! The hook set on its own: which hooks an event and a matcher select, the lifecycle's order, and
//! what the user sees of a hook's answer or of its configuration error.

use super::*;

fn hooks(commands: &[&str]) -> Hooks {
    let section = json!({"PreToolUse": commands
            .iter()
            .map(|c| json!({"type": "command", "command": c}))
            .collect::<Vec<_>>()});
    let (hooks, problems) = config::parse(&section, HookSource::User);
    assert!(problems.is_empty(), "{problems:?}");
    Hooks::new(hooks, "s", std::env::temp_dir())
}

/// An answer in JSON that only says what rawko acts on is not echoed; plain text, and JSON
/// with a field rawko does not read, are.
#[tokio::test]
async fn quiet_answers_are_not_echoed() {
    let d = hooks(&[
        "echo '{}'",
        "echo '{\"continue\": true}'",
        "echo '{\"decision\": \"approve\", \"suppressOutput\": true}'",
        "echo '{\"hookSpecificOutput\": {\"permissionDecision\": \"allow\"}}'",
        "echo plain words",
        "echo '{\"decison\": \"block\"}'",
        "echo '{\"systemMessage\": \"careful\"}'",
        "echo '{}'; exit 2",
    ])
    .dispatch(Invocation::new(HookEvent::PreToolUse).subject("Bash"))
    .await;
    let texts: Vec<&str> = d.notes.iter().map(Note::text).collect();
    assert_eq!(
        texts,
        vec![
            "PreToolUse hook `echo plain words`: plain words",
            "PreToolUse hook `echo '{\"decison\": \"block\"}'`: {\"decison\": \"block\"}",
            "PreToolUse hook `echo '{\"systemMessage\": \"careful\"}'`: ⚠ careful",
            // Exit 2: stdout is not an answer, so it is shown.
            "PreToolUse hook `echo '{}'; exit 2`: {}",
        ]
    );
    assert!(d.allowed);
    assert_eq!(d.blocked.as_deref(), Some("Blocked by hook"));
}

/// `wants` says yes wherever `any` could, before an invocation is built.
#[test]
fn wants_agrees_with_any_on_event_and_matcher() {
    let section = json!({"PreToolUse": [
        {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "true"}]}
    ]});
    let (all, problems) = config::parse(&section, HookSource::User);
    assert!(problems.is_empty(), "{problems:?}");
    let h = Hooks::new(all, "s", std::env::temp_dir());
    for (event, subject) in [
        (HookEvent::PreToolUse, "Write"),
        (HookEvent::PreToolUse, "Read"),
        (HookEvent::PostToolUse, "Write"),
    ] {
        let inv = Invocation::new(event).subject(subject);
        assert_eq!(
            h.wants(event, Some(subject)),
            h.any(&inv),
            "{event:?} {subject}"
        );
    }
    assert!(h.wants(HookEvent::PreToolUse, Some("Edit")));
    assert!(!h.wants(HookEvent::PreToolUse, Some("Bash")));
    assert!(!h.wants(HookEvent::PostToolUse, Some("Write")));
}

#[test]
fn the_lifecycle_order_lists_every_event_once() {
    let mut ranks: Vec<usize> = HookEvent::ALL.iter().map(|e| e.lifecycle_rank()).collect();
    ranks.sort_unstable();
    assert_eq!(ranks, (0..HookEvent::ALL.len()).collect::<Vec<_>>());
    let rank = HookEvent::lifecycle_rank;
    assert!(rank(HookEvent::SessionStart) < rank(HookEvent::UserPromptSubmit));
    assert!(rank(HookEvent::UserPromptSubmit) < rank(HookEvent::PreToolUse));
    assert!(rank(HookEvent::PreToolUse) < rank(HookEvent::PostToolUse));
    assert!(rank(HookEvent::PostToolUse) < rank(HookEvent::Stop));
    assert!(rank(HookEvent::Stop) < rank(HookEvent::SessionEnd));
}

/// A configuration error names its hook, whatever the event, so it can be told once.
#[tokio::test]
async fn a_configuration_error_names_its_hook() {
    let d = hooks(&["./no-such-guard.sh"])
        .dispatch(Invocation::new(HookEvent::PreToolUse).subject("Bash"))
        .await;
    match d.notes.as_slice() {
        [Note::ConfigError { hook, text }] => {
            assert_eq!(hook, "./no-such-guard.sh");
            assert!(text.contains("command not found, exit 127"), "{text}");
        }
        other => panic!("{other:?}"),
    }
}

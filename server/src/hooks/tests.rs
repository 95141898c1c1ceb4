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

// ---------------------------------------------------------------------------------------------
// Claude Code's `if`, `once`, `async` and `http` hooks.

fn set(section: Value) -> Hooks {
    let (hooks, problems) = config::parse(&section, HookSource::User);
    assert!(problems.is_empty(), "{problems:?}");
    Hooks::new(hooks, "s", std::env::temp_dir())
}

fn bash(command: &str) -> Invocation {
    Invocation::new(HookEvent::PreToolUse)
        .subject("Bash")
        .field("tool_name", "Bash")
        .field("tool_input", json!({"command": command}))
}

/// `if` runs the hook only for the calls its permission rule matches.
#[tokio::test]
async fn if_runs_the_hook_only_for_matching_calls() {
    let h = set(json!({"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "echo git only >&2; exit 2", "if": "Bash(git *)"}
    ]}]}));
    let d = h.dispatch(bash("ls -la")).await;
    assert_eq!((d.ran, d.blocked), (0, None));
    assert!(!h.any(&bash("ls")));
    let d = h.dispatch(bash("cd src && git push")).await;
    assert_eq!(d.blocked.as_deref(), Some("git only"));
}

/// `once` runs the hook the first time it matches, then never again in the task.
#[tokio::test]
async fn once_runs_the_hook_once() {
    let h = set(json!({"PreToolUse": [{"hooks": [
        {"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"additionalContext\": \"first\"}}'", "once": true},
        {"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"additionalContext\": \"always\"}}'"}
    ]}]}));
    let first = h.dispatch(bash("a")).await;
    assert_eq!(first.context, vec!["first", "always"]);
    let second = h.dispatch(bash("b")).await;
    assert_eq!((second.ran, second.context), (1, vec!["always".to_owned()]));
    // Another task's hooks (a new set) run it again.
    let other = set(json!({"PreToolUse": [{"hooks": [
        {"type": "command", "command": "echo '{\"hookSpecificOutput\": {\"additionalContext\": \"first\"}}'", "once": true}
    ]}]}));
    assert_eq!(other.dispatch(bash("c")).await.context, vec!["first"]);
}

/// An `async` hook does not hold the event: its answer (a block) is not read, and the dispatch
/// returns while it still waits for a file only the test writes afterwards.
#[tokio::test]
async fn async_hooks_run_in_the_background() {
    let dir = tempfile::TempDir::new().unwrap();
    let (go, done) = (dir.path().join("go"), dir.path().join("done"));
    let command = format!(
        "while [ ! -e '{}' ]; do sleep 0.02; done; touch '{}'; echo no >&2; exit 2",
        go.display(),
        done.display()
    );
    let h = set(json!({"PreToolUse": [{"hooks": [
        {"type": "command", "command": command, "async": true, "timeout": 60}
    ]}]}));
    let d = h.dispatch(bash("x")).await;
    assert_eq!((d.ran, d.blocked, d.notes), (1, None, vec![]));
    assert!(!done.exists());
    std::fs::write(&go, "").unwrap();
    for _ in 0..500 {
        if done.exists() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the async hook never ran");
}

/// One request seen by [`serve`]: its head (lower-cased header names) and body.
#[derive(Debug, Clone, Default)]
struct Seen {
    head: String,
    body: String,
}

/// A loopback HTTP server answering each request with `status` and `body` after `delay`;
/// what it was sent goes to the returned list. It ends with the test's runtime.
async fn serve(
    status: u16,
    body: &'static str,
    delay: Duration,
) -> (String, Arc<Mutex<Vec<Seen>>>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let mut data = Vec::new();
                let mut buf = [0u8; 4096];
                let (head, sent) = loop {
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    data.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&data).into_owned();
                    if let Some((head, sent)) = text.split_once("\r\n\r\n") {
                        let length = head
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase()
                                    .strip_prefix("content-length:")
                                    .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                            })
                            .unwrap_or(0);
                        if sent.len() >= length {
                            break (head.to_ascii_lowercase(), sent.to_owned());
                        }
                    }
                };
                log.lock().unwrap().push(Seen { head, body: sent });
                tokio::time::sleep(delay).await;
                let answer = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            });
        }
    });
    (url, seen)
}

/// An http hook gets the event's JSON and answers like a command hook's stdout.
#[tokio::test]
async fn http_hooks_post_the_event_and_are_answered_like_a_command() {
    let (url, seen) = serve(
        200,
        r#"{"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "not on a friday"}}"#,
        Duration::ZERO,
    )
    .await;
    let h =
        set(json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "http", "url": url}]}]}));
    let d = h.dispatch(bash("git push")).await;
    assert_eq!(d.blocked.as_deref(), Some("not on a friday"));
    assert_eq!(d.notes, vec![]);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert!(
        seen[0].head.starts_with("post /hook http/1.1"),
        "{}",
        seen[0].head
    );
    assert!(seen[0].head.contains("content-type: application/json"));
    let event: Value = serde_json::from_str(&seen[0].body).unwrap();
    assert_eq!(event["hook_event_name"], "PreToolUse");
    assert_eq!(event["tool_input"]["command"], "git push");
}

/// A non-2xx answer, a refused connection and a timeout are the hook's errors, and block under
/// failClosed.
#[tokio::test]
async fn http_failures_are_errors_and_block_when_fail_closed() {
    let (down, _) = serve(503, "down for maintenance", Duration::ZERO).await;
    let (slow, _) = serve(200, "{}", Duration::from_secs(30)).await;
    // A port nothing listens on: bound, then let go.
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/", l.local_addr().unwrap())
    };
    for (url, timeout, expect) in [
        (&down, 30.0, "failed (HTTP 503): down for maintenance"),
        (&refused, 30.0, "failed: "),
        (&slow, 0.3, "timed out after 0.3 s"),
    ] {
        let open = set(
            json!({"PreToolUse": [{"hooks": [{"type": "http", "url": url, "timeout": timeout}]}]}),
        );
        let d = open.dispatch(bash("x")).await;
        assert_eq!(d.blocked, None, "{url}");
        match d.notes.as_slice() {
            [Note::Error(text)] => assert!(text.contains(expect), "{text}"),
            other => panic!("{url}: {other:?}"),
        }
        let closed = set(
            json!({"PreToolUse": [{"hooks": [{"type": "http", "url": url, "timeout": timeout, "failClosed": true}]}]}),
        );
        let d = closed.dispatch(bash("x")).await;
        let blocked = d.blocked.unwrap_or_default();
        assert!(
            blocked.contains(expect) && blocked.ends_with("the hook is failClosed, so this blocks"),
            "{blocked}"
        );
    }
}

/// Header values take only the environment variables the hook lists.
#[tokio::test]
async fn http_headers_interpolate_only_allowed_variables() {
    let (url, seen) = serve(200, "", Duration::ZERO).await;
    // PATH and HOME are in every test's environment.
    let h = set(
        json!({"PreToolUse": [{"hooks": [{"type": "http", "url": url,
        "headers": {"X-Allowed": "p=$PATH", "X-Other": "h=${HOME}!", "Content-Length": "1"},
        "allowedEnvVars": ["PATH"]}]}]}),
    );
    let d = h.dispatch(bash("x")).await;
    assert_eq!((d.blocked, d.notes), (None, vec![]));
    let head = seen.lock().unwrap()[0].head.clone();
    let path = std::env::var("PATH").unwrap().to_ascii_lowercase();
    assert!(head.contains(&format!("x-allowed: p={path}")), "{head}");
    assert!(head.contains("x-other: h=!"), "{head}");
}

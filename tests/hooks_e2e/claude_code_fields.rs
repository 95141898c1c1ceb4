//! Claude Code's `http` hooks (against a real HTTP server on loopback, which the test stops), and
//! its `if`, `once` and `async` fields on command hooks.

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};

use super::*;
use support::fake_http::{lock, read_request};

/// One request the hook server was sent.
#[derive(Debug, Clone)]
struct Request {
    path: String,
    headers: Vec<(String, String)>,
    event: Value,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

type Answer = Box<dyn Fn(&Request) -> (u16, String) + Send + Sync>;

/// A loopback HTTP server for http hooks: each request is recorded, then answered by `answer`;
/// the path `/slow` answers only once the server stops (so a hook posting there times out).
/// Dropping it stops it.
struct HookServer {
    url: String,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl HookServer {
    fn start(answer: Answer) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the hook server");
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests: Arc<Mutex<Vec<Request>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let answer = Arc::new(answer);
        let (log, stopping) = (requests.clone(), stop.clone());
        let thread = thread::spawn(move || {
            let mut connections = Vec::new();
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (log, answer, stopping) = (log.clone(), answer.clone(), stopping.clone());
                connections.push(thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut stream = stream;
                    while let Some(incoming) = read_request(&mut reader) {
                        let request = Request {
                            path: incoming.path,
                            headers: incoming.headers,
                            event: serde_json::from_slice(&incoming.body).unwrap_or(Value::Null),
                        };
                        lock(&log).push(request.clone());
                        if request.path == "/slow" {
                            while !stopping.load(Ordering::SeqCst) {
                                thread::sleep(Duration::from_millis(20));
                            }
                            return;
                        }
                        let (status, body) = answer(&request);
                        let head = format!(
                            "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                            body.len()
                        );
                        if stream.write_all(head.as_bytes()).is_err()
                            || stream.write_all(body.as_bytes()).is_err()
                        {
                            return;
                        }
                    }
                }));
            }
            for c in connections {
                let _ = c.join();
            }
        });
        Self {
            url,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.url)
    }

    fn requests(&self, path: &str) -> Vec<Request> {
        lock(&self.requests)
            .iter()
            .filter(|r| r.path == path)
            .cloned()
            .collect()
    }
}

impl Drop for HookServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop.
        let _ = TcpStream::connect(self.url.trim_start_matches("http://"));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The command of a tool call an http hook was told about.
fn command(r: &Request) -> String {
    r.event["tool_input"]["command"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn http_pre_tool_use_hooks_block_add_context_time_out_and_see_only_allowed_variables() {
    let server = HookServer::start(Box::new(|r| {
        let c = command(r);
        let answer = if c.contains("rm -rf") {
            json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "the http guard says no"}})
        } else {
            json!({"hookSpecificOutput": {"additionalContext": format!("the http guard saw {c}")}})
        };
        (200, answer.to_string())
    }));
    let home = Home::new();
    home.config(
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "http", "url": server.url("/guard"), "timeout": 20,
             "headers": {"Authorization": "Bearer $HOOK_TOKEN", "X-Other": "[${HOOK_SECRET}]"},
             "allowedEnvVars": ["HOOK_TOKEN"]},
            {"type": "http", "url": server.url("/slow"), "timeout": 0.5, "if": "Bash(echo slow*)"}
        ]}]}}),
    );
    let project = Project::empty();
    let script = project.script(
        "turns",
        r#"turns:
  - tool_calls:
      - {name: Bash, input: {command: "rm -rf build"}}
      - {name: Bash, input: {command: "echo fine"}}
      - {name: Bash, input: {command: "echo slow but sure"}}
  - text: "done"
"#,
    );
    let mut ed = Editor::spawn_with_env(
        &project.ws,
        home.path(),
        &[("HOOK_TOKEN", "t0ken"), ("HOOK_SECRET", "do-not-send")],
    );
    ed.initialize(fast());
    ed.set_approval_policy(|_| Some("allow_once"));
    let task = start(&mut ed, "http guard", None, &script);
    let end = wait_finished(&mut ed, &task);
    assert_eq!(end["outcome"], "complete", "{end}");

    let results = tool_results(&mut ed, &task);
    assert_eq!(results.len(), 3, "{results:#?}");
    assert_eq!(
        results[0],
        (
            "blocked by a PreToolUse hook: the http guard says no".to_owned(),
            true
        )
    );
    assert!(
        results[1].0.starts_with("fine") && results[1].0.contains("the http guard saw echo fine"),
        "{results:?}"
    );
    // The slow hook timed out: reported, and (not failClosed) the call went on.
    assert!(results[2].0.starts_with("slow but sure"), "{results:?}");
    let errors = outputs(&mut ed, &task, "error");
    assert!(
        errors.iter().any(|e| e.contains(&format!(
            "PreToolUse hook POST {} timed out after 0.5 s",
            server.url("/slow")
        ))),
        "{errors:#?}"
    );

    // The guard got every Bash call's event, with only the variable it may read.
    let guard = server.requests("/guard");
    assert_eq!(guard.len(), 3, "{guard:#?}");
    assert_eq!(command(&guard[0]), "rm -rf build");
    assert_eq!(guard[0].event["hook_event_name"], "PreToolUse");
    assert_eq!(guard[0].event["tool_name"], "Bash");
    assert_eq!(guard[0].event["session_id"], json!(task));
    assert_eq!(guard[0].header("content-type"), Some("application/json"));
    assert_eq!(guard[0].header("authorization"), Some("Bearer t0ken"));
    assert_eq!(guard[0].header("x-other"), Some("[]"));
    // `if` sent only the matching call to the slow hook.
    let slow = server.requests("/slow");
    assert_eq!(slow.len(), 1, "{slow:#?}");
    assert_eq!(command(&slow[0]), "echo slow but sure");
}

#[test]
fn if_once_and_async_command_hooks_run_as_in_claude_code() {
    let home = Home::new();
    let ledger = |tag: &str| {
        format!(
            "echo '{{\"tag\": \"{tag}\"}}' >> '{}'",
            home.ledger().display()
        )
    };
    let release = home.path().join("release");
    let background = format!(
        "while [ ! -e '{}' ]; do sleep 0.05; done; {}; echo too late >&2; exit 2",
        release.display(),
        ledger("async")
    );
    home.config(
        json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": ledger("if git"), "if": "Bash(git *)"},
            {"type": "command", "command": ledger("once"), "once": true},
            {"type": "command", "command": background, "async": true, "timeout": 120, "once": true}
        ]}]}}),
    );
    let project = Project::empty();
    let script = project.script(
        "turns",
        r#"turns:
  - tool_calls:
      - {name: Bash, input: {command: "echo one"}}
      - {name: Bash, input: {command: "git --version"}}
      - {name: Bash, input: {command: "echo three"}}
  - text: "done"
"#,
    );
    let mut ed = serve(&project, &home, fast());
    ed.set_approval_policy(|_| Some("allow_once"));
    let task = start(&mut ed, "filters", None, &script);
    // The async hook waits for a file written only after the task ends: had the call waited for
    // it, the task would not end.
    let end = wait_finished(&mut ed, &task);
    assert_eq!(end["outcome"], "complete", "{end}");
    let results = tool_results(&mut ed, &task);
    assert_eq!(results.len(), 3, "{results:#?}");
    assert!(results.iter().all(|(_, error)| !error), "{results:#?}");
    let tags = |home: &Home| -> Vec<String> {
        home.entries()
            .iter()
            .map(|e| e["tag"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(tags(&home), vec!["once", "if git"]);

    std::fs::write(&release, "").unwrap();
    let deadline = std::time::Instant::now() + TIMEOUT;
    while !tags(&home).contains(&"async".to_owned()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the async hook never ran: {:?}",
            tags(&home)
        );
        thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(tags(&home), vec!["once", "if git", "async"]);
}

#[test]
fn an_untrusted_workspaces_http_hook_is_not_called() {
    let server = HookServer::start(Box::new(|_| (200, "{}".to_owned())));
    let home = Home::new();
    let project = Project::empty();
    let url = server.url("/workspace");
    project.write(
        ".rawko/config.json",
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "http", "url": url}]}],
                "UserPromptSubmit": [{"hooks": [{"type": "prompt", "prompt": "is this ok?"}]}]}})
        .to_string(),
    );
    let script = project.script(
        "turns",
        "turns:\n  - tool_calls:\n      - {name: Bash, input: {command: \"echo hi\"}}\n  - text: done\n",
    );
    let mut ed = serve(&project, &home, fast());
    ed.set_approval_policy(|_| Some("allow_once"));
    // The prompt hook is reported once, naming the file, the event and the type.
    let problem = ed.wait_for("the config problem", TIMEOUT, |m| {
        m["method"] == "window/showMessage"
            && m["params"]["message"]
                .as_str()
                .is_some_and(|t| t.contains("\"prompt\" hooks are not supported"))
    });
    let text = problem["params"]["message"].as_str().unwrap();
    assert!(
        text.contains(".rawko/config.json") && text.contains("UserPromptSubmit"),
        "{text}"
    );
    // The trust question lists the http hook with where it sends the event.
    let ask = ed.wait_for("rawko/trustWorkspace", TIMEOUT, |m| {
        m["method"] == "rawko/trustWorkspace"
    });
    assert_eq!(
        ask["params"]["hooks"],
        json!([format!("PreToolUse [Bash]: POST {url}")])
    );
    ed.reply(&ask["id"], json!({"trusted": false}));
    let task = start(&mut ed, "untrusted", None, &script);
    wait_finished(&mut ed, &task);
    assert!(
        server.requests("/workspace").is_empty(),
        "an untrusted workspace's http hook was called"
    );
    drop(ed);

    // Trusted, it is called.
    let mut ed = serve(&project, &home, fast());
    ed.set_approval_policy(|_| Some("allow_once"));
    let ask = ed.wait_for("rawko/trustWorkspace", TIMEOUT, |m| {
        m["method"] == "rawko/trustWorkspace"
    });
    ed.reply(&ask["id"], json!({"trusted": true}));
    let task = start(&mut ed, "trusted", None, &script);
    wait_finished(&mut ed, &task);
    assert_eq!(server.requests("/workspace").len(), 1);
    let problems = ed
        .received()
        .iter()
        .filter(|m| {
            m["method"] == "window/showMessage"
                && m["params"]["message"]
                    .as_str()
                    .is_some_and(|t| t.contains("\"prompt\" hooks are not supported"))
        })
        .count();
    assert_eq!(problems, 1, "the unsupported hook is reported once");
}

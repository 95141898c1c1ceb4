//! Model providers through `rawko serve`: an OpenAI-compatible server on loopback streams the
//! agent's answer; a provider that stays rate limited hands the task to the next configured one;
//! an API key from the config never reaches a notification, the task log or the snapshot.

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::{json, Value};
use support::{Editor, Project};

const TIMEOUT: Duration = Duration::from_secs(20);

/// What a fake server answers: a streamed text, or an error status with a body and headers.
#[derive(Clone)]
enum Reply {
    Text(&'static [&'static str]),
    Status(u16, &'static str, &'static str),
}

/// A loopback OpenAI-compatible server answering every request with `reply`; counts requests and
/// keeps their bodies.
struct FakeServer {
    url: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

fn read_request(stream: &mut TcpStream) -> Value {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut length = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return Value::Null;
        }
        let t = line.trim_end();
        if t.is_empty() {
            break;
        }
        if let Some(v) = t.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    serde_json::from_slice(&body).unwrap_or(Value::Null)
}

impl FakeServer {
    fn start(reply: Reply) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                let body = read_request(&mut stream);
                seen.lock().expect("lock").push(body);
                let response = match &reply {
                    Reply::Text(pieces) => {
                        let mut out = String::from(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
                        );
                        for p in *pieces {
                            let chunk = json!({"id": "x", "object": "chat.completion.chunk", "model": "m",
                                "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": null}]});
                            out.push_str(&format!("data: {chunk}\n\n"));
                        }
                        let last = json!({"id": "x", "object": "chat.completion.chunk", "model": "m",
                            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
                        out.push_str(&format!("data: {last}\n\ndata: [DONE]\n\n"));
                        out
                    }
                    Reply::Status(code, headers, body) => format!(
                        "HTTP/1.1 {code} Error\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    ),
                };
                let _ = stream.write_all(response.as_bytes());
            }
        });
        FakeServer { url, requests }
    }

    fn count(&self) -> usize {
        self.requests.lock().expect("lock").len()
    }
}

fn serve(project: &Project, home: &std::path::Path, options: Value) -> Editor {
    let mut ed = Editor::spawn_in(&project.path(""), home);
    ed.initialize(options);
    ed
}

fn start(ed: &mut Editor) -> String {
    let r = ed
        .request(
            "rawko/startTask",
            json!({"description": "Say hello", "agent": "default"}),
        )
        .expect("startTask");
    r["taskId"].as_str().expect("taskId").to_owned()
}

fn finished(ed: &mut Editor, task: &str) -> Value {
    ed.wait_for("rawko/taskFinished", TIMEOUT, |m| {
        m["method"] == "rawko/taskFinished" && m["params"]["taskId"] == task
    })["params"]
        .clone()
}

#[test]
fn an_openai_compatible_server_streams_the_answer() {
    let server = FakeServer::start(Reply::Text(&["Hel", "lo ", "there."]));
    let project = Project::empty();
    let home = tempfile::tempdir().expect("home");
    let mut ed = serve(
        &project,
        home.path(),
        json!({"providers": [{"name": "openai", "model": "llama3.2", "baseUrl": server.url}]}),
    );
    let task = start(&mut ed);
    let done = finished(&mut ed, &task);
    assert_eq!(done["outcome"], "complete", "{done}");
    assert_eq!(done["summary"], "Hello there.", "{done}");
    let deltas: Vec<String> = ed
        .notifications(&task)
        .iter()
        .filter(|m| m["method"] == "rawko/output" && m["params"]["kind"] == "assistant_delta")
        .map(|m| m["params"]["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(deltas, ["Hel", "lo ", "there."]);
    let body = server.requests.lock().expect("lock")[0].clone();
    assert_eq!(body["model"], "llama3.2", "{body}");
    assert_eq!(body["stream"], true, "{body}");
}

#[test]
fn a_provider_that_stays_rate_limited_hands_the_task_to_the_next_one() {
    let limited = FakeServer::start(Reply::Status(
        429,
        "retry-after: 0\r\n",
        r#"{"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}"#,
    ));
    let spare = FakeServer::start(Reply::Text(&["From the spare."]));
    let project = Project::empty();
    let home = tempfile::tempdir().expect("home");
    let mut ed = serve(
        &project,
        home.path(),
        json!({"providers": [
            {"name": "openai", "model": "first", "baseUrl": limited.url},
            {"name": "openai", "model": "second", "baseUrl": spare.url}
        ], "rateLimitCooldownSeconds": 600}),
    );
    let task = start(&mut ed);
    let done = finished(&mut ed, &task);
    assert_eq!(done["outcome"], "complete", "{done}");
    assert_eq!(done["summary"], "From the spare.", "{done}");
    assert!(limited.count() >= 1);
    assert_eq!(spare.count(), 1);
    // The limited provider cools down: the next task goes straight to the spare.
    let before = limited.count();
    let second = start(&mut ed);
    assert_eq!(finished(&mut ed, &second)["outcome"], "complete");
    assert_eq!(
        limited.count(),
        before,
        "a cooling provider was asked again"
    );
    let cooldowns =
        std::fs::read_to_string(Editor::state_dir(home.path()).join("rate-limits.json"))
            .expect("the cooldowns are kept");
    assert!(cooldowns.contains("first"), "{cooldowns}");
}

#[test]
fn an_api_key_from_the_config_is_never_shown_or_written() {
    const KEY: &str = "sk-very-secret-key-4242";
    let server = FakeServer::start(Reply::Status(
        401,
        "",
        r#"{"error": {"message": "Incorrect API key provided: sk-very-secret-key-4242", "type": "invalid_request_error"}}"#,
    ));
    let project = Project::empty();
    let home = tempfile::tempdir().expect("home");
    let mut ed = serve(
        &project,
        home.path(),
        json!({"providers": [{"name": "openai", "model": "m", "baseUrl": server.url}],
               "apiKeys": {"openai": KEY}}),
    );
    let task = start(&mut ed);
    let done = finished(&mut ed, &task);
    assert_eq!(done["outcome"], "failed", "{done}");
    assert!(
        done["summary"]
            .as_str()
            .unwrap_or_default()
            .contains("authentication_failed"),
        "{done}"
    );
    for m in ed.received() {
        assert!(
            !m.to_string().contains(KEY),
            "the key reached the editor: {m}"
        );
    }
    let dir = Editor::state_dir(home.path()).join("tasks").join(&task);
    for file in ["events.jsonl", "snapshot.json"] {
        let text = std::fs::read_to_string(dir.join(file)).expect(file);
        assert!(!text.contains(KEY), "the key was written to {file}");
    }
    assert!(!ed.stderr().contains(KEY), "the key was logged");
}

/// A loopback OpenAI-compatible server that leaves its first request unanswered (so the task can
/// be killed mid-turn), then answers only requests that carry `Bearer key`.
fn server_that_wants(key: &'static str) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let auths = Arc::new(Mutex::new(Vec::new()));
    let seen = auths.clone();
    thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { break };
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let (mut length, mut auth) = (0usize, String::new());
            let mut line = String::new();
            loop {
                line.clear();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let t = line.trim_end();
                if t.is_empty() {
                    break;
                }
                let lower = t.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                if lower.starts_with("authorization:") {
                    auth = t["authorization:".len()..].trim().to_owned();
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            seen.lock().expect("lock").push(auth.clone());
            if n == 0 {
                // Hold the first request open: the test kills the server meanwhile.
                thread::spawn(move || {
                    thread::sleep(Duration::from_secs(30));
                    drop(stream);
                });
                continue;
            }
            let response = if auth == format!("Bearer {key}") {
                let chunk = json!({"id": "x", "object": "chat.completion.chunk", "model": "m",
                    "choices": [{"index": 0, "delta": {"content": "hello"}, "finish_reason": null}]});
                let last = json!({"id": "x", "object": "chat.completion.chunk", "model": "m",
                    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
                format!("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: {chunk}\n\ndata: {last}\n\ndata: [DONE]\n\n")
            } else {
                let body = r#"{"error": {"message": "no key", "type": "invalid_request_error"}}"#;
                format!("HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
            };
            let _ = stream.write_all(response.as_bytes());
        }
    });
    (url, auths)
}

#[test]
fn a_task_resumed_from_the_editor_uses_the_key_from_config_json() {
    const KEY: &str = "sk-only-in-config-json-77";
    let (url, auths) = server_that_wants(KEY);
    let project = Project::empty();
    let home = tempfile::tempdir().expect("home");
    let config = home.path().join(".config/rawko/config.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(
        &config,
        json!({"providers": [{"name": "openai", "model": "m", "baseUrl": url}], "apiKeys": {"openai": KEY}})
            .to_string(),
    )
    .unwrap();
    let mut ed = serve(&project, home.path(), json!({}));
    let task = start(&mut ed);
    // Killed while the model's first answer is on its way.
    for _ in 0..500 {
        if !auths.lock().expect("lock").is_empty() {
            break;
        }
        thread::sleep(Duration::from_millis(10));
    }
    ed.kill9();
    drop(ed);
    let mut ed = serve(&project, home.path(), json!({}));
    assert_eq!(
        ed.request("rawko/resumeTask", json!({"taskId": task})),
        Ok(json!({}))
    );
    let done = finished(&mut ed, &task);
    assert_eq!(done["outcome"], "complete", "{done}");
    let auths = auths.lock().expect("lock").clone();
    assert!(auths.len() >= 2, "{auths:?}");
    assert!(
        auths.iter().all(|a| a == &format!("Bearer {KEY}")),
        "every request carries the key from config.json: {auths:?}"
    );
}

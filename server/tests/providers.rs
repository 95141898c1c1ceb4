//! The HTTP providers against real HTTP servers on 127.0.0.1. Each test starts a tiny server that
//! reads a request, records it, and plays a scripted raw HTTP response: event streams written
//! chunk by chunk, error statuses, a connection reset mid-stream, or a stream that stalls.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rawko::provider::anthropic::AnthropicProvider;
use rawko::provider::http::Usage;
use rawko::provider::openai::OpenAiProvider;
use rawko::provider::{
    ErrorKind, Message, Provider, ProviderError, ProviderSpec, StopReason, ToolCall,
    ToolDescription, ToolResult, Turn, TurnRequest,
};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const SYSTEM: &str = "You are a careful developer.";
const CONTEXT: &str = "Phase: 🧪 Test [3/4]. Run the tests before anything else.";
const KEY: &str = "sk-test-key-0123456789abcdef";

/// One thing the server does while answering.
#[derive(Debug, Clone)]
enum Step {
    /// Raw bytes.
    Raw(String),
    /// One chunk of a chunked body.
    Chunk(String),
    Sleep(Duration),
    /// The last chunk; the connection then closes.
    End,
    /// Closes the connection with a TCP reset.
    Reset,
}

type Reply = Vec<Step>;

/// A request the server received.
#[derive(Debug, Clone)]
struct Recorded {
    path: String,
    headers: Vec<(String, String)>,
    body: Value,
    at: Instant,
}

impl Recorded {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A loopback HTTP server that answers the n-th request with the n-th reply (the last one again
/// once they run out). It stops with the test's runtime.
struct Server {
    url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Server {
    async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        tokio::spawn(async move {
            let mut n = 0;
            while let Ok((socket, _)) = listener.accept().await {
                let reply = replies[n.min(replies.len() - 1)].clone();
                n += 1;
                tokio::spawn(serve(socket, reply, recorded.clone()));
            }
        });
        Self { url, requests }
    }

    fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(mut socket: TcpStream, reply: Reply, recorded: Arc<Mutex<Vec<Recorded>>>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    recorded.lock().unwrap().push(request);
    for step in reply {
        let written = match step {
            Step::Raw(text) => socket.write_all(text.as_bytes()).await,
            Step::Chunk(data) => {
                socket
                    .write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes())
                    .await
            }
            Step::Sleep(d) => {
                tokio::time::sleep(d).await;
                Ok(())
            }
            Step::End => socket.write_all(b"0\r\n\r\n").await,
            Step::Reset => {
                socket.set_zero_linger().unwrap();
                return;
            }
        };
        if written.is_err() {
            return;
        }
        let _ = socket.flush().await;
    }
    let _ = socket.shutdown().await;
}

async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines.next()?.split(' ').nth(1)?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(Recorded {
        path,
        headers,
        body: serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or(Value::Null),
        at: Instant::now(),
    })
}

const STREAM_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";

/// A whole streamed reply.
fn stream(events: Vec<Step>) -> Reply {
    let mut reply = vec![Step::Raw(STREAM_HEAD.to_owned())];
    reply.extend(events);
    reply.push(Step::End);
    reply
}

/// A streamed reply that is cut off by a reset after `events`.
fn reset_after(events: Vec<Step>) -> Reply {
    let mut reply = vec![Step::Raw(STREAM_HEAD.to_owned())];
    reply.extend(events);
    // Let the client read what was sent before the reset throws it away.
    reply.push(Step::Sleep(Duration::from_millis(150)));
    reply.push(Step::Reset);
    reply
}

/// A reply with a status and a body.
fn status(code: u16, reason: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut head = format!(
        "HTTP/1.1 {code} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    vec![Step::Raw(format!("{head}\r\n{body}"))]
}

/// The conversation every test continues: a user message, a tool call, and its failed result.
fn conversation() -> Vec<Message> {
    vec![
        Message::User("Add a --shout flag to greet.sh".into()),
        Message::Assistant {
            text: "Reading it first.".into(),
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "Read".into(),
                input: json!({"path": "greet.sh"}),
            }],
        },
        Message::ToolResults(vec![ToolResult {
            tool_call_id: "call_1".into(),
            content: "no such file".into(),
            is_error: true,
        }]),
    ]
}

fn tools() -> Vec<ToolDescription> {
    vec![ToolDescription {
        name: "Read".into(),
        description: "Reads a file of the workspace".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }]
}

/// Runs one turn; returns it and the pieces of text streamed, in order.
async fn take_turn(provider: &mut dyn Provider) -> (Result<Turn, ProviderError>, Vec<String>) {
    let messages = conversation();
    let tools = tools();
    let pieces = Mutex::new(Vec::new());
    let sink = |s: &str| pieces.lock().unwrap().push(s.to_owned());
    let request = TurnRequest {
        system: Some(SYSTEM),
        messages: &messages,
        context: Some(CONTEXT),
        tools: &tools,
    };
    let result = provider.turn(request, &sink).await;
    (result, pieces.into_inner().unwrap())
}

// ---------------------------------------------------------------------------------------------
// Anthropic

fn anthropic(server: &Server) -> AnthropicProvider {
    AnthropicProvider::new(&server.url, KEY, "claude-test")
        .unwrap()
        .with_retry(3, Duration::from_millis(10))
}

fn event(value: Value) -> Step {
    let name = value["type"].as_str().unwrap().to_owned();
    Step::Chunk(format!("event: {name}\ndata: {value}\n\n"))
}

fn message_start() -> Step {
    event(json!({
        "type": "message_start",
        "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test",
                    "stop_reason": null, "usage": {"input_tokens": 321, "output_tokens": 1}}
    }))
}

fn text_start(index: u64) -> Step {
    event(
        json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
    )
}

fn text_delta(index: u64, text: &str) -> Step {
    event(
        json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}}),
    )
}

fn block_stop(index: u64) -> Step {
    event(json!({"type": "content_block_stop", "index": index}))
}

fn message_end(stop_reason: &str, output_tokens: u64) -> Vec<Step> {
    vec![
        event(
            json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": output_tokens}}),
        ),
        event(json!({"type": "message_stop"})),
    ]
}

fn anthropic_text(pieces: &[&str]) -> Reply {
    let mut events = vec![
        message_start(),
        text_start(0),
        event(json!({"type": "ping"})),
    ];
    events.extend(pieces.iter().map(|p| text_delta(0, p)));
    events.push(block_stop(0));
    events.extend(message_end("end_turn", 17));
    stream(events)
}

#[tokio::test]
async fn anthropic_streams_text_in_order_and_sends_the_conversation() {
    let server = Server::start(vec![anthropic_text(&["Hel", "lo, ", "world."])]).await;
    let mut p = anthropic(&server);
    let (turn, pieces) = take_turn(&mut p).await;
    let turn = turn.unwrap();
    assert_eq!(pieces, ["Hel", "lo, ", "world."]);
    assert_eq!(turn.text, "Hello, world.");
    assert_eq!(turn.stop_reason, StopReason::EndTurn);
    assert!(turn.tool_calls.is_empty());
    assert_eq!(
        p.last_usage(),
        Some(Usage {
            input_tokens: 321,
            output_tokens: 17
        })
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-api-key"), Some(KEY));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("authorization"), None);
    assert_eq!(r.body["model"], "claude-test");
    assert_eq!(r.body["max_tokens"], 8192);
    assert_eq!(r.body["stream"], true);
    assert_eq!(r.body["system"], format!("{SYSTEM}\n\n{CONTEXT}"));
    assert_eq!(
        r.body["tools"],
        json!([{"name": "Read", "description": "Reads a file of the workspace",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}])
    );
    assert_eq!(
        r.body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Add a --shout flag to greet.sh"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Reading it first."},
                {"type": "tool_use", "id": "call_1", "name": "Read", "input": {"path": "greet.sh"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "no such file", "is_error": true},
            ]},
        ])
    );
    // The context is not part of the conversation.
    assert!(!r.body["messages"].to_string().contains("Phase:"));
}

#[tokio::test]
async fn anthropic_puts_tool_input_together_from_partial_json() {
    let pieces = ["", "{\"pa", "th\": \"gr", "eet.sh\", \"lim", "it\": 20}"];
    let mut events = vec![
        message_start(),
        text_start(0),
        text_delta(0, "Reading."),
        block_stop(0),
        event(
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_9", "name": "Read", "input": {}}}),
        ),
    ];
    events.extend(pieces.iter().map(|p| {
        event(json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": p}}))
    }));
    events.push(block_stop(1));
    events.extend(message_end("tool_use", 30));
    let server = Server::start(vec![stream(events)]).await;
    let mut p = anthropic(&server);
    let (turn, streamed) = take_turn(&mut p).await;
    let turn = turn.unwrap();
    assert_eq!(streamed, ["Reading."]);
    assert_eq!(turn.stop_reason, StopReason::ToolUse);
    assert_eq!(
        turn.tool_calls,
        [ToolCall {
            id: "toolu_9".into(),
            name: "Read".into(),
            input: json!({"path": "greet.sh", "limit": 20}),
        }]
    );
}

#[tokio::test]
async fn anthropic_waits_as_retry_after_asks_then_succeeds() {
    let limited = status(
        429,
        "Too Many Requests",
        &[("retry-after", "1")],
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
    );
    let server = Server::start(vec![limited, anthropic_text(&["done"])]).await;
    let mut p = anthropic(&server);
    let (turn, pieces) = take_turn(&mut p).await;
    assert_eq!(turn.unwrap().text, "done");
    assert_eq!(pieces, ["done"]);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let waited = requests[1].at - requests[0].at;
    assert!(
        waited >= Duration::from_millis(950),
        "waited only {waited:?}"
    );
}

#[tokio::test]
async fn anthropic_rate_limited_forever_gives_up_with_retry_after() {
    let limited = status(
        429,
        "Too Many Requests",
        &[("retry-after", "0.2")],
        r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}"#,
    );
    let server = Server::start(vec![limited]).await;
    let mut p = anthropic(&server);
    let (turn, pieces) = take_turn(&mut p).await;
    let e = turn.unwrap_err();
    assert_eq!(e.kind, ErrorKind::RateLimited);
    assert_eq!(e.retry_after, Some(Duration::from_millis(200)));
    assert!(
        e.message
            .contains("Number of requests has exceeded your rate limit"),
        "{e}"
    );
    assert!(e.message.ends_with("(gave up after 3 attempts)"), "{e}");
    assert!(pieces.is_empty());
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn anthropic_server_errors_are_network_errors_retried_with_backoff() {
    let failed = status(
        500,
        "Internal Server Error",
        &[],
        r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#,
    );
    let server = Server::start(vec![failed]).await;
    let mut p = anthropic(&server);
    let (turn, _) = take_turn(&mut p).await;
    let e = turn.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NetworkError);
    assert!(
        e.message
            .starts_with("500 Internal Server Error: Internal server error"),
        "{e}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // Backoff from 10 ms, doubling: at least 10 + 20 ms in all.
    assert!(requests[2].at - requests[0].at >= Duration::from_millis(30));
}

#[tokio::test]
async fn anthropic_reset_before_any_text_is_retried() {
    let cut = reset_after(vec![message_start(), text_start(0)]);
    let server = Server::start(vec![cut, anthropic_text(&["second ", "try"])]).await;
    let mut p = anthropic(&server);
    let (turn, pieces) = take_turn(&mut p).await;
    assert_eq!(turn.unwrap().text, "second try");
    assert_eq!(pieces, ["second ", "try"]);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn anthropic_reset_after_text_is_not_retried() {
    let cut = reset_after(vec![
        message_start(),
        text_start(0),
        text_delta(0, "Half an "),
    ]);
    let server = Server::start(vec![cut, anthropic_text(&["never streamed"])]).await;
    let mut p = anthropic(&server);
    let (turn, pieces) = take_turn(&mut p).await;
    let e = turn.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NetworkError, "{e}");
    assert!(
        e.message
            .ends_with("(not retried: part of the answer was already streamed)"),
        "{e}"
    );
    assert!(e.message.starts_with("the stream broke off"), "{e}");
    assert_eq!(pieces, ["Half an "]);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn anthropic_malformed_event_is_named() {
    let events = vec![
        message_start(),
        text_start(0),
        Step::Chunk("event: content_block_delta\ndata: {\"type\": \"content_block_delta\", \"index\": 0, \"delta\": {\"type\": \"text_delta\", \"text\": \n\n".into()),
    ];
    let server = Server::start(vec![stream(events)]).await;
    let mut p = anthropic(&server);
    let (turn, _) = take_turn(&mut p).await;
    let e = turn.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unknown);
    assert!(
        e.message
            .starts_with("malformed stream event `content_block_delta`"),
        "{e}"
    );
    assert_eq!(
        server.requests().len(),
        1,
        "a malformed stream is not retried"
    );
}

#[tokio::test]
async fn anthropic_error_event_mid_stream_maps_its_type() {
    let events = vec![
        message_start(),
        event(
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}),
        ),
    ];
    let server = Server::start(vec![stream(events)]).await;
    let mut p = anthropic(&server);
    let e = take_turn(&mut p).await.0.unwrap_err();
    assert_eq!(e.kind, ErrorKind::ContextLengthExceeded);
    assert!(e.message.contains("prompt is too long"), "{e}");
}

#[tokio::test]
async fn anthropic_stalled_stream_is_a_network_error() {
    let events = vec![
        message_start(),
        Step::Sleep(Duration::from_secs(5)),
        text_delta(0, "too late"),
    ];
    let server = Server::start(vec![stream(events)]).await;
    let mut p = anthropic(&server)
        .with_retry(1, Duration::from_millis(10))
        .with_stall_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let (turn, pieces) = take_turn(&mut p).await;
    let e = turn.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NetworkError);
    assert!(e.message.starts_with("the stream stalled"), "{e}");
    assert!(pieces.is_empty());
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(3),
        "{took:?}"
    );
}

#[tokio::test]
async fn anthropic_wrong_key_fails_without_showing_the_key() {
    // A server that echoes the key it was given, as some proxies do.
    let body = json!({"type": "error", "error": {"type": "authentication_error", "message": format!("invalid x-api-key: {KEY}")}});
    let server = Server::start(vec![status(401, "Unauthorized", &[], &body.to_string())]).await;
    let mut p = anthropic(&server);
    let (turn, _) = take_turn(&mut p).await;
    let e = turn.unwrap_err();
    assert_eq!(e.kind, ErrorKind::AuthenticationFailed);
    assert!(e.message.contains("invalid x-api-key"), "{e}");
    for shown in [
        e.to_string(),
        format!("{e:?}"),
        format!("{p:?}"),
        e.message.clone(),
    ] {
        assert!(!shown.contains(KEY), "the key shows in: {shown}");
    }
    assert_eq!(server.requests().len(), 1, "a wrong key is not retried");
}

#[tokio::test]
async fn anthropic_unknown_model_is_model_unavailable() {
    let body =
        r#"{"type":"error","error":{"type":"not_found_error","message":"model: claude-test"}}"#;
    let server = Server::start(vec![status(404, "Not Found", &[], body)]).await;
    let e = take_turn(&mut anthropic(&server)).await.0.unwrap_err();
    assert_eq!(e.kind, ErrorKind::ModelUnavailable);
    assert_eq!(e.message, "404 Not Found: model: claude-test");
}

#[tokio::test]
async fn anthropic_built_from_a_spec_uses_its_base_url_and_the_configured_key() {
    let server = Server::start(vec![anthropic_text(&["hi"])]).await;
    let spec = ProviderSpec {
        name: "anthropic".into(),
        script: None,
        model: Some("claude-from-spec".into()),
        base_url: Some(server.url.clone()),
        fallbacks: Vec::new(),
    };
    let mut p = spec
        .build_with(&|name| (name == "anthropic").then(|| "sk-configured-key".to_owned()))
        .unwrap();
    assert_eq!(p.name(), "anthropic");
    assert_eq!(take_turn(&mut *p).await.0.unwrap().text, "hi");
    let r = &server.requests()[0];
    assert_eq!(r.header("x-api-key"), Some("sk-configured-key"));
    assert_eq!(r.body["model"], "claude-from-spec");
    // The spec as written to a task log carries the base URL and never a key.
    let logged = serde_json::to_string(&spec).unwrap();
    assert!(logged.contains("\"baseUrl\""), "{logged}");
    assert!(!logged.contains("sk-configured-key"));
}

// ---------------------------------------------------------------------------------------------
// OpenAI-compatible

fn openai(server: &Server, key: Option<&str>) -> OpenAiProvider {
    OpenAiProvider::new(&format!("{}/v1", server.url), key, "gpt-test")
        .unwrap()
        .with_retry(3, Duration::from_millis(10))
}

fn chunk(value: Value) -> Step {
    Step::Chunk(format!("data: {value}\n\n"))
}

fn content(text: &str) -> Step {
    chunk(
        json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]}),
    )
}

fn finish(reason: &str) -> Step {
    chunk(
        json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}),
    )
}

fn usage(prompt: u64, completion: u64) -> Step {
    chunk(
        json!({"id": "c1", "object": "chat.completion.chunk", "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}}),
    )
}

fn done() -> Step {
    Step::Chunk("data: [DONE]\n\n".into())
}

fn openai_text(pieces: &[&str]) -> Reply {
    let mut events = vec![chunk(
        json!({"id": "c1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]}),
    )];
    events.extend(pieces.iter().map(|p| content(p)));
    events.extend([finish("stop"), usage(210, 9), done()]);
    stream(events)
}

#[tokio::test]
async fn openai_streams_text_in_order_and_sends_the_conversation() {
    let server = Server::start(vec![openai_text(&["Hel", "lo, ", "world."])]).await;
    let mut p = openai(&server, Some(KEY));
    let (turn, pieces) = take_turn(&mut p).await;
    let turn = turn.unwrap();
    assert_eq!(pieces, ["Hel", "lo, ", "world."]);
    assert_eq!(turn.text, "Hello, world.");
    assert_eq!(turn.stop_reason, StopReason::EndTurn);
    assert_eq!(
        p.last_usage(),
        Some(Usage {
            input_tokens: 210,
            output_tokens: 9
        })
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), Some(&*format!("Bearer {KEY}")));
    assert_eq!(r.body["model"], "gpt-test");
    assert_eq!(r.body["stream"], true);
    assert_eq!(r.body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        r.body["tools"],
        json!([{"type": "function", "function": {"name": "Read", "description": "Reads a file of the workspace",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}])
    );
    assert_eq!(
        r.body["messages"],
        json!([
            {"role": "system", "content": format!("{SYSTEM}\n\n{CONTEXT}")},
            {"role": "user", "content": "Add a --shout flag to greet.sh"},
            {"role": "assistant", "content": "Reading it first.", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "Read", "arguments": "{\"path\":\"greet.sh\"}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "error: no such file"},
        ])
    );
}

#[tokio::test]
async fn openai_local_server_gets_no_authorization_header() {
    let server = Server::start(vec![openai_text(&["local"])]).await;
    let spec = ProviderSpec {
        name: "openai".into(),
        script: None,
        model: Some("llama3.2".into()),
        base_url: Some(format!("{}/v1/", server.url)),
        fallbacks: Vec::new(),
    };
    let mut p = spec.build_with(&|_| None).unwrap();
    assert_eq!(p.name(), "openai");
    assert_eq!(take_turn(&mut *p).await.0.unwrap().text, "local");
    let r = &server.requests()[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), None);
    assert_eq!(r.body["model"], "llama3.2");
}

#[tokio::test]
async fn openai_assembles_tool_calls_by_index_from_pieces() {
    let call = |index: u64, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut function = json!({"arguments": args});
        if let Some(name) = name {
            function["name"] = json!(name);
        }
        let mut piece = json!({"index": index, "function": function});
        if let Some(id) = id {
            piece["id"] = json!(id);
            piece["type"] = json!("function");
        }
        chunk(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [piece]}, "finish_reason": null}]}),
        )
    };
    let events = vec![
        content("Two reads."),
        call(0, Some("call_a"), Some("Read"), ""),
        call(0, None, None, "{\"path\""),
        call(1, Some("call_b"), Some("Read"), "{\"pa"),
        call(0, None, None, ": \"a.sh\"}"),
        call(1, None, None, "th\": \"b.sh\"}"),
        finish("tool_calls"),
        usage(50, 25),
        done(),
    ];
    let server = Server::start(vec![stream(events)]).await;
    let mut p = openai(&server, None);
    let (turn, pieces) = take_turn(&mut p).await;
    let turn = turn.unwrap();
    assert_eq!(pieces, ["Two reads."]);
    assert_eq!(turn.stop_reason, StopReason::ToolUse);
    assert_eq!(
        turn.tool_calls,
        [
            ToolCall {
                id: "call_a".into(),
                name: "Read".into(),
                input: json!({"path": "a.sh"})
            },
            ToolCall {
                id: "call_b".into(),
                name: "Read".into(),
                input: json!({"path": "b.sh"})
            },
        ]
    );
    assert_eq!(
        p.last_usage(),
        Some(Usage {
            input_tokens: 50,
            output_tokens: 25
        })
    );
}

#[tokio::test]
async fn openai_waits_as_retry_after_asks_then_succeeds() {
    let date_or_seconds = "1";
    let limited = status(
        429,
        "Too Many Requests",
        &[("retry-after", date_or_seconds)],
        r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
    );
    let server = Server::start(vec![limited, openai_text(&["done"])]).await;
    let mut p = openai(&server, Some(KEY));
    let (turn, pieces) = take_turn(&mut p).await;
    assert_eq!(turn.unwrap().text, "done");
    assert_eq!(pieces, ["done"]);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let waited = requests[1].at - requests[0].at;
    assert!(
        waited >= Duration::from_millis(950),
        "waited only {waited:?}"
    );
}

#[tokio::test]
async fn openai_rate_limited_forever_gives_up_with_retry_after() {
    let limited = status(
        429,
        "Too Many Requests",
        &[("retry-after-ms", "150"), ("retry-after", "1")],
        r#"{"error":{"message":"Rate limit reached for requests","code":"rate_limit_exceeded"}}"#,
    );
    let server = Server::start(vec![limited]).await;
    let mut p = openai(&server, Some(KEY));
    let e = take_turn(&mut p).await.0.unwrap_err();
    assert_eq!(e.kind, ErrorKind::RateLimited);
    assert_eq!(e.retry_after, Some(Duration::from_millis(150)));
    assert!(e.message.contains("Rate limit reached for requests"), "{e}");
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn openai_long_retry_after_is_returned_at_once() {
    let limited = status(
        429,
        "Too Many Requests",
        &[("retry-after", "3600")],
        r#"{"error":{"message":"quota"}}"#,
    );
    let server = Server::start(vec![limited]).await;
    let e = take_turn(&mut openai(&server, Some(KEY)))
        .await
        .0
        .unwrap_err();
    assert_eq!(e.kind, ErrorKind::RateLimited);
    assert_eq!(e.retry_after, Some(Duration::from_secs(3600)));
    assert_eq!(server.requests().len(), 1, "an hour is not waited out");
}

#[tokio::test]
async fn openai_server_errors_are_network_errors() {
    let server = Server::start(vec![status(
        503,
        "Service Unavailable",
        &[],
        r#"{"error":"server busy, please try again"}"#,
    )])
    .await;
    let e = take_turn(&mut openai(&server, None)).await.0.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NetworkError);
    assert!(
        e.message
            .starts_with("503 Service Unavailable: server busy, please try again"),
        "{e}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[tokio::test]
async fn openai_context_too_long_and_missing_model_are_told_apart() {
    let too_long = status(
        400,
        "Bad Request",
        &[],
        r#"{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}"#,
    );
    let no_model = status(
        404,
        "Not Found",
        &[],
        r#"{"error":{"message":"model \"gpt-test\" not found, try pulling it first","type":"api_error"}}"#,
    );
    let bad = status(
        400,
        "Bad Request",
        &[],
        r#"{"error":{"message":"Invalid value for 'tools[0].type'","type":"invalid_request_error"}}"#,
    );
    let server = Server::start(vec![too_long, no_model, bad]).await;
    let mut p = openai(&server, None);
    let kinds = [
        take_turn(&mut p).await.0.unwrap_err().kind,
        take_turn(&mut p).await.0.unwrap_err().kind,
        take_turn(&mut p).await.0.unwrap_err().kind,
    ];
    assert_eq!(
        kinds,
        [
            ErrorKind::ContextLengthExceeded,
            ErrorKind::ModelUnavailable,
            ErrorKind::InvalidRequest
        ]
    );
    assert_eq!(server.requests().len(), 3, "none of these is retried");
}

#[tokio::test]
async fn openai_reset_before_any_text_is_retried() {
    let cut = reset_after(vec![chunk(
        json!({"choices": [{"index": 0, "delta": {"role": "assistant"}, "finish_reason": null}]}),
    )]);
    let server = Server::start(vec![cut, openai_text(&["second ", "try"])]).await;
    let mut p = openai(&server, None);
    let (turn, pieces) = take_turn(&mut p).await;
    assert_eq!(turn.unwrap().text, "second try");
    assert_eq!(pieces, ["second ", "try"]);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn openai_reset_after_text_is_not_retried() {
    let cut = reset_after(vec![content("Half an ")]);
    let server = Server::start(vec![cut, openai_text(&["never streamed"])]).await;
    let mut p = openai(&server, None);
    let (turn, pieces) = take_turn(&mut p).await;
    let e = turn.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NetworkError, "{e}");
    assert!(e.message.starts_with("the stream broke off"), "{e}");
    assert_eq!(pieces, ["Half an "]);
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn openai_stream_closed_early_is_a_network_error() {
    // A clean close, but before finish_reason and [DONE].
    let server = Server::start(vec![stream(vec![content("cut")])]).await;
    let mut p = openai(&server, None).with_retry(1, Duration::from_millis(10));
    let e = take_turn(&mut p).await.0.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NetworkError);
    assert!(
        e.message
            .starts_with("the stream ended before the turn was complete"),
        "{e}"
    );
}

#[tokio::test]
async fn openai_malformed_event_is_named() {
    let events = vec![
        content("ok "),
        Step::Chunk("data: {\"choices\": [\n\n".into()),
    ];
    let server = Server::start(vec![stream(events)]).await;
    let mut p = openai(&server, None);
    let e = take_turn(&mut p).await.0.unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unknown);
    assert!(
        e.message.starts_with("malformed stream event `message`"),
        "{e}"
    );
    assert!(e.message.contains("{\"choices\": ["), "{e}");
}

#[tokio::test]
async fn openai_stalled_stream_is_a_network_error() {
    let events = vec![
        content("Thinking"),
        Step::Sleep(Duration::from_secs(5)),
        done(),
    ];
    let server = Server::start(vec![stream(events)]).await;
    let mut p = openai(&server, None).with_stall_timeout(Duration::from_millis(300));
    let started = Instant::now();
    let (turn, pieces) = take_turn(&mut p).await;
    let e = turn.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NetworkError);
    assert!(e.message.starts_with("the stream stalled"), "{e}");
    assert_eq!(pieces, ["Thinking"]);
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(server.requests().len(), 1, "text was streamed: no retry");
}

#[tokio::test]
async fn openai_wrong_key_fails_without_showing_the_key() {
    let body = json!({"error": {"message": format!("Incorrect API key provided: {KEY}."), "type": "invalid_request_error", "code": "invalid_api_key"}});
    let server = Server::start(vec![status(401, "Unauthorized", &[], &body.to_string())]).await;
    let mut p = openai(&server, Some(KEY));
    let e = take_turn(&mut p).await.0.unwrap_err();
    assert_eq!(e.kind, ErrorKind::AuthenticationFailed);
    assert!(e.message.contains("Incorrect API key provided"), "{e}");
    for shown in [e.to_string(), format!("{e:?}"), format!("{p:?}")] {
        assert!(!shown.contains(KEY), "the key shows in: {shown}");
    }
}

#[tokio::test]
async fn openai_refused_connection_is_a_network_error() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    drop(listener);
    let mut p = OpenAiProvider::new(&url, None, "m")
        .unwrap()
        .with_retry(2, Duration::from_millis(10));
    let e = take_turn(&mut p).await.0.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NetworkError);
    assert!(e.message.starts_with("cannot connect"), "{e}");
    assert!(e.message.ends_with("(gave up after 2 attempts)"), "{e}");
}

#[test]
fn unknown_providers_list_the_known_ones() {
    let spec = ProviderSpec {
        name: "gemini".into(),
        script: None,
        model: None,
        base_url: None,
        fallbacks: Vec::new(),
    };
    let e = spec.build_with(&|_| None).map(|_| ()).unwrap_err();
    assert_eq!(
        e,
        "unknown provider \"gemini\"; this build knows: scripted, anthropic, openai"
    );
}

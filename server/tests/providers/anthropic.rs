//! Anthropic.

use super::*;

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
        ..ProviderSpec::default()
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

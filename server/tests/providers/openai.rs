//! OpenAI-compatible.

use super::*;

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
        ..ProviderSpec::default()
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

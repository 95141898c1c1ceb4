//! Checks of the test's own tools: the hook timing lines and the fake API.

use super::*;

#[test]
fn claude_codes_hook_timing_lines_parse() {
    let t = HookTiming::parse(
        "2026-11-23T19:28:58.975Z [DEBUG] Hooks: PreToolUse:Write [/tmp/a b/rawko hook PreToolUse --workflow gated] finished with status 2 (14ms)",
    )
    .expect("a timing line");
    assert_eq!(
        (t.hook.as_str(), t.event(), t.status, t.millis),
        ("PreToolUse:Write", "PreToolUse", 2, 14)
    );
    assert!(t.command.ends_with("--workflow gated"));
}

/// The fake API itself, without Claude Code: a streamed and a plain reply to the main agent on one
/// kept-alive connection, a side request, a token count and an unknown path.
#[test]
fn the_fake_api_answers_streamed_and_plain_requests() {
    use std::io::{BufRead, BufReader, Read, Write};
    let api = FakeAnthropic::start(|r: &Request| {
        Turn::text(format!("turn {}", r.index)).then_tool("Read", json!({"file_path": "/x/é.txt"}))
    });
    let stream = std::net::TcpStream::connect(api.url().trim_start_matches("http://")).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    let mut call = |method: &str, path: &str, body: &Value| -> (u16, String) {
        let body = body.to_string();
        write!(
            writer,
            "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let status: u16 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        let mut length = 0;
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            if line.trim().is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
        }
        let mut out = vec![0; length];
        reader.read_exact(&mut out).unwrap();
        (status, String::from_utf8(out).unwrap())
    };
    let tools = json!([{"name": "Read", "input_schema": {}}]);
    let (status, plain) = call(
        "POST",
        "/v1/messages?beta=true",
        &json!({"model": "m", "messages": [], "tools": tools}),
    );
    let plain: Value = serde_json::from_str(&plain).unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        plain["content"][0],
        json!({"type": "text", "text": "turn 0"})
    );
    assert_eq!(plain["content"][1]["name"], "Read");
    assert_eq!(plain["stop_reason"], "tool_use");

    let (status, sse) = call(
        "POST",
        "/v1/messages",
        &json!({"model": "m", "messages": [], "tools": tools, "stream": true}),
    );
    assert_eq!(status, 200);
    let events: Vec<Value> = sse
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    assert_eq!(events[2]["delta"]["text"], "turn 1");
    let input: String = events[5..7]
        .iter()
        .map(|e| e["delta"]["partial_json"].as_str().unwrap())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&input).unwrap(),
        json!({"file_path": "/x/é.txt"})
    );
    assert_eq!(events[8]["delta"]["stop_reason"], "tool_use");
    let id = events[4]["content_block"]["id"].as_str().unwrap();
    assert!(
        id.starts_with("toolu_") && id != plain["content"][1]["id"],
        "{id}"
    );

    let (_, side) = call(
        "POST",
        "/v1/messages",
        &json!({"model": "m", "messages": []}),
    );
    assert_eq!(
        serde_json::from_str::<Value>(&side).unwrap()["content"][0]["text"],
        "OK"
    );
    let (_, count) = call("POST", "/v1/messages/count_tokens", &json!({}));
    assert!(serde_json::from_str::<Value>(&count).unwrap()["input_tokens"].is_u64());
    let (status, _) = call("GET", "/v1/models", &Value::Null);
    assert_eq!(status, 404);

    let requests = api.requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(
        requests.iter().map(|r| r.main).collect::<Vec<_>>(),
        [true, true, false, false, false]
    );
    assert_eq!(api.main_requests()[1].index, 1);
    assert_eq!(api.tool_calls().len(), 2);
}

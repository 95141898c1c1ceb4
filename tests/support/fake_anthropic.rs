//! A fake of the Anthropic Messages API on loopback, for running the real Claude Code CLI against
//! scripted model turns (`ANTHROPIC_BASE_URL=http://127.0.0.1:PORT`). std only, like the other
//! loopback servers of the tests: one thread accepts, one thread per connection serves HTTP/1.1
//! requests one after another (Claude Code keeps its connections alive).
//!
//! - `POST /v1/messages` (Claude Code adds `?beta=true`) answers a streamed reply (`"stream": true`:
//!   `message_start`, `content_block_start`/`_delta`/`_stop` per block, `message_delta` with the
//!   stop reason, `message_stop`) or a plain JSON message, whichever the request asks for.
//! - The main agent's requests (those offering the `Read` tool, or claude-code-acp's
//!   `mcp__acp__Read`) are answered by the test's script,
//!   called once per request with everything recorded so far; other message requests (a title,
//!   a quota check) get a short text, `/v1/messages/count_tokens` a token count, anything else 404.
//! - Every `tool_use` gets an id of its own, unique across all fakes of the process.
//! - Every request is recorded (method, path, headers, JSON body, when it arrived, what was
//!   answered and when), so a test can look for a text in what the model was sent.

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::fake_http::{lock, read_request, visit_strings, Incoming};

/// Numbers the ids of every message and tool call the fakes of this process send.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One content block of a scripted model turn.
#[derive(Debug, Clone)]
pub enum Block {
    Text(String),
    ToolUse { name: String, input: Value },
}

/// One scripted model turn: its content blocks. A turn with a tool call ends with `tool_use`,
/// any other with `end_turn`.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    pub blocks: Vec<Block>,
    /// The input tokens the reply reports (100 unless set): a large count makes Claude Code
    /// compact its conversation when `CLAUDE_CODE_AUTO_COMPACT_WINDOW` is small.
    pub input_tokens: Option<u64>,
    /// Answer with this API error instead (HTTP status, error type, message).
    pub error: Option<(u16, String, String)>,
}

impl Turn {
    /// A turn that only says `text` (so the agent stops).
    pub fn text(text: impl Into<String>) -> Self {
        Self::default().then_text(text)
    }

    /// A turn that calls one tool.
    pub fn tool(name: impl Into<String>, input: Value) -> Self {
        Self::default().then_tool(name, input)
    }

    /// A turn the API refuses with an error (a 400 `invalid_request_error` is not retried).
    pub fn api_error(status: u16, kind: &str, message: &str) -> Self {
        Self {
            error: Some((status, kind.to_owned(), message.to_owned())),
            ..Self::default()
        }
    }

    /// The same turn, reporting `n` input tokens.
    pub fn with_input_tokens(mut self, n: u64) -> Self {
        self.input_tokens = Some(n);
        self
    }

    pub fn then_text(mut self, text: impl Into<String>) -> Self {
        self.blocks.push(Block::Text(text.into()));
        self
    }

    pub fn then_tool(mut self, name: impl Into<String>, input: Value) -> Self {
        self.blocks.push(Block::ToolUse {
            name: name.into(),
            input,
        });
        self
    }
}

/// A tool result the agent sent back.
#[derive(Debug, Clone)]
pub struct ToolResult {
    pub tool_use_id: String,
    /// The result's text (text blocks joined).
    pub text: String,
    pub is_error: bool,
}

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// The path with its query.
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` when empty, a string when it is not JSON).
    pub body: Value,
    /// Whether the script answered it (a main agent request).
    pub main: bool,
    /// Its number among the main requests (from 0), for a main request.
    pub index: usize,
    pub received: Instant,
    /// The message answered (for a message request).
    pub reply: Option<Value>,
    pub replied: Option<Instant>,
}

impl Request {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether the body, as JSON text, contains `needle` (JSON escapes aside: `needle` should be
    /// plain words).
    pub fn mentions(&self, needle: &str) -> bool {
        self.count(needle) > 0
    }

    /// How often `needle` occurs in the body's strings.
    pub fn count(&self, needle: &str) -> usize {
        let mut n = 0;
        visit_strings(&self.body, &mut |s| n += s.matches(needle).count());
        n
    }

    /// The names of the tools the request offers the model.
    pub fn tool_names(&self) -> Vec<&str> {
        self.body["tools"]
            .as_array()
            .map(|ts| ts.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default()
    }

    /// The conversation's last message.
    pub fn last_message(&self) -> &Value {
        self.body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .unwrap_or(&Value::Null)
    }

    /// The text of the last message (its text blocks and tool results, joined).
    pub fn last_text(&self) -> String {
        let mut out = String::new();
        visit_text(&self.last_message()["content"], &mut |s| {
            out.push_str(s);
            out.push('\n');
        });
        out
    }

    /// Every tool result in the conversation, in order.
    pub fn tool_results(&self) -> Vec<ToolResult> {
        let mut out = Vec::new();
        for m in self.body["messages"].as_array().into_iter().flatten() {
            for block in m["content"].as_array().into_iter().flatten() {
                if block["type"] != "tool_result" {
                    continue;
                }
                let mut text = String::new();
                visit_text(&block["content"], &mut |s| text.push_str(s));
                out.push(ToolResult {
                    tool_use_id: block["tool_use_id"].as_str().unwrap_or_default().to_owned(),
                    text,
                    is_error: block["is_error"] == json!(true),
                });
            }
        }
        out
    }

    /// The tool calls this request was answered with: (id, name, input).
    pub fn tool_uses(&self) -> Vec<(String, String, Value)> {
        self.reply
            .as_ref()
            .and_then(|r| r["content"].as_array())
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| {
                (
                    b["id"].as_str().unwrap_or_default().to_owned(),
                    b["name"].as_str().unwrap_or_default().to_owned(),
                    b["input"].clone(),
                )
            })
            .collect()
    }

    /// A one-line description for failure messages.
    pub fn summary(&self) -> String {
        let answered = match &self.reply {
            Some(r) => r["content"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|b| match b["type"].as_str() {
                    Some("tool_use") => format!("tool_use {} {}", b["name"], b["input"]),
                    _ => format!("text {}", b["text"]),
                })
                .collect::<Vec<_>>()
                .join(", "),
            None => "-".to_owned(),
        };
        let last = super::shorten(&self.last_text().replace('\n', " "), 300);
        format!(
            "{} {}{} last message: {last} => {answered}",
            self.method,
            self.path,
            if self.main {
                format!(" (main #{})", self.index)
            } else {
                String::new()
            }
        )
    }
}

/// The text of message content: a string, or the `text` (and nested `content`) of its blocks.
fn visit_text(v: &Value, f: &mut dyn FnMut(&str)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter().for_each(|x| visit_text(x, f)),
        Value::Object(o) => ["text", "content"]
            .iter()
            .filter_map(|k| o.get(*k))
            .for_each(|x| visit_text(x, f)),
        _ => {}
    }
}

/// The test's script: the turn answering a main agent request (the conversation so far is in
/// its body).
pub type Script = Box<dyn FnMut(&Request) -> Turn + Send>;

struct Shared {
    log: Mutex<Vec<Request>>,
    changed: Condvar,
    script: Mutex<Script>,
    /// A panic of the script, kept for the test to report.
    script_errors: Mutex<Vec<String>>,
    closing: AtomicBool,
}

/// The fake server. Stops accepting when dropped.
pub struct FakeAnthropic {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl FakeAnthropic {
    /// Starts a fake whose main agent requests `script` answers.
    pub fn start(script: impl FnMut(&Request) -> Turn + Send + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake Anthropic API");
        let addr = listener.local_addr().expect("its address");
        let shared = Arc::new(Shared {
            log: Mutex::new(Vec::new()),
            changed: Condvar::new(),
            script: Mutex::new(Box::new(script)),
            script_errors: Mutex::new(Vec::new()),
            closing: AtomicBool::new(false),
        });
        let s = shared.clone();
        thread::spawn(move || {
            for stream in listener.incoming() {
                if s.closing.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let s = s.clone();
                thread::spawn(move || serve_connection(stream, &s));
            }
        });
        Self { addr, shared }
    }

    /// The base URL for `ANTHROPIC_BASE_URL`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        lock(&self.shared.log).clone()
    }

    /// The main agent's requests so far, in order.
    pub fn main_requests(&self) -> Vec<Request> {
        self.requests().into_iter().filter(|r| r.main).collect()
    }

    /// What the script panicked with, if it did.
    pub fn script_errors(&self) -> Vec<String> {
        lock(&self.shared.script_errors).clone()
    }

    /// Every tool call the fake sent, with the result the agent sent back for it (if one came):
    /// (name, input, result).
    pub fn tool_calls(&self) -> Vec<(String, Value, Option<ToolResult>)> {
        let log = self.requests();
        let results: Vec<ToolResult> = log
            .iter()
            .filter(|r| r.main)
            .flat_map(Request::tool_results)
            .collect();
        log.iter()
            .flat_map(Request::tool_uses)
            .map(|(id, name, input)| {
                let result = results.iter().find(|r| r.tool_use_id == id).cloned();
                (name, input, result)
            })
            .collect()
    }

    /// The result the agent sent back for the first call of `tool` whose input `matches`.
    pub fn result_of(&self, tool: &str, matches: impl Fn(&Value) -> bool) -> Option<ToolResult> {
        self.tool_calls()
            .into_iter()
            .find(|(name, input, _)| name == tool && matches(input))
            .and_then(|(_, _, r)| r)
    }

    /// The first request (already received or arriving within `timeout`) that `matches`.
    pub fn wait_for(
        &self,
        timeout: Duration,
        matches: impl Fn(&Request) -> bool,
    ) -> Option<Request> {
        let deadline = Instant::now() + timeout;
        let mut log = lock(&self.shared.log);
        loop {
            if let Some(r) = log.iter().find(|r| matches(r)) {
                return Some(r.clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            log = self
                .shared
                .changed
                .wait_timeout(log, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Every request, a line each, for failure messages.
    pub fn report(&self) -> String {
        let mut out = String::new();
        for r in self.requests() {
            out.push_str(&r.summary());
            out.push('\n');
        }
        for e in self.script_errors() {
            out.push_str(&format!("the script panicked: {e}\n"));
        }
        out
    }
}

impl Drop for FakeAnthropic {
    fn drop(&mut self) {
        self.shared.closing.store(true, Ordering::SeqCst);
        // Wakes the accepting thread so it sees `closing`.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve_connection(stream: TcpStream, shared: &Shared) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut writer = stream;
    while let Some(incoming) = read_request(&mut reader) {
        let close = incoming
            .headers
            .iter()
            .any(|(n, v)| n.eq_ignore_ascii_case("connection") && v.eq_ignore_ascii_case("close"));
        let response = answer(incoming, shared);
        if writer
            .write_all(&response)
            .and_then(|()| writer.flush())
            .is_err()
            || close
        {
            return;
        }
    }
}

/// Records the request, asks the script when it is the main agent's, and builds the response.
fn answer(incoming: Incoming, shared: &Shared) -> Vec<u8> {
    let body: Value = if incoming.body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&incoming.body)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&incoming.body).into_owned()))
    };
    let route = incoming
        .path
        .split('?')
        .next()
        .unwrap_or_default()
        .to_owned();
    let is_messages = incoming.method == "POST" && route == "/v1/messages";
    let is_count = incoming.method == "POST" && route == "/v1/messages/count_tokens";
    // Claude Code's connectivity check (`HEAD /api/hello`, not sent with nonessential traffic
    // off): a plain yes, without a body.
    let incoming_is_head = incoming.method == "HEAD";
    let main = is_messages
        && body["tools"].as_array().is_some_and(|ts| {
            // Claude Code offers `Read`; under claude-code-acp with the client's files, its
            // ACP-routed `mcp__acp__Read` instead.
            ts.iter()
                .any(|t| t["name"] == "Read" || t["name"] == "mcp__acp__Read")
        });
    let stream = body["stream"] == json!(true);
    let model = body["model"].as_str().unwrap_or("claude-fake").to_owned();

    let slot = {
        let mut log = lock(&shared.log);
        let index = log.iter().filter(|r| r.main).count();
        log.push(Request {
            method: incoming.method,
            path: incoming.path,
            headers: incoming.headers,
            body,
            main,
            index,
            received: Instant::now(),
            reply: None,
            replied: None,
        });
        shared.changed.notify_all();
        log.len() - 1
    };

    let (status, content_type, payload, reply) = if is_messages {
        let turn = if main {
            let current = lock(&shared.log)[slot].clone();
            let mut script = lock(&shared.script);
            match catch_unwind(AssertUnwindSafe(|| (script)(&current))) {
                Ok(turn) => turn,
                Err(panic) => {
                    let why = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                        .unwrap_or_else(|| "a panic".to_owned());
                    lock(&shared.script_errors).push(why);
                    Turn::text("The fake model's script failed; stopping.")
                }
            }
        } else {
            Turn::text("OK")
        };
        let message = message(&turn, &model);
        if let Some((status, kind, text)) = &turn.error {
            let error = json!({"type": "error", "error": {"type": kind, "message": text}});
            (
                *status,
                "application/json",
                error.to_string().into_bytes(),
                Some(message),
            )
        } else if stream {
            (
                200,
                "text/event-stream",
                sse(&message).into_bytes(),
                Some(message),
            )
        } else {
            (
                200,
                "application/json",
                message.to_string().into_bytes(),
                Some(message),
            )
        }
    } else if incoming_is_head {
        (200, "text/plain", Vec::new(), None)
    } else if is_count {
        (
            200,
            "application/json",
            json!({"input_tokens": 1000}).to_string().into_bytes(),
            None,
        )
    } else {
        let error = json!({"type": "error", "error": {"type": "not_found_error", "message": format!("the fake Anthropic API has no {route}")}});
        (
            404,
            "application/json",
            error.to_string().into_bytes(),
            None,
        )
    };

    {
        let mut log = lock(&shared.log);
        log[slot].reply = reply;
        log[slot].replied = Some(Instant::now());
        shared.changed.notify_all();
    }
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        _ => "Error",
    };
    let mut response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nrequest-id: req_fake\r\nConnection: keep-alive\r\n\r\n",
        payload.len()
    )
    .into_bytes();
    if !incoming_is_head {
        response.extend_from_slice(&payload);
    }
    response
}

/// The whole message answering `turn`, with fresh ids.
fn message(turn: &Turn, model: &str) -> Value {
    let content: Vec<Value> = turn
        .blocks
        .iter()
        .map(|b| match b {
            Block::Text(t) => json!({"type": "text", "text": t}),
            Block::ToolUse { name, input } => json!({
                "type": "tool_use",
                "id": format!("toolu_fake{:06}", NEXT_ID.fetch_add(1, Ordering::SeqCst)),
                "name": name,
                "input": input,
            }),
        })
        .collect();
    let stop = if content.iter().any(|b| b["type"] == "tool_use") {
        "tool_use"
    } else {
        "end_turn"
    };
    json!({
        "id": format!("msg_fake{:06}", NEXT_ID.fetch_add(1, Ordering::SeqCst)),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": {"input_tokens": turn.input_tokens.unwrap_or(100), "output_tokens": 10},
    })
}

/// `message` as the event stream of a streamed reply.
fn sse(message: &Value) -> String {
    let mut events = Vec::new();
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"]["output_tokens"] = json!(1);
    events.push(json!({"type": "message_start", "message": start}));
    for (index, block) in message["content"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        if block["type"] == "tool_use" {
            let mut open = block.clone();
            open["input"] = json!({});
            events.push(
                json!({"type": "content_block_start", "index": index, "content_block": open}),
            );
            let input = block["input"].to_string();
            // Two pieces, as the real API splits the input's JSON.
            let cut = input
                .char_indices()
                .nth(input.chars().count() / 2)
                .map_or(0, |(i, _)| i);
            for piece in [&input[..cut], &input[cut..]] {
                events.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}}));
            }
        } else {
            events.push(json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}));
            events.push(json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": block["text"]}}));
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(json!({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": null}, "usage": {"output_tokens": 10}}));
    events.push(json!({"type": "message_stop"}));
    let mut out = String::new();
    for e in events {
        out.push_str(&format!(
            "event: {}\ndata: {e}\n\n",
            e["type"].as_str().unwrap_or_default()
        ));
    }
    out
}

//! A fake of the Gemini API on loopback, for running the real Gemini CLI against scripted model
//! turns: `GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:PORT` with any `GEMINI_API_KEY` makes Gemini
//! CLI send its requests here without a login (it picks its "gateway" auth by itself). std only,
//! like the other loopback servers of the tests: one thread accepts, one thread per connection
//! serves HTTP/1.1 requests one after another (Gemini CLI keeps its connections alive).
//!
//! What Gemini CLI 0.61 calls, found by running it against a recording server:
//!
//! - `POST /v1beta/models/{model}:streamGenerateContent?alt=sse` for the agent's turns, answered as
//!   server-sent events (`data: {GenerateContentResponse}`), a part per event, the finish reason
//!   and the usage with the last; `POST /v1beta/models/{model}:generateContent` for the rest,
//!   answered as one JSON response (either route takes either kind of request).
//! - The main agent's requests (those offering its `read_file` or `write_file` function) are
//!   answered by the test's script, called once per request with everything recorded so far.
//! - Its side requests ask for JSON (`generationConfig.responseJsonSchema`: the router's
//!   complexity score before each prompt, the next-speaker check): they get an object that fits
//!   the schema (`"user"` where the schema offers it, so the agent does not go on by itself); any
//!   other request a short text. A side request answered with text that is not JSON is retried
//!   with a growing backoff (tens of seconds), so this matters.
//! - `POST …:countTokens` gets a token count; anything else a 404 in the API's error shape.
//! - Every function call gets an id of its own, unique across all fakes of the process.
//! - Every request is recorded (method, path, headers, JSON body, when it arrived, what was
//!   answered and when), so a test can look for a text in what the model was sent.

use std::io::{BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::fake_http::{lock, read_request, visit_strings, Incoming};

/// Numbers the ids of every function call the fakes of this process send.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One part of a scripted model turn.
#[derive(Debug, Clone)]
pub enum Part {
    Text(String),
    /// A function call: Gemini CLI's own tools by their names (`read_file`, `write_file`,
    /// `run_shell_command`, …), an MCP server's as `mcp_{server}_{tool}`.
    Call {
        name: String,
        args: Value,
    },
}

/// One scripted model turn: its parts.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    pub parts: Vec<Part>,
}

impl Turn {
    /// A turn that only says `text` (so the agent ends its turn).
    pub fn text(text: impl Into<String>) -> Self {
        Self::default().then_text(text)
    }

    /// A turn that calls one function.
    pub fn call(name: impl Into<String>, args: Value) -> Self {
        Self::default().then_call(name, args)
    }

    pub fn then_text(mut self, text: impl Into<String>) -> Self {
        self.parts.push(Part::Text(text.into()));
        self
    }

    pub fn then_call(mut self, name: impl Into<String>, args: Value) -> Self {
        self.parts.push(Part::Call {
            name: name.into(),
            args,
        });
        self
    }
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
    /// The response answered (for a generate request).
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

    /// Whether the body's strings contain `needle` (plain words).
    pub fn mentions(&self, needle: &str) -> bool {
        self.count(needle) > 0
    }

    /// How often `needle` occurs in the body's strings.
    pub fn count(&self, needle: &str) -> usize {
        let mut n = 0;
        visit_strings(&self.body, &mut |s| n += s.matches(needle).count());
        n
    }

    /// The names of the functions the request offers the model.
    pub fn function_names(&self) -> Vec<&str> {
        function_names(&self.body)
    }

    /// Every function response in the conversation, in order: (name, response).
    pub fn function_responses(&self) -> Vec<(String, Value)> {
        let mut out = Vec::new();
        for content in self.body["contents"].as_array().into_iter().flatten() {
            for part in content["parts"].as_array().into_iter().flatten() {
                let r = &part["functionResponse"];
                if r.is_object() {
                    out.push((
                        r["name"].as_str().unwrap_or_default().to_owned(),
                        r["response"].clone(),
                    ));
                }
            }
        }
        out
    }

    /// The text of the conversation's last message.
    pub fn last_text(&self) -> String {
        let last = self.body["contents"]
            .as_array()
            .and_then(|c| c.last())
            .cloned()
            .unwrap_or(Value::Null);
        let mut out = String::new();
        visit_strings(&last, &mut |s| {
            out.push_str(s);
            out.push('\n');
        });
        out
    }

    /// The function calls this request was answered with: (name, args).
    pub fn calls(&self) -> Vec<(String, Value)> {
        self.reply
            .as_ref()
            .and_then(|r| r["candidates"][0]["content"]["parts"].as_array())
            .into_iter()
            .flatten()
            .filter_map(|p| {
                let call = &p["functionCall"];
                call.is_object().then(|| {
                    (
                        call["name"].as_str().unwrap_or_default().to_owned(),
                        call["args"].clone(),
                    )
                })
            })
            .collect()
    }

    /// A one-line description for failure messages.
    pub fn summary(&self) -> String {
        let answered = match &self.reply {
            Some(r) => r["candidates"][0]["content"]["parts"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| match p.get("functionCall") {
                    Some(c) => format!("call {} {}", c["name"], c["args"]),
                    None => format!("text {}", super::shorten(&p["text"].to_string(), 120)),
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

fn function_names(body: &Value) -> Vec<&str> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|t| t["functionDeclarations"].as_array().into_iter().flatten())
        .filter_map(|f| f["name"].as_str())
        .collect()
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
pub struct FakeGemini {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl FakeGemini {
    /// Starts a fake whose main agent requests `script` answers.
    pub fn start(script: impl FnMut(&Request) -> Turn + Send + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake Gemini API");
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

    /// The base URL for `GOOGLE_GEMINI_BASE_URL`.
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

    /// The response the agent sent back for the first call of function `name`, from the main
    /// requests that followed it.
    pub fn response_to(&self, name: &str) -> Option<Value> {
        self.main_requests()
            .iter()
            .flat_map(Request::function_responses)
            .find(|(n, _)| n == name)
            .map(|(_, r)| r)
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

impl Drop for FakeGemini {
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
    // `/v1beta/models/{model}:{action}`.
    let (model, action) = route
        .rsplit('/')
        .next()
        .and_then(|last| last.split_once(':'))
        .map_or((String::new(), String::new()), |(m, a)| {
            (m.to_owned(), a.to_owned())
        });
    let post = incoming.method == "POST" && route.starts_with("/v1beta/models/");
    let generate = post && matches!(action.as_str(), "generateContent" | "streamGenerateContent");
    let stream = action == "streamGenerateContent";
    let main = generate
        && function_names(&body)
            .iter()
            .any(|n| *n == "read_file" || *n == "write_file");
    let schema = body["generationConfig"]
        .get("responseJsonSchema")
        .or_else(|| body["generationConfig"].get("responseSchema"))
        .cloned();

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

    let (status, content_type, payload, reply) = if generate {
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
        } else if let Some(schema) = &schema {
            Turn::text(fitting(schema).to_string())
        } else {
            Turn::text("OK")
        };
        let response = response(&turn, &model);
        if stream {
            (
                200,
                "text/event-stream",
                sse(&response).into_bytes(),
                Some(response),
            )
        } else {
            (
                200,
                "application/json",
                response.to_string().into_bytes(),
                Some(response),
            )
        }
    } else if post && action == "countTokens" {
        (
            200,
            "application/json",
            json!({"totalTokens": 1000}).to_string().into_bytes(),
            None,
        )
    } else {
        let error = json!({"error": {"code": 404, "status": "NOT_FOUND",
            "message": format!("the fake Gemini API has no {route}")}});
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
    let reason = if status == 200 { "OK" } else { "Not Found" };
    let mut response = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: keep-alive\r\n\r\n",
        payload.len()
    )
    .into_bytes();
    response.extend_from_slice(&payload);
    response
}

/// A value that fits the JSON schema `schema` (the API's upper-case type names or JSON
/// Schema's): every property of an object, the first of an enum (`"user"` when offered).
fn fitting(schema: &Value) -> Value {
    if let Some(options) = schema["enum"].as_array() {
        return options
            .iter()
            .find(|o| *o == "user")
            .or_else(|| options.first())
            .cloned()
            .unwrap_or(Value::Null);
    }
    match schema["type"]
        .as_str()
        .unwrap_or_default()
        .to_ascii_lowercase()
        .as_str()
    {
        "object" => Value::Object(
            schema["properties"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), fitting(v)))
                .collect::<Map<String, Value>>(),
        ),
        "integer" | "number" => json!(10),
        "boolean" => json!(false),
        "array" => json!([]),
        _ => json!("fake"),
    }
}

/// The whole response answering `turn`, with fresh call ids.
fn response(turn: &Turn, model: &str) -> Value {
    let parts: Vec<Value> = turn
        .parts
        .iter()
        .map(|p| match p {
            Part::Text(t) => json!({"text": t}),
            Part::Call { name, args } => json!({"functionCall": {
                "id": format!("call_fake{:06}", NEXT_ID.fetch_add(1, Ordering::SeqCst)),
                "name": name,
                "args": args,
            }}),
        })
        .collect();
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": parts},
            "finishReason": "STOP",
            "index": 0,
        }],
        "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
        "modelVersion": model,
        "responseId": format!("resp_fake{:06}", NEXT_ID.fetch_add(1, Ordering::SeqCst)),
    })
}

/// `response` as the event stream of a streamed reply: a part per event, the finish reason and
/// the usage with the last.
fn sse(response: &Value) -> String {
    let parts = response["candidates"][0]["content"]["parts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let count = parts.len().max(1);
    let mut out = String::new();
    for i in 0..count {
        let mut event = response.clone();
        event["candidates"][0]["content"]["parts"] =
            json!(parts.get(i).into_iter().collect::<Vec<_>>());
        if i + 1 < count {
            let candidate = event["candidates"][0].as_object_mut().expect("a candidate");
            candidate.remove("finishReason");
            event
                .as_object_mut()
                .expect("an object")
                .remove("usageMetadata");
        }
        out.push_str(&format!("data: {event}\r\n\r\n"));
    }
    out
}

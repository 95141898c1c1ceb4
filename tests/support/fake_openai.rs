//! A fake of the OpenAI Responses API on loopback, for running the real Codex (through
//! `codex-acp` and the `codex app-server` it starts) against scripted model turns: Codex takes a
//! model provider with `base_url = "http://127.0.0.1:PORT/v1"` and `wire_api = "responses"` from
//! its `config.toml` ([`FakeOpenAi::codex_config`]). std only, like the other loopback servers of
//! the tests: one thread accepts, one thread per connection serves HTTP/1.1 requests one after
//! another.
//!
//! - `POST /v1/responses` answers a streamed response (`"stream": true`, as Codex always asks):
//!   `response.created`, then per output item `response.output_item.added`, its deltas
//!   (`response.output_text.delta`, `response.function_call_arguments.delta`,
//!   `response.custom_tool_call_input.delta`) and `response.output_item.done`, then
//!   `response.completed` with the usage; or the whole response as JSON when not streamed.
//! - The main agent's requests (those offering Codex's `exec_command` tool) are answered by the
//!   test's script, called once per request with everything recorded so far; other responses
//!   requests get a short text, anything else a 404.
//! - The script's tool calls are Codex's kinds of output item: a function call (optionally in a
//!   namespace, as Codex names an MCP server's tools: `mcp__rawko` / `workflow_step`), a custom
//!   (freeform) tool call (`apply_patch`), and a client-side `tool_search_call`, which Codex
//!   answers in the next request with a `tool_search_output` of the deferred tools it found (its
//!   MCP tools are offered only that way).
//! - Every call gets an id of its own, unique across all fakes of the process.
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

/// Numbers the ids of every response, item and call the fakes of this process send.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn fresh(prefix: &str) -> String {
    format!("{prefix}_fake{:06}", NEXT_ID.fetch_add(1, Ordering::SeqCst))
}

/// One output item of a scripted model turn.
#[derive(Debug, Clone)]
pub enum Item {
    /// An assistant message.
    Text(String),
    /// A function call: `name` in `namespace` (an MCP server's tools) or a top-level function
    /// (`exec_command`), with its arguments.
    Function {
        namespace: Option<String>,
        name: String,
        arguments: Value,
    },
    /// A custom (freeform) tool call: `apply_patch` with its patch as the input.
    Custom { name: String, input: String },
    /// A client-side tool search (Codex runs it over its deferred tools).
    ToolSearch { query: String },
}

/// One scripted model turn: its output items.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    pub items: Vec<Item>,
}

impl Turn {
    /// A turn that only says `text` (so the agent ends its turn).
    pub fn text(text: impl Into<String>) -> Self {
        Self::default().then(Item::Text(text.into()))
    }

    /// A turn that calls the top-level function `name` (`exec_command` …).
    pub fn function(name: impl Into<String>, arguments: Value) -> Self {
        Self::default().then(Item::Function {
            namespace: None,
            name: name.into(),
            arguments,
        })
    }

    /// A turn that calls MCP server `server`'s tool `name` (as Codex names it after a tool
    /// search: namespace `mcp__<server>`).
    pub fn mcp(server: &str, name: impl Into<String>, arguments: Value) -> Self {
        Self::default().then(Item::Function {
            namespace: Some(format!("mcp__{server}")),
            name: name.into(),
            arguments,
        })
    }

    /// A turn that calls the freeform tool `name` with `input`.
    pub fn custom(name: impl Into<String>, input: impl Into<String>) -> Self {
        Self::default().then(Item::Custom {
            name: name.into(),
            input: input.into(),
        })
    }

    /// A turn that searches the deferred tools for `query`.
    pub fn tool_search(query: impl Into<String>) -> Self {
        Self::default().then(Item::ToolSearch {
            query: query.into(),
        })
    }

    pub fn then(mut self, item: Item) -> Self {
        self.items.push(item);
        self
    }

    pub fn then_text(self, text: impl Into<String>) -> Self {
        self.then(Item::Text(text.into()))
    }
}

/// `apply_patch`'s input that adds the file `path` with `content` (lines).
pub fn add_file_patch(path: &str, content: &str) -> String {
    let mut patch = format!("*** Begin Patch\n*** Add File: {path}\n");
    for line in content.lines() {
        patch.push_str(&format!("+{line}\n"));
    }
    patch.push_str("*** End Patch\n");
    patch
}

/// The output Codex sent back for one of the fake's calls.
#[derive(Debug, Clone)]
pub struct CallOutput {
    pub call_id: String,
    /// The output's text (a string, or the text of its content items).
    pub text: String,
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
    /// The response answered (for a responses request).
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

    /// The names of the tools the request offers the model up front: functions and custom tools
    /// by name, a namespace's tools as `namespace/name`, and the built-in kinds (`tool_search`,
    /// `web_search`) by type.
    pub fn tool_names(&self) -> Vec<String> {
        tool_names(&self.body["tools"])
    }

    /// The tools Codex's tool searches found so far in this conversation (its
    /// `tool_search_output` items), named as [`Request::tool_names`] names them.
    pub fn searched_tools(&self) -> Vec<String> {
        self.input()
            .iter()
            .filter(|i| i["type"] == "tool_search_output")
            .flat_map(|i| tool_names(&i["tools"]))
            .collect()
    }

    /// The conversation items of the request.
    pub fn input(&self) -> &[Value] {
        self.body["input"].as_array().map_or(&[], Vec::as_slice)
    }

    /// The text of the last user message.
    pub fn last_user_text(&self) -> String {
        let mut out = String::new();
        if let Some(m) = self
            .input()
            .iter()
            .rev()
            .find(|i| i["type"] == "message" && i["role"] == "user")
        {
            visit_text(&m["content"], &mut |s| {
                out.push_str(s);
                out.push('\n');
            });
        }
        out
    }

    /// Every output of a call in the conversation, in order.
    pub fn outputs(&self) -> Vec<CallOutput> {
        self.input()
            .iter()
            .filter(|i| {
                matches!(
                    i["type"].as_str(),
                    Some("function_call_output" | "custom_tool_call_output")
                )
            })
            .map(|i| {
                let mut text = String::new();
                visit_text(&i["output"], &mut |s| text.push_str(s));
                CallOutput {
                    call_id: i["call_id"].as_str().unwrap_or_default().to_owned(),
                    text,
                }
            })
            .collect()
    }

    /// The calls this request was answered with: (call id, name with its namespace as
    /// `namespace/name`, arguments or input).
    pub fn calls(&self) -> Vec<(String, String, Value)> {
        self.reply
            .as_ref()
            .and_then(|r| r["output"].as_array())
            .into_iter()
            .flatten()
            .filter_map(|item| {
                let id = item["call_id"].as_str()?.to_owned();
                let name = match (item["type"].as_str()?, item["namespace"].as_str()) {
                    ("tool_search_call", _) => "tool_search".to_owned(),
                    (_, Some(ns)) => format!("{ns}/{}", item["name"].as_str()?),
                    _ => item["name"].as_str()?.to_owned(),
                };
                let args = match item["type"].as_str()? {
                    "function_call" => {
                        serde_json::from_str(item["arguments"].as_str().unwrap_or("null"))
                            .unwrap_or(Value::Null)
                    }
                    "custom_tool_call" => item["input"].clone(),
                    _ => item["arguments"].clone(),
                };
                Some((id, name, args))
            })
            .collect()
    }

    /// A one-line description for failure messages.
    pub fn summary(&self) -> String {
        let answered = match &self.reply {
            Some(r) => r["output"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|i| match i["type"].as_str() {
                    Some("message") => format!("text {}", i["content"][0]["text"]),
                    Some("function_call") => format!(
                        "call {}{} {}",
                        i["namespace"]
                            .as_str()
                            .map(|n| format!("{n}/"))
                            .unwrap_or_default(),
                        i["name"].as_str().unwrap_or_default(),
                        i["arguments"].as_str().unwrap_or_default()
                    ),
                    Some("custom_tool_call") => format!(
                        "custom {} {}",
                        i["name"].as_str().unwrap_or_default(),
                        i["input"]
                    ),
                    other => format!("{} {}", other.unwrap_or("?"), i["arguments"]),
                })
                .collect::<Vec<_>>()
                .join(", "),
            None => "-".to_owned(),
        };
        let last = self
            .input()
            .last()
            .map(|i| {
                let mut text = String::new();
                visit_text(&i["content"], &mut |s| text.push_str(s));
                visit_text(&i["output"], &mut |s| text.push_str(s));
                format!("{} {}", i["type"].as_str().unwrap_or("?"), text)
            })
            .unwrap_or_default();
        format!(
            "{} {}{} last item: {} => {answered}",
            self.method,
            self.path,
            if self.main {
                format!(" (main #{})", self.index)
            } else {
                format!(
                    " ({})",
                    request_kind(&self.headers).unwrap_or_else(|| "not main".to_owned())
                )
            },
            super::shorten(&last.replace('\n', " "), 300)
        )
    }
}

/// The names of a `tools` list (of a request or a tool search's output).
fn tool_names(tools: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for t in tools.as_array().into_iter().flatten() {
        match (t["type"].as_str(), t["name"].as_str()) {
            (Some("namespace"), Some(ns)) => {
                for inner in t["tools"].as_array().into_iter().flatten() {
                    if let Some(name) = inner["name"].as_str() {
                        out.push(format!("{ns}/{name}"));
                    }
                }
            }
            (_, Some(name)) => out.push(name.to_owned()),
            (Some(kind), None) => out.push(kind.to_owned()),
            _ => {}
        }
    }
    out
}

/// The text of message content or a call's output: a string, or the `text` of its items.
fn visit_text(v: &Value, f: &mut dyn FnMut(&str)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter().for_each(|x| visit_text(x, f)),
        Value::Object(o) => ["text", "content", "output"]
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
pub struct FakeOpenAi {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl FakeOpenAi {
    /// Starts a fake whose main agent requests `script` answers.
    pub fn start(script: impl FnMut(&Request) -> Turn + Send + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake OpenAI API");
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

    /// The base URL of the API (`…/v1`), as a model provider's `base_url`.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// A Codex `config.toml` that makes `model` of a provider named `fake` (this fake, its key
    /// from the variable `key_var`) the default: no login needed.
    pub fn codex_config(&self, model: &str, key_var: &str) -> String {
        format!("{}env_key = \"{key_var}\"\n", self.codex_provider(model))
    }

    /// A Codex `config.toml` whose provider `fake` (this fake) takes the key of Codex's login,
    /// as OpenAI's own does (`requires_openai_auth`): Codex asks its client to log it in.
    pub fn codex_config_with_login(&self, model: &str) -> String {
        format!(
            "{}requires_openai_auth = true\n",
            self.codex_provider(model)
        )
    }

    fn codex_provider(&self, model: &str) -> String {
        format!(
            "model = \"{model}\"\nmodel_provider = \"fake\"\n\n[model_providers.fake]\nname = \"fake\"\nbase_url = \"{}\"\nwire_api = \"responses\"\n",
            self.url()
        )
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

    /// Every call the fake sent, with the output Codex sent back for it (if one came):
    /// (name, arguments or input, output).
    pub fn calls(&self) -> Vec<(String, Value, Option<CallOutput>)> {
        let log = self.requests();
        let outputs: Vec<CallOutput> = log
            .iter()
            .filter(|r| r.main)
            .flat_map(Request::outputs)
            .collect();
        log.iter()
            .flat_map(Request::calls)
            .map(|(id, name, args)| {
                let output = outputs.iter().find(|o| o.call_id == id).cloned();
                (name, args, output)
            })
            .collect()
    }

    /// The output Codex sent back for the first call of `name` whose arguments `matches`.
    pub fn output_of(&self, name: &str, matches: impl Fn(&Value) -> bool) -> Option<CallOutput> {
        self.calls()
            .into_iter()
            .find(|(n, args, _)| n == name && matches(args))
            .and_then(|(_, _, o)| o)
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

impl Drop for FakeOpenAi {
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

/// What kind of request Codex says this is: `x-openai-subagent` (a review, a subagent), else the
/// `request_kind` of its `x-codex-turn-metadata` (`turn` for the main agent's).
fn request_kind(headers: &[(String, String)]) -> Option<String> {
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    if let Some(subagent) = header("x-openai-subagent") {
        return Some(subagent.to_owned());
    }
    let metadata: Value = serde_json::from_str(header("x-codex-turn-metadata")?).ok()?;
    metadata["request_kind"].as_str().map(str::to_owned)
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
    let is_responses = incoming.method == "POST" && route.ends_with("/responses");
    // Codex's own reviews (the guardian that judges a call in its "auto review" mode, a
    // subagent, a compaction) say what they are in their headers; a title has no tools.
    let kind = request_kind(&incoming.headers);
    let main = is_responses
        && kind.as_deref().is_none_or(|k| k == "turn")
        && body["tools"]
            .as_array()
            .is_some_and(|ts| ts.iter().any(|t| t["name"] == "exec_command"));
    let stream = body["stream"] == json!(true);
    let model = body["model"].as_str().unwrap_or("gpt-fake").to_owned();

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

    let (status, content_type, payload, reply) = if is_responses {
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
    } else {
        let error = json!({"error": {"type": "invalid_request_error", "code": "not_found", "message": format!("the fake OpenAI API has no {route}")}});
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
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nx-request-id: req_fake\r\nConnection: keep-alive\r\n\r\n",
        payload.len()
    )
    .into_bytes();
    response.extend_from_slice(&payload);
    response
}

/// The whole (completed) response answering `turn`, with fresh ids.
fn response(turn: &Turn, model: &str) -> Value {
    let output: Vec<Value> = turn
        .items
        .iter()
        .map(|item| match item {
            Item::Text(t) => json!({
                "type": "message",
                "id": fresh("msg"),
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": t, "annotations": []}],
            }),
            Item::Function {
                namespace,
                name,
                arguments,
            } => {
                let mut call = json!({
                    "type": "function_call",
                    "id": fresh("fc"),
                    "status": "completed",
                    "call_id": fresh("call"),
                    "name": name,
                    "arguments": arguments.to_string(),
                });
                if let Some(ns) = namespace {
                    call["namespace"] = json!(ns);
                }
                call
            }
            Item::Custom { name, input } => json!({
                "type": "custom_tool_call",
                "id": fresh("ctc"),
                "status": "completed",
                "call_id": fresh("call"),
                "name": name,
                "input": input,
            }),
            Item::ToolSearch { query } => json!({
                "type": "tool_search_call",
                "id": fresh("tsc"),
                "status": "completed",
                "call_id": fresh("search"),
                "execution": "client",
                "arguments": {"query": query},
            }),
        })
        .collect();
    json!({
        "id": fresh("resp"),
        "object": "response",
        "created_at": std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        "status": "completed",
        "model": model,
        "output": output,
        "usage": {
            "input_tokens": 1000,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 20,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 1020,
        },
    })
}

/// `response` as the event stream of a streamed response.
fn sse(response: &Value) -> String {
    let mut events = Vec::new();
    let mut started = response.clone();
    started["status"] = json!("in_progress");
    started["output"] = json!([]);
    started["usage"] = Value::Null;
    events.push(json!({"type": "response.created", "response": started}));
    for (index, item) in response["output"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let id = item["id"].clone();
        let mut open = item.clone();
        open["status"] = json!("in_progress");
        match item["type"].as_str() {
            Some("message") => {
                open["content"] = json!([]);
                events.push(
                    json!({"type": "response.output_item.added", "output_index": index, "item": open}),
                );
                let text = &item["content"][0]["text"];
                events.push(json!({"type": "response.content_part.added", "item_id": id, "output_index": index, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}));
                events.push(json!({"type": "response.output_text.delta", "item_id": id, "output_index": index, "content_index": 0, "delta": text}));
                events.push(json!({"type": "response.output_text.done", "item_id": id, "output_index": index, "content_index": 0, "text": text}));
                events.push(json!({"type": "response.content_part.done", "item_id": id, "output_index": index, "content_index": 0, "part": item["content"][0]}));
            }
            Some("function_call") => {
                open["arguments"] = json!("");
                events.push(
                    json!({"type": "response.output_item.added", "output_index": index, "item": open}),
                );
                let arguments = item["arguments"].as_str().unwrap_or_default();
                for piece in halves(arguments) {
                    events.push(json!({"type": "response.function_call_arguments.delta", "item_id": id, "output_index": index, "delta": piece}));
                }
                events.push(json!({"type": "response.function_call_arguments.done", "item_id": id, "output_index": index, "arguments": arguments}));
            }
            Some("custom_tool_call") => {
                open["input"] = json!("");
                events.push(
                    json!({"type": "response.output_item.added", "output_index": index, "item": open}),
                );
                let input = item["input"].as_str().unwrap_or_default();
                for piece in halves(input) {
                    events.push(json!({"type": "response.custom_tool_call_input.delta", "item_id": id, "call_id": item["call_id"], "output_index": index, "delta": piece}));
                }
                events.push(json!({"type": "response.custom_tool_call_input.done", "item_id": id, "output_index": index, "input": input}));
            }
            _ => {
                events.push(
                    json!({"type": "response.output_item.added", "output_index": index, "item": open}),
                );
            }
        }
        events.push(
            json!({"type": "response.output_item.done", "output_index": index, "item": item}),
        );
    }
    events.push(json!({"type": "response.completed", "response": response}));
    let mut out = String::new();
    for (n, mut e) in events.into_iter().enumerate() {
        e["sequence_number"] = json!(n);
        out.push_str(&format!(
            "event: {}\ndata: {e}\n\n",
            e["type"].as_str().unwrap_or_default()
        ));
    }
    out
}

/// `s` in two pieces, as the real API splits what it streams.
fn halves(s: &str) -> [&str; 2] {
    let cut = s
        .char_indices()
        .nth(s.chars().count() / 2)
        .map_or(s.len(), |(i, _)| i);
    [&s[..cut], &s[cut..]]
}

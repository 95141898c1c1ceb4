//! OpenAI-compatible Chat Completions, streamed (`POST {base}/chat/completions` with
//! `stream: true`): OpenAI itself, and local servers such as Ollama (`http://localhost:11434/v1`),
//! llama.cpp's server (`http://localhost:8080/v1`) and vLLM (`http://localhost:8000/v1`).
//!
//! The first message is the system prompt: the agent's followed by the phase context, so the
//! context reaches the model fresh each turn and never enters the history. Text deltas go to
//! `on_text`; tool calls arrive in pieces keyed by `index` and are put together at the end. The
//! key is sent as `Authorization: Bearer` only when there is one (local servers need none).
//! Failures are mapped and retried as [`super::http`] describes.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde_json::{json, Value};

use super::http::{self, ApiKey, HttpSettings, StreamParser, Usage};
use super::{
    ErrorKind, Message, Provider, ProviderError, ProviderSpec, StopReason, TextSink, ToolCall,
    Turn, TurnFuture, TurnRequest,
};

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
pub const KEY_VAR: &str = "OPENAI_API_KEY";
pub const BASE_URL_VAR: &str = "OPENAI_BASE_URL";

/// A model behind an OpenAI-compatible Chat Completions API.
pub struct OpenAiProvider {
    client: reqwest::Client,
    base_url: String,
    key: Option<ApiKey>,
    model: String,
    max_tokens: Option<u32>,
    settings: HttpSettings,
    last_usage: Option<Usage>,
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = if self.key.is_some() {
            "<redacted>"
        } else {
            "none"
        };
        f.debug_struct("OpenAiProvider")
            .field("base_url", &self.base_url)
            .field("key", &key)
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    /// A provider for `model` at `base_url` (the URL that `/chat/completions` is appended to,
    /// usually ending in `/v1`); `key` may be `None` for a local server.
    pub fn new(base_url: &str, key: Option<&str>, model: &str) -> Result<Self, String> {
        let key = key.and_then(ApiKey::new);
        if let Some(key) = &key {
            key.header("Bearer ")?;
        }
        let base_url = http::base_url(Some(base_url), &|_| None, BASE_URL_VAR, DEFAULT_BASE_URL)?;
        if model.trim().is_empty() {
            return Err("provider \"openai\" needs a model".to_owned());
        }
        Ok(Self {
            client: http::client()?,
            base_url,
            key,
            model: model.trim().to_owned(),
            max_tokens: None,
            settings: HttpSettings::default(),
            last_usage: None,
        })
    }

    /// The provider a spec names: the key is `configured_key` (from rawko's config) else
    /// `OPENAI_API_KEY` (none is fine for a local server); the base URL the spec's, else
    /// `OPENAI_BASE_URL`, else OpenAI's.
    pub fn from_spec(spec: &ProviderSpec, configured_key: Option<String>) -> Result<Self, String> {
        Self::from_spec_in(spec, configured_key, &|name| std::env::var(name).ok())
    }

    fn from_spec_in(
        spec: &ProviderSpec,
        configured_key: Option<String>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let key = http::configured_or_env_key(configured_key, env, KEY_VAR);
        let model = http::spec_model(
            spec,
            "provider \"openai\" needs a model (for example gpt-4.1, or llama3.2 with Ollama)",
        )?;
        let base_url = http::base_url(
            spec.base_url.as_deref(),
            env,
            BASE_URL_VAR,
            DEFAULT_BASE_URL,
        )?;
        if key.is_none() && base_url == DEFAULT_BASE_URL {
            return Err(format!(
                "provider \"openai\" needs an API key for {DEFAULT_BASE_URL}: set {KEY_VAR} or configure one (a local server needs a baseUrl or {BASE_URL_VAR})"
            ));
        }
        Self::new(&base_url, key.as_deref(), model)
    }

    /// The most tokens the model may answer with in one turn (by default the server decides).
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens.max(1));
        self
    }

    http::settings_builders!();

    /// The token counts of the last successful turn, when the server sent them.
    pub fn last_usage(&self) -> Option<Usage> {
        self.last_usage
    }

    /// The JSON body of a turn's request.
    pub fn request_body(&self, request: &TurnRequest<'_>) -> Value {
        let mut messages = Vec::new();
        if let Some(system) = http::system_prompt(request.system, request.context) {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.extend(conversation(request.messages));
        let mut body = json!({
            "model": self.model,
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
        });
        if let Some(max_tokens) = self.max_tokens {
            body["max_tokens"] = json!(max_tokens);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.input_schema,
                        },
                    })
                })
                .collect();
        }
        body
    }
}

impl http::Streaming for OpenAiProvider {
    const NAME: &'static str = "openai";
    type Parser = StreamState;

    fn settings(&self) -> &HttpSettings {
        &self.settings
    }

    fn key(&self) -> Option<&ApiKey> {
        self.key.as_ref()
    }

    fn request(&self, body: &Value) -> Result<reqwest::RequestBuilder, ProviderError> {
        let request = self
            .client
            .post(format!("{}/chat/completions", self.base_url))
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(body);
        Ok(match &self.key {
            Some(key) => request.header(
                reqwest::header::AUTHORIZATION,
                key.header("Bearer ")
                    .map_err(|m| ProviderError::new(ErrorKind::InvalidRequest, m))?,
            ),
            None => request,
        })
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    /// The window of an OpenAI-compatible server's model is not known (it is the server's).
    fn context_usage(&self) -> Option<super::ContextUsage> {
        self.last_usage.map(|u| super::ContextUsage {
            used: u.input_tokens + u.output_tokens,
            window: None,
        })
    }

    fn turn<'a>(&'a mut self, request: TurnRequest<'a>, on_text: TextSink<'a>) -> TurnFuture<'a> {
        Box::pin(async move {
            let body = self.request_body(&request);
            let (turn, usage) = http::turn(&*self, &body, on_text).await?;
            self.last_usage = usage;
            Ok(turn)
        })
    }
}

/// The conversation as Chat Completions messages.
fn conversation(messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::new();
    for message in messages {
        match message {
            Message::User(text) => out.push(json!({"role": "user", "content": text})),
            Message::Assistant { text, tool_calls } => {
                if text.trim().is_empty() && tool_calls.is_empty() {
                    continue;
                }
                let mut m = json!({
                    "role": "assistant",
                    "content": if text.is_empty() { Value::Null } else { Value::String(text.clone()) },
                });
                if !tool_calls.is_empty() {
                    m["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| {
                            json!({
                                "id": c.id,
                                "type": "function",
                                "function": {"name": c.name, "arguments": c.input.to_string()},
                            })
                        })
                        .collect();
                }
                out.push(m);
            }
            Message::ToolResults(results) => out.extend(results.iter().map(|r| {
                // Chat Completions has no error flag on a tool message: say it in the content.
                let content = if r.is_error {
                    format!("error: {}", r.content)
                } else {
                    r.content.clone()
                };
                json!({"role": "tool", "tool_call_id": r.tool_call_id, "content": content})
            })),
        }
    }
    out
}

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<UsageBody>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Debug, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
struct UsageBody {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

/// A tool call being put together.
#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// The turn as its chunks arrive.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    text: String,
    calls: BTreeMap<u64, PartialCall>,
    finish_reason: Option<String>,
    usage: Option<Usage>,
    done: bool,
}

impl StreamParser for StreamState {
    /// Takes one event; true at `[DONE]`.
    fn on_event(
        &mut self,
        name: &str,
        data: &str,
        on_text: TextSink<'_>,
    ) -> Result<bool, ProviderError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(true);
        }
        let chunk: Chunk =
            serde_json::from_str(data).map_err(|e| http::malformed_event(name, data, e))?;
        if let Some(error) = chunk.error {
            return Err(http::stream_error(&error));
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(Usage {
                input_tokens: usage.prompt_tokens.unwrap_or(0),
                output_tokens: usage.completion_tokens.unwrap_or(0),
            });
        }
        let choices = chunk.choices.unwrap_or_default();
        // One answer is asked for; should a server send more, the first is the turn.
        let Some(choice) = choices.into_iter().find(|c| c.index.unwrap_or(0) == 0) else {
            return Ok(false);
        };
        if let Some(delta) = choice.delta {
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                self.text.push_str(&text);
                on_text(&text);
            }
            for (position, piece) in delta.tool_calls.unwrap_or_default().into_iter().enumerate() {
                let index = piece.index.unwrap_or(position as u64);
                let call = self.calls.entry(index).or_default();
                if let Some(id) = piece.id.filter(|id| !id.is_empty()) {
                    call.id = id;
                }
                if let Some(function) = piece.function {
                    if let Some(name) = function.name.filter(|n| !n.is_empty()) {
                        // Servers send the name once; some repeat it whole in later pieces.
                        if call.name != name {
                            call.name.push_str(&name);
                        }
                    }
                    if let Some(arguments) = function.arguments {
                        call.arguments.push_str(&arguments);
                    }
                }
            }
        }
        if let Some(reason) = choice.finish_reason {
            self.finish_reason = Some(reason);
        }
        Ok(false)
    }

    fn finish(self) -> Result<(Turn, Option<Usage>), ProviderError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(http::ended_early("finish_reason or [DONE]"));
        }
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for (index, call) in self.calls {
            if call.name.is_empty() {
                return Err(ProviderError::new(
                    ErrorKind::Unknown,
                    format!("tool call {index} of the stream has no function name"),
                ));
            }
            let id = if call.id.is_empty() {
                format!("call_{index}")
            } else {
                call.id
            };
            let input = if call.arguments.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&call.arguments).map_err(|e| {
                    ProviderError::new(
                        ErrorKind::Unknown,
                        format!(
                            "the arguments of tool call {} ({id}) are not valid JSON: {e}; they were: {}",
                            call.name,
                            http::excerpt(&call.arguments)
                        ),
                    )
                })?
            };
            tool_calls.push(ToolCall {
                id,
                name: call.name,
                input,
            });
        }
        // Some servers (older Ollama) say "stop" although the turn calls tools.
        let stop_reason = match self.finish_reason.as_deref() {
            Some("length") => StopReason::MaxTokens,
            _ if !tool_calls.is_empty() => StopReason::ToolUse,
            _ => StopReason::EndTurn,
        };
        Ok((
            Turn {
                text: self.text,
                tool_calls,
                stop_reason,
                runner: Default::default(),
            },
            self.usage,
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::provider::{ToolDescription, ToolResult};

    /// The turn the chunks make, and the text streamed on the way.
    type Played = (Result<(Turn, Option<Usage>), ProviderError>, Vec<String>);

    fn play(chunks: &[&str]) -> Played {
        let pieces = Mutex::new(Vec::new());
        let sink = |s: &str| pieces.lock().unwrap().push(s.to_owned());
        let mut state = StreamState::default();
        for chunk in chunks {
            match state.on_event("message", chunk, &sink) {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => return (Err(e), pieces.into_inner().unwrap()),
            }
        }
        (state.finish(), pieces.into_inner().unwrap())
    }

    fn delta(delta: Value) -> String {
        json!({"id": "c1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": null}]}).to_string()
    }

    fn finish(reason: &str) -> String {
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}).to_string()
    }

    #[test]
    fn text_and_tool_calls_are_assembled_by_index() {
        let chunks = [
            delta(json!({"role": "assistant", "content": ""})),
            delta(json!({"content": "Let me "})),
            delta(json!({"content": "look."})),
            delta(json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "Read", "arguments": ""}}]})),
            delta(json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "Glob", "arguments": "{\"pattern\""}}]})),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\":"}}]})),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": " \"a.rs\"}"}}]})),
            delta(json!({"tool_calls": [{"index": 1, "function": {"arguments": ": \"*.rs\"}"}}]})),
            finish("tool_calls"),
            json!({"choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}}).to_string(),
            "[DONE]".to_owned(),
        ];
        let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
        let (turn, pieces) = play(&chunks);
        let (turn, usage) = turn.unwrap();
        assert_eq!(pieces, ["Let me ", "look."]);
        assert_eq!(turn.text, "Let me look.");
        assert_eq!(turn.stop_reason, StopReason::ToolUse);
        assert_eq!(
            turn.tool_calls,
            [
                ToolCall {
                    id: "call_a".into(),
                    name: "Read".into(),
                    input: json!({"path": "a.rs"})
                },
                ToolCall {
                    id: "call_b".into(),
                    name: "Glob".into(),
                    input: json!({"pattern": "*.rs"})
                },
            ]
        );
        assert_eq!(
            usage,
            Some(Usage {
                input_tokens: 12,
                output_tokens: 7
            })
        );
    }

    #[test]
    fn tool_calls_without_index_or_id_and_a_stop_reason_of_stop() {
        // Ollama-like: the whole call in one piece, finish_reason "stop".
        let chunks = [
            delta(
                json!({"tool_calls": [{"function": {"name": "Read", "arguments": "{\"path\":\"b\"}"}}]}),
            ),
            finish("stop"),
        ];
        let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
        let (turn, _) = play(&chunks);
        let (turn, usage) = turn.unwrap();
        assert_eq!(turn.stop_reason, StopReason::ToolUse);
        assert_eq!(turn.tool_calls[0].id, "call_0");
        assert_eq!(turn.tool_calls[0].input, json!({"path": "b"}));
        assert_eq!(usage, None);
    }

    #[test]
    fn finish_reasons() {
        for (reason, want) in [
            ("stop", StopReason::EndTurn),
            ("length", StopReason::MaxTokens),
        ] {
            let chunks = [delta(json!({"content": "x"})), finish(reason)];
            let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
            assert_eq!(play(&chunks).0.unwrap().0.stop_reason, want, "{reason}");
        }
    }

    #[test]
    fn broken_streams_are_clear_errors() {
        let chunks = [
            delta(
                json!({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "Write", "arguments": "{\"pa"}}]}),
            ),
            finish("tool_calls"),
            "[DONE]".to_owned(),
        ];
        let chunks: Vec<&str> = chunks.iter().map(String::as_str).collect();
        let e = play(&chunks).0.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unknown);
        assert!(
            e.message
                .starts_with("the arguments of tool call Write (c) are not valid JSON"),
            "{e}"
        );

        let chunk = delta(json!({"content": "partial"}));
        let e = play(&[&chunk]).0.unwrap_err();
        assert_eq!(e.kind, ErrorKind::NetworkError);

        let e = play(&["{\"choices\": [{\"delta\": "]).0.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unknown);
        assert!(
            e.message.starts_with("malformed stream event `message`"),
            "{e}"
        );

        let error =
            json!({"error": {"message": "Rate limit reached", "type": "rate_limit_exceeded"}})
                .to_string();
        assert_eq!(play(&[&error]).0.unwrap_err().kind, ErrorKind::RateLimited);
    }

    #[test]
    fn the_request_carries_system_context_tools_and_converted_messages() {
        let p = OpenAiProvider::new("http://127.0.0.1:1/v1", None, "llama3.2").unwrap();
        let messages = [
            Message::User("Fix the bug".into()),
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "Read".into(),
                    input: json!({"path": "a.rs"}),
                }],
            },
            Message::ToolResults(vec![
                ToolResult {
                    tool_call_id: "call_1".into(),
                    content: "no such file".into(),
                    is_error: true,
                },
                ToolResult {
                    tool_call_id: "call_2".into(),
                    content: "ok".into(),
                    is_error: false,
                },
            ]),
        ];
        let tools = [ToolDescription {
            name: "Read".into(),
            description: "Reads a file".into(),
            input_schema: json!({"type": "object"}),
        }];
        let body = p.with_max_tokens(100).request_body(&TurnRequest {
            system: Some("You are careful."),
            messages: &messages,
            context: Some("Phase: Explore"),
            tools: &tools,
        });
        assert_eq!(
            body,
            json!({
                "model": "llama3.2",
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": 100,
                "messages": [
                    {"role": "system", "content": "You are careful.\n\nPhase: Explore"},
                    {"role": "user", "content": "Fix the bug"},
                    {"role": "assistant", "content": null, "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "Read", "arguments": "{\"path\":\"a.rs\"}"}},
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "error: no such file"},
                    {"role": "tool", "tool_call_id": "call_2", "content": "ok"},
                ],
                "tools": [{"type": "function", "function": {"name": "Read", "description": "Reads a file", "parameters": {"type": "object"}}}],
            })
        );
    }

    #[test]
    fn specs_take_keys_and_base_urls_from_config_then_environment() {
        let spec = |base_url: Option<&str>| ProviderSpec {
            name: "openai".into(),
            script: None,
            model: Some("m".into()),
            base_url: base_url.map(str::to_owned),
            ..ProviderSpec::default()
        };
        let local =
            |name: &str| (name == BASE_URL_VAR).then(|| "http://127.0.0.1:11434/v1".to_owned());
        let p = OpenAiProvider::from_spec_in(&spec(None), None, &local).unwrap();
        assert_eq!(p.base_url, "http://127.0.0.1:11434/v1");
        assert_eq!(p.key, None, "a local server needs no key");
        let p = OpenAiProvider::from_spec_in(
            &spec(Some("http://spec.invalid/v1")),
            Some("sk-c".into()),
            &local,
        )
        .unwrap();
        assert_eq!(p.base_url, "http://spec.invalid/v1");
        assert_eq!(p.key, ApiKey::new("sk-c"));
        let e = OpenAiProvider::from_spec_in(&spec(None), None, &|_| None).unwrap_err();
        assert!(e.contains(KEY_VAR), "{e}");
        let env_key = |name: &str| (name == KEY_VAR).then(|| "sk-env".to_owned());
        let p = OpenAiProvider::from_spec_in(&spec(None), None, &env_key).unwrap();
        assert_eq!(p.base_url, DEFAULT_BASE_URL);
        assert!(!format!("{p:?}").contains("sk-env"));
    }
}

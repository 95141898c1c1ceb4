//! The Anthropic Messages API, streamed (`POST {base}/v1/messages` with `stream: true`).
//!
//! The system prompt is the agent's followed by the phase context, so the context reaches the
//! model fresh each turn and never enters the history. Text deltas go to `on_text` as they come;
//! a tool call's input arrives as pieces of JSON that are put together and parsed when its block
//! ends. Failures are mapped and retried as [`super::http`] describes.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde_json::{json, Value};

use super::http::{self, ApiKey, HttpSettings, StreamParser, Usage};
use super::{
    ErrorKind, Message, Provider, ProviderError, ProviderSpec, StopReason, TextSink, ToolCall,
    Turn, TurnFuture, TurnRequest,
};

pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
pub const API_VERSION: &str = "2023-06-01";
pub const DEFAULT_MAX_TOKENS: u32 = 8192;
pub const KEY_VAR: &str = "ANTHROPIC_API_KEY";
pub const BASE_URL_VAR: &str = "ANTHROPIC_BASE_URL";

/// A model behind the Anthropic Messages API.
pub struct AnthropicProvider {
    client: reqwest::Client,
    base_url: String,
    key: ApiKey,
    model: String,
    max_tokens: u32,
    settings: HttpSettings,
    last_usage: Option<Usage>,
}

impl fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("base_url", &self.base_url)
            .field("key", &"<redacted>")
            .field("model", &self.model)
            .field("max_tokens", &self.max_tokens)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl AnthropicProvider {
    /// A provider for `model` at `base_url` (e.g. [`DEFAULT_BASE_URL`]).
    pub fn new(base_url: &str, key: &str, model: &str) -> Result<Self, String> {
        let key = ApiKey::new(key).ok_or("provider \"anthropic\" needs an API key")?;
        key.header("")?;
        let base_url = http::base_url(Some(base_url), &|_| None, BASE_URL_VAR, DEFAULT_BASE_URL)?;
        if model.trim().is_empty() {
            return Err("provider \"anthropic\" needs a model".to_owned());
        }
        Ok(Self {
            client: http::client()?,
            base_url,
            key,
            model: model.trim().to_owned(),
            max_tokens: DEFAULT_MAX_TOKENS,
            settings: HttpSettings::default(),
            last_usage: None,
        })
    }

    /// The provider a spec names: the key is `configured_key` (from rawko's config) else
    /// `ANTHROPIC_API_KEY`; the base URL the spec's, else `ANTHROPIC_BASE_URL`, else the official one.
    pub fn from_spec(spec: &ProviderSpec, configured_key: Option<String>) -> Result<Self, String> {
        Self::from_spec_in(spec, configured_key, &|name| std::env::var(name).ok())
    }

    fn from_spec_in(
        spec: &ProviderSpec,
        configured_key: Option<String>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, String> {
        let key = http::configured_or_env_key(configured_key, env, KEY_VAR).ok_or_else(|| {
            format!("provider \"anthropic\" needs an API key: set {KEY_VAR} or configure one")
        })?;
        let model = http::spec_model(
            spec,
            "provider \"anthropic\" needs a model (for example claude-sonnet-4-5)",
        )?;
        let base_url = http::base_url(
            spec.base_url.as_deref(),
            env,
            BASE_URL_VAR,
            DEFAULT_BASE_URL,
        )?;
        Self::new(&base_url, &key, model)
    }

    /// The most tokens the model may answer with in one turn (default 8192).
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens.max(1);
        self
    }

    http::settings_builders!();

    /// The token counts of the last successful turn.
    pub fn last_usage(&self) -> Option<Usage> {
        self.last_usage
    }

    /// The JSON body of a turn's request.
    pub fn request_body(&self, request: &TurnRequest<'_>) -> Value {
        let mut body = json!({
            "model": self.model,
            "max_tokens": self.max_tokens,
            "stream": true,
            "messages": messages(request.messages),
        });
        if let Some(system) = http::system_prompt(request.system, request.context) {
            body["system"] = Value::String(system);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({
                        "name": t.name,
                        "description": t.description,
                        "input_schema": t.input_schema,
                    })
                })
                .collect();
        }
        body
    }
}

fn invalid(message: String) -> ProviderError {
    ProviderError::new(ErrorKind::InvalidRequest, message)
}

impl http::Streaming for AnthropicProvider {
    const NAME: &'static str = "anthropic";
    type Parser = StreamState;

    fn settings(&self) -> &HttpSettings {
        &self.settings
    }

    fn key(&self) -> Option<&ApiKey> {
        Some(&self.key)
    }

    fn request(&self, body: &Value) -> Result<reqwest::RequestBuilder, ProviderError> {
        Ok(self
            .client
            .post(format!("{}/v1/messages", self.base_url))
            .header("x-api-key", self.key.header("").map_err(invalid)?)
            .header("anthropic-version", API_VERSION)
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(body))
    }
}

/// The context window of the Claude models (their standard one: 200k tokens).
pub const CONTEXT_WINDOW: u64 = 200_000;

impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }

    fn context_usage(&self) -> Option<super::ContextUsage> {
        self.last_usage.map(|u| super::ContextUsage {
            used: u.input_tokens + u.output_tokens,
            window: Some(CONTEXT_WINDOW),
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

/// The conversation as Messages API messages. Consecutive messages of one role are merged (the
/// API wants user and assistant to alternate), with tool results first in a user message.
fn messages(messages: &[Message]) -> Vec<Value> {
    let mut merged: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message {
            Message::User(text) => ("user", text_block(text).into_iter().collect()),
            Message::Assistant { text, tool_calls } => {
                let mut blocks: Vec<Value> = text_block(text).into_iter().collect();
                blocks.extend(tool_calls.iter().map(|call| {
                    let input = match &call.input {
                        Value::Object(_) => call.input.clone(),
                        Value::Null => json!({}),
                        other => json!({ "value": other }),
                    };
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input})
                }));
                ("assistant", blocks)
            }
            Message::ToolResults(results) => (
                "user",
                results
                    .iter()
                    .map(|r| {
                        json!({
                            "type": "tool_result",
                            "tool_use_id": r.tool_call_id,
                            "content": r.content,
                            "is_error": r.is_error,
                        })
                    })
                    .collect(),
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match merged.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => merged.push((role, blocks)),
        }
    }
    merged
        .into_iter()
        .map(|(role, mut content)| {
            // Tool results must open the user message that answers the tool calls.
            content.sort_by_key(|b| b["type"] != "tool_result");
            json!({"role": role, "content": content})
        })
        .collect()
}

fn text_block(text: &str) -> Option<Value> {
    (!text.trim().is_empty()).then(|| json!({"type": "text", "text": text}))
}

/// A streamed event, by its `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: u64,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: u64,
        delta: Delta,
    },
    ContentBlockStop {
        index: u64,
    },
    MessageDelta {
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<UsageBody>,
    },
    MessageStop,
    Ping,
    Error {
        error: Value,
    },
    /// Event types added to the API later are ignored, as Anthropic asks.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct MessageStart {
    #[serde(default)]
    usage: Option<UsageBody>,
}

#[derive(Debug, Deserialize)]
struct UsageBody {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Option<Value>,
    },
    /// Thinking and server tool blocks: not part of the turn.
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

/// An open content block.
#[derive(Debug)]
enum Block {
    Text,
    ToolUse {
        id: String,
        name: String,
        start_input: Option<Value>,
        json: String,
    },
    Other,
}

/// The turn as its events arrive.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    open: BTreeMap<u64, Block>,
    text: String,
    tool_calls: Vec<ToolCall>,
    stop_reason: Option<String>,
    usage: Usage,
    stopped: bool,
}

impl StreamParser for StreamState {
    /// Takes one event; true when the message is complete.
    fn on_event(
        &mut self,
        name: &str,
        data: &str,
        on_text: TextSink<'_>,
    ) -> Result<bool, ProviderError> {
        let event: Event =
            serde_json::from_str(data).map_err(|e| http::malformed_event(name, data, e))?;
        match event {
            Event::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.add_usage(usage);
                }
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => {
                let block = match content_block {
                    ContentBlock::Text { text } => {
                        self.push_text(&text, on_text);
                        Block::Text
                    }
                    ContentBlock::ToolUse { id, name, input } => Block::ToolUse {
                        id,
                        name,
                        start_input: input,
                        json: String::new(),
                    },
                    ContentBlock::Other => Block::Other,
                };
                self.open.insert(index, block);
            }
            Event::ContentBlockDelta { index, delta } => match (self.open.get_mut(&index), delta) {
                (Some(Block::Text), Delta::Text { text }) => self.push_text(&text, on_text),
                (Some(Block::ToolUse { json, .. }), Delta::InputJson { partial_json }) => {
                    json.push_str(&partial_json)
                }
                (None, _) => {
                    return Err(http::malformed_event(
                        name,
                        data,
                        format!("no content block {index} was started"),
                    ))
                }
                _ => {}
            },
            Event::ContentBlockStop { index } => {
                if let Some(block) = self.open.remove(&index) {
                    self.close(block)?;
                }
            }
            Event::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop_reason = Some(reason);
                }
                if let Some(usage) = usage {
                    self.add_usage(usage);
                }
            }
            Event::MessageStop => {
                self.stopped = true;
                return Ok(true);
            }
            Event::Error { error } => return Err(http::stream_error(&error)),
            Event::Ping | Event::Other => {}
        }
        Ok(false)
    }

    fn finish(self) -> Result<(Turn, Option<Usage>), ProviderError> {
        StreamState::finish(self).map(|(turn, usage)| (turn, Some(usage)))
    }
}

impl StreamState {
    fn push_text(&mut self, text: &str, on_text: TextSink<'_>) {
        if !text.is_empty() {
            self.text.push_str(text);
            on_text(text);
        }
    }

    /// Counts are cumulative: a later event's count replaces an earlier one.
    fn add_usage(&mut self, usage: UsageBody) {
        if let Some(n) = usage.input_tokens {
            self.usage.input_tokens = n;
        }
        if let Some(n) = usage.output_tokens {
            self.usage.output_tokens = n;
        }
    }

    fn close(&mut self, block: Block) -> Result<(), ProviderError> {
        let Block::ToolUse {
            id,
            name,
            start_input,
            json,
        } = block
        else {
            return Ok(());
        };
        let input = if json.trim().is_empty() {
            start_input.unwrap_or_else(|| json!({}))
        } else {
            serde_json::from_str(&json).map_err(|e| {
                ProviderError::new(
                    ErrorKind::Unknown,
                    format!(
                        "the input of tool call {name} ({id}) is not valid JSON: {e}; it was: {}",
                        http::excerpt(&json)
                    ),
                )
            })?
        };
        self.tool_calls.push(ToolCall { id, name, input });
        Ok(())
    }

    fn finish(mut self) -> Result<(Turn, Usage), ProviderError> {
        if !self.stopped {
            return Err(http::ended_early("message_stop"));
        }
        for block in std::mem::take(&mut self.open).into_values() {
            self.close(block)?;
        }
        let stop_reason = match self.stop_reason.as_deref() {
            Some("max_tokens" | "model_context_window_exceeded") => StopReason::MaxTokens,
            _ if !self.tool_calls.is_empty() => StopReason::ToolUse,
            _ => StopReason::EndTurn,
        };
        Ok((
            Turn {
                text: self.text,
                tool_calls: self.tool_calls,
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

    fn play(events: &[Value]) -> (Result<(Turn, Usage), ProviderError>, Vec<String>) {
        let pieces = Mutex::new(Vec::new());
        let sink = |s: &str| pieces.lock().unwrap().push(s.to_owned());
        let mut state = StreamState::default();
        for event in events {
            let name = event["type"].as_str().unwrap_or("message");
            match state.on_event(name, &event.to_string(), &sink) {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => return (Err(e), pieces.into_inner().unwrap()),
            }
        }
        (state.finish(), pieces.into_inner().unwrap())
    }

    fn start(input_tokens: u64) -> Value {
        json!({"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": input_tokens, "output_tokens": 1}}})
    }

    #[test]
    fn text_and_tool_calls_are_assembled() {
        let (turn, pieces) = play(&[
            start(25),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "ping"}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Reading "}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "first."}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ""}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"pa"}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "th\": \"README.md\"}"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_2", "name": "Glob", "input": {}}}),
            json!({"type": "content_block_stop", "index": 2}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 40}}),
            json!({"type": "some_future_event"}),
            json!({"type": "message_stop"}),
        ]);
        let (turn, usage) = turn.unwrap();
        assert_eq!(pieces, ["Reading ", "first."]);
        assert_eq!(turn.text, "Reading first.");
        assert_eq!(turn.stop_reason, StopReason::ToolUse);
        assert_eq!(
            turn.tool_calls,
            [
                ToolCall {
                    id: "toolu_1".into(),
                    name: "Read".into(),
                    input: json!({"path": "README.md"})
                },
                ToolCall {
                    id: "toolu_2".into(),
                    name: "Glob".into(),
                    input: json!({})
                },
            ]
        );
        assert_eq!(
            usage,
            Usage {
                input_tokens: 25,
                output_tokens: 40
            }
        );
    }

    #[test]
    fn stop_reasons() {
        for (reason, want) in [
            ("end_turn", StopReason::EndTurn),
            ("max_tokens", StopReason::MaxTokens),
            ("stop_sequence", StopReason::EndTurn),
        ] {
            let (turn, _) = play(&[
                start(1),
                json!({"type": "message_delta", "delta": {"stop_reason": reason}}),
                json!({"type": "message_stop"}),
            ]);
            assert_eq!(turn.unwrap().0.stop_reason, want, "{reason}");
        }
    }

    #[test]
    fn broken_streams_are_clear_errors() {
        let (e, _) = play(&[
            start(1),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "Write", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": "}}),
            json!({"type": "content_block_stop", "index": 0}),
        ]);
        let e = e.unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unknown);
        assert!(
            e.message
                .starts_with("the input of tool call Write (toolu_1) is not valid JSON"),
            "{e}"
        );

        let (e, _) = play(&[start(1)]);
        let e = e.unwrap_err();
        assert_eq!(e.kind, ErrorKind::NetworkError);
        assert!(e.message.contains("no message_stop"), "{e}");

        let (e, _) = play(&[
            start(1),
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ]);
        assert_eq!(e.unwrap_err().kind, ErrorKind::RateLimited);

        let sink = |_: &str| {};
        let mut state = StreamState::default();
        let e = state
            .on_event(
                "content_block_delta",
                "{\"type\": \"content_block_delta\"",
                &sink,
            )
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Unknown);
        assert!(
            e.message
                .starts_with("malformed stream event `content_block_delta`"),
            "{e}"
        );
    }

    #[test]
    fn the_request_carries_system_context_tools_and_converted_messages() {
        let p = AnthropicProvider::new("http://127.0.0.1:1/", "sk-test", "claude-test").unwrap();
        let messages = [
            Message::User("Fix the bug".into()),
            Message::Assistant {
                text: "Reading.".into(),
                tool_calls: vec![ToolCall {
                    id: "toolu_1".into(),
                    name: "Read".into(),
                    input: json!({"path": "a.rs"}),
                }],
            },
            Message::ToolResults(vec![ToolResult {
                tool_call_id: "toolu_1".into(),
                content: "no such file".into(),
                is_error: true,
            }]),
            Message::User("Go on".into()),
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![],
            },
        ];
        let tools = [ToolDescription {
            name: "Read".into(),
            description: "Reads a file".into(),
            input_schema: json!({"type": "object"}),
        }];
        let body = p.request_body(&TurnRequest {
            system: Some("You are careful."),
            messages: &messages,
            context: Some("Phase: Explore"),
            tools: &tools,
        });
        assert_eq!(
            body,
            json!({
                "model": "claude-test",
                "max_tokens": 8192,
                "stream": true,
                "system": "You are careful.\n\nPhase: Explore",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "Fix the bug"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Reading."},
                        {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a.rs"}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "no such file", "is_error": true},
                        {"type": "text", "text": "Go on"},
                    ]},
                ],
                "tools": [{"name": "Read", "description": "Reads a file", "input_schema": {"type": "object"}}],
            })
        );
    }

    #[test]
    fn specs_take_keys_and_base_urls_from_config_then_environment() {
        let spec = |base_url: Option<&str>| ProviderSpec {
            name: "anthropic".into(),
            script: None,
            model: Some("claude-test".into()),
            base_url: base_url.map(str::to_owned),
            ..ProviderSpec::default()
        };
        let env = |name: &str| match name {
            KEY_VAR => Some("sk-from-env".to_owned()),
            BASE_URL_VAR => Some("http://env.invalid:8080/".to_owned()),
            _ => None,
        };
        let p = AnthropicProvider::from_spec_in(&spec(None), None, &env).unwrap();
        assert_eq!(p.base_url, "http://env.invalid:8080");
        assert_eq!(p.key, ApiKey::new("sk-from-env").unwrap());
        let p = AnthropicProvider::from_spec_in(
            &spec(Some("http://spec.invalid")),
            Some("sk-configured".into()),
            &env,
        )
        .unwrap();
        assert_eq!(p.base_url, "http://spec.invalid");
        assert_eq!(p.key, ApiKey::new("sk-configured").unwrap());
        let p = AnthropicProvider::from_spec_in(&spec(None), Some("k".into()), &|_| None).unwrap();
        assert_eq!(p.base_url, DEFAULT_BASE_URL);

        let e = AnthropicProvider::from_spec_in(&spec(None), None, &|_| None).unwrap_err();
        assert!(e.contains(KEY_VAR), "{e}");
        let mut no_model = spec(None);
        no_model.model = None;
        let e =
            AnthropicProvider::from_spec_in(&no_model, Some("k".into()), &|_| None).unwrap_err();
        assert!(e.contains("needs a model"), "{e}");
    }

    #[test]
    fn debug_output_hides_the_key() {
        let p = AnthropicProvider::new(DEFAULT_BASE_URL, "sk-ant-very-secret", "m").unwrap();
        let debug = format!("{p:?}");
        assert!(!debug.contains("sk-ant-very-secret"), "{debug}");
        assert!(debug.contains("<redacted>"), "{debug}");
    }
}

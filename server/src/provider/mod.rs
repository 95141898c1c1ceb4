//! Model providers behind one trait: the engine asks for the next turn and gets text and tool
//! calls back, with text streamed as it arrives. `scripted` replays a file of turns with no
//! network (tests, `rawko demo`, the editor tests).

pub mod anthropic;
pub mod http;
pub mod openai;
pub mod scripted;

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of the conversation the provider continues.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    User(String),
    Assistant {
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    ToolResults(Vec<ToolResult>),
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: Value,
}

/// What a tool call gave back to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub tool_call_id: String,
    pub content: String,
    pub is_error: bool,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDescription {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// Everything a provider needs for one turn.
pub struct TurnRequest<'a> {
    /// The running agent's system prompt.
    pub system: Option<&'a str>,
    /// The conversation so far.
    pub messages: &'a [Message],
    /// The phase context, injected fresh before every turn (not kept in the conversation).
    pub context: Option<&'a str>,
    pub tools: &'a [ToolDescription],
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
}

/// A whole turn of the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub stop_reason: StopReason,
}

/// The provider error codes (the same across providers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    AuthenticationFailed,
    RateLimited,
    ContextLengthExceeded,
    InvalidRequest,
    ModelUnavailable,
    NetworkError,
    Unknown,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::AuthenticationFailed => "authentication_failed",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::ContextLengthExceeded => "context_length_exceeded",
            ErrorKind::InvalidRequest => "invalid_request",
            ErrorKind::ModelUnavailable => "model_unavailable",
            ErrorKind::NetworkError => "network_error",
            ErrorKind::Unknown => "unknown",
        }
    }

    pub fn parse(code: &str) -> Option<Self> {
        [
            ErrorKind::AuthenticationFailed,
            ErrorKind::RateLimited,
            ErrorKind::ContextLengthExceeded,
            ErrorKind::InvalidRequest,
            ErrorKind::ModelUnavailable,
            ErrorKind::NetworkError,
            ErrorKind::Unknown,
        ]
        .into_iter()
        .find(|k| k.as_str() == code)
    }

    /// Errors worth retrying: they say nothing about the request itself.
    pub fn is_recoverable(self) -> bool {
        matches!(self, ErrorKind::RateLimited | ErrorKind::NetworkError)
    }
}

/// A failed turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderError {
    pub kind: ErrorKind,
    pub message: String,
    pub retry_after: Option<Duration>,
}

impl ProviderError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            retry_after: None,
        }
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.message)
    }
}

impl std::error::Error for ProviderError {}

/// Receives streamed text as the model produces it.
pub type TextSink<'a> = &'a (dyn Fn(&str) + Send + Sync);

pub type TurnFuture<'a> = Pin<Box<dyn Future<Output = Result<Turn, ProviderError>> + Send + 'a>>;

/// A model provider. Dropping the returned future aborts the turn.
pub trait Provider: Send {
    /// The provider's name as configured (`scripted`, `anthropic`, `openai`).
    fn name(&self) -> &str;

    /// Runs one turn: streams text to `on_text` and returns the whole turn.
    fn turn<'a>(&'a mut self, request: TurnRequest<'a>, on_text: TextSink<'a>) -> TurnFuture<'a>;

    /// Continues a resumed task whose log recorded `turns` turns of this provider. Providers that
    /// are given the whole conversation each turn need nothing; a scripted one skips what it played.
    fn resume_after(&mut self, _turns: usize) {}
}

/// How to build a task's provider again, as written in its log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Where an HTTP provider's API is (never a key: the spec is written to task logs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}

impl ProviderSpec {
    /// Builds the provider, with API keys from the environment; the error says what is wrong
    /// with the spec.
    pub fn build(&self) -> Result<Box<dyn Provider>, String> {
        self.build_with(&|_| None)
    }

    /// Builds the provider; `keys(name)` gives the API key configured for provider `name`, which
    /// goes before the environment's (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`).
    pub fn build_with(
        &self,
        keys: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Box<dyn Provider>, String> {
        match self.name.as_str() {
            "scripted" => {
                let script = self
                    .script
                    .as_ref()
                    .ok_or("provider \"scripted\" needs a script: the path of a file of turns")?;
                scripted::ScriptedProvider::load(script)
                    .map(|p| Box::new(p) as Box<dyn Provider>)
                    .map_err(|e| e.to_string())
            }
            "anthropic" => anthropic::AnthropicProvider::from_spec(self, keys("anthropic"))
                .map(|p| Box::new(p) as Box<dyn Provider>),
            "openai" => openai::OpenAiProvider::from_spec(self, keys("openai"))
                .map(|p| Box::new(p) as Box<dyn Provider>),
            other => Err(format!(
                "unknown provider \"{other}\"; this build knows: scripted, anthropic, openai"
            )),
        }
    }
}

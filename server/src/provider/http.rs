//! What the HTTP providers (`anthropic`, `openai`) share: the client, the API key that never shows
//! up in a message, sending a request and mapping HTTP and transport failures to an [`ErrorKind`],
//! retrying recoverable failures with backoff, and reading a server-sent event stream that fails
//! when it stalls.
//!
//! Which kind a failure gets decides what happens next: only `rate_limited` and `network_error`
//! are retried here (and recovered from by the engine's machine), so a failure is given one of
//! them only when trying again later can help.
//!
//! | what the server said | kind | why |
//! |---|---|---|
//! | 401, 403 | `authentication_failed` | the key is wrong or lacks access |
//! | 429 | `rate_limited` | `retry-after` (seconds or an HTTP date) is kept in `retry_after` |
//! | 529, an `overloaded_error` | `rate_limited` | the service asks clients to back off; retrying later helps |
//! | 500, 502, 503, 504 | `network_error` | a transient failure between rawko and the model, not a fault of the request |
//! | 413, or 400/422 whose text speaks of the context length | `context_length_exceeded` | |
//! | 404 whose text names the model | `model_unavailable` | the model is not there; retrying cannot help |
//! | other 400, 404, 422 | `invalid_request` | a 404 also names the URL, since a wrong base URL is the usual cause |
//! | connection refused, reset, timed out, a stalled stream | `network_error` | |
//! | a malformed stream event | `unknown` | the message names the event |

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use eventsource_stream::{EventStreamError, Eventsource};
use futures::{Stream, StreamExt};
use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use reqwest::StatusCode;
use serde_json::Value;

use super::{ErrorKind, ProviderError, TextSink, Turn};

/// How long connecting to the server may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// An API key. It is sent in a header marked sensitive and is never shown: `Debug` redacts it
/// and [`ApiKey::redact`] scrubs it from any text a server sends back.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// A key, or `None` when `key` is empty or blank.
    pub fn new(key: impl Into<String>) -> Option<Self> {
        let key = key.into().trim().to_owned();
        (!key.is_empty()).then_some(Self(key))
    }

    /// The key as a header value (`prefix` is e.g. `"Bearer "`), marked sensitive.
    pub fn header(&self, prefix: &str) -> Result<HeaderValue, String> {
        let mut value = HeaderValue::from_str(&format!("{prefix}{}", self.0))
            .map_err(|_| "the API key contains characters a header cannot carry".to_owned())?;
        value.set_sensitive(true);
        Ok(value)
    }

    /// `text` with every occurrence of the key replaced.
    pub fn redact(&self, text: &str) -> String {
        text.replace(&self.0, "<redacted>")
    }

    /// `error` with the key scrubbed from its message.
    pub fn redact_error(&self, mut error: ProviderError) -> ProviderError {
        if error.message.contains(&self.0) {
            error.message = self.redact(&error.message);
        }
        error
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Token counts of a turn, as the server reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// When and how often a failed turn is tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry {
    /// Attempts in all, the first included (1: never retry).
    pub max_attempts: u32,
    /// The wait after the first failure; it doubles after each further one.
    pub base_delay: Duration,
    /// The longest wait between attempts.
    pub max_delay: Duration,
    /// A server's `retry-after` up to this long is waited out; a longer one ends the turn at once
    /// (the engine's machine decides what to do then).
    pub max_retry_after: Duration,
}

impl Default for Retry {
    fn default() -> Self {
        Self {
            max_attempts: 5,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl Retry {
    /// The exponential backoff after `failed` failures (1 → `base_delay`).
    pub fn backoff(&self, failed: u32) -> Duration {
        let doublings = failed.saturating_sub(1).min(20);
        self.base_delay
            .saturating_mul(1 << doublings)
            .min(self.max_delay)
    }

    /// How long to wait before trying again after `failed` failures, or `None` when `error` is
    /// to be returned: it is not recoverable, the attempts are used up, the server asks for a
    /// longer wait than we keep a turn waiting, or text was already streamed (a retry would
    /// stream it twice).
    pub fn delay(&self, failed: u32, error: &ProviderError, streamed: bool) -> Option<Duration> {
        if streamed || !error.kind.is_recoverable() || failed >= self.max_attempts {
            return None;
        }
        match error.retry_after {
            Some(wait) if wait > self.max_retry_after => None,
            Some(wait) => Some(wait),
            None => Some(self.backoff(failed)),
        }
    }
}

/// The retry policy and time limits of an HTTP provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpSettings {
    pub retry: Retry,
    /// How long to wait for the response's status and headers. Generous, since a local server may
    /// load the model or read a long prompt first.
    pub response_timeout: Duration,
    /// How long a streamed response may send no bytes before the turn fails.
    pub stall_timeout: Duration,
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            retry: Retry::default(),
            response_timeout: Duration::from_secs(300),
            stall_timeout: Duration::from_secs(60),
        }
    }
}

/// The HTTP client of a provider.
pub fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("rawko/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {}", chain(&e)))
}

/// A base URL from the spec, else the environment variable `var`, else `default`, without a
/// trailing slash; the error says which one is not a URL.
pub fn base_url(
    from_spec: Option<&str>,
    env: &dyn Fn(&str) -> Option<String>,
    var: &str,
    default: &str,
) -> Result<String, String> {
    let (url, source) = match (
        from_spec.filter(|u| !u.trim().is_empty()),
        env(var).filter(|u| !u.trim().is_empty()),
    ) {
        (Some(url), _) => (url.trim().to_owned(), "baseUrl".to_owned()),
        (None, Some(url)) => (url.trim().to_owned(), var.to_owned()),
        (None, None) => (default.to_owned(), "default".to_owned()),
    };
    match reqwest::Url::parse(&url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => Ok(url.trim_end_matches('/').to_owned()),
        Ok(_) => Err(format!("{source} \"{url}\" must be an http or https URL")),
        Err(e) => Err(format!("{source} \"{url}\" is not a URL: {e}")),
    }
}

/// The system prompt a model gets: the agent's, then the phase context (injected fresh each
/// turn, so it is never part of the conversation history).
pub fn system_prompt(system: Option<&str>, context: Option<&str>) -> Option<String> {
    let parts: Vec<&str> = [system, context]
        .into_iter()
        .flatten()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// Runs `attempt` until it succeeds or [`Retry::delay`] says to stop, sleeping in between.
/// `streamed` tells whether text of the turn already reached the user.
pub async fn with_retries<T, F, Fut>(
    provider: &str,
    retry: &Retry,
    streamed: &AtomicBool,
    mut attempt: F,
) -> Result<T, ProviderError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ProviderError>>,
{
    let mut failed = 0u32;
    loop {
        let error = match attempt().await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        failed += 1;
        let was_streamed = streamed.load(Ordering::SeqCst);
        match retry.delay(failed, &error, was_streamed) {
            Some(wait) => {
                tracing::warn!(provider, attempt = failed, ?wait, %error, "retrying the turn");
                tokio::time::sleep(wait).await;
            }
            None => return Err(gave_up(error, failed, was_streamed)),
        }
    }
}

/// Says in the message why a recoverable error was not retried (further).
fn gave_up(mut error: ProviderError, failed: u32, streamed: bool) -> ProviderError {
    if !error.kind.is_recoverable() {
        return error;
    }
    if streamed {
        error
            .message
            .push_str(" (not retried: part of the answer was already streamed)");
    } else if failed > 1 {
        error
            .message
            .push_str(&format!(" (gave up after {failed} attempts)"));
    }
    error
}

/// Sends `request` and returns the response when its status is a success, else the mapped error.
pub async fn send(
    request: reqwest::RequestBuilder,
    settings: &HttpSettings,
) -> Result<reqwest::Response, ProviderError> {
    let response = match tokio::time::timeout(settings.response_timeout, request.send()).await {
        Err(_) => {
            return Err(ProviderError::new(
                ErrorKind::NetworkError,
                format!(
                    "no response within {} s",
                    settings.response_timeout.as_secs_f64()
                ),
            ))
        }
        Ok(Err(e)) => return Err(transport_error(&e)),
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    if status.is_success() {
        return expect_event_stream(response, settings).await;
    }
    let url = response.url().clone();
    let headers = response.headers().clone();
    let body = tokio::time::timeout(settings.stall_timeout, response.text())
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    Err(status_error(status, &headers, &body, url.as_str()))
}

/// A successful response that is not an event stream (a server that ignored `stream: true`, or
/// a proxy's error page) is an error that shows what came instead.
async fn expect_event_stream(
    response: reqwest::Response,
    settings: &HttpSettings,
) -> Result<reqwest::Response, ProviderError> {
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if content_type.is_empty() || content_type.starts_with("text/event-stream") {
        return Ok(response);
    }
    let body = tokio::time::timeout(settings.stall_timeout, response.text())
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    if let Ok(value) = serde_json::from_str::<Value>(&body) {
        if let Some(error) = value.get("error") {
            return Err(stream_error(error));
        }
    }
    Err(ProviderError::new(
        ErrorKind::Unknown,
        format!(
            "expected an event stream but got {content_type}: {}",
            excerpt(&body)
        ),
    ))
}

/// A transport failure (refused, reset, timed out) as a `network_error` with its causes.
pub fn transport_error(e: &reqwest::Error) -> ProviderError {
    if e.is_builder() {
        return ProviderError::new(
            ErrorKind::InvalidRequest,
            format!("cannot build the request: {}", chain(e)),
        );
    }
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else {
        "the connection failed"
    };
    ProviderError::new(ErrorKind::NetworkError, format!("{what}: {}", chain(e)))
}

/// An error and its causes, joined with `: ` (reqwest's own message is only the outermost one).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// What a server's error body says: its message and its type or code.
#[derive(Debug, Default, PartialEq)]
struct ErrorDetail {
    message: Option<String>,
    /// `error.type` (Anthropic, OpenAI) and `error.code` (OpenAI, llama.cpp) when they are strings.
    codes: Vec<String>,
}

impl ErrorDetail {
    /// Reads Anthropic's `{"type":"error","error":{"type","message"}}`, OpenAI's
    /// `{"error":{"message","type","code"}}` and Ollama's `{"error":"…"}`.
    fn of_body(body: &str) -> Self {
        match serde_json::from_str::<Value>(body) {
            Ok(value) => match value.get("error") {
                Some(error) => Self::of_error(error),
                None => Self {
                    message: value
                        .get("message")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    codes: Vec::new(),
                },
            },
            Err(_) => Self::default(),
        }
    }

    fn of_error(error: &Value) -> Self {
        if let Some(text) = error.as_str() {
            return Self {
                message: Some(text.to_owned()),
                codes: Vec::new(),
            };
        }
        Self {
            message: error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned),
            codes: ["type", "code"]
                .into_iter()
                .filter_map(|k| error.get(k).and_then(Value::as_str))
                .map(str::to_owned)
                .collect(),
        }
    }

    fn has_code(&self, codes: &[&str]) -> bool {
        self.codes.iter().any(|c| codes.contains(&c.as_str()))
    }

    fn speaks_of_context_length(&self) -> bool {
        const WORDING: [&str; 10] = [
            "context length",
            "context_length",
            "context window",
            "maximum context",
            "context size",
            "exceeds the available context",
            "prompt is too long",
            "input is too long",
            "too many tokens",
            "reduce the length",
        ];
        if self.has_code(&["context_length_exceeded", "exceed_context_size_error"]) {
            return true;
        }
        let message = self.message.as_deref().unwrap_or("").to_lowercase();
        WORDING.iter().any(|w| message.contains(w))
    }

    fn names_the_model(&self) -> bool {
        self.has_code(&["model_not_found"])
            || self
                .message
                .as_deref()
                .is_some_and(|m| m.to_lowercase().contains("model"))
    }

    /// The kind its type or code says, when no HTTP status says it (an error event mid-stream).
    fn kind(&self) -> ErrorKind {
        if self.speaks_of_context_length() || self.has_code(&["request_too_large"]) {
            ErrorKind::ContextLengthExceeded
        } else if self.has_code(&[
            "authentication_error",
            "permission_error",
            "invalid_api_key",
        ]) {
            ErrorKind::AuthenticationFailed
        } else if self.has_code(&[
            "rate_limit_error",
            "rate_limit_exceeded",
            "overloaded_error",
        ]) {
            ErrorKind::RateLimited
        } else if self.has_code(&["not_found_error", "model_not_found"]) {
            ErrorKind::ModelUnavailable
        } else if self.has_code(&["invalid_request_error"]) {
            ErrorKind::InvalidRequest
        } else if self.has_code(&["api_error", "server_error", "timeout_error"]) {
            ErrorKind::NetworkError
        } else {
            ErrorKind::Unknown
        }
    }
}

/// A response with a failing status as a provider error (see the module's table).
pub fn status_error(
    status: StatusCode,
    headers: &HeaderMap,
    body: &str,
    url: &str,
) -> ProviderError {
    let detail = ErrorDetail::of_body(body);
    let overloaded = status.as_u16() == 529 || detail.has_code(&["overloaded_error"]);
    let kind = match status.as_u16() {
        401 | 403 => ErrorKind::AuthenticationFailed,
        429 => ErrorKind::RateLimited,
        _ if overloaded => ErrorKind::RateLimited,
        413 => ErrorKind::ContextLengthExceeded,
        400 | 422 if detail.speaks_of_context_length() => ErrorKind::ContextLengthExceeded,
        404 if detail.names_the_model() => ErrorKind::ModelUnavailable,
        400 | 404 | 405 | 422 => ErrorKind::InvalidRequest,
        500 | 502 | 503 | 504 => ErrorKind::NetworkError,
        _ => match detail.kind() {
            ErrorKind::Unknown if status.is_client_error() => ErrorKind::InvalidRequest,
            ErrorKind::Unknown if status.is_server_error() => ErrorKind::NetworkError,
            kind => kind,
        },
    };
    let text = detail
        .message
        .clone()
        .filter(|m| !m.trim().is_empty())
        .unwrap_or_else(|| excerpt(body));
    let mut message = match status.canonical_reason() {
        Some(reason) => format!("{} {reason}: {text}", status.as_u16()),
        None => format!("{}: {text}", status.as_u16()),
    };
    if overloaded {
        message.push_str(" (the service is overloaded)");
    }
    if kind == ErrorKind::InvalidRequest && status == StatusCode::NOT_FOUND {
        message.push_str(&format!(" (is the base URL right? asked {url})"));
    }
    ProviderError {
        kind,
        message,
        retry_after: retry_after(headers, SystemTime::now()),
    }
}

/// An error a server sent inside a stream (or as the body of a success), by its type or code.
pub fn stream_error(error: &Value) -> ProviderError {
    let detail = ErrorDetail::of_error(error);
    let code = detail.codes.first().map(String::as_str).unwrap_or("error");
    let text = detail
        .message
        .clone()
        .unwrap_or_else(|| excerpt(&error.to_string()));
    ProviderError::new(detail.kind(), format!("the stream reported {code}: {text}"))
}

/// The wait a server asks for: `retry-after-ms` (OpenAI), else `retry-after` in seconds or as an
/// HTTP date (relative to `now`).
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        if ms.is_finite() && ms >= 0.0 {
            return Some(Duration::from_secs_f64(ms / 1000.0));
        }
    }
    let value = header("retry-after")?;
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// At most 300 characters of `text`, for messages.
pub fn excerpt(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return "(empty)".to_owned();
    }
    match text.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}

/// The error of an event whose data does not parse.
pub fn malformed_event(event: &str, data: &str, error: impl fmt::Display) -> ProviderError {
    ProviderError::new(
        ErrorKind::Unknown,
        format!(
            "malformed stream event `{event}`: {error}; its data: {}",
            excerpt(data)
        ),
    )
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, `message` when there was none.
    pub event: String,
    pub data: String,
}

/// Why the bytes of a stream stopped coming.
#[derive(Debug)]
enum Interrupted {
    Transport(reqwest::Error),
    Stalled(Duration),
}

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Interrupted::Transport(e) => f.write_str(&chain(e)),
            Interrupted::Stalled(d) => write!(f, "no data for {} s", d.as_secs_f64()),
        }
    }
}

type Events = Pin<
    Box<dyn Stream<Item = Result<eventsource_stream::Event, EventStreamError<Interrupted>>> + Send>,
>;

/// The events of a streamed response (parsed by `eventsource-stream`); no bytes for the stall
/// timeout is an error.
pub struct EventStream {
    events: Events,
}

impl EventStream {
    pub fn new(response: reqwest::Response, stall: Duration) -> Self {
        let bytes = Box::pin(response.bytes_stream());
        let timed = futures::stream::unfold(Some(bytes), move |bytes| async move {
            let mut bytes = bytes?;
            match tokio::time::timeout(stall, bytes.next()).await {
                Ok(Some(Ok(chunk))) => Some((Ok(chunk), Some(bytes))),
                Ok(Some(Err(e))) => Some((Err(Interrupted::Transport(e)), None)),
                Ok(None) => None,
                Err(_) => Some((Err(Interrupted::Stalled(stall)), None)),
            }
        });
        Self {
            events: Box::pin(timed.eventsource()),
        }
    }

    /// The next event, `None` at the end of the stream.
    pub async fn next(&mut self) -> Result<Option<SseEvent>, ProviderError> {
        match self.events.next().await {
            None => Ok(None),
            Some(Ok(event)) => Ok(Some(SseEvent {
                event: event.event,
                data: event.data,
            })),
            Some(Err(EventStreamError::Transport(Interrupted::Stalled(d)))) => {
                Err(ProviderError::new(
                    ErrorKind::NetworkError,
                    format!("the stream stalled: no data for {} s", d.as_secs_f64()),
                ))
            }
            Some(Err(EventStreamError::Transport(e))) => Err(ProviderError::new(
                ErrorKind::NetworkError,
                format!("the stream broke off: {e}"),
            )),
            Some(Err(EventStreamError::Utf8(e))) => Err(ProviderError::new(
                ErrorKind::Unknown,
                format!("malformed event stream: not UTF-8: {e}"),
            )),
            Some(Err(EventStreamError::Parser(e))) => Err(ProviderError::new(
                ErrorKind::Unknown,
                format!("malformed event stream: {e}"),
            )),
        }
    }
}

/// A stream that ended before the turn was complete.
pub fn ended_early(missing: &str) -> ProviderError {
    ProviderError::new(
        ErrorKind::NetworkError,
        format!("the stream ended before the turn was complete (no {missing})"),
    )
}

/// Streams text to `on_text` and records that some was streamed (so the turn is not retried).
pub fn tracking_sink<'a>(
    on_text: super::TextSink<'a>,
    streamed: &'a AtomicBool,
) -> impl Fn(&str) + Send + Sync + 'a {
    move |text: &str| {
        if !text.is_empty() {
            streamed.store(true, Ordering::SeqCst);
            on_text(text);
        }
    }
}

/// The key a provider uses: `configured` (from rawko's config), else the environment's
/// `key_var`; a blank one counts as none.
pub(crate) fn configured_or_env_key(
    configured: Option<String>,
    env: &dyn Fn(&str) -> Option<String>,
    key_var: &str,
) -> Option<String> {
    configured
        .filter(|k| !k.trim().is_empty())
        .or_else(|| env(key_var).filter(|k| !k.trim().is_empty()))
}

/// The model a spec names, or `missing` when it names none (or a blank one).
pub(crate) fn spec_model<'s>(
    spec: &'s super::ProviderSpec,
    missing: &str,
) -> Result<&'s str, String> {
    spec.model
        .as_deref()
        .filter(|m| !m.trim().is_empty())
        .ok_or_else(|| missing.to_owned())
}

/// A provider's reader of its API's streamed events: one per attempt.
pub(crate) trait StreamParser: Default + Send {
    /// Takes one event; true when the reply is complete.
    fn on_event(
        &mut self,
        name: &str,
        data: &str,
        on_text: TextSink<'_>,
    ) -> Result<bool, ProviderError>;
    /// The turn and, when the server sent them, its token counts.
    fn finish(self) -> Result<(Turn, Option<Usage>), ProviderError>;
}

/// What [`turn`] needs of a streaming HTTP provider; the rest (attempts, retries, redaction,
/// the usage log line) is the same for every API.
pub(crate) trait Streaming: Sync {
    /// The provider's name, for messages and logs.
    const NAME: &'static str;
    type Parser: StreamParser;
    fn settings(&self) -> &HttpSettings;
    /// The key whose value is redacted from errors, when there is one.
    fn key(&self) -> Option<&ApiKey>;
    /// The request of one attempt, carrying `body` and the API's headers.
    fn request(&self, body: &Value) -> Result<reqwest::RequestBuilder, ProviderError>;
}

/// One attempt: send the request and read its stream to the end.
async fn attempt<P: Streaming>(
    provider: &P,
    body: &Value,
    on_text: TextSink<'_>,
) -> Result<(Turn, Option<Usage>), ProviderError> {
    let response = send(provider.request(body)?, provider.settings()).await?;
    let mut events = EventStream::new(response, provider.settings().stall_timeout);
    let mut parser = P::Parser::default();
    while let Some(event) = events.next().await? {
        if parser.on_event(&event.event, &event.data, on_text)? {
            break;
        }
    }
    parser.finish()
}

/// A turn of a streaming HTTP provider: attempts retried by [`with_retries`] (never once text
/// has streamed), the key redacted from every error, the token counts logged.
pub(crate) async fn turn<P: Streaming>(
    provider: &P,
    body: &Value,
    on_text: TextSink<'_>,
) -> Result<(Turn, Option<Usage>), ProviderError> {
    let streamed = AtomicBool::new(false);
    let sink = tracking_sink(on_text, &streamed);
    let sink: TextSink<'_> = &sink;
    let result = with_retries(
        P::NAME,
        &provider.settings().retry,
        &streamed,
        move || async move {
            let result = attempt(provider, body, sink).await;
            match provider.key() {
                Some(key) => result.map_err(|e| key.redact_error(e)),
                None => result,
            }
        },
    )
    .await;
    let (turn, usage) = result?;
    if let Some(usage) = usage {
        tracing::debug!(
            input_tokens = usage.input_tokens,
            output_tokens = usage.output_tokens,
            "{} turn",
            P::NAME
        );
    }
    Ok((turn, usage))
}

/// The builder methods every HTTP provider has for its `settings: HttpSettings` field.
macro_rules! settings_builders {
    () => {
        /// Tries a turn up to `max_attempts` times in all, waiting `base_delay` after the first
        /// failure and doubling (capped at 8 s), or what the server's `retry-after` asks.
        pub fn with_retry(mut self, max_attempts: u32, base_delay: std::time::Duration) -> Self {
            self.settings.retry.max_attempts = max_attempts.max(1);
            self.settings.retry.base_delay = base_delay;
            self
        }

        /// Fails the turn with `network_error` when the stream sends nothing for `timeout`
        /// (default 60 s).
        pub fn with_stall_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.settings.stall_timeout = timeout;
            self
        }

        /// Replaces all retry and timeout settings at once.
        pub fn with_settings(mut self, settings: $crate::provider::http::HttpSettings) -> Self {
            self.settings = settings;
            self
        }

        pub fn settings(&self) -> &$crate::provider::http::HttpSettings {
            &self.settings
        }
    };
}
pub(super) use settings_builders;

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderName;
    use serde_json::json;

    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(k, v)| {
                (
                    HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    HeaderValue::from_str(v).unwrap(),
                )
            })
            .collect()
    }

    fn error(status: u16, body: &str) -> ProviderError {
        status_error(
            StatusCode::from_u16(status).unwrap(),
            &HeaderMap::new(),
            body,
            "http://127.0.0.1:9/v1/messages",
        )
    }

    #[test]
    fn statuses_map_to_kinds() {
        let anthropic = |kind: &str, message: &str| {
            json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
        };
        let cases = [
            (401, anthropic("authentication_error", "invalid x-api-key"), ErrorKind::AuthenticationFailed),
            (403, anthropic("permission_error", "no access"), ErrorKind::AuthenticationFailed),
            (429, anthropic("rate_limit_error", "slow down"), ErrorKind::RateLimited),
            (529, anthropic("overloaded_error", "Overloaded"), ErrorKind::RateLimited),
            (500, anthropic("api_error", "internal"), ErrorKind::NetworkError),
            (502, "<html>bad gateway</html>".to_owned(), ErrorKind::NetworkError),
            (503, String::new(), ErrorKind::NetworkError),
            (413, anthropic("request_too_large", "too large"), ErrorKind::ContextLengthExceeded),
            (400, anthropic("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"), ErrorKind::ContextLengthExceeded),
            (400, json!({"error": {"message": "This model's maximum context length is 8192 tokens", "code": "context_length_exceeded"}}).to_string(), ErrorKind::ContextLengthExceeded),
            (400, json!({"error": {"code": 400, "message": "the request exceeds the available context size", "type": "exceed_context_size_error"}}).to_string(), ErrorKind::ContextLengthExceeded),
            (400, anthropic("invalid_request_error", "messages: field required"), ErrorKind::InvalidRequest),
            (422, json!({"detail": "bad"}).to_string(), ErrorKind::InvalidRequest),
            (404, anthropic("not_found_error", "model: claude-nope"), ErrorKind::ModelUnavailable),
            (404, json!({"error": "model \"llama9\" not found, try pulling it first"}).to_string(), ErrorKind::ModelUnavailable),
            (404, "404 page not found".to_owned(), ErrorKind::InvalidRequest),
            (418, String::new(), ErrorKind::InvalidRequest),
        ];
        for (status, body, kind) in cases {
            let e = error(status, &body);
            assert_eq!(e.kind, kind, "{status} {body}: {e}");
            assert!(e.message.starts_with(&status.to_string()), "{e}");
        }
    }

    #[test]
    fn messages_carry_the_servers_text() {
        let e = error(
            400,
            r#"{"error":{"message":"tools[0].name: bad","type":"invalid_request_error"}}"#,
        );
        assert_eq!(e.message, "400 Bad Request: tools[0].name: bad");
        let e = error(404, "404 page not found");
        assert_eq!(
            e.message,
            "404 Not Found: 404 page not found (is the base URL right? asked http://127.0.0.1:9/v1/messages)"
        );
        let e = error(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
        );
        assert!(e.message.ends_with("(the service is overloaded)"), "{e}");
    }

    #[test]
    fn retry_after_in_seconds_milliseconds_or_a_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let at = |h: &[(&str, &str)]| retry_after(&headers(h), now);
        assert_eq!(at(&[("retry-after", "7")]), Some(Duration::from_secs(7)));
        assert_eq!(
            at(&[("retry-after", "1.5")]),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            at(&[("retry-after-ms", "250"), ("retry-after", "7")]),
            Some(Duration::from_millis(250))
        );
        let date = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(at(&[("retry-after", &date)]), Some(Duration::from_secs(30)));
        let past = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(at(&[("retry-after", &past)]), Some(Duration::ZERO));
        assert_eq!(at(&[("retry-after", "soon")]), None);
        assert_eq!(at(&[]), None);
    }

    #[test]
    fn backoff_doubles_from_the_base_and_is_capped() {
        let retry = Retry::default();
        let waits: Vec<u128> = (1..=7).map(|n| retry.backoff(n).as_millis()).collect();
        assert_eq!(waits, [500, 1000, 2000, 4000, 8000, 8000, 8000]);
        assert_eq!(retry.backoff(u32::MAX), Duration::from_secs(8));
    }

    #[test]
    fn only_recoverable_unstreamed_errors_are_retried() {
        let retry = Retry {
            max_attempts: 3,
            ..Retry::default()
        };
        let rate = ProviderError::new(ErrorKind::RateLimited, "slow");
        let net = ProviderError::new(ErrorKind::NetworkError, "reset");
        let auth = ProviderError::new(ErrorKind::AuthenticationFailed, "no");
        assert_eq!(
            retry.delay(1, &net, false),
            Some(Duration::from_millis(500))
        );
        assert_eq!(retry.delay(2, &rate, false), Some(Duration::from_secs(1)));
        assert_eq!(retry.delay(3, &rate, false), None, "attempts used up");
        assert_eq!(retry.delay(1, &net, true), None, "text was streamed");
        assert_eq!(retry.delay(1, &auth, false), None);
        let asks = |secs| ProviderError {
            retry_after: Some(Duration::from_secs(secs)),
            ..rate.clone()
        };
        assert_eq!(
            retry.delay(1, &asks(3), false),
            Some(Duration::from_secs(3))
        );
        assert_eq!(retry.delay(1, &asks(600), false), None, "too long a wait");
    }

    #[test]
    fn the_key_is_never_shown() {
        let key = ApiKey::new("  sk-secret-0123456789 ").unwrap();
        assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
        let e = key.redact_error(ProviderError::new(
            ErrorKind::AuthenticationFailed,
            "invalid key sk-secret-0123456789",
        ));
        assert_eq!(e.message, "invalid key <redacted>");
        assert!(key.header("Bearer ").unwrap().is_sensitive());
        assert_eq!(ApiKey::new("   "), None);
    }

    #[test]
    fn base_urls_come_from_the_spec_then_the_environment_then_the_default() {
        let env = |name: &str| (name == "X_BASE_URL").then(|| "http://env:1/v1/".to_owned());
        let none = |_: &str| None;
        let url = |spec, env: &dyn Fn(&str) -> Option<String>| {
            base_url(spec, env, "X_BASE_URL", "https://default.example")
        };
        assert_eq!(url(Some("http://spec:2/"), &env).unwrap(), "http://spec:2");
        assert_eq!(url(None, &env).unwrap(), "http://env:1/v1");
        assert_eq!(url(None, &none).unwrap(), "https://default.example");
        let e = url(Some("localhost:11434"), &none).unwrap_err();
        assert!(e.starts_with("baseUrl \"localhost:11434\""), "{e}");
    }

    #[test]
    fn the_context_follows_the_system_prompt() {
        assert_eq!(
            system_prompt(Some("You are careful."), Some("Phase: Test")).as_deref(),
            Some("You are careful.\n\nPhase: Test")
        );
        assert_eq!(system_prompt(None, Some("ctx")).as_deref(), Some("ctx"));
        assert_eq!(system_prompt(Some(" "), None), None);
    }

    #[test]
    fn stream_errors_map_by_type() {
        let e = stream_error(&json!({"type": "overloaded_error", "message": "Overloaded"}));
        assert_eq!(e.kind, ErrorKind::RateLimited);
        assert_eq!(
            e.message,
            "the stream reported overloaded_error: Overloaded"
        );
        let e = stream_error(&json!({"message": "boom"}));
        assert_eq!(e.kind, ErrorKind::Unknown);
    }
}

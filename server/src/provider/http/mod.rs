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

mod errors;
mod stream;
pub use errors::*;
pub use stream::*;

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

/// The HTTP client of a provider: one for the process, shared by every task (a client holds its
/// TLS configuration with the root certificates and its connection pool: built per task, ten
/// thousand tasks held ten thousand of each).
pub fn client() -> Result<reqwest::Client, String> {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    if let Some(client) = CLIENT.get() {
        return Ok(client.clone());
    }
    let client = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .user_agent(concat!("rawko/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {}", chain(&e)))?;
    Ok(CLIENT.get_or_init(|| client).clone())
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
mod tests;

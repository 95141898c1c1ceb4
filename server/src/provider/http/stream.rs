//! Reading a server-sent event stream that fails when it stalls.

use super::*;

/// A successful response that is not an event stream (a server that ignored `stream: true`, or
/// a proxy's error page) is an error that shows what came instead.
pub(super) async fn expect_event_stream(
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

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, `message` when there was none.
    pub event: String,
    pub data: String,
}

/// Why the bytes of a stream stopped coming.
#[derive(Debug)]
pub(super) enum Interrupted {
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

pub(super) type Events = Pin<
    Box<dyn Stream<Item = Result<eventsource_stream::Event, EventStreamError<Interrupted>>> + Send>,
>;

/// The events of a streamed response (parsed by `eventsource-stream`); no bytes for the stall
/// timeout is an error.
pub struct EventStream {
    pub(super) events: Events,
}

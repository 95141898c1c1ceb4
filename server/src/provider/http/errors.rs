//! HTTP and transport failures mapped to an [`ErrorKind`](super::super::ErrorKind), and the `retry-after` a server asks for.

use super::*;

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
pub(super) fn chain(e: &dyn std::error::Error) -> String {
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
pub(super) struct ErrorDetail {
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

/// A stream that ended before the turn was complete.
pub fn ended_early(missing: &str) -> ProviderError {
    ProviderError::new(
        ErrorKind::NetworkError,
        format!("the stream ended before the turn was complete (no {missing})"),
    )
}

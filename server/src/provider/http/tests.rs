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

//! Claude Code's `http` hooks: the event's JSON (what a command hook reads on stdin) is POSTed to
//! the hook's `url` with `Content-Type: application/json`, and a 2xx response's body is the
//! hook's answer, read as a command hook's stdout. A non-2xx status, a connection error or a
//! timeout is the hook's failure.
//!
//! As in Claude Code, `headers` values may name environment variables (`$NAME`, `${NAME}`), and
//! only those the hook lists in `allowedEnvVars` are put in: any other reads as empty, so a
//! header never carries a variable the hook was not given. `Content-Length` and
//! `Transfer-Encoding` given there are ignored (the body decides them). Redirects are followed
//! only to the same scheme, host and port, at most five; the body is read up to
//! [`super::process::ANSWER_CAP`], the rest left unread.

use std::sync::OnceLock;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};

use super::process::ANSWER_CAP;

/// An `http` hook's request, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpHook {
    pub url: String,
    /// Header names and values as written (`Bearer $TOKEN`).
    pub headers: Vec<(String, String)>,
    /// The environment variables the header values may name.
    pub allowed_env_vars: Vec<String>,
}

/// The headers a hook cannot set: the body decides them.
const IGNORED_HEADERS: [&str; 2] = ["content-length", "transfer-encoding"];

/// How long a connection may take to open (the hook's `timeout` bounds the whole request).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How many same-origin redirects are followed.
const MAX_REDIRECTS: usize = 5;

/// Checks a configured `url` and `headers`; the error is for the config problem.
pub fn check(url: &str, headers: &[(String, String)]) -> Result<(), String> {
    match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host_str().is_some() => {}
        Ok(_) => return Err(format!("url \"{url}\" must be an http or https URL")),
        Err(e) => return Err(format!("url \"{url}\" is not a URL: {e}")),
    }
    for (name, _) in headers {
        if HeaderName::from_bytes(name.trim().as_bytes()).is_err() {
            return Err(format!("headers: \"{name}\" is not a header name"));
        }
    }
    Ok(())
}

/// A 2xx response's body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub body: String,
    /// Bytes of the body past [`ANSWER_CAP`] (at least those seen before reading stopped).
    pub cut: usize,
}

/// How a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The server answered with a status other than 2xx; the start of its body.
    Status {
        status: u16,
        body: String,
    },
    /// The request could not be sent or its answer not read.
    Failed(String),
    TimedOut,
}

/// `$NAME` and `${NAME}` (upper-case names, as Claude Code reads them) replaced by the variable's
/// value when `allowed` lists it, else by nothing; CR, LF and NUL removed.
pub fn interpolate(
    value: &str,
    allowed: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> String {
    let name_char =
        |c: char, first: bool| c == '_' || c.is_ascii_uppercase() || (!first && c.is_ascii_digit());
    let chars: Vec<char> = value.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '$' {
            let braced = chars.get(i + 1) == Some(&'{');
            let start = if braced { i + 2 } else { i + 1 };
            let mut end = start;
            while end < chars.len() && name_char(chars[end], end == start) {
                end += 1;
            }
            let closed = !braced || chars.get(end) == Some(&'}');
            if end > start && closed {
                let name: String = chars[start..end].iter().collect();
                if allowed.contains(&name) {
                    out.push_str(&env(&name).unwrap_or_default());
                } else {
                    tracing::warn!(
                        "http hook header: ${name} is not in allowedEnvVars, so it is left empty"
                    );
                }
                i = if braced { end + 1 } else { end };
                continue;
            }
        }
        out.push(chars[i]);
        i += 1;
    }
    out.retain(|c| !matches!(c, '\r' | '\n' | '\0'));
    out
}

/// The client of http hooks: one for the process, redirects only to the same origin.
fn client() -> Result<reqwest::Client, String> {
    static CLIENT: OnceLock<reqwest::Client> = OnceLock::new();
    if let Some(client) = CLIENT.get() {
        return Ok(client.clone());
    }
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt.previous().first().is_some_and(|first| {
            first.scheme() == attempt.url().scheme()
                && first.host_str() == attempt.url().host_str()
                && first.port_or_known_default() == attempt.url().port_or_known_default()
        });
        if same_origin && attempt.previous().len() <= MAX_REDIRECTS {
            attempt.follow()
        } else {
            attempt.stop()
        }
    });
    let client = reqwest::Client::builder()
        .connect_timeout(CONNECT_TIMEOUT)
        .redirect(policy)
        .user_agent(concat!("rawko/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {}", chain(&e)))?;
    Ok(CLIENT.get_or_init(|| client).clone())
}

/// An error with its causes: reqwest's own message is only "error sending request".
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    text
}

/// POSTs `body` to the hook's URL and reads the answer, all within `timeout`.
pub async fn post(
    hook: &HttpHook,
    body: Vec<u8>,
    timeout: Duration,
    env: &(dyn Fn(&str) -> Option<String> + Sync),
) -> Result<Answer, Failure> {
    let client = client().map_err(Failure::Failed)?;
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (name, value) in &hook.headers {
        let name = name.trim();
        if IGNORED_HEADERS.iter().any(|h| name.eq_ignore_ascii_case(h)) {
            continue;
        }
        let value = interpolate(value, &hook.allowed_env_vars, env);
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| Failure::Failed(format!("\"{name}\" is not a header name")))?;
        let value = HeaderValue::from_str(&value).map_err(|_| {
            Failure::Failed(format!(
                "the value of header {name} holds characters a header cannot carry"
            ))
        })?;
        headers.insert(name, value);
    }
    let exchange = async {
        let mut response = client
            .post(&hook.url)
            .headers(headers)
            .body(body)
            .send()
            .await
            .map_err(|e| Failure::Failed(chain(&e)))?;
        let status = response.status();
        let mut kept: Vec<u8> = Vec::new();
        let mut cut = 0;
        // Past the bound the rest is not read: a peer that streams without end costs nothing more.
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| Failure::Failed(format!("reading the answer: {}", chain(&e))))?
        {
            let room = ANSWER_CAP.saturating_sub(kept.len());
            kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if chunk.len() > room {
                cut = chunk.len() - room;
                if let Some(length) = response.content_length() {
                    cut = cut.max(usize::try_from(length).unwrap_or(usize::MAX) - ANSWER_CAP);
                }
                break;
            }
        }
        let body = String::from_utf8_lossy(&kept).into_owned();
        if status.is_success() {
            Ok(Answer { body, cut })
        } else {
            Err(Failure::Status {
                status: status.as_u16(),
                body,
            })
        }
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .unwrap_or(Err(Failure::TimedOut))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("t0k\r\nen".to_owned()),
            "SECRET" => Some("s3cret".to_owned()),
            _ => None,
        }
    }

    #[test]
    fn only_allowed_variables_are_interpolated() {
        let allowed = vec!["TOKEN".to_owned()];
        assert_eq!(interpolate("Bearer $TOKEN", &allowed, &env), "Bearer t0ken");
        assert_eq!(interpolate("${TOKEN}-x", &allowed, &env), "t0ken-x");
        assert_eq!(
            interpolate("a $SECRET b ${SECRET}", &allowed, &env),
            "a  b "
        );
        assert_eq!(
            interpolate("$NOPE$TOKEN", &["NOPE".into(), "TOKEN".into()], &env),
            "t0ken"
        );
        // Not a variable: kept as written.
        assert_eq!(
            interpolate("$lower ${ 5 $", &allowed, &env),
            "$lower ${ 5 $"
        );
        assert_eq!(interpolate("${TOKEN", &allowed, &env), "${TOKEN");
    }

    #[test]
    fn urls_and_header_names_are_checked() {
        assert!(check("https://example.invalid/hook", &[]).is_ok());
        assert!(check("http://127.0.0.1:9/x", &[("X-Key".into(), "$K".into())]).is_ok());
        assert!(check("file:///etc/passwd", &[])
            .unwrap_err()
            .contains("http or https"));
        assert!(check("not a url", &[])
            .unwrap_err()
            .contains("is not a URL"));
        assert!(check("http://h/", &[("bad name".into(), "v".into())])
            .unwrap_err()
            .contains("not a header name"));
    }
}

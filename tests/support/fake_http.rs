//! What the loopback fakes of model APIs (`fake_anthropic`, `fake_openai`, `fake_gemini`) share:
//! reading one HTTP/1.1 request off a kept-alive connection (chunked or sized bodies), the lock
//! that outlives a panicking script, and the walk over a JSON body's strings. std only.

use std::io::BufRead;
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::Value;

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Every string of `v`, keys included.
pub fn visit_strings(v: &Value, f: &mut dyn FnMut(&str)) {
    match v {
        Value::String(s) => f(s),
        Value::Array(a) => a.iter().for_each(|x| visit_strings(x, f)),
        Value::Object(o) => o.values().for_each(|x| visit_strings(x, f)),
        _ => {}
    }
}

/// One HTTP request's head and body.
pub struct Incoming {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// The next request of the connection; `None` when the peer closed it.
pub fn read_request(reader: &mut impl BufRead) -> Option<Incoming> {
    let mut line = String::new();
    // Blank lines between requests are allowed.
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if !line.trim().is_empty() {
            break;
        }
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let h = line.trim_end_matches(['\r', '\n']);
        if h.is_empty() {
            break;
        }
        if let Some((name, value)) = h.split_once(':') {
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    };
    let mut body = Vec::new();
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            line.clear();
            reader.read_line(&mut line).ok()?;
            let size = usize::from_str_radix(line.trim().split(';').next()?, 16).ok()?;
            if size == 0 {
                // Trailers, then the blank line.
                loop {
                    line.clear();
                    if reader.read_line(&mut line).ok()? == 0 || line.trim().is_empty() {
                        break;
                    }
                }
                break;
            }
            let mut chunk = vec![0; size];
            reader.read_exact(&mut chunk).ok()?;
            body.extend_from_slice(&chunk);
            line.clear();
            reader.read_line(&mut line).ok()?;
        }
    } else if let Some(length) = header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
    }
    if header("content-encoding").is_some_and(|v| !v.eq_ignore_ascii_case("identity")) {
        // Codex compresses request bodies only for OpenAI's own API; said here in case.
        body = format!(
            "(a {} body the fake cannot read)",
            header("content-encoding").unwrap_or_default()
        )
        .into_bytes();
    }
    Some(Incoming {
        method,
        path,
        headers,
        body,
    })
}

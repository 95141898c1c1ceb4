//! The small std HTTP client of the endpoint: `rawko hook` and `rawko mcp` find the endpoint of
//! their workspace and call it (one short connection per call: a hook runs per tool call).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use super::endpoint_file;

/// The endpoint serving `dir` or the nearest of its parents, as its file tells. None when
/// rawko's directory in `runtime_dir` is not the user's alone (see
/// [`crate::external::private_runtime_dir`], which says why): a file there may be anyone's.
pub fn find(runtime_dir: &Path, dir: &Path) -> Option<(String, String, PathBuf)> {
    if !crate::external::private_dir(&runtime_dir.join("rawko"), false).unwrap_or(false) {
        return None;
    }
    let mut at = Some(dir.to_path_buf());
    while let Some(d) = at {
        let file = endpoint_file(runtime_dir, &d);
        if let Ok(text) = std::fs::read_to_string(&file) {
            if let Ok(v) = serde_json::from_str::<Value>(&text) {
                if let (Some(url), Some(token)) = (v["url"].as_str(), v["token"].as_str()) {
                    return Some((url.to_owned(), token.to_owned(), file));
                }
            }
        }
        at = d.parent().map(Path::to_path_buf);
    }
    None
}

/// Why a call to the endpoint failed.
#[derive(Debug)]
pub enum CallError {
    /// Nobody listens (a stale file, a server that is gone).
    Unreachable(String),
    /// The server refused the token.
    Refused,
    Bad(String),
}

/// [`call`] of the endpoint's request `R` (`rawko_protocol::endpoint`), with its typed params and
/// result.
pub fn request<R: rawko_protocol::Request>(
    url: &str,
    token: &str,
    params: &R::Params,
    timeout: Duration,
) -> Result<R::Result, CallError> {
    let params = serde_json::to_value(params).map_err(|e| CallError::Bad(e.to_string()))?;
    let answer = call(url, token, R::METHOD, &params, timeout)?;
    serde_json::from_value(answer)
        .map_err(|e| CallError::Bad(format!("the answer to {} does not read: {e}", R::METHOD)))
}

/// A JSON-RPC call over a plain HTTP/1.1 connection (small and quick: a hook runs per tool call).
pub fn call(
    url: &str,
    token: &str,
    method: &str,
    params: &Value,
    timeout: Duration,
) -> Result<Value, CallError> {
    let addr = url.strip_prefix("http://").unwrap_or(url);
    let addr: SocketAddr = addr
        .parse()
        .map_err(|e| CallError::Bad(format!("bad endpoint address {addr}: {e}")))?;
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))
        .map_err(|e| CallError::Unreachable(e.to_string()))?;
    let _ = stream.set_nodelay(true);
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| CallError::Unreachable(e.to_string()))?;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let request = format!(
        "POST / HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream
        .write_all(request.as_bytes())
        .map_err(|e| CallError::Unreachable(e.to_string()))?;
    // Read until the whole body is in (by Content-Length), not until the server closes.
    let mut response = Vec::with_capacity(16 * 1024);
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let n = stream
            .read(&mut chunk)
            .map_err(|e| CallError::Unreachable(format!("no answer: {e}")))?;
        if n == 0 {
            break;
        }
        response.extend_from_slice(&chunk[..n]);
        if let Some(end) = response.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&response[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok());
            if length.is_some_and(|len| response.len() >= end + 4 + len) {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| CallError::Bad("a malformed HTTP answer".to_owned()))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .unwrap_or(0);
    if status == 401 {
        return Err(CallError::Refused);
    }
    // A chunked answer: join the chunks.
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        dechunk(body)
    } else {
        body.to_owned()
    };
    if status != 200 {
        return Err(CallError::Bad(format!("HTTP {status}: {}", body.trim())));
    }
    let v: Value = serde_json::from_str(body.trim())
        .map_err(|e| CallError::Bad(format!("an answer that is not JSON ({e})")))?;
    if let Some(err) = v.get("error") {
        return Err(CallError::Bad(
            err["message"].as_str().unwrap_or("error").to_owned(),
        ));
    }
    Ok(v["result"].clone())
}

fn dechunk(body: &str) -> String {
    let mut out = String::new();
    let mut rest = body;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].strip_prefix("\r\n").unwrap_or(&after[n..]);
    }
    out
}

//! The local endpoint external agents reach while `rawko serve` runs: JSON-RPC (jsonrpsee) over
//! HTTP on 127.0.0.1, plus `POST /hooks/<Event>` for Claude Code's `http` hooks. Every request must
//! carry the endpoint's token (`Authorization: Bearer <token>`, or `?token=` for the hook URLs); the
//! token and the address are in a 0600 file under `$XDG_RUNTIME_DIR/rawko/` keyed by workspace,
//! which only the user can read.

use std::future::Future;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use jsonrpsee::server::{HttpBody, HttpResponse, RpcModule, Server, StopHandle};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::claude::HookAnswer;
pub use super::connections::IDLE_TIMEOUT;
use super::connections::{accept_loop, max_connections, Handler, ACCEPT_BACKLOG};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What the endpoint asks of the server: implemented by the LSP face.
pub trait Host: Send + Sync + 'static {
    fn hook(&self, event: String, input: Value, workflow: Option<String>) -> BoxFuture<HookAnswer>;
    fn step(&self, action: String, session: Option<String>) -> BoxFuture<Result<String, String>>;
    fn status(&self, session: Option<String>) -> BoxFuture<Result<Value, String>>;
    fn start(&self, workflow: String, session: Option<String>)
        -> BoxFuture<Result<String, String>>;
}

/// Where a workspace's endpoint file is.
pub fn endpoint_file(runtime_dir: &Path, workspace: &Path) -> PathBuf {
    let canonical = std::fs::canonicalize(workspace).unwrap_or_else(|_| workspace.to_path_buf());
    let digest = Sha256::digest(canonical.display().to_string().as_bytes());
    let key: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    runtime_dir
        .join("rawko")
        .join(format!("endpoint-{key}.json"))
}

/// `$XDG_RUNTIME_DIR`, else a per-user directory under the temp dir.
pub fn runtime_dir(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    if let Some(d) = env("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        return PathBuf::from(d);
    }
    let uid = nix::unistd::getuid();
    std::env::temp_dir().join(format!("rawko-runtime-{uid}"))
}

fn random_token() -> String {
    let mut bytes = [0u8; 24];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .is_err()
    {
        let seed = format!("{:?}{}", std::time::SystemTime::now(), std::process::id());
        bytes.copy_from_slice(&Sha256::digest(seed.as_bytes())[..24]);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A running endpoint; dropping it stops the server and removes its file.
pub struct Endpoint {
    pub url: String,
    pub token: String,
    pub file: PathBuf,
    stop: jsonrpsee::server::ServerHandle,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        let _ = self.stop.stop();
        // Only remove the file if it is still ours (another server may have replaced it).
        if let Ok(text) = std::fs::read_to_string(&self.file) {
            if text.contains(&self.token) {
                let _ = std::fs::remove_file(&self.file);
            }
        }
    }
}

fn methods(host: Arc<dyn Host>) -> RpcModule<()> {
    let mut module = RpcModule::new(());
    let h = host.clone();
    module
        .register_async_method("rawko.hook", move |params, _, _| {
            let h = h.clone();
            async move {
                let p: Value = params.parse().unwrap_or(Value::Null);
                let event = p["event"].as_str().unwrap_or_default().to_owned();
                let workflow = p["workflow"].as_str().map(str::to_owned);
                let answer = h.hook(event, p["input"].clone(), workflow).await;
                let (code, stdout, stderr) = answer.to_command();
                json!({"exitCode": code, "stdout": stdout, "stderr": stderr})
            }
        })
        .expect("unique method");
    let h = host.clone();
    module
        .register_async_method("rawko.workflowStep", move |params, _, _| {
            let h = h.clone();
            async move {
                let p: Value = params.parse().unwrap_or(Value::Null);
                let action = p["action"].as_str().unwrap_or("status").to_owned();
                let session = p["sessionId"].as_str().map(str::to_owned);
                match h.step(action, session).await {
                    Ok(text) => json!({"ok": true, "text": text}),
                    Err(text) => json!({"ok": false, "text": text}),
                }
            }
        })
        .expect("unique method");
    let h = host.clone();
    module
        .register_async_method("rawko.workflowStatus", move |params, _, _| {
            let h = h.clone();
            async move {
                let p: Value = params.parse().unwrap_or(Value::Null);
                match h.status(p["sessionId"].as_str().map(str::to_owned)).await {
                    Ok(v) => json!({"ok": true, "status": v}),
                    Err(text) => json!({"ok": false, "text": text}),
                }
            }
        })
        .expect("unique method");
    let h = host;
    module
        .register_async_method("rawko.workflowStart", move |params, _, _| {
            let h = h.clone();
            async move {
                let p: Value = params.parse().unwrap_or(Value::Null);
                let workflow = p["workflow"].as_str().unwrap_or_default().to_owned();
                match h
                    .start(workflow, p["sessionId"].as_str().map(str::to_owned))
                    .await
                {
                    Ok(text) => json!({"ok": true, "text": text}),
                    Err(text) => json!({"ok": false, "text": text}),
                }
            }
        })
        .expect("unique method");
    module
        .register_method("rawko.ping", |_, _, _| json!({"ok": true}))
        .expect("unique method");
    module
}

fn text_response(status: u16, body: &str) -> HttpResponse {
    HttpResponse::builder()
        .status(status)
        .header("content-type", "text/plain; charset=utf-8")
        .body(HttpBody::from(body.to_owned()))
        .expect("a valid response")
}

fn json_response(body: &Value) -> HttpResponse {
    HttpResponse::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(HttpBody::from(body.to_string()))
        .expect("a valid response")
}

/// The token a request carries: `Authorization: Bearer …`, or, on the hook URLs only (Claude
/// Code's `http` hooks cannot always set a header), `?token=…`.
fn token_of<B>(req: &hyper::Request<B>, query_allowed: bool) -> Option<String> {
    if let Some(v) = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
    {
        if let Some(t) = v.strip_prefix("Bearer ") {
            return Some(t.trim().to_owned());
        }
    }
    if !query_allowed {
        return None;
    }
    query_param(req, "token")
}

/// Compares without an early exit, so the time taken says nothing about the token.
fn same_token(given: Option<&str>, expected: &str) -> bool {
    let Some(given) = given else { return false };
    given.len() == expected.len()
        && given
            .bytes()
            .zip(expected.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

fn query_param<B>(req: &hyper::Request<B>, key: &str) -> Option<String> {
    req.uri().query().and_then(|q| {
        q.split('&')
            .find_map(|kv| kv.strip_prefix(&format!("{key}=")).map(str::to_owned))
    })
}

/// The largest hook input `POST /hooks/<Event>` takes; a larger one is answered 413.
pub const MAX_HOOK_BODY: usize = 1024 * 1024;

/// The largest JSON-RPC request body (jsonrpsee's own default, made explicit).
pub const MAX_RPC_BODY: usize = 10 * 1024 * 1024;

/// How long a request's body may take to arrive.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// How much of a body over the limit is read and thrown away before the 413 is sent (so the
/// client, still sending, sees the answer rather than a reset); past this the connection closes.
const DISCARD_LIMIT: usize = 64 * 1024 * 1024;

/// Starts the endpoint for `workspace` and writes its file (0600, in a 0700 directory).
pub async fn start(
    host: Arc<dyn Host>,
    workspace: &Path,
    runtime_dir: &Path,
) -> std::io::Result<Endpoint> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    // A longer queue of connections waiting to be accepted than tokio's 128: while the endpoint
    // is at its cap on connections they wait there, and a burst (a few hundred hook calls at
    // once) does not overflow it into resets.
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let listener = socket.listen(ACCEPT_BACKLOG)?;
    let addr = listener.local_addr()?;
    let token = random_token();
    let file = endpoint_file(runtime_dir, workspace);
    if let Some(dir) = file.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    }
    let url = format!("http://{addr}");
    let tmp = file.with_extension(format!("tmp{}", std::process::id()));
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        let body = json!({"url": url, "token": token, "pid": std::process::id(), "workspace": workspace.display().to_string()});
        f.write_all(body.to_string().as_bytes())?;
    }
    std::fs::rename(&tmp, &file)?;

    let (stop_handle, server_handle) = jsonrpsee::server::stop_channel();
    let cap = max_connections();
    let config = jsonrpsee::server::ServerConfig::builder()
        .http_only()
        .max_request_body_size(u32::try_from(MAX_RPC_BODY).unwrap_or(u32::MAX))
        .max_connections(u32::try_from(cap).unwrap_or(u32::MAX))
        .build();
    let builder = Server::builder().set_config(config).to_service_builder();
    let methods: jsonrpsee::server::Methods = methods(host.clone()).into();
    let serving = Arc::new(Serving {
        builder,
        methods,
        stop: stop_handle.clone(),
        token: token.clone(),
        host,
    });
    let handler: Handler = Arc::new(move |req| {
        let serving = serving.clone();
        Box::pin(async move {
            serving.handle(req).await.unwrap_or_else(|e| {
                tracing::warn!("endpoint: {e}");
                text_response(500, "rawko: internal error\n")
            })
        })
    });
    tokio::spawn(accept_loop(listener, handler, stop_handle, cap));
    Ok(Endpoint {
        url,
        token,
        file,
        stop: server_handle,
    })
}

/// What every connection's requests are served with.
struct Serving {
    builder: jsonrpsee::server::TowerServiceBuilder<
        tower::layer::util::Identity,
        tower::layer::util::Identity,
    >,
    methods: jsonrpsee::server::Methods,
    stop: StopHandle,
    token: String,
    host: Arc<dyn Host>,
}

impl Serving {
    async fn handle(
        &self,
        req: hyper::Request<hyper::body::Incoming>,
    ) -> Result<HttpResponse, BoxError> {
        let hook = req.uri().path().strip_prefix("/hooks/").map(str::to_owned);
        if !same_token(token_of(&req, hook.is_some()).as_deref(), &self.token) {
            return Ok(text_response(
                401,
                "rawko: missing or wrong token (it is in the endpoint file under $XDG_RUNTIME_DIR/rawko/)\n",
            ));
        }
        let Some(event) = hook else {
            let (parts, body) = req.into_parts();
            let body = match read_body(body, &parts.headers, MAX_RPC_BODY, "request").await {
                Ok(body) => body,
                Err(answer) => return Ok(answer),
            };
            let req = hyper::Request::from_parts(parts, http_body_util::Full::new(body));
            use tower::Service;
            let mut rpc = self
                .builder
                .clone()
                .build(self.methods.clone(), self.stop.clone());
            return rpc.call(req).await;
        };
        let workflow = query_param(&req, "workflow");
        let (parts, body) = req.into_parts();
        let body = match read_body(body, &parts.headers, MAX_HOOK_BODY, "hook input").await {
            Ok(body) => body,
            Err(answer) => return Ok(answer),
        };
        let input: Value = match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => {
                return Ok(text_response(
                    400,
                    &format!("rawko: the hook input is not JSON: {e}\n"),
                ))
            }
        };
        let answer = self.host.hook(event.clone(), input, workflow).await;
        Ok(json_response(&answer.to_http(&event)))
    }
}

/// A request's body, at most `limit` bytes, within [`BODY_TIMEOUT`]; else the answer to send.
/// A body over the limit is never held: what comes past it is read and dropped (up to
/// [`DISCARD_LIMIT`]) so that the client sees the 413.
async fn read_body(
    mut body: hyper::body::Incoming,
    headers: &hyper::HeaderMap,
    limit: usize,
    what: &str,
) -> Result<hyper::body::Bytes, HttpResponse> {
    let too_large = || {
        text_response(
            413,
            &format!(
                "rawko: the {what} is larger than {} ({limit} bytes); refused\n",
                human_size(limit)
            ),
        )
    };
    let declared = headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<usize>().ok());
    if declared.is_some_and(|n| n > DISCARD_LIMIT) {
        return Err(too_large());
    }
    let read = async {
        let mut kept: Vec<u8> = Vec::with_capacity(declared.unwrap_or(0).min(limit));
        let mut seen = 0usize;
        while let Some(frame) = body.frame().await {
            let frame = frame
                .map_err(|e| text_response(400, &format!("rawko: cannot read the body: {e}\n")))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            seen = seen.saturating_add(data.len());
            if seen > limit {
                kept = Vec::new();
                if seen > DISCARD_LIMIT {
                    break;
                }
            } else {
                kept.extend_from_slice(&data);
            }
        }
        if seen > limit {
            return Err(too_large());
        }
        Ok(hyper::body::Bytes::from(kept))
    };
    match tokio::time::timeout(BODY_TIMEOUT, read).await {
        Ok(result) => result,
        Err(_) => Err(text_response(
            408,
            &format!(
                "rawko: the body did not arrive within {} s\n",
                BODY_TIMEOUT.as_secs()
            ),
        )),
    }
}

fn human_size(bytes: usize) -> String {
    if bytes % (1024 * 1024) == 0 {
        format!("{} MiB", bytes / (1024 * 1024))
    } else {
        format!("{bytes} bytes")
    }
}

/// The endpoint serving `dir` or the nearest of its parents, as its file tells.
pub fn find(runtime_dir: &Path, dir: &Path) -> Option<(String, String, PathBuf)> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_is_read_from_the_query_only_where_allowed() {
        let req = hyper::Request::builder()
            .uri("/hooks/Stop?workflow=x&token=abc")
            .body(())
            .unwrap();
        assert_eq!(token_of(&req, true).as_deref(), Some("abc"));
        assert_eq!(token_of(&req, false), None);
        let req = hyper::Request::builder()
            .uri("/?token=abc")
            .header("authorization", "Bearer def")
            .body(())
            .unwrap();
        assert_eq!(token_of(&req, false).as_deref(), Some("def"));
        assert!(same_token(Some("def"), "def"));
        assert!(!same_token(Some("de"), "def"));
        assert!(!same_token(Some("deg"), "def"));
        assert!(!same_token(None, "def"));
    }
}

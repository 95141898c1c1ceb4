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

fn token_of<B>(req: &hyper::Request<B>) -> Option<String> {
    if let Some(v) = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
    {
        if let Some(t) = v.strip_prefix("Bearer ") {
            return Some(t.trim().to_owned());
        }
    }
    req.uri().query().and_then(|q| {
        q.split('&')
            .find_map(|kv| kv.strip_prefix("token=").map(str::to_owned))
    })
}

fn query_param<B>(req: &hyper::Request<B>, key: &str) -> Option<String> {
    req.uri().query().and_then(|q| {
        q.split('&')
            .find_map(|kv| kv.strip_prefix(&format!("{key}=")).map(str::to_owned))
    })
}

/// Starts the endpoint for `workspace` and writes its file (0600, in a 0700 directory).
pub async fn start(
    host: Arc<dyn Host>,
    workspace: &Path,
    runtime_dir: &Path,
) -> std::io::Result<Endpoint> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
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
    let builder = Server::builder().to_service_builder();
    let module = methods(host.clone());
    let expected = Arc::new(token.clone());
    tokio::spawn(accept_loop(
        listener,
        builder,
        module,
        stop_handle,
        expected,
        host,
    ));
    Ok(Endpoint {
        url,
        token,
        file,
        stop: server_handle,
    })
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    builder: jsonrpsee::server::TowerServiceBuilder<
        tower::layer::util::Identity,
        tower::layer::util::Identity,
    >,
    module: RpcModule<()>,
    stop: StopHandle,
    token: Arc<String>,
    host: Arc<dyn Host>,
) {
    let methods: jsonrpsee::server::Methods = module.into();
    loop {
        let sock = tokio::select! {
            res = listener.accept() => match res {
                Ok((sock, _)) => sock,
                Err(e) => {
                    tracing::warn!("endpoint: cannot accept a connection: {e}");
                    continue;
                }
            },
            () = stop.clone().shutdown() => break,
        };
        let _ = sock.set_nodelay(true);
        let builder = builder.clone();
        let methods = methods.clone();
        let stop2 = stop.clone();
        let token = token.clone();
        let host = host.clone();
        let svc = tower::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let mut rpc = builder.clone().build(methods.clone(), stop2.clone());
            let token = token.clone();
            let host = host.clone();
            async move {
                if token_of(&req).as_deref() != Some(token.as_str()) {
                    return Ok::<HttpResponse, BoxError>(text_response(
                        401,
                        "rawko: missing or wrong token (it is in the endpoint file under $XDG_RUNTIME_DIR/rawko/)\n",
                    ));
                }
                let path = req.uri().path().to_owned();
                if let Some(event) = path.strip_prefix("/hooks/") {
                    let event = event.to_owned();
                    let workflow = query_param(&req, "workflow");
                    let body = match req.into_body().collect().await {
                        Ok(b) => b.to_bytes(),
                        Err(e) => {
                            return Ok(text_response(400, &format!("cannot read the body: {e}\n")))
                        }
                    };
                    let input: Value = match serde_json::from_slice(&body) {
                        Ok(v) => v,
                        Err(e) => {
                            return Ok(text_response(
                                400,
                                &format!("the hook input is not JSON: {e}\n"),
                            ))
                        }
                    };
                    let answer = host.hook(event.clone(), input, workflow).await;
                    return Ok(json_response(&answer.to_http(&event)));
                }
                use tower::Service;
                rpc.call(req).await
            }
        });
        tokio::spawn(jsonrpsee::server::serve_with_graceful_shutdown(
            sock,
            svc,
            stop.clone().shutdown(),
        ));
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

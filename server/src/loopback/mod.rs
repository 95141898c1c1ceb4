//! rawko's loopback JSON-RPC server: the local endpoint's messages (`rawko_protocol::endpoint`)
//! over HTTP on 127.0.0.1, plus `POST /hooks/<Event>` for Claude Code's `http` hooks, answered by a
//! [`Host`]. Every request must carry the server's token (`Authorization: Bearer <token>`, or
//! `?token=` for the hook URLs). Two serve it: the editor's local endpoint (`endpoint/`, a face,
//! which writes its address and token in a file for `rawko hook` and `rawko mcp`) and the `acp`
//! provider's task, for its agent's `rawko mcp` (`provider/acp/mcp.rs`). It sits in the shell, so
//! that the provider does not import a face.

use std::future::Future;
use std::io::Read;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use jsonrpsee::server::{HttpBody, HttpResponse, RpcModule, Server, StopHandle};
use rawko_protocol::endpoint::{
    self as wire, HookParams, HookResult, SessionParams, ToolAnswer, WorkflowStartParams,
    WorkflowStepParams,
};
use rawko_protocol::Request;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::external::claude::HookAnswer;

mod connections;

pub use connections::IDLE_TIMEOUT;
use connections::{accept_loop, max_connections, Handler, ACCEPT_BACKLOG};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What the endpoint asks of the server, one method per message: the editor's server
/// ([`ExternalHost`]) and the `acp` provider's task implement it.
pub trait Host: Send + Sync + 'static {
    fn hook(&self, params: HookParams) -> BoxFuture<HookAnswer>;
    fn step(&self, params: WorkflowStepParams) -> BoxFuture<ToolAnswer>;
    fn status(&self, params: SessionParams) -> BoxFuture<ToolAnswer>;
    fn start(&self, params: WorkflowStartParams) -> BoxFuture<ToolAnswer>;
    /// `rawko mcp` says the agent listed its tools.
    fn mcp_connected(&self) {}
}

pub(crate) fn random_token() -> String {
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

/// Registers request `R`, answered by `answer` from its typed params; params that do not read
/// are answered with JSON-RPC's invalid-params error, saying why.
fn register<R, F, Fut>(module: &mut RpcModule<()>, answer: F)
where
    R: Request,
    R::Result: Clone,
    F: Fn(R::Params) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = R::Result> + Send + 'static,
{
    module
        .register_async_method(R::METHOD, move |params, _, _| {
            let answer = answer.clone();
            async move {
                // A call without params (or with `null`) reads as `{}`: every field has its default.
                let read = match params.as_str().filter(|text| text.trim() != "null") {
                    None => {
                        serde_json::from_value::<R::Params>(json!({})).map_err(|e| e.to_string())
                    }
                    Some(text) => {
                        serde_json::from_str::<R::Params>(text).map_err(|e| e.to_string())
                    }
                };
                let params = read.map_err(|e| {
                    jsonrpsee::types::ErrorObjectOwned::owned(
                        jsonrpsee::types::error::INVALID_PARAMS_CODE,
                        format!("rawko: bad params of {}: {e}", R::METHOD),
                        None::<()>,
                    )
                })?;
                Ok::<_, jsonrpsee::types::ErrorObjectOwned>(answer(params).await)
            }
        })
        .expect("unique method");
}

fn methods(host: Arc<dyn Host>) -> RpcModule<()> {
    let mut module = RpcModule::new(());
    let h = host.clone();
    register::<wire::Hook, _, _>(&mut module, move |p| {
        let h = h.clone();
        async move {
            let (exit_code, stdout, stderr) = h.hook(p).await.to_command();
            HookResult {
                exit_code,
                stdout,
                stderr,
            }
        }
    });
    let h = host.clone();
    register::<wire::WorkflowStep, _, _>(&mut module, move |p| h.step(p));
    let h = host.clone();
    register::<wire::WorkflowStatus, _, _>(&mut module, move |p| h.status(p));
    let h = host.clone();
    register::<wire::WorkflowStart, _, _>(&mut module, move |p| h.start(p));
    let h = host;
    register::<wire::McpConnected, _, _>(&mut module, move |_| {
        h.mcp_connected();
        std::future::ready(wire::Ok { ok: true })
    });
    register::<wire::Ping, _, _>(&mut module, |_| std::future::ready(wire::Ok { ok: true }));
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

/// An endpoint that serves, without a file (what [`start`] builds on; the `acp` provider's task
/// gives its address and token to its agent's `rawko mcp` itself). It serves until
/// [`Served::stop`].
pub struct Served {
    pub url: String,
    pub token: String,
    pub(crate) stop: jsonrpsee::server::ServerHandle,
}

impl Served {
    /// Stops serving.
    pub fn stop(&self) {
        let _ = self.stop.stop();
    }
}

/// Serves `host` on a new loopback port with a new token.
pub async fn serve(host: Arc<dyn Host>) -> std::io::Result<Served> {
    // A longer queue of connections waiting to be accepted than tokio's 128: while the endpoint
    // is at its cap on connections they wait there, and a burst (a few hundred hook calls at
    // once) does not overflow it into resets.
    let socket = tokio::net::TcpSocket::new_v4()?;
    socket.bind(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let listener = socket.listen(ACCEPT_BACKLOG)?;
    let addr = listener.local_addr()?;
    let token = random_token();
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
    Ok(Served {
        url: format!("http://{addr}"),
        token,
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
        let answer = self
            .host
            .hook(HookParams {
                event: event.clone(),
                input,
                workflow,
                // Claude Code's `http` hooks; Gemini CLI and Codex have command hooks only.
                agent: None,
                // An http hook has no environment to say it.
                unattended: false,
            })
            .await;
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
    if bytes.is_multiple_of(1024 * 1024) {
        format!("{} MiB", bytes / (1024 * 1024))
    } else {
        format!("{bytes} bytes")
    }
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

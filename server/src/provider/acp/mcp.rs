//! The loopback endpoint behind rawko's MCP server for an ACP agent. The agent starts `rawko mcp`
//! (named in `session/new`'s `mcpServers`) with this endpoint's address and token in its
//! environment ([`URL_VAR`], [`TOKEN_VAR`]); its `workflow_step` and `workflow_status` tools come
//! here as JSON-RPC over HTTP (the wire of rawko's editor endpoint, `endpoint::call`), and become
//! `workflow_step` calls of the agent's turn. `rawko mcp` also says here when the agent listed its
//! tools ([`CONNECTED`]), so rawko knows the agent has it.

use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Bytes;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use super::from_agent::FromAgent;

/// The variable that gives `rawko mcp` the endpoint's URL.
pub const URL_VAR: &str = "RAWKO_MCP_URL";
/// The variable that gives `rawko mcp` the endpoint's token.
pub const TOKEN_VAR: &str = "RAWKO_MCP_TOKEN";

/// The method by which `rawko mcp` says the agent listed its tools.
pub const CONNECTED: &str = "rawko.mcpConnected";

/// The largest request body taken.
const MAX_BODY: usize = 64 * 1024;
/// How long a tool call waits for the task (an approval may be on the way).
const ANSWER_LIMIT: Duration = Duration::from_secs(570);

/// A running endpoint; dropping it stops it.
pub(super) struct Endpoint {
    pub url: String,
    pub token: String,
    /// The agent has connected to `rawko mcp` (it listed its tools or called one).
    connected: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn random_token() -> String {
    let mut bytes = [0u8; 24];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .is_err()
    {
        use sha2::Digest;
        let seed = format!("{:?}{}", std::time::SystemTime::now(), std::process::id());
        bytes.copy_from_slice(&sha2::Sha256::digest(seed.as_bytes())[..24]);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Endpoint {
    pub async fn start(tx: mpsc::UnboundedSender<FromAgent>) -> std::io::Result<Endpoint> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}", listener.local_addr()?);
        let token = random_token();
        let expected = token.clone();
        let connected = Arc::new(AtomicBool::new(false));
        let seen = connected.clone();
        let task = tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                let tx = tx.clone();
                let token = expected.clone();
                let seen = seen.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let tx = tx.clone();
                        let token = token.clone();
                        let seen = seen.clone();
                        async move {
                            Ok::<_, std::convert::Infallible>(handle(req, &token, &tx, &seen).await)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(sock), service)
                        .await;
                });
            }
        });
        Ok(Endpoint {
            url,
            token,
            connected,
            task,
        })
    }

    /// Whether the agent has connected to `rawko mcp`.
    pub fn connected(&self) -> bool {
        self.connected.load(Ordering::Relaxed)
    }
}

/// What the task is told when the agent never connected to `rawko mcp` in its first prompt, with
/// the likely cause for the agent it is (`kinds`, from its command line).
pub(super) fn never_connected(kinds: &[super::confine::Kind]) -> String {
    use super::confine::Kind;
    let cause = match kinds.first() {
        Some(Kind::Claude) => "Claude Code starts the MCP servers a session names and defers their tools behind ToolSearch (that alone is no failure: the model loads workflow_step with ToolSearch); look for a disabled or disallowed MCP server in its settings (~/.claude/settings.json, .claude/settings.json, a managed policy) and for `rawko mcp` errors in its stderr",
        Some(Kind::Gemini) => "Gemini CLI silently drops stdio MCP servers in a folder it does not trust: trust the workspace (add it to ~/.gemini/trustedFolders.json, or $GEMINI_CLI_HOME/.gemini/trustedFolders.json, as \"TRUST_FOLDER\"), and check `mcp.allowed` / `mcp.excluded` in its settings.json",
        Some(Kind::Codex) => "Codex defers MCP tools behind its tool_search and may not start an MCP server before its model searches for one; if workflow_step never comes, check `[mcp_servers]` and `features` in ~/.codex/config.toml",
        None => "check that the agent starts the stdio MCP servers named in session/new (its `mcpCapabilities` and settings)",
    };
    format!(
        "[rawko: the agent never connected to rawko's MCP server (`rawko mcp`) in its first prompt, so it may not have workflow_step to move the workflow on: {cause}]\n"
    )
}

fn reply(status: u16, body: Value) -> hyper::Response<Full<Bytes>> {
    let mut response = hyper::Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

async fn handle(
    req: hyper::Request<hyper::body::Incoming>,
    token: &str,
    tx: &mpsc::UnboundedSender<FromAgent>,
    connected: &AtomicBool,
) -> hyper::Response<Full<Bytes>> {
    let bearer = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    if bearer != Some(token) {
        return reply(401, json!({"error": "bad token"}));
    }
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return reply(413, json!({"error": "request too large"})),
    };
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return reply(400, json!({"error": "not JSON"}));
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    // Only `rawko mcp`, started by the agent with the token, gets this far.
    connected.store(true, Ordering::Relaxed);
    let action = match request["method"].as_str() {
        Some(CONNECTED) => {
            return reply(
                200,
                json!({"jsonrpc": "2.0", "id": id, "result": {"ok": true}}),
            )
        }
        Some("rawko.workflowStep") => request["params"]["action"]
            .as_str()
            .unwrap_or("status")
            .to_owned(),
        Some("rawko.workflowStatus") => "status".to_owned(),
        Some("rawko.workflowStart") => {
            return reply(
                200,
                json!({"jsonrpc": "2.0", "id": id, "result": {"ok": false,
                    "text": "this task's workflow is chosen in rawko, not by the agent"}}),
            )
        }
        _ => {
            return reply(
                200,
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "unknown method"}}),
            )
        }
    };
    let (reply_tx, reply_rx) = oneshot::channel();
    if tx
        .send(FromAgent::Step {
            action,
            reply: reply_tx,
        })
        .is_err()
    {
        return reply(
            200,
            json!({"jsonrpc": "2.0", "id": id, "result": {"ok": false, "text": "the task has ended"}}),
        );
    }
    let (text, is_error) = match tokio::time::timeout(ANSWER_LIMIT, reply_rx).await {
        Ok(Ok(answer)) => answer,
        _ => ("the task did not answer".to_owned(), true),
    };
    reply(
        200,
        json!({"jsonrpc": "2.0", "id": id, "result": {"ok": !is_error, "text": text}}),
    )
}

//! The loopback endpoint behind rawko's MCP server for an ACP agent. The agent starts `rawko mcp`
//! (named in `session/new`'s `mcpServers`) with this endpoint's address and token in its
//! environment ([`URL_VAR`], [`TOKEN_VAR`]); its `workflow_step` and `workflow_status` tools come
//! here as the local endpoint's messages (`rawko_protocol::endpoint`, served by
//! `crate::loopback::serve`, the editor endpoint's server), and become `workflow_step` calls of
//! the agent's turn. `rawko mcp` also says here when the agent listed its tools
//! ([`CONNECTED`]), so rawko knows the agent has it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rawko_protocol::endpoint::{
    HookParams, SessionParams, ToolAnswer, WorkflowStartParams, WorkflowStepParams,
};
use rawko_protocol::Request;
use tokio::sync::{mpsc, oneshot};

use super::from_agent::FromAgent;
use crate::external::claude::HookAnswer;
use crate::loopback::{BoxFuture, Host, Served};

/// The variable that gives `rawko mcp` the endpoint's URL.
pub const URL_VAR: &str = "RAWKO_MCP_URL";
/// The variable that gives `rawko mcp` the endpoint's token.
pub const TOKEN_VAR: &str = "RAWKO_MCP_TOKEN";

/// The method by which `rawko mcp` says the agent listed its tools.
pub const CONNECTED: &str = rawko_protocol::endpoint::McpConnected::METHOD;

/// How long a tool call waits for the task (an approval may be on the way).
const ANSWER_LIMIT: Duration = Duration::from_secs(570);

/// A running endpoint; dropping it stops it.
pub(super) struct Endpoint {
    pub url: String,
    pub token: String,
    /// The agent has connected to `rawko mcp` (it listed its tools or called one).
    connected: Arc<AtomicBool>,
    served: Served,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.served.stop();
    }
}

impl Endpoint {
    pub async fn start(tx: mpsc::UnboundedSender<FromAgent>) -> std::io::Result<Endpoint> {
        let connected = Arc::new(AtomicBool::new(false));
        let host = StepHost {
            tx,
            connected: connected.clone(),
        };
        let served = crate::loopback::serve(Arc::new(host)).await?;
        Ok(Endpoint {
            url: served.url.clone(),
            token: served.token.clone(),
            connected,
            served,
        })
    }

    /// Whether the agent has connected to `rawko mcp`.
    pub fn connected(&self) -> bool {
        self.connected.load(Ordering::Relaxed)
    }
}

/// What answers the agent's `rawko mcp`: its tools become `workflow_step` calls of the turn.
#[derive(Clone)]
struct StepHost {
    tx: mpsc::UnboundedSender<FromAgent>,
    connected: Arc<AtomicBool>,
}

impl StepHost {
    /// Only `rawko mcp`, started by the agent with the token, gets this far.
    fn seen(&self) {
        self.connected.store(true, Ordering::Relaxed);
    }

    async fn step(&self, action: String) -> ToolAnswer {
        self.seen();
        let (reply, answer) = oneshot::channel();
        if self.tx.send(FromAgent::Step { action, reply }).is_err() {
            return ToolAnswer::failed("the task has ended");
        }
        match tokio::time::timeout(ANSWER_LIMIT, answer).await {
            Ok(Ok((text, false))) => ToolAnswer::done(text),
            Ok(Ok((text, true))) => ToolAnswer::failed(text),
            _ => ToolAnswer::failed("the task did not answer"),
        }
    }
}

impl Host for StepHost {
    fn hook(&self, _params: HookParams) -> BoxFuture<HookAnswer> {
        Box::pin(std::future::ready(HookAnswer {
            note: Some(
                "rawko: this endpoint serves an ACP agent's rawko mcp, not hooks".to_owned(),
            ),
            ..HookAnswer::default()
        }))
    }

    fn step(&self, params: WorkflowStepParams) -> BoxFuture<ToolAnswer> {
        let me = self.clone();
        Box::pin(async move { me.step(params.action).await })
    }

    fn status(&self, _params: SessionParams) -> BoxFuture<ToolAnswer> {
        let me = self.clone();
        Box::pin(async move { me.step("status".to_owned()).await })
    }

    fn start(&self, _params: WorkflowStartParams) -> BoxFuture<ToolAnswer> {
        self.seen();
        Box::pin(std::future::ready(ToolAnswer::failed(
            "this task's workflow is chosen in rawko, not by the agent",
        )))
    }

    fn mcp_connected(&self) {
        self.seen();
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

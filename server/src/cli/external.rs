//! `rawko hook EVENT`, `rawko hook install --claude|--gemini|--codex` and `rawko mcp`: the commands
//! an external agent (Claude Code, Gemini CLI, Codex) runs to reach the rawko server of its workspace.

use std::io::{self, Read};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use super::{Context, ExitCode, EXIT_OK, EXIT_PROBLEMS, EXIT_USAGE};
use crate::endpoint::{self, CallError};
use crate::external::{claude, codex, gemini};
use rawko_protocol::endpoint::{
    self as wire, HookParams, SessionParams, WorkflowStartParams, WorkflowStepParams,
};
use rawko_protocol::ExternalAgent;

/// The longest hook input read from stdin.
const MAX_INPUT: u64 = 10 * 1024 * 1024;

/// `rawko hook EVENT [--gemini|--codex] [--workflow KEY] [--fail-closed]`: stdin is the hook input
/// of Claude Code (or Gemini CLI, with `--gemini`; or Codex, with `--codex`, in Claude Code's format).
pub fn hook(
    ctx: &mut Context<'_>,
    agent: ExternalAgent,
    event: &str,
    workflow: Option<&str>,
    fail_closed: bool,
    stdin: &mut dyn Read,
) -> io::Result<ExitCode> {
    let fail_closed =
        fail_closed || (ctx.env)("RAWKO_HOOK_FAIL_CLOSED").is_some_and(|v| v == "1" || v == "true");
    // Gemini CLI takes exit 2 at any event as a block: at AfterAgent it would run the message
    // as its next prompt, again and again. Only a tool call is held back.
    let fail_closed = fail_closed && (agent == ExternalAgent::Claude || event == "BeforeTool");
    let mut raw = Vec::new();
    stdin.take(MAX_INPUT + 1).read_to_end(&mut raw)?;
    let give_up = |ctx: &mut Context<'_>, why: String| -> io::Result<ExitCode> {
        if fail_closed {
            writeln!(ctx.err, "rawko: {why}; blocked (fail-closed)")?;
            Ok(2)
        } else {
            writeln!(ctx.err, "rawko: {why}; not gated (fail-open)")?;
            Ok(EXIT_OK)
        }
    };
    if raw.len() as u64 > MAX_INPUT {
        return give_up(ctx, "the hook input is larger than 10 MiB".to_owned());
    }
    let input: Value = match serde_json::from_slice(&raw) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return give_up(ctx, "the hook input is not a JSON object".to_owned()),
        Err(e) => return give_up(ctx, format!("the hook input is not JSON ({e})")),
    };
    let cwd = input["cwd"]
        .as_str()
        .map(PathBuf::from)
        .unwrap_or_else(|| ctx.workspace.clone());
    let runtime = match crate::external::private_runtime_dir(ctx.env, false) {
        Ok(runtime) => runtime,
        Err(why) => return give_up(ctx, why),
    };
    let Some((url, token, file)) = endpoint::find(&runtime, &cwd) else {
        return give_up(
            ctx,
            format!(
                "no rawko server is running for {} (open the folder in an editor with rawko, or run `rawko serve`)",
                cwd.display()
            ),
        );
    };
    let params = HookParams {
        event: event.to_owned(),
        input,
        workflow: workflow.map(str::to_owned),
        agent: (agent != ExternalAgent::Claude).then_some(agent),
        // Claude Code tells its hooks whether someone is at the session.
        unattended: agent == ExternalAgent::Claude
            && (ctx.env)("CLAUDE_CODE_SESSION_ATTENDED").is_some_and(|v| v == "0"),
    };
    // Approvals in the editor and the countdown take time: wait as long as Claude Code does.
    match endpoint::request::<wire::Hook>(&url, &token, &params, Duration::from_secs(600)) {
        Ok(answer) => {
            write!(ctx.out, "{}", answer.stdout)?;
            if !answer.stderr.is_empty() {
                writeln!(ctx.err, "{}", answer.stderr)?;
            }
            Ok(answer.exit_code)
        }
        Err(CallError::Unreachable(e)) => give_up(
            ctx,
            format!(
                "the rawko server in {} does not answer ({e}); it may have stopped",
                file.display()
            ),
        ),
        Err(CallError::Refused) => give_up(
            ctx,
            format!("the rawko server refused the token in {}", file.display()),
        ),
        Err(CallError::Bad(e)) => give_up(ctx, format!("the rawko server answered badly: {e}")),
    }
}

/// `rawko hook install --claude|--gemini|--codex [--workflow KEY] [--uninstall]`
pub fn install(
    ctx: &mut Context<'_>,
    agent: ExternalAgent,
    workflow: Option<&str>,
    uninstall: bool,
) -> io::Result<ExitCode> {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok())
        .map(|p| p.display().to_string())
        .unwrap_or_else(|| "rawko".to_owned());
    let result = match (agent, uninstall) {
        (ExternalAgent::Claude, true) => claude::uninstall(&ctx.workspace, &exe),
        (ExternalAgent::Claude, false) => claude::install(&ctx.workspace, &exe, workflow),
        (ExternalAgent::Gemini, true) => gemini::uninstall(&ctx.workspace, &exe),
        (ExternalAgent::Gemini, false) => gemini::install(&ctx.workspace, &exe, workflow),
        (ExternalAgent::Codex, true) => codex::uninstall(&ctx.workspace, &exe),
        (ExternalAgent::Codex, false) => codex::install(&ctx.workspace, &exe, workflow),
    };
    match result {
        Ok(changes) => {
            if changes.is_empty() {
                writeln!(ctx.out, "Nothing to change.")?;
            }
            for c in changes {
                writeln!(ctx.out, "{c}")?;
            }
            if !uninstall {
                writeln!(
                    ctx.out,
                    "{} in {} now asks rawko before each tool call; keep rawko running (your editor, or `rawko serve`).",
                    agent.display_name(),
                    ctx.workspace.display()
                )?;
                if agent == ExternalAgent::Gemini {
                    writeln!(
                        ctx.out,
                        "Gemini CLI runs a project's hooks and MCP servers only in a folder you trust (/permissions, or ~/.gemini/trustedFolders.json)."
                    )?;
                }
                if agent == ExternalAgent::Claude {
                    // Claude Code lets the agent stop after so many Stop blocks in a row,
                    // whatever rawko answers: a maxReminders above that is never reached.
                    let (settings, _) = crate::config::load(
                        &crate::config::config_files(&ctx.workspace, ctx.env),
                        None,
                    );
                    let cap = claude::stop_hook_block_cap(ctx.env);
                    if let Some(warning) = claude::reminders_warning(settings.max_reminders, cap) {
                        writeln!(ctx.err, "{warning}")?;
                    }
                }
                if agent == ExternalAgent::Codex {
                    writeln!(ctx.out, "{}", codex::REVIEW_NOTE)?;
                }
            }
            Ok(EXIT_OK)
        }
        Err(e) => {
            writeln!(ctx.err, "error: {e}")?;
            Ok(EXIT_PROBLEMS)
        }
    }
}

/// `rawko mcp`: an MCP server on stdio with `workflow_step`, `workflow_status` and
/// `workflow_start`, forwarded to the rawko server of the working directory.
pub fn mcp(ctx: &mut Context<'_>) -> io::Result<ExitCode> {
    let runtime = crate::external::private_runtime_dir(ctx.env, false);
    let var = |name: &str| {
        (ctx.env)(name)
            .and_then(|v| v.into_string().ok())
            .filter(|v| !v.is_empty())
    };
    let server = McpServer {
        runtime,
        workspace: ctx.workspace.clone(),
        acp_url: var(crate::provider::acp::MCP_URL_VAR),
        acp_token: var(crate::provider::acp::MCP_TOKEN_VAR),
        told: std::sync::Once::new(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = rt.block_on(async move {
        use rmcp::ServiceExt;
        let service = server
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| io::Error::other(e.to_string()))?;
        service
            .waiting()
            .await
            .map_err(|e| io::Error::other(e.to_string()))?;
        io::Result::Ok(())
    });
    match result {
        Ok(()) => Ok(EXIT_OK),
        Err(e) => {
            writeln!(ctx.err, "error: the MCP server stopped: {e}")?;
            Ok(EXIT_USAGE)
        }
    }
}

struct McpServer {
    /// The runtime directory, or why it is not used.
    runtime: Result<PathBuf, String>,
    workspace: PathBuf,
    /// The endpoint of the task whose ACP agent started this server, when one did.
    acp_url: Option<String>,
    acp_token: Option<String>,
    /// The task was told the agent connected (once).
    told: std::sync::Once,
}

fn schema(value: Value) -> std::sync::Arc<serde_json::Map<String, Value>> {
    std::sync::Arc::new(value.as_object().cloned().unwrap_or_default())
}

fn tool(name: &'static str, description: &'static str, input: Value) -> rmcp::model::Tool {
    rmcp::model::Tool::new(name, description, schema(input))
}

impl McpServer {
    fn forward<R: rawko_protocol::Request>(&self, params: &R::Params) -> Result<R::Result, String> {
        // Started by an ACP agent that rawko runs (the `acp` provider): its task's endpoint.
        if let (Some(url), Some(token)) = (&self.acp_url, &self.acp_token) {
            return endpoint::request::<R>(url, token, params, Duration::from_secs(600)).map_err(
                |e| match e {
                    CallError::Unreachable(e) => format!("the rawko task does not answer: {e}"),
                    CallError::Refused => "the rawko task refused the token".to_owned(),
                    CallError::Bad(e) => e,
                },
            );
        }
        let runtime = self.runtime.as_ref().map_err(Clone::clone)?;
        let (url, token, _) = endpoint::find(runtime, &self.workspace).ok_or_else(|| {
            format!(
                "no rawko server is running for {}; open it in an editor with rawko or run `rawko serve`",
                self.workspace.display()
            )
        })?;
        endpoint::request::<R>(&url, &token, params, Duration::from_secs(30)).map_err(|e| match e {
            CallError::Unreachable(e) => format!("the rawko server does not answer: {e}"),
            CallError::Refused => "the rawko server refused the token".to_owned(),
            CallError::Bad(e) => e,
        })
    }
}

impl rmcp::ServerHandler for McpServer {
    fn get_info(&self) -> rmcp::model::ServerInfo {
        let mut info = rmcp::model::ServerInfo::default();
        info.capabilities = rmcp::model::ServerCapabilities::builder()
            .enable_tools()
            .build();
        info.server_info = rmcp::model::Implementation::new("rawko", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "rawko guides this session through a phased workflow. Call workflow_status to see the phase, workflow_step with action \"next\" when a phase is done."
                .to_owned(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        if let (Some(url), Some(token)) = (&self.acp_url, &self.acp_token) {
            // The task of the ACP agent that started this server learns the agent has its tools
            // (else it tells the user why `workflow_step` may be missing); on the side, as the
            // answer must not wait for it.
            self.told.call_once(|| {
                let (url, token) = (url.clone(), token.clone());
                std::thread::spawn(move || {
                    let _ = endpoint::request::<wire::McpConnected>(
                        &url,
                        &token,
                        &SessionParams::default(),
                        Duration::from_secs(5),
                    );
                });
            });
        }
        Ok(rmcp::model::ListToolsResult::with_all_items(vec![
            tool(
                "workflow_step",
                "Move the rawko workflow: \"next\" when the current phase is done, \"loop\" to repeat the loop, \"status\" to see where you are.",
                json!({"type": "object", "properties": {
                    "action": {"type": "string", "enum": ["next", "loop", "status"]},
                    "summary": {"type": "string", "description": "what was done in the phase"}
                }, "required": ["action"]}),
            ),
            tool(
                "workflow_status",
                "Where the session stands in its rawko workflow: the phase, its breadcrumb and state.",
                json!({"type": "object", "properties": {}}),
            ),
            tool(
                "workflow_start",
                "Start a rawko workflow for this session (when none runs yet).",
                json!({"type": "object", "properties": {
                    "workflow": {"type": "string", "description": "the workflow's key or command name"}
                }, "required": ["workflow"]}),
            ),
        ]))
    }

    async fn call_tool(
        &self,
        request: rmcp::model::CallToolRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::CallToolResult, rmcp::ErrorData> {
        use rmcp::model::{CallToolResult, ContentBlock as Content};
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let answer = match request.name.as_ref() {
            "workflow_step" => self.forward::<wire::WorkflowStep>(&WorkflowStepParams {
                action: args["action"].as_str().unwrap_or("status").to_owned(),
                session_id: None,
            }),
            "workflow_status" => self.forward::<wire::WorkflowStatus>(&SessionParams::default()),
            "workflow_start" => match args["workflow"].as_str() {
                Some(w) => self.forward::<wire::WorkflowStart>(&WorkflowStartParams {
                    workflow: w.to_owned(),
                    session_id: None,
                }),
                None => Err("workflow_start needs \"workflow\"".to_owned()),
            },
            other => Err(format!(
                "unknown tool \"{}\"; the tools are workflow_step, workflow_status, workflow_start",
                crate::clip::clip(other)
            )),
        };
        Ok(match answer {
            Ok(v) if !v.ok => {
                CallToolResult::error(vec![Content::text(v.text.unwrap_or_default())])
            }
            Ok(v) => {
                let text = match (v.text, v.status) {
                    (Some(text), _) => text,
                    (None, Some(status)) => serde_json::to_string(&status).unwrap_or_default(),
                    (None, None) => String::new(),
                };
                CallToolResult::success(vec![Content::text(text)])
            }
            Err(e) => CallToolResult::error(vec![Content::text(e)]),
        })
    }
}

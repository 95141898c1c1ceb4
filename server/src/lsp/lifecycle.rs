//! The LSP lifecycle: `initialize` (the editor's folder and options), `initialized` (the problems
//! the user should see, the trust question), `shutdown`, and `workspace/executeCommand`.

use rawko_protocol::error_codes;
use serde_json::Value;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::lsp_types::{
    ExecuteCommandOptions, ExecuteCommandParams, InitializeParams, InitializeResult,
    InitializedParams, MessageType, ServerCapabilities, ServerInfo,
};
use tower_lsp_server::{LanguageServer, UriExt};

use super::errors::{command_params, error, to_value};
use super::{workspace, Backend};
use crate::clip::clip;
use crate::workflow::Severity;

impl LanguageServer for Backend {
    async fn initialize(&self, params: InitializeParams) -> Result<InitializeResult> {
        #[allow(deprecated)]
        let from_client = params
            .workspace_folders
            .as_ref()
            .and_then(|f| f.first())
            .and_then(|f| f.uri.to_file_path().map(|p| p.into_owned()))
            .or_else(|| {
                params
                    .root_uri
                    .as_ref()
                    .and_then(|u| u.to_file_path().map(|p| p.into_owned()))
            });
        let before = self.shared.tasks.workspace();
        let found = workspace::editor_opens(
            &self.shared,
            from_client,
            params.initialization_options.as_ref(),
        );
        let workspace = self.shared.tasks.workspace();
        if before != workspace {
            // The editor's folder is not where the server started: external agents are served
            // for the editor's folder from now on.
            tracing::info!(
                "the editor's workspace is {}; the endpoint moves there",
                workspace.display()
            );
            if let Ok(mut slot) = self.shared.endpoint.lock() {
                slot.take();
            }
            tokio::spawn(workspace::open_endpoint(self.shared.clone(), workspace));
        }
        if let Ok(mut p) = self.shared.config_problems.lock() {
            *p = found.problems;
        }
        Ok(InitializeResult {
            capabilities: ServerCapabilities {
                execute_command_provider: Some(ExecuteCommandOptions {
                    commands: rawko_protocol::commands::ALL
                        .iter()
                        .map(|(c, _)| (*c).to_owned())
                        .collect(),
                    ..Default::default()
                }),
                experimental: Some(serde_json::json!({"rawko": {"protocol": 1}})),
                ..Default::default()
            },
            server_info: Some(ServerInfo {
                name: "rawko".to_owned(),
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            }),
        })
    }

    async fn initialized(&self, _: InitializedParams) {
        // Problems the user should see: bad settings, broken workflows. Sent after initialize,
        // from a task of its own, so the handler returns at once.
        let problems: Vec<String> = self
            .shared
            .config_problems
            .lock()
            .map(|p| p.iter().map(ToString::to_string).collect())
            .unwrap_or_default();
        let client = self.client.clone();
        // An editor is attached from now on: approvals and notifications go to it.
        self.outgoing.set_ready();
        if self.shared.tasks.trust().is_none() {
            tokio::spawn(workspace::ask_trust(
                self.outgoing.clone(),
                self.client.clone(),
                self.shared.clone(),
            ));
        }
        if let Some(url) = self.shared.web_url.get() {
            tokio::spawn(offer_page(self.client.clone(), url.clone()));
        }
        if let Some(connection) = self.shared.options.nats.clone() {
            if self.shared.team_watched.set(()).is_ok() {
                let sink = self.shared.team_sink.clone();
                let client = self.client.clone();
                tokio::spawn(async move {
                    if let Err(e) = crate::worker::watch::start(&connection, "editor", sink).await {
                        tracing::error!("the team's tasks cannot be shown: {e}");
                        client
                            .show_message(
                                MessageType::ERROR,
                                format!("rawko: the team's tasks on NATS cannot be shown: {e}"),
                            )
                            .await;
                    }
                });
            }
        }
        let tasks = self.shared.tasks.clone();
        tokio::spawn(async move {
            for p in problems {
                client
                    .show_message(MessageType::WARNING, format!("rawko config: {p}"))
                    .await;
            }
            let outcome = tasks.load_workflows().await;
            let errors = outcome
                .diagnostics
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .count();
            if errors > 0 {
                client
                    .show_message(
                        MessageType::WARNING,
                        format!(
                            "rawko: {} workflow{} skipped because of {errors} error{}; run `rawko workflows validate` (or your editor's validate command) for details",
                            outcome.skipped.len(),
                            if outcome.skipped.len() == 1 { " was" } else { "s were" },
                            if errors == 1 { "" } else { "s" }
                        ),
                    )
                    .await;
            }
        });
    }

    async fn shutdown(&self) -> Result<()> {
        // Running tasks are not cancelled: their logs are on disk, so after `exit` they are
        // listed as interrupted and `rawko/resumeTask` continues them.
        Ok(())
    }

    async fn execute_command(&self, params: ExecuteCommandParams) -> Result<Option<Value>> {
        let args = &params.arguments;
        match params.command.as_str() {
            rawko_protocol::commands::START_TASK => {
                to_value(self.start_task(command_params(args)?).await?)
            }
            rawko_protocol::commands::CANCEL_TASK => {
                to_value(self.cancel_task(command_params(args)?).await?)
            }
            rawko_protocol::commands::STEP => to_value(self.step(command_params(args)?).await?),
            other => Err(error(
                error_codes::METHOD_NOT_FOUND,
                format!(
                    "unknown command \"{}\"; the commands are {}",
                    clip(other),
                    rawko_protocol::commands::ALL
                        .iter()
                        .map(|(c, _)| *c)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }
}

/// Tells the editor that the web page serves (`serve --web`), with an "Open" action that opens
/// it in the browser (`window/showDocument`, external). The message does not show the token;
/// only the address opened carries it.
async fn offer_page(client: tower_lsp_server::Client, url: String) {
    use tower_lsp_server::lsp_types::{MessageActionItem, ShowDocumentParams};
    let shown = url.split('?').next().unwrap_or_default().to_owned();
    let open = MessageActionItem {
        title: "Open".to_owned(),
        properties: Default::default(),
    };
    let chosen = client
        .show_message_request(
            MessageType::INFO,
            format!("rawko: the tasks and their approvals are on a web page too, at {shown}"),
            Some(vec![open]),
        )
        .await;
    if let Ok(Some(action)) = chosen {
        if action.title == "Open" {
            let Ok(uri) = url.parse() else { return };
            let shown = client
                .show_document(ShowDocumentParams {
                    uri,
                    external: Some(true),
                    take_focus: Some(true),
                    selection: None,
                })
                .await;
            if !matches!(shown, Ok(true)) {
                client
                    .show_message(
                        MessageType::WARNING,
                        "rawko: the editor could not open the page; its address, with the token, is in rawko's log (stderr)".to_owned(),
                    )
                    .await;
            }
        }
    }
}

//! The server's workspace: where it settles before any editor speaks and again at `initialize`,
//! the local endpoint for external agents, the editor's answer about trusting the workspace's
//! hooks and settings that need trust, and the end of the session.

use std::path::PathBuf;
use std::sync::Arc;

use rawko_protocol::to_client::{TrustWorkspace, TrustWorkspaceParams, TrustWorkspaceResult};
use serde_json::Value;
use tower_lsp_server::lsp_types::MessageType;
use tower_lsp_server::Client;

use super::{transport, ServeOptions, Shared};
use crate::engine::tasks::{Found, Tasks};
use crate::hooks::session::SessionStatus;
use crate::hooks::trust::Trust;

pub(super) fn env(key: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(key)
}

fn current_dir() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
}

/// The folder the server serves before (or without) an editor: `--workspace`, else the current
/// directory.
pub(super) fn first_workspace(options: &ServeOptions) -> PathBuf {
    options.workspace.clone().unwrap_or_else(current_dir)
}

/// What the opening before any editor found, in the log: problems with the settings, and what a
/// workspace with hooks it does not trust leaves out until `rawko trust` (or the editor's
/// question, once one attaches).
pub(super) fn tell_found(tasks: &Tasks, found: &Found) {
    for p in &found.problems {
        tracing::warn!("rawko config: {p}");
    }
    let place = tasks.place();
    if let Some(left_out) = place.settings.untrusted_text(&place.workspace) {
        if !found.trust.allows() {
            tracing::warn!(
                "{left_out} until you trust the workspace (`rawko trust`, or the editor's question)"
            );
        }
    }
}

/// The editor's folder and settings (`initialize`): the service moves there (or takes the
/// editor's settings in the same folder); the editor is asked about trust if it is not trusted.
pub(super) fn editor_opens(
    shared: &Shared,
    from_client: Option<PathBuf>,
    options: Option<&Value>,
) -> Found {
    let workspace = editor_workspace(shared, from_client);
    shared.tasks.reopen(workspace, options, &env, true)
}

/// The folder the editor's `initialize` names, unless `--workspace` was given.
pub(super) fn editor_workspace(shared: &Shared, from_client: Option<PathBuf>) -> PathBuf {
    shared
        .options
        .workspace
        .clone()
        .or(from_client)
        .unwrap_or_else(current_dir)
}

/// Opens the local endpoint external agents (Claude Code's hooks) reach, for `workspace`,
/// replacing (and so closing) the one before.
pub(super) async fn open_endpoint(shared: Arc<Shared>, workspace: PathBuf) {
    let host = crate::endpoint::ExternalHost {
        tasks: shared.tasks.clone(),
    };
    let runtime = match crate::external::private_runtime_dir(env, true) {
        Ok(runtime) => runtime,
        Err(why) => {
            tracing::warn!("cannot start the endpoint for external agents: {why}");
            return;
        }
    };
    match crate::endpoint::start(Arc::new(host), &workspace, &runtime).await {
        Ok(endpoint) => {
            tracing::info!(
                "endpoint for external agents at {} ({})",
                endpoint.url,
                endpoint.file.display()
            );
            if let Ok(mut slot) = shared.endpoint.lock() {
                *slot = Some(endpoint);
            }
        }
        Err(e) => tracing::warn!("cannot start the endpoint for external agents: {e}"),
    }
}

/// What the server does before any editor speaks: it opens the endpoint for the folder the
/// service opened, so a `rawko serve` started in a terminal gates Claude Code at once.
pub(super) async fn early_start(shared: Arc<Shared>) {
    let workspace = shared.tasks.workspace();
    open_endpoint(shared, workspace).await;
}

/// Asks the editor whether the workspace's hooks may run and its settings that need trust apply
/// (`rawko/trustWorkspace`), records a yes, and tells the user what a no (or no answer) means.
pub(super) async fn ask_trust(out: Arc<transport::Outgoing>, client: Client, shared: Arc<Shared>) {
    let place = shared.tasks.place();
    let (workspace, settings) = (&place.workspace, &place.settings);
    let changed = shared.tasks.trust_found() == Trust::Changed;
    let params = TrustWorkspaceParams {
        workspace: workspace.display().to_string(),
        hooks: crate::hooks::workspace_hook_lines(&settings.hooks),
        settings: settings.workspace_settings_lines(),
        changed,
    };
    let (id, answer) = out.request::<TrustWorkspace>(&params);
    let trusted = match tokio::time::timeout(settings.approval_timeout, answer).await {
        Ok(Ok(Ok(result))) => match serde_json::from_value::<TrustWorkspaceResult>(result) {
            Ok(r) => r.trusted,
            Err(e) => {
                tracing::warn!("the editor's trust answer is not understood: {e}");
                false
            }
        },
        Ok(Ok(Err(error))) => {
            tracing::warn!("the editor answered rawko/trustWorkspace with an error: {error}");
            false
        }
        Ok(Err(_)) => false,
        Err(_) => {
            // Named by its workspace too, for a client that cannot see the JSON-RPC id.
            out.cancel(&id);
            out.notify::<rawko_protocol::to_client::TrustWithdrawn>(
                &rawko_protocol::to_client::TrustWithdrawnParams {
                    workspace: params.workspace.clone(),
                },
            );
            false
        }
    };
    if let Err(e) = shared.tasks.answer_trust(trusted) {
        client
            .show_message(MessageType::WARNING, format!("rawko: {e}"))
            .await;
    }
    if !trusted {
        let message = format!(
            "rawko: {} because the workspace is not trusted; run `rawko trust` in it to trust it",
            settings.untrusted_text(workspace).unwrap_or_default()
        );
        // In the editor's output as well as a message, where it stays after the message is gone.
        client.log_message(MessageType::WARNING, &message).await;
        client.show_message(MessageType::WARNING, message).await;
    }
}

/// The session ends: AutoAgent's Stop hooks run with the reason, then the session file is closed.
pub(super) async fn end_session(shared: &Shared, interrupted: bool) {
    // The endpoint goes first: no external agent should reach a server that is ending.
    if let Ok(mut slot) = shared.endpoint.lock() {
        slot.take();
    }
    let stop = shared
        .tasks
        .end_session(interrupted.then_some(SessionStatus::Interrupted))
        .await;
    for note in &stop.notes {
        match note {
            crate::hooks::Note::Output(t) => tracing::info!("{t}"),
            note @ (crate::hooks::Note::Error(_) | crate::hooks::Note::ConfigError { .. }) => {
                tracing::warn!("{}", note.text())
            }
        }
    }
    if let Some(reason) = stop.blocked.or(stop.halt) {
        tracing::warn!("Stop hook blocked termination: {reason}");
    }
}

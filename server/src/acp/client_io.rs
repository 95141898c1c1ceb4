//! The client's `fs/*` and `terminal/*` methods as the tools' I/O (crate::tools::ClientIo): Read
//! reads the editor's buffers, Write and Edit write through it (its diff view shows them), Bash
//! runs in a terminal the editor shows inside the tool call. The tools keep their gate and their
//! confinement; this only carries the requests (docs/acp.md, "The client's files and terminal").

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    ClientCapabilities, CreateTerminalRequest, EnvVariable, KillTerminalRequest,
    ReadTextFileRequest, ReleaseTerminalRequest, SessionNotification, SessionUpdate, Terminal,
    TerminalExitStatus, TerminalId, TerminalOutputRequest, ToolCallContent, ToolCallUpdate,
    ToolCallUpdateFields, WaitForTerminalExitRequest, WriteTextFileRequest,
};

use super::Connection;
use crate::tools::{ClientFuture, ClientIo, ClientOffers, TerminalCommand, TerminalRun};

/// How long a killed command gets to report its exit before rawko stops waiting for it.
const AFTER_KILL: Duration = Duration::from_secs(5);

/// The terminals shown in tool calls, by tool call id: the call's last update shows the terminal
/// (its output stays visible there after release) instead of the result text.
pub type Terminals = Arc<Mutex<HashMap<String, String>>>;

/// What the client said it offers, as the tools use it.
pub fn offers(capabilities: &ClientCapabilities) -> ClientOffers {
    ClientOffers {
        read: capabilities.fs.read_text_file,
        write: capabilities.fs.write_text_file,
        terminal: capabilities.terminal,
    }
}

/// A tool call's last update (the one with its status) shows the terminal its command ran in
/// (the client keeps showing its output after release) instead of the result text.
pub fn keep_terminal(update: SessionUpdate, terminals: &Terminals) -> SessionUpdate {
    let SessionUpdate::ToolCallUpdate(mut u) = update else {
        return update;
    };
    if u.fields.status.is_some() {
        let terminal = terminals
            .lock()
            .ok()
            .and_then(|mut t| t.remove(&u.tool_call_id.0.to_string()));
        if let Some(id) = terminal {
            u.fields.content = Some(vec![ToolCallContent::Terminal(Terminal::new(id))]);
        }
    }
    SessionUpdate::ToolCallUpdate(u)
}

/// One session's client I/O.
pub struct AcpClientIo {
    pub cx: Connection,
    pub session_id: String,
    pub offers: ClientOffers,
    pub terminals: Terminals,
}

impl std::fmt::Debug for AcpClientIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpClientIo")
            .field("session_id", &self.session_id)
            .field("offers", &self.offers)
            .finish_non_exhaustive()
    }
}

fn said(e: &agent_client_protocol::Error) -> String {
    crate::clip::clip_message(&e.to_string()).into_owned()
}

impl ClientIo for AcpClientIo {
    fn offers(&self) -> ClientOffers {
        self.offers
    }

    fn read_text_file(&self, path: PathBuf) -> ClientFuture<Result<String, String>> {
        let sent = self
            .cx
            .send_request(ReadTextFileRequest::new(self.session_id.clone(), path))
            .block_task();
        Box::pin(async move { sent.await.map(|r| r.content).map_err(|e| said(&e)) })
    }

    fn write_text_file(&self, path: PathBuf, content: String) -> ClientFuture<Result<(), String>> {
        let sent = self
            .cx
            .send_request(WriteTextFileRequest::new(
                self.session_id.clone(),
                path,
                content,
            ))
            .block_task();
        Box::pin(async move { sent.await.map(drop).map_err(|e| said(&e)) })
    }

    fn run_in_terminal(
        &self,
        command: TerminalCommand,
    ) -> ClientFuture<Result<TerminalRun, String>> {
        let cx = self.cx.clone();
        let session = self.session_id.clone();
        let terminals = self.terminals.clone();
        Box::pin(run(cx, session, terminals, command))
    }
}

/// A terminal rawko created: killed and released when dropped before [`Held::release`] (the
/// tool call was cancelled, or something failed on the way).
struct Held {
    cx: Connection,
    session: String,
    id: TerminalId,
    released: bool,
}

impl Held {
    fn release(mut self) {
        self.released = true;
        let request = ReleaseTerminalRequest::new(self.session.clone(), self.id.clone());
        self.cx.send_request(request).detach();
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        let kill = self.cx.send_request(KillTerminalRequest::new(
            self.session.clone(),
            self.id.clone(),
        ));
        let release = self.cx.send_request(ReleaseTerminalRequest::new(
            self.session.clone(),
            self.id.clone(),
        ));
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = kill.block_task().await {
                    tracing::debug!("terminal/kill: {e}");
                }
                if let Err(e) = release.block_task().await {
                    tracing::debug!("terminal/release: {e}");
                }
            });
        }
    }
}

async fn run(
    cx: Connection,
    session: String,
    terminals: Terminals,
    command: TerminalCommand,
) -> Result<TerminalRun, String> {
    let env = command
        .env
        .iter()
        .map(|(name, value)| EnvVariable::new(name.clone(), value.clone()))
        .collect();
    let request = CreateTerminalRequest::new(session.clone(), command.program.clone())
        .args(command.args.clone())
        .env(env)
        .cwd(command.cwd.clone())
        .output_byte_limit(command.output_limit);
    let created = cx
        .send_request(request)
        .block_task()
        .await
        .map_err(|e| said(&e))?;
    let held = Held {
        cx: cx.clone(),
        session: session.clone(),
        id: created.terminal_id.clone(),
        released: false,
    };
    if let Some(call) = &command.call_id {
        if let Ok(mut t) = terminals.lock() {
            t.insert(call.clone(), created.terminal_id.0.to_string());
        }
        let shown = ToolCallUpdate::new(
            call.clone(),
            ToolCallUpdateFields::new().content(vec![ToolCallContent::Terminal(Terminal::new(
                created.terminal_id.clone(),
            ))]),
        );
        if let Err(e) = cx.send_notification(SessionNotification::new(
            session.clone(),
            SessionUpdate::ToolCallUpdate(shown),
        )) {
            tracing::debug!("cannot show the terminal in the tool call: {e}");
        }
    }
    let wait = |cx: &Connection| {
        cx.send_request(WaitForTerminalExitRequest::new(
            session.clone(),
            created.terminal_id.clone(),
        ))
        .block_task()
    };
    let (exit, timed_out) = match tokio::time::timeout(command.timeout, wait(&cx)).await {
        Ok(Ok(response)) => (Some(response.exit_status), false),
        Ok(Err(e)) => return Err(said(&e)),
        Err(_) => {
            cx.send_request(KillTerminalRequest::new(
                session.clone(),
                created.terminal_id.clone(),
            ))
            .block_task()
            .await
            .map_err(|e| said(&e))?;
            let after = tokio::time::timeout(AFTER_KILL, wait(&cx)).await;
            (after.ok().and_then(Result::ok).map(|r| r.exit_status), true)
        }
    };
    let output = cx
        .send_request(TerminalOutputRequest::new(
            session.clone(),
            created.terminal_id.clone(),
        ))
        .block_task()
        .await
        .map_err(|e| said(&e))?;
    held.release();
    let exit = exit
        .or(output.exit_status)
        .unwrap_or_else(TerminalExitStatus::new);
    Ok(TerminalRun {
        output: output.output,
        truncated: output.truncated,
        exit_code: exit.exit_code,
        signal: exit.signal,
        timed_out,
    })
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::v1::schema::{FileSystemCapabilities, ToolCallStatus};
    use serde_json::json;

    use super::*;

    #[test]
    fn the_offers_are_what_the_client_said() {
        let none = ClientCapabilities::new();
        assert_eq!(offers(&none), ClientOffers::default());
        let all = ClientCapabilities::new()
            .fs(FileSystemCapabilities::new()
                .read_text_file(true)
                .write_text_file(true))
            .terminal(true);
        assert_eq!(
            offers(&all),
            ClientOffers {
                read: true,
                write: true,
                terminal: true
            }
        );
    }

    #[test]
    fn a_calls_last_update_shows_its_terminal_once() {
        let terminals = Terminals::default();
        terminals
            .lock()
            .unwrap()
            .insert("c1".into(), "term-9".into());
        let progress = SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            "c1",
            ToolCallUpdateFields::new().content(vec!["partial".to_owned().into()]),
        ));
        let last = SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            "c1",
            ToolCallUpdateFields::new()
                .status(ToolCallStatus::Completed)
                .content(vec!["exit code 0".to_owned().into()]),
        ));
        let value = |u: SessionUpdate| serde_json::to_value(u).unwrap();
        // Updates without a status pass as they are.
        assert_eq!(
            value(keep_terminal(progress, &terminals))["content"][0]["content"]["text"],
            "partial"
        );
        let shown = value(keep_terminal(last.clone(), &terminals));
        assert_eq!(
            shown["content"],
            json!([{"type": "terminal", "terminalId": "term-9"}])
        );
        assert_eq!(shown["status"], "completed");
        // Forgotten once shown; other calls keep their text.
        assert_eq!(
            value(keep_terminal(last, &terminals))["content"][0]["content"]["text"],
            "exit code 0"
        );
    }
}

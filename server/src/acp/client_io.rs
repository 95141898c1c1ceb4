//! The client's `fs/*` and `terminal/*` methods as the tools' I/O (crate::tools::ClientIo): Read
//! reads the editor's buffers, Write and Edit write through it (its diff view shows them), Bash
//! runs in a terminal the editor shows inside the tool call. The tools keep their gate and their
//! confinement; this only carries the requests (docs/acp.md, "The client's files and terminal").
//!
//! Every request has a bound ([`within`]): the editor request bound (`editorRequestSeconds`,
//! 30 s) for the file and terminal control calls, the command's own time limit and then
//! [`AFTER_KILL`] for the wait for its exit (and, in `mod.rs`, the approval timeout for
//! `session/request_permission`). When it passes, the tool call fails with the reason ("the
//! editor did not answer fs/read_text_file within 30 s") and the turn goes on.

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
use crate::tools::{
    ClientError, ClientFuture, ClientIo, ClientOffers, TerminalCommand, TerminalRun,
};

/// How long a killed command gets to report its exit before rawko stops waiting for it.
const AFTER_KILL: Duration = Duration::from_secs(5);

/// Waits for the client's answer to a request of `method`, at most `bound`. An error answer is
/// [`ClientError::Answered`]; no answer within the bound is [`ClientError::NoAnswer`] with the
/// reason in the user's words.
///
/// When the bound passes, the request is abandoned by dropping `answer`: the SDK
/// (agent-client-protocol 5) then sends `$/cancel_request` for it on its own, which is all a
/// client needs to close its prompt (the TypeScript SDK's client sees it as its handler's
/// aborted signal; tests/acp and tests/acp_e2e.rs assert it arrives). Every request rawko sends
/// the client waits through this function, bar `terminal/wait_for_exit` (bounded by the command's
/// own time limit, then `terminal/kill`).
pub async fn within<T>(
    method: &str,
    bound: Duration,
    answer: impl std::future::Future<Output = Result<T, agent_client_protocol::Error>>,
) -> Result<T, ClientError> {
    match tokio::time::timeout(bound, answer).await {
        Ok(answer) => answer.map_err(|e| ClientError::Answered(said(&e))),
        Err(_) => {
            tracing::warn!("the client did not answer {method} within {bound:?}");
            Err(ClientError::NoAnswer(no_answer(method, bound)))
        }
    }
}

/// "the editor did not answer METHOD within N s".
fn no_answer(method: &str, bound: Duration) -> String {
    format!(
        "the editor did not answer {method} within {}",
        seconds(bound)
    )
}

/// A duration as the user reads it: `30 s`, `1 s`, `0.5 s`.
fn seconds(d: Duration) -> String {
    let secs = d.as_secs_f64();
    if secs >= 1.0 && (secs - secs.round()).abs() < 1e-9 {
        format!("{} s", secs.round())
    } else {
        format!("{secs:.1} s")
    }
}

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
    /// The session's pumps: a request waits until they sent what the task produced before it.
    pub outbox: super::outbox::Outbox,
    /// The bound of each file and terminal control request (`editorRequestSeconds`).
    pub bound: Duration,
}

impl std::fmt::Debug for AcpClientIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpClientIo")
            .field("session_id", &self.session_id)
            .field("offers", &self.offers)
            .field("bound", &self.bound)
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

    fn read_text_file(&self, path: PathBuf) -> ClientFuture<Result<String, ClientError>> {
        let (cx, outbox, bound) = (self.cx.clone(), self.outbox.clone(), self.bound);
        let request = ReadTextFileRequest::new(self.session_id.clone(), path);
        Box::pin(async move {
            outbox.flush().await;
            let sent = cx.send_request(request).block_task();
            within("fs/read_text_file", bound, sent)
                .await
                .map(|r| r.content)
        })
    }

    fn write_text_file(
        &self,
        path: PathBuf,
        content: String,
    ) -> ClientFuture<Result<(), ClientError>> {
        let (cx, outbox, bound) = (self.cx.clone(), self.outbox.clone(), self.bound);
        let request = WriteTextFileRequest::new(self.session_id.clone(), path, content);
        Box::pin(async move {
            outbox.flush().await;
            let sent = cx.send_request(request).block_task();
            within("fs/write_text_file", bound, sent).await.map(drop)
        })
    }

    fn run_in_terminal(
        &self,
        command: TerminalCommand,
    ) -> ClientFuture<Result<TerminalRun, ClientError>> {
        let requests = Requests {
            cx: self.cx.clone(),
            session: self.session_id.clone(),
            bound: self.bound,
        };
        let outbox = self.outbox.clone();
        let terminals = self.terminals.clone();
        Box::pin(async move {
            outbox.flush().await;
            run(requests, terminals, command).await
        })
    }
}

/// What the terminal requests of one session need: where they go and their bound.
#[derive(Clone)]
struct Requests {
    cx: Connection,
    session: String,
    bound: Duration,
}

impl Requests {
    /// `terminal/kill` then `terminal/release` of `id`, in a task of its own, each within the
    /// bound (nothing waits for them; a client that does not answer is only logged).
    fn end(&self, id: TerminalId, kill: bool) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let cx = &self.cx;
        let kill = kill.then(|| {
            cx.send_request(KillTerminalRequest::new(self.session.clone(), id.clone()))
                .block_task()
        });
        let release = cx
            .send_request(ReleaseTerminalRequest::new(self.session.clone(), id))
            .block_task();
        let bound = self.bound;
        runtime.spawn(async move {
            if let Some(kill) = kill {
                if let Err(e) = within("terminal/kill", bound, kill).await {
                    tracing::debug!("terminal/kill: {e}");
                }
            }
            if let Err(e) = within("terminal/release", bound, release).await {
                tracing::debug!("terminal/release: {e}");
            }
        });
    }
}

/// A terminal rawko created: killed and released when dropped before [`Held::release`] (the
/// tool call was cancelled, or something failed on the way).
struct Held {
    requests: Requests,
    id: TerminalId,
    released: bool,
}

impl Held {
    fn release(mut self) {
        self.released = true;
        self.requests.end(self.id.clone(), false);
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if !self.released {
            self.requests.end(self.id.clone(), true);
        }
    }
}

async fn run(
    requests: Requests,
    terminals: Terminals,
    command: TerminalCommand,
) -> Result<TerminalRun, ClientError> {
    let Requests { cx, session, bound } = requests.clone();
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
    let created = within(
        "terminal/create",
        bound,
        cx.send_request(request).block_task(),
    )
    .await?;
    let held = Held {
        requests,
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
    let ran = wait_and_read(&cx, &session, bound, &created.terminal_id, &command).await;
    match ran {
        Ok(run) => {
            held.release();
            Ok(run)
        }
        Err(e) => {
            // The call's last update shows why it failed, not the terminal; `held` is dropped,
            // which kills and releases the terminal.
            if let Some(call) = &command.call_id {
                if let Ok(mut t) = terminals.lock() {
                    t.remove(call);
                }
            }
            Err(e)
        }
    }
}

/// Waits for the command in terminal `id` to exit (killing it at its time limit) and reads its
/// output and exit status.
async fn wait_and_read(
    cx: &Connection,
    session: &str,
    bound: Duration,
    id: &TerminalId,
    command: &TerminalCommand,
) -> Result<TerminalRun, ClientError> {
    let wait = || {
        cx.send_request(WaitForTerminalExitRequest::new(
            session.to_owned(),
            id.clone(),
        ))
        .block_task()
    };
    // The command's own time limit bounds the wait for its exit; past it the command is killed,
    // and its exit may come up to AFTER_KILL later.
    let (exit, timed_out) = match tokio::time::timeout(command.timeout, wait()).await {
        Ok(Ok(response)) => (Some(response.exit_status), false),
        Ok(Err(e)) => return Err(ClientError::Answered(said(&e))),
        Err(_) => {
            let kill = KillTerminalRequest::new(session.to_owned(), id.clone());
            within("terminal/kill", bound, cx.send_request(kill).block_task()).await?;
            let after = tokio::time::timeout(AFTER_KILL, wait()).await;
            (after.ok().and_then(Result::ok).map(|r| r.exit_status), true)
        }
    };
    let output = within(
        "terminal/output",
        bound,
        cx.send_request(TerminalOutputRequest::new(session.to_owned(), id.clone()))
            .block_task(),
    )
    .await?;
    let exit = match exit.or(output.exit_status) {
        Some(exit) => exit,
        // Killed, and still no word of its exit: the editor is not answering the wait.
        None if timed_out => {
            return Err(ClientError::NoAnswer(no_answer(
                "terminal/wait_for_exit",
                command.timeout + AFTER_KILL,
            )))
        }
        None => TerminalExitStatus::new(),
    };
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

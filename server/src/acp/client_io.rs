//! The client's own file system and terminals for a session's tasks (`fs/read_text_file`,
//! `fs/write_text_file`, `terminal/*`), when the client offered them at `initialize`: rawko's Read,
//! Write, Edit and MultiEdit then see the editor's buffers and show their writes in its diff view,
//! and Bash runs in a terminal the user watches. The tools still confine every path to the
//! workspace and the gate still decides first (see `tools::client`).

use std::path::Path;
use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    CreateTerminalRequest, EnvVariable, KillTerminalRequest, ReadTextFileRequest,
    ReleaseTerminalRequest, TerminalOutputRequest, WaitForTerminalExitRequest,
    WriteTextFileRequest,
};

use super::Connection;
use crate::tools::{ClientFuture, ClientIo, CommandOutcome, CommandRequest};

/// What the client offered at `initialize`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offered {
    pub read: bool,
    pub write: bool,
    pub terminal: bool,
}

/// A session's [`ClientIo`] over its connection.
pub struct AcpClientIo {
    cx: Connection,
    session_id: String,
    offered: Offered,
}

impl AcpClientIo {
    /// The client's I/O for `session_id`, if it offered all of it: file reads, file writes and
    /// terminals (a client offering only some keeps rawko's own tools, which are all-or-nothing
    /// per task so that a Write and the Read after it see the same file).
    pub fn offered(cx: Connection, session_id: String, offered: Offered) -> Option<Arc<dyn ClientIo>> {
        (offered.read && offered.write && offered.terminal).then(|| {
            Arc::new(AcpClientIo {
                cx,
                session_id,
                offered,
            }) as Arc<dyn ClientIo>
        })
    }
}

fn failed(what: &str, e: impl std::fmt::Display) -> String {
    format!("the editor could not {what}: {e}")
}

/// Kills and releases a terminal unless disarmed: a dropped (cancelled) command does not go on
/// running in the editor.
struct TerminalGuard {
    cx: Connection,
    session_id: String,
    terminal_id: Option<String>,
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let Some(id) = self.terminal_id.take() else {
            return;
        };
        let cx = self.cx.clone();
        let session = self.session_id.clone();
        tokio::spawn(async move {
            let _ = cx
                .send_request(KillTerminalRequest::new(session.clone(), id.clone()))
                .block_task()
                .await;
            let _ = cx
                .send_request(ReleaseTerminalRequest::new(session, id))
                .block_task()
                .await;
        });
    }
}

impl ClientIo for AcpClientIo {
    fn read_text_file<'a>(&'a self, path: &'a Path) -> ClientFuture<'a, String> {
        Box::pin(async move {
            debug_assert!(self.offered.read);
            self.cx
                .send_request(ReadTextFileRequest::new(self.session_id.clone(), path))
                .block_task()
                .await
                .map(|r| r.content)
                .map_err(|e| failed("read the file", e))
        })
    }

    fn write_text_file<'a>(&'a self, path: &'a Path, content: &'a str) -> ClientFuture<'a, ()> {
        Box::pin(async move {
            self.cx
                .send_request(WriteTextFileRequest::new(
                    self.session_id.clone(),
                    path,
                    content,
                ))
                .block_task()
                .await
                .map(drop)
                .map_err(|e| failed("write the file", e))
        })
    }

    fn run_command(&self, request: CommandRequest) -> ClientFuture<'_, CommandOutcome> {
        Box::pin(async move {
            let (program, args) = request.argv();
            let env = request
                .env
                .iter()
                .map(|(k, v)| EnvVariable::new(k.clone(), v.clone()))
                .collect();
            let created = self
                .cx
                .send_request(
                    CreateTerminalRequest::new(self.session_id.clone(), program)
                        .args(args)
                        .env(env)
                        .cwd(request.cwd.clone())
                        .output_byte_limit(u64::try_from(request.output_byte_limit).ok()),
                )
                .block_task()
                .await
                .map_err(|e| failed("open a terminal", e))?;
            let id = created.terminal_id.0.to_string();
            let mut guard = TerminalGuard {
                cx: self.cx.clone(),
                session_id: self.session_id.clone(),
                terminal_id: Some(id.clone()),
            };
            let wait = self
                .cx
                .send_request(WaitForTerminalExitRequest::new(
                    self.session_id.clone(),
                    id.clone(),
                ))
                .block_task();
            let timed_out = match tokio::time::timeout(request.timeout, wait).await {
                Ok(Ok(_)) => false,
                Ok(Err(e)) => return Err(failed("wait for the command", e)),
                Err(_) => {
                    let _ = self
                        .cx
                        .send_request(KillTerminalRequest::new(
                            self.session_id.clone(),
                            id.clone(),
                        ))
                        .block_task()
                        .await;
                    true
                }
            };
            let output = self
                .cx
                .send_request(TerminalOutputRequest::new(
                    self.session_id.clone(),
                    id.clone(),
                ))
                .block_task()
                .await
                .map_err(|e| failed("give the command's output", e))?;
            guard.terminal_id = None;
            let _ = self
                .cx
                .send_request(ReleaseTerminalRequest::new(self.session_id.clone(), id))
                .block_task()
                .await;
            let status = output.exit_status.unwrap_or_default();
            Ok(CommandOutcome {
                output: output.output,
                truncated: output.truncated,
                exit_code: status.exit_code,
                signal: status.signal,
                timed_out,
            })
        })
    }
}

//! Starting and ending the agent's process as the task's phase confines it.
//!
//! The agent starts with the phase's access to the workspace. When the phase's access changes,
//! an agent that can open its session again (`session/load`, or `session/resume`) is ended and
//! started again with the new access in its session: when the workspace becomes read-only, after
//! a moment in which it is answered nothing (it never gets another answer); between two prompts
//! when it becomes writable. An agent that cannot is kept read-only for the whole task: its writes go through
//! rawko's `fs/write_text_file`, which the gate decides.

use super::agent::{self, Reopen};
use super::asking;
use super::{confine, AcpAgentProvider};
use crate::provider::{ProviderError, TextSink};
use crate::sandbox::WorkspaceAccess;

impl AcpAgentProvider {
    /// The access to the workspace the agent's process should have now; `None` before the task
    /// said how to confine it.
    pub(super) fn wanted(&self) -> Option<WorkspaceAccess> {
        let confinement = self.confinement.as_ref()?;
        Some(if self.reopen == Some(Reopen::No) {
            WorkspaceAccess::ReadOnly
        } else {
            confinement.access
        })
    }

    /// Ends the agent's process and everything it started, at once; the next turn starts it
    /// again in its session.
    pub(super) fn end_agent(&mut self) {
        if let Some(mut agent) = self.agent.take() {
            agent.kill_now();
            self.reopen_session = Some(agent.session.0.to_string());
            self.restarted = true;
        }
        // Its requests can no longer be answered, and what the user approved it is not the new
        // process's.
        self.pending.clear();
        self.terminals.clear();
        self.known.clear();
        self.grants = Default::default();
        self.approved_own.clear();
    }

    /// Starts the agent as the phase confines it and opens its session (`load`: this one, when
    /// the agent can open it again; the answer says it did).
    pub(super) async fn start_agent(
        &mut self,
        load: Option<String>,
        on_text: TextSink<'_>,
    ) -> Result<bool, ProviderError> {
        let mut access = self.wanted().unwrap_or(WorkspaceAccess::ReadWrite);
        let plan = match &self.confinement {
            Some(c) => confine::plan(&self.command, c, access).map_err(|e| self.fail(e))?,
            None => confine::Plan::default(),
        };
        if let Some(why) = plan.unconfined.as_ref().filter(|_| !self.unconfined_noted) {
            self.unconfined_noted = true;
            on_text(&format!(
                "[rawko: the agent runs without the kernel sandbox: {why}. It can write outside the workspace, and in phases that do not allow writing. Set \"sandbox\": \"required\" in ~/.config/rawko/config.json to refuse to start it instead.]\n"
            ));
        }
        let mut running = agent::start(&self.command, &plan, access)
            .await
            .map_err(|e| self.fail(e))?;
        self.reopen = Some(running.reopen);
        if running.access == Some(WorkspaceAccess::ReadWrite) && running.reopen == Reopen::No {
            // It could not be confined again when a later phase forbids writing: it runs
            // read-only for the whole task.
            drop(running);
            access = WorkspaceAccess::ReadOnly;
            let plan = match &self.confinement {
                Some(c) => confine::plan(&self.command, c, access).map_err(|e| self.fail(e))?,
                None => confine::Plan::default(),
            };
            running = agent::start(&self.command, &plan, access)
                .await
                .map_err(|e| self.fail(e))?;
        }
        let opened = running.open(&self.command, load.as_deref()).await;
        let unconfined = running.access.is_none();
        self.agent = Some(running);
        let (loaded, asking) = opened.map_err(|e| self.fail(e))?;
        if let Some(note) = self.asking_note(&asking, unconfined) {
            on_text(&note);
        }
        Ok(loaded)
    }

    /// What the task is told of the agent's asking ([`asking::Asking`]): once, and again only
    /// when a new process of the agent differs.
    fn asking_note(&mut self, asking: &asking::Asking, unconfined: bool) -> Option<String> {
        let key = match asking {
            asking::Asking::Kept { mode, .. } => mode.id.clone(),
            asking::Asking::Cannot(_) => String::new(),
        };
        if self.asking_noted.as_ref() == Some(&key) {
            return None;
        }
        self.asking_noted = Some(key);
        Some(match asking {
            asking::Asking::Kept { mode, from: Some(from) } => format!(
                "[rawko: the agent started in its mode \"{from}\"; rawko put it in its mode {}, in which it asks before it writes or runs a command, and keeps it there]\n",
                mode.shown()
            ),
            asking::Asking::Kept { mode, from: None } => format!(
                "[rawko: the agent runs in its mode {}, in which it asks before it writes or runs a command; rawko keeps it there]\n",
                mode.shown()
            ),
            asking::Asking::Cannot(why) => format!(
                "[rawko: the agent cannot be made to ask before it writes or runs a command ({why}): rawko decides only what it asks; what it does by itself is confined only by the sandbox around its process{}]\n",
                if unconfined {
                    ", and it runs without one here"
                } else {
                    ""
                }
            ),
        })
    }
}

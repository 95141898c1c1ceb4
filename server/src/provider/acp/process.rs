//! Starting and ending the agent's process as the task's phase confines it.
//!
//! The agent starts with the phase's access to the workspace. When the phase's access changes,
//! an agent that can open its session again (`session/load`, or `session/resume`) is ended and
//! started again with the new access in its session: when the workspace becomes read-only, after
//! a moment in which it is answered nothing (it never gets another answer); between two prompts
//! when it becomes writable. An agent that cannot is kept read-only for the whole task: its writes go through
//! rawko's `fs/write_text_file`, which the gate decides.

use super::agent::{self, Reopen};
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
        let loaded = running.open(&self.command, load.as_deref()).await;
        self.agent = Some(running);
        loaded.map_err(|e| self.fail(e))
    }
}

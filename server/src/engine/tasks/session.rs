//! The workspace's trust as the task service holds it, the hooks it lets a new task run, and
//! the service's session record (AutoAgent's session file and its Stop hooks): one per service,
//! so the sessions of `rawko acp` in one folder share it.

use std::path::PathBuf;
use std::sync::Arc;

use super::{Place, Tasks};
use crate::hooks::session::{SessionRecorder, SessionStatus};
use crate::hooks::{Dispatch, Hooks};
use crate::provider::ProviderSpec;

impl Tasks {
    /// Whether the workspace's hooks may run and its settings that need trust (`providers`,
    /// `arbiter`, `apiKeys`) apply; `None` while the user is being asked (new tasks wait for the
    /// answer, and meanwhile only the user's settings apply).
    pub(super) fn set_trust(&self, trusted: Option<bool>) {
        // The settings change before the answer is announced, so a task waiting for it is
        // assembled with them.
        if let Ok(mut p) = self.place.write() {
            let mut place = Place::clone(&p);
            place.settings = place.settings.trusting(trusted == Some(true));
            *p = Arc::new(place);
        }
        self.trust.send_replace(trusted);
    }

    pub fn trust(&self) -> Option<bool> {
        *self.trust.borrow()
    }

    /// Starts this process's session record, once; later calls do nothing.
    pub(super) fn start_session(&self, command: &str, provider: Option<String>) {
        if self.session.get().is_some() {
            return;
        }
        let Some(store) = &self.store else { return };
        // The session file keeps the command line (`rawko run "TASK"`), which may quote a key.
        let secrets = crate::secrets::Secrets::new(&self.settings(), |k| std::env::var(k).ok());
        let args: Vec<String> = std::env::args()
            .skip(1)
            .map(|a| secrets.redact(&a).into_owned())
            .collect();
        match SessionRecorder::start(store, &self.workspace(), command, args, provider) {
            Ok(r) => {
                let _ = self.session.set(Arc::new(r));
            }
            Err(e) => tracing::warn!("cannot record the session: {e}"),
        }
    }

    /// Starts the session the opening asked for when the first task starts
    /// ([`super::Opening::records_session`]), if it has not started.
    pub(super) fn ensure_session(&self, provider: &ProviderSpec) {
        if let Some(command) = self.session_command.get() {
            self.start_session(command, Some(provider.name.clone()));
        }
    }

    pub fn session(&self) -> Option<Arc<SessionRecorder>> {
        self.session.get().cloned()
    }

    /// The session ends with `status` (or, with `None`, as its tasks ended): AutoAgent's Stop
    /// hooks run with the reason, then the session file is closed. Returns what the hooks said;
    /// a hook that blocked the end marks the session failed.
    pub async fn end_session(&self, status: Option<SessionStatus>) -> Dispatch {
        let Some(session) = self.session.get() else {
            return Dispatch::default();
        };
        let mut status = status.unwrap_or_else(|| session.natural_end());
        let stop = crate::hooks::session_stop(
            &self.hooks_now(),
            session.snapshot().as_ref(),
            status.as_str(),
        )
        .await;
        let mut error = None;
        if let Some(reason) = stop.blocked.as_ref().or(stop.halt.as_ref()) {
            // A hook's words, kept in the session file: redacted like its output in a task.
            let secrets = crate::secrets::Secrets::new(&self.settings(), |k| std::env::var(k).ok());
            error = Some(format!(
                "Stop hook blocked termination: {}",
                secrets.redact(reason)
            ));
            status = SessionStatus::Failed;
        }
        session.end(status, error);
        stop
    }

    /// The hooks as the trust stands now (without waiting for an answer).
    pub(super) fn hooks_now(&self) -> Hooks {
        let place = self.place();
        let trusted = self.trust() == Some(true);
        let mut hooks = Hooks::new(
            place.settings.hooks_to_run(trusted),
            self.session().map(|s| s.id()).unwrap_or_default(),
            place.workspace.clone(),
        );
        // The user's allowWrite paths are the agent's to write too (a task adds its temp dir).
        let sandbox = crate::sandbox::Sandbox {
            settings: place.settings.sandbox.clone(),
            home: std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(PathBuf::from),
            temp_dir: None,
            ..Default::default()
        };
        hooks.agent_writable = sandbox.agent_writable(&place.workspace);
        hooks
    }

    /// Waits while the user is asked whether to trust the workspace (at most the approval
    /// timeout), so a new task is assembled with the answer: with the workspace's hooks and
    /// settings that need trust, or without them.
    pub(super) async fn settle_trust(&self) {
        let wait = self.settings().approval_timeout;
        let mut rx = self.trust.subscribe();
        let _ = tokio::time::timeout(wait, rx.wait_for(Option::is_some)).await;
    }

    /// The hooks a new task runs, once the trust is settled.
    pub(super) async fn task_hooks(&self) -> Arc<Hooks> {
        self.settle_trust().await;
        Arc::new(self.hooks_now())
    }
}

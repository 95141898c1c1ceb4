//! The task service's side of pinned definitions (`engine::pins`): a new task's workflow,
//! subworkflows and agents are pinned before its first record is written; a stored task resumes
//! under its pinned copies, with what changed on disk told; a task stored before rawko pinned
//! resumes as it did before, says so once, and is pinned from then on; a workflow set later is
//! pinned before it starts. The definitions new tasks load are the shared ones of
//! `engine::loaded`.

use std::path::Path;
use std::sync::{Arc, Mutex};

use super::{TaskError, Tasks};
use crate::agents::AgentSet;
use crate::clip::clip;
use crate::engine::loaded::{self, Freshness};
use crate::engine::log::Replay;
use crate::engine::pins::{self, LoggedChange, PinnedAgents, PinnedWorkflows, Pins};
use crate::engine::TaskCommand;
use crate::store::TaskFiles;
use crate::workflow::{LoadOutcome, WorkflowSet};

/// How many pinnings the service remembers (one per workflow started recently, typically).
const RECENT: usize = 16;

/// The last pinnings, so that the thousandth task of a workflow finds its pins ready: the same
/// shared sets give the same pins.
#[derive(Default)]
pub(super) struct Recent {
    workflows: Mutex<Vec<(Option<String>, Arc<PinnedWorkflows>)>>,
    agents: Mutex<Vec<Arc<PinnedAgents>>>,
    /// Held while pinning: tasks started at once wait for the first one's pins instead of each
    /// building (and checking) the same ones on a thread of its own.
    pinning: tokio::sync::Mutex<()>,
}

impl Recent {
    fn workflows(&self, key: Option<&str>, set: &Arc<WorkflowSet>) -> Option<Arc<PinnedWorkflows>> {
        let list = self.workflows.lock().ok()?;
        list.iter()
            .find(|(k, p)| k.as_deref() == key && Arc::ptr_eq(&p.set, set))
            .map(|(_, p)| p.clone())
    }

    fn agents(&self, set: &Arc<AgentSet>) -> Option<Arc<PinnedAgents>> {
        let list = self.agents.lock().ok()?;
        list.iter().find(|p| Arc::ptr_eq(&p.set, set)).cloned()
    }

    fn keep_workflows(&self, key: Option<&str>, pinned: &Arc<PinnedWorkflows>) {
        if let Ok(mut list) = self.workflows.lock() {
            if list.len() >= RECENT {
                list.remove(0);
            }
            list.push((key.map(str::to_owned), pinned.clone()));
        }
    }

    fn keep_agents(&self, pinned: &Arc<PinnedAgents>) {
        if let Ok(mut list) = self.agents.lock() {
            if list.len() >= RECENT {
                list.remove(0);
            }
            list.push(pinned.clone());
        }
    }
}

fn internal(e: impl std::fmt::Display) -> TaskError {
    TaskError::Internal(e.to_string())
}

impl Tasks {
    /// The workflows a new task runs with (shared), and the load's outcome for its diagnostics.
    pub(super) async fn task_workflows(&self) -> (Arc<LoadOutcome>, Arc<WorkflowSet>) {
        loaded::workflows(&self.place().workflow_roots, Freshness::Recent).await
    }

    /// The agents a new task chooses from (shared).
    pub(super) async fn task_agents(&self) -> Arc<AgentSet> {
        loaded::agents(&self.place().agent_roots, Freshness::Recent).await
    }

    /// Pins what a new task runs under: workflow `key` of `set` with its subworkflows, and
    /// every agent of `agents`. Durable in the store when this returns; nothing for a service
    /// without one.
    pub(super) async fn pin_new(
        &self,
        key: Option<&str>,
        set: &Arc<WorkflowSet>,
        agents: &Arc<AgentSet>,
    ) -> Result<Pins, TaskError> {
        let Some(store) = self.store.clone() else {
            return Ok(Pins::default());
        };
        Ok(Pins {
            workflows: Some(self.pin_workflows(&store, key, set).await?),
            agents: Some(self.pin_agents(&store, agents).await?),
            ..Pins::default()
        })
    }

    /// Pins what an external agent's new task runs under: workflow `key` of `set` with its
    /// subworkflows (its agents are not rawko's).
    pub(super) async fn pin_external(
        &self,
        key: Option<&str>,
        set: &Arc<WorkflowSet>,
    ) -> Result<Pins, TaskError> {
        let Some(store) = self.store.clone() else {
            return Ok(Pins::default());
        };
        Ok(Pins {
            workflows: Some(self.pin_workflows(&store, key, set).await?),
            ..Pins::default()
        })
    }

    async fn pin_workflows(
        &self,
        store: &Path,
        key: Option<&str>,
        set: &Arc<WorkflowSet>,
    ) -> Result<Arc<PinnedWorkflows>, TaskError> {
        if let Some(pinned) = self.pinned.workflows(key, set) {
            return Ok(pinned);
        }
        let _pinning = self.pinned.pinning.lock().await;
        if let Some(pinned) = self.pinned.workflows(key, set) {
            return Ok(pinned);
        }
        let (store, owned_key, shared, roots) = (
            store.to_owned(),
            key.map(str::to_owned),
            set.clone(),
            self.place().workflow_roots.clone(),
        );
        let pinned = tokio::task::spawn_blocking(move || {
            pins::pin_workflows(&store, owned_key.as_deref(), shared, &roots)
        })
        .await
        .map_err(internal)?
        .map_err(TaskError::CannotStart)?;
        let pinned = Arc::new(pinned);
        self.pinned.keep_workflows(key, &pinned);
        Ok(pinned)
    }

    async fn pin_agents(
        &self,
        store: &Path,
        agents: &Arc<AgentSet>,
    ) -> Result<Arc<PinnedAgents>, TaskError> {
        if let Some(pinned) = self.pinned.agents(agents) {
            return Ok(pinned);
        }
        let _pinning = self.pinned.pinning.lock().await;
        if let Some(pinned) = self.pinned.agents(agents) {
            return Ok(pinned);
        }
        let (store, shared, roots) = (
            store.to_owned(),
            agents.clone(),
            self.place().agent_roots.clone(),
        );
        let pinned = tokio::task::spawn_blocking(move || pins::pin_agents(&store, shared, &roots))
            .await
            .map_err(internal)?
            .map_err(TaskError::CannotStart)?;
        let pinned = Arc::new(pinned);
        self.pinned.keep_agents(&pinned);
        Ok(pinned)
    }

    /// What a stored task resumes with: the workflows and agents it pinned (and a note of what
    /// changed on disk since), or, for a task stored before rawko pinned, those on disk now
    /// (as before), pinned from here on with a note saying so.
    pub(super) async fn resume_definitions(
        &self,
        replay: &Replay,
    ) -> Result<(Arc<WorkflowSet>, Arc<AgentSet>, Pins), TaskError> {
        let id = &replay.task_id;
        let refs = replay.definitions.clone().unwrap_or_default();
        let Some(store) = self.store.clone() else {
            return Err(TaskError::Internal("no state directory".to_owned()));
        };
        if refs.is_empty() {
            let (_, workflows) = self.task_workflows().await;
            if let Some(key) = &replay.workflow_key {
                if workflows.get(key).is_none() {
                    return Err(TaskError::UnknownWorkflow(format!(
                        "task \"{}\" ran workflow \"{key}\", which no longer loads",
                        clip(id)
                    )));
                }
            }
            let agents = self.task_agents().await;
            let mut pins = self
                .pin_new(replay.workflow_key.as_deref(), &workflows, &agents)
                .await?;
            pins.record_on_resume = Some("resumed; stored before rawko pinned".to_owned());
            pins.resume_note = Some(
                "note: this task was started before rawko pinned the definitions a task starts with: it resumes under the workflow and agent files as they are on disk now, and keeps these from here on".to_owned(),
            );
            return Ok((workflows, agents, pins));
        }
        let cannot = |e: String| {
            TaskError::CannotStart(format!(
                "cannot resume task \"{}\" under the definitions it started with: {e}",
                clip(id)
            ))
        };
        let load = |digest: Option<String>, agents: bool| {
            let store = store.clone();
            tokio::task::spawn_blocking(move || match (digest, agents) {
                (None, _) => Ok((None, None)),
                (Some(d), false) => pins::load_workflows(&store, &d).map(|w| (Some(w), None)),
                (Some(d), true) => pins::load_agents(&store, &d).map(|a| (None, Some(a))),
            })
        };
        let (pinned_workflows, _) = load(refs.workflows.clone(), false)
            .await
            .map_err(internal)?
            .map_err(cannot)?;
        let (_, pinned_agents) = load(refs.agents.clone(), true)
            .await
            .map_err(internal)?
            .map_err(cannot)?;
        // A task that runs no workflow yet takes one from those on disk when it sets one (pinned
        // then); until then its pinned set is empty.
        let workflows = match &pinned_workflows {
            Some(p) if !p.manifest.workflows.is_empty() => p.set.clone(),
            _ => self.task_workflows().await.1,
        };
        // The workflow it runs now (a later `setWorkflow` included) must be among them.
        let running = replay.workflow.as_ref().map(|w| &w.workflow_key);
        if let Some(key) = running.or(replay.workflow_key.as_ref()) {
            if workflows.get(key).is_none() {
                return Err(cannot(format!("workflow \"{key}\" is not among them")));
            }
        }
        let agents = match &pinned_agents {
            Some(p) => p.set.clone(),
            None => self.task_agents().await,
        };
        let changes =
            pins::changes_on_disk(pinned_workflows.as_deref(), pinned_agents.as_deref()).await;
        let resume_note = (!changes.is_empty()).then(|| {
            format!(
                "note: definitions changed on disk since this task started: {}. The task goes on under the copies pinned when it started; a new task reads the files as they are now",
                pins::describe(&changes, &replay.workspace)
            )
        });
        let pins = Pins {
            workflows: pinned_workflows,
            agents: pinned_agents,
            record_on_resume: None,
            resume_note,
            resume_changes: changes.iter().map(LoggedChange::from).collect(),
        };
        Ok((workflows, agents, pins))
    }

    /// The workflows of task `id`: the ones it runs with while it runs, its pinned ones when it
    /// is stored, else (stored before rawko pinned) those that load now.
    pub async fn task_definitions(&self, id: &str) -> Arc<WorkflowSet> {
        if let Some(set) = self.handle(id).and_then(|h| h.workflows) {
            return set;
        }
        if let Some(store) = self.store.clone() {
            let dir = TaskFiles::dir_of(&store, id);
            let pinned = tokio::task::spawn_blocking(move || {
                let digest = crate::engine::log::refs_in_log(&dir)?.workflows?;
                pins::load_workflows(&store, &digest).ok()
            })
            .await
            .ok()
            .flatten();
            if let Some(p) = pinned.filter(|p| !p.manifest.workflows.is_empty()) {
                return p.set.clone();
            }
        }
        self.task_workflows().await.1
    }

    /// Starts workflow `key` in running task `id`, pinned first from the definitions the task
    /// holds (nothing is read from disk for it). Returns the text the task answers.
    pub async fn set_workflow_of(&self, id: &str, key: &str) -> Result<String, TaskError> {
        // A task that is not running, or does not know the workflow, refuses it itself.
        let set = self.handle(id).and_then(|h| h.workflows);
        let pinned = match (&self.store, set) {
            (Some(store), Some(set)) => match set.find(key).map(|d| d.key.clone()) {
                Some(key) => Some(self.pin_workflows(store, Some(&key), &set).await?),
                None => None,
            },
            _ => None,
        };
        let key = key.to_owned();
        self.ask(
            id,
            |reply| TaskCommand::SetWorkflow { key, pinned, reply },
            None,
        )
        .await
    }
}

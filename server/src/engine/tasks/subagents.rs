//! Subagents (docs/subagents.md): the service starts, resumes and stops the child tasks a task's
//! `delegate_to_subagents` call asks for ([`SubagentHost`]). A child is assembled here like any
//! task: its provider (the profile's, else the parent's; a scripted parent's children play the
//! script's `subagents:` entry of their profile), the parent's pinned definitions with each
//! phase's `subagentTools` as its gate, the profile as its one agent, the parent's route.

use std::sync::{Arc, Weak};

use tokio::sync::oneshot;

use super::{build, new_arbiter, StartRequest, TaskError, Tasks};
use crate::agents::profiles::{Profile, Profiles};
use crate::agents::AgentSet;
use crate::clip::clip;
use crate::engine::log::Replay;
use crate::engine::subagents::{ChildEnd, ChildStart, Delegation, Subagent, SubagentHost};
use crate::engine::{stored, Outcome, TaskCommand, TaskSpec};
use crate::provider::ProviderSpec;
use crate::store::TaskFiles;
use crate::workflow::WorkflowSet;

/// The service as its tasks' [`SubagentHost`].
struct Host {
    tasks: Weak<Tasks>,
}

impl SubagentHost for Host {
    fn run(
        &self,
        start: ChildStart,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ChildEnd> + Send>> {
        let tasks = self.tasks.clone();
        Box::pin(async move {
            match tasks.upgrade() {
                Some(tasks) => tasks.run_subagent(start).await,
                None => ChildEnd::Failed("rawko is shutting down".to_owned()),
            }
        })
    }

    fn stop(&self, id: &str) {
        if let Some(tasks) = self.tasks.upgrade() {
            if let Some(handle) = tasks.handle(id) {
                let _ = handle.send(TaskCommand::Cancel);
            }
        }
    }
}

impl Tasks {
    /// What a new top-level task may delegate to: the profiles on disk now (pi's agent files and
    /// the task's agents), started here.
    pub(super) fn delegation(&self, agents: &AgentSet) -> Delegation {
        let workspace = self.workspace();
        let roots = crate::agents::profiles::pi_roots(&workspace, |k| std::env::var_os(k));
        let (pi, problems) = crate::agents::profiles::load_pi(&roots);
        for p in problems {
            tracing::warn!("subagent profile {}: {}", p.path.display(), p.message);
        }
        Delegation {
            host: Some(self.host()),
            profiles: Arc::new(Profiles::new(pi, agents)),
            subagent: None,
        }
    }

    /// A resumed task's side of delegation: a subagent is one again; any other task delegates
    /// to the profiles it recorded at its start (never the files as they are now).
    pub(super) fn resumed_delegation(
        &self,
        replay: &Replay,
        workflows: Arc<WorkflowSet>,
        agents: Arc<AgentSet>,
    ) -> Result<(Delegation, Arc<WorkflowSet>, Arc<AgentSet>), TaskError> {
        let Some(of) = replay.subagent.clone() else {
            let profiles = Profiles::new(replay.profiles.clone().unwrap_or_default(), &agents);
            let delegation = Delegation {
                host: Some(self.host()),
                profiles: Arc::new(profiles),
                subagent: None,
            };
            return Ok((delegation, workflows, agents));
        };
        let profile = match &replay.pi_profile {
            Some(p) => Profile::Pi(p.clone()),
            None => match agents.get(&of.profile) {
                Some(a) => Profile::Rawko(a.clone()),
                None => {
                    return Err(TaskError::CannotStart(format!(
                        "cannot resume subagent \"{}\": its profile \"{}\" is not among the agents it was pinned with",
                        clip(&replay.task_id),
                        clip(&of.profile)
                    )))
                }
            },
        };
        let mut one = AgentSet::new();
        one.insert(profile.agent());
        let delegation = Delegation {
            host: None,
            profiles: Arc::default(),
            subagent: Some(Subagent {
                of: Arc::new(of),
                state: None,
                pi_profile: replay.pi_profile.clone(),
            }),
        };
        Ok((
            delegation,
            Arc::new(workflows.for_subagents()),
            Arc::new(one),
        ))
    }

    fn host(&self) -> Arc<dyn SubagentHost> {
        Arc::new(Host {
            tasks: self.me.clone(),
        })
    }

    /// Runs subagent `start.id` to its end: a new one, or one whose log exists (its parent was
    /// resumed): its end when it ended, else it is resumed.
    async fn run_subagent(&self, start: ChildStart) -> ChildEnd {
        let id = start.id.clone();
        let handle = match self.handle(&id) {
            Some(handle) => handle,
            None => {
                let stored_dir = self
                    .store
                    .as_ref()
                    .map(|s| TaskFiles::dir_of(s, &id))
                    .filter(|d| d.join("events.jsonl").is_file());
                let started = match stored_dir {
                    Some(dir) => {
                        let ended = tokio::task::spawn_blocking(move || stored::ended(&dir))
                            .await
                            .ok()
                            .flatten();
                        if let Some((outcome, summary)) = ended {
                            return end_of(&outcome, summary);
                        }
                        self.resume_stored(&id, None, None).await.map_err(|e| {
                            ChildEnd::Failed(format!("cannot resume the subagent: {e}"))
                        })
                    }
                    None => self
                        .start_subagent(start)
                        .await
                        .map_err(|e| ChildEnd::Failed(format!("cannot start the subagent: {e}"))),
                };
                match started {
                    Ok(started) => started.handle,
                    Err(end) => return end,
                }
            }
        };
        Self::ended(&self.end_waiters, &handle).await
    }

    /// Waits for running task `handle` to end and says how it ended.
    async fn ended(
        waiters: &dashmap::DashMap<String, Vec<oneshot::Sender<()>>>,
        handle: &crate::engine::TaskHandle,
    ) -> ChildEnd {
        let (tx, rx) = oneshot::channel();
        waiters.entry(handle.id.clone()).or_default().push(tx);
        if !handle.is_ended() {
            let _ = rx.await;
        }
        let ended = handle.snapshot.lock().ok().and_then(|s| s.ended.clone());
        match ended {
            Some((Outcome::Complete, summary)) => ChildEnd::Complete(summary),
            Some((Outcome::Failed, summary)) => ChildEnd::Failed(summary),
            Some((Outcome::Cancelled, summary)) => ChildEnd::Cancelled(summary),
            None => ChildEnd::Failed("the subagent stopped without an end".to_owned()),
        }
    }

    /// Tells whoever waits for task `id` that it has ended.
    pub(super) fn wake_end_waiters(&self, id: &str) {
        if let Some((_, waiters)) = self.end_waiters.remove(id) {
            for tx in waiters {
                let _ = tx.send(());
            }
        }
    }

    async fn start_subagent(&self, start: ChildStart) -> Result<super::Started, TaskError> {
        let ChildStart {
            id,
            of,
            prompt,
            profile,
            workflow,
            state,
            workflows,
            provider,
            pins,
        } = start;
        let place = self.place();
        let settings = place.settings.clone();
        let provider_spec = self.subagent_provider(&place, &profile, &provider)?;
        let provider = build(&provider_spec, &settings).map_err(TaskError::CannotStart)?;
        let arbiter = new_arbiter(&settings, &place.workspace)?;
        let mut one = AgentSet::new();
        let agent = profile.agent();
        let agent_name = agent.name.clone();
        one.insert(agent);
        let pi_profile = match &profile {
            Profile::Pi(p) => Some(p.clone()),
            Profile::Rawko(_) => None,
        };
        let hooks = self.task_hooks().await;
        let route = self.route_of(&of.parent, None);
        Ok(self.spawn(
            TaskSpec {
                id,
                description: prompt,
                workflow: state.as_ref().and(workflow),
                workflows,
                agents: Arc::new(one),
                provider,
                provider_spec,
                arbiter,
                start_agent: Some(agent_name),
                workspace: place.workspace.clone(),
                settings,
                store: self.store.clone(),
                resume: None,
                then: None,
                hooks,
                session: self.session(),
                external: None,
                client_io: None,
                pins,
                delegation: Delegation {
                    host: None,
                    profiles: Arc::default(),
                    subagent: Some(Subagent {
                        of: Arc::new(of),
                        state,
                        pi_profile,
                    }),
                },
            },
            Some(route),
        ))
    }

    /// The provider a subagent runs: a scripted parent's script, playing the profile's entry;
    /// else the profile's provider and model, or the parent's provider with the profile's model.
    fn subagent_provider(
        &self,
        place: &super::Place,
        profile: &Profile,
        parent: &ProviderSpec,
    ) -> Result<ProviderSpec, TaskError> {
        if parent.name == "scripted" {
            return Ok(ProviderSpec {
                subagent: Some(profile.name().to_owned()),
                fallbacks: Vec::new(),
                ..parent.clone()
            });
        }
        let (name, model) = profile.provider();
        match name {
            Some(name) if name != parent.name => {
                let request = StartRequest {
                    provider: Some(name),
                    model,
                    ..Default::default()
                };
                Self::provider_spec_for(place, &request, &|k| std::env::var(k).ok())
                    .map(|(spec, _)| spec)
            }
            _ => Ok(ProviderSpec {
                model: model.or_else(|| parent.model.clone()),
                ..parent.clone()
            }),
        }
    }
}

/// A stored task's end as a subagent's.
fn end_of(outcome: &str, summary: String) -> ChildEnd {
    match outcome {
        "complete" => ChildEnd::Complete(summary),
        "cancelled" => ChildEnd::Cancelled(summary),
        _ => ChildEnd::Failed(summary),
    }
}

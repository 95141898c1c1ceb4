//! `delegate_to_subagents`: the orchestrator's side. Each task of the call becomes a subagent, a
//! child task the task service starts (`SubagentHost`); up to `maxSubagents` run at once, and the
//! call's result is each one's final answer (or failure) in order. The children's ids are logged
//! before the first starts, so a task resumed after a crash goes on with the same children: those
//! that ended give their end, the others are resumed from their logs.

use futures::StreamExt;

use super::{Control, Stop};
use crate::engine::log::LogEvent;
use crate::engine::subagents::{self, ChildEnd, ChildStart, SubagentOf};
use crate::provider::ToolCall;
use crate::workflow::outline::Progress;

impl Control {
    pub(super) async fn delegate(&mut self, call: &ToolCall) -> Result<(String, bool), Stop> {
        let Some(host) = self.delegation.host.clone() else {
            return Ok((
                "subagents cannot start here: this task runs without rawko's task service (an external agent's session, or a task kept in memory)".to_owned(),
                true,
            ));
        };
        let jobs = match subagents::parse_input(&call.input) {
            Ok(jobs) => jobs,
            Err(message) => return Ok((message, true)),
        };
        let mut profiles = Vec::with_capacity(jobs.len());
        for job in &jobs {
            match self.delegation.profiles.get(&job.profile) {
                Some(p) => profiles.push(p.clone()),
                None => {
                    let known = self.delegation.profiles.names();
                    let known = if known.is_empty() {
                        "there are none: add agent files to .pi/agents or .rawko/agents".to_owned()
                    } else {
                        format!("the profiles are {}", known.join(", "))
                    };
                    return Ok((
                        format!(
                            "unknown profile \"{}\"; {known}",
                            crate::clip::clip(&job.profile)
                        ),
                        true,
                    ));
                }
            }
        }
        // The same children as before when the task was resumed in the middle of this call.
        let ids = match self.delegations.get(&call.id) {
            Some(ids) if ids.len() == jobs.len() => ids.clone(),
            _ => {
                let ids: Vec<String> = jobs.iter().map(|_| crate::engine::new_task_id()).collect();
                self.log(LogEvent::Delegated {
                    call_id: call.id.clone(),
                    children: ids.clone(),
                });
                self.delegations.insert(call.id.clone(), ids.clone());
                ids
            }
        };
        // Recorded before any child starts.
        self.durable().await;
        let phase_index = self
            .pos
            .workflow
            .as_ref()
            .and_then(|w| Progress::of(w, &self.pos.set).current)
            .and_then(|i| u32::try_from(i).ok());
        let workflow = self.pos.workflow.as_ref().map(|w| w.workflow_key.clone());
        // The definitions as the subagents' gate reads them, made once for the call.
        let subagents_set = std::sync::Arc::new(self.pos.set.for_subagents());
        let mut starts = Vec::with_capacity(jobs.len());
        let mut who = Vec::with_capacity(jobs.len());
        for (index, ((job, profile), id)) in jobs.iter().zip(profiles).zip(&ids).enumerate() {
            let of = SubagentOf {
                parent: self.id.clone(),
                call_id: call.id.clone(),
                index: u32::try_from(index).unwrap_or(u32::MAX),
                profile: profile.name().to_owned(),
                name: job
                    .name
                    .clone()
                    .unwrap_or_else(|| profile.name().to_owned()),
                phase_index,
            };
            who.push(of.clone());
            starts.push(ChildStart {
                id: id.clone(),
                of,
                prompt: subagents::first_message(&job.prompt, &job.files),
                profile,
                workflow: workflow.clone(),
                state: self.pos.workflow.clone(),
                workflows: subagents_set.clone(),
                provider: self.provider_spec.clone(),
                pins: self.pins.clone(),
            });
        }
        let at_once = usize::try_from(self.settings.max_subagents.max(1)).unwrap_or(1);
        let runs: Vec<_> = starts.into_iter().map(|s| host.run(s)).collect();
        // In order, at most `at_once` started at a time (a future starts its child when first
        // polled).
        let all = futures::stream::iter(runs)
            .buffered(at_once)
            .collect::<Vec<ChildEnd>>();
        match self.wait(all, false).await {
            Ok(ends) => {
                let done: Vec<(SubagentOf, ChildEnd)> = who.into_iter().zip(ends).collect();
                Ok(subagents::result_text(&done))
            }
            Err(stop) => {
                // The parent stops: so do its children.
                for id in &ids {
                    host.stop(id);
                }
                Err(stop)
            }
        }
    }
}

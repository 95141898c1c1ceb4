//! The machine's side: events applied, effects run in turn, the arbiter asked, overrides and
//! resets.

use std::collections::VecDeque;
use std::sync::Arc;

use super::{Control, Conversation, RunEnd, Stop};
use crate::clip::clip_to;
use crate::engine::arbiter::{self, View, DEFAULT_AGENT};
use crate::engine::log::LogEvent;
use crate::engine::{now_millis, Outcome};
use crate::machine::{self, ArbiterDecision, Effect, MachineError};
use crate::provider::{Message, Provider, TurnRequest};
use crate::tools::ToolContext;
use crate::workflow::step::{self, StepAction};
use crate::workflow::texts;
use crate::workflow::WorkflowState;

impl Control {
    /// Applies an event to the machine: logged, recorded in the history with the guard that
    /// decided, and the effects to run returned.
    pub(super) fn apply(&mut self, event: machine::Event) -> Vec<Effect> {
        let step = self.orch.machine.transition(&event, now_millis());
        let record = step.record;
        if !record.handled {
            self.record(
                &format!("machine:{}", event.name()),
                Some(record.from.name().to_owned()),
                Some(record.to.name().to_owned()),
                Some(
                    record
                        .note
                        .clone()
                        .unwrap_or_else(|| "ignored in this state".to_owned()),
                ),
            );
            return Vec::new();
        }
        self.log(LogEvent::Machine {
            event: event.clone(),
            from: record.from.name().to_owned(),
            to: record.to.name().to_owned(),
            guard: record.guard.map(str::to_owned),
        });
        self.orch.machine = step.machine;
        if let Ok(mut snap) = self.channels.snapshot.lock() {
            snap.machine_state = self.orch.machine.state.name().to_owned();
            snap.agent = self.orch.machine.context.current_agent.clone();
        }
        let detail = match (
            crate::engine::log::event_detail(&event),
            record.note.clone(),
        ) {
            (Some(d), Some(n)) => Some(format!("{d}; {n}")),
            (d, n) => d.or(n),
        };
        self.record_guarded(
            &format!("machine:{}", event.name()),
            Some(record.from.name().to_owned()),
            Some(record.to.name().to_owned()),
            record.guard.map(str::to_owned),
            detail,
        );
        self.announce_handoff();
        record.effects
    }

    /// After a transition: when an agent other than the last one now runs the task (selected or
    /// forced), says so with a handoff line. The first agent is no handoff.
    fn announce_handoff(&mut self) {
        let Some(agent) = self.orch.machine.context.current_agent.clone() else {
            return;
        };
        let previous = self.orch.last_agent.replace(agent.clone());
        if let Some(from) = previous.filter(|from| *from != agent) {
            let text = handoff_line(&from, &agent);
            self.emit(crate::engine::TaskEvent::Handoff { agent, text });
        }
    }

    /// What a resumed task does next, from the state its machine was left in.
    pub(super) fn effects_to_continue(&mut self) -> Vec<Effect> {
        use machine::State;
        match self.orch.machine.state {
            State::Idle => self.apply(machine::Event::StartTask {
                task: self.description.clone(),
            }),
            State::Selecting | State::ErrorHandling => vec![Effect::SelectAgent],
            State::Executing => vec![Effect::RunAgent {
                agent: self
                    .orch
                    .machine
                    .context
                    .current_agent
                    .clone()
                    .unwrap_or_else(|| self.orch.default_agent.clone()),
            }],
            State::Evaluating => vec![Effect::Evaluate],
            State::Complete => vec![Effect::Finish {
                outcome: machine::TaskOutcome::Complete,
                summary: self.last_output.clone(),
            }],
            State::Failed => vec![Effect::Finish {
                outcome: machine::TaskOutcome::Failed,
                summary: self
                    .orch
                    .machine
                    .context
                    .last_error
                    .as_ref()
                    .map_or_else(|| "the task failed".to_owned(), |e| e.message.clone()),
            }],
            State::Cancelled => vec![Effect::Finish {
                outcome: machine::TaskOutcome::Cancelled,
                summary: "cancelled by the user".to_owned(),
            }],
        }
    }

    /// An override from the editor. A skipped step also moves the workflow on; a reset starts
    /// the task over.
    pub(super) fn apply_override(
        &mut self,
        event: machine::Event,
        conversation: &mut Conversation,
    ) -> Vec<Effect> {
        match &event {
            machine::Event::SkipStep => {
                if let Some(old) = self.pos.workflow.clone() {
                    let result = step::execute(Some(&old), &self.pos.set, StepAction::Next);
                    self.apply_step(&old, result.state, "skipStep");
                }
                self.apply(event)
            }
            machine::Event::Reset => {
                let mut effects = self.apply(event);
                effects.clear();
                self.restart(conversation);
                effects.extend(self.apply(machine::Event::StartTask {
                    task: self.description.clone(),
                }));
                effects
            }
            _ => self.apply(event),
        }
    }

    /// Starts the task over after a reset: a fresh workflow position and conversation.
    pub(super) fn restart(&mut self, conversation: &mut Conversation) {
        let mut first = self.description.clone();
        if let Some(old) = self.pos.workflow.clone() {
            if let Ok(state) = WorkflowState::start(
                &self.pos.set,
                &old.workflow_key,
                &self.description,
                &self.id,
                old.started_at,
            ) {
                if let Some(def) = self.pos.set.get(&state.workflow_key) {
                    let initial = texts::initial_message(def, &self.pos.set, &self.description);
                    if !initial.trim().is_empty() {
                        first = initial;
                    }
                }
                self.log(LogEvent::Workflow {
                    state: state.clone(),
                });
                self.pos.workflow = Some(state);
            }
        }
        conversation.messages.clear();
        self.pending.calls.clear();
        self.pending.results.clear();
        self.not_done.reminders_in_row = 0;
        self.log(LogEvent::UserMessage {
            text: first.clone(),
            source: "initial".to_owned(),
        });
        conversation.messages.push(Message::User(first));
    }

    pub(super) fn view<'a>(&'a self) -> View<'a> {
        View {
            machine: &self.orch.machine,
            agents: &self.orch.agents,
            default_agent: &self.orch.default_agent,
            workflow: self.pos.workflow.as_ref(),
            workflows: &self.pos.set,
            hit_max_iterations: self.orch.hit_max_iterations,
            last_output: &self.last_output,
        }
    }

    /// Runs the machine's effects until it finishes.
    pub(super) async fn drive(
        &mut self,
        mut effects: VecDeque<Effect>,
        conversation: &mut Conversation,
        provider: &mut dyn Provider,
        arbiter: &mut Option<Box<dyn Provider>>,
        tools: &Arc<ToolContext>,
    ) -> (Outcome, String) {
        loop {
            if let Some(e) = self.persist.log_error.take() {
                return (Outcome::Failed, e);
            }
            let Some(effect) = effects.pop_front() else {
                return (
                    Outcome::Failed,
                    format!(
                        "the orchestrator stopped in state {} with nothing to do",
                        self.orch.machine.state.name()
                    ),
                );
            };
            if !matches!(effect, Effect::RunAgent { .. }) {
                // The run a resumed task's last turn ended is the next one only.
                self.pending.ended_turn = None;
            }
            let event = match effect {
                // Each effect's future is boxed: a waiting task holds the one it waits in, not
                // room for the largest of them (the actor's size is the sum along the path it
                // waits on, not the maximum over every path).
                Effect::SelectAgent => match super::boxed("select", self.select(arbiter)).await {
                    Ok(Ok((agent, decision))) => machine::Event::AgentSelected {
                        agent,
                        decision: Some(decision),
                    },
                    Ok(Err(error)) => machine::Event::AgentSelectionFailed { error },
                    Err(event) => event,
                },
                Effect::RunAgent { agent } => {
                    match super::boxed(
                        "run_agent",
                        self.run_agent(conversation, provider, tools, &agent),
                    )
                    .await
                    {
                        RunEnd::Done(output) => machine::Event::AgentComplete {
                            success: true,
                            output,
                        },
                        RunEnd::Failed(error) => machine::Event::AgentError { error },
                        RunEnd::Event(event) => event,
                    }
                }
                Effect::Evaluate => {
                    match super::boxed("evaluate", self.evaluate(conversation, arbiter)).await {
                        Ok(Ok(decision)) => machine::Event::ArbiterDecision { decision },
                        Ok(Err(error)) => machine::Event::ArbiterError { error },
                        Err(event) => event,
                    }
                }
                Effect::AbortAgent => continue,
                Effect::Finish { outcome, summary } => return (outcome_of(outcome), summary),
            };
            let new = match event {
                e @ (machine::Event::Reset | machine::Event::SkipStep) => {
                    self.apply_override(e, conversation)
                }
                e => self.apply(e),
            };
            effects.extend(new);
        }
    }

    /// Maps a stop that ends the current piece of work to the machine event it stands for.
    pub(super) fn stop_event(stop: Stop) -> machine::Event {
        match stop {
            Stop::Override(event) => event,
            _ => machine::Event::Cancel,
        }
    }

    /// The arbiter chooses the next agent.
    pub(super) async fn select(
        &mut self,
        arbiter: &mut Option<Box<dyn Provider>>,
    ) -> Result<Result<(String, ArbiterDecision), MachineError>, machine::Event> {
        if !self.orch.model_arbiter {
            return Ok(arbiter::select(&self.view()));
        }
        let prompt = arbiter::select_prompt(&self.view());
        let answer = match self.ask_arbiter(arbiter, prompt).await? {
            Ok(text) => text,
            Err(e) => return Ok(Err(e)),
        };
        Ok(match arbiter::parse_decision(&answer) {
            Ok(ArbiterDecision::SelectMode { mode, reason }) => {
                if mode == DEFAULT_AGENT || self.orch.agents.get(&mode).is_some() {
                    Ok((mode.clone(), ArbiterDecision::SelectMode { mode, reason }))
                } else {
                    Err(MachineError::new(
                        "selection_failed",
                        format!("the arbiter chose \"{mode}\", which is no agent"),
                    ))
                }
            }
            Ok(other) => Err(MachineError::new(
                "selection_failed",
                format!(
                    "the arbiter answered {} where an agent was to be selected",
                    other.name()
                ),
            )),
            Err(why) => Err(MachineError::new(
                "arbiter_error",
                format!("unparseable arbiter answer ({why}): {}", quote(&answer)),
            )),
        })
    }

    /// Asks the model arbiter; its answer (or failure) is logged like a turn.
    pub(super) async fn ask_arbiter(
        &mut self,
        arbiter: &mut Option<Box<dyn Provider>>,
        prompt: String,
    ) -> Result<Result<String, MachineError>, machine::Event> {
        let Some(arbiter) = arbiter.as_mut() else {
            return Ok(Err(MachineError::new(
                "arbiter_error",
                "no arbiter provider is configured",
            )));
        };
        let messages = [Message::User(prompt)];
        let ignore = |_: &str| {};
        let answer = loop {
            let request = TurnRequest {
                system: Some(arbiter::SYSTEM_PROMPT),
                messages: &messages,
                context: None,
                tools: &[],
            };
            match self.wait(arbiter.turn(request, &ignore), false).await {
                // An interrupt while the arbiter thinks: wait for the user, then ask again.
                Err(Stop::Interrupt) => self.wait_for_user().await?,
                other => break other,
            }
        };
        match answer {
            Ok(Ok(turn)) => {
                self.log(LogEvent::ArbiterTurn {
                    text: Some(turn.text.clone()),
                    error: None,
                });
                Ok(Ok(turn.text))
            }
            Ok(Err(e)) => {
                self.log(LogEvent::ArbiterTurn {
                    text: None,
                    error: Some(e.to_string()),
                });
                Ok(Err(MachineError::new(
                    "arbiter_error",
                    format!("the arbiter failed: {e}"),
                )))
            }
            Err(stop) => Err(Self::stop_event(stop)),
        }
    }
}

/// The one-line separator between two agents' turns.
pub(super) fn handoff_line(from: &str, to: &str) -> String {
    format!("── handoff: {} → {} ──", clip_to(from, 64), clip_to(to, 64))
}

/// A model's answer quoted for a message: its first 120 characters.
pub(super) fn quote(text: &str) -> String {
    let t = text.trim();
    format!("\"{}\"", clip_to(t, 120))
}

pub(super) fn outcome_of(o: machine::TaskOutcome) -> Outcome {
    match o {
        machine::TaskOutcome::Complete => Outcome::Complete,
        machine::TaskOutcome::Failed => Outcome::Failed,
        machine::TaskOutcome::Cancelled => Outcome::Cancelled,
    }
}

#[cfg(test)]
mod tests {
    use super::handoff_line;

    #[test]
    fn a_handoff_line_names_both_agents_and_clips_long_names() {
        assert_eq!(
            handoff_line("planner", "developer"),
            "── handoff: planner → developer ──"
        );
        let long = "a".repeat(500);
        let line = handoff_line(&long, "b");
        assert!(line.chars().count() < 100, "{line}");
        assert!(line.ends_with("→ b ──"), "{line}");
    }
}

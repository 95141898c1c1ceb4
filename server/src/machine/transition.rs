//! The machine itself: its states, and the transition function that takes an event and the time
//! and returns the next machine, the effects to run and a record of what happened. The rules are
//! listed in the module documentation of [`crate::machine`] and drawn by [`super::mermaid`].

use std::fmt;

use serde::{Deserialize, Serialize};

use super::context::{
    ArbiterDecision, Context, ExecutionResult, MachineError, AGENT_FAILED, DEFAULT_MAX_FAILURES,
    DEFAULT_MAX_ITERATIONS,
};
use super::event::{Effect, Event, TaskOutcome};
use super::guards::{
    is_complete, is_recoverable_error, max_failures_reached, max_iterations_reached, should_retry,
    should_select_mode, AGENT_SUCCEEDED, IS_COMPLETE, IS_RECOVERABLE_ERROR, MAX_FAILURES_REACHED,
    MAX_ITERATIONS_REACHED, SHOULD_RETRY, SHOULD_SELECT_MODE,
};

/// The summary and decision the machine uses when the task runs out of iterations (SPEC-0003).
pub const MAX_ITERATIONS_SUMMARY: &str = "Max iterations reached";

/// A state of the orchestrator (SPEC-0003's state names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Waiting for START_TASK.
    Idle,
    /// The arbiter is selecting the next agent.
    Selecting,
    /// An agent is working.
    Executing,
    /// The arbiter is judging the run that just ended.
    Evaluating,
    /// Transient: decides at once between a new selection and failure. A machine at rest is never
    /// in it; records show it as `via`.
    ErrorHandling,
    Complete,
    Failed,
    Cancelled,
}

impl State {
    pub const ALL: [State; 8] = [
        State::Idle,
        State::Selecting,
        State::Executing,
        State::Evaluating,
        State::ErrorHandling,
        State::Complete,
        State::Failed,
        State::Cancelled,
    ];

    /// The state's name as it is serialised, e.g. `"error_handling"`.
    pub fn name(self) -> &'static str {
        match self {
            State::Idle => "idle",
            State::Selecting => "selecting",
            State::Executing => "executing",
            State::Evaluating => "evaluating",
            State::ErrorHandling => "error_handling",
            State::Complete => "complete",
            State::Failed => "failed",
            State::Cancelled => "cancelled",
        }
    }

    /// The task has finished: complete, failed or cancelled. Only RESET (and RETRY from
    /// `failed`) leave a final state.
    pub fn is_final(self) -> bool {
        matches!(self, State::Complete | State::Failed | State::Cancelled)
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The settings a machine starts with; RESET keeps them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineConfig {
    pub max_iterations: u32,
    pub max_failures: u32,
    pub default_agent: Option<String>,
}

impl Default for MachineConfig {
    fn default() -> Self {
        MachineConfig {
            max_iterations: DEFAULT_MAX_ITERATIONS,
            max_failures: DEFAULT_MAX_FAILURES,
            default_agent: None,
        }
    }
}

/// The orchestrator state machine: a state and its context. It never changes in place;
/// [`Machine::transition`] returns the next one.
///
/// Serialises to `{"state": "executing", "context": {…}}`; reading a machine that rests in the
/// transient `error_handling` is an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "MachineSnapshot")]
pub struct Machine {
    pub state: State,
    pub context: Context,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MachineSnapshot {
    state: State,
    #[serde(default)]
    context: Context,
}

impl TryFrom<MachineSnapshot> for Machine {
    type Error = String;

    fn try_from(s: MachineSnapshot) -> Result<Self, Self::Error> {
        if s.state == State::ErrorHandling {
            return Err("a machine cannot rest in the transient state error_handling".to_owned());
        }
        Ok(Machine {
            state: s.state,
            context: s.context,
        })
    }
}

impl Default for Machine {
    fn default() -> Self {
        Machine::new(MachineConfig::default())
    }
}

/// What one transition did. The engine logs it; tests read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TransitionRecord {
    /// The event's name, e.g. `"AGENT_COMPLETE"`.
    pub event: String,
    pub from: State,
    /// Where the machine rests now (never `error_handling`).
    pub to: State,
    /// `Some(ErrorHandling)` when the transition passed through it.
    pub via: Option<State>,
    /// The guard that decided the target, if one did (see [`super::guards`]).
    pub guard: Option<&'static str>,
    /// What the engine must do now, in order.
    pub effects: Vec<Effect>,
    /// `false` when the state does not handle the event; the machine is then unchanged.
    pub handled: bool,
    /// Why an event was not handled, or what a guard found (SPEC-0003's log actions).
    pub note: Option<String>,
}

/// The result of [`Machine::transition`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub machine: Machine,
    pub record: TransitionRecord,
}

/// What a transition has done so far; becomes the record.
#[derive(Default)]
struct Taken {
    via: Option<State>,
    guard: Option<&'static str>,
    effects: Vec<Effect>,
    note: Option<String>,
}

impl Machine {
    /// A machine in `idle` with a fresh context.
    pub fn new(config: MachineConfig) -> Machine {
        Machine {
            state: State::Idle,
            context: Context {
                max_iterations: config.max_iterations,
                max_failures: config.max_failures,
                default_agent: config.default_agent,
                ..Context::default()
            },
        }
    }

    /// The settings this machine was made with.
    pub fn config(&self) -> MachineConfig {
        MachineConfig {
            max_iterations: self.context.max_iterations,
            max_failures: self.context.max_failures,
            default_agent: self.context.default_agent.clone(),
        }
    }

    /// Handles `event` at time `now` (ms since the Unix epoch). An event the current state does
    /// not handle leaves the machine as it is and says so in the record.
    pub fn transition(&self, event: &Event, now: i64) -> Outcome {
        let mut machine = self.clone();
        let mut taken = Taken::default();
        let handled = machine.handle(event, now, &mut taken);
        if !handled {
            let mut note = format!("{} is not handled in {}", event.name(), self.state);
            if self.state.is_final() {
                note.push_str(": the task has finished");
            } else if self.state == State::ErrorHandling {
                note.push_str(": error_handling is transient and should never be at rest");
            }
            taken = Taken {
                note: Some(note),
                ..Taken::default()
            };
        }
        let record = TransitionRecord {
            event: event.name().to_owned(),
            from: self.state,
            to: machine.state,
            via: taken.via,
            guard: taken.guard,
            effects: taken.effects,
            handled,
            note: taken.note,
        };
        Outcome { machine, record }
    }

    /// Applies `event`; `false` (and nothing changed) when the state does not handle it.
    fn handle(&mut self, event: &Event, now: i64, t: &mut Taken) -> bool {
        use State as S;
        match (self.state, event) {
            (_, Event::Reset) => {
                if self.state == S::Executing {
                    t.effects.push(Effect::AbortAgent);
                }
                *self = Machine::new(self.config());
            }

            (S::Idle, Event::StartTask { task }) => {
                let c = &mut self.context;
                c.task = task.clone();
                c.started_at = Some(now);
                c.iteration_count = 0;
                c.consecutive_failures = 0;
                c.history.clear();
                c.messages.clear();
                c.last_error = None;
                self.enter(S::Selecting, now, t);
            }

            (S::Idle | S::Selecting | S::Evaluating, Event::Cancel) => {
                self.enter(S::Cancelled, now, t);
            }
            (S::Executing, Event::Cancel) => {
                self.stop_agent(now, t);
                self.enter(S::Cancelled, now, t);
            }

            (S::Selecting, Event::AgentSelected { agent, decision }) => {
                self.context.current_agent = Some(agent.clone());
                self.context.last_arbiter_decision = decision.clone();
                self.enter(S::Executing, now, t);
            }
            (S::Selecting, Event::AgentSelectionFailed { error })
            | (S::Evaluating, Event::ArbiterError { error }) => {
                self.context.count_failure(error.clone());
                self.enter(S::ErrorHandling, now, t);
            }

            (S::Selecting | S::Evaluating | S::Executing, Event::ForceAgent { agent }) => {
                if self.state == S::Executing {
                    self.stop_agent(now, t);
                }
                self.context.current_agent = Some(agent.clone());
                self.enter(S::Executing, now, t);
            }
            (S::Selecting | S::Executing | S::Evaluating, Event::PlanUpdated { plan }) => {
                self.context.plan = Some(plan.clone());
            }

            (S::Executing, Event::AgentMessage { text }) => self.context.push_message(text),
            (S::Executing, Event::AgentToolCall { .. } | Event::AgentToolResult { .. }) => {}
            (S::Executing, Event::AgentComplete { success, output }) => {
                if *success {
                    t.guard = Some(AGENT_SUCCEEDED);
                    self.context.record_execution(
                        now,
                        ExecutionResult::Success,
                        Some(output.clone()),
                        None,
                    );
                    self.context.consecutive_failures = 0;
                    self.enter(S::Evaluating, now, t);
                } else {
                    let message = if output.trim().is_empty() {
                        "the agent reported a failure".to_owned()
                    } else {
                        output.clone()
                    };
                    let output = (!output.is_empty()).then(|| output.clone());
                    self.context.record_execution(
                        now,
                        ExecutionResult::Failure,
                        output,
                        Some(message.clone()),
                    );
                    self.context
                        .count_failure(MachineError::new(AGENT_FAILED, message));
                    self.enter(S::ErrorHandling, now, t);
                }
            }
            (S::Executing, Event::AgentError { error }) => {
                self.context.record_execution(
                    now,
                    ExecutionResult::Failure,
                    None,
                    Some(error.message.clone()),
                );
                self.context.count_failure(error.clone());
                self.enter(S::ErrorHandling, now, t);
            }

            (S::Evaluating, Event::ArbiterDecision { decision }) => self.decide(decision, now, t),

            (S::Executing | S::Evaluating, Event::SkipStep) => {
                if self.state == S::Executing {
                    self.stop_agent(now, t);
                }
                if let Some(plan) = &mut self.context.plan {
                    plan.skip_current();
                }
                self.enter(S::Selecting, now, t);
            }

            (S::Evaluating, Event::Retry) => self.enter(S::Selecting, now, t),
            (S::Failed, Event::Retry) => {
                self.context.consecutive_failures = 0;
                self.enter(S::Selecting, now, t);
            }

            _ => return false,
        }
        true
    }

    /// `evaluating` —ARBITER_DECISION→, guards in rawko-sdk's order.
    fn decide(&mut self, decision: &ArbiterDecision, now: i64, t: &mut Taken) {
        if is_complete(decision) {
            t.guard = Some(IS_COMPLETE);
            self.context.last_arbiter_decision = Some(decision.clone());
            self.enter(State::Complete, now, t);
        } else if max_iterations_reached(&self.context) {
            t.guard = Some(MAX_ITERATIONS_REACHED);
            t.note = Some(format!(
                "max iterations ({}) reached",
                self.context.max_iterations
            ));
            self.context.last_arbiter_decision = Some(ArbiterDecision::Complete {
                summary: MAX_ITERATIONS_SUMMARY.to_owned(),
            });
            self.enter(State::Complete, now, t);
        } else if should_select_mode(decision) {
            t.guard = Some(SHOULD_SELECT_MODE);
            self.context.last_arbiter_decision = Some(decision.clone());
            self.context.current_agent = decision.mode().map(str::to_owned);
            self.enter(State::Executing, now, t);
        } else if should_retry(decision) {
            t.guard = Some(SHOULD_RETRY);
            self.context.last_arbiter_decision = Some(decision.clone());
            self.enter(State::Selecting, now, t);
        } else {
            self.context.last_arbiter_decision = Some(decision.clone());
            self.enter(State::Selecting, now, t);
        }
    }

    /// Leaving `executing` before the agent finished: stop it and record the run as cancelled.
    fn stop_agent(&mut self, now: i64, t: &mut Taken) {
        t.effects.push(Effect::AbortAgent);
        self.context
            .record_execution(now, ExecutionResult::Cancelled, None, None);
    }

    /// Moves to `state` and runs its entry actions.
    fn enter(&mut self, state: State, now: i64, t: &mut Taken) {
        self.state = state;
        match state {
            State::Idle => {}
            State::Selecting => t.effects.push(Effect::SelectAgent),
            State::Executing => {
                let c = &mut self.context;
                c.iteration_count += 1;
                c.execution_started_at = Some(now);
                c.messages.clear();
                t.effects.push(Effect::RunAgent {
                    agent: c.current_agent.clone().unwrap_or_default(),
                });
            }
            State::Evaluating => t.effects.push(Effect::Evaluate),
            State::ErrorHandling => self.resolve_error(now, t),
            State::Complete => {
                let summary = match &self.context.last_arbiter_decision {
                    Some(ArbiterDecision::Complete { summary }) => summary.clone(),
                    _ => String::new(),
                };
                t.effects.push(Effect::Finish {
                    outcome: TaskOutcome::Complete,
                    summary,
                });
            }
            State::Failed => t.effects.push(Effect::Finish {
                outcome: TaskOutcome::Failed,
                summary: self.failure_summary(),
            }),
            State::Cancelled => t.effects.push(Effect::Finish {
                outcome: TaskOutcome::Cancelled,
                summary: "cancelled".to_owned(),
            }),
        }
    }

    /// `error_handling`'s eventless transitions (XState `always`), taken at once.
    fn resolve_error(&mut self, now: i64, t: &mut Taken) {
        t.via = Some(State::ErrorHandling);
        let c = &self.context;
        if max_failures_reached(c) {
            t.guard = Some(MAX_FAILURES_REACHED);
            t.note = Some(format!(
                "max consecutive failures ({}) reached",
                c.consecutive_failures
            ));
            self.enter(State::Failed, now, t);
        } else if is_recoverable_error(c) {
            t.guard = Some(IS_RECOVERABLE_ERROR);
            t.note = c
                .last_error
                .as_ref()
                .map(|e| format!("recovering from {}: {}", e.code, e.message));
            self.enter(State::Selecting, now, t);
        } else {
            t.guard = None;
            self.enter(State::Failed, now, t);
        }
    }

    fn failure_summary(&self) -> String {
        let c = &self.context;
        let last = c.last_error.as_ref().map_or_else(
            || "unknown error".to_owned(),
            |e| format!("{}: {}", e.code, e.message),
        );
        if max_failures_reached(c) {
            format!(
                "gave up after {} consecutive failures (last: {last})",
                c.consecutive_failures
            )
        } else {
            format!("unrecoverable error ({last})")
        }
    }
}

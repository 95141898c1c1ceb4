//! Tests of the orchestrator machine: the chart against the code (both ways), every guard, the
//! guard order, error handling, overrides, the context's bookkeeping and the JSON form. Runs are
//! written as event lists and shown as one line per transition, so a snapshot reads like a log:
//! `from --EVENT [guard]--> [via ->] to  effects  # note`.

use expect_test::{expect, Expect};
use serde_json::json;

use super::guards::*;
use super::*;

mod chart_and_code;
mod context_and_overrides;
mod guard_order;
mod json;
mod runs;

const T0: i64 = 1_700_000_000_000;

fn config(max_iterations: u32, max_failures: u32) -> MachineConfig {
    MachineConfig {
        max_iterations,
        max_failures,
        default_agent: Some("coder".to_owned()),
    }
}

fn error(code: &str, message: &str) -> MachineError {
    MachineError::new(code, message)
}

fn start(task: &str) -> Event {
    Event::StartTask {
        task: task.to_owned(),
    }
}

fn selected(agent: &str) -> Event {
    Event::AgentSelected {
        agent: agent.to_owned(),
        decision: Some(ArbiterDecision::SelectMode {
            mode: agent.to_owned(),
            reason: "best fit".to_owned(),
        }),
    }
}

fn succeeded(output: &str) -> Event {
    Event::AgentComplete {
        success: true,
        output: output.to_owned(),
    }
}

fn agent_failed(output: &str) -> Event {
    Event::AgentComplete {
        success: false,
        output: output.to_owned(),
    }
}

fn agent_error(code: &str) -> Event {
    Event::AgentError {
        error: error(code, &format!("{code} happened")),
    }
}

fn decided(decision: ArbiterDecision) -> Event {
    Event::ArbiterDecision { decision }
}

fn complete(summary: &str) -> ArbiterDecision {
    ArbiterDecision::Complete {
        summary: summary.to_owned(),
    }
}

fn proceed() -> ArbiterDecision {
    ArbiterDecision::Continue {
        reason: "more to do".to_owned(),
    }
}

fn retry() -> ArbiterDecision {
    ArbiterDecision::Retry {
        reason: "poor result".to_owned(),
    }
}

fn select_mode(agent: &str) -> ArbiterDecision {
    ArbiterDecision::SelectMode {
        mode: agent.to_owned(),
        reason: "tests next".to_owned(),
    }
}

fn force(agent: &str) -> Event {
    Event::ForceAgent {
        agent: agent.to_owned(),
    }
}

fn plan(steps: &[&str]) -> Plan {
    Plan {
        steps: steps
            .iter()
            .enumerate()
            .map(|(index, d)| PlanStep {
                index,
                description: (*d).to_owned(),
                status: StepStatus::Pending,
                agent_used: None,
            })
            .collect(),
        current_step_index: 0,
        is_complete: false,
    }
}

fn effect_text(e: &Effect) -> String {
    match e {
        Effect::SelectAgent => "SelectAgent".to_owned(),
        Effect::RunAgent { agent } => format!("RunAgent({agent})"),
        Effect::Evaluate => "Evaluate".to_owned(),
        Effect::AbortAgent => "AbortAgent".to_owned(),
        Effect::Finish { outcome, summary } => format!("Finish({outcome:?}, {summary:?})"),
    }
}

/// One transition as a log line.
fn show(r: &TransitionRecord) -> String {
    let mut s = format!("{} --{}", r.from, r.event);
    if let Some(g) = r.guard {
        s.push_str(&format!(" [{g}]"));
    }
    s.push_str("--> ");
    if let Some(via) = r.via {
        s.push_str(&format!("{via} -> "));
    }
    s.push_str(r.to.name());
    if !r.effects.is_empty() {
        let effects: Vec<String> = r.effects.iter().map(effect_text).collect();
        s.push_str(&format!("  {}", effects.join(", ")));
    }
    if !r.handled {
        s.push_str("  (not handled)");
    }
    if let Some(note) = &r.note {
        s.push_str(&format!("  # {note}"));
    }
    s
}

/// A machine driven event by event, one second apart, with a log of the transitions.
struct Run {
    machine: Machine,
    now: i64,
    log: Vec<String>,
}

impl Run {
    fn new(machine: Machine) -> Run {
        Run {
            machine,
            now: T0,
            log: Vec::new(),
        }
    }

    fn send(&mut self, event: Event) -> TransitionRecord {
        self.now += 1000;
        let out = self.machine.transition(&event, self.now);
        self.log.push(show(&out.record));
        self.machine = out.machine;
        out.record
    }

    fn all(mut self, events: impl IntoIterator<Item = Event>) -> Run {
        for e in events {
            self.send(e);
        }
        self
    }

    fn check(&self, expect: Expect) {
        expect.assert_eq(&self.log.join("\n"));
    }
}

fn run(events: impl IntoIterator<Item = Event>) -> Run {
    Run::new(Machine::default()).all(events)
}

/// The events that bring a new machine to rest in `state` the ordinary way.
fn path_to(state: State) -> Vec<Event> {
    let to_selecting = vec![start("Add a login page")];
    let to_executing = [to_selecting.clone(), vec![selected("coder")]].concat();
    let to_evaluating = [to_executing.clone(), vec![succeeded("wrote login.rs")]].concat();
    match state {
        State::Idle => Vec::new(),
        State::Selecting => to_selecting,
        State::Executing => to_executing,
        State::Evaluating => to_evaluating,
        State::Complete => [to_evaluating, vec![decided(complete("login page added"))]].concat(),
        State::Failed => [to_executing, vec![agent_error("tool_failure")]].concat(),
        State::Cancelled => [to_selecting, vec![Event::Cancel]].concat(),
        State::ErrorHandling => panic!("error_handling is transient; nothing rests there"),
    }
}

fn at_with(state: State, config: MachineConfig) -> Machine {
    let r = Run::new(Machine::new(config)).all(path_to(state));
    assert_eq!(r.machine.state, state, "{}", r.log.join("\n"));
    r.machine
}

fn at(state: State) -> Machine {
    at_with(state, MachineConfig::default())
}

/// The states a machine can rest in.
const RESTING: [State; 7] = [
    State::Idle,
    State::Selecting,
    State::Executing,
    State::Evaluating,
    State::Complete,
    State::Failed,
    State::Cancelled,
];

/// Events of every kind, with the payload variants that pick different guards.
fn sample_events() -> Vec<Event> {
    vec![
        start("Another task"),
        Event::Cancel,
        Event::Reset,
        selected("reviewer"),
        Event::AgentSelected {
            agent: "reviewer".to_owned(),
            decision: None,
        },
        Event::AgentSelectionFailed {
            error: error("selection_failed", "no such agent"),
        },
        Event::AgentSelectionFailed {
            error: error("rate_limited", "slow down"),
        },
        Event::AgentMessage {
            text: "hello".to_owned(),
        },
        Event::AgentToolCall {
            id: "t1".to_owned(),
            name: "Read".to_owned(),
        },
        Event::AgentToolResult {
            id: "t1".to_owned(),
            is_error: false,
        },
        succeeded("done"),
        agent_failed("could not finish"),
        agent_error("rate_limited"),
        agent_error("network_error"),
        agent_error("tool_failure"),
        decided(complete("all done")),
        decided(proceed()),
        decided(retry()),
        decided(select_mode("tester")),
        Event::ArbiterError {
            error: error("arbiter_error", "bad json"),
        },
        Event::ArbiterError {
            error: error("network_error", "reset by peer"),
        },
        force("tester"),
        Event::SkipStep,
        Event::Retry,
        Event::PlanUpdated {
            plan: plan(&["design", "build"]),
        },
    ]
}

/// Machines resting in each state, in the situations the guards tell apart.
fn sample_machines() -> Vec<Machine> {
    let mut machines = Vec::new();
    for state in RESTING {
        let fresh = at(state);
        let mut at_limit = fresh.clone();
        at_limit.context.iteration_count = at_limit.context.max_iterations;
        let mut one_failure_left = fresh.clone();
        one_failure_left.context.consecutive_failures = one_failure_left.context.max_failures - 1;
        let mut exhausted = fresh.clone();
        exhausted.context.iteration_count = exhausted.context.max_iterations;
        exhausted.context.consecutive_failures = exhausted.context.max_failures - 1;
        machines.extend([fresh, at_limit, one_failure_left, exhausted]);
    }
    machines
}

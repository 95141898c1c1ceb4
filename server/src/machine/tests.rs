//! Tests of the orchestrator machine: the chart against the code (both ways), every guard, the
//! guard order, error handling, overrides, the context's bookkeeping and the JSON form. Runs are
//! written as event lists and shown as one line per transition, so a snapshot reads like a log:
//! `from --EVENT [guard]--> [via ->] to  effects  # note`.

use expect_test::{expect, Expect};
use serde_json::json;

use super::guards::*;
use super::*;

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

fn rows_for(from: State, event: &str) -> Vec<&'static TransitionRow> {
    TRANSITIONS
        .iter()
        .filter(|r| r.from == from && r.event == Some(event))
        .collect()
}

#[test]
fn mermaid_chart() {
    expect![[r#"
        stateDiagram-v2
            state error_handling <<choice>>
            [*] --> idle
            idle --> selecting : START_TASK
            idle --> cancelled : CANCEL
            idle --> idle : RESET
            selecting --> executing : AGENT_SELECTED
            selecting --> error_handling : AGENT_SELECTION_FAILED
            selecting --> executing : FORCE_AGENT
            selecting --> selecting : PLAN_UPDATED
            selecting --> cancelled : CANCEL
            selecting --> idle : RESET
            executing --> executing : AGENT_MESSAGE
            executing --> executing : AGENT_TOOL_CALL
            executing --> executing : AGENT_TOOL_RESULT
            executing --> executing : PLAN_UPDATED
            executing --> evaluating : AGENT_COMPLETE [agentSucceeded]
            executing --> error_handling : AGENT_COMPLETE
            executing --> error_handling : AGENT_ERROR
            executing --> executing : FORCE_AGENT
            executing --> selecting : SKIP_STEP
            executing --> cancelled : CANCEL
            executing --> idle : RESET
            evaluating --> complete : ARBITER_DECISION [isComplete]
            evaluating --> complete : ARBITER_DECISION [maxIterationsReached]
            evaluating --> executing : ARBITER_DECISION [shouldSelectMode]
            evaluating --> selecting : ARBITER_DECISION [shouldRetry]
            evaluating --> selecting : ARBITER_DECISION
            evaluating --> error_handling : ARBITER_ERROR
            evaluating --> executing : FORCE_AGENT
            evaluating --> selecting : SKIP_STEP
            evaluating --> selecting : RETRY
            evaluating --> evaluating : PLAN_UPDATED
            evaluating --> cancelled : CANCEL
            evaluating --> idle : RESET
            error_handling --> failed : [maxFailuresReached]
            error_handling --> selecting : [isRecoverableError]
            error_handling --> failed : [else]
            complete --> idle : RESET
            failed --> selecting : RETRY
            failed --> idle : RESET
            cancelled --> idle : RESET
            complete --> [*]
            failed --> [*]
            cancelled --> [*]
        "#]]
    .assert_eq(&mermaid());
}

/// A machine and an event that should take `row`. For the eventless rows of `error_handling`,
/// an AGENT_ERROR from `executing` in a context where the row's guard decides.
fn scenario(row: &TransitionRow) -> (Machine, Event) {
    if row.from == State::ErrorHandling {
        let mut m = at(State::Executing);
        return match row.guard {
            Some(MAX_FAILURES_REACHED) => {
                m.context.consecutive_failures = m.context.max_failures - 1;
                (m, agent_error("rate_limited"))
            }
            Some(IS_RECOVERABLE_ERROR) => (m, agent_error("rate_limited")),
            None => (m, agent_error("tool_failure")),
            Some(other) => panic!("no scenario for the guard {other}"),
        };
    }
    let m = at(row.from);
    let event = match (row.from, row.event, row.guard) {
        (_, Some("RESET"), _) => Event::Reset,
        (_, Some("CANCEL"), _) => Event::Cancel,
        (_, Some("START_TASK"), _) => start("Add a login page"),
        (_, Some("AGENT_SELECTED"), _) => selected("coder"),
        (_, Some("AGENT_SELECTION_FAILED"), _) => Event::AgentSelectionFailed {
            error: error("selection_failed", "no agent fits"),
        },
        (_, Some("FORCE_AGENT"), _) => force("tester"),
        (_, Some("PLAN_UPDATED"), _) => Event::PlanUpdated {
            plan: plan(&["a", "b"]),
        },
        (_, Some("AGENT_MESSAGE"), _) => Event::AgentMessage {
            text: "working".to_owned(),
        },
        (_, Some("AGENT_TOOL_CALL"), _) => Event::AgentToolCall {
            id: "t1".to_owned(),
            name: "Read".to_owned(),
        },
        (_, Some("AGENT_TOOL_RESULT"), _) => Event::AgentToolResult {
            id: "t1".to_owned(),
            is_error: true,
        },
        (_, Some("AGENT_COMPLETE"), Some(AGENT_SUCCEEDED)) => succeeded("done"),
        (_, Some("AGENT_COMPLETE"), None) => agent_failed("gave up"),
        (_, Some("AGENT_ERROR"), _) => agent_error("tool_failure"),
        (_, Some("ARBITER_DECISION"), Some(IS_COMPLETE)) => decided(complete("done")),
        (_, Some("ARBITER_DECISION"), Some(MAX_ITERATIONS_REACHED)) => {
            return (at_with(State::Evaluating, config(1, 3)), decided(proceed()));
        }
        (_, Some("ARBITER_DECISION"), Some(SHOULD_SELECT_MODE)) => decided(select_mode("tester")),
        (_, Some("ARBITER_DECISION"), Some(SHOULD_RETRY)) => decided(retry()),
        (_, Some("ARBITER_DECISION"), None) => decided(proceed()),
        (_, Some("ARBITER_ERROR"), _) => Event::ArbiterError {
            error: error("arbiter_error", "bad json"),
        },
        (_, Some("SKIP_STEP"), _) => Event::SkipStep,
        (_, Some("RETRY"), _) => Event::Retry,
        _ => panic!("no scenario for {row:?}"),
    };
    (m, event)
}

#[test]
fn every_row_of_the_chart_is_what_the_code_does() {
    for row in TRANSITIONS {
        let (m, event) = scenario(row);
        let r = m.transition(&event, T0).record;
        let what = format!("{row:?}: {}", show(&r));
        assert!(r.handled, "{what}");
        if row.from == State::ErrorHandling {
            assert_eq!(r.via, Some(State::ErrorHandling), "{what}");
            assert_eq!((r.guard, r.to), (row.guard, row.to), "{what}");
        } else if row.to == State::ErrorHandling {
            assert_eq!(
                (r.from, r.event.as_str()),
                (row.from, row.event.unwrap()),
                "{what}"
            );
            assert_eq!(r.via, Some(State::ErrorHandling), "{what}");
        } else {
            assert_eq!(
                (r.from, r.event.as_str()),
                (row.from, row.event.unwrap()),
                "{what}"
            );
            assert_eq!((r.guard, r.to, r.via), (row.guard, row.to, None), "{what}");
        }
    }
}

#[test]
fn every_transition_the_code_takes_is_in_the_chart() {
    let mut taken = 0;
    for m in sample_machines() {
        for event in sample_events() {
            let out = m.transition(&event, T0);
            let r = &out.record;
            let rows = rows_for(m.state, event.name());
            if !r.handled {
                assert!(rows.is_empty(), "the chart has {rows:?} but {}", show(r));
                assert_eq!(out.machine, m, "{}", show(r));
                assert!(r.effects.is_empty() && r.via.is_none() && r.guard.is_none());
                continue;
            }
            taken += 1;
            let found = match r.via {
                None => rows
                    .iter()
                    .any(|row| row.guard == r.guard && row.to == r.to),
                Some(via) => {
                    assert_eq!(via, State::ErrorHandling);
                    rows.iter().any(|row| row.to == State::ErrorHandling)
                        && TRANSITIONS.iter().any(|row| {
                            row.from == State::ErrorHandling
                                && row.guard == r.guard
                                && row.to == r.to
                        })
                }
            };
            assert!(found, "not in the chart: {}", show(r));
            assert_ne!(out.machine.state, State::ErrorHandling, "{}", show(r));
        }
    }
    assert!(taken > 100, "only {taken} transitions were taken");
}

#[test]
fn the_chart_covers_every_state_and_every_event() {
    for state in State::ALL {
        assert!(
            TRANSITIONS.iter().any(|r| r.to == state),
            "{state} is never entered"
        );
    }
    let mut names: Vec<&str> = sample_events().iter().map(Event::name).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 16, "{names:?}");
    for name in names {
        assert!(
            TRANSITIONS.iter().any(|r| r.event == Some(name)),
            "{name} is never handled"
        );
    }
}

#[test]
fn final_states() {
    let finals: Vec<State> = State::ALL.into_iter().filter(|s| s.is_final()).collect();
    assert_eq!(finals, [State::Complete, State::Failed, State::Cancelled]);
    for state in finals {
        let m = at(state);
        let handled: Vec<&str> = sample_events()
            .iter()
            .filter(|e| m.transition(e, T0).record.handled)
            .map(Event::name)
            .collect();
        let expected: &[&str] = if state == State::Failed {
            &["RESET", "RETRY"]
        } else {
            &["RESET"]
        };
        assert_eq!(handled, expected, "{state}");
    }
}

#[test]
fn decision_guards() {
    let decisions = [complete("x"), proceed(), retry(), select_mode("tester")];
    let table: Vec<String> = decisions
        .iter()
        .map(|d| {
            format!(
                "{:<11} isComplete={:<5} shouldRetry={:<5} shouldSelectMode={}",
                d.name(),
                is_complete(d),
                should_retry(d),
                should_select_mode(d)
            )
        })
        .collect();
    expect![[r#"
        COMPLETE    isComplete=true  shouldRetry=false shouldSelectMode=false
        CONTINUE    isComplete=false shouldRetry=false shouldSelectMode=false
        RETRY       isComplete=false shouldRetry=true  shouldSelectMode=false
        SELECT_MODE isComplete=false shouldRetry=false shouldSelectMode=true"#]]
    .assert_eq(&table.join("\n"));
}

#[test]
fn limit_guards() {
    let mut c = Context {
        max_iterations: 3,
        max_failures: 2,
        ..Context::default()
    };
    let iterations: Vec<bool> = (0..=4)
        .map(|n| {
            c.iteration_count = n;
            max_iterations_reached(&c)
        })
        .collect();
    assert_eq!(iterations, [false, false, false, true, true]);
    let failures: Vec<bool> = (0..=3)
        .map(|n| {
            c.consecutive_failures = n;
            max_failures_reached(&c)
        })
        .collect();
    assert_eq!(failures, [false, false, true, true]);
}

#[test]
fn recoverable_error_guard() {
    let mut c = Context::default();
    assert!(!is_recoverable_error(&c), "no error at all");
    for (code, recoverable) in [
        ("rate_limited", true),
        ("network_error", true),
        ("tool_failure", false),
        ("agent_failed", false),
        ("arbiter_error", false),
        ("auth_error", false),
    ] {
        c.last_error = Some(error(code, "m"));
        assert_eq!(is_recoverable_error(&c), recoverable, "{code}");
    }
}

#[test]
fn a_task_runs_to_completion() {
    let mut r = run([start("Add a login page"), selected("planner")]);
    r.send(Event::AgentMessage {
        text: "Planning.".to_owned(),
    });
    r.send(Event::AgentToolCall {
        id: "t1".to_owned(),
        name: "Read".to_owned(),
    });
    r.send(Event::AgentToolResult {
        id: "t1".to_owned(),
        is_error: false,
    });
    let r = r.all([
        succeeded("plan written"),
        decided(proceed()),
        selected("coder"),
        succeeded("login.rs written"),
        decided(select_mode("tester")),
        succeeded("tests pass"),
        decided(complete("login page added and tested")),
    ]);
    r.check(expect![[r#"
        idle --START_TASK--> selecting  SelectAgent
        selecting --AGENT_SELECTED--> executing  RunAgent(planner)
        executing --AGENT_MESSAGE--> executing
        executing --AGENT_TOOL_CALL--> executing
        executing --AGENT_TOOL_RESULT--> executing
        executing --AGENT_COMPLETE [agentSucceeded]--> evaluating  Evaluate
        evaluating --ARBITER_DECISION--> selecting  SelectAgent
        selecting --AGENT_SELECTED--> executing  RunAgent(coder)
        executing --AGENT_COMPLETE [agentSucceeded]--> evaluating  Evaluate
        evaluating --ARBITER_DECISION [shouldSelectMode]--> executing  RunAgent(tester)
        executing --AGENT_COMPLETE [agentSucceeded]--> evaluating  Evaluate
        evaluating --ARBITER_DECISION [isComplete]--> complete  Finish(Complete, "login page added and tested")"#]]);
    let c = &r.machine.context;
    assert_eq!(c.task, "Add a login page");
    assert_eq!(c.started_at, Some(T0 + 1000));
    assert_eq!(c.iteration_count, 3);
    assert_eq!(c.current_agent.as_deref(), Some("tester"));
    assert_eq!(
        c.last_arbiter_decision,
        Some(complete("login page added and tested"))
    );
    let agents: Vec<(&str, ExecutionResult)> = c
        .history
        .iter()
        .map(|e| (e.agent.as_str(), e.result))
        .collect();
    assert_eq!(
        agents,
        [
            ("planner", ExecutionResult::Success),
            ("coder", ExecutionResult::Success),
            ("tester", ExecutionResult::Success)
        ]
    );
}

#[test]
fn evaluating_complete_wins_over_max_iterations() {
    let m = at_with(State::Evaluating, config(1, 3));
    assert!(max_iterations_reached(&m.context));
    let out = m.transition(&decided(complete("done early")), T0);
    expect![[
        r#"evaluating --ARBITER_DECISION [isComplete]--> complete  Finish(Complete, "done early")"#
    ]]
    .assert_eq(&show(&out.record));
    assert_eq!(
        out.machine.context.last_arbiter_decision,
        Some(complete("done early"))
    );
}

#[test]
fn evaluating_max_iterations_wins_over_every_other_decision() {
    let m = at_with(State::Evaluating, config(1, 3));
    let lines: Vec<String> = [select_mode("tester"), retry(), proceed()]
        .into_iter()
        .map(|d| {
            let out = m.transition(&decided(d), T0);
            assert_eq!(
                out.machine.context.last_arbiter_decision,
                Some(complete(MAX_ITERATIONS_SUMMARY))
            );
            show(&out.record)
        })
        .collect();
    expect![[r#"
        evaluating --ARBITER_DECISION [maxIterationsReached]--> complete  Finish(Complete, "Max iterations reached")  # max iterations (1) reached
        evaluating --ARBITER_DECISION [maxIterationsReached]--> complete  Finish(Complete, "Max iterations reached")  # max iterations (1) reached
        evaluating --ARBITER_DECISION [maxIterationsReached]--> complete  Finish(Complete, "Max iterations reached")  # max iterations (1) reached"#]]
    .assert_eq(&lines.join("\n"));
}

#[test]
fn evaluating_below_the_limit_follows_the_decision() {
    let m = at(State::Evaluating);
    let lines: Vec<String> = [select_mode("tester"), retry(), proceed()]
        .into_iter()
        .map(|d| {
            let out = m.transition(&decided(d.clone()), T0);
            assert_eq!(out.machine.context.last_arbiter_decision, Some(d));
            show(&out.record)
        })
        .collect();
    expect![[r#"
        evaluating --ARBITER_DECISION [shouldSelectMode]--> executing  RunAgent(tester)
        evaluating --ARBITER_DECISION [shouldRetry]--> selecting  SelectAgent
        evaluating --ARBITER_DECISION--> selecting  SelectAgent"#]]
    .assert_eq(&lines.join("\n"));
}

#[test]
fn the_iteration_limit_ends_a_task_that_never_completes() {
    let mut r = Run::new(Machine::new(config(3, 3))).all([start("Polish forever")]);
    for _ in 0..10 {
        if r.machine.state.is_final() {
            break;
        }
        r = r.all([selected("coder"), succeeded("polished"), decided(proceed())]);
    }
    assert_eq!(r.machine.state, State::Complete);
    assert_eq!(r.machine.context.iteration_count, 3);
    assert_eq!(r.machine.context.history.len(), 3);
    expect![[r#"evaluating --ARBITER_DECISION [maxIterationsReached]--> complete  Finish(Complete, "Max iterations reached")  # max iterations (3) reached"#]]
        .assert_eq(r.log.last().unwrap());
}

#[test]
fn error_handling_branches() {
    // Recoverable errors go back to selecting until the consecutive failures reach the limit,
    // which wins even over a recoverable error.
    let r = run([
        start("Add a login page"),
        selected("coder"),
        agent_error("rate_limited"),
        selected("coder"),
        agent_error("network_error"),
        selected("coder"),
        agent_error("rate_limited"),
    ]);
    r.check(expect![[r#"
        idle --START_TASK--> selecting  SelectAgent
        selecting --AGENT_SELECTED--> executing  RunAgent(coder)
        executing --AGENT_ERROR [isRecoverableError]--> error_handling -> selecting  SelectAgent  # recovering from rate_limited: rate_limited happened
        selecting --AGENT_SELECTED--> executing  RunAgent(coder)
        executing --AGENT_ERROR [isRecoverableError]--> error_handling -> selecting  SelectAgent  # recovering from network_error: network_error happened
        selecting --AGENT_SELECTED--> executing  RunAgent(coder)
        executing --AGENT_ERROR [maxFailuresReached]--> error_handling -> failed  Finish(Failed, "gave up after 3 consecutive failures (last: rate_limited: rate_limited happened)")  # max consecutive failures (3) reached"#]]);
    assert_eq!(r.machine.context.consecutive_failures, 3);
    assert_eq!(r.machine.context.total_failures, 3);

    // Anything else fails at once.
    run([start("t"), selected("coder"), agent_error("tool_failure")]).check(expect![[r#"
        idle --START_TASK--> selecting  SelectAgent
        selecting --AGENT_SELECTED--> executing  RunAgent(coder)
        executing --AGENT_ERROR--> error_handling -> failed  Finish(Failed, "unrecoverable error (tool_failure: tool_failure happened)")"#]]);
}

#[test]
fn max_failures_is_configurable() {
    let r = Run::new(Machine::new(config(50, 1))).all([
        start("t"),
        selected("coder"),
        agent_error("rate_limited"),
    ]);
    assert_eq!(r.machine.state, State::Failed);
    expect![[r#"executing --AGENT_ERROR [maxFailuresReached]--> error_handling -> failed  Finish(Failed, "gave up after 1 consecutive failures (last: rate_limited: rate_limited happened)")  # max consecutive failures (1) reached"#]]
        .assert_eq(r.log.last().unwrap());
}

#[test]
fn arbiter_failures_go_through_error_handling_and_count() {
    let r = run([
        start("t"),
        Event::AgentSelectionFailed {
            error: error("rate_limited", "slow down"),
        },
        selected("coder"),
        succeeded("done"),
        Event::ArbiterError {
            error: error("network_error", "reset by peer"),
        },
        Event::AgentSelectionFailed {
            error: error("selection_failed", "agent \"x\" does not exist"),
        },
    ]);
    r.check(expect![[r#"
        idle --START_TASK--> selecting  SelectAgent
        selecting --AGENT_SELECTION_FAILED [isRecoverableError]--> error_handling -> selecting  SelectAgent  # recovering from rate_limited: slow down
        selecting --AGENT_SELECTED--> executing  RunAgent(coder)
        executing --AGENT_COMPLETE [agentSucceeded]--> evaluating  Evaluate
        evaluating --ARBITER_ERROR [isRecoverableError]--> error_handling -> selecting  SelectAgent  # recovering from network_error: reset by peer
        selecting --AGENT_SELECTION_FAILED--> error_handling -> failed  Finish(Failed, "unrecoverable error (selection_failed: agent \"x\" does not exist)")"#]]);
    let c = &r.machine.context;
    // The agent's success reset the consecutive count; the arbiter's failures are not agent runs.
    assert_eq!((c.consecutive_failures, c.total_failures), (2, 3));
    assert_eq!(c.history.len(), 1);
    assert_eq!(
        c.last_error,
        Some(error("selection_failed", "agent \"x\" does not exist"))
    );

    // An arbiter that keeps answering rate_limited cannot loop forever.
    let mut r = run([start("t")]);
    for _ in 0..10 {
        if r.machine.state.is_final() {
            break;
        }
        r.send(Event::AgentSelectionFailed {
            error: error("rate_limited", "slow down"),
        });
    }
    assert_eq!(r.machine.state, State::Failed);
    assert_eq!(r.log.len(), 1 + 3);
}

#[test]
fn an_agent_that_reports_failure_fails_the_task() {
    let r = run([
        start("t"),
        selected("coder"),
        agent_failed("could not compile"),
    ]);
    expect![[r#"executing --AGENT_COMPLETE--> error_handling -> failed  Finish(Failed, "unrecoverable error (agent_failed: could not compile)")"#]]
        .assert_eq(r.log.last().unwrap());
    let c = &r.machine.context;
    assert_eq!(c.last_error, Some(error(AGENT_FAILED, "could not compile")));
    assert_eq!((c.consecutive_failures, c.total_failures), (1, 1));
    let last = c.history.last().unwrap();
    assert_eq!(last.result, ExecutionResult::Failure);
    assert_eq!(last.output.as_deref(), Some("could not compile"));
    assert_eq!(last.error.as_deref(), Some("could not compile"));

    // Without output the error still says what happened.
    let r = run([start("t"), selected("coder"), agent_failed("  ")]);
    assert_eq!(
        r.machine.context.last_error,
        Some(error(AGENT_FAILED, "the agent reported a failure"))
    );
}

#[test]
fn failure_counters() {
    let mut r = run([start("t"), selected("coder"), agent_error("rate_limited")]);
    let counts = |r: &Run| {
        (
            r.machine.context.consecutive_failures,
            r.machine.context.total_failures,
        )
    };
    assert_eq!(counts(&r), (1, 1));
    r = r.all([selected("coder"), agent_error("network_error")]);
    assert_eq!(counts(&r), (2, 2));
    r = r.all([selected("coder"), succeeded("ok")]);
    assert_eq!(
        counts(&r),
        (0, 2),
        "a success resets only the consecutive count"
    );
    r = r.all([
        decided(proceed()),
        selected("coder"),
        agent_error("rate_limited"),
    ]);
    assert_eq!(counts(&r), (1, 3));
}

#[test]
fn history_entries_carry_times_and_results() {
    let m = at(State::Selecting);
    let m = m.transition(&selected("coder"), 10_000).machine;
    assert_eq!(m.context.execution_started_at, Some(10_000));
    let m = m.transition(&succeeded("wrote it"), 12_500).machine;
    let m = m.transition(&decided(proceed()), 13_000).machine;
    let m = m.transition(&selected("tester"), 14_000).machine;
    let m = m.transition(&agent_error("rate_limited"), 15_000).machine;
    let m = m.transition(&selected("tester"), 16_000).machine;
    let m = m.transition(&force("reviewer"), 17_000).machine;
    let m = m.transition(&Event::Cancel, 18_000).machine;
    let json = serde_json::to_value(&m.context.history).unwrap();
    assert_eq!(
        json,
        json!([
            {"agent": "coder", "startedAt": 10_000, "completedAt": 12_500, "result": "success",
             "output": "wrote it", "error": null},
            {"agent": "tester", "startedAt": 14_000, "completedAt": 15_000, "result": "failure",
             "output": null, "error": "rate_limited happened"},
            {"agent": "tester", "startedAt": 16_000, "completedAt": 17_000, "result": "cancelled",
             "output": null, "error": null},
            {"agent": "reviewer", "startedAt": 17_000, "completedAt": 18_000, "result": "cancelled",
             "output": null, "error": null},
        ])
    );
    assert_eq!(m.context.iteration_count, 4);
}

#[test]
fn messages_keep_the_newest_and_start_empty_for_each_run() {
    let mut m = at(State::Executing);
    for i in 0..250 {
        let out = m.transition(
            &Event::AgentMessage {
                text: format!("m{i}"),
            },
            T0,
        );
        assert!(out.record.handled && out.record.effects.is_empty());
        assert_eq!(out.machine.state, State::Executing);
        m = out.machine;
    }
    assert_eq!(m.context.messages.len(), MAX_MESSAGES);
    assert_eq!(m.context.messages.first().map(String::as_str), Some("m50"));
    assert_eq!(m.context.messages.last().map(String::as_str), Some("m249"));
    // Messages belong to one run: they stay for the evaluation and go when the next run starts.
    let m = m.transition(&succeeded("done"), T0).machine;
    assert_eq!(m.context.messages.len(), MAX_MESSAGES);
    let m = m.transition(&decided(select_mode("tester")), T0).machine;
    assert!(m.context.messages.is_empty());
}

#[test]
fn start_task_begins_with_a_clean_slate() {
    // An idle machine read from an old snapshot may carry leftovers.
    let mut m = at(State::Failed);
    m.state = State::Idle;
    m.context.messages.push("old".to_owned());
    m.context.iteration_count = 9;
    let out = m.transition(&start("New task"), 42);
    let c = &out.machine.context;
    assert_eq!(c.task, "New task");
    assert_eq!(c.started_at, Some(42));
    assert_eq!((c.iteration_count, c.consecutive_failures), (0, 0));
    assert!(c.history.is_empty() && c.messages.is_empty() && c.last_error.is_none());
    assert_eq!(out.record.effects, [Effect::SelectAgent]);
}

#[test]
fn cancel_from_each_state() {
    let lines: Vec<String> = RESTING
        .into_iter()
        .map(|s| show(&at(s).transition(&Event::Cancel, T0).record))
        .collect();
    expect![[r#"
        idle --CANCEL--> cancelled  Finish(Cancelled, "cancelled")
        selecting --CANCEL--> cancelled  Finish(Cancelled, "cancelled")
        executing --CANCEL--> cancelled  AbortAgent, Finish(Cancelled, "cancelled")
        evaluating --CANCEL--> cancelled  Finish(Cancelled, "cancelled")
        complete --CANCEL--> complete  (not handled)  # CANCEL is not handled in complete: the task has finished
        failed --CANCEL--> failed  (not handled)  # CANCEL is not handled in failed: the task has finished
        cancelled --CANCEL--> cancelled  (not handled)  # CANCEL is not handled in cancelled: the task has finished"#]]
    .assert_eq(&lines.join("\n"));
}

#[test]
fn reset_from_each_state_keeps_only_the_config() {
    let config = config(7, 2);
    let mut lines = Vec::new();
    for state in RESTING {
        let m = at_with(state, config.clone());
        let out = m.transition(&Event::Reset, T0);
        assert_eq!(out.machine, Machine::new(config.clone()), "{state}");
        assert_eq!(out.machine.config(), config);
        lines.push(show(&out.record));
    }
    expect![[r#"
        idle --RESET--> idle
        selecting --RESET--> idle
        executing --RESET--> idle  AbortAgent
        evaluating --RESET--> idle
        complete --RESET--> idle
        failed --RESET--> idle
        cancelled --RESET--> idle"#]]
    .assert_eq(&lines.join("\n"));
}

#[test]
fn force_agent() {
    let lines: Vec<String> = RESTING
        .into_iter()
        .map(|s| {
            let m = at(s);
            let out = m.transition(&force("tester"), T0);
            if out.record.handled {
                assert_eq!(out.machine.context.current_agent.as_deref(), Some("tester"));
                assert_eq!(
                    out.machine.context.iteration_count,
                    m.context.iteration_count + 1
                );
                assert_eq!(out.machine.context.execution_started_at, Some(T0));
            }
            show(&out.record)
        })
        .collect();
    expect![[r#"
        idle --FORCE_AGENT--> idle  (not handled)  # FORCE_AGENT is not handled in idle
        selecting --FORCE_AGENT--> executing  RunAgent(tester)
        executing --FORCE_AGENT--> executing  AbortAgent, RunAgent(tester)
        evaluating --FORCE_AGENT--> executing  RunAgent(tester)
        complete --FORCE_AGENT--> complete  (not handled)  # FORCE_AGENT is not handled in complete: the task has finished
        failed --FORCE_AGENT--> failed  (not handled)  # FORCE_AGENT is not handled in failed: the task has finished
        cancelled --FORCE_AGENT--> cancelled  (not handled)  # FORCE_AGENT is not handled in cancelled: the task has finished"#]]
    .assert_eq(&lines.join("\n"));
}

#[test]
fn skip_step_moves_the_plan_on() {
    let mut r = run([start("t")]);
    r.send(Event::PlanUpdated {
        plan: plan(&["design", "build"]),
    });
    r = r.all([selected("coder"), Event::SkipStep]);
    let p = r.machine.context.plan.clone().unwrap();
    assert_eq!(p.steps[0].status, StepStatus::Skipped);
    assert_eq!(p.steps[1].status, StepStatus::Pending);
    assert_eq!((p.current_step_index, p.is_complete), (1, false));
    assert_eq!(
        r.machine.context.history.last().map(|e| e.result),
        Some(ExecutionResult::Cancelled)
    );
    r = r.all([selected("coder"), succeeded("built"), Event::SkipStep]);
    let p = r.machine.context.plan.clone().unwrap();
    assert_eq!(p.steps[1].status, StepStatus::Skipped);
    assert_eq!((p.current_step_index, p.is_complete), (2, true));
    // Past the end of the plan (or without one) a skip only moves on to a new selection.
    r.send(selected("coder"));
    r.send(Event::SkipStep);
    assert_eq!(r.machine.context.plan.as_ref().unwrap(), &p);
    r.check(expect![[r#"
        idle --START_TASK--> selecting  SelectAgent
        selecting --PLAN_UPDATED--> selecting
        selecting --AGENT_SELECTED--> executing  RunAgent(coder)
        executing --SKIP_STEP--> selecting  AbortAgent, SelectAgent
        selecting --AGENT_SELECTED--> executing  RunAgent(coder)
        executing --AGENT_COMPLETE [agentSucceeded]--> evaluating  Evaluate
        evaluating --SKIP_STEP--> selecting  SelectAgent
        selecting --AGENT_SELECTED--> executing  RunAgent(coder)
        executing --SKIP_STEP--> selecting  AbortAgent, SelectAgent"#]]);
    let out = at(State::Evaluating).transition(&Event::SkipStep, T0);
    assert_eq!(out.machine.state, State::Selecting);
    assert!(out.machine.context.plan.is_none());
}

#[test]
fn plan_updates_change_only_the_plan() {
    for state in [State::Selecting, State::Executing, State::Evaluating] {
        let m = at(state);
        let p = plan(&["one"]);
        let out = m.transition(&Event::PlanUpdated { plan: p.clone() }, T0);
        assert!(out.record.effects.is_empty());
        let mut expected = m.clone();
        expected.context.plan = Some(p);
        assert_eq!(out.machine, expected);
    }
}

#[test]
fn retry_after_a_failure_and_after_an_evaluation() {
    let r = run(path_to(State::Failed)).all([Event::Retry, selected("coder"), succeeded("ok")]);
    r.check(expect![[r#"
        idle --START_TASK--> selecting  SelectAgent
        selecting --AGENT_SELECTED--> executing  RunAgent(coder)
        executing --AGENT_ERROR--> error_handling -> failed  Finish(Failed, "unrecoverable error (tool_failure: tool_failure happened)")
        failed --RETRY--> selecting  SelectAgent
        selecting --AGENT_SELECTED--> executing  RunAgent(coder)
        executing --AGENT_COMPLETE [agentSucceeded]--> evaluating  Evaluate"#]]);
    // The arbiter still sees what went wrong.
    let c = &r.machine.context;
    assert_eq!(
        c.last_error,
        Some(error("tool_failure", "tool_failure happened"))
    );
    assert_eq!((c.consecutive_failures, c.total_failures), (0, 1));
    assert_eq!(c.history.len(), 2);
    assert_eq!(c.iteration_count, 2);

    // After the failure limit, a retry gets the full allowance again.
    let mut m = at_with(State::Executing, config(50, 2));
    m = m.transition(&agent_error("rate_limited"), T0).machine;
    m = m.transition(&selected("coder"), T0).machine;
    m = m.transition(&agent_error("rate_limited"), T0).machine;
    assert_eq!(m.state, State::Failed);
    m = m.transition(&Event::Retry, T0).machine;
    m = m.transition(&selected("coder"), T0).machine;
    let out = m.transition(&agent_error("rate_limited"), T0);
    assert_eq!(out.machine.state, State::Selecting);

    let out = at(State::Evaluating).transition(&Event::Retry, T0);
    assert_eq!(
        show(&out.record),
        "evaluating --RETRY--> selecting  SelectAgent"
    );
}

#[test]
fn unhandled_events_change_nothing() {
    let cases = [
        (State::Idle, selected("coder")),
        (State::Idle, Event::SkipStep),
        (State::Selecting, start("again")),
        (State::Selecting, succeeded("late")),
        (State::Executing, selected("late answer")),
        (State::Executing, decided(complete("late"))),
        (State::Executing, Event::Retry),
        (
            State::Evaluating,
            Event::AgentMessage {
                text: "late".to_owned(),
            },
        ),
        (State::Complete, Event::Retry),
        (State::Cancelled, start("again")),
    ];
    let lines: Vec<String> = cases
        .into_iter()
        .map(|(state, event)| {
            let m = at(state);
            let out = m.transition(&event, T0);
            assert_eq!(out.machine, m);
            assert!(!out.record.handled);
            show(&out.record)
        })
        .collect();
    expect![[r#"
        idle --AGENT_SELECTED--> idle  (not handled)  # AGENT_SELECTED is not handled in idle
        idle --SKIP_STEP--> idle  (not handled)  # SKIP_STEP is not handled in idle
        selecting --START_TASK--> selecting  (not handled)  # START_TASK is not handled in selecting
        selecting --AGENT_COMPLETE--> selecting  (not handled)  # AGENT_COMPLETE is not handled in selecting
        executing --AGENT_SELECTED--> executing  (not handled)  # AGENT_SELECTED is not handled in executing
        executing --ARBITER_DECISION--> executing  (not handled)  # ARBITER_DECISION is not handled in executing
        executing --RETRY--> executing  (not handled)  # RETRY is not handled in executing
        evaluating --AGENT_MESSAGE--> evaluating  (not handled)  # AGENT_MESSAGE is not handled in evaluating
        complete --RETRY--> complete  (not handled)  # RETRY is not handled in complete: the task has finished
        cancelled --START_TASK--> cancelled  (not handled)  # START_TASK is not handled in cancelled: the task has finished"#]]
    .assert_eq(&lines.join("\n"));
}

#[test]
fn a_machine_left_in_error_handling_only_resets() {
    let m = Machine {
        state: State::ErrorHandling,
        context: Context::default(),
    };
    let out = m.transition(&Event::Retry, T0);
    assert_eq!(out.machine, m);
    expect![[r#"error_handling --RETRY--> error_handling  (not handled)  # RETRY is not handled in error_handling: error_handling is transient and should never be at rest"#]]
        .assert_eq(&show(&out.record));
    assert_eq!(m.transition(&Event::Reset, T0).machine, Machine::default());
}

#[test]
fn new_machine_takes_the_config() {
    let m = Machine::new(config(7, 2));
    assert_eq!(m.state, State::Idle);
    assert_eq!((m.context.max_iterations, m.context.max_failures), (7, 2));
    assert_eq!(m.context.default_agent.as_deref(), Some("coder"));
    let d = Machine::default();
    assert_eq!(
        (
            d.context.max_iterations,
            d.context.max_failures,
            d.context.default_agent
        ),
        (50, 3, None)
    );
}

#[test]
fn json_shape() {
    let r = run([
        start("Add a login page"),
        Event::PlanUpdated {
            plan: plan(&["design"]),
        },
        selected("coder"),
        Event::AgentMessage {
            text: "On it.".to_owned(),
        },
        agent_error("rate_limited"),
    ]);
    expect![[r#"
        {
          "state": "selecting",
          "context": {
            "task": "Add a login page",
            "startedAt": 1700000001000,
            "currentAgent": "coder",
            "plan": {
              "steps": [
                {
                  "index": 0,
                  "description": "design",
                  "status": "pending",
                  "agentUsed": null
                }
              ],
              "currentStepIndex": 0,
              "isComplete": false
            },
            "history": [
              {
                "agent": "coder",
                "startedAt": 1700000003000,
                "completedAt": 1700000005000,
                "result": "failure",
                "output": null,
                "error": "rate_limited happened"
              }
            ],
            "messages": [
              "On it."
            ],
            "consecutiveFailures": 1,
            "totalFailures": 1,
            "lastError": {
              "code": "rate_limited",
              "message": "rate_limited happened"
            },
            "lastArbiterDecision": {
              "type": "SELECT_MODE",
              "mode": "coder",
              "reason": "best fit"
            },
            "maxIterations": 50,
            "iterationCount": 1,
            "maxFailures": 3,
            "defaultAgent": null,
            "executionStartedAt": 1700000003000
          }
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&r.machine).unwrap());
}

#[test]
fn json_round_trip_of_every_state() {
    for m in sample_machines() {
        let text = serde_json::to_string(&m).unwrap();
        let back: Machine = serde_json::from_str(&text).unwrap();
        assert_eq!(back, m);
    }
    // A restored machine goes on where it stopped.
    let m = at(State::Evaluating);
    let back: Machine = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
    assert_eq!(
        back.transition(&decided(proceed()), T0),
        m.transition(&decided(proceed()), T0)
    );
}

#[test]
fn json_reading_is_lenient_about_missing_fields_and_strict_about_error_handling() {
    let m: Machine =
        serde_json::from_value(json!({"state": "selecting", "context": {"task": "t"}})).unwrap();
    assert_eq!(m.state, State::Selecting);
    assert_eq!(m.context.task, "t");
    assert_eq!(m.context.max_iterations, DEFAULT_MAX_ITERATIONS);
    let err = serde_json::from_value::<Machine>(json!({"state": "error_handling"})).unwrap_err();
    assert_eq!(
        err.to_string(),
        "a machine cannot rest in the transient state error_handling"
    );
}

#[test]
fn events_in_json() {
    let lines: Vec<String> = sample_events()
        .into_iter()
        .map(|e| {
            let text = serde_json::to_string(&e).unwrap();
            let back: Event = serde_json::from_str(&text).unwrap();
            assert_eq!(back, e);
            text
        })
        .collect();
    expect![[r#"
        {"type":"START_TASK","task":"Another task"}
        {"type":"CANCEL"}
        {"type":"RESET"}
        {"type":"AGENT_SELECTED","agent":"reviewer","decision":{"type":"SELECT_MODE","mode":"reviewer","reason":"best fit"}}
        {"type":"AGENT_SELECTED","agent":"reviewer"}
        {"type":"AGENT_SELECTION_FAILED","error":{"code":"selection_failed","message":"no such agent"}}
        {"type":"AGENT_SELECTION_FAILED","error":{"code":"rate_limited","message":"slow down"}}
        {"type":"AGENT_MESSAGE","text":"hello"}
        {"type":"AGENT_TOOL_CALL","id":"t1","name":"Read"}
        {"type":"AGENT_TOOL_RESULT","id":"t1","isError":false}
        {"type":"AGENT_COMPLETE","success":true,"output":"done"}
        {"type":"AGENT_COMPLETE","success":false,"output":"could not finish"}
        {"type":"AGENT_ERROR","error":{"code":"rate_limited","message":"rate_limited happened"}}
        {"type":"AGENT_ERROR","error":{"code":"network_error","message":"network_error happened"}}
        {"type":"AGENT_ERROR","error":{"code":"tool_failure","message":"tool_failure happened"}}
        {"type":"ARBITER_DECISION","decision":{"type":"COMPLETE","summary":"all done"}}
        {"type":"ARBITER_DECISION","decision":{"type":"CONTINUE","reason":"more to do"}}
        {"type":"ARBITER_DECISION","decision":{"type":"RETRY","reason":"poor result"}}
        {"type":"ARBITER_DECISION","decision":{"type":"SELECT_MODE","mode":"tester","reason":"tests next"}}
        {"type":"ARBITER_ERROR","error":{"code":"arbiter_error","message":"bad json"}}
        {"type":"ARBITER_ERROR","error":{"code":"network_error","message":"reset by peer"}}
        {"type":"FORCE_AGENT","agent":"tester"}
        {"type":"SKIP_STEP"}
        {"type":"RETRY"}
        {"type":"PLAN_UPDATED","plan":{"steps":[{"index":0,"description":"design","status":"pending","agentUsed":null},{"index":1,"description":"build","status":"pending","agentUsed":null}],"currentStepIndex":0,"isComplete":false}}"#]]
    .assert_eq(&lines.join("\n"));
    // Names agree with the serialised tags.
    for e in sample_events() {
        let value = serde_json::to_value(&e).unwrap();
        assert_eq!(value["type"], e.name());
    }
}

#[test]
fn records_and_effects_in_json() {
    let out = at(State::Executing).transition(&Event::Cancel, T0);
    expect![[r#"{"event":"CANCEL","from":"executing","to":"cancelled","via":null,"guard":null,"effects":[{"type":"abort_agent"},{"type":"finish","outcome":"cancelled","summary":"cancelled"}],"handled":true,"note":null}"#]]
        .assert_eq(&serde_json::to_string(&out.record).unwrap());
    let run = Effect::RunAgent {
        agent: "coder".to_owned(),
    };
    let back: Effect = serde_json::from_value(serde_json::to_value(&run).unwrap()).unwrap();
    assert_eq!(back, run);
}

#[test]
fn state_names() {
    for state in State::ALL {
        assert_eq!(serde_json::to_value(state).unwrap(), state.name());
        assert_eq!(state.to_string(), state.name());
    }
}

#[test]
fn the_chart_says_where_each_override_applies() {
    use super::accepts;
    for state in ["selecting", "executing", "evaluating"] {
        assert!(accepts(state, "FORCE_AGENT"), "{state}");
    }
    assert!(!accepts("idle", "FORCE_AGENT"));
    assert!(accepts("executing", "SKIP_STEP") && accepts("evaluating", "SKIP_STEP"));
    assert!(!accepts("selecting", "SKIP_STEP"));
    assert!(accepts("evaluating", "RETRY") && accepts("failed", "RETRY"));
    assert!(!accepts("executing", "RETRY"));
    assert!(!accepts("nowhere", "RESET"));
}

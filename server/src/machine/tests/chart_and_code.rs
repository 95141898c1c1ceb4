//! The chart against the code, both ways, and the Mermaid chart.

use super::*;

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
fn the_chart_says_where_each_override_applies() {
    use super::super::accepts;
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

//! Whole runs: completion, the iteration limit, error handling and failures.

use super::*;

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

//! The context's bookkeeping, and the overrides (cancel, reset, force, skip, plan, retry).

use super::*;

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

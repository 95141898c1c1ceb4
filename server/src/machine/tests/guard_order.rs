//! Every guard, and the order they are tried in.

use super::*;

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

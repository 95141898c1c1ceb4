//! `rawko machine`: the orchestrator's state machine as a table and as a Mermaid chart.

use std::process::Command;

fn rawko(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rawko"))
        .args(args)
        .output()
        .expect("run rawko");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn mermaid_prints_a_state_chart_with_every_state() {
    let (code, text) = rawko(&["machine", "--mermaid"]);
    assert_eq!(code, 0);
    assert!(text.starts_with("stateDiagram-v2\n"), "{text}");
    assert!(text.contains("[*] --> idle"), "{text}");
    for line in [
        "idle --> selecting : START_TASK",
        "selecting --> executing : AGENT_SELECTED",
        "evaluating --> complete : ARBITER_DECISION [isComplete]",
        "error_handling --> failed",
        "error_handling --> selecting",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    for state in ["complete", "failed", "cancelled"] {
        assert!(
            text.contains(&format!("{state} --> [*]")),
            "{state} is final:\n{text}"
        );
    }
}

#[test]
fn the_table_names_the_guards() {
    let (code, text) = rawko(&["machine"]);
    assert_eq!(code, 0);
    for guard in [
        "isComplete",
        "maxIterationsReached",
        "shouldSelectMode",
        "shouldRetry",
        "maxFailuresReached",
        "isRecoverableError",
    ] {
        assert!(text.contains(guard), "missing {guard} in:\n{text}");
    }
}

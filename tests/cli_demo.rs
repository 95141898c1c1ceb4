//! `rawko demo` run as a user would: the real binary, a scripted agent, the terminal output.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn demo(dir: &Path, extra: &[&str], stdin: &str) -> Output {
    let home = dir.join("home");
    let project = dir.join("project");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rawko"))
        .args(["demo", "--tick-ms", "10", "--dir"])
        .arg(&project)
        .args(extra)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("PI_CODING_AGENT_DIR", home.join(".pi"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn rawko demo");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("write stdin");
    child.wait_with_output().expect("wait for rawko demo")
}

fn text(output: &Output) -> String {
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Asserts the needles appear in this order.
fn assert_in_order(haystack: &str, needles: &[&str]) {
    let mut from = 0;
    for needle in needles {
        match haystack[from..].find(needle) {
            Some(i) => from += i + needle.len(),
            None => panic!("{needle:?} missing (or out of order) in:\n{haystack}"),
        }
    }
}

#[test]
fn demo_runs_the_feature_workflow_to_completion() {
    let tmp = tempfile::tempdir().unwrap();
    let output = demo(tmp.path(), &[], "");
    let shown = text(&output);
    assert!(output.status.success(), "{shown}");
    assert_in_order(
        &shown,
        &[
            "▶ Feature > 📋 Plan [1/4]",
            "🔄 phase context injected",
            "🤖 Let me read the project first.",
            "🔧 Read README.md",
            "🔒 Write is blocked in the Plan phase",
            "auto-answered: deny",
            "✗ [workflow] The tool \"Write\" is blocked during the Plan phase.",
            "▶ Feature > 🛠️ Implement [2/4]",
            "🔧 Edit greet.sh",
            "▶ Feature > 🧪 Test [3/4]",
            "HELLO, WORLD!",
            "auto-continuing in 3s",
            "auto-continuing in 2s",
            "auto-continuing in 1s",
            "📣 reminder sent: ⚠️ The Feature is still active. Current phase: 🧪 Test.",
            "▶ Feature > Review [4/4] > 🔍 Static Analysis [1/2]",
            "▶ Feature > Review [4/4] > 👀 Peer Review [2/2]",
            "✅ **Feature Complete**",
            "**Phases completed:** 5",
        ],
    );
    let project = tmp.path().join("project");
    assert!(
        !project.join("PLAN.md").exists(),
        "the denied Write must not run"
    );
    let script = std::fs::read_to_string(project.join("greet.sh")).unwrap();
    assert!(
        script.contains("--shout"),
        "the Edit must have run:\n{script}"
    );
}

#[test]
fn interactive_demo_asks_and_an_allowed_write_runs() {
    let tmp = tempfile::tempdir().unwrap();
    // A wrong answer is asked again; then "a" allows once.
    let output = demo(tmp.path(), &["--interactive"], "maybe\na\n");
    let shown = text(&output);
    assert!(output.status.success(), "{shown}");
    assert_eq!(shown.matches("[a]llow once").count(), 2, "{shown}");
    assert_in_order(&shown, &["🔧 Write PLAN.md", "↳ wrote", "Feature Complete"]);
    assert!(tmp.path().join("project/PLAN.md").exists());
}

#[test]
fn interactive_demo_with_no_answer_does_not_run_the_call() {
    let tmp = tempfile::tempdir().unwrap();
    let output = demo(tmp.path(), &["--interactive"], "");
    let shown = text(&output);
    assert!(output.status.success(), "{shown}");
    assert!(!tmp.path().join("project/PLAN.md").exists(), "{shown}");
}

#[test]
fn demo_shows_the_tester_taking_over_from_the_developer() {
    let tmp = tempfile::tempdir().unwrap();
    let output = demo(tmp.path(), &[], "");
    let shown = text(&output);
    assert!(output.status.success(), "{shown}");
    // The developer stops early in the Test phase, which is the tester's: after the reminder the
    // tester takes over, once.
    assert_in_order(
        &shown,
        &[
            "▶ Feature > 🧪 Test [3/4]",
            "📣 reminder sent",
            "  ── handoff: developer → tester ──\n",
            "🤖 Right, the workflow is not done yet: on to the review.",
            "▶ Feature > Review [4/4] > 🔍 Static Analysis [1/2]",
            "✅ **Feature Complete**",
        ],
    );
    assert_eq!(shown.matches("handoff").count(), 1, "{shown}");
}

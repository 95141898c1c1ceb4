//! The phase gate over workflows loaded from disk: rule patterns in `tools:` lists compile at
//! load, a pattern that does not compile is a load error on the `tools:` line, and the loaded
//! phases gate Bash commands by what they do to files.

use std::path::Path;

use rawko::workflow::{
    gate, load, LoadOutcome, PhaseEntry, RootKind, Severity, ToolPolicy, WorkflowRoot,
    WorkflowState,
};
use serde_json::json;
use tempfile::TempDir;

fn write(dir: &Path, rel: &str, content: &str) {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, content).expect("write");
}

/// One workflow `wf` whose single phase has the given `tools:` block (YAML lines).
fn load_phase(tools: &str) -> (TempDir, LoadOutcome) {
    let dir = TempDir::new().expect("tempdir");
    write(
        dir.path(),
        "wf/workflow.yaml",
        "name: Flow\ncommandName: flow\ninitialMessage: go\nphases:\n  - plan.md\n",
    );
    write(
        dir.path(),
        "wf/plan.md",
        &format!("---\nid: plan\nname: Plan\nemoji: 📋\n{tools}---\nPlan it.\n"),
    );
    let roots = [WorkflowRoot {
        kind: RootKind::Project,
        path: dir.path().to_owned(),
    }];
    let outcome = load(&roots);
    (dir, outcome)
}

#[test]
fn rule_patterns_load_and_gate() {
    let (_dir, outcome) = load_phase(
        "tools:\n  whitelist:\n    - Read\n    - Bash\n    - \"Bash(git commit*)\"\n    - Edit(docs/**)\n    - Write(*.md)\n",
    );
    assert!(outcome.diagnostics.is_empty(), "{:?}", outcome.diagnostics);
    let set = outcome.workflows;
    let def = set.get("wf").expect("loaded");
    let PhaseEntry::Phase(phase) = &def.phases[0] else {
        panic!("a phase")
    };
    let Some(ToolPolicy::Whitelist(rules)) = &phase.tools else {
        panic!("a whitelist")
    };
    let shown: Vec<&str> = rules.iter().map(|r| r.source()).collect();
    assert_eq!(
        shown,
        [
            "Read",
            "Bash",
            "Bash(git commit*)",
            "Edit(docs/**)",
            "Write(*.md)"
        ]
    );

    let state = WorkflowState::start(&set, "wf", "Ship it", "task-1", 0).expect("start");
    let run = |tool: &str, input: serde_json::Value| {
        gate::check(Some(&state), &set, tool, &input).is_allowed()
    };
    assert!(run("Bash", json!({"command": "git status"})));
    assert!(run("Bash", json!({"command": "git commit -m x"})));
    assert!(!run("Bash", json!({"command": "rm -rf x"})));
    assert!(!run("Bash", json!({"command": "cat > x <<EOF\nhi\nEOF"})));
    assert!(run("Edit", json!({"path": "docs/guide.md"})));
    assert!(!run("Edit", json!({"path": "src/main.rs"})));
    assert!(run("Write", json!({"file_path": "notes/plan.md"})));
    assert!(!run("Write", json!({"file_path": "src/main.rs"})));
    assert!(run("workflow_step", json!({"action": "next"})));
}

#[test]
fn an_invalid_rule_is_a_load_error_on_the_tools_line() {
    let cases = [
        (
            "tools:\n  whitelist: [Read, \"Edit(src/[)\"]\n",
            "invalid tool rule \"Edit(src/[)\": unclosed character class; missing ']'",
        ),
        (
            "tools:\n  blacklist: [\"Bash(rm *\"]\n",
            "invalid tool rule \"Bash(rm *\": it must end with `)` after the pattern",
        ),
        (
            "tools:\n  whitelist: [\"Bash()\"]\n",
            "invalid tool rule \"Bash()\": the pattern is empty; write `Bash` alone for every use of the tool",
        ),
    ];
    for (tools, message) in cases {
        let (dir, outcome) = load_phase(tools);
        assert!(
            outcome.workflows.get("wf").is_none(),
            "{tools:?} must not load"
        );
        let errors: Vec<_> = outcome
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .collect();
        assert!(!errors.is_empty(), "{tools:?}: no error");
        let d = errors[0];
        assert_eq!(d.message, message);
        assert_eq!(d.path, dir.path().join("wf/plan.md"));
        assert_eq!(d.line, Some(5), "the tools: line");
    }
}

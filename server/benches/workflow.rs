//! Benchmarks of the workflow core: the gate decision (plain, with a path rule, and for Bash
//! commands the gate classifies), shell classification alone, the context prompt of a 3-level
//! nested workflow, and loading 50 workflows of 10 phases from disk.
//!
//! Run: `cargo bench -p rawko --bench workflow`. Targets (issue 32, docs/performance.md): the
//! allowed decision ≤ 60 ns, the blocked one ≤ 200 ns, the prompt ≤ 1 µs, the load ≤ 7 ms.

use std::fs;
use std::hint::black_box;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion};
use rawko::workflow::{gate, load, shell, RootKind, WorkflowRoot, WorkflowSet, WorkflowState};
use serde_json::json;

fn write(root: &Path, rel: &str, content: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, content).expect("write");
}

fn phase_md(id: &str, tools: &str) -> String {
    format!(
        "---\nid: {id}\nname: Phase {id}\nemoji: 🔧\n{tools}availableProfiles: [planner, coder]\n---\n\
         Do the work of {id} for {{description}} (task {{taskId}}), then call {{toolName}}.\n\
         This is step {{globalStepCount}} on {{breadcrumbPath}}; next is {{nextPhaseName}}.\n"
    )
}

/// Release (4 entries) > Review (3 entries) > Checks (3 phases): a 3-level nested workflow.
fn nested_workspace(root: &Path) {
    write(
        root,
        "release/workflow.yaml",
        "name: Release Pipeline\ncommandName: release\ninitialMessage: go\nphases:\n  - build.md\n  - subworkflow: review\n  - ship.md\n  - notes.md\n",
    );
    for id in ["build", "ship", "notes"] {
        write(root, &format!("release/{id}.md"), &phase_md(id, ""));
    }
    write(
        root,
        "review/workflow.yaml",
        "name: Code Review\nshow: workflows\nphases:\n  - read.md\n  - subworkflow: checks\n  - sign.md\n",
    );
    for id in ["read", "sign"] {
        write(root, &format!("review/{id}.md"), &phase_md(id, ""));
    }
    write(
        root,
        "checks/workflow.yaml",
        "name: Checks\nshow: workflows\nphases:\n  - lint.md\n  - types.md\n  - audit.md\n",
    );
    for id in ["lint", "types", "audit"] {
        write(
            root,
            &format!("checks/{id}.md"),
            &phase_md(
                id,
                "tools:\n  whitelist: [Read, Grep, Glob, Bash, \"Bash(git commit*)\", \"Edit(docs/**)\"]\n",
            ),
        );
    }
}

/// 50 workflows of 10 phases each.
fn fifty_workspace(root: &Path) {
    for w in 0..50 {
        let mut yaml = format!("name: Workflow {w}\ncommandName: wf{w}\ninitialMessage: start {{description}}\nphases:\n");
        for p in 0..10 {
            yaml.push_str(&format!("  - p{p}.md\n"));
            let tools = if p % 2 == 0 {
                "tools:\n  blacklist: [Write, Edit]\n"
            } else {
                ""
            };
            write(
                root,
                &format!("wf{w}/p{p}.md"),
                &phase_md(&format!("p{p}"), tools),
            );
        }
        write(root, &format!("wf{w}/workflow.yaml"), &yaml);
    }
}

fn roots(path: &Path) -> Vec<WorkflowRoot> {
    vec![WorkflowRoot {
        kind: RootKind::Project,
        path: path.to_owned(),
    }]
}

fn nested_state(set: &WorkflowSet) -> WorkflowState {
    let mut state =
        WorkflowState::start(set, "release", "Cut the 2.0 release", "task-1", 0).expect("start");
    // build → read → lint → types: three levels deep, on a whitelisted phase.
    for _ in 0..3 {
        state = state.advance(set).expect("advance").state;
    }
    assert_eq!(state.current_path.len(), 3);
    state
}

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    nested_workspace(dir.path());
    let outcome = load(&roots(dir.path()));
    assert!(outcome.diagnostics.is_empty(), "{:?}", outcome.diagnostics);
    let set = outcome.workflows;
    let state = nested_state(&set);

    let gate = |tool: &'static str, input: serde_json::Value| {
        let (state, set) = (&state, &set);
        move || {
            gate::check(
                Some(black_box(state)),
                black_box(set),
                black_box(tool),
                black_box(&input),
            )
        }
    };
    let cases = [
        (
            "gate: allowed (whitelist, 3 levels deep)",
            gate("grep", json!({"pattern": "TODO", "path": "src"})),
            true,
        ),
        (
            "gate: blocked (renders the reason)",
            gate("Write", json!({"path": "notes.md", "content": "x"})),
            false,
        ),
        (
            "gate: Edit allowed by a path rule (docs/**)",
            gate("Edit", json!({"path": "./docs/guide/intro.md"})),
            true,
        ),
        (
            "gate: Bash read-only command (classified)",
            gate(
                "Bash",
                json!({"command": "git status && cargo test -p rawko 2>&1 | tail -20"}),
            ),
            true,
        ),
        (
            "gate: Bash writing command (classified, blocked)",
            gate("Bash", json!({"command": "sed -i s/a/b/ src/lib.rs"})),
            false,
        ),
        (
            "gate: Bash writing command allowed by Bash(git commit*)",
            gate("Bash", json!({"command": "git commit -am 'wip'"})),
            true,
        ),
    ];
    for (name, mut decide, allowed) in cases {
        assert_eq!(decide().is_allowed(), allowed, "{name}");
        c.bench_function(name, |b| b.iter(&mut decide));
    }
    c.bench_function("shell::classify: compound command", |b| {
        b.iter(|| {
            shell::classify(black_box(
                "cd server && grep -rn 'TODO' src | sort | head -20; echo \"$(git rev-parse HEAD)\" > /dev/null",
            ))
        })
    });
    c.bench_function("context prompt: 3-level nested workflow", |b| {
        b.iter(|| {
            let active = black_box(&state).resolve(black_box(&set)).expect("active");
            active.context_prompt(&set)
        })
    });

    let fifty = tempfile::tempdir().expect("tempdir");
    fifty_workspace(fifty.path());
    let fifty_roots = roots(fifty.path());
    let loaded = load(&fifty_roots);
    assert_eq!(loaded.workflows.len(), 50);
    assert!(loaded.diagnostics.is_empty(), "{:?}", loaded.diagnostics);
    let mut group = c.benchmark_group("load");
    group.sample_size(30);
    group.bench_function("50 workflows of 10 phases", |b| {
        b.iter(|| load(black_box(&fifty_roots)))
    });
    group.finish();
}

criterion_group!(workflow, benches);
criterion_main!(workflow);

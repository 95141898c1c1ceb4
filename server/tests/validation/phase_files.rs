//! Phase files.

use super::*;

// ---------------------------------------------------------------------------------------------
// Phase files
// ---------------------------------------------------------------------------------------------

/// One workflow `wf` with one phase `p.md` whose content is `md`.
struct PhaseCase {
    name: &'static str,
    md: &'static str,
    expect: Expect<'static>,
}

fn phase_cases() -> Vec<PhaseCase> {
    vec![
        PhaseCase {
            name: "no frontmatter",
            md: "Just do the work.\n",
            expect: error(P, Some(1), "a phase file must start with YAML frontmatter"),
        },
        PhaseCase {
            name: "unclosed frontmatter",
            md: "---\nid: p\nname: P\nemoji: x\nDo the work.\n",
            expect: error(P, Some(1), "the frontmatter is not closed"),
        },
        PhaseCase {
            name: "malformed YAML in the frontmatter: line counted from the file's top",
            md: "---\nid: p\nname: P\nemoji: a: b\n---\nDo the work.\n",
            expect: error(P, Some(4), "invalid YAML: mapping values are not allowed"),
        },
        PhaseCase {
            name: "frontmatter that is a list",
            md: "---\n- id\n- name\n---\nDo the work.\n",
            expect: error(P, Some(2), "the frontmatter must be a mapping of fields, found a list"),
        },
        PhaseCase {
            name: "missing id",
            md: "---\nname: P\nemoji: x\n---\nDo the work.\n",
            expect: error(P, Some(2), "phase id is required in the frontmatter"),
        },
        PhaseCase {
            name: "missing name",
            md: "---\nid: p\nemoji: x\n---\nDo the work.\n",
            expect: error(P, Some(2), "phase name is required in the frontmatter"),
        },
        PhaseCase {
            name: "missing emoji",
            md: "---\nid: p\nname: P\n---\nDo the work.\n",
            expect: error(P, Some(2), "phase emoji is required in the frontmatter"),
        },
        PhaseCase {
            name: "empty name",
            md: "---\nid: p\nemoji: x\nname: \"\"\n---\nDo the work.\n",
            expect: error(P, Some(4), "phase name is empty"),
        },
        PhaseCase {
            name: "id that is a list",
            md: "---\nname: P\nemoji: x\nid: [a, b]\n---\nDo the work.\n",
            expect: error(P, Some(4), "phase id must be text, found a list"),
        },
        PhaseCase {
            name: "empty body",
            md: "---\nid: p\nname: P\nemoji: x\n---\n\n",
            expect: error(P, Some(6), "phase has no instructions"),
        },
        PhaseCase {
            name: "both whitelist and blacklist",
            md: "---\nid: p\nname: P\nemoji: x\ntools:\n  whitelist: [Read]\n  blacklist: [Write]\n---\nDo the work.\n",
            expect: error(P, Some(5), "tools has both whitelist and blacklist; a phase may use only one"),
        },
        PhaseCase {
            name: "whitelist that is not a list",
            md: "---\nid: p\nname: P\n\nemoji: x\ntools:\n  whitelist: Read\n---\nDo the work.\n",
            expect: error(P, Some(6), "tools.whitelist must be a list of tool names, found a string"),
        },
        PhaseCase {
            name: "blacklist with a nested list item",
            md: "---\nid: p\nname: P\nemoji: x\ntools:\n  blacklist:\n    - Write\n    - [Bash]\n---\nDo the work.\n",
            expect: error(P, Some(5), "tools.blacklist must list tool names, found a list"),
        },
        PhaseCase {
            name: "tools that is a list",
            md: "---\nid: p\nname: P\nemoji: x\ntools: [Read]\n---\nDo the work.\n",
            expect: error(P, Some(5), "tools must be a mapping with whitelist or blacklist, found a list"),
        },
        PhaseCase {
            name: "agent that is a mapping",
            md: "---\nid: p\nname: P\nemoji: x\nagent:\n  name: a\n---\nDo the work.\n",
            expect: error(P, Some(5), "agent must be an agent name, found a mapping"),
        },
    ]
}

#[test]
fn phase_file_rules() {
    for case in phase_cases() {
        let fx = Fixture::new();
        fx.write(WF, workflow_yaml("W", "wf", &["p.md"]));
        fx.write(P, case.md);
        let outcome = fx.load();
        in_case(case.name, || {
            check(&fx, &outcome, "wf", &case.expect);
            assert_skipped(&outcome, "wf");
        });
    }
}

#[test]
fn tools_without_either_list_is_a_warning() {
    let fx = Fixture::new();
    fx.write(WF, workflow_yaml("W", "wf", &["p.md"]));
    fx.write(
        P,
        "---\nid: p\nname: P\nemoji: x\ntools: {}\n---\nDo the work.\n",
    );
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &warning(P, Some(5), "tools has neither whitelist nor blacklist"),
    );
    assert_loaded(&outcome, "wf");
}

#[test]
fn a_tool_name_no_agent_has_is_a_warning() {
    let fx = Fixture::new();
    fx.write(WF, workflow_yaml("W", "wf", &["p.md"]));
    fx.write(
        P,
        "---\nid: p\nname: P\nemoji: x\ntools:\n  blacklist: [Write, edit, MultiEdit, NotebookEdit, Grpe, mcp__github__create_pr, \"Bash(rm *)\"]\n---\nDo the work.\n",
    );
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &warning(
            P,
            Some(5),
            "tools.blacklist names \"Grpe\", which is no tool rawko knows (did you mean Grep?)",
        ),
    );
    let unknown: Vec<_> = outcome
        .diagnostics
        .iter()
        .filter(|d| d.message.contains("no tool rawko knows"))
        .collect();
    assert_eq!(unknown.len(), 1, "{}", dump(&outcome));
    assert_loaded(&outcome, "wf");
}

#[test]
fn frontmatter_may_close_with_dots_and_start_after_a_bom() {
    let fx = Fixture::new();
    fx.write(WF, workflow_yaml("W", "wf", &["p.md"]));
    fx.write(
        P,
        "\u{feff}---\r\nid: p\r\nname: P\r\nemoji: x\r\n...\r\nDo it.\r\n",
    );
    let outcome = fx.load();
    assert!(outcome.diagnostics.is_empty(), "{}", dump(&outcome));
    let def = outcome.workflows.get("wf").expect("loaded");
    assert_eq!(
        def.phases[0].as_phase().map(|p| &p.instructions[..]),
        Some("Do it.")
    );
}

#[test]
fn duplicate_phase_ids_across_two_files() {
    let fx = Fixture::new();
    fx.write(WF, workflow_yaml("W", "wf", &["first.md", "second.md"]));
    fx.write("wf/first.md", phase("same"));
    fx.write("wf/second.md", phase("same"));
    let outcome = fx.load();
    let d = the_diagnostic(&outcome, "duplicate phase id \"same\"");
    assert_eq!(d.severity, Severity::Error);
    // The second file is the one at fault; the message names the first.
    assert_eq!(d.path, fx.path("wf/second.md"));
    assert!(
        d.message
            .contains(&fx.path("wf/first.md").display().to_string()),
        "{d}"
    );
    assert_eq!(d.workflow.as_deref(), Some("wf"));
    assert_eq!(errors(&outcome), 1, "{}", dump(&outcome));
    assert_skipped(&outcome, "wf");
}

#[test]
fn every_problem_of_a_workflow_is_reported_not_only_the_first() {
    let fx = Fixture::new();
    fx.write(
        WF,
        "name: W\ncommandName: bad command\ninitialMessage: hi\nphases:\n  - a.md\n  - gone.md\n",
    );
    fx.write("wf/a.md", "---\nid: a\nname: A\n---\nDo.\n");
    let outcome = fx.load();
    the_diagnostic(&outcome, "commandName \"bad command\"");
    the_diagnostic(&outcome, "phase emoji is required");
    the_diagnostic(&outcome, "phase file \"gone.md\" not found");
    assert_eq!(errors(&outcome), 3, "{}", dump(&outcome));
    assert_skipped(&outcome, "wf");
}

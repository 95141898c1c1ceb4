//! The rules of `workflow.yaml`.

use super::*;

/// One workflow `wf` whose `workflow.yaml` is `yaml`, next to a valid phase file `a.md`.
struct YamlCase {
    name: &'static str,
    yaml: &'static str,
    expect: Expect<'static>,
    loads: bool,
}

fn yaml_cases() -> Vec<YamlCase> {
    vec![
        YamlCase {
            name: "malformed YAML: the syntax error's line",
            yaml: "name: Broken\ncommandName: broken\ninitialMessage: hi: there\nphases:\n  - a.md\n",
            expect: error(WF, Some(3), "invalid YAML: mapping values are not allowed"),
            loads: false,
        },
        YamlCase {
            name: "workflow.yaml is a list",
            yaml: "- a.md\n- b.md\n",
            expect: error(WF, None, "must be a mapping of fields (name, commandName, phases, …), found a list"),
            loads: false,
        },
        YamlCase {
            name: "workflow.yaml is a scalar",
            yaml: "just some words\n",
            expect: error(WF, None, "must be a mapping of fields (name, commandName, phases, …), found a string"),
            loads: false,
        },
        YamlCase {
            name: "empty workflow.yaml",
            yaml: "",
            expect: error(WF, None, "must be a mapping of fields (name, commandName, phases, …), found nothing"),
            loads: false,
        },
        YamlCase {
            name: "missing name",
            yaml: "commandName: wf\ninitialMessage: hi\nphases:\n  - a.md\n",
            expect: error(WF, None, "name is required"),
            loads: false,
        },
        YamlCase {
            name: "empty name",
            yaml: "commandName: wf\nname: \"  \"\ninitialMessage: hi\nphases:\n  - a.md\n",
            expect: error(WF, Some(2), "name is empty"),
            loads: false,
        },
        YamlCase {
            name: "name that is a mapping",
            yaml: "commandName: wf\ninitialMessage: hi\nname:\n  first: A\nphases:\n  - a.md\n",
            expect: error(WF, Some(3), "name must be text, found a mapping"),
            loads: false,
        },
        YamlCase {
            name: "missing commandName in a user workflow",
            yaml: "name: W\ninitialMessage: hi\nphases:\n  - a.md\n",
            expect: error(WF, None, "commandName is required for a workflow users start (or set `show: workflows`"),
            loads: false,
        },
        YamlCase {
            name: "empty commandName",
            yaml: "name: W\ninitialMessage: hi\ncommandName: \"\"\nphases:\n  - a.md\n",
            expect: error(WF, Some(3), "commandName is empty"),
            loads: false,
        },
        YamlCase {
            name: "commandName with a space",
            yaml: "name: W\ninitialMessage: hi\ncommandName: my command\nphases:\n  - a.md\n",
            expect: error(WF, Some(3), "commandName \"my command\" may only contain letters, digits, `_` and `-`"),
            loads: false,
        },
        YamlCase {
            name: "commandName with a slash",
            yaml: "# comment\nname: W\n\ncommandName: team/feature\ninitialMessage: hi\nphases:\n  - a.md\n",
            expect: error(WF, Some(4), "commandName \"team/feature\" may only contain"),
            loads: false,
        },
        YamlCase {
            name: "missing initialMessage",
            yaml: "name: W\ncommandName: wf\nphases:\n  - a.md\n",
            expect: error(WF, None, "initialMessage is required for a workflow users start"),
            loads: false,
        },
        YamlCase {
            name: "empty initialMessage",
            yaml: "name: W\ncommandName: wf\ninitialMessage: \"\"\nphases:\n  - a.md\n",
            expect: error(WF, Some(3), "initialMessage is empty"),
            loads: false,
        },
        YamlCase {
            name: "unknown show value: a warning, and the workflow loads",
            yaml: "name: W\ncommandName: wf\ninitialMessage: hi\nshow: everyone\nphases:\n  - a.md\n",
            expect: warning(WF, Some(4), "show must be \"user\" or \"workflows\", found \"everyone\"; treated as \"user\""),
            loads: true,
        },
        YamlCase {
            name: "phases missing",
            yaml: "name: W\ncommandName: wf\ninitialMessage: hi\n",
            expect: error(WF, None, "phases is required"),
            loads: false,
        },
        YamlCase {
            name: "phases with no value",
            yaml: "name: W\ncommandName: wf\ninitialMessage: hi\nphases:\n",
            expect: error(WF, Some(4), "phases is required"),
            loads: false,
        },
        YamlCase {
            name: "phases empty",
            yaml: "name: W\ncommandName: wf\ninitialMessage: hi\nphases: []\n",
            expect: error(WF, Some(4), "phases is empty: a workflow needs at least one phase"),
            loads: false,
        },
        YamlCase {
            name: "phases not a list",
            yaml: "name: W\ncommandName: wf\ninitialMessage: hi\nphases: a.md\n",
            expect: error(WF, Some(4), "phases must be a list, found a string"),
            loads: false,
        },
        YamlCase {
            name: "phase entry that is a number",
            yaml: "name: W\ncommandName: wf\ninitialMessage: hi\nphases:\n  - a.md\n  - 42\n",
            expect: error(WF, Some(6), "phases[1]: invalid phase entry: expected a file name or {subworkflow: KEY}, found a number"),
            loads: false,
        },
        YamlCase {
            name: "phase entry that is a mapping without subworkflow",
            yaml: "name: W\ncommandName: wf\ninitialMessage: hi\nphases:\n  - file: a.md\n",
            expect: error(WF, Some(5), "phases[0]: invalid phase entry"),
            loads: false,
        },
        YamlCase {
            name: "subworkflow with an empty key",
            yaml: "name: W\ncommandName: wf\ninitialMessage: hi\nphases:\n  - a.md\n  - subworkflow: \"\"\n",
            expect: error(WF, Some(6), "phases[1]: subworkflow needs a workflow key"),
            loads: false,
        },
        YamlCase {
            name: "missing phase file: the entry's line",
            yaml: "name: W\ncommandName: wf\ninitialMessage: hi\nphases:\n  - a.md\n  - missing.md\n",
            expect: error(WF, Some(6), "phase file \"missing.md\" not found"),
            loads: false,
        },
        YamlCase {
            name: "loopable: \"yes\"",
            yaml: "name: W\ncommandName: wf\ninitialMessage: hi\nloopable: \"yes\"\nphases:\n  - a.md\n",
            expect: error(WF, Some(4), "loopable must be true or false, found a string"),
            loads: false,
        },
        YamlCase {
            name: "sessionNameMaxLength of zero: a warning, the default is used",
            yaml: "name: W\ncommandName: wf\ninitialMessage: hi\nsessionNameMaxLength: 0\nphases:\n  - a.md\n",
            expect: warning(WF, Some(4), "sessionNameMaxLength must be a positive whole number, found 0; using 50"),
            loads: true,
        },
        YamlCase {
            name: "an optional text field of the wrong type: a warning",
            yaml: "name: W\ncommandName: wf\ninitialMessage: hi\nphases:\n  - a.md\nroleInstruction: [a, b]\n",
            expect: warning(WF, Some(6), "roleInstruction must be text, found a list; ignored"),
            loads: true,
        },
    ]
}

#[test]
fn workflow_yaml_rules() {
    for case in yaml_cases() {
        let fx = Fixture::new();
        fx.write(WF, case.yaml);
        fx.write("wf/a.md", phase("a"));
        let outcome = fx.load();
        in_case(case.name, || {
            check(&fx, &outcome, "wf", &case.expect);
            if case.loads {
                assert_loaded(&outcome, "wf");
            } else {
                assert_skipped(&outcome, "wf");
            }
        });
    }
}

#[test]
fn yaml_syntax_error_carries_its_column() {
    let fx = Fixture::new();
    fx.write(
        WF,
        "name: Broken\ncommandName: broken\ninitialMessage: hi: there\nphases:\n  - a.md\n",
    );
    fx.write("wf/a.md", phase("a"));
    let outcome = fx.load();
    let d = the_diagnostic(&outcome, "invalid YAML");
    // `initialMessage: hi: there` — the second `:` is at column 19.
    assert_eq!((d.line, d.column), (Some(3), Some(19)), "{d}");
    assert!(
        !d.message.contains(" at line "),
        "the location is carried separately, not repeated in the message: {d}"
    );
    assert!(
        d.to_string().ends_with("wf/workflow.yaml:3:19: error: invalid YAML: mapping values are not allowed in this context"),
        "{d}"
    );
}

#[test]
fn show_workflows_makes_command_name_and_initial_message_optional() {
    let fx = Fixture::new();
    fx.write(WF, "name: Review\nshow: workflows\nphases:\n  - a.md\n");
    fx.write("wf/a.md", phase("a"));
    let outcome = fx.load();
    assert!(outcome.diagnostics.is_empty(), "{}", dump(&outcome));
    let def = outcome.workflows.get("wf").expect("loaded");
    assert_eq!(def.show, Show::Workflows);
    assert_eq!(def.command_name, "");
    assert_eq!(def.initial_message, "");
    // A subworkflow-only workflow has no command to find it by.
    assert!(outcome.workflows.by_command_name("").is_none());
}

#[test]
fn a_valid_workflow_loads_with_every_field() {
    let fx = Fixture::new();
    fx.write(
        WF,
        "name: Feature\ncommandName: feat-1\ninitialMessage: \"Do {description}\"\nloopable: false\n\
         sessionNamePrefix: \"F: \"\nsessionNameMaxLength: 20\nphases:\n  - plan.md\n  - build.md\n",
    );
    fx.write(
        "wf/plan.md",
        "---\nid: plan\nname: Plan\nemoji: 📋\ntools:\n  whitelist: [Read, Grep]\nagent: planner\n\
         availableProfiles: [a, b]\nunknownKey: ignored\n---\n\n  Plan it.  \n\n",
    );
    fx.write(
        "wf/build.md",
        "---\nid: build\nname: Build\nemoji: 🛠️\ntools:\n  blacklist: [WebFetch]\n---\nBuild it.\n",
    );
    let outcome = fx.load();
    assert!(outcome.diagnostics.is_empty(), "{}", dump(&outcome));
    assert_eq!(outcome.roots_found.len(), 1);
    let def = outcome.workflows.get("wf").expect("loaded");
    assert_eq!(def.name, "Feature");
    assert_eq!(def.command_name, "feat-1");
    assert!(!def.loopable);
    assert_eq!(def.session_name_prefix, "F: ");
    assert_eq!(def.session_name_max_length, 20);
    assert_eq!(def.root.kind, RootKind::Project);
    let phases: Vec<_> = def.phases.iter().filter_map(PhaseEntry::as_phase).collect();
    assert_eq!(phases.len(), 2);
    assert_eq!(phases[0].id, "plan");
    assert_eq!(phases[0].instructions, "Plan it.");
    assert_eq!(phases[0].agent.as_deref(), Some("planner"));
    assert_eq!(phases[0].available_profiles, ["a", "b"]);
    assert_eq!(
        phases[0].tools,
        Some(ToolPolicy::Whitelist(vec!["Read".into(), "Grep".into()]))
    );
    assert_eq!(
        phases[1].tools,
        Some(ToolPolicy::Blacklist(vec!["WebFetch".into()]))
    );
    assert_eq!(phases[1].file, fx.path("wf/build.md"));
    assert_eq!(
        outcome
            .workflows
            .by_command_name("feat-1")
            .map(|d| &d.key[..]),
        Some("wf")
    );
}

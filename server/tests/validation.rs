//! The workflow loader's validation rules, one fixture per rule.
//!
//! Every test builds workflow directories in a temporary directory (as bytes, so non-UTF-8 files
//! are possible), loads them with `rawko::workflow::load` from an explicit list of roots, and
//! checks the diagnostic the rule produces: its severity, the file it names (`workflow.yaml` or
//! the phase's `.md`), its line where the loader knows it, a distinctive part of its message, and
//! whether the workflow was loaded or skipped. Every load also checks that each diagnostic prints
//! as `path…: severity: message`, the shape editors and terminals parse. The last tests cover root
//! precedence and `default_roots`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use rawko::workflow::{
    default_roots, load, Diagnostic, LoadOutcome, PhaseEntry, RootKind, Severity, Show, ToolPolicy,
    WorkflowRoot,
};
use tempfile::TempDir;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Writes `content` to `dir/rel`, creating the parent directories; returns the full path.
fn write(dir: &Path, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().expect("a file has a parent"))
        .expect("create parent directories");
    std::fs::write(&path, content).expect("write fixture file");
    path
}

/// A valid phase file with id `id`.
fn phase(id: &str) -> String {
    format!("---\nid: {id}\nname: Phase {id}\nemoji: 🔧\n---\nDo the {id} work.\n")
}

/// A valid user workflow's `workflow.yaml` with the given phase entries, one per line
/// (`plan.md`, or `subworkflow: other`).
fn workflow_yaml(name: &str, command: &str, entries: &[&str]) -> String {
    let mut text = format!(
        "name: {name}\ncommandName: {command}\ninitialMessage: \"Start: {{description}}\"\nphases:\n"
    );
    for e in entries {
        text.push_str(&format!("  - {e}\n"));
    }
    text
}

fn root(kind: RootKind, path: &Path) -> WorkflowRoot {
    WorkflowRoot {
        kind,
        path: path.to_owned(),
    }
}

/// Loads and checks what holds for every load: each diagnostic prints as
/// `path[:line[:column]]: severity: message`, starting with its path.
fn load_checked(roots: &[WorkflowRoot]) -> LoadOutcome {
    let outcome = load(roots);
    for d in &outcome.diagnostics {
        let shown = d.to_string();
        let path = d.path.display().to_string();
        assert!(
            shown.starts_with(&path),
            "diagnostic does not start with its path {path:?}: {shown}"
        );
        let mut expected = path;
        if let Some(line) = d.line {
            expected.push_str(&format!(":{line}"));
            if let Some(column) = d.column {
                expected.push_str(&format!(":{column}"));
            }
        }
        expected.push_str(&format!(": {}: {}", d.severity.as_str(), d.message));
        assert_eq!(shown, expected, "diagnostic shape");
    }
    outcome
}

fn dump(outcome: &LoadOutcome) -> String {
    outcome
        .diagnostics
        .iter()
        .map(|d| format!("  {d}\n"))
        .collect()
}

/// A temporary directory with one workflows root in it (`<tmp>/workflows`, a project root).
struct Fixture {
    tmp: TempDir,
    root: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let tmp = TempDir::new().expect("temp dir");
        let root = tmp.path().join("workflows");
        std::fs::create_dir_all(&root).expect("create root");
        Self { tmp, root }
    }

    /// Writes a file relative to the root.
    fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        write(&self.root, rel, content)
    }

    /// A valid user workflow `key` with one phase `KEY-work.md`.
    fn valid(&self, key: &str) {
        let file = format!("{key}-work.md");
        self.write(
            &format!("{key}/workflow.yaml"),
            workflow_yaml(&format!("Workflow {key}"), key, &[&file]),
        );
        self.write(&format!("{key}/{file}"), phase(&format!("{key}-work")));
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn load(&self) -> LoadOutcome {
        load_checked(&[root(RootKind::Project, &self.root)])
    }
}

/// What a rule's diagnostic must look like.
struct Expect<'a> {
    severity: Severity,
    /// The file the diagnostic names, relative to the root.
    file: &'a str,
    line: Option<usize>,
    /// A distinctive part of the message.
    message: &'a str,
}

const fn error<'a>(file: &'a str, line: Option<usize>, message: &'a str) -> Expect<'a> {
    Expect {
        severity: Severity::Error,
        file,
        line,
        message,
    }
}

const fn warning<'a>(file: &'a str, line: Option<usize>, message: &'a str) -> Expect<'a> {
    Expect {
        severity: Severity::Warning,
        file,
        line,
        message,
    }
}

/// The one diagnostic whose message contains `message`; fails listing all of them otherwise.
fn the_diagnostic<'o>(outcome: &'o LoadOutcome, message: &str) -> &'o Diagnostic {
    let found: Vec<&Diagnostic> = outcome
        .diagnostics
        .iter()
        .filter(|d| d.message.contains(message))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "expected one diagnostic containing {message:?}, got:\n{}",
        dump(outcome)
    );
    found[0]
}

/// Checks the diagnostic `expect` describes, and that it belongs to workflow `key`.
fn check(fx: &Fixture, outcome: &LoadOutcome, key: &str, expect: &Expect<'_>) {
    let d = the_diagnostic(outcome, expect.message);
    let context = format!("diagnostic: {d}\nall:\n{}", dump(outcome));
    assert_eq!(d.severity, expect.severity, "{context}");
    assert_eq!(d.path, fx.path(expect.file), "{context}");
    assert_eq!(d.line, expect.line, "{context}");
    assert_eq!(d.workflow.as_deref(), Some(key), "{context}");
}

fn assert_loaded(outcome: &LoadOutcome, key: &str) {
    assert!(
        outcome.workflows.get(key).is_some(),
        "workflow {key:?} should load; diagnostics:\n{}",
        dump(outcome)
    );
    assert!(
        !outcome.skipped.iter().any(|s| s.key == key),
        "{key:?} is both loaded and skipped"
    );
}

fn assert_skipped(outcome: &LoadOutcome, key: &str) {
    assert!(
        outcome.workflows.get(key).is_none(),
        "workflow {key:?} should be skipped"
    );
    assert!(
        outcome.skipped.iter().any(|s| s.key == key),
        "workflow {key:?} missing from skipped: {:?}",
        outcome.skipped
    );
}

/// Runs `f`, naming `case` in the failure message when it panics (for table-driven tests).
fn in_case(case: &str, f: impl FnOnce()) {
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    if let Err(panic) = result {
        let msg = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        panic!("case {case:?}: {msg}");
    }
}

fn errors(outcome: &LoadOutcome) -> usize {
    outcome
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .count()
}

// ---------------------------------------------------------------------------------------------
// workflow.yaml
// ---------------------------------------------------------------------------------------------

/// One workflow `wf` whose `workflow.yaml` is `yaml`, next to a valid phase file `a.md`.
struct YamlCase {
    name: &'static str,
    yaml: &'static str,
    expect: Expect<'static>,
    loads: bool,
}

const WF: &str = "wf/workflow.yaml";

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

// ---------------------------------------------------------------------------------------------
// Phase files
// ---------------------------------------------------------------------------------------------

/// One workflow `wf` with one phase `p.md` whose content is `md`.
struct PhaseCase {
    name: &'static str,
    md: &'static str,
    expect: Expect<'static>,
}

const P: &str = "wf/p.md";

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

// ---------------------------------------------------------------------------------------------
// Phase paths: confinement to the root
// ---------------------------------------------------------------------------------------------

#[test]
fn phase_path_escaping_the_root_with_dot_dot() {
    let fx = Fixture::new();
    // The file exists, outside the root (beside it in the temp dir).
    write(fx.tmp.path(), "outside.md", phase("outside"));
    fx.write(WF, workflow_yaml("W", "wf", &["../../outside.md"]));
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            WF,
            Some(5),
            "phase file path \"../../outside.md\" escapes the workflows root",
        ),
    );
    assert_skipped(&outcome, "wf");
}

#[test]
fn phase_path_escaping_the_root_to_a_file_that_does_not_exist() {
    let fx = Fixture::new();
    fx.write(
        WF,
        workflow_yaml("W", "wf", &["a.md", "../../../nowhere.md"]),
    );
    fx.write("wf/a.md", phase("a"));
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            WF,
            Some(6),
            "phase file path \"../../../nowhere.md\" escapes the workflows root",
        ),
    );
    assert_skipped(&outcome, "wf");
}

#[test]
fn absolute_phase_path_outside_the_root() {
    let fx = Fixture::new();
    let outside = write(fx.tmp.path(), "elsewhere/abs.md", phase("abs"));
    let entry = outside.display().to_string();
    fx.write(WF, workflow_yaml("W", "wf", &[&entry]));
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            WF,
            Some(5),
            &format!("phase file path \"{entry}\" escapes the workflows root"),
        ),
    );
    assert_skipped(&outcome, "wf");
}

#[test]
fn symlink_in_the_workflow_dir_pointing_outside_the_root() {
    let fx = Fixture::new();
    let outside = write(fx.tmp.path(), "secret.md", phase("secret"));
    fx.write(WF, workflow_yaml("W", "wf", &["link.md"]));
    std::os::unix::fs::symlink(&outside, fx.path("wf/link.md")).expect("symlink");
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            WF,
            Some(5),
            "phase file path \"link.md\" escapes the workflows root",
        ),
    );
    assert_skipped(&outcome, "wf");
}

#[test]
fn symlink_inside_the_root_is_allowed() {
    let fx = Fixture::new();
    fx.write("_shared/real.md", phase("real"));
    fx.write(WF, workflow_yaml("W", "wf", &["link.md"]));
    std::os::unix::fs::symlink(fx.path("_shared/real.md"), fx.path("wf/link.md")).expect("symlink");
    let outcome = fx.load();
    assert!(outcome.diagnostics.is_empty(), "{}", dump(&outcome));
    assert_loaded(&outcome, "wf");
}

#[test]
fn shared_phase_file_inside_the_root_is_allowed_and_the_shared_dir_is_quiet() {
    let fx = Fixture::new();
    fx.write("_shared/x.md", phase("x"));
    fx.write(WF, workflow_yaml("W", "wf", &["../_shared/x.md"]));
    let outcome = fx.load();
    assert!(outcome.diagnostics.is_empty(), "{}", dump(&outcome));
    assert_loaded(&outcome, "wf");
    assert!(outcome.workflows.get("_shared").is_none());
    assert!(outcome.skipped.is_empty(), "{:?}", outcome.skipped);
    let def = outcome.workflows.get("wf").expect("loaded");
    assert_eq!(def.phases[0].as_phase().map(|p| &p.id[..]), Some("x"));
}

// ---------------------------------------------------------------------------------------------
// Non-UTF-8 files
// ---------------------------------------------------------------------------------------------

#[test]
fn non_utf8_workflow_yaml() {
    let fx = Fixture::new();
    fx.write(
        WF,
        b"name: W\ncommandName: wf\ninitialMessage: caf\xe9\nphases:\n  - a.md\n",
    );
    fx.write("wf/a.md", phase("a"));
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            WF,
            Some(3),
            "workflow.yaml is not valid UTF-8 (invalid byte at offset 43)",
        ),
    );
    assert_skipped(&outcome, "wf");
}

#[test]
fn non_utf8_phase_file() {
    let fx = Fixture::new();
    fx.write(WF, workflow_yaml("W", "wf", &["p.md"]));
    fx.write(P, b"---\nid: p\nname: P\nemoji: x\n---\n\xff\xfe body\n");
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error(P, Some(6), "phase file is not valid UTF-8"),
    );
    assert_skipped(&outcome, "wf");
}

// ---------------------------------------------------------------------------------------------
// Subworkflows: cycles and dangling references
// ---------------------------------------------------------------------------------------------

#[test]
fn cycle_of_two_skips_both_and_names_the_cycle() {
    let fx = Fixture::new();
    fx.write(
        "a/workflow.yaml",
        workflow_yaml("A", "a", &["a1.md", "subworkflow: b"]),
    );
    fx.write("a/a1.md", phase("a1"));
    fx.write(
        "b/workflow.yaml",
        workflow_yaml("B", "b", &["subworkflow: a"]),
    );
    let outcome = fx.load();
    assert_skipped(&outcome, "a");
    assert_skipped(&outcome, "b");
    let cycle: Vec<&Diagnostic> = outcome
        .diagnostics
        .iter()
        .filter(|d| {
            d.message
                .contains("subworkflow cycle \"a\" → \"b\" → \"a\"")
        })
        .collect();
    assert_eq!(cycle.len(), 2, "{}", dump(&outcome));
    for (d, key, line) in [(cycle[0], "a", 6), (cycle[1], "b", 5)] {
        assert_eq!(d.severity, Severity::Error, "{d}");
        assert_eq!(d.path, fx.path(&format!("{key}/workflow.yaml")), "{d}");
        assert_eq!(d.line, Some(line), "{d}");
        assert_eq!(d.workflow.as_deref(), Some(key), "{d}");
        assert!(
            d.message.ends_with(&format!("workflow \"{key}\" skipped")),
            "{d}"
        );
    }
    assert_eq!(errors(&outcome), 2, "{}", dump(&outcome));
}

#[test]
fn self_reference_is_a_cycle() {
    let fx = Fixture::new();
    fx.write(
        "me/workflow.yaml",
        workflow_yaml("Me", "me", &["m.md", "subworkflow: me"]),
    );
    fx.write("me/m.md", phase("m"));
    fx.valid("other");
    let outcome = fx.load();
    let d = the_diagnostic(&outcome, "subworkflow cycle \"me\" → \"me\"");
    assert_eq!(d.severity, Severity::Error);
    assert_eq!(d.path, fx.path("me/workflow.yaml"));
    assert_eq!(d.line, Some(6));
    assert_skipped(&outcome, "me");
    assert_loaded(&outcome, "other");
}

#[test]
fn workflow_referencing_a_cycle_member_is_removed_in_cascade() {
    let fx = Fixture::new();
    fx.write(
        "ping/workflow.yaml",
        workflow_yaml("Ping", "ping", &["subworkflow: pong"]),
    );
    fx.write(
        "pong/workflow.yaml",
        workflow_yaml("Pong", "pong", &["subworkflow: ping"]),
    );
    fx.write(
        "caller/workflow.yaml",
        workflow_yaml("Caller", "caller", &["c1.md", "subworkflow: ping"]),
    );
    fx.write("caller/c1.md", phase("c1"));
    fx.valid("bystander");
    let outcome = fx.load();
    for key in ["ping", "pong", "caller"] {
        assert_skipped(&outcome, key);
    }
    assert_loaded(&outcome, "bystander");
    the_diagnostic(
        &outcome,
        "subworkflow cycle \"ping\" → \"pong\" → \"ping\"; workflow \"ping\" skipped",
    );
    the_diagnostic(
        &outcome,
        "subworkflow cycle \"ping\" → \"pong\" → \"ping\"; workflow \"pong\" skipped",
    );
    // caller is not part of the cycle…
    assert!(
        !outcome
            .diagnostics
            .iter()
            .any(|d| d.workflow.as_deref() == Some("caller") && d.message.contains("cycle")),
        "{}",
        dump(&outcome)
    );
    // …it is skipped because what it references was.
    check(
        &fx,
        &outcome,
        "caller",
        &error(
            "caller/workflow.yaml",
            Some(6),
            "references subworkflow \"ping\", which was skipped because of its own errors; workflow \"caller\" skipped",
        ),
    );
    assert_eq!(errors(&outcome), 3, "{}", dump(&outcome));
}

#[test]
fn unknown_subworkflow() {
    let fx = Fixture::new();
    fx.write(
        "wf/workflow.yaml",
        workflow_yaml("W", "wf", &["a.md", "subworkflow: nosuch"]),
    );
    fx.write("wf/a.md", phase("a"));
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            WF,
            Some(6),
            "references unknown subworkflow \"nosuch\"; workflow \"wf\" skipped",
        ),
    );
    assert_skipped(&outcome, "wf");
}

#[test]
fn subworkflow_that_failed_to_parse_is_named_as_skipped() {
    let fx = Fixture::new();
    fx.write(
        "outer/workflow.yaml",
        workflow_yaml("O", "outer", &["subworkflow: inner"]),
    );
    fx.write(
        "inner/workflow.yaml",
        "name: Inner\nshow: workflows\nphases: []\n",
    );
    let outcome = fx.load();
    let d = the_diagnostic(&outcome, "workflow \"outer\" skipped");
    assert!(
        d.message.contains(
            "references subworkflow \"inner\", which was skipped because of its own errors"
        ),
        "{d}"
    );
    assert_eq!(d.line, Some(5));
    assert_skipped(&outcome, "outer");
    assert_skipped(&outcome, "inner");
}

#[test]
fn cascade_through_a_missing_workflow() {
    let fx = Fixture::new();
    fx.write(
        "b/workflow.yaml",
        "name: B\nshow: workflows\nphases:\n  - subworkflow: missing\n",
    );
    fx.write(
        "c/workflow.yaml",
        workflow_yaml("C", "c", &["c1.md", "subworkflow: b"]),
    );
    fx.write("c/c1.md", phase("c1"));
    fx.valid("ok");
    let outcome = fx.load();
    assert_skipped(&outcome, "b");
    assert_skipped(&outcome, "c");
    assert_loaded(&outcome, "ok");

    let b = the_diagnostic(&outcome, "workflow \"b\" skipped");
    assert!(
        b.message
            .contains("references unknown subworkflow \"missing\""),
        "{b}"
    );
    assert_eq!(b.path, fx.path("b/workflow.yaml"));
    assert_eq!(b.line, Some(4));

    let c = the_diagnostic(&outcome, "workflow \"c\" skipped");
    assert!(
        c.message
            .starts_with("references subworkflow \"b\", which was skipped"),
        "{c}"
    );
    assert_eq!(c.path, fx.path("c/workflow.yaml"));
    assert_eq!(c.line, Some(6));
    assert_eq!(errors(&outcome), 2, "{}", dump(&outcome));
}

#[test]
fn nested_subworkflows_resolve() {
    let fx = Fixture::new();
    fx.write(
        "outer/workflow.yaml",
        workflow_yaml("Outer", "outer", &["o.md", "subworkflow: mid"]),
    );
    fx.write("outer/o.md", phase("o"));
    fx.write(
        "mid/workflow.yaml",
        "name: Mid\nshow: workflows\nphases:\n  - subworkflow: leaf\n  - m.md\n",
    );
    fx.write("mid/m.md", phase("m"));
    fx.write(
        "leaf/workflow.yaml",
        "name: Leaf\nshow: workflows\nphases:\n  - l.md\n",
    );
    fx.write("leaf/l.md", phase("l"));
    let outcome = fx.load();
    assert!(outcome.diagnostics.is_empty(), "{}", dump(&outcome));
    let outer = outcome.workflows.get("outer").expect("loaded");
    let ids: Vec<&str> = outcome
        .workflows
        .flatten(outer)
        .iter()
        .map(|p| p.id.as_str())
        .collect();
    assert_eq!(ids, ["o", "l", "m"]);
}

// ---------------------------------------------------------------------------------------------
// Command names and directories
// ---------------------------------------------------------------------------------------------

#[test]
fn duplicate_command_name_warns_on_the_second_and_the_first_wins() {
    let fx = Fixture::new();
    fx.write(
        "alpha/workflow.yaml",
        workflow_yaml("Alpha", "go", &["a.md"]),
    );
    fx.write("alpha/a.md", phase("a"));
    fx.write(
        "beta/workflow.yaml",
        "# the second one\nname: Beta\ninitialMessage: hi\ncommandName: go\nphases:\n  - b.md\n",
    );
    fx.write("beta/b.md", phase("b"));
    let outcome = fx.load();
    let d = the_diagnostic(
        &outcome,
        "commandName \"go\" is also used by workflow \"alpha\"",
    );
    assert_eq!(d.severity, Severity::Warning);
    assert_eq!(d.path, fx.path("beta/workflow.yaml"));
    assert_eq!(d.line, Some(4));
    assert_eq!(d.workflow.as_deref(), Some("beta"));
    assert_eq!(outcome.diagnostics.len(), 1, "{}", dump(&outcome));
    assert_loaded(&outcome, "alpha");
    assert_loaded(&outcome, "beta");
    assert_eq!(
        outcome.workflows.by_command_name("go").map(|d| &d.key[..]),
        Some("alpha")
    );
    assert_eq!(
        outcome.workflows.find("beta").map(|d| &d.key[..]),
        Some("beta")
    );
}

#[test]
fn same_command_name_on_a_subworkflow_is_not_a_duplicate() {
    let fx = Fixture::new();
    fx.valid("go");
    fx.write(
        "sub/workflow.yaml",
        "name: Sub\nshow: workflows\ncommandName: go\nphases:\n  - s.md\n",
    );
    fx.write("sub/s.md", phase("s"));
    let outcome = fx.load();
    assert!(outcome.diagnostics.is_empty(), "{}", dump(&outcome));
    assert_eq!(
        outcome.workflows.by_command_name("go").map(|d| &d.key[..]),
        Some("go")
    );
}

#[test]
fn empty_directory_is_a_warning_naming_it() {
    let fx = Fixture::new();
    std::fs::create_dir_all(fx.path("hollow")).expect("mkdir");
    fx.valid("ok");
    let outcome = fx.load();
    let d = the_diagnostic(
        &outcome,
        "empty directory: workflow \"hollow\" needs a workflow.yaml",
    );
    assert_eq!(d.severity, Severity::Warning);
    assert_eq!(d.path, fx.path("hollow"));
    assert_eq!(d.line, None);
    assert_eq!(d.workflow.as_deref(), Some("hollow"));
    assert!(outcome.workflows.get("hollow").is_none());
    assert_loaded(&outcome, "ok");
    assert!(!outcome.has_errors());
}

#[test]
fn directory_with_files_but_no_workflow_yaml() {
    let fx = Fixture::new();
    fx.write("notes/plan.md", phase("plan"));
    let outcome = fx.load();
    let d = the_diagnostic(
        &outcome,
        "no workflow.yaml in this directory, so it is not a workflow",
    );
    assert_eq!(d.severity, Severity::Warning);
    assert_eq!(d.path, fx.path("notes"));
    assert!(
        d.message.contains("leading `_`"),
        "the message says how to silence it: {d}"
    );
    assert!(outcome.workflows.is_empty());
}

#[test]
fn files_and_hidden_directories_beside_workflows_are_ignored() {
    let fx = Fixture::new();
    fx.write("README.md", "# my workflows\n");
    fx.write(".git/HEAD", "ref: refs/heads/main\n");
    fx.valid("ok");
    let outcome = fx.load();
    assert!(outcome.diagnostics.is_empty(), "{}", dump(&outcome));
    assert_eq!(outcome.workflows.keys().collect::<Vec<_>>(), ["ok"]);
}

#[test]
fn directory_name_that_is_not_utf8() {
    use std::os::unix::ffi::OsStrExt;
    let fx = Fixture::new();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9");
    let dir = fx.root.join(name);
    write(
        &dir,
        "workflow.yaml",
        workflow_yaml("Cafe", "cafe", &["a.md"]),
    );
    write(&dir, "a.md", phase("a"));
    fx.valid("ok");
    let outcome = fx.load();
    let d = the_diagnostic(&outcome, "workflow directory name is not valid UTF-8");
    assert_eq!(d.severity, Severity::Error);
    assert_eq!(d.path, dir);
    assert_eq!(outcome.workflows.keys().collect::<Vec<_>>(), ["ok"]);
}

#[test]
fn one_broken_workflow_does_not_hide_a_valid_one() {
    let fx = Fixture::new();
    fx.valid("good");
    fx.write("bad/workflow.yaml", "name: [unclosed\n");
    fx.valid("zeta");
    let outcome = fx.load();
    assert_loaded(&outcome, "good");
    assert_loaded(&outcome, "zeta");
    assert_skipped(&outcome, "bad");
    assert_eq!(outcome.workflows.len(), 2);
    assert_eq!(outcome.skipped.len(), 1);
    assert!(outcome
        .diagnostics
        .iter()
        .all(|d| d.workflow.as_deref() == Some("bad")));
    let d = the_diagnostic(&outcome, "invalid YAML");
    assert_eq!(d.path, fx.path("bad/workflow.yaml"));
}

#[test]
fn fingerprint_changes_when_a_phase_file_changes() {
    let fx = Fixture::new();
    fx.valid("wf");
    let before = fx
        .load()
        .workflows
        .get("wf")
        .expect("loaded")
        .fingerprint
        .clone();
    assert_eq!(
        fx.load().workflows.get("wf").expect("loaded").fingerprint,
        before
    );
    fx.write(
        "wf/wf-work.md",
        phase("wf-work").replace("Do the", "Now do the"),
    );
    let after = fx
        .load()
        .workflows
        .get("wf")
        .expect("loaded")
        .fingerprint
        .clone();
    assert_ne!(before, after);
}

// ---------------------------------------------------------------------------------------------
// Roots
// ---------------------------------------------------------------------------------------------

#[test]
fn later_root_wins_for_the_same_key() {
    let tmp = TempDir::new().expect("temp dir");
    let user = tmp.path().join("user");
    let project = tmp.path().join("project");
    write(
        &user,
        "feature/workflow.yaml",
        workflow_yaml("User Feature", "feature", &["u.md"]),
    );
    write(&user, "feature/u.md", phase("u"));
    write(
        &user,
        "only-user/workflow.yaml",
        workflow_yaml("Only User", "only-user", &["o.md"]),
    );
    write(&user, "only-user/o.md", phase("o"));
    write(
        &project,
        "feature/workflow.yaml",
        workflow_yaml("Project Feature", "feature", &["p.md"]),
    );
    write(&project, "feature/p.md", phase("p"));
    let roots = [
        root(RootKind::UserConfig, &user),
        root(RootKind::PiGlobal, &tmp.path().join("does-not-exist")),
        root(RootKind::Project, &project),
    ];
    let outcome = load_checked(&roots);
    assert!(outcome.diagnostics.is_empty(), "{}", dump(&outcome));
    // The root that does not exist is fine, and not among the roots found.
    assert_eq!(
        outcome
            .roots_found
            .iter()
            .map(|r| r.kind)
            .collect::<Vec<_>>(),
        [RootKind::UserConfig, RootKind::Project]
    );
    let feature = outcome.workflows.get("feature").expect("loaded");
    assert_eq!(feature.name, "Project Feature");
    assert_eq!(feature.root.kind, RootKind::Project);
    assert_eq!(feature.dir, project.join("feature"));
    assert_eq!(
        outcome
            .workflows
            .by_command_name("feature")
            .map(|d| &d.name[..]),
        Some("Project Feature")
    );
    let only = outcome.workflows.get("only-user").expect("loaded");
    assert_eq!(only.root.kind, RootKind::UserConfig);
    assert_eq!(outcome.workflows.len(), 2);

    // Swapping the order swaps the winner.
    let swapped = load_checked(&[
        root(RootKind::Project, &project),
        root(RootKind::UserConfig, &user),
    ]);
    assert_eq!(
        swapped.workflows.get("feature").map(|d| &d.name[..]),
        Some("User Feature")
    );
}

#[test]
fn root_that_is_a_file_is_an_error() {
    let tmp = TempDir::new().expect("temp dir");
    let file = write(tmp.path(), "workflows", "not a directory");
    let good = tmp.path().join("good");
    write(
        &good,
        "ok/workflow.yaml",
        workflow_yaml("Ok", "ok", &["o.md"]),
    );
    write(&good, "ok/o.md", phase("o"));
    let outcome = load_checked(&[
        root(RootKind::UserConfig, &file),
        root(RootKind::Project, &good),
    ]);
    let d = the_diagnostic(&outcome, "workflows root is not a directory");
    assert_eq!(d.severity, Severity::Error);
    assert_eq!(d.path, file);
    assert_eq!(d.workflow, None);
    assert_eq!(outcome.roots_found.len(), 1);
    assert!(outcome.workflows.get("ok").is_some());
}

#[test]
fn no_roots_at_all_loads_nothing_quietly() {
    let tmp = TempDir::new().expect("temp dir");
    let outcome = load_checked(&[root(RootKind::Project, &tmp.path().join("nope"))]);
    assert!(outcome.workflows.is_empty());
    assert!(outcome.diagnostics.is_empty());
    assert!(outcome.roots_found.is_empty());
    let outcome = load_checked(&[]);
    assert!(outcome.workflows.is_empty() && outcome.diagnostics.is_empty());
}

/// An environment lookup over a fixed list of variables.
fn env_of(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
    let vars: Vec<(String, OsString)> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
        .collect();
    move |name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
}

fn roots_as_pairs(roots: &[WorkflowRoot]) -> Vec<(RootKind, PathBuf)> {
    roots.iter().map(|r| (r.kind, r.path.clone())).collect()
}

#[test]
fn default_roots_from_home_only() {
    let ws = Path::new("/work/space");
    let roots = default_roots(ws, env_of(&[("HOME", "/home/u")]));
    assert_eq!(
        roots_as_pairs(&roots),
        [
            (
                RootKind::UserConfig,
                PathBuf::from("/home/u/.config/rawko/workflows")
            ),
            (
                RootKind::PiGlobal,
                PathBuf::from("/home/u/.pi/agent/workflows")
            ),
            (
                RootKind::PiProject,
                PathBuf::from("/work/space/.pi/workflows")
            ),
            (
                RootKind::Project,
                PathBuf::from("/work/space/.rawko/workflows")
            ),
        ]
    );
}

#[test]
fn default_roots_honour_xdg_config_home_and_pi_coding_agent_dir() {
    let ws = Path::new("/ws");
    let roots = default_roots(
        ws,
        env_of(&[
            ("HOME", "/home/u"),
            ("XDG_CONFIG_HOME", "/xdg"),
            ("PI_CODING_AGENT_DIR", "/pi-agent"),
        ]),
    );
    assert_eq!(
        roots_as_pairs(&roots),
        [
            (RootKind::UserConfig, PathBuf::from("/xdg/rawko/workflows")),
            (RootKind::PiGlobal, PathBuf::from("/pi-agent/workflows")),
            (RootKind::PiProject, PathBuf::from("/ws/.pi/workflows")),
            (RootKind::Project, PathBuf::from("/ws/.rawko/workflows")),
        ]
    );
}

#[test]
fn default_roots_without_home() {
    let ws = Path::new("/ws");
    // Nothing set: only the workspace's roots.
    assert_eq!(
        roots_as_pairs(&default_roots(ws, env_of(&[]))),
        [
            (RootKind::PiProject, PathBuf::from("/ws/.pi/workflows")),
            (RootKind::Project, PathBuf::from("/ws/.rawko/workflows")),
        ]
    );
    // Empty values count as unset.
    assert_eq!(
        default_roots(ws, env_of(&[("HOME", ""), ("XDG_CONFIG_HOME", "")])).len(),
        2
    );
    // XDG_CONFIG_HOME alone gives the user root but no pi-global one.
    assert_eq!(
        roots_as_pairs(&default_roots(ws, env_of(&[("XDG_CONFIG_HOME", "/xdg")])))[0],
        (RootKind::UserConfig, PathBuf::from("/xdg/rawko/workflows"))
    );
    assert_eq!(
        default_roots(ws, env_of(&[("PI_CODING_AGENT_DIR", "/pi")]))
            .iter()
            .map(|r| r.kind)
            .collect::<Vec<_>>(),
        [RootKind::PiGlobal, RootKind::PiProject, RootKind::Project]
    );
}

#[test]
fn default_roots_load_end_to_end_with_project_overriding_user() {
    let tmp = TempDir::new().expect("temp dir");
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    let user_root = home.join(".config/rawko/workflows");
    write(
        &user_root,
        "feature/workflow.yaml",
        workflow_yaml("Home Feature", "feature", &["h.md"]),
    );
    write(&user_root, "feature/h.md", phase("h"));
    write(
        &home,
        ".pi/agent/workflows/pi/workflow.yaml",
        workflow_yaml("Pi", "pi", &["p.md"]),
    );
    write(&home, ".pi/agent/workflows/pi/p.md", phase("p"));
    let project_root = ws.join(".rawko/workflows");
    write(
        &project_root,
        "feature/workflow.yaml",
        workflow_yaml("Ws Feature", "feature", &["w.md"]),
    );
    write(&project_root, "feature/w.md", phase("w"));
    let home_str = home.display().to_string();
    let roots = default_roots(&ws, env_of(&[("HOME", &home_str)]));
    let outcome = load_checked(&roots);
    assert!(outcome.diagnostics.is_empty(), "{}", dump(&outcome));
    assert_eq!(
        outcome
            .workflows
            .get("feature")
            .map(|d| (&d.name[..], d.root.kind)),
        Some(("Ws Feature", RootKind::Project))
    );
    assert_eq!(
        outcome.workflows.get("pi").map(|d| d.root.kind),
        Some(RootKind::PiGlobal)
    );
}

// ---------------------------------------------------------------------------------------------
// Lines point at the exact entry, key or duplicate (regressions)
// ---------------------------------------------------------------------------------------------

#[test]
fn a_missing_phase_file_points_at_its_own_entry_not_a_line_that_mentions_its_name() {
    let fx = Fixture::new();
    fx.write(
        "wf/workflow.yaml",
        workflow_yaml("W", "wf", &["data.md", "a.md"]),
    );
    fx.write("wf/data.md", phase("data"));
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error("wf/workflow.yaml", Some(6), "phase file \"a.md\" not found"),
    );
}

#[test]
fn a_skipped_subworkflow_reference_points_at_its_entry() {
    let fx = Fixture::new();
    fx.write(
        "wf/workflow.yaml",
        workflow_yaml("W", "wf", &["review-prep.md", "subworkflow: rev"]),
    );
    fx.write("wf/review-prep.md", phase("prep"));
    fx.write("rev/workflow.yaml", "name: [broken\n");
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            "wf/workflow.yaml",
            Some(6),
            "references subworkflow \"rev\", which was skipped because of its own errors",
        ),
    );
}

#[test]
fn a_cycle_points_at_the_reference_that_closes_it() {
    let fx = Fixture::new();
    fx.valid("ok");
    fx.write(
        "a/workflow.yaml",
        "name: A\ncommandName: a\ninitialMessage: run the subworkflow now\nphases:\n  - subworkflow: ok\n  - subworkflow: b\n",
    );
    fx.write(
        "b/workflow.yaml",
        "name: B\nshow: workflows\nphases:\n  - subworkflow: a\n",
    );
    let outcome = fx.load();
    let a = outcome
        .diagnostics
        .iter()
        .find(|d| d.workflow.as_deref() == Some("a"))
        .expect("a diagnostic for a");
    assert_eq!(a.line, Some(6), "{}", dump(&outcome));
    let b = outcome
        .diagnostics
        .iter()
        .find(|d| d.workflow.as_deref() == Some("b"))
        .expect("a diagnostic for b");
    assert_eq!(b.line, Some(4), "{}", dump(&outcome));
}

#[test]
fn a_chain_of_missing_references_says_why_each_was_skipped() {
    let fx = Fixture::new();
    fx.write(
        "c/workflow.yaml",
        workflow_yaml("C", "c", &["subworkflow: b"]),
    );
    fx.write(
        "b/workflow.yaml",
        "name: B\nshow: workflows\nphases:\n  - subworkflow: missing\n",
    );
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "b",
        &error(
            "b/workflow.yaml",
            Some(4),
            "references unknown subworkflow \"missing\"",
        ),
    );
    check(
        &fx,
        &outcome,
        "c",
        &error(
            "c/workflow.yaml",
            Some(5),
            "which was skipped because it references a missing workflow",
        ),
    );
}

#[test]
fn a_duplicate_phase_id_points_at_the_id_line() {
    let fx = Fixture::new();
    fx.write(
        "wf/workflow.yaml",
        workflow_yaml("W", "wf", &["one.md", "two.md"]),
    );
    fx.write("wf/one.md", phase("same"));
    fx.write(
        "wf/two.md",
        "---\n# the second file\nid: same\nname: Two\nemoji: 2️⃣\n---\nBody.\n",
    );
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error("wf/two.md", Some(3), "duplicate phase id \"same\""),
    );
}

#[test]
fn a_duplicate_yaml_key_points_at_the_duplicate() {
    let fx = Fixture::new();
    fx.write(
        "wf/workflow.yaml",
        "name: W\ncommandName: wf\nname: X\ninitialMessage: hi\nphases: [p.md]\n",
    );
    fx.write(
        "wf/p.md",
        "---\nid: p\nname: P\nemoji: 🅿️\nname: Q\n---\nBody.\n",
    );
    fx.valid("other");
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            "wf/workflow.yaml",
            Some(3),
            "duplicate entry with key \"name\"",
        ),
    );

    let fx = Fixture::new();
    fx.write("wf/workflow.yaml", workflow_yaml("W", "wf", &["p.md"]));
    fx.write(
        "wf/p.md",
        "---\nid: p\nname: P\nemoji: 🅿️\nname: Q\n---\nBody.\n",
    );
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &error("wf/p.md", Some(5), "duplicate entry with key \"name\""),
    );
}

#[test]
fn a_command_name_of_the_wrong_type_is_one_error_on_its_line() {
    let fx = Fixture::new();
    fx.write(
        "wf/workflow.yaml",
        "name: W\ncommandName: [a]\ninitialMessage: {x: 1}\nphases: [p.md]\n",
    );
    fx.write("wf/p.md", phase("p"));
    let outcome = fx.load();
    assert_eq!(outcome.diagnostics.len(), 2, "{}", dump(&outcome));
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            "wf/workflow.yaml",
            Some(2),
            "commandName must be text, found a list",
        ),
    );
    check(
        &fx,
        &outcome,
        "wf",
        &error(
            "wf/workflow.yaml",
            Some(3),
            "initialMessage must be text, found a mapping",
        ),
    );
}

#[test]
fn a_tool_list_with_no_value_is_a_warning() {
    let fx = Fixture::new();
    fx.write("wf/workflow.yaml", workflow_yaml("W", "wf", &["p.md"]));
    fx.write(
        "wf/p.md",
        "---\nid: p\nname: P\nemoji: 🅿️\ntools:\n  whitelist:\n---\nBody.\n",
    );
    let outcome = fx.load();
    check(
        &fx,
        &outcome,
        "wf",
        &warning("wf/p.md", Some(5), "tools.whitelist has no value"),
    );
    assert_loaded(&outcome, "wf");
}

#[test]
fn a_broken_definition_overridden_by_a_later_root_does_not_make_the_set_invalid() {
    let tmp = TempDir::new().expect("temp dir");
    let global = tmp.path().join("global");
    let project = tmp.path().join("project");
    write(&global, "feature/workflow.yaml", "name: [broken\n");
    write(
        &project,
        "feature/workflow.yaml",
        workflow_yaml("Feature", "feature", &["p.md"]),
    );
    write(&project, "feature/p.md", phase("p"));
    let outcome = load_checked(&[
        root(RootKind::UserConfig, &global),
        root(RootKind::Project, &project),
    ]);
    assert!(!outcome.has_errors(), "{}", dump(&outcome));
    assert_loaded(&outcome, "feature");
    let d = the_diagnostic(&outcome, "overridden by");
    assert_eq!(d.severity, Severity::Warning);
    assert_eq!(d.path, global.join("feature/workflow.yaml"));
}

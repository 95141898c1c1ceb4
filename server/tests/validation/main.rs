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

mod commands_and_dirs;
mod lines;
mod phase_files;
mod phase_paths;
mod roots;
mod subworkflows;
mod workflow_yaml;

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

const WF: &str = "wf/workflow.yaml";

const P: &str = "wf/p.md";

//! The agent loader's rules, one fixture per rule.
//!
//! Every test writes agent files into temporary folders (as bytes, so non-UTF-8 files are
//! possible), loads them with `rawko::agents::load` from an explicit list of roots, and checks what
//! a user would see: which agents load, and for each problem its severity, its file, its line, and
//! a distinctive part of its message. Every load also checks that each diagnostic prints as
//! `path…: severity: message`. Later tests cover root precedence, `default_roots`, set
//! validation, the tool filter of loaded agents, and the starter agents `rawko init` writes.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use rawko::agents::{
    default_roots, load, parse_str, AgentDefinition, AgentLimits, AgentLoadOutcome, AgentProvider,
    AgentTransitions, Diagnostic, Severity,
};
use tempfile::TempDir;

mod files;
mod formats;
mod loaded;
mod roots;
mod rules;
mod set_validation;

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

/// A valid YAML agent.
fn yaml_agent(name: &str, on_success: &str) -> String {
    format!(
        "name: {name}\nsystemPrompt: You are {name}.\ntransitions:\n  onSuccess: {on_success}\n"
    )
}

/// Loads and checks what holds for every load: each diagnostic prints as
/// `path[:line[:column]]: severity: message`, starting with its path.
fn load_checked(roots: &[PathBuf]) -> AgentLoadOutcome {
    let outcome = load(roots);
    for d in &outcome.diagnostics {
        let shown = d.to_string();
        let path = d.path.display().to_string();
        assert!(shown.starts_with(&path), "{shown}");
        let rest = &shown[path.len()..];
        let expected_prefix = match d.line {
            Some(line) => format!(":{line}"),
            None => String::new(),
        };
        assert!(rest.starts_with(&expected_prefix), "{shown}");
        assert!(
            shown.contains(&format!(": {}: {}", d.severity.as_str(), d.message)),
            "{shown}"
        );
    }
    outcome
}

/// Loads the one root `dir`.
fn load_dir(dir: &Path) -> AgentLoadOutcome {
    load_checked(&[dir.to_owned()])
}

fn names(outcome: &AgentLoadOutcome) -> Vec<&str> {
    outcome.agents.names().collect()
}

/// The only diagnostic whose message contains `needle`; fails showing all of them otherwise.
#[track_caller]
fn find<'a>(outcome: &'a AgentLoadOutcome, needle: &str) -> &'a Diagnostic {
    let hits: Vec<&Diagnostic> = outcome
        .diagnostics
        .iter()
        .filter(|d| d.message.contains(needle))
        .collect();
    assert_eq!(
        hits.len(),
        1,
        "expected one diagnostic containing {needle:?}, got:\n{}",
        shown(outcome)
    );
    hits[0]
}

fn shown(outcome: &AgentLoadOutcome) -> String {
    outcome
        .diagnostics
        .iter()
        .map(|d| format!("  {d}\n"))
        .collect()
}

/// Asserts one diagnostic: severity, file, line, and a part of its message.
#[track_caller]
fn assert_diag(
    outcome: &AgentLoadOutcome,
    needle: &str,
    severity: Severity,
    file: &Path,
    line: Option<usize>,
) {
    let d = find(outcome, needle);
    assert_eq!(d.severity, severity, "{d}");
    assert_eq!(d.path, file, "{d}");
    assert_eq!(d.line, line, "{d}");
}

/// Asserts a file with one problem: it is the only diagnostic, an error, and the file's agent is
/// not loaded.
#[track_caller]
fn assert_only_error(outcome: &AgentLoadOutcome, needle: &str, file: &Path, line: Option<usize>) {
    assert_eq!(outcome.diagnostics.len(), 1, "{}", shown(outcome));
    assert_diag(outcome, needle, Severity::Error, file, line);
    assert!(outcome.agents.is_empty(), "{:?}", names(outcome));
    assert!(outcome.has_errors());
    assert_eq!(outcome.skipped.len(), 1, "{:?}", outcome.skipped);
    assert_eq!(outcome.skipped[0].file, file);
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

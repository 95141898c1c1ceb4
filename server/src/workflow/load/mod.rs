//! Loading workflow definitions from their roots: pi-workflows' directory format, every one of its
//! validation rules, and a diagnostic with file and line for each problem.
//!
//! This is the one part of `workflow/` that touches the file system, and it only reads. One broken
//! workflow never hides another: each is parsed on its own, and only the broken one is skipped.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};

use indexmap::IndexMap;
use serde_yaml_ng::{Mapping, Value};
use sha2::{Digest, Sha256};

use super::definition::{
    PhaseDefinition, PhaseEntry, RootKind, Show, ToolPolicy, ToolRule, WorkflowDefinition,
    WorkflowRoot, WorkflowSet,
};
use super::diagnostic::{Diagnostic, Severity};
use super::source::{Files, SourceFile};
use super::yaml::{item_line, key_path_line, parse_flat, parse_yaml, type_name};

mod graph;
mod parser;
mod phase;
use graph::*;
use parser::*;
use phase::*;

/// The name of the file that makes a directory a workflow.
pub const WORKFLOW_FILE: &str = "workflow.yaml";

const DEFAULT_SESSION_NAME_PREFIX: &str = "Workflow: ";
const DEFAULT_SESSION_NAME_MAX_LENGTH: usize = 50;

/// The roots searched for workflows, lowest precedence first: a later root's workflow replaces an
/// earlier one with the same key.
///
/// `env` looks up environment variables (passed in so callers and tests decide what it sees).
pub fn default_roots(
    workspace: &Path,
    env: impl Fn(&str) -> Option<OsString>,
) -> Vec<WorkflowRoot> {
    let non_empty = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let home = non_empty("HOME");
    let mut roots = Vec::new();
    let config = non_empty("XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config")));
    if let Some(config) = config {
        roots.push(WorkflowRoot {
            kind: RootKind::UserConfig,
            path: config.join("rawko").join("workflows"),
        });
    }
    let pi = non_empty("PI_CODING_AGENT_DIR").or_else(|| home.map(|h| h.join(".pi").join("agent")));
    if let Some(pi) = pi {
        roots.push(WorkflowRoot {
            kind: RootKind::PiGlobal,
            path: pi.join("workflows"),
        });
    }
    roots.push(WorkflowRoot {
        kind: RootKind::PiProject,
        path: workspace.join(".pi").join("workflows"),
    });
    roots.push(WorkflowRoot {
        kind: RootKind::Project,
        path: workspace.join(".rawko").join("workflows"),
    });
    roots
}

/// A workflow directory that did not make it into the set, and why (its diagnostics say more).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedWorkflow {
    pub key: String,
    pub dir: PathBuf,
    pub root: WorkflowRoot,
}

/// What loading produced: the usable workflows, every problem found, and what was skipped.
#[derive(Debug, Clone, Default)]
pub struct LoadOutcome {
    pub workflows: WorkflowSet,
    pub diagnostics: Vec<Diagnostic>,
    pub skipped: Vec<SkippedWorkflow>,
    /// The roots that exist on disk.
    pub roots_found: Vec<WorkflowRoot>,
}

impl LoadOutcome {
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }
}

/// Loads, validates and resolves every workflow under `roots`.
pub fn load(roots: &[WorkflowRoot]) -> LoadOutcome {
    let mut diagnostics = Vec::new();
    let mut roots_found = Vec::new();
    // key → parsed definition (None when it failed), later roots replacing earlier ones.
    type Candidate = (
        Option<WorkflowDefinition>,
        PathBuf,
        WorkflowRoot,
        Range<usize>,
    );
    let mut candidates: IndexMap<String, Candidate> = IndexMap::new();

    for root in roots {
        let entries = match list_root(root, &mut diagnostics) {
            Some(entries) => entries,
            None => continue,
        };
        roots_found.push(root.clone());
        let canonical_root = fs::canonicalize(&root.path).unwrap_or_else(|_| root.path.clone());
        for dir in entries {
            let Some(key) = workflow_key(&dir, &mut diagnostics) else {
                continue;
            };
            let file = dir.join(WORKFLOW_FILE);
            if !file.exists() {
                report_non_workflow_dir(&dir, &key, &mut diagnostics);
                continue;
            }
            let first_diagnostic = diagnostics.len();
            let parsed = WorkflowParser {
                key: &key,
                dir: &dir,
                root,
                canonical_root: &canonical_root,
                files: Files::Disk,
                diagnostics: &mut diagnostics,
                canonical_dir: std::cell::OnceCell::new(),
            }
            .parse();
            let range = first_diagnostic..diagnostics.len();
            let replaced = candidates.insert(key, (parsed, dir.clone(), root.clone(), range));
            if let Some((_, _, _, old_range)) = replaced {
                // The earlier definition is not used: its problems no longer make anything invalid.
                for d in &mut diagnostics[old_range] {
                    d.severity = Severity::Warning;
                    d.message = format!(
                        "{} (this definition is overridden by {} and not used)",
                        d.message,
                        dir.display()
                    );
                }
            }
        }
    }

    let mut skipped = Vec::new();
    let mut defs: IndexMap<String, WorkflowDefinition> = IndexMap::new();
    for (key, (parsed, dir, root, _)) in candidates {
        match parsed {
            Some(def) => {
                defs.insert(key, def);
            }
            None => skipped.push(SkippedWorkflow { key, dir, root }),
        }
    }
    let invalid: HashSet<String> = skipped.iter().map(|s| s.key.clone()).collect();

    remove_cycles(&mut defs, &mut skipped, &mut diagnostics);
    remove_dangling_refs(&mut defs, &invalid, &mut skipped, &mut diagnostics);
    warn_duplicate_commands(&defs, &mut diagnostics);

    LoadOutcome {
        workflows: WorkflowSet::from_map(defs),
        diagnostics,
        skipped,
        roots_found,
    }
}

/// A workflow as a task pinned it: where it was read from and the contents of its files, by the
/// paths they were read from.
#[derive(Debug, Clone)]
pub struct PinnedWorkflow {
    pub key: String,
    pub dir: PathBuf,
    pub root: WorkflowRoot,
    pub files: HashMap<PathBuf, std::sync::Arc<[u8]>>,
}

/// Loads workflows from the copies a task pinned (in the order given), with the same rules as
/// [`load`]; nothing is read from disk.
pub fn load_pinned(pinned: &[PinnedWorkflow]) -> LoadOutcome {
    let mut diagnostics = Vec::new();
    let mut skipped = Vec::new();
    let mut defs: IndexMap<String, WorkflowDefinition> = IndexMap::new();
    for p in pinned {
        let parsed = WorkflowParser {
            key: &p.key,
            dir: &p.dir,
            root: &p.root,
            canonical_root: &p.root.path,
            files: Files::Pinned(&p.files),
            diagnostics: &mut diagnostics,
            canonical_dir: std::cell::OnceCell::new(),
        }
        .parse();
        match parsed {
            Some(def) => {
                defs.insert(p.key.clone(), def);
            }
            None => skipped.push(SkippedWorkflow {
                key: p.key.clone(),
                dir: p.dir.clone(),
                root: p.root.clone(),
            }),
        }
    }
    let invalid: HashSet<String> = skipped.iter().map(|s| s.key.clone()).collect();
    remove_cycles(&mut defs, &mut skipped, &mut diagnostics);
    remove_dangling_refs(&mut defs, &invalid, &mut skipped, &mut diagnostics);
    LoadOutcome {
        workflows: WorkflowSet::from_map(defs),
        diagnostics,
        skipped,
        roots_found: Vec::new(),
    }
}

/// The workflow directories of a root, sorted by name; `None` when the root does not exist.
fn list_root(root: &WorkflowRoot, diagnostics: &mut Vec<Diagnostic>) -> Option<Vec<PathBuf>> {
    let meta = match fs::metadata(&root.path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            diagnostics.push(Diagnostic::error(
                &root.path,
                format!("cannot read workflows root: {e}"),
            ));
            return None;
        }
    };
    if !meta.is_dir() {
        diagnostics.push(Diagnostic::error(
            &root.path,
            "workflows root is not a directory",
        ));
        return None;
    }
    let read = match fs::read_dir(&root.path) {
        Ok(read) => read,
        Err(e) => {
            diagnostics.push(Diagnostic::error(
                &root.path,
                format!("cannot read workflows root: {e}"),
            ));
            return None;
        }
    };
    let mut dirs: Vec<PathBuf> = read
        .filter_map(Result::ok)
        .map(|e| e.path())
        // Files beside the workflow directories (a README, say) are not workflows.
        .filter(|p| p.is_dir())
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    dirs.sort();
    Some(dirs)
}

fn workflow_key(dir: &Path, diagnostics: &mut Vec<Diagnostic>) -> Option<String> {
    match dir.file_name().and_then(|n| n.to_str()) {
        Some(name) => Some(name.to_owned()),
        None => {
            diagnostics.push(Diagnostic::error(
                dir,
                "workflow directory name is not valid UTF-8, so it cannot be a workflow key",
            ));
            None
        }
    }
}

/// A directory without `workflow.yaml`: an empty one is reported, one whose name starts with `_`
/// is a home for shared phase files (pi-workflows' convention) and stays quiet.
fn report_non_workflow_dir(dir: &Path, key: &str, diagnostics: &mut Vec<Diagnostic>) {
    if key.starts_with('_') {
        return;
    }
    let empty = fs::read_dir(dir)
        .map(|mut r| r.next().is_none())
        .unwrap_or(false);
    let message = if empty {
        format!("empty directory: workflow \"{key}\" needs a {WORKFLOW_FILE}; skipped")
    } else {
        format!(
            "no {WORKFLOW_FILE} in this directory, so it is not a workflow; skipped \
             (name a folder of shared phase files with a leading `_` to silence this)"
        )
    };
    diagnostics.push(Diagnostic::warning(dir, message).in_workflow(key));
}

/// Reads a file as UTF-8 text (a leading byte-order mark removed), with a diagnostic naming the
/// problem when it cannot; also the file as read.
fn read_text(files: Files, path: &Path, what: &str) -> Result<(String, SourceFile), Diagnostic> {
    let raw = files.read(path).map_err(|e| {
        let message = match e.kind() {
            std::io::ErrorKind::NotFound => format!("{what} not found"),
            _ => format!("cannot read {what}: {e}"),
        };
        Diagnostic::error(path, message)
    })?;
    match std::str::from_utf8(&raw) {
        Ok(text) => {
            let text = text.strip_prefix('\u{feff}').unwrap_or(text).to_owned();
            Ok((text, SourceFile::new(path.to_owned(), raw)))
        }
        Err(e) => {
            let valid = e.valid_up_to();
            let line = raw[..valid].iter().filter(|b| **b == b'\n').count() + 1;
            Err(Diagnostic::error(
                path,
                format!("{what} is not valid UTF-8 (invalid byte at offset {valid})"),
            )
            .at_line(Some(line)))
        }
    }
}

/// The 1-based line where the top-level `key:` of a YAML document starts.
fn key_line(text: &str, key: &str) -> Option<usize> {
    key_path_line(text, &[key])
}

/// The 1-based line of the `n`th (0-based) item of the top-level `phases:` list, or the
/// `phases:` line itself when the list is written inline (`phases: [a.md, b.md]`).
fn entry_line(text: &str, n: usize) -> Option<usize> {
    key_line(text, "phases").map(|line| item_line(text, line, n))
}

/// A scalar as text (pi-workflows coerces list items with `String()`); `None` for collections.
fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

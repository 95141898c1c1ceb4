//! Loading workflow definitions from their roots: pi-workflows' directory format, every one of its
//! validation rules, and a diagnostic with file and line for each problem.
//!
//! This is the one part of `workflow/` that touches the file system, and it only reads. One broken
//! workflow never hides another: each is parsed on its own, and only the broken one is skipped.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs;
use std::ops::Range;
use std::path::{Component, Path, PathBuf};

use indexmap::IndexMap;
use serde_yaml_ng::{Mapping, Value};
use sha2::{Digest, Sha256};

use super::definition::{
    PhaseDefinition, PhaseEntry, RootKind, Show, ToolPolicy, ToolRule, WorkflowDefinition,
    WorkflowRoot, WorkflowSet,
};
use super::diagnostic::{Diagnostic, Severity};
use super::yaml::{item_line, key_path_line, parse_yaml, type_name};

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
                diagnostics: &mut diagnostics,
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

/// Reads a file as UTF-8 text, with a diagnostic naming the problem when it cannot.
fn read_text(path: &Path, what: &str) -> Result<(String, Vec<u8>), Diagnostic> {
    let bytes = fs::read(path).map_err(|e| {
        let message = match e.kind() {
            std::io::ErrorKind::NotFound => format!("{what} not found"),
            _ => format!("cannot read {what}: {e}"),
        };
        Diagnostic::error(path, message)
    })?;
    match String::from_utf8(bytes) {
        Ok(text) => {
            let text = text
                .strip_prefix('\u{feff}')
                .map(str::to_owned)
                .unwrap_or(text);
            let bytes = text.clone().into_bytes();
            Ok((text, bytes))
        }
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let bytes = e.as_bytes();
            let line = bytes[..valid].iter().filter(|b| **b == b'\n').count() + 1;
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

/// Parses one workflow directory, collecting every problem rather than stopping at the first.
struct WorkflowParser<'a> {
    key: &'a str,
    dir: &'a Path,
    root: &'a WorkflowRoot,
    canonical_root: &'a Path,
    diagnostics: &'a mut Vec<Diagnostic>,
}

impl WorkflowParser<'_> {
    fn error(&mut self, path: &Path, line: Option<usize>, message: impl Into<String>) {
        self.diagnostics.push(
            Diagnostic::error(path, message)
                .at_line(line)
                .in_workflow(self.key),
        );
    }

    fn warning(&mut self, path: &Path, line: Option<usize>, message: impl Into<String>) {
        self.diagnostics.push(
            Diagnostic::warning(path, message)
                .at_line(line)
                .in_workflow(self.key),
        );
    }

    fn push(&mut self, d: Diagnostic) {
        self.diagnostics.push(d.in_workflow(self.key));
    }

    fn parse(mut self) -> Option<WorkflowDefinition> {
        let file = self.dir.join(WORKFLOW_FILE);
        let errors_before = self.error_count();
        let (text, bytes) = match read_text(&file, WORKFLOW_FILE) {
            Ok(t) => t,
            Err(d) => {
                self.push(d);
                return None;
            }
        };
        let mut hasher = Sha256::new();
        hasher.update(WORKFLOW_FILE.as_bytes());
        hasher.update(&bytes);

        let value = match parse_yaml(&text, &file, 0) {
            Ok(v) => v,
            Err(d) => {
                self.push(d);
                return None;
            }
        };
        let map = match value {
            Value::Mapping(map) => map,
            other => {
                let msg = format!(
                    "{WORKFLOW_FILE} must be a mapping of fields (name, commandName, phases, …), found {}",
                    type_name(&other)
                );
                self.error(&file, None, msg);
                return None;
            }
        };
        let get = |k: &str| map.get(k);

        let name = self.required_string(&map, &text, &file, "name");
        let show = match get("show") {
            None | Some(Value::Null) => Show::User,
            Some(Value::String(s)) if s == "user" => Show::User,
            Some(Value::String(s)) if s == "workflows" => Show::Workflows,
            Some(other) => {
                let shown = scalar_text(other).unwrap_or_else(|| type_name(other).to_owned());
                self.warning(
                    &file,
                    key_line(&text, "show"),
                    format!("show must be \"user\" or \"workflows\", found \"{shown}\"; treated as \"user\""),
                );
                Show::User
            }
        };

        // For a workflow users start these two are required, so a wrong type is an error there.
        let (command_name, initial_message) = if show == Show::User {
            (
                self.text_field(&map, &text, &file, "commandName"),
                self.text_field(&map, &text, &file, "initialMessage"),
            )
        } else {
            (
                self.optional_string(&map, &text, &file, "commandName"),
                self.optional_string(&map, &text, &file, "initialMessage"),
            )
        };
        let wrong_type = |k: &str| {
            map.get(k)
                .is_some_and(|v| !v.is_null() && scalar_text(v).is_none())
        };
        if show == Show::User {
            match &command_name {
                None if wrong_type("commandName") => {}
                None => self.error(
                    &file,
                    None,
                    "commandName is required for a workflow users start (or set `show: workflows` for a subworkflow)",
                ),
                Some(c) if c.trim().is_empty() => {
                    self.error(&file, key_line(&text, "commandName"), "commandName is empty")
                }
                Some(c) if !c.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-') => {
                    self.error(
                        &file,
                        key_line(&text, "commandName"),
                        format!("commandName \"{c}\" may only contain letters, digits, `_` and `-`"),
                    )
                }
                Some(_) => {}
            }
            match &initial_message {
                None if wrong_type("initialMessage") => {}
                None => self.error(
                    &file,
                    None,
                    "initialMessage is required for a workflow users start (or set `show: workflows` for a subworkflow)",
                ),
                Some(m) if m.trim().is_empty() => {
                    self.error(&file, key_line(&text, "initialMessage"), "initialMessage is empty")
                }
                Some(_) => {}
            }
        }

        let loopable = match get("loopable") {
            None | Some(Value::Null) => true,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                let msg = format!("loopable must be true or false, found {}", type_name(other));
                self.error(&file, key_line(&text, "loopable"), msg);
                true
            }
        };
        let session_name_prefix = self
            .optional_string(&map, &text, &file, "sessionNamePrefix")
            .unwrap_or_else(|| DEFAULT_SESSION_NAME_PREFIX.to_owned());
        let session_name_max_length = match get("sessionNameMaxLength") {
            None | Some(Value::Null) => DEFAULT_SESSION_NAME_MAX_LENGTH,
            Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n > 0) => {
                usize::try_from(n.as_u64().unwrap_or_default()).unwrap_or(usize::MAX)
            }
            Some(other) => {
                let shown = scalar_text(other).unwrap_or_else(|| type_name(other).to_owned());
                self.warning(
                    &file,
                    key_line(&text, "sessionNameMaxLength"),
                    format!("sessionNameMaxLength must be a positive whole number, found {shown}; using {DEFAULT_SESSION_NAME_MAX_LENGTH}"),
                );
                DEFAULT_SESSION_NAME_MAX_LENGTH
            }
        };
        let role_instruction = self.optional_string(&map, &text, &file, "roleInstruction");
        let advance_reminder = self.optional_string(&map, &text, &file, "advanceReminder");
        let block_reason_template = self.optional_string(&map, &text, &file, "blockReasonTemplate");
        let completion_message = self.optional_string(&map, &text, &file, "completionMessage");
        let not_done_reminder = self.optional_string(&map, &text, &file, "notDoneReminder");

        let phases = self.phases(&map, &text, &file, &mut hasher);

        if self.error_count() > errors_before {
            return None;
        }
        let fingerprint = hasher
            .finalize()
            .iter()
            .take(16)
            .map(|b| format!("{b:02x}"))
            .collect();
        Some(WorkflowDefinition {
            key: self.key.to_owned(),
            name: name?,
            command_name: command_name.unwrap_or_default(),
            initial_message: initial_message.unwrap_or_default(),
            phases: phases?,
            show,
            loopable,
            session_name_prefix,
            session_name_max_length,
            role_instruction,
            advance_reminder,
            block_reason_template,
            completion_message,
            not_done_reminder,
            dir: self.dir.to_owned(),
            root: self.root.clone(),
            fingerprint,
        })
    }

    fn error_count(&self) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .count()
    }

    fn required_string(
        &mut self,
        map: &Mapping,
        text: &str,
        file: &Path,
        key: &str,
    ) -> Option<String> {
        match map.get(key) {
            None | Some(Value::Null) => {
                self.error(file, key_line(text, key), format!("{key} is required"));
                None
            }
            Some(Value::String(s)) if s.trim().is_empty() => {
                self.error(file, key_line(text, key), format!("{key} is empty"));
                None
            }
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => match scalar_text(other) {
                Some(s) => Some(s),
                None => {
                    let msg = format!("{key} must be text, found {}", type_name(other));
                    self.error(file, key_line(text, key), msg);
                    None
                }
            },
        }
    }

    /// A text field whose wrong type is an error; `None` when missing or of the wrong type.
    fn text_field(&mut self, map: &Mapping, text: &str, file: &Path, key: &str) -> Option<String> {
        match map.get(key) {
            None | Some(Value::Null) => None,
            Some(v) => match scalar_text(v) {
                Some(s) => Some(s),
                None => {
                    let msg = format!("{key} must be text, found {}", type_name(v));
                    self.error(file, key_line(text, key), msg);
                    None
                }
            },
        }
    }

    /// An optional text field; a value of the wrong type is reported and ignored.
    fn optional_string(
        &mut self,
        map: &Mapping,
        text: &str,
        file: &Path,
        key: &str,
    ) -> Option<String> {
        match map.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => match scalar_text(other) {
                Some(s) => Some(s),
                None => {
                    let msg = format!("{key} must be text, found {}; ignored", type_name(other));
                    self.warning(file, key_line(text, key), msg);
                    None
                }
            },
        }
    }

    fn phases(
        &mut self,
        map: &Mapping,
        text: &str,
        file: &Path,
        hasher: &mut Sha256,
    ) -> Option<Vec<PhaseEntry>> {
        let phases_line = key_line(text, "phases");
        let list = match map.get("phases") {
            None | Some(Value::Null) => {
                self.error(
                    file,
                    phases_line,
                    "phases is required: a list of phase files or {subworkflow: KEY} entries",
                );
                return None;
            }
            Some(Value::Sequence(list)) if list.is_empty() => {
                self.error(
                    file,
                    phases_line,
                    "phases is empty: a workflow needs at least one phase",
                );
                return None;
            }
            Some(Value::Sequence(list)) => list,
            Some(other) => {
                let msg = format!("phases must be a list, found {}", type_name(other));
                self.error(file, phases_line, msg);
                return None;
            }
        };

        let mut entries = Vec::with_capacity(list.len());
        let mut ids: HashMap<String, PathBuf> = HashMap::new();
        let mut ok = true;
        for (i, item) in list.iter().enumerate() {
            let entry = match item {
                Value::String(rel) => self.phase_file(rel, entry_line(text, i), file, hasher),
                Value::Mapping(m) => match m.get("subworkflow") {
                    Some(Value::String(k)) if !k.trim().is_empty() => {
                        Some(PhaseEntry::Subworkflow(k.clone()))
                    }
                    Some(Value::String(_)) => {
                        let line = entry_line(text, i);
                        self.error(
                            file,
                            line,
                            format!("phases[{i}]: subworkflow needs a workflow key"),
                        );
                        None
                    }
                    _ => {
                        self.error(
                            file,
                            entry_line(text, i),
                            format!("phases[{i}]: invalid phase entry: expected a file name or {{subworkflow: KEY}}"),
                        );
                        None
                    }
                },
                other => {
                    self.error(
                        file,
                        entry_line(text, i),
                        format!(
                            "phases[{i}]: invalid phase entry: expected a file name or {{subworkflow: KEY}}, found {}",
                            type_name(other)
                        ),
                    );
                    None
                }
            };
            match entry {
                Some(PhaseEntry::Phase(p)) => {
                    if let Some(first) = ids.get(&p.id) {
                        let msg = format!(
                            "duplicate phase id \"{}\" (also used by {})",
                            p.id,
                            first.display()
                        );
                        let phase_file = p.file.clone();
                        let line = fs::read_to_string(&phase_file)
                            .ok()
                            .and_then(|t| key_line(&t, "id"))
                            .or(Some(1));
                        self.error(&phase_file, line, msg);
                        ok = false;
                    } else {
                        ids.insert(p.id.clone(), p.file.clone());
                    }
                    entries.push(PhaseEntry::Phase(p));
                }
                Some(entry) => entries.push(entry),
                None => ok = false,
            }
        }
        ok.then_some(entries)
    }

    fn phase_file(
        &mut self,
        rel: &str,
        line: Option<usize>,
        file: &Path,
        hasher: &mut Sha256,
    ) -> Option<PhaseEntry> {
        if rel.trim().is_empty() {
            self.error(file, line, "empty phase file name");
            return None;
        }
        let path = self.dir.join(rel);
        if !self.inside_root(&path) {
            self.error(
                file,
                line,
                format!(
                    "phase file path \"{rel}\" escapes the workflows root {}",
                    self.root.path.display()
                ),
            );
            return None;
        }
        let (content, bytes) = match read_text(&path, "phase file") {
            Ok(t) => t,
            Err(d) => {
                // Point at the entry in workflow.yaml for a missing file, at the file otherwise.
                if !path.exists() {
                    self.error(file, line, format!("phase file \"{rel}\" not found"));
                } else {
                    self.push(d);
                }
                return None;
            }
        };
        hasher.update(rel.as_bytes());
        hasher.update(&bytes);
        parse_phase(&content, &path, self.diagnostics, self.key).map(PhaseEntry::Phase)
    }

    /// pi-workflows' path-safety rule: the real path of the phase file must lie inside the real
    /// path of the root. A path that does not exist is checked lexically.
    fn inside_root(&self, path: &Path) -> bool {
        match fs::canonicalize(path) {
            Ok(real) => real.starts_with(self.canonical_root) && real != self.canonical_root,
            Err(_) => {
                let canonical_dir =
                    fs::canonicalize(self.dir).unwrap_or_else(|_| self.dir.to_owned());
                let rel = path.strip_prefix(self.dir).unwrap_or(path);
                let lexical = normalize(&canonical_dir.join(rel));
                lexical.starts_with(self.canonical_root) && lexical != self.canonical_root
            }
        }
    }
}

/// Removes `.` and `..` components without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Splits a phase file into its frontmatter (and the 1-based line the frontmatter starts on) and
/// its body.
fn split_frontmatter(content: &str) -> Result<(&str, usize, &str), &'static str> {
    let mut lines = content.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err("a phase file must start with YAML frontmatter: a `---` line, the fields (id, name, emoji, …), and another `---` line");
    }
    let start = first.len();
    let mut offset = start;
    for line in lines {
        if line.trim_end() == "---" || line.trim_end() == "..." {
            let front = &content[start..offset];
            let body = &content[offset + line.len()..];
            return Ok((front, 2, body));
        }
        offset += line.len();
    }
    Err("the frontmatter is not closed: add a `---` line after the fields")
}

/// Collects the problems of one file.
struct Sink<'a> {
    diagnostics: &'a mut Vec<Diagnostic>,
    path: &'a Path,
    key: &'a str,
    errors: usize,
}

impl Sink<'_> {
    fn error(&mut self, line: Option<usize>, msg: impl Into<String>) {
        self.errors += 1;
        self.diagnostics.push(
            Diagnostic::error(self.path, msg)
                .at_line(line)
                .in_workflow(self.key),
        );
    }

    fn warning(&mut self, line: Option<usize>, msg: impl Into<String>) {
        self.diagnostics.push(
            Diagnostic::warning(self.path, msg)
                .at_line(line)
                .in_workflow(self.key),
        );
    }
}

/// Parses one phase file. Problems go to `diagnostics`; `None` when the phase is unusable.
fn parse_phase(
    content: &str,
    path: &Path,
    diagnostics: &mut Vec<Diagnostic>,
    key: &str,
) -> Option<PhaseDefinition> {
    let mut sink = Sink {
        diagnostics,
        path,
        key,
        errors: 0,
    };
    let (front, front_line, body) = match split_frontmatter(content) {
        Ok(parts) => parts,
        Err(msg) => {
            sink.error(Some(1), msg);
            return None;
        }
    };
    let value = match parse_yaml(front, path, front_line - 1) {
        Ok(v) => v,
        Err(d) => {
            sink.diagnostics.push(d.in_workflow(key));
            return None;
        }
    };
    let map = match value {
        Value::Mapping(m) => m,
        Value::Null => Mapping::new(),
        other => {
            sink.error(
                Some(front_line),
                format!(
                    "the frontmatter must be a mapping of fields, found {}",
                    type_name(&other)
                ),
            );
            return None;
        }
    };
    let line_of = |k: &str| key_line(front, k).map(|l| l + front_line - 1);

    let required = |sink: &mut Sink, k: &str| -> Option<String> {
        match map.get(k) {
            None | Some(Value::Null) => {
                sink.error(
                    Some(front_line),
                    format!("phase {k} is required in the frontmatter"),
                );
                None
            }
            Some(v) => match scalar_text(v) {
                Some(s) if s.trim().is_empty() => {
                    sink.error(line_of(k), format!("phase {k} is empty"));
                    None
                }
                Some(s) => Some(s),
                None => {
                    sink.error(
                        line_of(k),
                        format!("phase {k} must be text, found {}", type_name(v)),
                    );
                    None
                }
            },
        }
    };
    let id = required(&mut sink, "id");
    let name = required(&mut sink, "name");
    let emoji = required(&mut sink, "emoji");

    let tools = match map.get("tools") {
        None | Some(Value::Null) => None,
        Some(Value::Mapping(t)) => {
            let list = |sink: &mut Sink, k: &str| -> Option<Vec<ToolRule>> {
                match t.get(k) {
                    None => None,
                    Some(Value::Null) => {
                        sink.warning(
                            line_of("tools"),
                            format!("tools.{k} has no value, so it restricts nothing; write `{k}: []` for an empty list"),
                        );
                        None
                    }
                    Some(Value::Sequence(items)) => {
                        let mut out = Vec::with_capacity(items.len());
                        for item in items {
                            match scalar_text(item) {
                                Some(s) => match ToolRule::parse(&s) {
                                    Ok(rule) => {
                                        if !super::tools::is_known(rule.tool()) {
                                            let hint = super::tools::suggestion(rule.tool())
                                                .map(|n| format!(" (did you mean {n}?)"))
                                                .unwrap_or_default();
                                            sink.warning(
                                                line_of("tools"),
                                                format!(
                                                    "tools.{k} names \"{}\", which is no tool rawko knows{hint}; it applies only to a tool of exactly that name",
                                                    rule.tool()
                                                ),
                                            );
                                        }
                                        out.push(rule)
                                    }
                                    Err(e) => sink.error(
                                        line_of("tools"),
                                        format!("invalid tool rule \"{s}\": {e}"),
                                    ),
                                },
                                None => sink.error(
                                    line_of("tools"),
                                    format!(
                                        "tools.{k} must list tool names, found {}",
                                        type_name(item)
                                    ),
                                ),
                            }
                        }
                        Some(out)
                    }
                    Some(other) => {
                        sink.error(
                            line_of("tools"),
                            format!(
                                "tools.{k} must be a list of tool names, found {}",
                                type_name(other)
                            ),
                        );
                        None
                    }
                }
            };
            let white = list(&mut sink, "whitelist");
            let black = list(&mut sink, "blacklist");
            match (white, black) {
                (Some(_), Some(_)) => {
                    sink.error(
                        line_of("tools"),
                        "tools has both whitelist and blacklist; a phase may use only one",
                    );
                    None
                }
                (Some(w), None) => Some(ToolPolicy::Whitelist(w)),
                (None, Some(b)) => Some(ToolPolicy::Blacklist(b)),
                (None, None) => {
                    if !t.contains_key("whitelist") && !t.contains_key("blacklist") {
                        sink.warning(
                            line_of("tools"),
                            "tools has neither whitelist nor blacklist, so it restricts nothing",
                        );
                    }
                    None
                }
            }
        }
        Some(other) => {
            sink.error(
                line_of("tools"),
                format!(
                    "tools must be a mapping with whitelist or blacklist, found {}",
                    type_name(other)
                ),
            );
            None
        }
    };

    let available_profiles = match map.get("availableProfiles") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Sequence(items)) => items.iter().filter_map(scalar_text).collect(),
        Some(other) => {
            sink.warning(
                line_of("availableProfiles"),
                format!(
                    "availableProfiles must be a list of profile names, found {}; ignored",
                    type_name(other)
                ),
            );
            Vec::new()
        }
    };
    let agent = match map.get("agent") {
        None | Some(Value::Null) => None,
        Some(v) => match scalar_text(v) {
            Some(s) => Some(s),
            None => {
                sink.error(
                    line_of("agent"),
                    format!("agent must be an agent name, found {}", type_name(v)),
                );
                None
            }
        },
    };

    let instructions = body.trim();
    if instructions.is_empty() {
        let body_line = content.lines().count().max(1);
        sink.error(
            Some(body_line),
            "phase has no instructions: write them as the Markdown body after the frontmatter",
        );
    }

    if sink.errors > 0 {
        return None;
    }
    Some(PhaseDefinition {
        id: id?,
        name: name?,
        emoji: emoji?,
        tools,
        available_profiles,
        agent,
        instructions: instructions.to_owned(),
        file: path.to_owned(),
    })
}

/// The line in `def`'s workflow.yaml of its reference to subworkflow `target`.
fn ref_line(def: &WorkflowDefinition, target: &str) -> Option<usize> {
    let index = def
        .phases
        .iter()
        .position(|e| matches!(e, PhaseEntry::Subworkflow(k) if k == target))?;
    let text = fs::read_to_string(def.workflow_file()).ok()?;
    entry_line(&text, index)
}

/// Drops every workflow that takes part in a subworkflow cycle (a self-reference counts).
fn remove_cycles(
    defs: &mut IndexMap<String, WorkflowDefinition>,
    skipped: &mut Vec<SkippedWorkflow>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut in_cycle: Vec<(String, Vec<String>)> = Vec::new();
    let mut done: HashSet<String> = HashSet::new();
    for start in defs.keys() {
        if done.contains(start) {
            continue;
        }
        // Iterative depth-first search; `stack` is the current path (grey nodes).
        let mut stack: Vec<(String, usize)> = vec![(start.clone(), 0)];
        let mut on_path: HashSet<String> = HashSet::from([start.clone()]);
        while let Some((node, next_edge)) = stack.last().cloned() {
            let refs: Vec<&String> = defs[&node]
                .phases
                .iter()
                .filter_map(|e| match e {
                    PhaseEntry::Subworkflow(k) if defs.contains_key(k) => Some(k),
                    _ => None,
                })
                .collect();
            if let Some(target) = refs.get(next_edge) {
                if let Some(last) = stack.last_mut() {
                    last.1 += 1;
                }
                let target = (*target).clone();
                if on_path.contains(&target) {
                    let pos = stack.iter().position(|(k, _)| *k == target).unwrap_or(0);
                    let mut cycle: Vec<String> =
                        stack[pos..].iter().map(|(k, _)| k.clone()).collect();
                    cycle.push(target.clone());
                    in_cycle.push((target, cycle));
                } else if !done.contains(&target) {
                    on_path.insert(target.clone());
                    stack.push((target, 0));
                }
            } else {
                stack.pop();
                on_path.remove(&node);
                done.insert(node);
            }
        }
    }
    let mut removed: HashSet<String> = HashSet::new();
    for (_, cycle) in &in_cycle {
        let shown = cycle
            .iter()
            .map(|k| format!("\"{k}\""))
            .collect::<Vec<_>>()
            .join(" → ");
        for (j, key) in cycle[..cycle.len() - 1].iter().enumerate() {
            if !removed.insert(key.clone()) {
                continue;
            }
            if let Some(def) = defs.get(key) {
                let line = ref_line(def, &cycle[j + 1]);
                diagnostics.push(
                    Diagnostic::error(
                        def.workflow_file(),
                        format!("subworkflow cycle {shown}; workflow \"{key}\" skipped"),
                    )
                    .at_line(line)
                    .in_workflow(key),
                );
            }
        }
    }
    for key in removed {
        if let Some(def) = defs.shift_remove(&key) {
            skipped.push(SkippedWorkflow {
                key,
                dir: def.dir,
                root: def.root,
            });
        }
    }
}

/// Drops workflows that reference a subworkflow the set lacks, repeating until none do (a removal
/// can strand the workflows that referenced the removed one).
fn remove_dangling_refs(
    defs: &mut IndexMap<String, WorkflowDefinition>,
    invalid: &HashSet<String>,
    skipped: &mut Vec<SkippedWorkflow>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut removed_here: HashSet<String> = HashSet::new();
    loop {
        let dangling: Vec<(String, String)> = defs
            .values()
            .filter_map(|def| {
                def.phases.iter().find_map(|e| match e {
                    PhaseEntry::Subworkflow(k) if !defs.contains_key(k) => {
                        Some((def.key.clone(), k.clone()))
                    }
                    _ => None,
                })
            })
            .collect();
        if dangling.is_empty() {
            break;
        }
        for (key, target) in dangling {
            let Some(def) = defs.shift_remove(&key) else {
                continue;
            };
            let why = if removed_here.contains(&target) {
                format!("references subworkflow \"{target}\", which was skipped because it references a missing workflow")
            } else if invalid.contains(&target) || skipped.iter().any(|s| s.key == target) {
                format!("references subworkflow \"{target}\", which was skipped because of its own errors")
            } else {
                format!("references unknown subworkflow \"{target}\"")
            };
            let file = def.workflow_file();
            let line = ref_line(&def, &target);
            diagnostics.push(
                Diagnostic::error(file, format!("{why}; workflow \"{key}\" skipped"))
                    .at_line(line)
                    .in_workflow(&key),
            );
            removed_here.insert(key.clone());
            skipped.push(SkippedWorkflow {
                key,
                dir: def.dir,
                root: def.root,
            });
        }
    }
}

/// Two user workflows with one commandName: the first keeps it (pi-workflows' rule), the rest
/// get a warning.
fn warn_duplicate_commands(
    defs: &IndexMap<String, WorkflowDefinition>,
    diagnostics: &mut Vec<Diagnostic>,
) {
    let mut first: HashMap<&str, &WorkflowDefinition> = HashMap::new();
    for def in defs.values().filter(|d| d.show == Show::User) {
        match first.get(def.command_name.as_str()) {
            Some(winner) => {
                let file = def.workflow_file();
                let line = fs::read_to_string(&file)
                    .ok()
                    .and_then(|t| key_line(&t, "commandName"));
                diagnostics.push(
                    Diagnostic::warning(
                        file,
                        format!(
                            "commandName \"{}\" is also used by workflow \"{}\" ({}); that one is used for the command",
                            def.command_name,
                            winner.key,
                            winner.workflow_file().display()
                        ),
                    )
                    .at_line(line)
                    .in_workflow(&def.key),
                );
            }
            None => {
                first.insert(def.command_name.as_str(), def);
            }
        }
    }
}

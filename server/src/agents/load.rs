//! Loading agents from their roots: every `*.yaml`, `*.yml` and `*.md` file of each root directory,
//! each parsed on its own, then the set validated. A later root's agent replaces an earlier one of
//! the same name; two files of one root with one name are an error on the second.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};

use std::sync::Arc;

use indexmap::IndexMap;

use super::parse::parse_bytes;
use super::validate::validate_agent;
use super::{AgentDefinition, AgentSet, Diagnostic, Severity};
use crate::workflow::source::{Files, SourceFile};

/// The roots searched for agents, lowest precedence first: `$XDG_CONFIG_HOME/rawko/agents` (or
/// `~/.config/rawko/agents`), then `<workspace>/.rawko/agents`.
///
/// `env` looks up environment variables (passed in so callers and tests decide what it sees).
pub fn default_roots(workspace: &Path, env: impl Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let non_empty = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let config =
        non_empty("XDG_CONFIG_HOME").or_else(|| non_empty("HOME").map(|h| h.join(".config")));
    let mut roots = Vec::new();
    if let Some(config) = config {
        roots.push(config.join("rawko").join("agents"));
    }
    roots.push(workspace.join(".rawko").join("agents"));
    roots
}

/// An agent file that did not make it into the set (its diagnostics say why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedAgent {
    /// The name the file gives, when it gives a valid one.
    pub name: Option<String>,
    pub file: PathBuf,
}

/// What loading produced: the usable agents and every problem found.
#[derive(Debug, Clone, Default)]
pub struct AgentLoadOutcome {
    /// The agents without errors, set validation included.
    pub agents: AgentSet,
    pub diagnostics: Vec<Diagnostic>,
    /// The files left out because of errors.
    pub skipped: Vec<SkippedAgent>,
}

impl AgentLoadOutcome {
    pub fn has_errors(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }
}

/// The file behind a name so far, and the diagnostics it produced.
struct Candidate {
    agent: Option<AgentDefinition>,
    file: PathBuf,
    diagnostics: Range<usize>,
}

/// Loads every agent under `roots` (lowest precedence first) and validates the set.
pub fn load(roots: &[PathBuf]) -> AgentLoadOutcome {
    let mut diagnostics = Vec::new();
    let folders: Vec<Vec<PathBuf>> = roots
        .iter()
        .filter_map(|root| list_root(root, &mut diagnostics))
        .collect();
    load_files(&folders, Files::Disk, diagnostics)
}

/// Loads the agents a task pinned: the files of `order`, their contents in `files`, with the
/// same rules as [`load`]; nothing is read from disk.
pub fn load_pinned(order: &[PathBuf], files: &HashMap<PathBuf, Arc<[u8]>>) -> AgentLoadOutcome {
    load_files(&[order.to_vec()], Files::Pinned(files), Vec::new())
}

/// Loads the agent files of each folder in turn (lowest precedence first), read from `files`.
fn load_files(
    folders: &[Vec<PathBuf>],
    files: Files,
    mut diagnostics: Vec<Diagnostic>,
) -> AgentLoadOutcome {
    let mut skipped = Vec::new();
    let mut candidates: IndexMap<String, Candidate> = IndexMap::new();
    let mut sources: HashMap<PathBuf, SourceFile> = HashMap::new();

    for folder in folders {
        let mut in_root: HashMap<String, PathBuf> = HashMap::new();
        for file in folder.iter().cloned() {
            let first = diagnostics.len();
            let parsed = match files.read(&file) {
                Ok(bytes) => {
                    let parsed = parse_bytes(&file, &bytes);
                    sources.insert(file.clone(), SourceFile::new(file.clone(), bytes));
                    parsed
                }
                Err(e) => super::ParsedAgent::failed(Diagnostic::error(
                    &file,
                    format!("cannot read agent file: {e}"),
                )),
            };
            diagnostics.extend(parsed.diagnostics);
            let Some(name) = parsed.name else {
                skipped.push(SkippedAgent { name: None, file });
                continue;
            };
            if let Some(earlier) = in_root.get(&name) {
                diagnostics.push(
                    Diagnostic::error(
                        &file,
                        format!(
                            "agent \"{name}\" is already defined by {} in the same folder; this file is not used",
                            earlier.display()
                        ),
                    )
                    .at_line(parsed.name_line),
                );
                skipped.push(SkippedAgent {
                    name: Some(name),
                    file,
                });
                continue;
            }
            in_root.insert(name.clone(), file.clone());
            let candidate = Candidate {
                agent: parsed.agent,
                file: file.clone(),
                diagnostics: first..diagnostics.len(),
            };
            if let Some(old) = candidates.insert(name, candidate) {
                // The earlier definition is not used: its problems no longer make anything invalid.
                for d in &mut diagnostics[old.diagnostics] {
                    d.severity = Severity::Warning;
                    d.message = format!(
                        "{} (this agent is overridden by {} and not used)",
                        d.message,
                        file.display()
                    );
                }
            }
        }
    }

    let mut left_out: HashSet<String> = HashSet::new();
    let mut agents = AgentSet::new();
    for (name, candidate) in candidates {
        match candidate.agent {
            Some(agent) => {
                agents.insert(agent);
            }
            None => {
                left_out.insert(name.clone());
                skipped.push(SkippedAgent {
                    name: Some(name),
                    file: candidate.file,
                });
            }
        }
    }

    // Leaving out an agent can strand the agents whose transitions lead to it: repeat until none
    // has an error, then report the warnings of those that stay.
    loop {
        let broken: Vec<(String, Vec<Diagnostic>)> = agents
            .iter()
            .map(|a| (a.name.clone(), validate_agent(&agents, a, &left_out)))
            .filter(|(_, ds)| ds.iter().any(|d| d.severity == Severity::Error))
            .collect();
        if broken.is_empty() {
            break;
        }
        for (name, ds) in broken {
            diagnostics.extend(ds);
            if let Some(agent) = agents.remove(&name) {
                skipped.push(SkippedAgent {
                    name: Some(name.clone()),
                    file: agent.file,
                });
            }
            left_out.insert(name);
        }
    }
    for agent in agents.iter() {
        diagnostics.extend(validate_agent(&agents, agent, &left_out));
    }
    let read: Vec<SourceFile> = agents
        .iter()
        .filter_map(|a| sources.remove(&a.file))
        .collect();
    agents.set_sources(read);

    AgentLoadOutcome {
        agents,
        diagnostics,
        skipped,
    }
}

/// The agent files of a root, sorted by name; `None` when the root does not exist or cannot be
/// read (the latter with a diagnostic).
fn list_root(root: &Path, diagnostics: &mut Vec<Diagnostic>) -> Option<Vec<PathBuf>> {
    let meta = match fs::metadata(root) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => {
            diagnostics.push(Diagnostic::error(
                root,
                format!("cannot read agents folder: {e}"),
            ));
            return None;
        }
    };
    if !meta.is_dir() {
        diagnostics.push(Diagnostic::error(root, "agents folder is not a directory"));
        return None;
    }
    let read = match fs::read_dir(root) {
        Ok(read) => read,
        Err(e) => {
            diagnostics.push(Diagnostic::error(
                root,
                format!("cannot read agents folder: {e}"),
            ));
            return None;
        }
    };
    let mut files = Vec::new();
    for entry in read.filter_map(Result::ok) {
        let path = entry.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            if is_agent_file_name(&path.file_name().unwrap_or_default().to_string_lossy()) {
                diagnostics.push(Diagnostic::error(
                    &path,
                    "agent file name is not valid UTF-8; rename it",
                ));
            }
            continue;
        };
        // Hidden files (editor swap files among them) and a README are not agents.
        if name.starts_with('.') || name.eq_ignore_ascii_case("README.md") {
            continue;
        }
        if is_agent_file_name(name) && !path.is_dir() {
            files.push(path);
        }
    }
    files.sort();
    Some(files)
}

fn is_agent_file_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".yaml", ".yml", ".md"]
        .iter()
        .any(|ext| lower.len() > ext.len() && lower.ends_with(ext))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_file_names() {
        for ok in ["a.yaml", "a.YML", "Planner.md", "x.y.yml"] {
            assert!(is_agent_file_name(ok), "{ok}");
        }
        for not in ["a.txt", "yaml", ".md", "a.yaml~", "a.json"] {
            assert!(!is_agent_file_name(not), "{not}");
        }
    }

    #[test]
    fn default_roots_prefer_xdg_config_home() {
        let ws = Path::new("/ws");
        let env = |k: &str| match k {
            "HOME" => Some(OsString::from("/home/u")),
            "XDG_CONFIG_HOME" => Some(OsString::from("/xdg")),
            _ => None,
        };
        assert_eq!(
            default_roots(ws, env),
            [
                PathBuf::from("/xdg/rawko/agents"),
                PathBuf::from("/ws/.rawko/agents")
            ]
        );
    }
}

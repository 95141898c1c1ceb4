//! A task's pinned definitions (docs/architecture.md, `engine/`): the workflow it runs with
//! every subworkflow it reaches, and the agents it may hand over to, as they were read when the
//! task started. Their files are kept in the store by digest (`store::definitions`), each list
//! of them (a manifest) is kept the same way, and the task's log names the two manifests' digests
//! (`started.definitions`, later `pinned` records). A task that resumes runs under the pinned
//! copies, wherever and whenever it resumes; the files on disk are only compared with them, and
//! what differs is told, never adopted.
//!
//! Pinning is cheap for many tasks of one workflow: the manifests and files are shared by
//! digest, and a process that has made a digest durable does not write it again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, Weak};

use serde::{Deserialize, Serialize};

use crate::agents::AgentSet;
use crate::store::definitions::definitions;
use crate::workflow::source::{digest, SourceFile};
use crate::workflow::{PhaseEntry, PinnedWorkflow, WorkflowRoot, WorkflowSet};

/// The version of the manifests this rawko writes and reads.
const MANIFEST_VERSION: u32 = 1;

/// A pinned file: where it was read and the digest of what was read (its copy's name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PinnedFile {
    pub path: PathBuf,
    pub sha256: String,
}

impl From<&SourceFile> for PinnedFile {
    fn from(s: &SourceFile) -> Self {
        PinnedFile {
            path: s.path.clone(),
            sha256: s.digest.clone(),
        }
    }
}

/// One pinned workflow: its key, where it was loaded from, and its files (`workflow.yaml`
/// first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowPin {
    pub key: String,
    pub dir: PathBuf,
    pub root: WorkflowRoot,
    pub files: Vec<PinnedFile>,
}

/// The workflows a task runs under: its workflow and every subworkflow it reaches (none for a
/// task without a workflow), and the roots they were loaded from (the disk is compared there).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowsManifest {
    pub v: u32,
    pub roots: Vec<WorkflowRoot>,
    pub workflows: Vec<WorkflowPin>,
}

/// The agents a task may run (every agent of the set it started with) and their roots.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentsManifest {
    pub v: u32,
    pub roots: Vec<PathBuf>,
    pub agents: Vec<PinnedFile>,
}

/// What a task's log names: the digests of its manifests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinRefs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflows: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agents: Option<String>,
}

impl PinRefs {
    /// These refs with those `later` names replacing theirs.
    pub fn merged(&self, later: &PinRefs) -> PinRefs {
        PinRefs {
            workflows: later.workflows.clone().or_else(|| self.workflows.clone()),
            agents: later.agents.clone().or_else(|| self.agents.clone()),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.workflows.is_none() && self.agents.is_none()
    }
}

/// Pinned workflows: the manifest's digest, the manifest, and the set loaded from the copies.
#[derive(Debug)]
pub struct PinnedWorkflows {
    pub digest: String,
    pub manifest: WorkflowsManifest,
    pub set: Arc<WorkflowSet>,
}

/// Pinned agents: the manifest's digest, the manifest, and the set loaded from the copies.
#[derive(Debug)]
pub struct PinnedAgents {
    pub digest: String,
    pub manifest: AgentsManifest,
    pub set: Arc<AgentSet>,
}

/// What a task knows of its pinned definitions (empty for a task kept in memory only).
#[derive(Debug, Clone, Default)]
pub struct Pins {
    pub workflows: Option<Arc<PinnedWorkflows>>,
    pub agents: Option<Arc<PinnedAgents>>,
    /// Why the task logs a `pinned` record naming them when it resumes (a task stored before
    /// rawko pinned, pinned now).
    pub record_on_resume: Option<String>,
    /// What the task tells once it has resumed: that it was not pinned, or what changed on disk.
    pub resume_note: Option<String>,
    /// The files on disk found different from the pinned copies at the resume, for the log.
    pub resume_changes: Vec<LoggedChange>,
}

impl Pins {
    /// The digests the task's log names.
    pub fn refs(&self) -> PinRefs {
        PinRefs {
            workflows: self.workflows.as_ref().map(|w| w.digest.clone()),
            agents: self.agents.as_ref().map(|a| a.digest.clone()),
        }
    }
}

/// The workflows `key` reaches in `set` (itself first, then its subworkflows depth first), each
/// once.
fn reachable<'a>(set: &'a WorkflowSet, key: &str) -> Vec<&'a crate::workflow::WorkflowDefinition> {
    let mut out: Vec<&crate::workflow::WorkflowDefinition> = Vec::new();
    let mut pending = vec![key.to_owned()];
    while let Some(key) = pending.pop() {
        if out.iter().any(|d| d.key == key) {
            continue;
        }
        let Some(def) = set.get(&key) else { continue };
        out.push(def);
        for entry in def.phases.iter().rev() {
            if let PhaseEntry::Subworkflow(k) = entry {
                pending.push(k.clone());
            }
        }
    }
    out
}

/// Pins workflow `key` of `set` (with its subworkflows; nothing for `None`): its files and
/// manifest are durable in `store` when this returns. Blocks.
pub fn pin_workflows(
    store: &Path,
    key: Option<&str>,
    set: Arc<WorkflowSet>,
    roots: &[WorkflowRoot],
) -> Result<PinnedWorkflows, String> {
    let defs = key.map(|k| reachable(&set, k)).unwrap_or_default();
    let manifest = WorkflowsManifest {
        v: MANIFEST_VERSION,
        roots: roots.to_vec(),
        workflows: defs
            .iter()
            .map(|d| WorkflowPin {
                key: d.key.clone(),
                dir: d.dir.clone(),
                root: d.root.clone(),
                files: d.sources.iter().map(PinnedFile::from).collect(),
            })
            .collect(),
    };
    let sources: Vec<&SourceFile> = defs.iter().flat_map(|d| d.sources.iter()).collect();
    let digest = put(store, &manifest, &sources)?;
    Ok(PinnedWorkflows {
        digest,
        manifest,
        set,
    })
}

/// Pins every agent of `set`. Blocks.
pub fn pin_agents(
    store: &Path,
    set: Arc<AgentSet>,
    roots: &[PathBuf],
) -> Result<PinnedAgents, String> {
    let manifest = AgentsManifest {
        v: MANIFEST_VERSION,
        roots: roots.to_vec(),
        agents: set.sources().iter().map(PinnedFile::from).collect(),
    };
    let sources: Vec<&SourceFile> = set.sources().iter().collect();
    let digest = put(store, &manifest, &sources)?;
    Ok(PinnedAgents {
        digest,
        manifest,
        set,
    })
}

/// Makes `sources` and `manifest` durable in `store`; returns the manifest's digest.
fn put(store: &Path, manifest: &impl Serialize, sources: &[&SourceFile]) -> Result<String, String> {
    let json = serde_json::to_vec(manifest).map_err(|e| e.to_string())?;
    let manifest_digest = digest(&json);
    let mut items: Vec<(&str, &[u8])> = sources
        .iter()
        .map(|s| (s.digest.as_str(), &*s.bytes))
        .collect();
    // The manifest last: it names the others.
    items.push((&manifest_digest, &json));
    definitions(store).put(&items).map_err(|e| {
        format!(
            "cannot pin the task's definitions in {}: {e}",
            store.display()
        )
    })?;
    Ok(manifest_digest)
}

/// The manifest of `digest`, read and checked.
fn manifest<T: for<'de> Deserialize<'de>>(store: &Path, digest: &str) -> Result<T, String> {
    let bytes = definitions(store).get(digest).map_err(|e| e.to_string())?;
    serde_json::from_slice(&bytes)
        .map_err(|e| format!("the pinned list {digest} is unreadable: {e}"))
}

/// Pinned sets already loaded in this process, by manifest digest: tasks resumed together that
/// pinned the same definitions share one copy.
static LOADED_WORKFLOWS: LazyLock<Mutex<HashMap<String, Weak<PinnedWorkflows>>>> =
    LazyLock::new(Default::default);
static LOADED_AGENTS: LazyLock<Mutex<HashMap<String, Weak<PinnedAgents>>>> =
    LazyLock::new(Default::default);

fn cached<T>(cache: &Mutex<HashMap<String, Weak<T>>>, digest: &str) -> Option<Arc<T>> {
    let mut map = cache.lock().unwrap_or_else(|p| p.into_inner());
    map.retain(|_, w| w.strong_count() > 0);
    map.get(digest).and_then(Weak::upgrade)
}

fn remember<T>(cache: &Mutex<HashMap<String, Weak<T>>>, digest: &str, value: &Arc<T>) {
    let mut map = cache.lock().unwrap_or_else(|p| p.into_inner());
    map.insert(digest.to_owned(), Arc::downgrade(value));
}

/// The workflows pinned as `digest`, loaded from their copies (never from disk). Blocks.
pub fn load_workflows(store: &Path, digest: &str) -> Result<Arc<PinnedWorkflows>, String> {
    if let Some(hit) = cached(&LOADED_WORKFLOWS, digest) {
        return Ok(hit);
    }
    let manifest: WorkflowsManifest = manifest(store, digest)?;
    let defs = definitions(store);
    let mut pinned = Vec::with_capacity(manifest.workflows.len());
    for w in &manifest.workflows {
        let mut files = HashMap::new();
        for f in &w.files {
            let bytes = defs.get(&f.sha256).map_err(|e| e.to_string())?;
            files.insert(f.path.clone(), Arc::from(bytes));
        }
        pinned.push(PinnedWorkflow {
            key: w.key.clone(),
            dir: w.dir.clone(),
            root: w.root.clone(),
            files,
        });
    }
    let outcome = crate::workflow::load_pinned(&pinned);
    if let Some(missing) = manifest
        .workflows
        .iter()
        .find(|w| outcome.workflows.get(&w.key).is_none())
    {
        let why = outcome
            .diagnostics
            .iter()
            .find(|d| d.severity == crate::workflow::Severity::Error)
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        return Err(format!(
            "the pinned copy of workflow \"{}\" does not load{why}",
            missing.key
        ));
    }
    let loaded = Arc::new(PinnedWorkflows {
        digest: digest.to_owned(),
        manifest,
        set: Arc::new(outcome.workflows),
    });
    remember(&LOADED_WORKFLOWS, digest, &loaded);
    Ok(loaded)
}

/// The agents pinned as `digest`, loaded from their copies (never from disk). Blocks.
pub fn load_agents(store: &Path, digest: &str) -> Result<Arc<PinnedAgents>, String> {
    if let Some(hit) = cached(&LOADED_AGENTS, digest) {
        return Ok(hit);
    }
    let manifest: AgentsManifest = manifest(store, digest)?;
    let defs = definitions(store);
    let mut files = HashMap::new();
    let mut order = Vec::with_capacity(manifest.agents.len());
    for f in &manifest.agents {
        let bytes = defs.get(&f.sha256).map_err(|e| e.to_string())?;
        files.insert(f.path.clone(), Arc::from(bytes));
        order.push(f.path.clone());
    }
    let outcome = crate::agents::load_pinned(&order, &files);
    if outcome.agents.len() != manifest.agents.len() {
        let why = outcome
            .diagnostics
            .iter()
            .find(|d| d.severity == crate::workflow::Severity::Error)
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        return Err(format!("the pinned copies of the agents do not load{why}"));
    }
    let loaded = Arc::new(PinnedAgents {
        digest: digest.to_owned(),
        manifest,
        set: Arc::new(outcome.agents),
    });
    remember(&LOADED_AGENTS, digest, &loaded);
    Ok(loaded)
}

/// How a definition's file on disk differs from its pinned copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// Read with other contents.
    Changed,
    /// No longer read: deleted, no longer named, or its definition no longer loads.
    Gone,
    /// Read now, not pinned: a new phase or agent file, or another directory overriding the
    /// workflow.
    Added,
}

/// One file that differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: PathBuf,
    pub kind: ChangeKind,
}

impl Change {
    fn new(path: &Path, kind: ChangeKind) -> Self {
        Change {
            path: crate::paths::lexical(path),
            kind,
        }
    }
}

/// What differs between pinned `workflows` and the same keys in `disk`.
pub fn workflow_changes(workflows: &WorkflowsManifest, disk: &WorkflowSet) -> Vec<Change> {
    let mut out = Vec::new();
    for pin in &workflows.workflows {
        let now: &[SourceFile] = disk.get(&pin.key).map_or(&[], |d| &d.sources);
        diff(&pin.files, now, &mut out);
    }
    out
}

/// What differs between pinned `agents` and the agents in `disk`.
pub fn agent_changes(agents: &AgentsManifest, disk: &AgentSet) -> Vec<Change> {
    let mut out = Vec::new();
    diff(&agents.agents, disk.sources(), &mut out);
    out
}

fn diff(pinned: &[PinnedFile], now: &[SourceFile], out: &mut Vec<Change>) {
    for p in pinned {
        match now.iter().find(|s| s.path == p.path) {
            Some(s) if s.digest == p.sha256 => {}
            Some(_) => out.push(Change::new(&p.path, ChangeKind::Changed)),
            None => out.push(Change::new(&p.path, ChangeKind::Gone)),
        }
    }
    for s in now {
        if !pinned.iter().any(|p| p.path == s.path) {
            out.push(Change::new(&s.path, ChangeKind::Added));
        }
    }
}

/// The changes as one line of text, paths relative to `workspace` where they lie in it.
pub fn describe(changes: &[Change], workspace: &Path) -> String {
    changes
        .iter()
        .map(|c| {
            let path = c
                .path
                .strip_prefix(workspace)
                .unwrap_or(&c.path)
                .display()
                .to_string();
            let what = match c.kind {
                ChangeKind::Changed => "changed",
                ChangeKind::Gone => "gone: deleted, or its definition no longer loads or names it",
                ChangeKind::Added => "added",
            };
            format!("{path} ({what})")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The pinned definitions compared with the files on disk under the same roots, read by a walk
/// that started after this was asked (a change made just before is seen).
pub async fn changes_on_disk(
    workflows: Option<&PinnedWorkflows>,
    agents: Option<&PinnedAgents>,
) -> Vec<Change> {
    use super::loaded::{self, Freshness};
    let asked = std::time::Instant::now();
    let mut changes = Vec::new();
    if let Some(w) = workflows.filter(|w| !w.manifest.workflows.is_empty()) {
        let (_, disk) = loaded::workflows(&w.manifest.roots, Freshness::After(asked)).await;
        changes.extend(workflow_changes(&w.manifest, &disk));
    }
    if let Some(a) = agents.filter(|a| !a.manifest.roots.is_empty()) {
        let disk = loaded::agents(&a.manifest.roots, Freshness::After(asked)).await;
        changes.extend(agent_changes(&a.manifest, &disk));
    }
    changes
}

/// A change as the log records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoggedChange {
    pub path: PathBuf,
    /// `changed`, `gone` or `added`.
    pub change: String,
}

impl From<&Change> for LoggedChange {
    fn from(c: &Change) -> Self {
        LoggedChange {
            path: c.path.clone(),
            change: match c.kind {
                ChangeKind::Changed => "changed",
                ChangeKind::Gone => "gone",
                ChangeKind::Added => "added",
            }
            .to_owned(),
        }
    }
}

#[cfg(test)]
mod tests;

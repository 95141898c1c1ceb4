//! A workflow as a tree a client draws: every entry in order, depth first, nested scopes included,
//! each phase with its position among the concrete phases, its breadcrumb and whether the task has
//! done it; and the state a task would have at any one phase (for its context prompt). Pure.

use super::definition::{PhaseEntry, WorkflowDefinition, WorkflowSet, MAX_DEPTH};
use super::state::{BreadcrumbLevel, Movement, WorkflowState};
use super::texts::breadcrumb_text;

// `flat_index` lives in `state.rs`, beside the path it reads, so that `texts.rs` need not import
// this module (which imports `texts.rs`).
pub use super::state::flat_index;

/// What an outline entry stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// A subworkflow entry: its phases follow it, one level deeper.
    Scope,
    /// A concrete phase.
    Phase,
}

/// Where a task stands with an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Done,
    Current,
    Todo,
}

/// One entry of [`outline`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutlineNode {
    pub kind: NodeKind,
    /// For a phase: its 0-based position among the workflow's concrete phases.
    pub index: Option<usize>,
    pub name: String,
    /// The phase's emoji; empty for a scope or a phase without one.
    pub emoji: String,
    /// 0 for the root workflow's own entries.
    pub depth: usize,
    pub mark: Mark,
    /// The breadcrumb had the task stood there; for a scope, down to its entry.
    pub breadcrumb_text: String,
    /// For a phase: its id (the file's stem); empty for a scope.
    pub id: String,
    /// Whether the task has a checkpoint taken at the phase's entry: `false` here, set by the
    /// task service, which knows the task's checkpoints.
    pub has_checkpoint: bool,
}

/// How far a task got through its workflow's concrete phases: those before `done` are done, and
/// `current` (if any) is where it stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Progress {
    pub done: usize,
    pub current: Option<usize>,
}

impl Progress {
    /// Every phase done: a finished workflow, a complete task.
    pub const ALL_DONE: Progress = Progress {
        done: usize::MAX,
        current: None,
    };

    /// The progress of `state`: at its phase while active; every phase done once it finished;
    /// the phases before where it stopped when it was cancelled; nothing when it no longer fits
    /// the definitions.
    pub fn of(state: &WorkflowState, set: &WorkflowSet) -> Progress {
        if state.active {
            return match state.resolve(set) {
                Some(_) => {
                    let i = flat_index(set, &state.current_path);
                    Progress {
                        done: i,
                        current: Some(i),
                    }
                }
                None => Progress::default(),
            };
        }
        if state.cancelled {
            return Progress {
                done: flat_index(set, &state.current_path),
                current: None,
            };
        }
        Progress::ALL_DONE
    }

    pub fn mark(self, index: usize) -> Mark {
        if self.current == Some(index) {
            Mark::Current
        } else if index < self.done {
            Mark::Done
        } else {
            Mark::Todo
        }
    }
}

/// `def`'s entries in order, depth first, each subworkflow as a scope followed by its entries,
/// marked by `progress`.
pub fn outline(
    set: &WorkflowSet,
    def: &WorkflowDefinition,
    progress: Progress,
) -> Vec<OutlineNode> {
    let mut walk = Walk {
        set,
        root: &def.name,
        progress,
        levels: Vec::new(),
        next_index: 0,
        out: Vec::new(),
    };
    walk.scope(def);
    walk.out
}

struct Walk<'a> {
    set: &'a WorkflowSet,
    root: &'a str,
    progress: Progress,
    levels: Vec<BreadcrumbLevel<'a>>,
    next_index: usize,
    out: Vec<OutlineNode>,
}

impl<'a> Walk<'a> {
    fn scope(&mut self, def: &'a WorkflowDefinition) {
        // The set is acyclic; the bound only guards against a hand-built set that is not.
        if self.levels.len() >= MAX_DEPTH {
            return;
        }
        let depth = self.levels.len();
        let total = def.phases.len();
        for (i, entry) in def.phases.iter().enumerate() {
            self.levels.push(BreadcrumbLevel {
                workflow_key: &def.key,
                name: &def.name,
                phase_name: self.set.entry_name(entry),
                emoji: entry.as_phase().map_or("", |p| p.emoji.as_str()),
                index: i + 1,
                total,
            });
            let text = breadcrumb_text(self.root, &self.levels);
            match entry {
                PhaseEntry::Phase(p) => {
                    let index = self.next_index;
                    self.next_index += 1;
                    self.out.push(OutlineNode {
                        kind: NodeKind::Phase,
                        index: Some(index),
                        name: p.name.clone(),
                        emoji: p.emoji.clone(),
                        depth,
                        mark: self.progress.mark(index),
                        breadcrumb_text: text,
                        id: p.id.clone(),
                        has_checkpoint: false,
                    });
                }
                PhaseEntry::Subworkflow(key) => {
                    let at = self.out.len();
                    let first = self.next_index;
                    self.out.push(OutlineNode {
                        kind: NodeKind::Scope,
                        index: None,
                        name: self.set.entry_name(entry).to_owned(),
                        emoji: String::new(),
                        depth,
                        mark: Mark::Todo,
                        breadcrumb_text: text,
                        id: String::new(),
                        has_checkpoint: false,
                    });
                    if let Some(sub) = self.set.get(key) {
                        self.scope(sub);
                    }
                    let phases = first..self.next_index;
                    self.out[at].mark = if phases.clone().any(|i| self.progress.current == Some(i))
                    {
                        Mark::Current
                    } else if !phases.is_empty() && phases.end <= self.progress.done {
                        Mark::Done
                    } else {
                        Mark::Todo
                    };
                }
            }
            self.levels.pop();
        }
    }
}

/// The state a task on `def` has at its concrete phase `index` when it got there from the start
/// with `next` (as `rawko workflows show` walks it); `None` when there is no such phase.
pub fn state_at(
    set: &WorkflowSet,
    def: &WorkflowDefinition,
    index: usize,
    description: &str,
    task_id: &str,
    started_at: i64,
) -> Option<WorkflowState> {
    if index >= set.flatten(def).len() {
        return None;
    }
    let mut state = WorkflowState::begin(set, def, description, task_id, started_at).ok()?;
    for _ in 0..index {
        let advanced = state.advance(set).ok()?;
        if advanced.movement == Movement::Done {
            return None;
        }
        state = advanced.state;
    }
    Some(state)
}

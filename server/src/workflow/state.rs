//! A task's position in its workflow and the moves between phases: `next`, `loop` and the
//! two-step `cancel`. Pure: time and task ids come in as arguments, and every move returns a new
//! state instead of changing the old one.
//!
//! The path is a stack of `{workflowKey, phaseIndex}` segments, the root first. rawko keeps one
//! invariant pi-workflows does not: while a workflow is active, the innermost entry is a concrete
//! phase (start, next and loop all step into subworkflows at once). States written by other tools
//! that point at a subworkflow entry are still understood.

use serde::{Deserialize, Serialize};

use super::definition::{
    PhaseDefinition, PhaseEntry, Show, WorkflowDefinition, WorkflowSet, MAX_DEPTH,
};

/// One level of the path: which workflow, and which of its phases (0-based).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PathSegment {
    pub workflow_key: String,
    pub phase_index: usize,
}

/// The state of a task's workflow (pi-workflows' `WorkflowState`, field for field).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowState {
    /// `false` once the workflow is done or cancelled.
    pub active: bool,
    /// The root workflow's key.
    pub workflow_key: String,
    /// The root first, the innermost scope last.
    pub current_path: Vec<PathSegment>,
    /// Grows by one with every `next` and `loop`.
    pub global_step_count: u64,
    pub task_id: String,
    pub task_description: String,
    /// Milliseconds since the Unix epoch.
    pub started_at: i64,
    pub completion_notified: bool,
    pub cancelled: bool,
    /// The first `cancel` arms this; the second one cancels. Never persisted, on purpose: a
    /// confirmation belongs to the conversation it was asked in.
    #[serde(skip)]
    pub cancel_pending: bool,
}

/// Why a move could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NavError {
    #[error("no active workflow")]
    NotActive,
    #[error("unknown workflow \"{}\"", crate::clip::clip(.0))]
    UnknownWorkflow(String),
    #[error(
        "workflow \"{}\" is a subworkflow that can only run as part of another workflow",
        crate::clip::clip(.0)
    )]
    SubworkflowOnly(String),
    #[error("the workflow state no longer matches the loaded definitions (workflow \"{0}\" changed or is missing)")]
    Stale(String),
    #[error("Looping is disabled for this workflow.")]
    NotLoopable,
}

/// How a `next` moved through the nesting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Movement {
    /// Within the same scope.
    Advanced,
    /// Into one or more subworkflows.
    Entered,
    /// Out of one or more finished subworkflows.
    Exited,
    /// Past the last phase of the root: the workflow is done.
    Done,
}

/// The result of a `next`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advanced {
    pub state: WorkflowState,
    /// The phase that was left.
    pub from: String,
    /// The phase now current; `None` when the workflow is done.
    pub to: Option<String>,
    pub movement: Movement,
}

/// One level of the breadcrumb: a workflow scope and where the task is in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreadcrumbLevel<'a> {
    pub workflow_key: &'a str,
    /// The scope's workflow name.
    pub name: &'a str,
    /// The entry current at this level: a phase name, or a subworkflow's name.
    pub phase_name: &'a str,
    /// The phase's emoji at the innermost level; empty for subworkflow levels.
    pub emoji: &'a str,
    /// 1-based.
    pub index: usize,
    pub total: usize,
}

/// A resolved view of an active state: the definitions and phase it points at.
#[derive(Debug, Clone)]
pub struct ActiveWorkflow<'a> {
    pub state: &'a WorkflowState,
    /// The root workflow.
    pub definition: &'a WorkflowDefinition,
    /// The innermost scope's workflow.
    pub scope: &'a WorkflowDefinition,
    pub current_phase: &'a PhaseDefinition,
    /// 0-based index of the current entry in the innermost scope.
    pub phase_index: usize,
    /// The entry after the current one in the innermost scope.
    pub next_entry: Option<&'a PhaseEntry>,
    pub breadcrumb: Vec<BreadcrumbLevel<'a>>,
}

impl ActiveWorkflow<'_> {
    /// `true` when the task is inside a subworkflow.
    pub fn is_nested(&self) -> bool {
        self.breadcrumb.len() > 1
    }

    /// The breadcrumb's workflow names joined with ` > `, as pi-workflows' prompts show them.
    pub fn path_names(&self) -> String {
        let len = self.breadcrumb.iter().map(|b| b.name.len() + 3).sum();
        let mut out = String::with_capacity(len);
        for (i, level) in self.breadcrumb.iter().enumerate() {
            if i > 0 {
                out.push_str(" > ");
            }
            out.push_str(level.name);
        }
        out
    }
}

impl WorkflowState {
    /// A new, active state at the first concrete phase of workflow `key` (or its command name).
    pub fn start(
        set: &WorkflowSet,
        key: &str,
        task_description: &str,
        task_id: &str,
        started_at: i64,
    ) -> Result<WorkflowState, NavError> {
        let def = set
            .find(key)
            .ok_or_else(|| NavError::UnknownWorkflow(key.to_owned()))?;
        if def.show == Show::Workflows {
            return Err(NavError::SubworkflowOnly(def.key.clone()));
        }
        Self::begin(set, def, task_description, task_id, started_at)
    }

    /// Like [`WorkflowState::start`], but for any workflow, subworkflow-only ones included: the
    /// authoring preview walks those too.
    pub fn begin(
        set: &WorkflowSet,
        def: &WorkflowDefinition,
        task_description: &str,
        task_id: &str,
        started_at: i64,
    ) -> Result<WorkflowState, NavError> {
        let mut state = WorkflowState {
            active: true,
            workflow_key: def.key.clone(),
            current_path: vec![PathSegment {
                workflow_key: def.key.clone(),
                phase_index: 0,
            }],
            global_step_count: 0,
            task_id: task_id.to_owned(),
            task_description: task_description.to_owned(),
            started_at,
            completion_notified: false,
            cancelled: false,
            cancel_pending: false,
        };
        enter_subworkflows(&mut state.current_path, set)
            .map_err(|_| NavError::Stale(def.key.clone()))?;
        Ok(state)
    }

    /// The innermost segment.
    pub fn innermost(&self) -> Option<&PathSegment> {
        self.current_path.last()
    }

    /// The current concrete phase and the root workflow, with no allocation: the gate's fast path.
    pub fn current_phase<'a>(
        &self,
        set: &'a WorkflowSet,
    ) -> Option<(&'a WorkflowDefinition, &'a PhaseDefinition)> {
        let phase = self.phase(set)?;
        Some((self.root(set)?, phase))
    }

    /// The current concrete phase alone: [`WorkflowState::current_phase`] without the root
    /// workflow, which the gate needs only for a call it blocks.
    pub fn phase<'a>(&self, set: &'a WorkflowSet) -> Option<&'a PhaseDefinition> {
        if !self.active {
            return None;
        }
        let seg = self.current_path.last()?;
        let mut entry = set.get(&seg.workflow_key)?.phases.get(seg.phase_index)?;
        for _ in 0..MAX_DEPTH {
            match entry {
                PhaseEntry::Phase(p) => return Some(p),
                PhaseEntry::Subworkflow(k) => entry = set.get(k)?.phases.first()?,
            }
        }
        None
    }

    /// The root workflow of the state's path.
    pub fn root<'a>(&self, set: &'a WorkflowSet) -> Option<&'a WorkflowDefinition> {
        set.get(&self.current_path.first()?.workflow_key)
    }

    /// Resolves the state against `set`; `None` when it is inactive or no longer fits the
    /// definitions (a workflow renamed, a phase removed).
    pub fn resolve<'a>(&'a self, set: &'a WorkflowSet) -> Option<ActiveWorkflow<'a>> {
        if !self.active || self.current_path.is_empty() || self.current_path.len() > MAX_DEPTH {
            return None;
        }
        let mut breadcrumb = Vec::with_capacity(self.current_path.len());
        let last = self.current_path.len() - 1;
        let mut current: Option<&PhaseDefinition> = None;
        let mut scope = None;
        // Each level's workflow is looked up once: it names the entry of the level above.
        let root = set.get(&self.current_path[0].workflow_key)?;
        let mut def = root;
        for (i, seg) in self.current_path.iter().enumerate() {
            let entry = def.phases.get(seg.phase_index)?;
            let inner = match self.current_path.get(i + 1) {
                Some(next) => match entry {
                    PhaseEntry::Subworkflow(k) if *k == next.workflow_key => Some(set.get(k)?),
                    _ => return None,
                },
                None => None,
            };
            breadcrumb.push(BreadcrumbLevel {
                workflow_key: &def.key,
                name: &def.name,
                phase_name: match inner {
                    Some(inner) => &inner.name,
                    None => set.entry_name(entry),
                },
                emoji: entry.as_phase().map_or("", |p| p.emoji.as_str()),
                index: seg.phase_index + 1,
                total: def.phases.len(),
            });
            if i == last {
                scope = Some(def);
                // A state that points at a subworkflow entry shows that subworkflow's first phase.
                let mut entry = entry;
                for _ in 0..MAX_DEPTH {
                    match entry {
                        PhaseEntry::Phase(p) => {
                            current = Some(p);
                            break;
                        }
                        PhaseEntry::Subworkflow(k) => {
                            let sub = set.get(k)?;
                            entry = sub.phases.first()?;
                            breadcrumb.push(BreadcrumbLevel {
                                workflow_key: &sub.key,
                                name: &sub.name,
                                phase_name: set.entry_name(entry),
                                emoji: entry.as_phase().map_or("", |p| p.emoji.as_str()),
                                index: 1,
                                total: sub.phases.len(),
                            });
                        }
                    }
                }
            }
            if let Some(inner) = inner {
                def = inner;
            }
        }
        let scope = scope?;
        let seg = self.current_path.last()?;
        Some(ActiveWorkflow {
            state: self,
            definition: root,
            scope,
            current_phase: current?,
            phase_index: seg.phase_index,
            next_entry: scope.phases.get(seg.phase_index + 1),
            breadcrumb,
        })
    }

    /// `next`: the following phase, stepping into subworkflows and out of finished ones however
    /// deep, or DONE after the root's last phase.
    pub fn advance(&self, set: &WorkflowSet) -> Result<Advanced, NavError> {
        if !self.active {
            return Err(NavError::NotActive);
        }
        let stale = || NavError::Stale(self.workflow_key.clone());
        let from = self
            .resolve(set)
            .ok_or_else(stale)?
            .current_phase
            .name
            .clone();
        let mut state = self.clone();
        state.cancel_pending = false;
        // A foreign state may point at a subworkflow entry; step into it first (not a move).
        enter_subworkflows(&mut state.current_path, set).map_err(|_| stale())?;
        let depth_before = state.current_path.len();
        state.global_step_count += 1;

        loop {
            let seg = state.current_path.last().ok_or_else(stale)?;
            let def = set.get(&seg.workflow_key).ok_or_else(stale)?;
            if seg.phase_index + 1 < def.phases.len() {
                if let Some(seg) = state.current_path.last_mut() {
                    seg.phase_index += 1;
                }
                break;
            }
            // The scope is finished: leave it, or finish the workflow at the root.
            if state.current_path.len() == 1 {
                state.active = false;
                state.completion_notified = false;
                return Ok(Advanced {
                    state,
                    from,
                    to: None,
                    movement: Movement::Done,
                });
            }
            state.current_path.pop();
        }
        let depth_after_pop = state.current_path.len();
        enter_subworkflows(&mut state.current_path, set).map_err(|_| stale())?;
        let to = state
            .resolve(set)
            .ok_or_else(stale)?
            .current_phase
            .name
            .clone();
        let movement = if depth_after_pop < depth_before {
            Movement::Exited
        } else if state.current_path.len() > depth_before {
            Movement::Entered
        } else {
            Movement::Advanced
        };
        Ok(Advanced {
            state,
            from,
            to: Some(to),
            movement,
        })
    }

    /// `loop`: back to the first phase of the innermost scope (only that scope; its parents stay
    /// where they are). Refused when that scope's workflow sets `loopable: false`.
    pub fn loop_scope(&self, set: &WorkflowSet) -> Result<WorkflowState, NavError> {
        if !self.active {
            return Err(NavError::NotActive);
        }
        let stale = || NavError::Stale(self.workflow_key.clone());
        self.resolve(set).ok_or_else(stale)?;
        let mut state = self.clone();
        state.cancel_pending = false;
        let seg = state.current_path.last_mut().ok_or_else(stale)?;
        let def = set.get(&seg.workflow_key).ok_or_else(stale)?;
        if !def.loopable {
            return Err(NavError::NotLoopable);
        }
        seg.phase_index = 0;
        state.global_step_count += 1;
        enter_subworkflows(&mut state.current_path, set).map_err(|_| stale())?;
        Ok(state)
    }

    /// `cancel`, in two calls: the first arms the confirmation, the second cancels.
    pub fn cancel(&self) -> Result<CancelOutcome, NavError> {
        if !self.active {
            return Err(NavError::NotActive);
        }
        let mut state = self.clone();
        if !self.cancel_pending {
            state.cancel_pending = true;
            return Ok(CancelOutcome::ConfirmationNeeded(state));
        }
        state.cancel_pending = false;
        state.active = false;
        state.cancelled = true;
        state.completion_notified = false;
        Ok(CancelOutcome::Cancelled(state))
    }
}

/// What a `cancel` call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The first call: the state now waits for a second `cancel`.
    ConfirmationNeeded(WorkflowState),
    /// The second call: the workflow is cancelled.
    Cancelled(WorkflowState),
}

/// While the innermost entry is a subworkflow, steps into it.
fn enter_subworkflows(path: &mut Vec<PathSegment>, set: &WorkflowSet) -> Result<(), ()> {
    loop {
        if path.len() > MAX_DEPTH {
            return Err(());
        }
        let seg = path.last().ok_or(())?;
        let def = set.get(&seg.workflow_key).ok_or(())?;
        match def.phases.get(seg.phase_index).ok_or(())? {
            PhaseEntry::Phase(_) => return Ok(()),
            PhaseEntry::Subworkflow(key) => {
                let sub = set.get(key).ok_or(())?;
                if sub.phases.is_empty() {
                    return Err(());
                }
                path.push(PathSegment {
                    workflow_key: key.clone(),
                    phase_index: 0,
                });
            }
        }
    }
}

/// The 0-based position, among the root's concrete phases, of the phase `path` points at (a path
/// that ends on a subworkflow entry points at its first phase).
pub fn flat_index(set: &WorkflowSet, path: &[PathSegment]) -> usize {
    let mut index = 0;
    for seg in path {
        if let Some(def) = set.get(&seg.workflow_key) {
            for entry in def.phases.iter().take(seg.phase_index) {
                index += match entry {
                    PhaseEntry::Phase(_) => 1,
                    PhaseEntry::Subworkflow(k) => set.get(k).map_or(0, |d| set.flatten(d).len()),
                };
            }
        }
    }
    index
}

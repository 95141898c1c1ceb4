//! Workflows: pi-workflows' definitions, a task's position in them, the phase gate and the texts.
//!
//! Pure (architecture invariant 1): no clock, no ids, no I/O except the loader, which only reads.
//! The engine feeds in time and task ids and acts on what these functions return.

pub mod definition;
pub mod diagnostic;
pub mod gate;
pub mod load;
pub mod outline;
pub mod persist;
pub mod shell;
pub mod source;
pub mod state;
pub mod step;
pub mod texts;
pub mod tools;
pub mod yaml;

pub use definition::{
    PhaseDefinition, PhaseEntry, RootKind, RuleError, Show, ToolPolicy, ToolRule,
    WorkflowDefinition, WorkflowRoot, WorkflowSet,
};
pub use diagnostic::{Diagnostic, Severity};
pub use gate::GateDecision;
pub use load::{default_roots, load, load_pinned, LoadOutcome, PinnedWorkflow};
pub use state::{ActiveWorkflow, NavError, PathSegment, WorkflowState};

#[cfg(test)]
mod tests;

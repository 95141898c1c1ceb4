//! rawko: runs coding-agent tasks through phased workflows and keeps agents on the rails.
//!
//! `workflow` is the pure core; `cli` is the command-line face. See docs/architecture.md.

pub mod cli;
pub mod workflow;

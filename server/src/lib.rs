//! rawko: runs coding-agent tasks through phased workflows and keeps agents on the rails.
//!
//! Two pure cores (`workflow`, later `machine`), an imperative shell (`engine`, `provider`,
//! `tools`, `config`), and faces on top (`lsp`, `cli`). See docs/architecture.md.

pub mod acp;
pub mod agents;
pub mod cli;
pub mod clip;
pub mod clock;
pub mod config;
pub mod endpoint;
pub mod engine;
pub mod external;
pub mod git;
pub mod hooks;
pub mod lsp;
pub mod machine;
pub mod paths;
pub mod pressure;
pub mod provider;
pub mod sandbox;
pub mod secrets;
pub mod stats;
pub mod store;
pub mod tools;
pub mod workflow;

//! rawko: runs coding-agent tasks through phased workflows and keeps agents on the rails.
//!
//! Two pure cores (`workflow`, `machine`), an imperative shell (`engine` with the task service
//! `engine::tasks`, `provider`, `tools`, `hooks`, `git`, `sandbox`, `store`, `external`, `agents`,
//! and the settings in `config`), and faces on top (`cli`, `lsp`, `acp`, `endpoint`). No source
//! file imports one that imports it back (`server/tests/import_graph.rs`). See
//! docs/architecture.md.

pub mod acp;
pub mod agents;
pub mod checkpoint;
pub mod cli;
pub mod clip;
pub mod clock;
pub mod config;
pub mod endpoint;
pub mod engine;
pub mod external;
pub mod git;
pub mod hooks;
pub mod loopback;
pub mod lsp;
pub mod machine;
pub mod paths;
pub mod pressure;
pub mod provider;
pub mod sandbox;
pub mod secrets;
pub mod stats;
pub mod store;
pub mod team;
pub mod tools;
pub mod web;
pub mod worker;
pub mod workflow;

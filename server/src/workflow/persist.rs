//! The persisted form of a task's workflow: its state and the identity of the definitions it ran
//! under, as versioned JSON. Reading a record never panics: a broken or foreign record is a clear
//! error.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::definition::{PhaseEntry, WorkflowSet};
use super::state::WorkflowState;

/// The version this rawko writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// Which definition a task ran under: enough to tell, on resume, whether it has changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DefinitionIdentity {
    pub key: String,
    pub dir: PathBuf,
    /// A digest of the files the definition was read from.
    pub fingerprint: String,
}

/// A task's workflow, ready to be written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkflowRecord {
    pub version: u32,
    pub state: WorkflowState,
    /// The root workflow and every subworkflow it reaches.
    pub definitions: Vec<DefinitionIdentity>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RecordError {
    #[error("workflow record is not valid JSON: {0}")]
    Json(String),
    #[error("workflow record has no \"version\" field")]
    MissingVersion,
    #[error("workflow record has version {found}, but this rawko reads version {FORMAT_VERSION}; upgrade rawko to read it")]
    UnknownVersion { found: String },
    #[error("workflow record is invalid: {0}")]
    Invalid(String),
}

impl WorkflowRecord {
    /// The record of `state`, naming the definitions it uses from `set`.
    pub fn new(state: &WorkflowState, set: &WorkflowSet) -> Self {
        let mut definitions: Vec<DefinitionIdentity> = Vec::new();
        let mut pending = vec![state.workflow_key.clone()];
        while let Some(key) = pending.pop() {
            if definitions.iter().any(|d| d.key == key) {
                continue;
            }
            if let Some(def) = set.get(&key) {
                definitions.push(DefinitionIdentity {
                    key: def.key.clone(),
                    dir: def.dir.clone(),
                    fingerprint: def.fingerprint.clone(),
                });
                for entry in &def.phases {
                    if let PhaseEntry::Subworkflow(k) = entry {
                        pending.push(k.clone());
                    }
                }
            }
        }
        definitions.sort_by(|a, b| a.key.cmp(&b.key));
        Self {
            version: FORMAT_VERSION,
            state: state.clone(),
            definitions,
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads a record, checking the version before anything else.
    pub fn from_json(text: &str) -> Result<Self, RecordError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| RecordError::Json(e.to_string()))?;
        let version = value.get("version").ok_or(RecordError::MissingVersion)?;
        if version.as_u64() != Some(u64::from(FORMAT_VERSION)) {
            return Err(RecordError::UnknownVersion {
                found: version.to_string(),
            });
        }
        let record: WorkflowRecord =
            serde_json::from_value(value).map_err(|e| RecordError::Invalid(e.to_string()))?;
        let state = &record.state;
        if state.current_path.is_empty() {
            return Err(RecordError::Invalid("currentPath is empty".to_owned()));
        }
        if state.current_path[0].workflow_key != state.workflow_key {
            return Err(RecordError::Invalid(format!(
                "currentPath starts at \"{}\" but the workflow is \"{}\"",
                state.current_path[0].workflow_key, state.workflow_key
            )));
        }
        Ok(record)
    }
}

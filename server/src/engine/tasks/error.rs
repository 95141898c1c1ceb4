//! What can go wrong when a face asks the task service for something. Each face maps these in one
//! place: the LSP face to a JSON-RPC error code (`lsp::errors`), the ACP face to an ACP error
//! (`acp::task_error`), the CLI to an exit status and a message (`cli::run::task_error`), and the
//! endpoint to a hook answer with a note (`endpoint::host`).

/// Why the task service refused or failed a request. The text is the whole message for the
/// user; the variant is what a face maps to its code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TaskError {
    /// The request itself is wrong (an empty description, an unknown provider name, a message
    /// too long): the user must change what they asked.
    #[error("{0}")]
    Invalid(String),
    /// The agent named is not defined.
    #[error("{0}")]
    UnknownAgent(String),
    /// The workflow named does not exist, does not load, or cannot run on its own.
    #[error("{0}")]
    UnknownWorkflow(String),
    /// No task has this id (running or stored).
    #[error("{0}")]
    UnknownTask(String),
    /// The task exists but is in a state where this does not apply (finished, not interrupted,
    /// an external agent's session …).
    #[error("{0}")]
    Conflict(String),
    /// What the task needs cannot start: its provider (a missing key, a script that does not
    /// load) or the model arbiter.
    #[error("{0}")]
    CannotStart(String),
    /// rawko itself failed (a log that does not read, a task that did not answer in time).
    #[error("{0}")]
    Internal(String),
}

impl TaskError {
    pub fn unknown_task(id: &str) -> TaskError {
        TaskError::UnknownTask(format!("unknown task \"{}\"", crate::clip::clip(id)))
    }
}

//! The LSP face's errors: the task service's [`TaskError`] becomes a JSON-RPC error here, and
//! only here; the handlers' own input checks use the same helpers.

use rawko_protocol::error_codes;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tower_lsp_server::jsonrpc::{Error, ErrorCode, Result};

use crate::engine::tasks::TaskError;

pub(super) fn error(code: i64, message: impl Into<String>) -> Error {
    Error {
        code: ErrorCode::from(code),
        message: message.into().into(),
        data: None,
    }
}

pub(super) fn invalid_params(message: impl Into<String>) -> Error {
    error(error_codes::INVALID_PARAMS, message)
}

/// The JSON-RPC error code of each kind of task-service error (docs/protocol.md lists them).
pub(super) fn code_of(e: &TaskError) -> i64 {
    match e {
        TaskError::Invalid(_) | TaskError::UnknownAgent(_) | TaskError::CannotStart(_) => {
            error_codes::INVALID_PARAMS
        }
        TaskError::UnknownWorkflow(_) => error_codes::WORKFLOW_NOT_FOUND,
        TaskError::UnknownTask(_) => error_codes::UNKNOWN_TASK,
        TaskError::Conflict(_) => error_codes::TASK_STATE_CONFLICT,
        TaskError::Internal(_) => error_codes::INTERNAL_ERROR,
    }
}

/// A task-service error as the editor receives it.
pub(super) fn task_error(e: TaskError) -> Error {
    error(code_of(&e), e.to_string())
}

/// Parses `workspace/executeCommand` arguments as a method's params.
pub(super) fn command_params<P: DeserializeOwned>(arguments: &[Value]) -> Result<P> {
    let value = arguments
        .first()
        .cloned()
        .unwrap_or(Value::Object(Default::default()));
    serde_json::from_value(value)
        .map_err(|e| invalid_params(format!("invalid command arguments: {e}")))
}

pub(super) fn to_value<T: Serialize>(value: T) -> Result<Option<Value>> {
    serde_json::to_value(value)
        .map(Some)
        .map_err(|e| error(error_codes::INTERNAL_ERROR, e.to_string()))
}

//! JSON-RPC error codes rawko answers with: the standard ones, and its own for task and workflow
//! problems. Every error's `message` is one short lower-case line without a trailing period.

/// The frame's body is not valid JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid JSON-RPC request.
pub const INVALID_REQUEST: i64 = -32600;
/// rawko has no such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The params do not match the method's params type.
pub const INVALID_PARAMS: i64 = -32602;
/// Something went wrong inside rawko; its log says more.
pub const INTERNAL_ERROR: i64 = -32603;
/// A request other than `initialize` came before `initialize` (LSP's code).
pub const SERVER_NOT_INITIALIZED: i64 = -32002;
/// No task has the given `taskId`.
pub const UNKNOWN_TASK: i64 = -32001;
/// The task exists but is not in a state that allows the request (e.g. `rawko/interrupt` with no
/// countdown running, or `rawko/resumeTask` on a finished task).
pub const TASK_STATE_CONFLICT: i64 = -32003;
/// No workflow has the given key.
pub const WORKFLOW_NOT_FOUND: i64 = -32004;

/// Every code with the name `docs/protocol.md` gives it.
pub const ALL: [(i64, &str); 9] = [
    (PARSE_ERROR, "parse error"),
    (INVALID_REQUEST, "invalid request"),
    (METHOD_NOT_FOUND, "method not found"),
    (INVALID_PARAMS, "invalid params"),
    (INTERNAL_ERROR, "internal error"),
    (SERVER_NOT_INITIALIZED, "server not initialized"),
    (UNKNOWN_TASK, "unknown task"),
    (TASK_STATE_CONFLICT, "task state conflict"),
    (WORKFLOW_NOT_FOUND, "workflow not found"),
];

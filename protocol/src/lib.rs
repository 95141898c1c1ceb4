//! rawko's wire types: one type per custom JSON-RPC method and notification.
//!
//! This crate does no I/O and knows nothing of tokio; the server converts its internal types to
//! these at the edge, and the editor clients mirror them. `docs/protocol.md` describes every method
//! and is kept in sync with this crate by `tests/doc_sync.rs`.
//!
//! The shape follows rust-analyzer's `lsp/ext.rs`: every method is an uninhabited `enum` that
//! implements [`Request`] or [`Notification`], naming its `METHOD` and its `Params` (and `Result`)
//! types. Client → server methods live in [`to_server`], server → client ones in [`to_client`],
//! types both directions use in [`types`]. [`methods::ALL_METHODS`] lists them all;
//! [`schema::schema_files`] renders their JSON Schemas, and those of the files users write
//! ([`files`]). The local endpoint's messages (`rawko hook` and `rawko mcp` to a running rawko)
//! are in [`endpoint`].

use std::fmt::Debug;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;

pub mod commands;
pub mod endpoint;
pub mod error_codes;
pub mod files;
pub mod methods;
pub mod schema;
pub mod to_client;
pub mod to_server;
pub mod types;

#[cfg(test)]
mod doc_examples;

pub use methods::{Direction, Kind, MethodInfo, ALL_METHODS};
pub use types::{
    BreadcrumbItem, ExternalAgent, StateClass, SubagentInfo, TaskAction, TaskId, TaskState,
};

/// A JSON-RPC request: the peer answers it with a `Result` (or an error).
pub trait Request {
    /// The `params` of the request.
    type Params: Serialize + DeserializeOwned + JsonSchema + Debug + Send + Sync + 'static;
    /// The `result` of a successful response.
    type Result: Serialize + DeserializeOwned + JsonSchema + Debug + Send + Sync + 'static;
    /// The JSON-RPC method name, e.g. `rawko/startTask`.
    const METHOD: &'static str;
}

/// A JSON-RPC notification: nobody answers it.
pub trait Notification {
    /// The `params` of the notification.
    type Params: Serialize + DeserializeOwned + JsonSchema + Debug + Send + Sync + 'static;
    /// The JSON-RPC method name, e.g. `rawko/status`.
    const METHOD: &'static str;
}

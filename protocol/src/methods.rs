//! The list of every custom method with its direction, kind and schemas: what the schema generator
//! and the documentation test walk over. The server's dispatcher registers each client → server
//! request by hand; `lsp_e2e::every_client_request_in_the_protocol_is_dispatched` ties the two.

use std::fmt;

use schemars::{JsonSchema, Schema};

use crate::{to_client, to_server, Notification, Request};
use Direction::{ClientToServer, ServerToClient};

/// Who sends a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// The editor sends it to rawko.
    ClientToServer,
    /// rawko sends it to the editor.
    ServerToClient,
}

impl Direction {
    /// How `docs/protocol.md` writes it: `client → server` or `server → client`.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::ClientToServer => "client → server",
            Direction::ServerToClient => "server → client",
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a method expects an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// The peer answers with a result or an error.
    Request,
    /// Nobody answers.
    Notification,
}

impl Kind {
    /// How `docs/protocol.md` writes it: `request` or `notification`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Request => "request",
            Kind::Notification => "notification",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One custom method: its name, who sends it, whether it is answered, and its schemas.
#[derive(Clone, Copy)]
pub struct MethodInfo {
    /// The JSON-RPC method name, e.g. `rawko/startTask`.
    pub method: &'static str,
    /// Who sends it.
    pub direction: Direction,
    /// Request or notification.
    pub kind: Kind,
    /// Renders the JSON Schema of the method's `params`.
    pub params_schema: fn() -> Schema,
    /// Renders the JSON Schema of the method's `result`; `None` for notifications.
    pub result_schema: Option<fn() -> Schema>,
}

impl fmt::Debug for MethodInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MethodInfo")
            .field("method", &self.method)
            .field("direction", &self.direction)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl MethodInfo {
    /// The entry for request `R`, sent in `direction`.
    pub const fn request<R: Request>(direction: Direction) -> MethodInfo {
        MethodInfo {
            method: R::METHOD,
            direction,
            kind: Kind::Request,
            params_schema: root_schema::<R::Params>,
            result_schema: Some(root_schema::<R::Result>),
        }
    }

    /// The entry for notification `N`, sent in `direction`.
    pub const fn notification<N: Notification>(direction: Direction) -> MethodInfo {
        MethodInfo {
            method: N::METHOD,
            direction,
            kind: Kind::Notification,
            params_schema: root_schema::<N::Params>,
            result_schema: None,
        }
    }
}

/// The JSON Schema (draft 2020-12) of `T`, with the types it uses under `$defs`.
pub fn root_schema<T: JsonSchema>() -> Schema {
    schemars::SchemaGenerator::default().into_root_schema_for::<T>()
}

/// Every custom method rawko speaks, client → server requests first.
pub const ALL_METHODS: &[MethodInfo] = &[
    MethodInfo::request::<to_server::ListWorkflows>(ClientToServer),
    MethodInfo::request::<to_server::StartTask>(ClientToServer),
    MethodInfo::request::<to_server::CancelTask>(ClientToServer),
    MethodInfo::request::<to_server::Step>(ClientToServer),
    MethodInfo::request::<to_server::Interrupt>(ClientToServer),
    MethodInfo::request::<to_server::SendMessage>(ClientToServer),
    MethodInfo::request::<to_server::ListTasks>(ClientToServer),
    MethodInfo::request::<to_server::GetTask>(ClientToServer),
    MethodInfo::request::<to_server::PhasePrompt>(ClientToServer),
    MethodInfo::request::<to_server::PhaseDiff>(ClientToServer),
    MethodInfo::request::<to_server::ResumeTask>(ClientToServer),
    MethodInfo::request::<to_server::RewindTask>(ClientToServer),
    MethodInfo::request::<to_server::ForceAgent>(ClientToServer),
    MethodInfo::request::<to_server::SkipStep>(ClientToServer),
    MethodInfo::request::<to_server::Retry>(ClientToServer),
    MethodInfo::request::<to_server::Reset>(ClientToServer),
    MethodInfo::request::<to_server::ValidateWorkflows>(ClientToServer),
    MethodInfo::request::<to_server::SetWorkflow>(ClientToServer),
    MethodInfo::request::<to_server::ServerStats>(ClientToServer),
    MethodInfo::request::<to_client::ApproveToolCall>(ServerToClient),
    MethodInfo::request::<to_client::TrustWorkspace>(ServerToClient),
    MethodInfo::notification::<to_client::Status>(ServerToClient),
    MethodInfo::notification::<to_client::Countdown>(ServerToClient),
    MethodInfo::notification::<to_client::Output>(ServerToClient),
    MethodInfo::notification::<to_client::TaskFinished>(ServerToClient),
    MethodInfo::notification::<to_client::ApprovalWithdrawn>(ServerToClient),
    MethodInfo::notification::<to_client::TrustWithdrawn>(ServerToClient),
];

/// The entry for `method`, if rawko has such a method.
pub fn find(method: &str) -> Option<&'static MethodInfo> {
    ALL_METHODS.iter().find(|info| info.method == method)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn method_names_are_unique_and_namespaced() {
        let mut seen = HashSet::new();
        for info in ALL_METHODS {
            assert!(
                info.method.starts_with("rawko/"),
                "{} lacks the rawko/ prefix",
                info.method
            );
            assert!(seen.insert(info.method), "{} is listed twice", info.method);
        }
    }

    #[test]
    fn requests_have_a_result_schema_and_notifications_none() {
        for info in ALL_METHODS {
            assert_eq!(
                info.result_schema.is_some(),
                info.kind == Kind::Request,
                "{}",
                info.method
            );
        }
    }

    #[test]
    fn find_knows_listed_methods_only() {
        assert_eq!(
            find("rawko/status").map(|m| m.kind),
            Some(Kind::Notification)
        );
        assert!(find("rawko/nope").is_none());
    }
}

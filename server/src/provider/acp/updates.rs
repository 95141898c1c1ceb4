//! The agent's session updates as the turn reads them: its streamed text, and its tool calls
//! with what each says of its input (`rawInput`, else its diffs and locations), kept by id until
//! they end; a call that ended without rawko being asked is shown and logged.

use agent_client_protocol::v1::schema::{ContentBlock, SessionUpdate, ToolCallStatus};
use serde_json::{json, Value};

use super::calls::{input_of, mcp_call, text_of, tool_name};
use super::AcpAgentProvider;
use crate::provider::{Runner, TextSink, ToolCall, Turn};

/// What a tool call or its update says of the call's input.
pub(super) struct Said {
    input: Option<Value>,
    /// It came from `rawInput`, which replaces what was known; an input made from the diffs and
    /// locations only fills one not known yet (an update's locations do not undo a `rawInput`).
    raw_given: bool,
}

impl Said {
    pub(super) fn fill(self, known: &mut Value) {
        let blank = known.is_null() || known.as_object().is_some_and(|o| o.is_empty());
        if let Some(input) = self.input.filter(|_| self.raw_given || blank) {
            *known = input;
        }
    }
}

/// One of the agent's tool calls as its notifications described it.
#[derive(Debug, Clone, Default)]
pub(super) struct AgentCall {
    pub name: String,
    pub input: Value,
    /// rawko has decided on it (a permission request) or it is rawko's own: its end is not
    /// reported again.
    pub handled: bool,
}

impl AcpAgentProvider {
    /// A session update: streamed text, the agent's tool calls.
    pub(super) fn update(
        &mut self,
        update: SessionUpdate,
        text: &mut String,
        on_text: TextSink<'_>,
    ) -> Option<Turn> {
        match update {
            SessionUpdate::AgentMessageChunk(chunk) => {
                if let ContentBlock::Text(t) = chunk.content {
                    on_text(&t.text);
                    text.push_str(&t.text);
                }
                None
            }
            SessionUpdate::ToolCall(call) => {
                let id = call.tool_call_id.0.to_string();
                let mut input = json!({});
                self.input_said(
                    call.raw_input.as_ref(),
                    Some(&call.content),
                    Some(&call.locations),
                )
                .fill(&mut input);
                let (name, input) = match mcp_call(&input, call.meta.as_ref(), Some(&call.title)) {
                    Some(named) => named,
                    None => (
                        tool_name(
                            call.name.as_deref(),
                            call.meta.as_ref(),
                            Some(call.kind),
                            Some(&call.title),
                            &input,
                        ),
                        input,
                    ),
                };
                let handled = name.starts_with("mcp__rawko__");
                self.known.insert(
                    id.clone(),
                    AgentCall {
                        name,
                        input,
                        handled,
                    },
                );
                match call.status {
                    ToolCallStatus::Completed | ToolCallStatus::Failed => {
                        let failed = call.status == ToolCallStatus::Failed;
                        self.ended(id, text_of(&call.content), failed, text)
                    }
                    _ => None,
                }
            }
            SessionUpdate::ToolCallUpdate(update) => {
                let id = update.tool_call_id.0.to_string();
                let said = self.input_said(
                    update.fields.raw_input.as_ref(),
                    update.fields.content.as_deref(),
                    update.fields.locations.as_deref(),
                );
                if let Some(known) = self.known.get_mut(&id) {
                    said.fill(&mut known.input);
                }
                match update.fields.status {
                    Some(ToolCallStatus::Completed) | Some(ToolCallStatus::Failed) => {
                        let failed = update.fields.status == Some(ToolCallStatus::Failed);
                        let content = update
                            .fields
                            .content
                            .as_deref()
                            .map(text_of)
                            .unwrap_or_default();
                        self.ended(id, content, failed, text)
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// What a tool call (or its update) says its input is ([`input_of`]).
    pub(super) fn input_said(
        &self,
        raw: Option<&Value>,
        content: Option<&[agent_client_protocol::v1::schema::ToolCallContent]>,
        locations: Option<&[agent_client_protocol::v1::schema::ToolCallLocation]>,
    ) -> Said {
        let raw_given =
            raw.is_some_and(|r| input_of(Some(r), &[], &[], &self.command.cwd).is_some());
        let input = input_of(
            raw,
            content.unwrap_or_default(),
            locations.unwrap_or_default(),
            &self.command.cwd,
        );
        Said { input, raw_given }
    }

    /// A tool call of the agent ended: an approved write its process could not make is made by
    /// rawko ([`super::carry`]); one rawko was never asked about is shown and logged.
    fn ended(
        &mut self,
        id: String,
        content: String,
        is_error: bool,
        text: &mut String,
    ) -> Option<Turn> {
        if is_error {
            if let Some(turn) = self.carry(&id, &content, text) {
                return Some(turn);
            }
        } else {
            self.approved_own.remove(&id);
        }
        self.ran(id, content, is_error, text)
    }

    /// A tool call of the agent ended that rawko was never asked about: shown and logged.
    fn ran(
        &mut self,
        id: String,
        content: String,
        is_error: bool,
        text: &mut String,
    ) -> Option<Turn> {
        let known = self.known.get_mut(&id)?;
        if known.handled {
            return None;
        }
        known.handled = true;
        let call = ToolCall {
            id,
            name: known.name.clone(),
            input: known.input.clone(),
        };
        let content = if content.is_empty() {
            "the agent ran it without asking rawko".to_owned()
        } else {
            content
        };
        Some(Self::call_turn(
            std::mem::take(text),
            call,
            Runner::AgentRan { content, is_error },
        ))
    }
}

//! `session/load`: which rawko tasks an ACP session ran (a small record in the state directory,
//! `acp-sessions/<id>.json`, written when a task starts and when the mode changes), and a stored
//! conversation replayed as `session/update`s (pure, table-tested in `tests.rs`).

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionUpdate, ToolCall, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields,
};
use serde::{Deserialize, Serialize};

use super::map::{locations, tool_kind};
use crate::clip::clip_to;
use crate::provider::Message;

/// The most of a replayed tool result shown.
const RESULT_CHARS: usize = 4000;

/// What rawko keeps of an ACP session so a client can load it again.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    pub version: u32,
    pub workspace: PathBuf,
    /// The session's mode: a workflow key or `none`.
    pub mode: String,
    /// The tasks the session started, oldest first.
    pub tasks: Vec<String>,
}

/// A session id rawko accepts (it names a file): letters, digits, `-` and `_`, at most 128.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Where the record of session `id` is kept.
pub fn record_path(state_dir: &Path, id: &str) -> Option<PathBuf> {
    valid_id(id).then(|| state_dir.join("acp-sessions").join(format!("{id}.json")))
}

/// The record of session `id`, if there is one that reads.
pub fn read(state_dir: &Path, id: &str) -> Option<SessionRecord> {
    let text = std::fs::read_to_string(record_path(state_dir, id)?).ok()?;
    serde_json::from_str(&text).ok()
}

/// Writes the record of session `id` (atomically); a failure is logged, not fatal: the
/// session goes on, only a later `session/load` will not find it.
pub fn write(state_dir: &Path, id: &str, record: &SessionRecord) {
    let Some(path) = record_path(state_dir, id) else {
        return;
    };
    if let Some(dir) = path.parent() {
        if let Err(e) = std::fs::create_dir_all(dir) {
            tracing::warn!("cannot record ACP session {id}: {e}");
            return;
        }
    }
    if let Err(e) = crate::store::write_atomic(&path, record) {
        tracing::warn!("cannot record ACP session {id}: {e}");
    }
}

/// A stored conversation as the updates a client shows: the user's messages, the assistant's
/// text, each tool call (completed or failed as its result says).
pub fn replay_updates(messages: &[Message], workspace: &Path) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    for m in messages {
        match m {
            Message::User(text) => updates.push(SessionUpdate::UserMessageChunk(
                ContentChunk::new(ContentBlock::from(text.clone())),
            )),
            Message::Assistant { text, tool_calls } => {
                if !text.is_empty() {
                    updates.push(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                        ContentBlock::from(text.clone()),
                    )));
                }
                for call in tool_calls {
                    updates.push(SessionUpdate::ToolCall(
                        ToolCall::new(call.id.clone(), call.name.clone())
                            .kind(tool_kind(&call.name))
                            .status(ToolCallStatus::Pending)
                            .locations(locations(&call.input, workspace))
                            .raw_input(call.input.clone()),
                    ));
                }
            }
            Message::ToolResults(results) => {
                for r in results {
                    let status = if r.is_error {
                        ToolCallStatus::Failed
                    } else {
                        ToolCallStatus::Completed
                    };
                    let fields = ToolCallUpdateFields::new()
                        .status(status)
                        .content(vec![clip_to(&r.content, RESULT_CHARS).into_owned().into()]);
                    updates.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        r.tool_call_id.clone(),
                        fields,
                    )));
                }
            }
        }
    }
    updates
}

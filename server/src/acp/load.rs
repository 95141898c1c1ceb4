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

/// Writes the record of session `id` through a temporary file and a rename, so a reader never
/// sees half of it. It is not synced to disk: it outlives rawko being killed (what `session/load`
/// is for), and syncing would hold up the task starting; the tasks' own logs are synced. A
/// failure is logged, not fatal: the session goes on, only a later `session/load` will not find
/// it.
pub fn write(state_dir: &Path, id: &str, record: &SessionRecord) {
    let Some(path) = record_path(state_dir, id) else {
        return;
    };
    let written = (|| -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec(record).map_err(std::io::Error::other)?)?;
        std::fs::rename(&tmp, &path)
    })();
    if let Err(e) = written {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ToolCall as Call, ToolResult};
    use serde_json::json;

    #[test]
    fn only_plain_ids_name_a_record_file() {
        let dir = Path::new("/state");
        for (id, ok) in [
            ("acp-1795-42-1", true),
            ("a_b-C9", true),
            ("", false),
            ("../etc/passwd", false),
            ("a/b", false),
            ("a b", false),
            (&"x".repeat(129), false),
        ] {
            assert_eq!(record_path(dir, id).is_some(), ok, "{id:?}");
        }
        assert_eq!(
            record_path(dir, "acp-1"),
            Some(PathBuf::from("/state/acp-sessions/acp-1.json"))
        );
    }

    #[test]
    fn a_record_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let record = SessionRecord {
            version: 1,
            workspace: PathBuf::from("/w"),
            mode: "feature".into(),
            tasks: vec!["task-1-1".into(), "task-2-2".into()],
        };
        write(dir.path(), "acp-1", &record);
        assert_eq!(read(dir.path(), "acp-1"), Some(record));
        assert_eq!(read(dir.path(), "acp-2"), None);
        std::fs::write(dir.path().join("acp-sessions/acp-3.json"), "{not json").unwrap();
        assert_eq!(read(dir.path(), "acp-3"), None, "a broken record is no record");
    }

    #[test]
    fn a_conversation_replays_as_the_updates_a_client_shows() {
        let messages = vec![
            Message::User("Remember me".into()),
            Message::Assistant {
                text: "Reading.".into(),
                tool_calls: vec![Call {
                    id: "c1".into(),
                    name: "Read".into(),
                    input: json!({"file_path": "README.md"}),
                }],
            },
            Message::ToolResults(vec![ToolResult {
                tool_call_id: "c1".into(),
                content: "A tiny project.".into(),
                is_error: false,
            }]),
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![Call {
                    id: "c2".into(),
                    name: "Bash".into(),
                    input: json!({"command": "false"}),
                }],
            },
            Message::ToolResults(vec![ToolResult {
                tool_call_id: "c2".into(),
                content: "exit 1".into(),
                is_error: true,
            }]),
        ];
        let updates = replay_updates(&messages, Path::new("/w"));
        let shown: Vec<Value> = updates
            .iter()
            .map(|u| serde_json::to_value(u).unwrap())
            .collect();
        let kinds: Vec<&str> = shown
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "agent_message_chunk",
                "tool_call",
                "tool_call_update",
                "tool_call",
                "tool_call_update"
            ],
            "an empty assistant text adds no chunk"
        );
        assert_eq!(shown[0]["content"]["text"], "Remember me");
        assert_eq!(shown[2]["toolCallId"], "c1");
        assert_eq!(shown[2]["kind"], "read");
        assert_eq!(shown[2]["locations"][0]["path"], "/w/README.md");
        assert_eq!(shown[3]["status"], "completed");
        assert_eq!(shown[4]["kind"], "execute");
        assert_eq!(shown[5]["status"], "failed");
    }

    use serde_json::Value;
}

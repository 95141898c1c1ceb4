//! Which task each ACP session runs, kept in the state directory (`acp-sessions/<session id>`,
//! the task id as its text), so that a later `rawko acp` can load the session (`session/load`).

use std::io;
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionUpdate, ToolCall, ToolCallStatus, ToolCallUpdate,
    ToolCallUpdateFields,
};

use super::map::{locations, tool_kind};
use crate::clip::clip_to;
use crate::provider::Message;

/// The most of a replayed tool result shown.
const RESULT_CHARS: usize = 4000;

/// The file of `session`, if its id is one rawko could have made (letters, digits, `-`, `_`).
fn file(store: &Path, session: &str) -> Option<PathBuf> {
    let plain = !session.is_empty()
        && session.len() <= 200
        && session
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'));
    plain.then(|| store.join("acp-sessions").join(session))
}

/// Records that `session` runs `task` now (written to a temporary file, then renamed).
pub fn record(store: &Path, session: &str, task: &str) -> io::Result<()> {
    let path = file(store, session)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a session id"))?;
    let dir = store.join("acp-sessions");
    std::fs::create_dir_all(&dir)?;
    let tmp = dir.join(format!(".{session}.tmp"));
    std::fs::write(&tmp, task)?;
    std::fs::rename(&tmp, &path)
}

/// The task `session` ran last, if it is recorded.
pub fn task_of(store: &Path, session: &str) -> Option<String> {
    let text = std::fs::read_to_string(file(store, session)?).ok()?;
    let task = text.trim();
    (!task.is_empty()).then(|| task.to_owned())
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
    use serde_json::{json, Value};

    #[test]
    fn a_recorded_session_gives_its_last_task_and_odd_ids_give_none() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = dir.path();
        assert_eq!(super::task_of(store, "acp-1-2-3"), None);
        super::record(store, "acp-1-2-3", "task-1").expect("record");
        super::record(store, "acp-1-2-3", "task-2").expect("record");
        assert_eq!(
            super::task_of(store, "acp-1-2-3").as_deref(),
            Some("task-2")
        );
        assert!(super::record(store, "../escape", "t").is_err());
        assert_eq!(super::task_of(store, "../acp-sessions/acp-1-2-3"), None);
        assert_eq!(super::task_of(store, ""), None);
    }

    #[test]
    fn a_conversation_replays_as_the_updates_a_client_shows() {
        let messages = vec![
            Message::User("Remember me".into()),
            Message::Assistant {
                text: "Reading.".into(),
                tool_calls: vec![crate::provider::ToolCall {
                    id: "c1".into(),
                    name: "Read".into(),
                    input: json!({"file_path": "README.md"}),
                }],
            },
            Message::ToolResults(vec![crate::provider::ToolResult {
                tool_call_id: "c1".into(),
                content: "A tiny project.".into(),
                is_error: false,
            }]),
            Message::Assistant {
                text: String::new(),
                tool_calls: vec![crate::provider::ToolCall {
                    id: "c2".into(),
                    name: "Bash".into(),
                    input: json!({"command": "false"}),
                }],
            },
            Message::ToolResults(vec![crate::provider::ToolResult {
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
}

//! Which task each ACP session runs, kept in the state directory (`acp-sessions/<session id>`,
//! the task id as its text), so that a later `rawko acp` can load the session (`session/load`,
//! `session/resume`), and the sessions of a workspace can be listed (`session/list`), each with
//! its task's description and when it last changed.

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

/// The most sessions one `session/list` answer holds.
pub const PAGE: usize = 50;

/// A session as `session/list` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub id: String,
    pub cwd: PathBuf,
    /// Its task's description.
    pub title: String,
    /// When its task last changed (milliseconds since the epoch).
    pub updated_at: i64,
}

/// The recorded sessions whose task ran in `workspace`, newest first. A task that runs now is
/// taken from `live` (by session id), which is newer than its snapshot on disk.
pub fn listed(
    store: &Path,
    workspace: &Path,
    live: &std::collections::HashMap<String, crate::engine::TaskSnapshot>,
) -> Vec<Listed> {
    let Ok(entries) = std::fs::read_dir(store.join("acp-sessions")) else {
        return Vec::new();
    };
    let mut all: Vec<Listed> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let id = entry.file_name().into_string().ok()?;
            let task = task_of(store, &id)?;
            let snapshot = match live.get(&id).filter(|s| s.task_id == task) {
                Some(s) => s.clone(),
                None => {
                    crate::engine::stored::snapshot(&crate::store::TaskFiles::dir_of(store, &task))?
                }
            };
            let cwd = std::fs::canonicalize(&snapshot.workspace).unwrap_or(snapshot.workspace);
            (cwd == workspace).then_some(Listed {
                id,
                cwd,
                title: snapshot.description,
                updated_at: snapshot.updated_at,
            })
        })
        .collect();
    all.sort_by(|a, b| (b.updated_at, &b.id).cmp(&(a.updated_at, &a.id)));
    all
}

/// The page of `all` (newest first) after `cursor`, at most `size` long, and the cursor of the
/// page after it, if there is one. A cursor is the position of a page's last session
/// (`<updated at>:<session id>`), so a session that changes meanwhile is not shown twice.
pub fn page(
    all: Vec<Listed>,
    cursor: Option<&str>,
    size: usize,
) -> Result<(Vec<Listed>, Option<String>), String> {
    let after = match cursor {
        None => None,
        Some(c) => {
            let (at, id) = c
                .split_once(':')
                .and_then(|(at, id)| Some((at.parse::<i64>().ok()?, id)))
                .ok_or_else(|| {
                    format!(
                        "invalid cursor \"{}\": pass the nextCursor of the last answer",
                        crate::clip::clip(c)
                    )
                })?;
            Some((at, id.to_owned()))
        }
    };
    let mut rest: Vec<Listed> = all
        .into_iter()
        .filter(|s| {
            after
                .as_ref()
                .is_none_or(|(at, id)| (s.updated_at, &s.id) < (*at, id))
        })
        .collect();
    let next = (rest.len() > size).then(|| {
        let last = &rest[size - 1];
        format!("{}:{}", last.updated_at, last.id)
    });
    rest.truncate(size);
    Ok((rest, next))
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

    fn listed(id: &str, updated_at: i64) -> Listed {
        Listed {
            id: id.to_owned(),
            cwd: PathBuf::from("/w"),
            title: format!("task of {id}"),
            updated_at,
        }
    }

    #[test]
    fn sessions_come_a_page_at_a_time_newest_first_and_a_bad_cursor_is_refused() {
        let all = vec![
            listed("c", 30),
            listed("b", 20),
            listed("a2", 10),
            listed("a1", 10),
            listed("z", 5),
        ];
        let ids = |page: &[Listed]| page.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
        let (first, next) = page(all.clone(), None, 2).unwrap();
        assert_eq!(ids(&first), ["c", "b"]);
        assert_eq!(next.as_deref(), Some("20:b"));
        let (second, next) = page(all.clone(), next.as_deref(), 2).unwrap();
        assert_eq!(
            ids(&second),
            ["a2", "a1"],
            "ties in time go by id, both shown"
        );
        let (third, next) = page(all.clone(), next.as_deref(), 2).unwrap();
        assert_eq!(ids(&third), ["z"]);
        assert_eq!(next, None, "the last page has no cursor");
        let (whole, next) = page(all.clone(), None, PAGE).unwrap();
        assert_eq!(whole.len(), 5);
        assert_eq!(next, None);
        // A session that moved to the front meanwhile is not shown again on a later page.
        let mut moved = all.clone();
        moved[4].updated_at = 40;
        moved.sort_by(|a, b| (b.updated_at, &b.id).cmp(&(a.updated_at, &a.id)));
        let (second, _) = page(moved, Some("20:b"), 2).unwrap();
        assert_eq!(ids(&second), ["a2", "a1"]);
        let err = page(all, Some("yesterday"), 2).unwrap_err();
        assert!(err.starts_with("invalid cursor \"yesterday\""), "{err}");
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

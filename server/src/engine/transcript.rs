//! The conversation of a task in Claude Code's transcript format, for hooks: `transcript.jsonl`
//! beside the task log, one JSON line per message (`type` user or assistant, `message` with `role`
//! and content blocks, `session_id`, `cwd`, `uuid`, `parentUuid`, `timestamp`). Hooks written for
//! Claude Code read it through `transcript_path` (a Stop hook looking for a promise in the last
//! assistant message, for example).
//!
//! It is a view derived from the task log (the log stays the record): written as the log is, not
//! synced on its own, and a failure to write it is logged, never fatal.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::workflow::texts::iso_timestamp;

/// The file name beside `events.jsonl`.
pub const FILE_NAME: &str = "transcript.jsonl";

pub struct Transcript {
    path: PathBuf,
    /// The file as the log writer knows it, from the first line on.
    target: Option<std::sync::Arc<crate::store::LogTarget>>,
    session_id: String,
    cwd: String,
    /// Lines written so far (the next line's number), also those of an earlier run.
    lines: u64,
    last_uuid: Option<String>,
    failed: bool,
}

impl Transcript {
    /// The transcript of task `session_id` in `dir` (the task's directory). An existing file (a
    /// resumed task) is continued.
    pub fn open(dir: &Path, session_id: &str, cwd: &Path) -> Self {
        let path = dir.join(FILE_NAME);
        let mut lines = 0;
        let mut last_uuid = None;
        if path.exists() {
            // Lines of this process still queued for the file are written first (a task
            // resumed in the same server). A new task has no file and does not wait.
            crate::store::journal::flush_if_started();
        }
        if let Ok(f) = File::open(&path) {
            for line in BufReader::new(f).lines().map_while(Result::ok) {
                lines += 1;
                if let Ok(v) = serde_json::from_str::<Value>(&line) {
                    last_uuid = v["uuid"].as_str().map(str::to_owned);
                }
            }
        }
        Self {
            path,
            target: None,
            session_id: session_id.to_owned(),
            cwd: cwd.display().to_string(),
            lines,
            last_uuid,
            failed: false,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Adds the message a log event stands for, if it stands for one. The event comes as it is
    /// written to the log (serialised, secrets already redacted). The line is serialised from
    /// borrows of the event: a tool's output is not copied on its way to the file.
    pub fn record(&mut self, event: &Value, now_millis: i64) {
        let (kind, message) = match event["type"].as_str() {
            Some("user_message") => (
                "user",
                Message {
                    role: "user",
                    kind: None,
                    content: Content::Text(&event["text"]),
                },
            ),
            Some("turn") => {
                let mut blocks = Vec::new();
                if event["text"].as_str().is_some_and(|t| !t.is_empty()) {
                    blocks.push(Block::Text {
                        text: &event["text"],
                    });
                }
                for call in event["toolCalls"].as_array().into_iter().flatten() {
                    blocks.push(Block::ToolUse {
                        id: &call["id"],
                        name: &call["name"],
                        input: &call["input"],
                    });
                }
                (
                    "assistant",
                    Message {
                        role: "assistant",
                        kind: Some("message"),
                        content: Content::Blocks(blocks),
                    },
                )
            }
            Some("tool_finished") => (
                "user",
                Message {
                    role: "user",
                    kind: None,
                    content: Content::Blocks(vec![Block::ToolResult {
                        tool_use_id: &event["id"],
                        content: &event["content"],
                        is_error: &event["isError"],
                    }]),
                },
            ),
            _ => return,
        };
        let uuid = uuid_for(&self.session_id, self.lines);
        let line = Line {
            parent_uuid: self.last_uuid.as_deref(),
            is_sidechain: false,
            user_type: "external",
            cwd: &self.cwd,
            session_id_camel: &self.session_id,
            session_id: &self.session_id,
            kind,
            message,
            uuid: &uuid,
            timestamp: iso_timestamp(now_millis),
        };
        let mut bytes = match serde_json::to_vec(&line) {
            Ok(bytes) => bytes,
            Err(e) => {
                tracing::warn!("cannot serialise a transcript line: {e}");
                return;
            }
        };
        bytes.push(b'\n');
        if self.write(bytes) {
            self.lines += 1;
            self.last_uuid = Some(uuid);
        }
    }

    /// Appends a line through the log writer (not synced; the file is open only while busy).
    /// Whoever reads the transcript (a hook) waits for the writer first.
    fn write(&mut self, bytes: Vec<u8>) -> bool {
        let target = self.target.get_or_insert_with(|| {
            let t = crate::store::journal().target(self.path.clone());
            t.set_durable(false);
            t
        });
        if let Some(e) = target.error() {
            if !self.failed {
                self.failed = true;
                tracing::warn!("cannot write the transcript {}: {e}", self.path.display());
            }
            return false;
        }
        crate::store::journal().append(target, bytes);
        true
    }
}

impl Drop for Transcript {
    fn drop(&mut self) {
        if let Some(t) = &self.target {
            crate::store::journal().close(t);
        }
    }
}

/// One line of the transcript, in Claude Code's field order.
#[derive(serde::Serialize)]
struct Line<'a> {
    #[serde(rename = "parentUuid")]
    parent_uuid: Option<&'a str>,
    #[serde(rename = "isSidechain")]
    is_sidechain: bool,
    #[serde(rename = "userType")]
    user_type: &'static str,
    cwd: &'a str,
    #[serde(rename = "sessionId")]
    session_id_camel: &'a str,
    session_id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    message: Message<'a>,
    uuid: &'a str,
    timestamp: String,
}

#[derive(serde::Serialize)]
struct Message<'a> {
    role: &'static str,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    content: Content<'a>,
}

#[derive(serde::Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(&'a Value),
    Blocks(Vec<Block<'a>>),
}

#[derive(serde::Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: &'a Value,
    },
    ToolUse {
        id: &'a Value,
        name: &'a Value,
        input: &'a Value,
    },
    ToolResult {
        tool_use_id: &'a Value,
        content: &'a Value,
        is_error: &'a Value,
    },
}

/// A UUID-shaped id (version 4 layout), the same for the same task and line.
fn uuid_for(session: &str, line: u64) -> String {
    let digest = Sha256::digest(format!("{session}:{line}").as_bytes());
    let h = |range: std::ops::Range<usize>| -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(range.len() * 2);
        for b in &digest[range] {
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 15)]));
        }
        out
    };
    let variant = (digest[8] & 0x3f) | 0x80;
    format!(
        "{}-{}-4{}-{:02x}{}-{}",
        h(0..4),
        h(4..6),
        &h(6..8)[1..],
        variant,
        h(9..10),
        h(10..16)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::log::{LogEvent, LoggedCall};
    use serde_json::json;

    fn v(e: LogEvent) -> Value {
        serde_json::to_value(e).unwrap()
    }

    #[test]
    fn timestamps_and_ids_have_claude_codes_shape() {
        assert_eq!(iso_timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_timestamp(1_795_461_654_123), "2026-11-23T19:20:54.123Z");
        assert_eq!(iso_timestamp(951_782_400_000), "2000-02-29T00:00:00.000Z");
        let id = uuid_for("task-1", 0);
        assert_eq!(id.len(), 36);
        assert_eq!(id.as_bytes()[14], b'4');
        assert!(
            matches!(id.as_bytes()[19], b'8' | b'9' | b'a' | b'b'),
            "{id}"
        );
        assert_ne!(id, uuid_for("task-1", 1));
    }

    #[test]
    fn the_conversation_is_written_as_claude_code_writes_it_and_continued_on_resume() {
        let dir = tempfile::tempdir().unwrap();
        let mut t = Transcript::open(dir.path(), "task-1", Path::new("/ws"));
        t.record(
            &v(LogEvent::UserMessage {
                text: "Fix the bug".into(),
                source: "initial".into(),
            }),
            0,
        );
        t.record(
            &v(LogEvent::Turn {
                agent: "default".into(),
                text: "Reading.".into(),
                tool_calls: vec![LoggedCall {
                    id: "c1".into(),
                    name: "Read".into(),
                    input: json!({"file_path": "a.rs"}),
                    reported: false,
                }],
            }),
            1,
        );
        t.record(
            &v(LogEvent::ToolStarted {
                id: "c1".into(),
                name: "Read".into(),
                reported: false,
            }),
            2,
        );
        t.record(
            &v(LogEvent::ToolFinished {
                id: "c1".into(),
                content: "fn a() {}".into(),
                is_error: false,
            }),
            3,
        );
        // A resumed task goes on in the same file (the first run's writer has ended).
        drop(t);
        crate::store::journal().flush_blocking();
        let mut t = Transcript::open(dir.path(), "task-1", Path::new("/ws"));
        t.record(
            &v(LogEvent::Turn {
                agent: "default".into(),
                text: "Done. <promise>COMPLETE</promise>".into(),
                tool_calls: vec![],
            }),
            4,
        );
        crate::store::journal().flush_blocking();
        let text = std::fs::read_to_string(dir.path().join(FILE_NAME)).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0]["type"], "user");
        assert_eq!(lines[0]["message"]["content"], "Fix the bug");
        assert_eq!(lines[0]["parentUuid"], Value::Null);
        assert_eq!(lines[1]["type"], "assistant");
        assert_eq!(lines[1]["message"]["content"][1]["type"], "tool_use");
        assert_eq!(
            lines[1]["message"]["content"][1]["input"]["file_path"],
            "a.rs"
        );
        assert_eq!(lines[1]["parentUuid"], lines[0]["uuid"]);
        assert_eq!(lines[2]["message"]["content"][0]["type"], "tool_result");
        assert_eq!(lines[2]["message"]["content"][0]["tool_use_id"], "c1");
        assert_eq!(lines[3]["parentUuid"], lines[2]["uuid"]);
        for l in &lines {
            assert_eq!(l["session_id"], "task-1");
            assert_eq!(l["cwd"], "/ws");
            assert_eq!(l["message"]["role"], l["type"]);
        }
        assert_eq!(
            lines[3]["message"]["content"][0]["text"],
            "Done. <promise>COMPLETE</promise>"
        );
    }
}

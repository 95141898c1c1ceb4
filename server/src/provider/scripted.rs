//! The scripted provider: replays a YAML or JSON file of model turns, in order, with no network.
//! When the turns run out it fails with `script exhausted`, so a test never hangs.
//!
//! ```yaml
//! turns:
//!   - text: "Reading the code first."
//!     tool_calls:
//!       - {name: Read, input: {path: README.md}}
//!   - error: rate_limited          # a provider error of that code
//!   - text: "Thinking…"
//!     delay_ms: 200                # rawko's extension: wait before the turn
//!   - panic: "a bug"               # fault injection: the turn panics inside the task's actor
//!   - text: "Counted."
//!     usage: {input_tokens: 1200, output_tokens: 80, context_window: 200000}  # as reported
//! subagents:                       # optional: what each subagent profile plays
//!   writer:                        # every subagent of profile `writer` plays these from the
//!     - tool_calls:                # first, in its own conversation
//!         - {name: Write, input: {path: a.txt, content: "a"}}
//!     - text: "Wrote a.txt."
//! ```
//!
//! A subagent whose profile the mapping does not name has no turns: it fails at its first.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::{
    ErrorKind, Provider, ProviderError, StopReason, TextSink, ToolCall, Turn, TurnFuture,
    TurnRequest,
};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptFile {
    turns: Vec<ScriptTurn>,
    /// Profile name → the turns each subagent of that profile plays.
    #[serde(default)]
    subagents: std::collections::BTreeMap<String, Vec<ScriptTurn>>,
}

/// One scripted model turn.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScriptTurn {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ScriptToolCall>,
    /// A provider error code (`rate_limited`, `network_error`, …) this turn fails with.
    #[serde(default)]
    pub error: Option<String>,
    /// The error's message.
    #[serde(default)]
    pub message: Option<String>,
    /// Milliseconds to wait before the turn (to let a test act mid-turn).
    #[serde(default)]
    pub delay_ms: Option<u64>,
    /// Fault injection: the turn panics with this message, as a bug in rawko would, so tests can
    /// hold that no fault leaves a task running (invariant 8).
    #[serde(default)]
    pub panic: Option<String>,
    /// The token usage the "server" reports for this turn (a model API's `usage`).
    #[serde(default)]
    pub usage: Option<ScriptUsage>,
}

/// A scripted turn's reported token usage.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ScriptUsage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// The model's context window, when the script says it.
    #[serde(default)]
    pub context_window: Option<u64>,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolCall {
    pub name: String,
    #[serde(default = "empty_object")]
    pub input: Value,
    #[serde(default)]
    pub id: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// A script that could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "script {}{}: {message}",
    crate::clip::clip_path(path),
    line.map(|l| format!(":{l}")).unwrap_or_default()
)]
pub struct ScriptError {
    pub path: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

/// Replays a script's turns.
#[derive(Debug, Clone)]
pub struct ScriptedProvider {
    /// Shared by the tasks that play the same script text (a turn is cloned as it is played).
    turns: Arc<[ScriptTurn]>,
    next: usize,
    calls: usize,
    /// What the last turn played reported of its usage.
    usage: Option<ScriptUsage>,
}

impl ScriptedProvider {
    pub fn new(turns: Vec<ScriptTurn>) -> Self {
        Self {
            turns: turns.into(),
            next: 0,
            calls: 0,
            usage: None,
        }
    }

    /// Reads and checks a script file (YAML, or JSON, which is YAML too).
    pub fn load(path: &Path) -> Result<Self, ScriptError> {
        Self::load_for(path, None)
    }

    /// [`ScriptedProvider::load`], playing the `subagents:` entry of `subagent` when given (none
    /// when the script does not name it: the subagent fails at its first turn).
    pub fn load_for(path: &Path, subagent: Option<&str>) -> Result<Self, ScriptError> {
        let err = |line, message: String| ScriptError {
            path: path.to_owned(),
            line,
            message,
        };
        let text =
            std::fs::read_to_string(path).map_err(|e| err(None, format!("cannot read: {e}")))?;
        // Tasks playing the same text share its parsed turns: a thousand tasks of one script
        // hold one copy. The text is read each time, so an edited script is parsed again.
        type Cache = HashMap<String, Weak<[ScriptTurn]>>;
        static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
        let cache = CACHE.get_or_init(Default::default);
        let lock = || cache.lock().unwrap_or_else(|e| e.into_inner());
        let key = match subagent {
            Some(profile) => format!("{profile}\0{text}"),
            None => text.clone(),
        };
        if let Some(turns) = lock().get(&key).and_then(Weak::upgrade) {
            return Ok(Self {
                turns,
                next: 0,
                calls: 0,
                usage: None,
            });
        }
        let file = Self::parse_file(&text).map_err(|(line, message)| err(line, message))?;
        let provider = match subagent {
            None => Self::new(file.turns),
            Some(profile) => Self::new(file.subagents.get(profile).cloned().unwrap_or_default()),
        };
        let mut cache = lock();
        cache.retain(|_, turns| turns.strong_count() > 0);
        cache.insert(key, Arc::downgrade(&provider.turns));
        Ok(provider)
    }

    /// Parses script text; the error carries the line where the parser knows it.
    pub fn parse(text: &str) -> Result<Self, (Option<usize>, String)> {
        Self::parse_file(text).map(|file| Self::new(file.turns))
    }

    fn parse_file(text: &str) -> Result<ScriptFile, (Option<usize>, String)> {
        let file: ScriptFile = serde_yaml_ng::from_str(text).map_err(|e| {
            let message = e.to_string();
            let message = match message.find(" at line ") {
                Some(i) => message[..i].to_owned(),
                None => message,
            };
            (
                e.location().map(|l| l.line()),
                format!("invalid script: {message}"),
            )
        })?;
        let lists = std::iter::once(("turns".to_owned(), &file.turns)).chain(
            file.subagents
                .iter()
                .map(|(name, turns)| (format!("subagents.{name}"), turns)),
        );
        for (list, turns) in lists {
            check_turns(&list, turns)?;
        }
        Ok(file)
    }

    /// How many turns are left to play.
    pub fn remaining(&self) -> usize {
        self.turns.len() - self.next
    }

    fn play(&mut self) -> Result<(ScriptTurn, usize), ProviderError> {
        let Some(turn) = self.turns.get(self.next).cloned() else {
            return Err(ProviderError::new(
                ErrorKind::Unknown,
                format!(
                    "script exhausted: all {} turns were played",
                    self.turns.len()
                ),
            ));
        };
        self.next += 1;
        Ok((turn, self.next - 1))
    }
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn resume_after(&mut self, turns: usize) {
        self.next = turns.min(self.turns.len());
    }

    fn context_usage(&self) -> Option<super::ContextUsage> {
        self.usage.map(|u| super::ContextUsage {
            used: u.input_tokens + u.output_tokens,
            window: u.context_window,
        })
    }

    fn turn<'a>(&'a mut self, _request: TurnRequest<'a>, on_text: TextSink<'a>) -> TurnFuture<'a> {
        Box::pin(async move {
            let (turn, index) = self.play()?;
            self.usage = turn.usage;
            if let Some(ms) = turn.delay_ms {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            if let Some(message) = &turn.panic {
                panic!("{message}");
            }
            if let Some(code) = &turn.error {
                let kind = ErrorKind::parse(code).unwrap_or(ErrorKind::Unknown);
                let message = turn
                    .message
                    .clone()
                    .unwrap_or_else(|| format!("scripted {code} at turn {}", index + 1));
                return Err(ProviderError::new(kind, message));
            }
            let text = turn.text.clone().unwrap_or_default();
            // Stream word by word, the way a model's deltas arrive.
            for piece in text.split_inclusive(' ') {
                on_text(piece);
            }
            let tool_calls: Vec<ToolCall> = turn
                .tool_calls
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    self.calls += 1;
                    ToolCall {
                        id: c
                            .id
                            .clone()
                            .unwrap_or_else(|| format!("call_{}_{}", index + 1, i + 1)),
                        name: c.name.clone(),
                        input: c.input.clone(),
                    }
                })
                .collect();
            let stop_reason = if tool_calls.is_empty() {
                StopReason::EndTurn
            } else {
                StopReason::ToolUse
            };
            Ok(Turn {
                text,
                tool_calls,
                stop_reason,
                runner: Default::default(),
            })
        })
    }
}

/// Checks the turns of `list` (`turns`, `subagents.NAME`): error codes known, tool calls named.
fn check_turns(list: &str, turns: &[ScriptTurn]) -> Result<(), (Option<usize>, String)> {
    for (i, turn) in turns.iter().enumerate() {
        if let Some(code) = &turn.error {
            if ErrorKind::parse(code).is_none() {
                return Err((
                        None,
                        format!(
                            "{list}[{i}]: unknown error code \"{code}\" (one of authentication_failed, rate_limited, context_length_exceeded, invalid_request, model_unavailable, network_error, unknown)"
                        ),
                    ));
            }
        }
        if let Some(call) = turn.tool_calls.iter().find(|c| c.name.trim().is_empty()) {
            return Err((
                None,
                format!("{list}[{i}]: a tool call has no name ({call:?})"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    fn request() -> TurnRequest<'static> {
        TurnRequest {
            system: None,
            messages: &[],
            context: None,
            tools: &[],
        }
    }

    #[tokio::test]
    async fn plays_turns_in_order_then_is_exhausted() {
        let mut p = ScriptedProvider::parse(
            "turns:\n  - text: \"Reading first.\"\n    tool_calls:\n      - {name: Read, input: {path: README.md}}\n  - error: rate_limited\n  - text: done\n",
        )
        .unwrap();
        let streamed = Mutex::new(String::new());
        let sink = |s: &str| streamed.lock().unwrap().push_str(s);
        let t = p.turn(request(), &sink).await.unwrap();
        assert_eq!(t.text, "Reading first.");
        assert_eq!(*streamed.lock().unwrap(), "Reading first.");
        assert_eq!(t.stop_reason, StopReason::ToolUse);
        assert_eq!(t.tool_calls[0].name, "Read");
        assert_eq!(t.tool_calls[0].id, "call_1_1");
        assert_eq!(t.tool_calls[0].input["path"], "README.md");
        let e = p.turn(request(), &sink).await.unwrap_err();
        assert_eq!(e.kind, ErrorKind::RateLimited);
        let t = p.turn(request(), &sink).await.unwrap();
        assert_eq!(t.stop_reason, StopReason::EndTurn);
        let e = p.turn(request(), &sink).await.unwrap_err();
        assert!(e.message.starts_with("script exhausted"), "{e}");
    }

    #[tokio::test]
    async fn a_turn_reports_the_usage_its_script_gives() {
        let mut p = ScriptedProvider::parse(
            "turns:\n  - text: counted\n    usage: {input_tokens: 1200, output_tokens: 80, context_window: 200000}\n  - text: uncounted\n",
        )
        .unwrap();
        assert_eq!(p.context_usage(), None, "nothing before a turn");
        p.turn(request(), &|_| {}).await.unwrap();
        assert_eq!(
            p.context_usage(),
            Some(super::super::ContextUsage {
                used: 1280,
                window: Some(200_000)
            })
        );
        p.turn(request(), &|_| {}).await.unwrap();
        assert_eq!(p.context_usage(), None, "a turn without usage reports none");
        let e = ScriptedProvider::parse("turns:\n  - usage: {tokens: 5}\n").unwrap_err();
        assert!(e.1.contains("unknown field `tokens`"), "{}", e.1);
    }

    #[test]
    fn json_scripts_load_too() {
        let p = ScriptedProvider::parse(r#"{"turns":[{"text":"hi"},{"tool_calls":[{"name":"workflow_step","input":{"action":"next"}}]}]}"#).unwrap();
        assert_eq!(p.remaining(), 2);
    }

    #[test]
    fn bad_scripts_are_clear_errors() {
        let cases = [
            ("turns: [\n", "invalid script"),
            ("turn: []\n", "unknown field `turn`"),
            ("turns:\n  - texts: hi\n", "unknown field `texts`"),
            (
                "turns:\n  - error: on_fire\n",
                "unknown error code \"on_fire\"",
            ),
            ("turns:\n  - tool_calls: [{name: ''}]\n", "has no name"),
            ("- 1\n", "invalid script"),
        ];
        for (text, want) in cases {
            let (_, message) = ScriptedProvider::parse(text).expect_err(text);
            assert!(message.contains(want), "{text:?}: {message}");
        }
        let (line, _) = ScriptedProvider::parse("turns:\n  - text: a\n  - text: [b\n").unwrap_err();
        assert_eq!(line, Some(3));
    }

    #[test]
    fn a_missing_file_names_its_path() {
        let e = ScriptedProvider::load(Path::new("/nonexistent/script.yaml")).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("script /nonexistent/script.yaml: cannot read"),
            "{e}"
        );
    }
}

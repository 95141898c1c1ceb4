//! What a task writes to its log, and how a log is replayed into the state a resumed task
//! continues from: the machine, the workflow position, the conversation, the tool calls still to
//! run, and how far the provider got.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::pins::{LoggedChange, PinRefs};
use crate::clip::clip_line;
use crate::machine::{self, Machine, MachineConfig};
use crate::provider::{Message, ProviderSpec, ToolCall, ToolResult};
use crate::store::LogRecord;
use crate::workflow::WorkflowState;

/// A tool call as logged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoggedCall {
    pub id: String,
    pub name: String,
    pub input: Value,
    /// The agent reported this call as done (an `acp` agent ran it itself, never through rawko):
    /// rawko did not run it, and a resumed task never runs it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reported: bool,
}

/// The result a resumed task gives a call the agent reported whose result was not logged.
const REPORTED_NOT_RUN: &str = "the agent reported this call as done; rawko did not run it";

/// One event of a task's log.
#[allow(clippy::large_enum_variant)] // written once per event; boxing would only add noise
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LogEvent {
    /// The first record: everything needed to build the task again.
    #[serde(rename_all = "camelCase")]
    Started {
        task_id: String,
        description: String,
        workflow: Option<String>,
        workspace: PathBuf,
        provider: ProviderSpec,
        #[serde(default)]
        agent: Option<String>,
        #[serde(default)]
        arbiter: Option<ProviderSpec>,
        started_at: i64,
        /// The digests of the definitions the task runs under, pinned in the store before this
        /// record was written (absent in a log of a rawko before pinning).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        definitions: Option<PinRefs>,
        /// Set when the task is a subagent: who it is.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        subagent: Option<crate::engine::subagents::SubagentOf>,
        /// The pi profile a subagent runs (rawko's agents are pinned).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pi_profile: Option<crate::agents::profiles::PiProfile>,
    },
    /// The pi agent files (subagent profiles) a task may delegate to, as read when it started.
    Profiles {
        profiles: Vec<crate::agents::profiles::PiProfile>,
    },
    /// A `delegate_to_subagents` call started these subagents (task ids, in the call's order),
    /// recorded before the first starts: a resumed task goes on with the same ones.
    #[serde(rename_all = "camelCase")]
    Delegated {
        call_id: String,
        children: Vec<String>,
    },
    /// An event the orchestrator machine took, and where it led.
    Machine {
        event: machine::Event,
        from: String,
        to: String,
        #[serde(default)]
        guard: Option<String>,
    },
    /// The workflow moved.
    Workflow {
        state: WorkflowState,
    },
    /// A user message went into the conversation (`initial`, `reminder`, `user`).
    UserMessage {
        text: String,
        source: String,
    },
    /// A model turn finished.
    #[serde(rename_all = "camelCase")]
    Turn {
        agent: String,
        text: String,
        tool_calls: Vec<LoggedCall>,
    },
    /// A model turn failed (it still counts as played).
    TurnFailed {
        kind: String,
        message: String,
    },
    /// The model arbiter answered (or failed to).
    ArbiterTurn {
        #[serde(default)]
        text: Option<String>,
        #[serde(default)]
        error: Option<String>,
    },
    ToolStarted {
        id: String,
        name: String,
        /// The agent reported the call as done: rawko shows and logs it, and runs nothing.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        reported: bool,
    },
    #[serde(rename_all = "camelCase")]
    ToolFinished {
        id: String,
        content: String,
        is_error: bool,
    },
    Approval {
        id: String,
        tool: String,
        answer: String,
    },
    /// The agent behind the provider (`acp`) runs in this session of its own.
    AgentSession {
        id: String,
    },
    /// Definitions pinned after the start (their copies durable before this record): a workflow
    /// set later, or a task stored before rawko pinned, resumed. They replace the ones named
    /// before.
    Pinned {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        workflows: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        agents: Option<String>,
        reason: String,
    },
    /// Definition files on disk that differ from the task's pinned copies, found `when` the task
    /// resumed or ended; the task did not adopt them.
    DefinitionsChanged {
        when: String,
        changes: Vec<LoggedChange>,
    },
    /// The task was rewound to the start of a phase (`rawko rewind`): the workspace was restored
    /// to checkpoint `commit`, and the task goes on from the state it had when record `at_seq`
    /// (that checkpoint's record) was written, as if the records after it up to this one had
    /// not been written ([`effective`]).
    #[serde(rename_all = "camelCase")]
    Rewound {
        /// The concrete phase (0-based) the task is back at the start of.
        to_phase_index: u32,
        /// That phase's name.
        phase: String,
        commit: String,
        at_seq: u64,
        /// The files restored from the checkpoint, relative to the workspace.
        #[serde(default)]
        restored: Vec<String>,
        /// The files removed (created after the checkpoint), relative to the workspace.
        #[serde(default)]
        removed: Vec<String>,
    },
    /// A checkpoint of the workspace (`checkpoint/`), written once its commit and refs exist:
    /// at a phase's entry (`phase_entered`) or after a tool call that may have changed files
    /// (`tool_call`). A record for the user and for `rawko diff`; it changes nothing a resumed
    /// task continues from.
    #[serde(rename_all = "camelCase")]
    Checkpoint {
        commit: String,
        /// The concrete phase (0-based) the task was in, when it runs a workflow.
        phase_index: Option<u32>,
        /// That phase's name; empty without a workflow.
        #[serde(default)]
        phase: String,
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_call_id: Option<String>,
        /// `workspace` (the workspace's git repository) or `private` (the task's own).
        repository: String,
    },
    /// The user interrupted; the task waits for them.
    Interrupted,
    /// A finished task was opened again (retry, reset).
    Reopened {
        reason: String,
    },
    Finished {
        outcome: String,
        summary: String,
    },
    /// Recovery's note after a crash: a damaged record of this task, where it was and what came
    /// of it. Written by the recovery of the WAL, never by the task; one that is `lost` stands
    /// in the lost record's place (its seq).
    Damaged(crate::store::DamageNote),
}

/// The result a call of the turn a rewind cut through gets when it had none: it never ran in
/// the history the task goes on from.
const NOT_RUN_REWOUND: &str = "not run: rawko rewound the task to the start of a phase first";

/// The `atSeq` of a `rewound` record's event, read without parsing the rest.
fn rewound_at(event: &Value) -> Option<u64> {
    if event.get("type").and_then(Value::as_str) != Some("rewound") {
        return None;
    }
    event.get("atSeq").and_then(Value::as_u64)
}

/// Whether a record a rewind takes back still counts: a `pinned` record (the task runs under
/// the definitions it pinned last, whatever it did since) and the note of a record lost in a
/// crash (a lost record may have been a `pinned` one, so the task still cannot go on safely).
fn outlives_rewind(event: &Value) -> bool {
    match event.get("type").and_then(Value::as_str) {
        Some("pinned") => true,
        Some("damaged") => event.get("lost").and_then(Value::as_bool) == Some(true),
        _ => false,
    }
}

/// The records a task's state is folded from, in order: every record, except that a `rewound`
/// record takes back the records after its `atSeq` that came before it (see
/// [`outlives_rewind`] for the two kinds that still count). The `rewound` record itself is
/// kept, after what it kept. A later rewind may go back to a point before an earlier one, or to
/// one after it (then what the earlier one took back stays taken back).
pub fn effective(records: &[LogRecord]) -> Vec<&LogRecord> {
    let mut kept: Vec<&LogRecord> = Vec::with_capacity(records.len());
    for record in records {
        if let Some(at_seq) = rewound_at(&record.event) {
            kept.retain(|r| r.seq <= at_seq || outlives_rewind(&r.event));
        }
        kept.push(record);
    }
    kept
}

/// A task rebuilt from its log.
#[derive(Debug, Clone)]
pub struct Replay {
    pub task_id: String,
    pub description: String,
    pub workflow_key: Option<String>,
    pub workspace: PathBuf,
    pub provider: ProviderSpec,
    pub agent: Option<String>,
    pub arbiter: Option<ProviderSpec>,
    pub started_at: i64,
    pub machine: Machine,
    pub workflow: Option<WorkflowState>,
    pub messages: Vec<Message>,
    /// The last turn's tool calls that have no recorded result, in order.
    pub pending_calls: Vec<ToolCall>,
    /// The text of the agent's last turn when that turn called no tools and nothing was logged
    /// after it: the agent's run had ended there (rawko stopped before it said so), and the
    /// resumed task takes that end instead of asking the model for another turn.
    pub ended_turn: Option<String>,
    /// The results the last turn's calls already have.
    pub pending_results: Vec<ToolResult>,
    /// The agent of the last turn.
    pub last_agent: Option<String>,
    pub turns_played: usize,
    pub arbiter_turns: usize,
    pub reminders_in_row: u32,
    pub always_allowed: HashSet<String>,
    pub always_rejected: HashSet<String>,
    pub interrupted: bool,
    pub finished: Option<(String, String)>,
    pub records: usize,
    /// The last session the provider's agent had (`acp`).
    pub agent_session: Option<String>,
    /// The definitions the task runs under (`None`: stored before rawko pinned them).
    pub definitions: Option<PinRefs>,
    /// Who the task is when it is a subagent, and the pi profile it runs.
    pub subagent: Option<crate::engine::subagents::SubagentOf>,
    pub pi_profile: Option<crate::agents::profiles::PiProfile>,
    /// The pi profiles the task may delegate to (`None`: none were recorded).
    pub profiles: Option<Vec<crate::agents::profiles::PiProfile>>,
    /// The subagents each `delegate_to_subagents` call started, by call id.
    pub delegations: HashMap<String, Vec<String>>,
}

/// Rebuilds a task from its records (those [`effective`] keeps: a rewind takes the task back).
/// Fails with a message naming the record that does not fit.
pub fn replay(records: &[LogRecord], config: &MachineConfig) -> Result<Replay, String> {
    let kept = effective(records);
    let mut iter = kept.into_iter();
    let first = iter.next().ok_or("the log is empty")?;
    let start: LogEvent = serde_json::from_value(first.event.clone())
        .map_err(|e| format!("record 1 is not a task start: {e}"))?;
    let LogEvent::Started {
        task_id,
        description,
        workflow,
        workspace,
        provider,
        agent,
        arbiter,
        started_at,
        definitions,
        subagent,
        pi_profile,
    } = start
    else {
        return Err("record 1 is not a task start".to_owned());
    };
    let mut r = Replay {
        task_id,
        description,
        workflow_key: workflow,
        workspace,
        provider,
        agent,
        arbiter,
        started_at,
        machine: Machine::new(config.clone()),
        workflow: None,
        messages: Vec::new(),
        pending_calls: Vec::new(),
        ended_turn: None,
        pending_results: Vec::new(),
        last_agent: None,
        turns_played: 0,
        arbiter_turns: 0,
        reminders_in_row: 0,
        always_allowed: HashSet::new(),
        always_rejected: HashSet::new(),
        interrupted: false,
        finished: None,
        records: records.len(),
        agent_session: None,
        definitions,
        subagent,
        pi_profile,
        profiles: None,
        delegations: HashMap::new(),
    };
    // The calls of the last turn and the results recorded for them.
    let mut open_calls: Vec<ToolCall> = Vec::new();
    let mut results: HashMap<String, ToolResult> = HashMap::new();
    // The calls of the last turn the agent only reported.
    let mut reported: HashSet<String> = HashSet::new();
    let flush =
        |r: &mut Replay, open: &mut Vec<ToolCall>, results: &mut HashMap<String, ToolResult>| {
            if open.is_empty() {
                return;
            }
            let done: Vec<ToolResult> = open.iter().filter_map(|c| results.remove(&c.id)).collect();
            r.messages.push(Message::ToolResults(done));
            open.clear();
            results.clear();
        };
    for record in iter {
        let event: LogEvent = serde_json::from_value(record.event.clone())
            .map_err(|e| format!("record {} is not understood: {e}", record.seq))?;
        // Only a turn that is the log's last record ended the run unannounced.
        let mut ended = None;
        match event {
            LogEvent::Started { .. } => {
                return Err(format!("record {} starts the task again", record.seq))
            }
            LogEvent::Machine { event, .. } => {
                r.machine = r.machine.transition(&event, record.at).machine;
                if matches!(
                    event,
                    machine::Event::StartTask { .. } | machine::Event::Reset
                ) {
                    r.reminders_in_row = 0;
                }
            }
            LogEvent::Workflow { state } => {
                let moved = r.workflow.as_ref().is_none_or(|w| {
                    w.current_path != state.current_path
                        || w.global_step_count != state.global_step_count
                });
                if moved {
                    r.reminders_in_row = 0;
                }
                r.workflow = Some(state);
            }
            LogEvent::UserMessage { text, source } => {
                flush(&mut r, &mut open_calls, &mut results);
                match source.as_str() {
                    "reminder" => r.reminders_in_row += 1,
                    "user" => r.reminders_in_row = 0,
                    _ => {}
                }
                r.interrupted = false;
                r.messages.push(Message::User(text));
            }
            LogEvent::Turn {
                agent,
                text,
                tool_calls,
            } => {
                flush(&mut r, &mut open_calls, &mut results);
                r.turns_played += 1;
                r.last_agent = Some(agent);
                reported = tool_calls
                    .iter()
                    .filter(|c| c.reported)
                    .map(|c| c.id.clone())
                    .collect();
                let calls: Vec<ToolCall> = tool_calls
                    .into_iter()
                    .map(|c| ToolCall {
                        id: c.id,
                        name: c.name,
                        input: c.input,
                    })
                    .collect();
                r.messages.push(Message::Assistant {
                    text: text.clone(),
                    tool_calls: calls.clone(),
                });
                if calls.is_empty() {
                    ended = Some(text);
                }
                open_calls = calls;
            }
            LogEvent::TurnFailed { .. } => {
                flush(&mut r, &mut open_calls, &mut results);
                r.turns_played += 1;
            }
            LogEvent::ArbiterTurn { .. } => r.arbiter_turns += 1,
            LogEvent::ToolStarted { .. } => {}
            LogEvent::ToolFinished {
                id,
                content,
                is_error,
            } => {
                results.insert(
                    id.clone(),
                    ToolResult {
                        tool_call_id: id,
                        content,
                        is_error,
                    },
                );
            }
            LogEvent::Approval { tool, answer, .. } => {
                let key = tool.to_ascii_lowercase();
                match answer.as_str() {
                    "allow_always" => {
                        r.always_allowed.insert(key);
                    }
                    "reject_always" => {
                        r.always_rejected.insert(key);
                    }
                    _ => {}
                }
            }
            LogEvent::AgentSession { id } => r.agent_session = Some(id),
            LogEvent::Pinned {
                workflows, agents, ..
            } => {
                let later = PinRefs { workflows, agents };
                r.definitions = Some(r.definitions.unwrap_or_default().merged(&later));
            }
            LogEvent::DefinitionsChanged { .. } => {}
            LogEvent::Profiles { profiles } => r.profiles = Some(profiles),
            LogEvent::Delegated { call_id, children } => {
                r.delegations.insert(call_id, children);
                continue;
            }
            LogEvent::Rewound { .. } => {
                // The turn the rewind cut through: its calls without a result never ran in the
                // history the task goes on from, and every call needs a result.
                for call in &open_calls {
                    results.entry(call.id.clone()).or_insert_with(|| ToolResult {
                        tool_call_id: call.id.clone(),
                        content: NOT_RUN_REWOUND.to_owned(),
                        is_error: true,
                    });
                }
                flush(&mut r, &mut open_calls, &mut results);
                reported.clear();
                r.interrupted = false;
                r.reminders_in_row = 0;
            }
            LogEvent::Interrupted => r.interrupted = true,
            LogEvent::Reopened { .. } => r.finished = None,
            LogEvent::Finished { outcome, summary } => r.finished = Some((outcome, summary)),
            // A lost record may have been any step (a phase change, a tool's result, the end):
            // the task cannot go on as if it had not happened.
            LogEvent::Damaged(note) if note.lost => {
                return Err(format!(
                    "record {} of its log was lost in a crash, so it cannot be resumed safely ({}); `rawko tasks show {}` shows its log",
                    record.seq, note.note, r.task_id
                ))
            }
            // A note, not a step: what the records before it said still holds (a turn that
            // ended the run still ended it).
            LogEvent::Damaged(_) | LogEvent::Checkpoint { .. } => continue,
        }
        r.ended_turn = ended;
    }
    // The last turn: calls with results are kept, the others are still to run.
    for call in &open_calls {
        match results.remove(&call.id) {
            Some(result) => r.pending_results.push(result),
            None if reported.contains(&call.id) => r.pending_results.push(ToolResult {
                tool_call_id: call.id.clone(),
                content: REPORTED_NOT_RUN.to_owned(),
                is_error: false,
            }),
            None => r.pending_calls.push(call.clone()),
        }
    }
    if r.pending_calls.is_empty() && !open_calls.is_empty() {
        // Every call has its result: the turn is complete.
        let done = std::mem::take(&mut r.pending_results);
        r.messages.push(Message::ToolResults(done));
    }
    Ok(r)
}

/// A one-line description of a machine event for a task's history: the agent chosen, the
/// decision and why, the error.
pub fn event_detail(event: &machine::Event) -> Option<String> {
    use machine::{ArbiterDecision as D, Event as E};
    let line = |s: &str| clip_line(s, 160).into_owned();
    match event {
        E::StartTask { task } => Some(line(task)),
        E::AgentSelected { agent, decision } => Some(match decision {
            Some(D::SelectMode { reason, .. }) if !reason.is_empty() => {
                format!("{agent} ({})", line(reason))
            }
            _ => agent.clone(),
        }),
        E::ForceAgent { agent } => Some(agent.clone()),
        E::AgentSelectionFailed { error } | E::AgentError { error } | E::ArbiterError { error } => {
            Some(format!("{}: {}", error.code, line(&error.message)))
        }
        E::AgentComplete { success, output } => Some(format!(
            "{}{}",
            if *success { "" } else { "failed: " },
            line(output)
        )),
        E::ArbiterDecision { decision } => Some(match decision {
            D::SelectMode { mode, reason } => format!("SELECT_MODE {mode}: {}", line(reason)),
            D::Continue { reason } => format!("CONTINUE: {}", line(reason)),
            D::Complete { summary } => format!("COMPLETE: {}", line(summary)),
            D::Retry { reason } => format!("RETRY: {}", line(reason)),
        }),
        _ => None,
    }
}

/// The definitions a stored task's log names (its start and later `pinned` records), read
/// without replaying it; `None` when it names none (stored before rawko pinned) or cannot be
/// read. Blocks.
pub fn refs_in_log(task_dir: &Path) -> Option<PinRefs> {
    use std::io::BufRead;
    let file = std::fs::File::open(task_dir.join("events.jsonl")).ok()?;
    let mut refs: Option<PinRefs> = None;
    for line in std::io::BufReader::new(file).lines() {
        let Ok(line) = line else { break };
        // Only the records that can name definitions are parsed.
        if !line.contains("\"definitions\"") && !line.contains("\"pinned\"") {
            continue;
        }
        let Ok(record) = serde_json::from_str::<crate::store::LogRecord>(&line) else {
            continue;
        };
        let Ok(event) = serde_json::from_value::<LogEvent>(record.event) else {
            continue;
        };
        match event {
            LogEvent::Started { definitions, .. } => refs = definitions,
            LogEvent::Pinned {
                workflows, agents, ..
            } => {
                let later = PinRefs { workflows, agents };
                refs = Some(refs.unwrap_or_default().merged(&later));
            }
            _ => {}
        }
    }
    refs
}

/// A checkpoint as a task's history shows it: the commit's first 12 digits, the phase, why.
pub fn checkpoint_detail(commit: &str, phase: &str, reason: &str) -> String {
    let short = commit.get(..12).unwrap_or(commit);
    let why = match reason {
        "phase_entered" => "phase entered",
        "before_rewind" => "the workspace before a rewind",
        _ => "after a tool call",
    };
    if phase.is_empty() {
        format!("{short} ({why})")
    } else {
        format!("{short} {phase} ({why})")
    }
}

/// A `checkpoint` record of a task's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedCheckpoint {
    pub commit: String,
    pub phase_index: Option<u32>,
    pub phase: String,
    /// `phase_entered` or `tool_call`.
    pub reason: String,
}

impl LoggedCheckpoint {
    pub fn entered_phase(&self) -> bool {
        self.reason == "phase_entered"
    }
}

/// The checkpoints of a stored task's history, oldest first, read without replaying it (a line
/// that does not read is passed over; those a rewind took back are left out). Blocks.
pub fn checkpoints_in_log(task_dir: &Path) -> Vec<LoggedCheckpoint> {
    use std::io::BufRead;
    let Ok(file) = std::fs::File::open(task_dir.join("events.jsonl")) else {
        return Vec::new();
    };
    // Each with its record's seq: a rewind takes back those after its `atSeq` ([`effective`]).
    let mut found: Vec<(u64, LoggedCheckpoint)> = Vec::new();
    for line in std::io::BufReader::new(file).lines() {
        let Ok(line) = line else { break };
        // Only the records that can be checkpoints or rewinds are parsed.
        if !line.contains("\"checkpoint\"") && !line.contains("\"rewound\"") {
            continue;
        }
        let Ok(record) = serde_json::from_str::<crate::store::LogRecord>(&line) else {
            continue;
        };
        if let Some(at_seq) = rewound_at(&record.event) {
            found.retain(|(seq, _)| *seq <= at_seq);
            continue;
        }
        if let Ok(LogEvent::Checkpoint {
            commit,
            phase_index,
            phase,
            reason,
            ..
        }) = serde_json::from_value::<LogEvent>(record.event)
        {
            found.push((
                record.seq,
                LoggedCheckpoint {
                    commit,
                    phase_index,
                    phase,
                    reason,
                },
            ));
        }
    }
    found.into_iter().map(|(_, c)| c).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::store::DamageNote;

    fn records(events: Vec<Value>) -> Vec<LogRecord> {
        events
            .into_iter()
            .enumerate()
            .map(|(i, event)| LogRecord {
                v: crate::store::FORMAT_VERSION,
                seq: i as u64 + 1,
                at: 0,
                event,
            })
            .collect()
    }

    fn started() -> Value {
        json!({"type": "started", "taskId": "t", "description": "d", "workflow": null,
            "workspace": "/w", "provider": {"name": "scripted"}, "startedAt": 0})
    }

    fn note(lost: bool) -> Value {
        let v = serde_json::to_value(LogEvent::Damaged(DamageNote {
            file: Some("/s/journal/1-1.wal.damaged".into()),
            offset: Some(42),
            lost,
            note: "record 2 was lost in a crash".to_owned(),
        }))
        .unwrap();
        assert_eq!(v["type"], "damaged");
        v
    }

    #[test]
    fn a_lost_record_stops_resume_and_a_note_of_a_mended_one_changes_nothing() {
        let config = MachineConfig::default();
        let err = replay(&records(vec![started(), note(true)]), &config).unwrap_err();
        assert!(err.contains("record 2 of its log was lost"), "{err}");
        // A note after the turn that ended the run: it still ended it.
        let turn = json!({"type": "turn", "agent": "a", "text": "bye", "toolCalls": []});
        let r = replay(&records(vec![started(), turn, note(false)]), &config).unwrap();
        assert_eq!(r.ended_turn.as_deref(), Some("bye"));
        assert_eq!(r.turns_played, 1);
    }

    #[test]
    fn a_checkpoint_record_changes_nothing_a_resumed_task_continues_from() {
        let config = MachineConfig::default();
        let turn = json!({"type": "turn", "agent": "a", "text": "bye", "toolCalls": []});
        let checkpoint = serde_json::to_value(LogEvent::Checkpoint {
            commit: "a".repeat(40),
            phase_index: Some(1),
            phase: "Implement".into(),
            reason: "tool_call".into(),
            tool_call_id: Some("c1".into()),
            repository: "workspace".into(),
        })
        .unwrap();
        assert_eq!(checkpoint["type"], "checkpoint");
        assert_eq!(checkpoint["phaseIndex"], 1);
        assert_eq!(checkpoint["toolCallId"], "c1");
        let without = replay(&records(vec![started(), turn.clone()]), &config).unwrap();
        let with = replay(&records(vec![started(), turn, checkpoint]), &config).unwrap();
        assert_eq!(with.ended_turn, without.ended_turn);
        assert_eq!(with.messages, without.messages);
        assert_eq!(with.turns_played, without.turns_played);
        assert_eq!(with.ended_turn.as_deref(), Some("bye"));
    }

    fn record(seq: u64, event: LogEvent) -> LogRecord {
        LogRecord {
            v: 1,
            seq,
            at: 0,
            event: serde_json::to_value(event).unwrap(),
        }
    }

    /// A task's log as the records of `events`, numbered from 1.
    fn log_of(events: Vec<LogEvent>) -> Vec<LogRecord> {
        events
            .into_iter()
            .enumerate()
            .map(|(i, e)| record(i as u64 + 1, e))
            .collect()
    }

    fn start() -> LogEvent {
        LogEvent::Started {
            pi_profile: Default::default(),
            subagent: Default::default(),
            task_id: "t".into(),
            description: "d".into(),
            workflow: Some("feature".into()),
            workspace: "/w".into(),
            provider: ProviderSpec::default(),
            agent: None,
            arbiter: None,
            started_at: 0,
            definitions: None,
        }
    }

    fn moved(phase: usize, steps: u64) -> LogEvent {
        LogEvent::Workflow {
            state: WorkflowState {
                active: true,
                workflow_key: "feature".into(),
                current_path: vec![crate::workflow::PathSegment {
                    workflow_key: "feature".into(),
                    phase_index: phase,
                }],
                global_step_count: steps,
                task_id: "t".into(),
                task_description: "d".into(),
                started_at: 0,
                completion_notified: false,
                cancelled: false,
                cancel_pending: false,
            },
        }
    }

    fn machine(event: machine::Event) -> LogEvent {
        LogEvent::Machine {
            event,
            from: String::new(),
            to: String::new(),
            guard: None,
        }
    }

    fn user(text: &str, source: &str) -> LogEvent {
        LogEvent::UserMessage {
            text: text.into(),
            source: source.into(),
        }
    }

    fn turn(text: &str, calls: &[(&str, &str)]) -> LogEvent {
        LogEvent::Turn {
            agent: "default".into(),
            text: text.into(),
            tool_calls: calls
                .iter()
                .map(|(id, name)| LoggedCall {
                    id: (*id).into(),
                    name: (*name).into(),
                    input: json!({}),
                    reported: false,
                })
                .collect(),
        }
    }

    fn done(id: &str) -> LogEvent {
        LogEvent::ToolFinished {
            id: id.into(),
            content: "ok".into(),
            is_error: false,
        }
    }

    fn rewound(at_seq: u64) -> LogEvent {
        LogEvent::Rewound {
            to_phase_index: 1,
            phase: "Implement".into(),
            commit: "c".repeat(40),
            at_seq,
            restored: vec!["a.txt".into()],
            removed: vec![],
        }
    }

    /// The state two replays continue from, field by field.
    fn assert_same(a: &Replay, b: &Replay) {
        assert_eq!(a.machine, b.machine);
        assert_eq!(a.workflow, b.workflow);
        assert_eq!(a.messages, b.messages);
        assert_eq!(a.pending_calls, b.pending_calls);
        assert_eq!(a.pending_results, b.pending_results);
        assert_eq!(a.ended_turn, b.ended_turn);
        assert_eq!(a.last_agent, b.last_agent);
        assert_eq!(a.turns_played, b.turns_played);
        assert_eq!(a.arbiter_turns, b.arbiter_turns);
        assert_eq!(a.reminders_in_row, b.reminders_in_row);
        assert_eq!(a.always_allowed, b.always_allowed);
        assert_eq!(a.interrupted, b.interrupted);
        assert_eq!(a.finished, b.finished);
        assert_eq!(a.definitions, b.definitions);
    }

    /// A task that entered Implement (record 8 is where a rewind takes it back to), wrote a
    /// file there, moved to Review, was reminded, allowed a call for good and completed.
    fn finished_task() -> Vec<LogEvent> {
        vec![
            start(),
            machine(machine::Event::StartTask { task: "d".into() }),
            machine(machine::Event::AgentSelected {
                agent: "default".into(),
                decision: None,
            }),
            moved(0, 0),
            user("do it", "initial"),
            turn("", &[("s1", "workflow_step")]),
            done("s1"),
            // 8: the state a rewind to Implement goes back to ends here.
            moved(1, 1),
            turn("writing", &[("w1", "Write"), ("s2", "workflow_step")]),
            LogEvent::Approval {
                id: "w1".into(),
                tool: "Write".into(),
                answer: "allow_always".into(),
            },
            done("w1"),
            moved(2, 2),
            done("s2"),
            user("keep going", "reminder"),
            turn("all done", &[]),
            machine(machine::Event::AgentComplete {
                success: true,
                output: "all done".into(),
            }),
            LogEvent::Finished {
                outcome: "complete".into(),
                summary: "all done".into(),
            },
        ]
    }

    #[test]
    fn a_rewound_task_replays_as_its_log_cut_at_the_checkpoint_then_goes_on() {
        let config = MachineConfig::default();
        let note = user("rawko rewound this task", "user");
        let mut events = finished_task();
        let full = replay(&log_of(events.clone()), &config).unwrap();
        assert!(full.finished.is_some());
        assert!(!full.always_allowed.is_empty());
        events.push(rewound(8));
        events.push(note.clone());
        let rewound = replay(&log_of(events.clone()), &config).unwrap();
        let mut cut = events[..8].to_vec();
        cut.push(note.clone());
        let expected = replay(&log_of(cut), &config).unwrap();
        assert_same(&rewound, &expected);
        assert_eq!(rewound.finished, None, "a finished task is resumable again");
        assert_eq!(
            rewound.workflow.as_ref().unwrap().current_path[0].phase_index,
            1
        );
        assert_eq!(
            rewound.messages.last(),
            Some(&Message::User("rawko rewound this task".into()))
        );
        // What the task goes on with afterwards counts as usual.
        events.push(turn("again", &[]));
        let on = replay(&log_of(events), &config).unwrap();
        assert_eq!(on.turns_played, expected.turns_played + 1);
        assert_eq!(on.ended_turn.as_deref(), Some("again"));
    }

    #[test]
    fn a_rewind_through_a_turn_gives_its_unrun_calls_a_result_and_runs_none_of_them() {
        let config = MachineConfig::default();
        let mut events = finished_task();
        // Record 12 is the move to Review, logged between the two calls' results: the Write
        // had its result, the step had none yet.
        events.push(rewound(12));
        events.push(user("rawko rewound this task", "user"));
        let r = replay(&log_of(events), &config).unwrap();
        assert!(r.pending_calls.is_empty(), "{:?}", r.pending_calls);
        let Some(Message::ToolResults(results)) = r.messages.iter().rev().nth(1) else {
            panic!("the turn's results come before the note: {:?}", r.messages);
        };
        let by_id: Vec<(&str, bool)> = results
            .iter()
            .map(|x| (x.tool_call_id.as_str(), x.is_error))
            .collect();
        assert_eq!(by_id, [("w1", false), ("s2", true)]);
        assert_eq!(results[1].content, NOT_RUN_REWOUND);
    }

    #[test]
    fn a_second_rewind_goes_back_from_the_history_the_first_left() {
        let config = MachineConfig::default();
        let mut events = finished_task();
        let pinned = LogEvent::Pinned {
            workflows: Some("w2".into()),
            agents: None,
            reason: "resumed".into(),
        };
        // Rewound to Implement (seq 8); the task goes on, pins, writes, then is rewound again
        // to a record of its new history (seq 21, after the first rewind).
        events.push(rewound(8));
        events.push(user("note 1", "user"));
        events.push(pinned.clone());
        events.push(turn("second try", &[]));
        events.push(user("more", "user"));
        events.push(turn("third try", &[]));
        events.push(rewound(21));
        events.push(user("note 2", "user"));
        let r = replay(&log_of(events.clone()), &config).unwrap();
        let mut cut = events[..8].to_vec();
        cut.extend([user("note 1", "user"), pinned, turn("second try", &[])]);
        cut.push(user("note 2", "user"));
        assert_same(&r, &replay(&log_of(cut), &config).unwrap());
        // And back before the first rewind: the pin taken since still holds.
        events.push(rewound(5));
        events.push(user("note 3", "user"));
        let r = replay(&log_of(events.clone()), &config).unwrap();
        assert_eq!(r.turns_played, 0);
        assert_eq!(r.definitions.unwrap().workflows.as_deref(), Some("w2"));
        assert_eq!(r.messages.len(), 2);
    }

    #[test]
    fn a_rewound_record_reads_and_writes_the_agreed_fields() {
        let v = serde_json::to_value(rewound(7)).unwrap();
        assert_eq!(
            v,
            json!({"type": "rewound", "toPhaseIndex": 1, "phase": "Implement",
                "commit": "c".repeat(40), "atSeq": 7, "restored": ["a.txt"], "removed": []})
        );
        assert_eq!(serde_json::from_value::<LogEvent>(v).unwrap(), rewound(7));
    }

    #[test]
    fn a_resumed_task_never_runs_a_call_the_agent_only_reported() {
        let call = |id: &str, reported: bool| LoggedCall {
            id: id.into(),
            name: "Write".into(),
            input: json!({"file_path": "a.txt", "content": "x"}),
            reported,
        };
        let records = [
            record(
                1,
                LogEvent::Started {
                    pi_profile: Default::default(),
                    subagent: Default::default(),
                    task_id: "t".into(),
                    description: "d".into(),
                    workflow: None,
                    workspace: "/w".into(),
                    provider: ProviderSpec::default(),
                    agent: None,
                    arbiter: None,
                    started_at: 0,
                    definitions: None,
                },
            ),
            record(
                2,
                LogEvent::Turn {
                    agent: "default".into(),
                    text: String::new(),
                    tool_calls: vec![call("reported", true), call("asked", false)],
                },
            ),
        ];
        let r = replay(&records, &MachineConfig::default()).unwrap();
        let pending: Vec<&str> = r.pending_calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(pending, ["asked"]);
        assert_eq!(r.pending_results.len(), 1);
        assert_eq!(r.pending_results[0].tool_call_id, "reported");
        assert_eq!(r.pending_results[0].content, REPORTED_NOT_RUN);
        // Written as before when false: old logs and new ones read the same.
        let line = serde_json::to_value(call("c", false)).unwrap();
        assert_eq!(line.get("reported"), None);
    }
}

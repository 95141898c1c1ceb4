//! Put rawko in front of an external agent (Claude Code, Gemini CLI, Codex CLI). Each external session is an ordinary
//! rawko task whose "model" is the external agent: its hook events arrive through the local
//! endpoint and become the turns of an [`ExternalProvider`]. So the task actor does for it what it
//! does for its own agents: the phase gate (with the shell classification), the user's hooks,
//! inline approval in the editor, the countdown and the not-done reminder, persistence and the
//! status in the editor. What differs: rawko never runs the external agent's tools; it answers
//! whether they may run ([`Bridge::decide`]). Each agent's hook format is its own module
//! (`claude.rs`, `gemini.rs`, `codex.rs`); the bridge is the same for all.

pub mod claude;
pub mod codex;
pub mod gemini;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rawko_protocol::ExternalAgent;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use crate::clip::clip_bytes;
use crate::provider::{
    Message, Provider, ProviderError, StopReason, TextSink, ToolCall, Turn, TurnFuture, TurnRequest,
};
use crate::workflow::{WorkflowSet, WorkflowState};

/// The provider model an external session's task records (`claude-code:SESSION`,
/// `gemini-cli:SESSION`, `codex:SESSION`): how a restarted rawko finds the session's stored task.
pub fn session_model(agent: ExternalAgent, session_id: &str) -> String {
    match agent {
        ExternalAgent::Claude => format!("claude-code:{session_id}"),
        ExternalAgent::Gemini => format!("gemini-cli:{session_id}"),
        ExternalAgent::Codex => format!("codex:{session_id}"),
    }
}

/// Where `rawko hook install` puts `agent`'s hooks, for messages.
pub fn settings_file(agent: ExternalAgent) -> &'static str {
    match agent {
        ExternalAgent::Claude => ".claude/settings.local.json",
        ExternalAgent::Gemini => ".gemini/settings.json",
        ExternalAgent::Codex => ".codex/hooks.json",
    }
}

/// The command that resumes `agent`'s session `session_id` (headless, as the session that ended
/// most likely ran): what the suspended task's reason tells the user.
pub fn resume_command(agent: ExternalAgent, session_id: &str) -> String {
    let command = match agent {
        ExternalAgent::Claude => "claude --resume",
        ExternalAgent::Gemini => "gemini --resume",
        // `codex resume ID` resumes it in Codex's own terminal interface.
        ExternalAgent::Codex => "codex exec resume",
    };
    if session_id.is_empty() {
        command.to_owned()
    } else {
        format!("{command} {session_id}")
    }
}

/// The longest rawko keeps one hook call of the external agent waiting. Claude Code gives up on a
/// hook after the `timeout` `rawko hook install` writes (600 s) and then lets the call run, so
/// rawko answers well before that.
pub const MAX_HOOK_WAIT: std::time::Duration = std::time::Duration::from_secs(570);

/// How long a hook call may wait for the task: an approval, the countdown and the user's own
/// hooks, within [`MAX_HOOK_WAIT`].
pub fn hook_wait(settings: &crate::config::Settings) -> std::time::Duration {
    let countdown = settings.countdown_tick * settings.countdown_seconds;
    (settings.approval_timeout + countdown + std::time::Duration::from_secs(60)).min(MAX_HOOK_WAIT)
}

/// What rawko answers about one of the external agent's tool calls.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolDecision {
    /// Nothing to say: the external agent's own permission rules apply.
    Pass,
    /// Allowed by the user (an approval) or by a hook, perhaps with a new input.
    Allow { updated_input: Option<Value> },
    /// Blocked, with the reason the agent is told.
    Deny(String),
    /// Nobody in rawko could be asked (no editor attached): the agent asks its own user, told why.
    Ask(String),
}

/// What rawko answers when the external agent wants to stop.
#[derive(Debug, Clone, PartialEq)]
pub enum StopAnswer {
    Allow,
    /// Go on: the reason is the not-done reminder (or a Stop hook's reason).
    Block(String),
}

/// A hook event of the external agent, for its task.
pub enum HookCall {
    PreToolUse {
        call: ToolCall,
        reply: oneshot::Sender<ToolDecision>,
    },
    /// The agent's own permission rules would ask its user about this call (Claude Code's
    /// PermissionRequest): rawko decides as for an ACP agent's permission request (a path outside
    /// the workspace is refused), and a call the phase allows is the user's to allow in the editor.
    PermissionRequest {
        call: ToolCall,
        reply: oneshot::Sender<ToolDecision>,
    },
    Stop {
        last_message: String,
        reply: oneshot::Sender<StopAnswer>,
    },
    /// A tool of the agent finished (PostToolUse), or failed (PostToolUseFailure, `failed`).
    PostToolUse {
        id: String,
        tool: String,
        response: Value,
        failed: bool,
    },
}

/// What the external agent did that its task shows but does not decide on (the engine turns it
/// into the task's own output).
#[derive(Debug, Clone, PartialEq)]
pub enum BridgeEvent {
    /// A tool of the agent finished, as PostToolUse reported it.
    ToolResult {
        tool_call_id: String,
        tool: String,
        text: String,
        is_error: bool,
    },
    /// Something the agent reported that the user should see as a line of the task's output
    /// (a notification, a failed turn, a compaction, a refused permission).
    Note { error: bool, text: String },
    /// A subagent of the agent started or stopped: shown under the task's session.
    Subagent {
        agent_type: String,
        agent_id: String,
        stopped: bool,
    },
}

/// Where rawko keeps the files of its local endpoint: `$XDG_RUNTIME_DIR`, else a directory of
/// this user's in the temporary directory. Only the path: [`private_runtime_dir`] checks it.
pub fn runtime_dir(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> std::path::PathBuf {
    if let Some(d) = env("XDG_RUNTIME_DIR").filter(|v| !v.is_empty()) {
        return std::path::PathBuf::from(d);
    }
    let uid = nix::unistd::getuid();
    std::env::temp_dir().join(format!("rawko-runtime-{uid}"))
}

/// [`runtime_dir`], once the directories rawko keeps its files in there are known to be this
/// user's alone: the fallback in the temporary directory (when `XDG_RUNTIME_DIR` is not set)
/// and `rawko/` in either. Anybody may make a directory in `/tmp`: one another user made first
/// would see the endpoint's token and could answer `rawko hook` in rawko's place. So each must be
/// a real directory (not a link), owned by this user, with no permission for group or others,
/// as ssh-agent and tmux require of theirs. With `make` the missing ones are made (0700);
/// without, what is missing is left missing (there is nothing in it to trust).
pub fn private_runtime_dir(
    env: impl Fn(&str) -> Option<std::ffi::OsString>,
    make: bool,
) -> Result<std::path::PathBuf, String> {
    let fallback = env("XDG_RUNTIME_DIR").is_none_or(|v| v.is_empty());
    let base = runtime_dir(env);
    if fallback {
        if !private_dir(&base, make)? {
            return Ok(base);
        }
    } else if make {
        // The user's own runtime directory (the login manager's, or one a test names).
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&base)
            .map_err(|e| format!("cannot make the runtime directory {}: {e}", base.display()))?;
    }
    private_dir(&base.join("rawko"), make)?;
    Ok(base)
}

/// Whether `dir` is there (made 0700 when missing and `make`); `Err` when it is there but is not
/// a directory of this user's alone.
pub fn private_dir(dir: &std::path::Path, make: bool) -> Result<bool, String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    if make {
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot make {}: {e}", dir.display())),
        }
    }
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(format!("cannot check {}: {e}", dir.display())),
    };
    let me = nix::unistd::geteuid().as_raw();
    let why = if meta.file_type().is_symlink() {
        "is a symbolic link, not a directory".to_owned()
    } else if !meta.is_dir() {
        "is not a directory".to_owned()
    } else if meta.uid() != me {
        format!("belongs to user {}, not to you ({me})", meta.uid())
    } else if meta.mode() & 0o077 != 0 {
        format!(
            "may be used by other users (mode {:o}, not 700)",
            meta.mode() & 0o7777
        )
    } else {
        return Ok(true);
    };
    Err(format!(
        "{} {why}: rawko will not keep or read its endpoint there; remove it (rawko makes it again) or set XDG_RUNTIME_DIR",
        dir.display()
    ))
}

/// What the endpoint, the provider and the task actor share for one external session.
pub struct Bridge {
    calls: mpsc::UnboundedSender<HookCall>,
    decisions: Mutex<HashMap<String, oneshot::Sender<ToolDecision>>>,
    stop: Mutex<Option<oneshot::Sender<StopAnswer>>>,
    /// The phase context now, for SessionStart and UserPromptSubmit.
    context: Mutex<Option<String>>,
    /// Whether the task has said its context once (its first state): a session's first hook
    /// waits for it.
    announced: watch::Sender<bool>,
    /// Extra notifications of the task (the results PostToolUse reports).
    events: mpsc::UnboundedSender<BridgeEvent>,
    /// The workflow's position now and its definitions, for a face that asks the phase about
    /// tools before any call is made (Gemini CLI's BeforeToolSelection).
    phase: Mutex<Option<(Option<WorkflowState>, Arc<WorkflowSet>)>>,
    /// What the last Stop that was blocked was told (the reminder): an agent that hands it back
    /// as its next prompt (Gemini CLI) has not heard from its user.
    last_block: Mutex<Option<String>>,
    /// The ids rawko gave tool calls of an agent that sends none, by the call's key, oldest
    /// first: its report of the call's end finds the id again.
    call_ids: Mutex<VecDeque<(String, String)>>,
    /// The agent may have compacted its history: the phase context is said again at the next
    /// chance, unless the agent shows it still has it.
    context_owed: AtomicBool,
    /// Whether the agent's session has ended (SessionEnd) and not come back since.
    suspended: std::sync::atomic::AtomicBool,
}

impl Bridge {
    /// A bridge, the provider that reads it, and the receiver of its extra notifications.
    pub fn new() -> (
        Arc<Self>,
        ExternalProvider,
        mpsc::UnboundedReceiver<BridgeEvent>,
    ) {
        let (calls, rx) = mpsc::unbounded_channel();
        let (events, events_rx) = mpsc::unbounded_channel();
        let bridge = Arc::new(Self {
            calls,
            decisions: Mutex::new(HashMap::new()),
            stop: Mutex::new(None),
            context: Mutex::new(None),
            announced: watch::Sender::new(false),
            events,
            phase: Mutex::new(None),
            last_block: Mutex::new(None),
            call_ids: Mutex::new(VecDeque::new()),
            context_owed: AtomicBool::new(false),
            suspended: std::sync::atomic::AtomicBool::new(false),
        });
        let provider = ExternalProvider {
            calls: rx,
            bridge: bridge.clone(),
        };
        (bridge, provider, events_rx)
    }

    /// Hands a hook event to the task. False when the task has ended.
    pub fn send(&self, call: HookCall) -> bool {
        self.calls.send(call).is_ok()
    }

    /// The task's answer about a tool call of the external agent.
    pub fn decide(&self, tool_call_id: &str, decision: ToolDecision) {
        if let Some(reply) = lock(&self.decisions).remove(tool_call_id) {
            let _ = reply.send(decision);
        }
    }

    /// Answers a pending Stop.
    pub fn answer_stop(&self, answer: StopAnswer) {
        if let Some(reply) = lock(&self.stop).take() {
            if let StopAnswer::Block(reason) = &answer {
                *lock(&self.last_block) = Some(reason.clone());
            }
            let _ = reply.send(answer);
        }
    }

    /// Whether `prompt` is what the last blocked Stop was told (an agent handing the reminder
    /// back as its prompt), not a message of its user.
    pub fn is_last_block(&self, prompt: &str) -> bool {
        lock(&self.last_block)
            .as_deref()
            .is_some_and(|r| r.trim() == prompt.trim())
    }

    /// The workflow's position now, as the task says it with each state.
    pub fn set_phase(&self, state: Option<WorkflowState>, set: Arc<WorkflowSet>) {
        *lock(&self.phase) = Some((state, set));
    }

    /// Runs `f` on the workflow's position now and its definitions; `None` before the task has
    /// said its first state.
    pub fn with_phase<R>(
        &self,
        f: impl FnOnce(Option<&WorkflowState>, &WorkflowSet) -> R,
    ) -> Option<R> {
        lock(&self.phase)
            .as_ref()
            .map(|(state, set)| f(state.as_ref(), set))
    }

    /// Keeps the id rawko gave a tool call of an agent that sends none, under the call's key.
    pub fn remember_call(&self, key: String, id: String) {
        let mut ids = lock(&self.call_ids);
        // A call whose end never comes (the agent was stopped) is not kept for ever.
        if ids.len() >= 256 {
            ids.pop_front();
        }
        ids.push_back((key, id));
    }

    /// The id of the oldest call under `key` (forgotten once taken).
    pub fn take_call(&self, key: &str) -> Option<String> {
        let mut ids = lock(&self.call_ids);
        let at = ids.iter().position(|(k, _)| k == key)?;
        ids.remove(at).map(|(_, id)| id)
    }

    /// The agent is about to compact its history: the context may be owed again.
    pub fn owe_context(&self) {
        self.context_owed.store(true, Ordering::SeqCst);
    }

    /// Whether the context is owed.
    pub fn context_is_owed(&self) -> bool {
        self.context_owed.load(Ordering::SeqCst)
    }

    /// Whether the context was owed (and is no longer).
    pub fn take_owed_context(&self) -> bool {
        self.context_owed.swap(false, Ordering::SeqCst)
    }

    /// The task has ended: every hook call still waiting is answered (a pending Stop may stop, a
    /// pending tool call is left to the agent's own rules), and later ones are answered at once.
    pub fn close(&self) {
        lock(&self.decisions).clear();
        lock(&self.stop).take();
    }

    pub fn set_context(&self, context: Option<String>) {
        *lock(&self.context) = context;
        self.announced.send_replace(true);
    }

    /// Resolves once the task has said its context (its first state), at once if it has.
    pub async fn announced(&self) {
        let mut seen = self.announced.subscribe();
        // The sender lives as long as `self`, so the wait ends only when it is set.
        let _ = seen.wait_for(|said| *said).await;
    }

    pub fn context(&self) -> Option<String> {
        lock(&self.context).clone()
    }

    pub fn notify(&self, event: BridgeEvent) {
        let _ = self.events.send(event);
    }

    /// The agent's session ended: the task waits for it to come back (`claude --resume`). True
    /// when it was not suspended already.
    pub fn suspend(&self) -> bool {
        !self
            .suspended
            .swap(true, std::sync::atomic::Ordering::SeqCst)
    }

    /// The agent's session is back (any event after its end). True when it was suspended.
    pub fn wake(&self) -> bool {
        self.suspended
            .swap(false, std::sync::atomic::Ordering::SeqCst)
    }

    pub fn is_suspended(&self) -> bool {
        self.suspended.load(std::sync::atomic::Ordering::SeqCst)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The provider of an external session: each turn is the next thing the external agent does.
pub struct ExternalProvider {
    calls: mpsc::UnboundedReceiver<HookCall>,
    bridge: Arc<Bridge>,
}

impl Provider for ExternalProvider {
    fn name(&self) -> &str {
        "external"
    }

    fn turn<'a>(&'a mut self, request: TurnRequest<'a>, on_text: TextSink<'a>) -> TurnFuture<'a> {
        Box::pin(async move {
            // The task asks for another turn while the agent waits on its Stop: the agent goes on,
            // told why by the last message the task added (the reminder, a Stop hook's reason).
            let why = request.messages.iter().rev().find_map(|m| match m {
                Message::User(text) => Some(text.clone()),
                _ => None,
            });
            self.bridge.answer_stop(StopAnswer::Block(
                why.unwrap_or_else(|| "The workflow is not done yet; go on.".to_owned()),
            ));
            self.bridge.set_context(request.context.map(str::to_owned));
            loop {
                let Some(call) = self.calls.recv().await else {
                    return Err(ProviderError::new(
                        crate::provider::ErrorKind::Unknown,
                        "the external agent's session is gone",
                    ));
                };
                match call {
                    HookCall::PreToolUse { call, reply } => {
                        lock(&self.bridge.decisions).insert(call.id.clone(), reply);
                        return Ok(Turn {
                            text: String::new(),
                            tool_calls: vec![call],
                            stop_reason: StopReason::ToolUse,
                            runner: Default::default(),
                        });
                    }
                    HookCall::PermissionRequest { call, reply } => {
                        lock(&self.bridge.decisions).insert(call.id.clone(), reply);
                        return Ok(Turn {
                            text: String::new(),
                            tool_calls: vec![call],
                            stop_reason: StopReason::ToolUse,
                            runner: crate::provider::Runner::AgentAsks,
                        });
                    }
                    HookCall::Stop {
                        last_message,
                        reply,
                    } => {
                        *lock(&self.bridge.stop) = Some(reply);
                        if !last_message.is_empty() {
                            on_text(&last_message);
                        }
                        return Ok(Turn {
                            text: last_message,
                            tool_calls: Vec::new(),
                            stop_reason: StopReason::EndTurn,
                            runner: Default::default(),
                        });
                    }
                    HookCall::PostToolUse {
                        id,
                        tool,
                        response,
                        failed,
                    } => {
                        let is_error = failed
                            || response
                                .get("is_error")
                                .or_else(|| response.get("isError"))
                                .and_then(Value::as_bool)
                                .unwrap_or(false);
                        let text = match &response {
                            Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        self.bridge.notify(BridgeEvent::ToolResult {
                            tool_call_id: id,
                            tool,
                            text: clip_bytes(&text, 4000).into_owned(),
                            is_error,
                        });
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Bridge;

    #[tokio::test]
    async fn a_sessions_first_hook_waits_until_the_task_has_said_its_context() {
        let (bridge, _provider, _events) = Bridge::new();
        let waiting = tokio::spawn({
            let bridge = bridge.clone();
            async move {
                bridge.announced().await;
                bridge.context()
            }
        });
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        assert!(!waiting.is_finished(), "nothing was said yet");
        bridge.set_context(Some("the phase".to_owned()));
        assert_eq!(waiting.await.unwrap().as_deref(), Some("the phase"));
        // Once said, a later session's hook does not wait.
        bridge.set_context(None);
        bridge.announced().await;
    }
}

//! The turn: a prompt sent (or the answers the last turn's calls were waiting for), then what the
//! agent sends, up to its next request (a call for the task to decide) or the prompt's end.

use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, RequestPermissionOutcome, RequestPermissionResponse,
    TerminalOutputResponse, WaitForTerminalExitResponse,
};
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::agent;
use super::answer::{answered, refuse, Pending};
use super::calls::{choose, command_of_title, join_command, mcp_call, tool_name};
use super::from_agent::FromAgent;
use super::AcpAgentProvider;
use crate::provider::{
    Confinement, Message, Provider, ProviderError, Runner, StopReason, TextSink, ToolCall, Turn,
    TurnFuture, TurnRequest,
};
use crate::sandbox::WorkspaceAccess;

/// How long a cancelled prompt may take to end before rawko stops waiting for it.
const CANCEL_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);
/// How long an agent that loses the workspace waits on rawko, answered nothing, before it is
/// ended: time to record its session (Claude Code writes its transcript a moment late), so it
/// can load it again.
const SETTLE: std::time::Duration = std::time::Duration::from_millis(300);

/// An input that says nothing yet (none, or `{}`).
fn is_empty(input: &Value) -> bool {
    input.is_null() || input.as_object().is_some_and(|o| o.is_empty())
}

/// What the agent did next.
#[allow(clippy::large_enum_variant)]
enum Next {
    Message(Option<FromAgent>),
    End(
        Result<
            Result<agent_client_protocol::v1::schema::PromptResponse, String>,
            oneshot::error::RecvError,
        >,
    ),
    Stalled,
    /// The prompt turn went on past `turnSeconds`.
    TurnLimit,
}

impl Provider for AcpAgentProvider {
    fn name(&self) -> &str {
        "acp"
    }

    fn resume_after(&mut self, _turns: usize) {
        self.resumed = true;
    }

    fn agent_session(&self) -> Option<String> {
        self.agent.as_ref().map(|a| a.session.0.to_string())
    }

    fn load_session(&mut self, id: String) {
        self.load = Some(id);
    }

    fn user_approved(&mut self, call_id: &str) {
        self.grants.user_approved(call_id);
    }

    fn confine(&mut self, confinement: &Confinement) {
        self.confinement = Some(confinement.clone());
    }

    fn turn<'a>(&'a mut self, request: TurnRequest<'a>, on_text: TextSink<'a>) -> TurnFuture<'a> {
        Box::pin(async move {
            let messages = request.messages;
            let from = if self.agent.is_none() && !self.restarted && self.resumed {
                // A resumed task's agent, at its first start, has the conversation (loaded) or is
                // primed with it.
                messages.len()
            } else {
                self.seen.min(messages.len())
            };
            // The phase took the workspace from an agent that may write it: that agent ends now,
            // before it gets another answer, and starts again read-only in its session. The
            // answers it was waiting for are told in its next prompt.
            let narrowed = self.agent.as_ref().is_some_and(|a| {
                a.access == Some(WorkspaceAccess::ReadWrite)
                    && self.wanted() == Some(WorkspaceAccess::ReadOnly)
            });
            // The phase gave the workspace to an agent that runs read-only in the middle of its
            // prompt: it starts again with it at once, in the same way, so that what it writes
            // next with its own hands is not refused by the kernel. Not when the workflow has
            // just ended: the task is ending, and its next prompt (if any) is time enough.
            let in_phase = self.confinement.as_ref().is_some_and(|c| c.in_phase);
            let widened_now = self.agent.as_ref().is_some_and(|a| {
                in_phase
                    && a.prompt.is_some()
                    && a.access == Some(WorkspaceAccess::ReadOnly)
                    && a.reopen != agent::Reopen::No
                    && self.wanted() == Some(WorkspaceAccess::ReadWrite)
            });
            let changed = match (narrowed, widened_now) {
                (true, _) => Some(WorkspaceAccess::ReadOnly),
                (_, true) => Some(WorkspaceAccess::ReadWrite),
                _ => None,
            };
            let mut told = Vec::new();
            // What the agent waits for, kept unanswered until it is gone (an answer dropped
            // would reach it as an error it could act on).
            let mut held = Vec::new();
            let mut prompts = Vec::new();
            for m in &messages[from..] {
                match m {
                    Message::ToolResults(results) => {
                        for r in results {
                            if let Some(p) = self.pending.remove(&r.tool_call_id) {
                                if let Some(access) = changed {
                                    told.push(answered(&p, r, access));
                                    held.push(p);
                                } else {
                                    self.answer(p, r);
                                }
                            }
                        }
                    }
                    Message::User(text) => prompts.push(text.clone()),
                    Message::Assistant { .. } => {}
                }
            }
            self.seen = messages.len();
            if changed.is_some() {
                let asked = self.settle().await;
                self.end_agent();
                drop(asked);
            }
            drop(held);
            // What the task did not answer (it moved on): refused.
            for (_, p) in std::mem::take(&mut self.pending) {
                self.refuse_pending(p, "the task moved on without an answer");
            }
            // The phase gave the workspace to an agent that runs read-only: it starts again with
            // it between two prompts (nothing is lost by waiting for the prompt's end).
            let widened = self.agent.as_ref().is_some_and(|a| {
                a.prompt.is_none()
                    && a.access == Some(WorkspaceAccess::ReadOnly)
                    && a.reopen != agent::Reopen::No
                    && self.wanted() == Some(WorkspaceAccess::ReadWrite)
            });
            if widened {
                self.end_agent();
            }
            let mut fresh = false;
            let mut loaded = false;
            if self.agent.is_none() {
                fresh = true;
                let load = self.reopen_session.take().or_else(|| self.load.clone());
                loaded = self.start_agent(load, on_text).await?;
            }
            // Going on where it stopped: a resumed task, or an agent started again.
            let going_on = fresh && (self.resumed || self.restarted);
            let running_prompt = self.agent.as_ref().is_some_and(|a| a.prompt.is_some());
            if !prompts.is_empty() || !running_prompt || !self.carried.is_empty() {
                if running_prompt {
                    self.cancel_prompt().await;
                }
                let mut blocks: Vec<ContentBlock> = Vec::new();
                if let Some(context) = request.context.filter(|c| !c.trim().is_empty()) {
                    blocks.push(ContentBlock::from(context.to_owned()));
                }
                if going_on && !loaded {
                    blocks.push(ContentBlock::from(primer(messages)));
                }
                if !told.is_empty() {
                    blocks.push(ContentBlock::from(told.join("\n")));
                }
                if !self.carried.is_empty() {
                    blocks.push(ContentBlock::from(
                        std::mem::take(&mut self.carried).join("\n"),
                    ));
                }
                if going_on && prompts.is_empty() {
                    prompts.push("Go on with the task from where it stopped.".to_owned());
                }
                if !self.refusals.is_empty() {
                    blocks.push(ContentBlock::from(
                        std::mem::take(&mut self.refusals).join("\n"),
                    ));
                }
                if prompts.is_empty() {
                    prompts.push("Go on.".to_owned());
                }
                blocks.extend(prompts.into_iter().map(ContentBlock::from));
                if let Some(agent) = self.agent.as_mut() {
                    agent.send_prompt(blocks);
                }
            }
            // The turn dropped before it ended (the task was interrupted): the agent stops too.
            let mut guard = self.agent.as_ref().map(|a| CancelOnDrop {
                cx: a.cx.clone(),
                session: a.session.clone(),
                armed: true,
            });
            let result = self.stream(on_text).await;
            if let Some(g) = guard.as_mut() {
                g.armed = false;
            }
            result
        })
    }
}

/// Sends `session/cancel` when dropped armed.
struct CancelOnDrop {
    cx: agent_client_protocol::v1::ConnectionTo<agent_client_protocol::Agent>,
    session: agent_client_protocol::v1::schema::SessionId,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if self.armed {
            let _ = self
                .cx
                .send_notification(CancelNotification::new(self.session.clone()));
        }
    }
}

/// The conversation a resumed task had, for the new session of its agent.
fn primer(messages: &[Message]) -> String {
    let mut out = String::from(
        "This task was interrupted and resumed in a new session. The conversation so far:\n",
    );
    for m in messages {
        match m {
            Message::User(t) => out.push_str(&format!("\n[user]\n{t}\n")),
            Message::Assistant { text, tool_calls } => {
                if !text.is_empty() {
                    out.push_str(&format!("\n[you]\n{text}\n"));
                }
                for c in tool_calls {
                    out.push_str(&format!("\n[your tool call] {} {}\n", c.name, c.input));
                }
            }
            Message::ToolResults(results) => {
                for r in results {
                    out.push_str(&format!(
                        "\n[tool result{}] {}\n",
                        if r.is_error { ", an error" } else { "" },
                        crate::clip::clip_bytes(&r.content, 2000)
                    ));
                }
            }
        }
    }
    crate::clip::clip_bytes(&out, 200_000).into_owned()
}

impl AcpAgentProvider {
    pub(super) fn next_id(&mut self, what: &str) -> String {
        self.next += 1;
        format!("acp-{what}-{}", self.next)
    }

    pub(super) fn call_turn(text: String, call: ToolCall, runner: Runner) -> Turn {
        Turn {
            text,
            tool_calls: vec![call],
            stop_reason: StopReason::ToolUse,
            runner,
        }
    }

    /// Sends what the agent streams to `on_text` until it asks something or the prompt ends;
    /// the time it takes counts toward the prompt's `turnSeconds`.
    async fn stream(&mut self, on_text: TextSink<'_>) -> Result<Turn, ProviderError> {
        let entered = tokio::time::Instant::now();
        let result = self.stream_until_asked(on_text, entered).await;
        if let Some(agent) = self.agent.as_mut() {
            agent.turn_used += entered.elapsed();
        }
        result
    }

    async fn stream_until_asked(
        &mut self,
        on_text: TextSink<'_>,
        entered: tokio::time::Instant,
    ) -> Result<Turn, ProviderError> {
        let mut text = String::new();
        loop {
            let stall = self.command.stall;
            let turn_limit = self.command.turn_limit;
            let Some(agent) = self.agent.as_mut() else {
                return Err(self.fail("is not running"));
            };
            let turn_left = turn_limit.saturating_sub(agent.turn_used + entered.elapsed());
            let next = tokio::select! {
                biased;
                message = agent.inbox.recv() => Next::Message(message),
                end = async {
                    match agent.prompt.as_mut() {
                        Some(rx) => rx.await,
                        None => std::future::pending().await,
                    }
                } => Next::End(end),
                () = tokio::time::sleep(stall) => Next::Stalled,
                () = tokio::time::sleep(turn_left) => Next::TurnLimit,
            };
            match next {
                Next::Message(None) => return Err(self.fail("stopped answering")),
                Next::Message(Some(FromAgent::Closed(why))) => return Err(self.gone_or(why).await),
                Next::Message(Some(FromAgent::TextCut)) => {
                    let note = format!(
                        "\n\n[rawko: the agent's text passed {} KiB in this turn; the rest of this turn's text is not shown]\n",
                        agent::TEXT_CAP / 1024
                    );
                    on_text(&note);
                    text.push_str(&note);
                }
                Next::Message(Some(message)) => {
                    if let Some(turn) = self.handle(message, &mut text, on_text) {
                        return Ok(turn);
                    }
                }
                Next::End(end) => {
                    if let Some(agent) = self.agent.as_mut() {
                        agent.prompt = None;
                        // The end of the task's first prompt: the agent has had the time to
                        // start its MCP servers.
                        let unconnected = !agent.mcp_connected();
                        if !self.mcp_noted {
                            self.mcp_noted = true;
                            if unconnected {
                                on_text(&super::mcp::never_connected(&super::confine::kinds(
                                    &self.command,
                                )));
                            }
                        }
                    }
                    return match end {
                        Ok(Ok(response)) => {
                            use agent_client_protocol::v1::schema::StopReason as Acp;
                            let stop_reason = match response.stop_reason {
                                Acp::MaxTokens => StopReason::MaxTokens,
                                _ => StopReason::EndTurn,
                            };
                            Ok(Turn {
                                text,
                                tool_calls: Vec::new(),
                                stop_reason,
                                runner: Runner::Rawko,
                            })
                        }
                        Ok(Err(e)) => Err(self
                            .gone_or(format!(
                                "failed the prompt: {}",
                                e.lines()
                                    .next()
                                    .unwrap_or_default()
                                    .trim_end_matches([' ', '{', ':'])
                            ))
                            .await),
                        Err(_) => Err(self
                            .gone_or("dropped the prompt without an answer".to_owned())
                            .await),
                    };
                }
                Next::Stalled => {
                    // The agent is ended: a retry starts it again in its session.
                    let error = self.fail(format!(
                        "sent nothing for {} s (the provider's stallSeconds)",
                        stall.as_secs()
                    ));
                    self.end_agent();
                    return Err(error);
                }
                Next::TurnLimit => {
                    let error = self.fail(format!(
                        "kept its turn going for {} s (the provider's turnSeconds)",
                        turn_limit.as_secs()
                    ));
                    self.end_agent();
                    return Err(error);
                }
            }
        }
    }

    /// One message of the agent: `Some` turn when it needs the task's decision.
    fn handle(
        &mut self,
        message: FromAgent,
        text: &mut String,
        on_text: TextSink<'_>,
    ) -> Option<Turn> {
        match message {
            FromAgent::Update(update) => self.update(*update, text, on_text),
            FromAgent::Permission(request, responder) => {
                let id = request.tool_call.tool_call_id.0.to_string();
                let fields = &request.tool_call.fields;
                let said = self.input_said(
                    fields.raw_input.as_ref(),
                    fields.content.as_deref(),
                    fields.locations.as_deref(),
                );
                let known = self.known.entry(id.clone()).or_default();
                said.fill(&mut known.input);
                if is_empty(&known.input) {
                    if let Some(command) = command_of_title(fields.kind, fields.title.as_deref()) {
                        known.input = command;
                    }
                }
                // Codex's `rawInput` of an MCP call here replaces the arguments its `tool_call`
                // gave: named and unwrapped again, by its title or by the name it was known by.
                let implied = known
                    .name
                    .strip_prefix("mcp__")
                    .and_then(|rest| rest.split_once("__"))
                    .map(|(server, tool)| format!("mcp.{server}.{tool}"));
                let title = fields.title.as_deref().or(implied.as_deref());
                if let Some((name, input)) =
                    mcp_call(&known.input, request.tool_call.meta.as_ref(), title)
                {
                    known.name = name;
                    known.input = input;
                } else if known.name.is_empty() {
                    known.name = tool_name(
                        fields.name.as_deref(),
                        request.tool_call.meta.as_ref(),
                        fields.kind,
                        fields.title.as_deref(),
                        &known.input,
                    );
                }
                known.handled = true;
                let call = ToolCall {
                    id: id.clone(),
                    name: known.name.clone(),
                    input: known.input.clone(),
                };
                if call.name.starts_with("mcp__rawko__") {
                    // rawko's own tool: its call comes through the MCP endpoint and is decided there.
                    let _ = responder.respond(RequestPermissionResponse::new(choose(
                        &request.options,
                        true,
                    )));
                    return None;
                }
                self.pending.insert(
                    id,
                    Pending::Permission {
                        responder,
                        options: request.options,
                        call: call.clone(),
                        asked: std::time::Instant::now(),
                    },
                );
                Some(Self::call_turn(std::mem::take(text), call, Runner::Agent))
            }
            FromAgent::Read(request, responder) => {
                let id = self.next_id("read");
                let mut input = json!({"file_path": request.path.to_string_lossy()});
                if let Some(line) = request.line {
                    input["offset"] = json!(line.max(1));
                }
                if let Some(limit) = request.limit {
                    input["limit"] = json!(limit.max(1));
                }
                self.pending
                    .insert(id.clone(), Pending::Read(responder, request.path.clone()));
                let call = ToolCall {
                    id,
                    name: "Read".to_owned(),
                    input,
                };
                Some(Self::call_turn(std::mem::take(text), call, Runner::Rawko))
            }
            FromAgent::Write(request, responder) => {
                let id = self.next_id("write");
                let input = json!({"file_path": request.path.to_string_lossy(), "content": request.content});
                let runner = self.grants.write(&request.path, &self.command.cwd);
                self.pending.insert(id.clone(), Pending::Write(responder));
                let call = ToolCall {
                    id,
                    name: "Write".to_owned(),
                    input,
                };
                Some(Self::call_turn(std::mem::take(text), call, runner))
            }
            FromAgent::CreateTerminal(request, responder) => {
                let id = self.next_id("terminal");
                let command = join_command(&request.command, &request.args);
                let mut command_in = command.clone();
                if let Some(cwd) = request.cwd.as_deref().filter(|c| *c != self.command.cwd) {
                    command_in = format!(
                        "cd {} && {command}",
                        join_command(&cwd.to_string_lossy(), &[])
                    );
                }
                let runner =
                    self.grants
                        .terminal(&command, request.cwd.as_deref(), &self.command.cwd);
                self.pending
                    .insert(id.clone(), Pending::Terminal(responder));
                let call = ToolCall {
                    id,
                    name: "Bash".to_owned(),
                    input: json!({"command": command_in}),
                };
                Some(Self::call_turn(std::mem::take(text), call, runner))
            }
            FromAgent::Output(request, responder) => {
                match self.terminals.get(request.terminal_id.0.as_ref()) {
                    Some(t) => {
                        let _ = responder.respond(
                            TerminalOutputResponse::new(t.output.clone(), false)
                                .exit_status(t.status()),
                        );
                    }
                    None => refuse(responder, "no such terminal"),
                }
                None
            }
            FromAgent::Wait(request, responder) => {
                match self.terminals.get(request.terminal_id.0.as_ref()) {
                    Some(t) => {
                        let _ = responder.respond(WaitForTerminalExitResponse::new(t.status()));
                    }
                    None => refuse(responder, "no such terminal"),
                }
                None
            }
            FromAgent::Kill(request, responder) => {
                // The command has ended already: rawko ran it to its end (or its time limit).
                match self.terminals.contains_key(request.terminal_id.0.as_ref()) {
                    true => {
                        let _ = responder.respond(Default::default());
                    }
                    false => refuse(responder, "no such terminal"),
                }
                None
            }
            FromAgent::Release(request, responder) => {
                match self.terminals.remove(request.terminal_id.0.as_ref()) {
                    Some(_) => {
                        let _ = responder.respond(Default::default());
                    }
                    None => refuse(responder, "no such terminal"),
                }
                None
            }
            FromAgent::Step { action, reply } => {
                let id = self.next_id("step");
                self.pending.insert(id.clone(), Pending::Step(reply));
                let call = ToolCall {
                    id,
                    name: crate::workflow::step::TOOL_NAME.to_owned(),
                    input: json!({"action": action}),
                };
                Some(Self::call_turn(std::mem::take(text), call, Runner::Rawko))
            }
            FromAgent::Note(note) => {
                // rawko's word, shown, not the agent's text.
                on_text(&note);
                None
            }
            FromAgent::TextCut | FromAgent::Closed(_) => None,
        }
    }

    /// The error for an agent that went away: how its process ended when it has (given a moment
    /// to end, and its stderr a moment to arrive), else `why`.
    async fn gone_or(&mut self, why: String) -> ProviderError {
        let mut ended = None;
        for _ in 0..20 {
            ended = self.agent.as_mut().and_then(agent::Running::exited);
            if ended.is_some() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        self.fail(ended.unwrap_or(why))
    }

    /// `session/cancel` for the prompt in flight, and its end awaited (what the agent asks
    /// meanwhile is refused).
    async fn cancel_prompt(&mut self) {
        self.cancel_prompt_within(CANCEL_LIMIT).await;
    }

    /// Lets the agent wait on rawko for [`SETTLE`] before it is ended. What it asks meanwhile is
    /// returned unanswered, to be dropped once it is gone (it gets nothing to act on); its text
    /// is dropped.
    async fn settle(&mut self) -> Vec<FromAgent> {
        let deadline = tokio::time::Instant::now() + SETTLE;
        let mut asked = Vec::new();
        while let Some(agent) = self.agent.as_mut() {
            tokio::select! {
                message = agent.inbox.recv() => match message {
                    Some(FromAgent::Closed(_)) | None => break,
                    Some(other) => asked.push(other),
                },
                () = tokio::time::sleep_until(deadline) => break,
            }
        }
        asked
    }

    /// [`Self::cancel_prompt`], waiting at most `limit` for the agent to end its prompt.
    async fn cancel_prompt_within(&mut self, limit: std::time::Duration) {
        let Some(agent) = self.agent.as_mut() else {
            return;
        };
        let _ = agent
            .cx
            .send_notification(CancelNotification::new(agent.session.clone()));
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let Some(agent) = self.agent.as_mut() else {
                return;
            };
            let Some(rx) = agent.prompt.as_mut() else {
                return;
            };
            tokio::select! {
                _ = rx => break,
                message = agent.inbox.recv() => match message {
                    Some(FromAgent::Permission(_, r)) => {
                        let _ = r.respond(RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled));
                    }
                    Some(FromAgent::Read(_, r)) => refuse(r, "cancelled"),
                    Some(FromAgent::Write(_, r)) => refuse(r, "cancelled"),
                    Some(FromAgent::CreateTerminal(_, r)) => refuse(r, "cancelled"),
                    Some(FromAgent::Step { reply, .. }) => {
                        let _ = reply.send(("cancelled".to_owned(), true));
                    }
                    Some(_) => {}
                    None => break,
                },
                () = tokio::time::sleep_until(deadline) => break,
            }
        }
        if let Some(agent) = self.agent.as_mut() {
            agent.prompt = None;
        }
    }
}

//! The turn: a prompt sent (or the answers the last turn's calls were waiting for), then what the
//! agent sends, up to its next request (a call for the task to decide) or the prompt's end.

use std::path::Path;

use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, CreateTerminalResponse, PermissionOption,
    PermissionOptionKind, ReadTextFileResponse, RequestPermissionOutcome,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionUpdate, TerminalExitStatus,
    TerminalId, TerminalOutputResponse, ToolCallContent, ToolCallStatus, ToolKind,
    WaitForTerminalExitResponse, WriteTextFileResponse,
};
use agent_client_protocol::{Error, ErrorCode};
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;

use super::agent::{self, FromAgent, Reply};
use super::AcpAgentProvider;
use crate::provider::{
    Message, Provider, ProviderError, Runner, StopReason, TextSink, ToolCall, ToolResult, Turn,
    TurnFuture, TurnRequest,
};

/// The most of a tool result the agent reported that rawko keeps.
const RESULT_BYTES: usize = 4000;
/// How long a cancelled prompt may take to end before rawko stops waiting for it.
const CANCEL_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// A request of the agent waiting for the task's decision on its call.
pub(super) enum Pending {
    Permission {
        responder: Reply<RequestPermissionResponse>,
        options: Vec<PermissionOption>,
        call: ToolCall,
    },
    Read(Reply<ReadTextFileResponse>),
    Write(Reply<WriteTextFileResponse>),
    Terminal(Reply<CreateTerminalResponse>),
    Step(oneshot::Sender<(String, bool)>),
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

/// A terminal rawko ran for the agent: what `terminal/output` and `terminal/wait_for_exit` say.
#[derive(Debug, Clone, Default)]
pub(super) struct Finished {
    pub output: String,
    pub exit_code: Option<u32>,
    pub signal: Option<String>,
}

impl Finished {
    fn status(&self) -> TerminalExitStatus {
        TerminalExitStatus::new()
            .exit_code(self.exit_code)
            .signal(self.signal.clone())
    }
}

/// Splits a command line into words as a shell would: spaces separate, quotes group, a backslash
/// escapes the next character (outside single quotes).
pub fn split_command(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err(format!("unclosed ' in the agent command: {line}")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c) => word.push(c),
                            None => {
                                return Err(format!("unclosed \" in the agent command: {line}"))
                            }
                        },
                        Some(c) => word.push(c),
                        None => return Err(format!("unclosed \" in the agent command: {line}")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    word.push(c);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if words.is_empty() {
        return Err("the agent command is empty".to_owned());
    }
    Ok(words)
}

/// `words` as one shell command line (quoted where needed).
fn join_command(program: &str, args: &[String]) -> String {
    let quote = |w: &str| {
        if !w.is_empty()
            && w.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
        {
            w.to_owned()
        } else {
            format!("'{}'", w.replace('\'', "'\\''"))
        }
    };
    if args.is_empty() {
        // A whole command line given as the program (as claude-code-acp sends it).
        return program.to_owned();
    }
    std::iter::once(quote(program))
        .chain(args.iter().map(|a| quote(a)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The name rawko gives an agent's tool: the one the agent says (`name`, or Claude Code's
/// `_meta.claudeCode.toolName`), its ACP-routed tools by their plain names, else one inferred
/// from the kind.
fn tool_name(
    name: Option<&str>,
    meta: Option<&Map<String, Value>>,
    kind: Option<ToolKind>,
    title: Option<&str>,
    input: &Value,
) -> String {
    let said = name.map(str::to_owned).or_else(|| {
        meta.and_then(|m| m.get("claudeCode"))
            .and_then(|c| c.get("toolName"))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    if let Some(said) = said.filter(|s| !s.is_empty()) {
        return said
            .strip_prefix("mcp__acp__")
            .map_or(said.clone(), str::to_owned);
    }
    match kind {
        Some(ToolKind::Read) => "Read".to_owned(),
        Some(ToolKind::Edit) if input.get("old_string").is_some() => "Edit".to_owned(),
        Some(ToolKind::Edit) => "Write".to_owned(),
        Some(ToolKind::Execute) => "Bash".to_owned(),
        Some(ToolKind::Search) => "Grep".to_owned(),
        Some(ToolKind::Fetch) => "WebFetch".to_owned(),
        _ => title
            .and_then(|t| t.split_whitespace().next())
            .filter(|w| w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or("AgentTool")
            .to_owned(),
    }
}

fn text_of(content: &[ToolCallContent]) -> String {
    let mut out = String::new();
    for c in content {
        if let ToolCallContent::Content(c) = c {
            if let ContentBlock::Text(t) = &c.content {
                out.push_str(&t.text);
            }
        }
    }
    crate::clip::clip_bytes(&out, RESULT_BYTES).into_owned()
}

fn refuse<T: agent_client_protocol::JsonRpcResponse>(responder: Reply<T>, why: &str) {
    let _ = responder.respond_with_error(Error::new(ErrorCode::INVALID_REQUEST, why.to_owned()));
}

/// The option of `kind` (or its sibling) among the agent's, as its answer.
fn choose(options: &[PermissionOption], allow: bool) -> RequestPermissionOutcome {
    let kinds = if allow {
        [
            PermissionOptionKind::AllowOnce,
            PermissionOptionKind::AllowAlways,
        ]
    } else {
        [
            PermissionOptionKind::RejectOnce,
            PermissionOptionKind::RejectAlways,
        ]
    };
    kinds
        .iter()
        .find_map(|k| options.iter().find(|o| o.kind == *k))
        .map_or(RequestPermissionOutcome::Cancelled, |o| {
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(o.option_id.clone()))
        })
}

/// Bash's result as a terminal's output and exit: the last line is how it ended (`exit code N`,
/// `killed by SIG…`, `timed out …`); `None` when the call never ran (refused: that text is why).
fn terminal_result(content: &str) -> Option<Finished> {
    let (output, last) = match content.rsplit_once('\n') {
        Some((output, last)) => (format!("{output}\n"), last),
        None => (String::new(), content),
    };
    let mut finished = Finished {
        output,
        ..Finished::default()
    };
    if let Some(code) = last.strip_prefix("exit code ") {
        finished.exit_code = Some(code.trim().parse().ok()?);
    } else if let Some(signal) = last.strip_prefix("killed by ") {
        finished.signal = Some(signal.trim().to_owned());
    } else if last.starts_with("timed out after ") {
        finished.output.push_str(last);
        finished.output.push('\n');
        finished.signal = Some("SIGKILL".to_owned());
    } else {
        return None;
    }
    Some(finished)
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
}

impl Provider for AcpAgentProvider {
    fn name(&self) -> &str {
        "acp"
    }

    fn resume_after(&mut self, _turns: usize) {
        self.resumed = true;
    }

    fn turn<'a>(&'a mut self, request: TurnRequest<'a>, on_text: TextSink<'a>) -> TurnFuture<'a> {
        Box::pin(async move {
            let fresh = self.agent.is_none();
            if fresh {
                let running = agent::start(&self.command)
                    .await
                    .map_err(|e| self.fail(e))?;
                self.agent = Some(running);
            }
            let messages = request.messages;
            let from = if fresh && self.resumed {
                messages.len()
            } else {
                self.seen.min(messages.len())
            };
            let mut prompts = Vec::new();
            for m in &messages[from..] {
                match m {
                    Message::ToolResults(results) => {
                        for r in results {
                            if let Some(p) = self.pending.remove(&r.tool_call_id) {
                                self.answer(p, r);
                            }
                        }
                    }
                    Message::User(text) => prompts.push(text.clone()),
                    Message::Assistant { .. } => {}
                }
            }
            self.seen = messages.len();
            // What the task did not answer (it moved on): refused.
            for (_, p) in std::mem::take(&mut self.pending) {
                self.refuse_pending(p, "the task moved on without an answer");
            }
            let running_prompt = self.agent.as_ref().is_some_and(|a| a.prompt.is_some());
            if !prompts.is_empty() || !running_prompt {
                if running_prompt {
                    self.cancel_prompt().await;
                }
                let mut blocks: Vec<ContentBlock> = Vec::new();
                if let Some(context) = request.context.filter(|c| !c.trim().is_empty()) {
                    blocks.push(ContentBlock::from(context.to_owned()));
                }
                if fresh && self.resumed {
                    blocks.push(ContentBlock::from(primer(messages)));
                    if prompts.is_empty() {
                        prompts.push("Go on with the task from where it stopped.".to_owned());
                    }
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
    fn next_id(&mut self, what: &str) -> String {
        self.next += 1;
        format!("acp-{what}-{}", self.next)
    }

    fn call_turn(text: String, call: ToolCall, runner: Runner) -> Turn {
        Turn {
            text,
            tool_calls: vec![call],
            stop_reason: StopReason::ToolUse,
            runner,
        }
    }

    /// Sends what the agent streams to `on_text` until it asks something or the prompt ends.
    async fn stream(&mut self, on_text: TextSink<'_>) -> Result<Turn, ProviderError> {
        let mut text = String::new();
        loop {
            let stall = self.command.stall;
            let Some(agent) = self.agent.as_mut() else {
                return Err(self.fail("is not running"));
            };
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
            };
            match next {
                Next::Message(None) => return Err(self.fail("stopped answering")),
                Next::Message(Some(FromAgent::Closed(why))) => return Err(self.gone_or(why).await),
                Next::Message(Some(message)) => {
                    if let Some(turn) = self.handle(message, &mut text, on_text) {
                        return Ok(turn);
                    }
                }
                Next::End(end) => {
                    if let Some(agent) = self.agent.as_mut() {
                        agent.prompt = None;
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
                    return Err(self.fail(format!(
                        "sent nothing for {} s (the provider's stallSeconds)",
                        stall.as_secs()
                    )))
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
                let known = self.known.entry(id.clone()).or_default();
                if let Some(input) = &fields.raw_input {
                    known.input = input.clone();
                }
                if known.name.is_empty() {
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
                self.pending.insert(id.clone(), Pending::Read(responder));
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
                let runner = self.approved("Write", &request.path.to_string_lossy());
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
                let runner = self.approved("Bash", &command);
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
            FromAgent::Closed(_) => None,
        }
    }

    /// A session update: streamed text, the agent's tool calls.
    fn update(
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
                let input = call.raw_input.clone().unwrap_or_else(|| json!({}));
                let name = tool_name(
                    call.name.as_deref(),
                    call.meta.as_ref(),
                    Some(call.kind),
                    Some(&call.title),
                    &input,
                );
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
                        self.ran(id, text_of(&call.content), failed, text)
                    }
                    _ => None,
                }
            }
            SessionUpdate::ToolCallUpdate(update) => {
                let id = update.tool_call_id.0.to_string();
                if let Some(known) = self.known.get_mut(&id) {
                    if let Some(input) = update.fields.raw_input.clone() {
                        known.input = input;
                    }
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
                        self.ran(id, content, failed, text)
                    }
                    _ => None,
                }
            }
            _ => None,
        }
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

    /// Whether a call the agent sends through rawko's I/O was allowed already, when the agent
    /// asked permission for the tool that makes it (so the user is not asked twice).
    fn approved(&mut self, tool: &str, what: &str) -> Runner {
        let matches = |c: &AgentCall| {
            c.name == tool
                && match tool {
                    "Bash" => c.input.get("command").and_then(Value::as_str) == Some(what),
                    _ => c
                        .input
                        .get("file_path")
                        .and_then(Value::as_str)
                        .is_some_and(|p| {
                            Path::new(p) == Path::new(what) || Path::new(what).ends_with(p)
                        }),
                }
        };
        let found = self.allowed.iter().position(matches);
        match found {
            Some(i) => {
                self.allowed.remove(i);
                Runner::RawkoApproved
            }
            None => Runner::Rawko,
        }
    }

    /// Answers what a request of the agent was waiting for, from its call's result.
    fn answer(&mut self, pending: Pending, result: &ToolResult) {
        match pending {
            Pending::Permission {
                responder,
                options,
                call,
            } => {
                let allow = !result.is_error;
                if allow && matches!(call.name.as_str(), "Write" | "Edit" | "MultiEdit" | "Bash") {
                    self.allowed.push(AgentCall {
                        name: if call.name == "Bash" {
                            "Bash".to_owned()
                        } else {
                            "Write".to_owned()
                        },
                        input: call.input.clone(),
                        handled: true,
                    });
                }
                if !allow {
                    self.refusals.push(format!(
                        "rawko refused your {} call: {}",
                        call.name, result.content
                    ));
                }
                let _ = responder.respond(RequestPermissionResponse::new(choose(&options, allow)));
            }
            Pending::Read(responder) => {
                if result.is_error {
                    refuse(responder, &result.content);
                } else {
                    let _ = responder.respond(ReadTextFileResponse::new(result.content.clone()));
                }
            }
            Pending::Write(responder) => {
                if result.is_error {
                    refuse(responder, &result.content);
                } else {
                    let _ = responder.respond(WriteTextFileResponse::new());
                }
            }
            Pending::Terminal(responder) => match terminal_result(&result.content) {
                Some(finished) => {
                    let id = result.tool_call_id.clone();
                    self.terminals.insert(id.clone(), finished);
                    let _ = responder.respond(CreateTerminalResponse::new(TerminalId::new(id)));
                }
                None => refuse(responder, &result.content),
            },
            Pending::Step(reply) => {
                let _ = reply.send((result.content.clone(), result.is_error));
            }
        }
    }

    fn refuse_pending(&mut self, pending: Pending, why: &str) {
        match pending {
            Pending::Permission { responder, .. } => {
                let _ = responder.respond(RequestPermissionResponse::new(
                    RequestPermissionOutcome::Cancelled,
                ));
            }
            Pending::Read(r) => refuse(r, why),
            Pending::Write(r) => refuse(r, why),
            Pending::Terminal(r) => refuse(r, why),
            Pending::Step(reply) => {
                let _ = reply.send((why.to_owned(), true));
            }
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
        let Some(agent) = self.agent.as_mut() else {
            return;
        };
        let _ = agent
            .cx
            .send_notification(CancelNotification::new(agent.session.clone()));
        let deadline = tokio::time::Instant::now() + CANCEL_LIMIT;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_split_as_a_shell_would() {
        assert_eq!(
            split_command("claude-code-acp").unwrap(),
            ["claude-code-acp"]
        );
        assert_eq!(
            split_command("  gemini   --experimental-acp ").unwrap(),
            ["gemini", "--experimental-acp"]
        );
        assert_eq!(
            split_command(r#"node "/a b/index.js" 'x y' z\ w"#).unwrap(),
            ["node", "/a b/index.js", "x y", "z w"]
        );
        assert!(split_command("").is_err());
        assert!(split_command("node 'open").is_err());
        assert!(split_command("node \"open").is_err());
    }

    #[test]
    fn tool_names_come_from_the_agent_else_from_the_kind() {
        let meta: Map<String, Value> =
            serde_json::from_value(json!({"claudeCode": {"toolName": "mcp__acp__Write"}})).unwrap();
        assert_eq!(
            tool_name(None, Some(&meta), None, None, &json!({})),
            "Write"
        );
        assert_eq!(
            tool_name(Some("NotebookEdit"), Some(&meta), None, None, &json!({})),
            "NotebookEdit"
        );
        let edit = json!({"file_path": "a", "old_string": "x"});
        assert_eq!(
            tool_name(None, None, Some(ToolKind::Edit), None, &edit),
            "Edit"
        );
        assert_eq!(
            tool_name(None, None, Some(ToolKind::Edit), None, &json!({})),
            "Write"
        );
        assert_eq!(
            tool_name(None, None, Some(ToolKind::Execute), None, &json!({})),
            "Bash"
        );
        assert_eq!(
            tool_name(
                None,
                None,
                Some(ToolKind::Other),
                Some("Frob the widget"),
                &json!({})
            ),
            "Frob"
        );
        assert_eq!(
            tool_name(None, None, Some(ToolKind::Other), Some("`ls`"), &json!({})),
            "AgentTool"
        );
    }

    #[test]
    fn a_bash_result_becomes_a_terminal_exit() {
        let f = terminal_result("hi\n--- stderr ---\nerr\nexit code 3").unwrap();
        assert_eq!(f.output, "hi\n--- stderr ---\nerr\n");
        assert_eq!(f.exit_code, Some(3));
        let f = terminal_result("killed by SIGTERM").unwrap();
        assert_eq!(
            (f.output.as_str(), f.signal.as_deref()),
            ("", Some("SIGTERM"))
        );
        let f = terminal_result(
            "x\ntimed out after 1 s; the command and every process it started were killed",
        )
        .unwrap();
        assert_eq!(f.signal.as_deref(), Some("SIGKILL"));
        assert!(terminal_result("[workflow] The tool \"Bash\" is blocked").is_none());
    }

    #[test]
    fn terminal_commands_join_with_quotes() {
        assert_eq!(join_command("echo hi > out.txt", &[]), "echo hi > out.txt");
        assert_eq!(
            join_command("printf", &["%s\n".to_owned(), "a b".to_owned()]),
            "printf '%s\n' 'a b'"
        );
    }
}

//! The agent loop: model turns with the phase context, tool calls through the hooks, the agent's
//! filter, the gate and approvals, and `workflow_step`.

use std::sync::Arc;

use serde_json::Value;

use super::{Control, Conversation, RunEnd, Stop};
use crate::agents::AgentDefinition;
use crate::clip::clip_line;
use crate::engine::log::{LogEvent, LoggedCall};
use crate::engine::{OutputKind, TaskEvent, TaskState};
use crate::machine::MachineError;
use crate::provider::{
    Message, Provider, ProviderError, Runner, ToolCall, ToolDescription, ToolResult, TurnRequest,
};
use crate::tools::{self, ToolContext};
use crate::workflow::gate::{self, GateDecision};
use crate::workflow::step::{self, ResultType};

impl Control {
    /// Moves queued user messages into the conversation.
    pub(super) async fn deliver_messages(&mut self, conversation: &mut Conversation) {
        let spoke = !self.pending.messages.is_empty();
        while let Some(text) = self.pending.messages.pop_front() {
            let text = match self.submit_prompt(text).await {
                Ok(text) => text,
                Err(reason) => {
                    self.output(
                        OutputKind::Error,
                        format!("your message was blocked by a UserPromptSubmit hook: {reason}"),
                    );
                    continue;
                }
            };
            self.log(LogEvent::UserMessage {
                text: text.clone(),
                source: "user".to_owned(),
            });
            conversation.messages.push(Message::User(text));
        }
        if spoke {
            // The user spoke: the reminders start counting again.
            self.not_done.reminders_in_row = 0;
        }
    }

    /// One agent run: turns until the model stops calling tools (or the agent's turn limit).
    pub(super) async fn run_agent(
        &mut self,
        conversation: &mut Conversation,
        provider: &mut dyn Provider,
        tools: &Arc<ToolContext>,
        agent_name: &str,
    ) -> RunEnd {
        let agent: Option<AgentDefinition> = self.orch.agents.get(agent_name).cloned();
        let max_turns = agent
            .as_ref()
            .and_then(|a| a.limits.max_iterations)
            .map_or(usize::MAX, |n| n.max(1) as usize);
        self.orch.hit_max_iterations = false;
        let mut turns = 0usize;

        // A resumed task whose agent's last turn ended its run (rawko stopped before it said so)
        // takes that end; the model is not asked again.
        if let Some(text) = self.pending.ended_turn.take() {
            if !text.trim().is_empty() {
                self.last_output = text;
            }
            return RunEnd::Done(self.last_output.clone());
        }
        // A resumed task first runs the calls its last turn still had.
        if !self.pending.calls.is_empty() {
            let calls = std::mem::take(&mut self.pending.calls);
            let mut results = std::mem::take(&mut self.pending.results);
            let mut stopped = None;
            for call in &calls {
                if stopped.is_some() {
                    results.push(ToolResult {
                        tool_call_id: call.id.clone(),
                        content: "interrupted by the user".to_owned(),
                        is_error: true,
                    });
                    continue;
                }
                match self
                    .tool_call(call, tools, agent.as_ref(), &Runner::Rawko)
                    .await
                {
                    Ok(result) => results.push(result),
                    Err(stop) => {
                        stopped = Some(stop);
                        results.push(ToolResult {
                            tool_call_id: call.id.clone(),
                            content: "interrupted by the user".to_owned(),
                            is_error: true,
                        });
                    }
                }
            }
            conversation.messages.push(Message::ToolResults(results));
            match stopped {
                None => {}
                Some(Stop::Interrupt) => {
                    if let Err(event) = self.wait_for_user().await {
                        return RunEnd::Event(event);
                    }
                }
                Some(other) => return RunEnd::Event(Self::stop_event(other)),
            }
        }

        loop {
            if self.persist.files.is_some() {
                // A burst of tasks goes no further ahead of the log writer than it can take.
                crate::pressure::room().await;
            }
            self.checkpoint_phase_entry().await;
            self.run_queued_hooks().await;
            self.deliver_messages(conversation).await;
            if self.state != TaskState::Running {
                self.set_status(TaskState::Running, None, "turn");
            }
            let context = self
                .pos
                .workflow
                .as_ref()
                .and_then(|w| w.resolve(&self.pos.set))
                .map(|a| a.context_prompt(&self.pos.set));
            if let Some(context) = context.as_ref().filter(|_| self.external.is_none()) {
                self.output(OutputKind::ContextInjected, context.clone());
            }
            // An external agent's turn answers it (its Stop): what led to that is written first.
            // Another task's turn starts at once (a command that comes meanwhile still finds
            // it running), and its text goes out behind what was announced before it.
            if self.external.is_some() {
                self.durable().await;
            }
            let events = self.channels.events.clone();
            let secrets = self.secrets.clone();
            let behind_log = self.persist.files.is_some();
            // Each delta is redacted on its own (a key split across two deltas is not caught
            // here; the turn's whole text is, in the log).
            let on_text = move |delta: &str| {
                let event = TaskEvent::Output {
                    kind: OutputKind::AssistantDelta,
                    text: secrets.redact(delta).into_owned(),
                    tool_call_id: None,
                    tool: None,
                    input: None,
                    is_error: None,
                };
                if behind_log {
                    let events = events.clone();
                    crate::store::journal().then(move || {
                        let _ = events.send(event);
                    });
                } else {
                    let _ = events.send(event);
                }
            };
            // An agent's own process (`acp`) is confined as the phase has it.
            provider.confine(&crate::provider::Confinement {
                sandbox: tools.sandbox.clone(),
                workspace: tools.workspace.clone(),
                access: if gate::workspace_writable(self.pos.workflow.as_ref(), &self.pos.set) {
                    tools::WorkspaceAccess::ReadWrite
                } else {
                    tools::WorkspaceAccess::ReadOnly
                },
                in_phase: self
                    .pos
                    .workflow
                    .as_ref()
                    .and_then(|s| s.current_phase(&self.pos.set))
                    .is_some(),
            });
            // `delegate_to_subagents` is offered where subagents can start and the phase allows it.
            let offered = if self.delegation.host.is_some()
                && self.delegation.subagent.is_none()
                && gate::check(
                    self.pos.workflow.as_ref(),
                    &self.pos.set,
                    crate::engine::subagents::TOOL_NAME,
                    &Value::Null,
                )
                .is_allowed()
            {
                super::delegating_tool_descriptions()
            } else {
                conversation.tools.clone()
            };
            let request = TurnRequest {
                system: agent.as_ref().map(|a| a.system_prompt.as_str()),
                messages: &conversation.messages,
                context: context.as_deref(),
                tools: &offered,
            };
            let turn = match self.wait(provider.turn(request, &on_text), false).await {
                Ok(Ok(turn)) => turn,
                Ok(Err(e)) => {
                    self.log(LogEvent::TurnFailed {
                        kind: e.kind.as_str().to_owned(),
                        message: e.message.clone(),
                    });
                    let message = format!("provider {} failed: {e}", provider.name());
                    self.output(OutputKind::Error, message);
                    return RunEnd::Failed(provider_error(&e));
                }
                Err(Stop::Interrupt) => {
                    if let Err(event) = self.wait_for_user().await {
                        return RunEnd::Event(event);
                    }
                    continue;
                }
                Err(stop) => return RunEnd::Event(Self::stop_event(stop)),
            };
            turns += 1;
            if let Some(id) = provider.agent_session() {
                if self.persist.agent_session.as_deref() != Some(id.as_str()) {
                    self.persist.agent_session = Some(id.clone());
                    self.log(LogEvent::AgentSession { id });
                }
            }
            self.log(LogEvent::Turn {
                agent: agent_name.to_owned(),
                text: turn.text.clone(),
                tool_calls: turn
                    .tool_calls
                    .iter()
                    .map(|c| LoggedCall {
                        id: c.id.clone(),
                        name: c.name.clone(),
                        input: c.input.clone(),
                        reported: matches!(turn.runner, Runner::AgentRan { .. }),
                    })
                    .collect(),
            });
            if let Some(usage) = provider.context_usage() {
                self.emit(crate::engine::TaskEvent::Usage {
                    used: usage.used,
                    window: usage.window,
                });
            }
            if !turn.text.trim().is_empty() {
                self.last_output = turn.text.clone();
            }
            conversation.messages.push(Message::Assistant {
                text: turn.text.clone(),
                tool_calls: turn.tool_calls.clone(),
            });
            if turn.tool_calls.is_empty() {
                return RunEnd::Done(self.last_output.clone());
            }
            let mut results = Vec::with_capacity(turn.tool_calls.len());
            let mut stop = None;
            for call in &turn.tool_calls {
                if let Some(stop) = &stop {
                    // Keep the conversation whole: every call gets a result.
                    results.push(ToolResult {
                        tool_call_id: call.id.clone(),
                        content: match stop {
                            Stop::Cancel => "the task was cancelled".to_owned(),
                            _ => "interrupted by the user".to_owned(),
                        },
                        is_error: true,
                    });
                    continue;
                }
                match super::boxed(
                    "tool_call",
                    self.tool_call(call, tools, agent.as_ref(), &turn.runner),
                )
                .await
                {
                    Ok(result) => results.push(result),
                    Err(s) => {
                        stop = Some(s);
                        results.push(ToolResult {
                            tool_call_id: call.id.clone(),
                            content: "interrupted by the user".to_owned(),
                            is_error: true,
                        });
                    }
                }
            }
            for id in self.approvals.agent_approved.drain(..) {
                provider.user_approved(&id);
            }
            conversation.messages.push(Message::ToolResults(results));
            match stop {
                None => {}
                Some(Stop::Interrupt) => {
                    if let Err(event) = self.wait_for_user().await {
                        return RunEnd::Event(event);
                    }
                    continue;
                }
                Some(other) => return RunEnd::Event(Self::stop_event(other)),
            }
            if turns >= max_turns {
                self.orch.hit_max_iterations = true;
                self.record(
                    "agent_limit",
                    None,
                    None,
                    Some(format!("{agent_name} reached its {max_turns} turns")),
                );
                return RunEnd::Done(self.last_output.clone());
            }
        }
    }

    /// One tool call: the PreToolUse hooks, then `workflow_step`, or the agent's tool filter, the
    /// gate, the approval when blocked (or when a hook asks), the tool, and the PostToolUse hooks.
    /// Logged when it starts and when it finishes.
    pub(super) async fn tool_call(
        &mut self,
        call: &ToolCall,
        tools: &Arc<ToolContext>,
        agent: Option<&AgentDefinition>,
        runner: &Runner,
    ) -> Result<ToolResult, Stop> {
        use crate::hooks::HookEvent;
        // One shape for hooks, the gate and the tools: Claude Code's field names.
        let canonical;
        let call = match tools::canonical_input(&call.name, &call.input) {
            Some(input) => {
                canonical = ToolCall {
                    input,
                    ..call.clone()
                };
                &canonical
            }
            None => call,
        };
        // A call the agent only reports having made is shown and logged as its report, never as a
        // call rawko made.
        let reported = matches!(runner, Runner::AgentRan { .. });
        let mut text = summarize_call(call);
        if reported {
            text.push_str(" (reported by the agent)");
        }
        self.emit(TaskEvent::Output {
            kind: OutputKind::ToolCall,
            text,
            tool_call_id: Some(call.id.clone()),
            tool: Some(call.name.clone()),
            input: Some(call.input.clone()),
            is_error: None,
        });
        self.log(LogEvent::ToolStarted {
            id: call.id.clone(),
            name: call.name.clone(),
            reported,
        });
        self.approvals.approved = false;
        if let Runner::AgentRan { content, is_error } = runner {
            // Nothing to decide: the agent ran it without asking. Shown and logged as it came.
            let mut content = content.clone();
            self.secrets.scrub(&mut content);
            let pushes = self.checkpointing.pushes();
            if pushes {
                self.checkpoint_after(call, *is_error).await;
            }
            let result = self.finish_call(call, content, *is_error);
            if !pushes {
                self.checkpoint_after(call, *is_error).await;
            }
            return Ok(result);
        }
        let pre = self
            .fire_tool_hooks(HookEvent::PreToolUse, call, |inv| inv)
            .await?;
        let mut call = call.clone();
        if let Some(input) = pre.updated_input.clone() {
            self.output(
                OutputKind::HookOutput,
                format!("a PreToolUse hook replaced the input of {}", call.name),
            );
            call.input = input;
        }
        let (mut content, is_error) = if let Some(reason) = &pre.halt {
            self.hook_state.halt_reason = Some(reason.clone());
            (format!("stopped by a PreToolUse hook: {reason}"), true)
        } else if let Some(reason) = &pre.blocked {
            (format!("blocked by a PreToolUse hook: {reason}"), true)
        } else if call.name.eq_ignore_ascii_case(step::TOOL_NAME)
            && self.delegation.subagent.is_some()
        {
            (
                "a subagent does not move the workflow: do the task you were given, then answer with what you did".to_owned(),
                true,
            )
        } else if call.name.eq_ignore_ascii_case(step::TOOL_NAME) {
            let r = self.workflow_step(&call);
            self.run_queued_hooks().await;
            r
        } else if call
            .name
            .eq_ignore_ascii_case(crate::engine::subagents::TOOL_NAME)
            && self.delegation.subagent.is_some()
        {
            (
                "a subagent cannot delegate further: do the work yourself".to_owned(),
                true,
            )
        } else if let Some(refusal) = agent.and_then(|a| agent_refusal(a, &call)) {
            (refusal, true)
        } else {
            super::boxed(
                "gated_call",
                self.gated_call(&call, tools, pre.ask.as_deref(), runner),
            )
            .await?
        };
        // A key that reached a tool's output (a file that holds it, say) goes no further: not to
        // the log, the editor, the hooks or the next model request.
        self.secrets.scrub(&mut content);
        self.note_modified(&call.name, &call.input, is_error);
        if let Some(bridge) = self.external.clone() {
            let ask = self.approvals.ask_agent.take();
            let decision = if let Some(reason) = ask.filter(|_| is_error) {
                crate::external::ToolDecision::Ask(reason)
            } else if is_error {
                crate::external::ToolDecision::Deny(content.clone())
            } else if self.approvals.approved || pre.allowed || pre.updated_input.is_some() {
                crate::external::ToolDecision::Allow {
                    updated_input: pre.updated_input.clone(),
                }
            } else {
                crate::external::ToolDecision::Pass
            };
            self.approvals.approved = false;
            // The agent acts on the answer at once: what led to it is written first.
            self.durable().await;
            bridge.decide(&call.id, decision);
        }
        if pre.blocked.is_none() && pre.halt.is_none() && self.external.is_none() {
            let response = super::hooking::tool_response(&content, is_error);
            let post = self
                .fire_tool_hooks(HookEvent::PostToolUse, &call, |inv| {
                    inv.field("tool_response", response.clone())
                        .field("toolResponse", response)
                })
                .await?;
            if let Some(reason) = post.blocked {
                content.push_str(&format!("\n\n[PostToolUse hook] {reason}"));
            }
            if let Some(reason) = post.halt {
                self.hook_state.halt_reason = Some(reason);
            }
            content = super::hooking::with_context(content, &post.context);
        }
        content = super::hooking::with_context(content, &pre.context);
        // A team worker's task pushes its checkpoint to the task's branch before the call is
        // recorded complete: another worker that takes it over finds the files the log says.
        let pushes = self.checkpointing.pushes();
        if pushes {
            self.checkpoint_after(&call, is_error).await;
        }
        let result = self.finish_call(&call, content, is_error);
        if !pushes {
            self.checkpoint_after(&call, is_error).await;
        }
        if self.hook_state.halt_reason.is_some() {
            // A hook said `continue: false`: the result is recorded, then the task waits.
            return Err(Stop::Interrupt);
        }
        Ok(result)
    }

    /// A call's result: logged, announced, and the result the model gets.
    fn finish_call(&mut self, call: &ToolCall, content: String, is_error: bool) -> ToolResult {
        self.log(LogEvent::ToolFinished {
            id: call.id.clone(),
            content: content.clone(),
            is_error,
        });
        self.emit(TaskEvent::Output {
            kind: OutputKind::ToolResult,
            text: content.clone(),
            tool_call_id: Some(call.id.clone()),
            tool: Some(call.name.clone()),
            input: None,
            is_error: Some(is_error),
        });
        ToolResult {
            tool_call_id: call.id.clone(),
            content,
            is_error,
        }
    }

    /// Runs the hooks of a tool event, its invocation in AutoAgent's and Claude Code's names with
    /// what `more` adds. The invocation (a copy of the task's and the call's fields) is built
    /// only when a hook may run for it: most workspaces have none for most tool calls.
    pub(super) async fn fire_tool_hooks(
        &mut self,
        event: crate::hooks::HookEvent,
        call: &ToolCall,
        more: impl FnOnce(crate::hooks::Invocation) -> crate::hooks::Invocation,
    ) -> Result<crate::hooks::Dispatch, Stop> {
        if !self.hooks.wants(event, Some(&call.name)) {
            return Ok(Default::default());
        }
        let inv = self
            .invocation(event)
            .subject(call.name.clone())
            .field("tool_name", call.name.clone())
            .field("tool_input", call.input.clone())
            .field("tool_use_id", call.id.clone())
            .field("toolName", call.name.clone())
            .field("toolInput", call.input.clone())
            .field("toolUseId", call.id.clone());
        self.fire_waiting(more(inv)).await
    }

    pub(super) fn workflow_step(&mut self, call: &ToolCall) -> (String, bool) {
        let action = match step::parse_input(&call.input) {
            Ok(a) => a,
            Err(message) => return (message, true),
        };
        let old = self.pos.workflow.clone();
        let result = step::execute(old.as_ref(), &self.pos.set, action);
        if let Some(old) = &old {
            self.apply_step(old, result.state.clone(), "workflow_step");
        }
        (result.text, result.result_type == ResultType::Error)
    }

    pub(super) async fn gated_call(
        &mut self,
        call: &ToolCall,
        tools: &Arc<ToolContext>,
        hook_asks: Option<&str>,
        runner: &Runner,
    ) -> Result<(String, bool), Stop> {
        let agent_runs =
            self.external.is_some() || matches!(runner, Runner::Agent | Runner::AgentAsks);
        // The agent's own rules want its user's yes (Claude Code's PermissionRequest): a call the
        // phase allows is asked in the editor, as when a PreToolUse hook answers `ask`.
        let hook_asks = match runner {
            Runner::AgentAsks => hook_asks.or(Some(
                "the agent's own permission rules ask before this call",
            )),
            _ => hook_asks,
        };
        let delegates = !agent_runs
            && call
                .name
                .eq_ignore_ascii_case(crate::engine::subagents::TOOL_NAME);
        if !agent_runs && !delegates && !tools::is_builtin(&call.name) {
            let known: Vec<&str> = tools::specs().iter().map(|s| s.name).collect();
            return Ok((
                format!(
                    "unknown tool \"{}\"; the tools are {}, {}",
                    crate::clip::clip(&call.name),
                    known.join(", "),
                    step::TOOL_NAME
                ),
                true,
            ));
        }
        // What a Bash command may do to the workspace, which the kernel sandbox enforces: a call
        // the user approved may write.
        let mut access =
            if gate::bash_may_write(self.pos.workflow.as_ref(), &self.pos.set, &call.input) {
                tools::WorkspaceAccess::ReadWrite
            } else {
                tools::WorkspaceAccess::ReadOnly
            };
        if matches!(runner, Runner::Agent | Runner::AgentAsks) {
            // The agent does this itself once allowed: a path it names outside the workspace is
            // refused here, with the check rawko's own tools make.
            if let Some(path) = ["file_path", "notebook_path", "path"]
                .iter()
                .find_map(|k| call.input.get(*k).and_then(Value::as_str))
            {
                if let Err(refusal) = tools::resolve(tools, path) {
                    return Ok((refusal, true));
                }
            }
        }
        if *runner == Runner::RawkoApproved {
            access = tools::WorkspaceAccess::ReadWrite;
        } else if let GateDecision::Block {
            reason,
            phase,
            detail,
        } = gate::check(
            self.pos.workflow.as_ref(),
            &self.pos.set,
            &call.name,
            &gate_view(&call.input, &tools.workspace, &self.hooks.workspace),
        ) {
            let answer =
                super::boxed("approval", self.approval(call, &phase, &reason, &detail)).await?;
            if !answer.allows() {
                return Ok((reason, true));
            }
            access = tools::WorkspaceAccess::ReadWrite;
            if *runner == Runner::Agent {
                self.approvals.agent_approved.push(call.id.clone());
            }
        } else if let Some(why) = hook_asks {
            // A PreToolUse hook asked for the user's decision on a call the phase allows.
            let phase = self
                .pos
                .workflow
                .as_ref()
                .and_then(|w| w.resolve(&self.pos.set))
                .map(|a| a.current_phase.name.clone())
                .unwrap_or_default();
            let reason = if *runner == Runner::AgentAsks {
                format!("{why} (the phase allows it)")
            } else {
                format!("a PreToolUse hook asks: {why}")
            };
            let answer =
                super::boxed("approval", self.approval(call, &phase, &reason, &reason)).await?;
            if !answer.allows() {
                return Ok((format!("the user did not allow this call ({why})"), true));
            }
        }
        if self.external.is_some() {
            // The external agent runs its own tools; rawko only decides.
            return Ok(("allowed; the external agent runs it".to_owned(), false));
        }
        if agent_runs {
            // An ACP agent asked: it runs the call itself once allowed.
            return Ok(("allowed; the agent runs it".to_owned(), false));
        }
        if delegates {
            return super::boxed("delegate", self.delegate(call)).await;
        }
        if !self.sandbox_notes_shown && call.name.eq_ignore_ascii_case("bash") {
            self.sandbox_notes_shown = true;
            let notes = [
                tools.sandbox.unconfined_note(),
                tools.sandbox.toolchains_note(),
            ];
            for note in notes.into_iter().flatten() {
                self.output(OutputKind::Error, format!("note: {note}"));
            }
        }
        if !self.repository_note_shown && call.name.eq_ignore_ascii_case("bash") {
            if let Some(note) = tools.sandbox.repository_note(&tools.workspace) {
                self.repository_note_shown = true;
                self.output(OutputKind::Error, format!("note: {note}"));
            }
        }
        let tools = tools.clone();
        let name = call.name.clone();
        let input = call.input.clone();
        let id = call.id.clone();
        // Boxed: room for running a tool (a Bash process, a walk of the workspace) is taken only
        // while one runs, not while the task waits for an approval.
        let run = super::boxed("run_call", async move {
            tools::run_call(&name, &input, &tools, access, Some(&id)).await
        });
        let output = self.wait(run, false).await?;
        Ok((output.content, output.is_error))
    }
}

pub(super) fn tool_descriptions() -> Vec<ToolDescription> {
    let mut out: Vec<ToolDescription> = tools::specs()
        .into_iter()
        .map(|s| ToolDescription {
            name: s.name.to_owned(),
            description: s.description.to_owned(),
            input_schema: s.input_schema,
        })
        .collect();
    out.push(ToolDescription {
        name: step::TOOL_NAME.to_owned(),
        description: step::DESCRIPTION.to_owned(),
        input_schema: step::parameters_schema(),
    });
    out
}

/// A one-line summary of a tool call for the output panel.
pub(super) fn summarize_call(call: &ToolCall) -> String {
    let pick = |keys: &[&str]| {
        keys.iter()
            .find_map(|k| call.input.get(*k).and_then(Value::as_str))
            .map(|s| clip_line(s, 80).into_owned())
    };
    match pick(&["path", "file_path", "command", "pattern", "action"]) {
        Some(arg) => format!("{} {arg}", call.name),
        None => call.name.clone(),
    }
}

/// The input as the gate reads it: an absolute `file_path` (or `notebook_path`) inside the
/// workspace, as Claude Code sends it, also as a workspace-relative `path`, so rules such as
/// `Edit(docs/**)` match it. Hooks and tools see the input unchanged.
pub(super) fn gate_view<'a>(
    input: &'a serde_json::Value,
    canonical: &std::path::Path,
    given: &std::path::Path,
) -> std::borrow::Cow<'a, serde_json::Value> {
    use std::borrow::Cow;
    let Some(obj) = input.as_object() else {
        return Cow::Borrowed(input);
    };
    let Some(file) = ["file_path", "notebook_path"]
        .iter()
        .find_map(|k| obj.get(*k).and_then(serde_json::Value::as_str))
    else {
        return Cow::Borrowed(input);
    };
    let file = std::path::Path::new(file);
    if !file.is_absolute() {
        return Cow::Borrowed(input);
    }
    let Some(relative) = file
        .strip_prefix(canonical)
        .or_else(|_| file.strip_prefix(given))
        .ok()
    else {
        return Cow::Borrowed(input);
    };
    let mut obj = obj.clone();
    obj.insert(
        "path".to_owned(),
        serde_json::Value::String(relative.display().to_string()),
    );
    Cow::Owned(serde_json::Value::Object(obj))
}

/// Why the running agent may not make this call (its tool list, its Bash filter), if it may not.
pub(super) fn agent_refusal(agent: &AgentDefinition, call: &ToolCall) -> Option<String> {
    if !agent.tool_allowed(&call.name) {
        return Some(format!(
            "the tool \"{}\" is not available to agent {}",
            call.name, agent.name
        ));
    }
    if call.name.eq_ignore_ascii_case("bash") {
        let command = call
            .input
            .get("command")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Err(why) = agent.check_bash(command) {
            return Some(why);
        }
    }
    None
}

pub(super) fn provider_error(e: &ProviderError) -> MachineError {
    MachineError::new(e.kind.as_str(), e.message.clone())
}

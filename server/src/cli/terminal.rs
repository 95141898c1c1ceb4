//! The terminal face of a task, shared by `rawko demo` and `rawko run`: events become lines —
//! the breadcrumb when the phase changes, the streamed text, tool calls and results, approvals,
//! the countdown, the completion.

use std::io::{self, BufRead, Write};

use crate::engine::{ApprovalAnswer, Outcome, OutputKind, TaskEvent, TaskState};

/// Asks about the blocked call on the terminal.
pub fn ask(out: &mut dyn Write) -> io::Result<ApprovalAnswer> {
    let stdin = io::stdin();
    loop {
        write!(
            out,
            "     [a]llow once, allow al[w]ays, [d]eny, deny al[l]ways? "
        )?;
        out.flush()?;
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            writeln!(out)?;
            return Ok(ApprovalAnswer::Cancelled);
        }
        if let Some(answer) = answer_of(&line) {
            return Ok(answer);
        }
    }
}

/// The answer a line typed at the approval question gives, if it is one.
pub fn answer_of(line: &str) -> Option<ApprovalAnswer> {
    match line.trim() {
        "a" | "allow" => Some(ApprovalAnswer::AllowOnce),
        "w" | "always" => Some(ApprovalAnswer::AllowAlways),
        "d" | "deny" | "" => Some(ApprovalAnswer::RejectOnce),
        "l" => Some(ApprovalAnswer::RejectAlways),
        _ => None,
    }
}

/// The line that tells a blocked call at the terminal, in the user's words (the approval's
/// `detail`): `🔒 Write is blocked in the Plan phase (allowed: Read, Glob, Grep)`, or
/// `🔒 Bash: a PreToolUse hook asks: …`.
pub fn approval_line(request: &crate::engine::ApprovalRequest) -> String {
    let detail = request.detail.lines().next().unwrap_or_default();
    if request.subagent.is_some() && !detail.is_empty() {
        // `reviewer (subagent of task-1-1): Write is blocked …`
        format!("  🔒 {detail}")
    } else if detail.is_empty() {
        format!(
            "  🔒 {} is blocked in the {} phase",
            request.tool, request.phase
        )
    } else if detail.starts_with(request.tool.as_str()) {
        format!("  🔒 {detail}")
    } else {
        format!("  🔒 {}: {detail}", request.tool)
    }
}

/// Renders events as terminal lines.
pub struct Printer<'a> {
    pub out: &'a mut dyn Write,
    in_text: bool,
    last_crumb: String,
    /// The subagents whose start was shown.
    subagents: std::collections::HashSet<String>,
    /// A new phase's header, shown before the next line that belongs to the new phase (the
    /// result of the `workflow_step` call that moved still belongs to the old one).
    pending_header: Option<String>,
    /// Whether the current phase's context injection was shown (once per phase is enough).
    context_shown: bool,
    /// The last error line shown: a status whose reason says the same (a hook configuration
    /// error is both) is not shown twice.
    last_error: Option<String>,
    /// The hook configuration errors shown, without the event they came at: the same broken
    /// hook is told once, whatever events (the task's, the session's end) it fails at.
    config_errors: std::collections::HashSet<String>,
}

/// What a task's output line starts with when it tells a hook configuration error.
const CONFIG_ERROR: &str = "hook configuration error: ";

/// A hook configuration error without the event it came at: `Stop hook `./x` could not run …`
/// and `SessionStart hook `./x` could not run …` are the same error.
fn config_error_key(text: &str) -> &str {
    let text = text.strip_prefix(CONFIG_ERROR).unwrap_or(text);
    match text.split_once(' ') {
        Some((_event, rest)) if rest.starts_with("hook ") => rest,
        _ => text,
    }
}

fn first_line(text: &str) -> String {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    let rest = lines.count();
    if rest > 0 {
        format!(
            "{first} (+{rest} more line{})",
            if rest == 1 { "" } else { "s" }
        )
    } else {
        first.to_owned()
    }
}

impl<'a> Printer<'a> {
    pub fn new(out: &'a mut dyn Write) -> Self {
        Printer {
            out,
            in_text: false,
            last_crumb: String::new(),
            pending_header: None,
            context_shown: false,
            last_error: None,
            config_errors: Default::default(),
            subagents: Default::default(),
        }
    }

    /// Shows a subagent's event as whole lines starting with `[name]` (its profile): its start,
    /// its tool calls and results, its errors and its end with its answer's first line. Its
    /// streamed text is not shown: subagents run side by side.
    pub fn subagent(&mut self, name: &str, event: TaskEvent) -> io::Result<()> {
        let line = match event {
            TaskEvent::Status { .. } if self.subagents.insert(name.to_owned()) => {
                "⤷ started".to_owned()
            }
            TaskEvent::Output {
                kind,
                text,
                is_error,
                ..
            } => match kind {
                OutputKind::ToolCall => format!("🔧 {text}"),
                OutputKind::ToolResult => {
                    let mark = if is_error == Some(true) { "✗" } else { "↳" };
                    format!("   {mark} {}", first_line(&text))
                }
                OutputKind::Error => format!("⚠️  {}", first_line(&text)),
                OutputKind::HookOutput => format!("🪝 {}", first_line(&text)),
                _ => return Ok(()),
            },
            TaskEvent::Finished { outcome, summary } => match outcome {
                Outcome::Complete => format!("✓ done: {}", first_line(summary.trim())),
                other => format!("✗ {}: {}", other.as_str(), first_line(summary.trim())),
            },
            _ => return Ok(()),
        };
        self.end_text()?;
        writeln!(self.out, "  [{name}] {line}")
    }

    /// Shows a hook configuration error that came outside the task (the session's end), unless
    /// the same error was shown already.
    pub fn config_error(&mut self, text: &str) -> io::Result<()> {
        if self.config_errors.insert(config_error_key(text).to_owned()) {
            self.end_text()?;
            writeln!(self.out, "  ✗ {CONFIG_ERROR}{text}")?;
        }
        Ok(())
    }

    pub fn end_text(&mut self) -> io::Result<()> {
        if self.in_text {
            writeln!(self.out)?;
            self.in_text = false;
        }
        Ok(())
    }

    fn header(&mut self) -> io::Result<()> {
        if let Some(crumb) = self.pending_header.take() {
            self.end_text()?;
            writeln!(self.out)?;
            writeln!(self.out, "▶ {crumb}")?;
        }
        Ok(())
    }

    pub fn show(&mut self, event: TaskEvent) -> io::Result<()> {
        let belongs_to_old_phase = matches!(
            event,
            TaskEvent::Output {
                kind: OutputKind::ToolResult,
                ..
            } | TaskEvent::Status { .. }
        );
        if !belongs_to_old_phase {
            self.header()?;
        }
        match event {
            TaskEvent::Output {
                kind: OutputKind::AssistantDelta,
                text,
                ..
            } => {
                if !self.in_text {
                    write!(self.out, "  🤖 ")?;
                    self.in_text = true;
                }
                write!(self.out, "{text}")?;
                self.out.flush()?;
            }
            TaskEvent::Output {
                kind,
                text,
                is_error,
                ..
            } => {
                self.end_text()?;
                match kind {
                    OutputKind::ContextInjected => {
                        if !self.context_shown {
                            let lines = text.lines().count();
                            writeln!(
                                self.out,
                                "  🔄 phase context injected before each turn ({lines} lines)"
                            )?;
                            self.context_shown = true;
                        }
                    }
                    OutputKind::ToolCall => writeln!(self.out, "  🔧 {text}")?,
                    OutputKind::ToolResult => {
                        let mark = if is_error == Some(true) { "✗" } else { "↳" };
                        writeln!(self.out, "     {mark} {}", first_line(&text))?;
                    }
                    OutputKind::Reminder => {
                        writeln!(self.out, "  📣 reminder sent: {}", first_line(&text))?
                    }
                    OutputKind::Completion => {
                        writeln!(self.out)?;
                        for line in text.lines() {
                            writeln!(self.out, "{line}")?;
                        }
                    }
                    OutputKind::Error => {
                        let repeated = text.starts_with(CONFIG_ERROR)
                            && !self
                                .config_errors
                                .insert(config_error_key(&text).to_owned());
                        if !repeated {
                            writeln!(self.out, "  ⚠️  {text}")?;
                        }
                        self.last_error = Some(text);
                    }
                    OutputKind::HookOutput => writeln!(self.out, "  🪝 {text}")?,
                    OutputKind::AssistantDelta => {}
                }
            }
            TaskEvent::Status {
                state,
                reason,
                breadcrumb,
                breadcrumb_text: crumb,
                ..
            } => {
                if !breadcrumb.is_empty() && crumb != self.last_crumb && state == TaskState::Running
                {
                    self.pending_header = Some(crumb.clone());
                    self.context_shown = false;
                    self.last_crumb = crumb;
                }
                if let Some(reason) = reason
                    .filter(|r| state == TaskState::Running && self.last_error.as_ref() != Some(r))
                {
                    self.end_text()?;
                    writeln!(self.out, "     ({reason})")?;
                }
            }
            TaskEvent::Handoff { text, .. } | TaskEvent::Subagent { text, .. } => {
                self.end_text()?;
                writeln!(self.out, "  {text}")?;
            }
            // A terminal run does not show the context's fill.
            TaskEvent::Usage { .. } => {}
            TaskEvent::Countdown { seconds_left, .. } => {
                self.end_text()?;
                writeln!(
                    self.out,
                    "  ⏳ the agent stopped early; auto-continuing in {seconds_left}s"
                )?;
            }
            TaskEvent::Finished { outcome, summary } => {
                self.header()?;
                self.end_text()?;
                if outcome != Outcome::Complete {
                    writeln!(self.out, "task {outcome:?}: {summary}")?;
                }
            }
            TaskEvent::Approval(_) => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(kind: OutputKind, text: &str) -> TaskEvent {
        TaskEvent::Output {
            kind,
            text: text.to_owned(),
            tool_call_id: None,
            tool: None,
            input: None,
            is_error: None,
        }
    }

    #[test]
    fn the_same_hook_configuration_error_is_shown_once_whatever_its_event() {
        let mut out = Vec::new();
        let mut p = Printer::new(&mut out);
        let at = |event: &str| {
            format!("{event} hook `./nope.sh` could not run (command not found, exit 127): sh: 1: ./nope.sh: not found")
        };
        p.show(output(
            OutputKind::Error,
            &format!("{CONFIG_ERROR}{}", at("SessionStart")),
        ))
        .unwrap();
        p.show(output(
            OutputKind::Error,
            &format!("{CONFIG_ERROR}{}", at("PreToolUse")),
        ))
        .unwrap();
        p.config_error(&at("Stop")).unwrap();
        // Another hook's error is another error.
        p.config_error("Stop hook `./other.sh` could not run (command not found, exit 127)")
            .unwrap();
        // Other errors are never held back.
        p.show(output(OutputKind::Error, "task failed: no key"))
            .unwrap();
        p.show(output(OutputKind::Error, "task failed: no key"))
            .unwrap();
        let shown = String::from_utf8(out).unwrap();
        assert_eq!(shown.matches("./nope.sh").count(), 2, "{shown}");
        assert_eq!(
            shown.matches("hook configuration error").count(),
            2,
            "{shown}"
        );
        assert!(shown.contains("./other.sh"), "{shown}");
        assert_eq!(shown.matches("task failed: no key").count(), 2, "{shown}");
    }

    #[test]
    fn a_handoff_is_a_line_of_its_own_after_the_agents_text() {
        let mut out = Vec::new();
        let mut p = Printer::new(&mut out);
        p.show(output(OutputKind::AssistantDelta, "Planned."))
            .unwrap();
        p.show(TaskEvent::Handoff {
            agent: "developer".to_owned(),
            text: "── handoff: planner → developer ──".to_owned(),
        })
        .unwrap();
        p.show(output(OutputKind::AssistantDelta, "Coding."))
            .unwrap();
        let shown = String::from_utf8(out).unwrap();
        assert_eq!(
            shown,
            "  🤖 Planned.\n  ── handoff: planner → developer ──\n  🤖 Coding."
        );
    }

    #[test]
    fn a_subagents_lines_start_with_its_name_and_skip_its_streamed_text() {
        let mut out = Vec::new();
        let mut p = Printer::new(&mut out);
        p.show(output(OutputKind::AssistantDelta, "Delegating."))
            .unwrap();
        let status = || TaskEvent::Status {
            state: TaskState::Running,
            breadcrumb: Vec::new(),
            text: String::new(),
            reason: None,
            workflow: None,
            breadcrumb_text: String::new(),
            phase_index: None,
            phases_done: None,
            subagent: None,
        };
        p.subagent("frontend", status()).unwrap();
        p.subagent("frontend", status()).unwrap();
        p.subagent("frontend", output(OutputKind::AssistantDelta, "hidden"))
            .unwrap();
        p.subagent("frontend", output(OutputKind::ToolCall, "Write ui.txt"))
            .unwrap();
        p.subagent(
            "frontend",
            TaskEvent::Finished {
                outcome: Outcome::Complete,
                summary: "Wrote ui.txt.\nMore.".to_owned(),
            },
        )
        .unwrap();
        p.subagent(
            "ghost",
            TaskEvent::Finished {
                outcome: Outcome::Failed,
                summary: "script exhausted".to_owned(),
            },
        )
        .unwrap();
        let shown = String::from_utf8(out).unwrap();
        assert_eq!(
            shown,
            "  🤖 Delegating.\n  [frontend] ⤷ started\n  [frontend] 🔧 Write ui.txt\n  [frontend] ✓ done: Wrote ui.txt. (+1 more line)\n  [ghost] ✗ failed: script exhausted\n"
        );
    }
}

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
        match line.trim() {
            "a" | "allow" => return Ok(ApprovalAnswer::AllowOnce),
            "w" | "always" => return Ok(ApprovalAnswer::AllowAlways),
            "d" | "deny" | "" => return Ok(ApprovalAnswer::RejectOnce),
            "l" => return Ok(ApprovalAnswer::RejectAlways),
            _ => {}
        }
    }
}

/// Renders events as terminal lines.
pub struct Printer<'a> {
    pub out: &'a mut dyn Write,
    in_text: bool,
    last_crumb: String,
    /// A new phase's header, shown before the next line that belongs to the new phase (the
    /// result of the `workflow_step` call that moved still belongs to the old one).
    pending_header: Option<String>,
    /// Whether the current phase's context injection was shown (once per phase is enough).
    context_shown: bool,
    /// The last error line shown: a status whose reason says the same (a hook configuration
    /// error is both) is not shown twice.
    last_error: Option<String>,
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
        }
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
                        writeln!(self.out, "  ⚠️  {text}")?;
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
            TaskEvent::Handoff { text, .. } => {
                self.end_text()?;
                writeln!(self.out, "  {text}")?;
            }
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

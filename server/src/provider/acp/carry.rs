//! A write the user approved that the agent's own process cannot make. Current agents write with
//! their own hands (claude-agent-acp's Write and Edit, not `fs/write_text_file`), and in a phase
//! that forbids writing the agent's process has the workspace read-only, so the write the user
//! approved past the gate fails at the kernel. rawko then makes it itself, as it makes an approved
//! `fs/write_text_file` (its own confined Write or Edit, with exactly the approved input), and
//! tells the agent at once: the prompt in flight is cancelled and a new one says what rawko did.
//! An agent that writes the approved path through rawko (`fs/write_text_file`, Gemini CLI) uses
//! the approval there, and nothing is made twice. A command (Bash) is never run again: it may have
//! done part of its work.

use serde_json::Value;

use super::AcpAgentProvider;
use crate::provider::{Runner, ToolCall, ToolResult, Turn};
use crate::sandbox::WorkspaceAccess;

/// The agent's tools whose failed write rawko makes in their place: rawko's own tools of those
/// names take the same input.
const CARRIED: &[&str] = &["Write", "Edit", "MultiEdit"];

/// What an agent's tool says when the kernel refused it a write.
fn refused_by_the_kernel(content: &str) -> bool {
    let content = content.to_lowercase();
    [
        "eacces",
        "permission denied",
        "read-only file system",
        "erofs",
    ]
    .iter()
    .any(|w| content.contains(w))
}

impl AcpAgentProvider {
    /// The user approved the agent's `call` (a permission request) past the gate: kept when it
    /// is a write the agent's process cannot make.
    pub(super) fn approved_own(&mut self, call: &ToolCall) {
        let read_only = self
            .agent
            .as_ref()
            .is_some_and(|a| a.access == Some(WorkspaceAccess::ReadOnly));
        if read_only && CARRIED.contains(&call.name.as_str()) {
            self.approved_own.insert(call.id.clone(), call.clone());
        }
    }

    /// The agent's tool call `id` failed with `content`: when it was an approved write the kernel
    /// refused it, and its approval was not used through rawko, rawko makes it (a call it runs
    /// without asking again).
    pub(super) fn carry(&mut self, id: &str, content: &str, text: &mut String) -> Option<Turn> {
        let call = self.approved_own.remove(id)?;
        if !refused_by_the_kernel(content) {
            return None;
        }
        let path = call.input.get("file_path").and_then(Value::as_str)?;
        // The approval is used now (or was, by an `fs/write_text_file` of the path).
        if self
            .grants
            .write(std::path::Path::new(path), &self.command.cwd)
            != Runner::RawkoApproved
        {
            return None;
        }
        let carry_id = self.next_id("carry");
        self.pending.insert(
            carry_id.clone(),
            super::answer::Pending::Carry(call.clone()),
        );
        let made = ToolCall {
            id: carry_id,
            name: call.name,
            input: call.input,
        };
        Some(Self::call_turn(
            std::mem::take(text),
            made,
            Runner::RawkoApproved,
        ))
    }

    /// What rawko made for the agent's `call`: told to the agent at once.
    pub(super) fn carried(&mut self, call: &ToolCall, result: &ToolResult) {
        let path = call
            .input
            .get("file_path")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let what = format!("{} of {path}", call.name);
        self.carried.push(if result.is_error {
            format!(
                "[rawko] Your {what} failed: your own process cannot write the workspace in this phase. The user approved it, so rawko tried to make it for you, and could not: {}",
                crate::clip::clip_bytes(&result.content, 2000)
            )
        } else {
            format!(
                "[rawko] Your {what} failed because your own process cannot write the workspace in this phase. The user approved it, so rawko made it for you ({}). Do not make it again; go on from there.",
                crate::clip::clip_bytes(&result.content, 2000)
            )
        });
    }
}

#[cfg(test)]
mod tests {
    use super::refused_by_the_kernel;

    #[test]
    fn a_write_the_kernel_refused_is_told_apart() {
        assert!(refused_by_the_kernel(
            "```\nEACCES: permission denied, open '/w/plan.txt.tmp.1'\n```"
        ));
        assert!(refused_by_the_kernel("Read-only file system (os error 30)"));
        assert!(!refused_by_the_kernel(
            "File has not been read yet. Read it first before writing to it."
        ));
    }
}

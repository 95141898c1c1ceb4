//! The tools served by the client: an editor that reads and writes files and runs commands for
//! rawko (ACP's `fs/read_text_file`, `fs/write_text_file` and `terminal/*`), so the editor's
//! unsaved buffers are what Read sees, its own diff view shows writes, and a Bash command runs
//! where the user watches it.
//!
//! The gate does not change: a call reaches here only after the phase (or the user) allowed it,
//! exactly as it reaches the local tools. Confinement does not change either: every path is
//! confined to the workspace first ([`confine`], the same check and the same messages as the local
//! tools), and the client is asked for the real path inside. What rawko cannot do here is the
//! handle-based open of invariant 7: the client does its I/O by path, so the check stands just
//! before the request, and a Read is checked again after the answer (a path that moved out
//! meanwhile gives nothing to the model). A Bash command runs as rawko's own does: through rawko's
//! helper (`rawko __exec`) with the task's Landlock rules, without rawko's keys in its
//! environment, killed at its time limit; the client only hosts the process and shows it.

use std::future::Future;
use std::io::{self, Cursor, ErrorKind};
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use super::confine::{confine, led_outside, open_failed, Confined};
use super::content::{
    apply_edits, create_dirs, edited, looks_binary, not_a_regular_file, read_lines, Replacement,
};
use super::{shown, ToolContext, ToolOutput};
use crate::hooks::envfile::EnvChange;
use crate::sandbox::{self, WorkspaceAccess, LEFT_RUNNING};

/// A boxed future the client's methods answer with.
pub type ClientFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// What a client offers to do for rawko's tools (what it said it can do when it connected).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientOffers {
    /// Read serves files through the client (`fs/read_text_file`).
    pub read: bool,
    /// Write serves files through the client (`fs/write_text_file`); Edit and MultiEdit need both.
    pub write: bool,
    /// Bash runs in the client's terminal (`terminal/create`).
    pub terminal: bool,
}

/// A command for the client's terminal: the program and its arguments as rawko would start them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalCommand {
    /// The tool call the command belongs to, so the client can show the terminal in it.
    pub call_id: Option<String>,
    pub program: String,
    pub args: Vec<String>,
    /// Variables set for the command (beyond the client's own environment).
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// The most output bytes the client keeps (it drops the oldest beyond that).
    pub output_limit: u64,
    /// How long the command may run before it is killed.
    pub timeout: Duration,
}

/// How a command in the client's terminal ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TerminalRun {
    pub output: String,
    /// The client dropped output beyond its limit.
    pub truncated: bool,
    pub exit_code: Option<u32>,
    pub signal: Option<String>,
    /// The command reached its time limit and was killed.
    pub timed_out: bool,
}

/// Why a request to the client failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientError {
    /// The client answered with an error (its message), or went away.
    Answered(String),
    /// No answer came within the request's bound (the reason in the user's words, e.g. "the
    /// editor did not answer fs/read_text_file within 30 s").
    NoAnswer(String),
}

impl ClientError {
    /// What the agent is told after "cannot read/write …: ".
    fn told(&self) -> String {
        match self {
            ClientError::Answered(e) => format!("the editor answered: {e}"),
            ClientError::NoAnswer(why) => why.clone(),
        }
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Answered(text) | ClientError::NoAnswer(text) => f.write_str(text),
        }
    }
}

/// A client that does file and process I/O for rawko's tools. Every request has a bound: no
/// answer within it is [`ClientError::NoAnswer`], and the tool call fails with that reason.
pub trait ClientIo: Send + Sync + std::fmt::Debug {
    fn offers(&self) -> ClientOffers;
    fn read_text_file(&self, path: PathBuf) -> ClientFuture<Result<String, ClientError>>;
    fn write_text_file(
        &self,
        path: PathBuf,
        content: String,
    ) -> ClientFuture<Result<(), ClientError>>;
    /// Runs `command` in a terminal of the client until it exits or its time limit (then it is
    /// killed), and answers its output and exit status. Dropping the future kills the command and
    /// releases the terminal.
    fn run_in_terminal(
        &self,
        command: TerminalCommand,
    ) -> ClientFuture<Result<TerminalRun, ClientError>>;
}

/// The look rawko takes at `confined` before it asks the client: a directory or a special file is
/// refused with the local tools' words, and a path that leads out on the way is refused as an
/// escape. `Ok(false)` when nothing is there (the client may still have an unsaved buffer).
fn look(ctx: &ToolContext, given: &str, confined: &Confined) -> Result<bool, String> {
    match ctx.root.metadata(confined.beneath()) {
        Ok(metadata) => not_a_regular_file(&metadata, given).map(|()| true),
        Err(error) if led_outside(&error) => Err(open_failed(ctx, given, &error, |e| {
            format!("cannot check \"{given}\": {e}")
        })),
        Err(error) if error.kind() == ErrorKind::NotFound => Ok(false),
        Err(error) => Err(format!("cannot check \"{given}\": {error}")),
    }
}

/// The text the client has for the file `confined` names (after rawko's [`look`] at it). A
/// file that is not on disk is asked for too (the editor may hold an unsaved buffer of it).
async fn read_confined(
    client: &dyn ClientIo,
    ctx: &ToolContext,
    given: &str,
    confined: &Confined,
) -> Result<String, String> {
    let exists = look(ctx, given, confined)?;
    client
        .read_text_file(confined.real.clone())
        .await
        .map_err(|e| match e {
            // An editor that has no buffer of a file that is not on disk answers an error.
            ClientError::Answered(_) if !exists => format!("file \"{given}\" does not exist"),
            e => format!("cannot read \"{given}\": {}", e.told()),
        })
}

/// Whether `given` still leads where it did when it was confined (the client did its I/O by
/// path meanwhile).
fn still_inside(ctx: &ToolContext, given: &str, confined: &Confined) -> bool {
    confine(ctx, given).is_ok_and(|c| c.real == confined.real)
}

/// Read through the client.
pub(super) async fn read(
    client: &dyn ClientIo,
    ctx: &ToolContext,
    given: &str,
    offset: usize,
    limit: Option<usize>,
) -> Result<String, String> {
    let confined = confine(ctx, given)?;
    let text = read_confined(client, ctx, given, &confined).await?;
    // Checked again: what the editor read by path must still be the file inside.
    if !still_inside(ctx, given, &confined) {
        return Err(format!(
            "\"{given}\" changed where it leads while it was read; read it again"
        ));
    }
    if looks_binary(text.as_bytes()) {
        return Err(format!("\"{given}\" is a binary file, not text"));
    }
    let reading = |error: &io::Error| format!("cannot read \"{given}\": {error}");
    read_lines(
        Cursor::new(text.as_bytes()),
        given,
        offset,
        limit,
        ctx.output_cap,
        &reading,
    )
}

/// Write through the client; the directories above the file are made here, beneath the workspace.
pub(super) async fn write(
    client: &dyn ClientIo,
    ctx: &ToolContext,
    given: &str,
    content: &str,
) -> Result<String, String> {
    let confined = confine(ctx, given)?;
    look(ctx, given, &confined).map_err(|e| {
        // A Write's words for a directory, as the local Write says it.
        e.strip_suffix("; Glob lists what is in it")
            .map_or(e.clone(), str::to_owned)
    })?;
    if let Some(parent) = confined
        .relative
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        create_dirs(ctx, parent).map_err(|error| {
            open_failed(ctx, given, &error, |error| {
                format!("cannot create the directories for \"{given}\": {error}")
            })
        })?;
    }
    client
        .write_text_file(confined.real.clone(), content.to_owned())
        .await
        .map_err(|e| format!("cannot write \"{given}\": {}", e.told()))?;
    Ok(format!(
        "wrote {} bytes to {}",
        content.len(),
        shown(ctx, &confined.real)
    ))
}

/// Edit and MultiEdit through the client: the text as the editor has it, edited, written back.
pub(super) async fn edit(
    client: &dyn ClientIo,
    ctx: &ToolContext,
    given: &str,
    edits: &[Replacement],
) -> Result<String, String> {
    let confined = confine(ctx, given)?;
    let text = read_confined(client, ctx, given, &confined).await?;
    let (text, total) = apply_edits(text, given, edits)?;
    if !still_inside(ctx, given, &confined) {
        return Err(format!(
            "\"{given}\" changed where it leads while it was edited; no edit was made"
        ));
    }
    client
        .write_text_file(confined.real.clone(), text)
        .await
        .map_err(|e| format!("cannot write \"{given}\": {}", e.told()))?;
    Ok(edited(total, edits.len(), &shown(ctx, &confined.real)))
}

/// The environment of a Bash command in the client's terminal: what to set (the task's changes,
/// its `TMPDIR`) and what to take out of the client's own (rawko's keys, what a hook unset).
fn environment(ctx: &ToolContext) -> (Vec<(String, String)>, Vec<String>) {
    let mut last: Vec<(String, Option<String>)> = Vec::new();
    for change in &ctx.bash_env.0 {
        let (name, value) = match change {
            EnvChange::Set(name, value) => (name, Some(value.clone())),
            EnvChange::Unset(name) => (name, None),
        };
        last.retain(|(n, _)| n != name);
        last.push((name.clone(), value));
    }
    let mut set = Vec::new();
    let mut unset: Vec<String> = ctx.env_remove.clone();
    for (name, value) in last {
        if ctx.env_remove.contains(&name) {
            continue;
        }
        match value {
            Some(value) => set.push((name, value)),
            None => unset.push(name),
        }
    }
    if let Some(dir) = &ctx.sandbox.temp_dir {
        set.push(("TMPDIR".to_owned(), dir.to_string_lossy().into_owned()));
    }
    (set, unset)
}

/// Bash in the client's terminal.
pub(super) async fn bash(
    client: &dyn ClientIo,
    ctx: &ToolContext,
    command: &str,
    timeout: Duration,
    access: WorkspaceAccess,
    call_id: Option<&str>,
) -> ToolOutput {
    let rules = match ctx.sandbox.plan(&ctx.workspace, access) {
        Ok(rules) => rules,
        Err(refusal) => return ToolOutput::error(refusal),
    };
    let confined_read_only = rules.is_some() && access == WorkspaceAccess::ReadOnly;
    if let Some(dir) = &ctx.sandbox.temp_dir {
        if let Err(error) = sandbox::make_temp_dir(dir) {
            return ToolOutput::error(format!(
                "cannot make the task's temporary directory {}: {error}",
                dir.display()
            ));
        }
    }
    let (env, unset) = environment(ctx);
    let (program, args) =
        match sandbox::shell_argv(command, rules, super::GRACE, super::LINGER, &unset) {
            Ok(argv) => argv,
            Err(why) => return ToolOutput::error(why),
        };
    let run = client
        .run_in_terminal(TerminalCommand {
            call_id: call_id.map(str::to_owned),
            program,
            args,
            env,
            cwd: ctx.workspace.clone(),
            // Room for the cap and the helper's last words.
            output_limit: (ctx.output_cap + LEFT_RUNNING.len() + 1024) as u64,
            timeout,
        })
        .await;
    match run {
        Ok(run) => report(ctx, run, timeout, confined_read_only),
        Err(e) => ToolOutput::error(format!(
            "cannot run the command in the editor's terminal: {e}"
        )),
    }
}

/// What the model is told of a command run in the client's terminal: its output (stdout and
/// stderr together, as a terminal shows them) and how it ended, in the words of the local Bash.
fn report(ctx: &ToolContext, run: TerminalRun, timeout: Duration, read_only: bool) -> ToolOutput {
    let marker = String::from_utf8_lossy(LEFT_RUNNING).into_owned();
    let mut output = run.output;
    let left_behind = match output.rfind(&marker) {
        Some(at) => {
            output.replace_range(at..at + marker.len(), "");
            true
        }
        None => false,
    };
    let mut content = String::new();
    if run.truncated {
        content.push_str("[the start of the output was dropped by the editor's terminal]\n");
    }
    let cap = ctx.output_cap;
    if output.len() > cap {
        let kept = crate::clip::prefix_bytes(&output, cap);
        content.push_str(kept);
        if !content.ends_with('\n') {
            content.push('\n');
        }
        content.push_str(&format!(
            "[output cut: showing the first {} of {} bytes]\n",
            kept.len(),
            output.len()
        ));
    } else if !output.is_empty() {
        content.push_str(&output);
        if !content.ends_with('\n') {
            content.push('\n');
        }
    }
    if left_behind {
        content.push_str("[processes the command left running were ended]\n");
    }
    let (status_line, is_error) = if run.timed_out {
        (
            format!(
                "timed out after {} s; the command and every process it started were killed",
                timeout.as_secs_f64()
            ),
            true,
        )
    } else {
        match (run.exit_code, &run.signal) {
            (Some(code), _) => (format!("exit code {code}"), code != 0),
            (None, Some(signal)) => (format!("killed by {signal}"), true),
            (None, None) => ("ended without an exit code".to_owned(), true),
        }
    };
    if read_only && is_error {
        content.push_str(
            "[the workspace is read-only to this command: the phase does not allow writing]\n",
        );
    }
    content.push_str(&status_line);
    ToolOutput { content, is_error }
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;

//! Bash: runs `sh -c COMMAND` in the workspace, in a process group of its own, with rawko's
//! environment and the changes SessionStart hooks asked for (`CLAUDE_ENV_FILE`, read by
//! crate::hooks::envfile).
//!
//! It runs through rawko's helper (crate::sandbox): confined by Landlock to the workspace (read-only
//! in a phase that does not allow writing) and the task's temporary directory, its `TMPDIR`; and
//! everything it starts, in its group or not (`setsid`, a double fork), is ended when the command
//! is done, one way or another: on timeout (SIGTERM, then SIGKILL after a short grace), when the
//! shell exits and leaves processes behind, and when the future running it is dropped. So nothing
//! an agent starts outlives its tool call. (A process with no helper, a unit test, runs `sh`
//! directly in a process group of its own, which is all that is ended then.)
//!
//! Output: stdout, then stderr under a `--- stderr ---` line, then the exit code; the two streams
//! share the output cap.

use std::future::Future;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Child;
use tokio::time::{sleep_until, Instant};

use super::{Args, ToolContext, ToolOutput, GRACE, LINGER, MAX_BASH_TIMEOUT_MS};
use crate::hooks::envfile::EnvChange;
use crate::sandbox::{self, Supervised, Tail, WorkspaceAccess};

pub(super) async fn bash(
    input: &Value,
    ctx: &ToolContext,
    access: WorkspaceAccess,
    call_id: Option<&str>,
) -> ToolOutput {
    let parsed = (|| {
        let args = Args::new("Bash", input)?;
        let command = args.str(&["command"])?;
        // Claude Code's unit: milliseconds. (`description` is for people; the command runs the same.)
        let _ = args.opt_str(&["description"])?;
        let timeout = match args.opt_number(&["timeout"])? {
            None => ctx.bash_timeout,
            Some(ms) if ms > 0.0 && ms <= MAX_BASH_TIMEOUT_MS as f64 => {
                Duration::from_secs_f64(ms / 1000.0)
            }
            Some(ms) => {
                return Err(format!(
                    "Bash: \"timeout\" is {ms}; it is in milliseconds and must be more than 0 and at most {MAX_BASH_TIMEOUT_MS} (10 minutes)"
                ))
            }
        };
        Ok((command, timeout))
    })();
    match parsed {
        Ok((command, timeout)) => match ctx.client.as_ref().filter(|c| c.offers().terminal) {
            Some(client) => {
                super::client::bash(client.as_ref(), ctx, command, timeout, access, call_id).await
            }
            None => run_command(command, timeout, ctx, access).await,
        },
        Err(message) => ToolOutput::error(message),
    }
}

/// What is known so far about the running command.
#[derive(Default)]
struct Progress {
    status: Option<io::Result<ExitStatus>>,
    output_closed: bool,
}

/// Bytes read from one stream: the first `cap` of them, and how many there were in all.
#[derive(Default)]
struct Captured {
    kept: Vec<u8>,
    total: usize,
    tail: Tail,
}

async fn capture(stream: Option<impl AsyncRead + Unpin>, cap: usize, into: &mut Captured) {
    let Some(mut stream) = stream else {
        return;
    };
    let mut buffer = [0u8; 8192];
    loop {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let room = cap.saturating_sub(into.kept.len());
                into.kept.extend_from_slice(&buffer[..n.min(room)]);
                into.total += n;
                into.tail.push(&buffer[..n]);
            }
        }
    }
}

/// Waits until the shell has exited and its output is closed, or until `until`, or (with
/// `leader_only`) until the shell alone has exited. True if the wait was met before `until`.
async fn settle(
    child: &mut Child,
    reading: &mut Pin<&mut impl Future<Output = ()>>,
    progress: &mut Progress,
    until: Instant,
    leader_only: bool,
) -> bool {
    loop {
        if progress.status.is_some() && (leader_only || progress.output_closed) {
            return true;
        }
        tokio::select! {
            status = child.wait(), if progress.status.is_none() => progress.status = Some(status),
            () = reading.as_mut(), if !progress.output_closed => progress.output_closed = true,
            () = sleep_until(until) => return false,
        }
    }
}

enum Ending {
    Exited(ExitStatus),
    WaitFailed(io::Error),
    TimedOut,
}

async fn run_command(
    command: &str,
    timeout: Duration,
    ctx: &ToolContext,
    access: WorkspaceAccess,
) -> ToolOutput {
    let rules = match ctx.sandbox.plan(&ctx.workspace, access) {
        Ok(rules) => rules,
        Err(refusal) => return ToolOutput::error(refusal),
    };
    let confined_read_only = rules.is_some() && access == WorkspaceAccess::ReadOnly;
    let (mut shell, helper) = sandbox::shell_command(command, rules, GRACE, LINGER);
    for change in &ctx.bash_env.0 {
        match change {
            EnvChange::Set(name, value) => shell.env(name, value),
            EnvChange::Unset(name) => shell.env_remove(name),
        };
    }
    // The keys rawko holds are not the agent's: `env` in a Bash call must not show them.
    for name in &ctx.env_remove {
        shell.env_remove(name);
    }
    if let Some(dir) = &ctx.sandbox.temp_dir {
        if let Err(error) = sandbox::make_temp_dir(dir) {
            return ToolOutput::error(format!(
                "cannot make the task's temporary directory {}: {error}",
                dir.display()
            ));
        }
        // The one temporary directory the sandbox lets Bash write.
        shell.env("TMPDIR", dir);
    }
    shell
        .current_dir(&ctx.workspace)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut process = match Supervised::spawn(shell, helper, GRACE) {
        Ok(process) => process,
        Err(error) => return ToolOutput::error(format!("cannot start sh: {error}")),
    };
    let started = Instant::now();
    let child = process.child();
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let (mut out, mut err) = (Captured::default(), Captured::default());
    let mut left_behind = false;
    // The helper gives what the shell left behind a moment before it exits, so it gets that
    // moment beyond the time limit: a command that ends in time never times out because of it.
    let deadline = started + timeout + if helper { LINGER } else { Duration::ZERO };
    let ending = {
        let cap = ctx.output_cap;
        let reading = async {
            tokio::join!(
                capture(stdout, cap, &mut out),
                capture(stderr, cap, &mut err)
            );
        };
        tokio::pin!(reading);
        let mut progress = Progress::default();
        let finished = settle(process.child(), &mut reading, &mut progress, deadline, true).await;
        if finished && helper {
            // The helper has ended everything below it; its output closes with it.
            settle(
                process.child(),
                &mut reading,
                &mut progress,
                Instant::now() + GRACE,
                false,
            )
            .await;
        } else if finished {
            // The shell is gone; give what it left behind a moment to finish writing.
            if !settle(
                process.child(),
                &mut reading,
                &mut progress,
                Instant::now() + LINGER,
                false,
            )
            .await
            {
                left_behind = true;
                end_group(&mut process, &mut reading, &mut progress).await;
            }
        } else {
            end_group(&mut process, &mut reading, &mut progress).await;
        }
        match progress.status {
            Some(Ok(status)) if finished => Ending::Exited(status),
            Some(Err(error)) if finished => Ending::WaitFailed(error),
            _ => Ending::TimedOut,
        }
    };
    drop(process);
    if helper && err.tail.take_marker(&mut err.kept, &mut err.total) {
        left_behind = true;
    }
    report(
        ctx,
        &out,
        &err,
        &ending,
        timeout,
        left_behind,
        confined_read_only,
    )
}

/// SIGTERM (to the helper, which passes it on, or to the group), then SIGKILL if it is not done
/// within the grace.
async fn end_group(
    process: &mut Supervised,
    reading: &mut Pin<&mut impl Future<Output = ()>>,
    progress: &mut Progress,
) {
    process.terminate();
    let grace = process.grace();
    if settle(
        process.child(),
        reading,
        progress,
        Instant::now() + grace,
        false,
    )
    .await
    {
        return;
    }
    process.kill();
    // A process that left the group may still hold the output open: stop waiting for it.
    settle(
        process.child(),
        reading,
        progress,
        Instant::now() + GRACE,
        false,
    )
    .await;
}

fn report(
    ctx: &ToolContext,
    out: &Captured,
    err: &Captured,
    ending: &Ending,
    timeout: Duration,
    left_behind: bool,
    read_only: bool,
) -> ToolOutput {
    let cap = ctx.output_cap;
    // The streams share the cap; stderr keeps at least half of it when both are long.
    let (mut out_keep, mut err_keep) = (out.kept.len(), err.kept.len());
    if out_keep + err_keep > cap {
        err_keep = err_keep.min((cap / 2).max(cap.saturating_sub(out_keep)));
        out_keep = out_keep.min(cap - err_keep);
    }
    let mut content = String::new();
    append_stream(&mut content, out, out_keep, "stdout");
    if err.total > 0 {
        content.push_str("--- stderr ---\n");
        append_stream(&mut content, err, err_keep, "stderr");
    }
    if left_behind {
        content.push_str("[processes the command left running were ended]\n");
    }
    let (status_line, is_error) = match ending {
        Ending::Exited(status) => match (status.code(), status.signal()) {
            (Some(code), _) => (format!("exit code {code}"), code != 0),
            (None, Some(signal)) => (format!("killed by {}", signal_name(signal)), true),
            (None, None) => ("ended without an exit code".to_owned(), true),
        },
        Ending::WaitFailed(error) => (format!("cannot wait for the command: {error}"), true),
        Ending::TimedOut => (
            format!(
                "timed out after {} s; the command and every process it started were killed",
                timeout.as_secs_f64()
            ),
            true,
        ),
    };
    if read_only && is_error {
        content.push_str(
            "[the workspace is read-only to this command: the phase does not allow writing]\n",
        );
    }
    content.push_str(&status_line);
    ToolOutput { content, is_error }
}

fn append_stream(content: &mut String, stream: &Captured, keep: usize, name: &str) {
    if stream.total == 0 {
        return;
    }
    content.push_str(&String::from_utf8_lossy(&stream.kept[..keep]));
    if !content.ends_with('\n') {
        content.push('\n');
    }
    if keep < stream.total {
        content.push_str(&format!(
            "[{name} cut: showing the first {keep} of {} bytes]\n",
            stream.total
        ));
    }
}

fn signal_name(signal: i32) -> String {
    match Signal::try_from(signal) {
        Ok(known) => known.as_str().to_owned(),
        Err(_) => format!("signal {signal}"),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::{Duration, Instant};

    use serde_json::json;

    use super::super::test_support::workspace;
    use super::super::{run, ToolOutput};

    /// Whether process `pid` is gone; a zombie nobody reaped counts as gone.
    fn is_gone(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            // The state follows the command name in parentheses, e.g. "123 (sleep) Z ...".
            Ok(stat) => stat
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
        }
    }

    /// Waits up to 5 s for `pid` to be gone.
    async fn gone_soon(pid: i32) -> bool {
        for _ in 0..50 {
            if is_gone(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    /// Waits (up to 10 s) for a file holding a process id followed by a newline.
    async fn pid_in(file: &Path) -> i32 {
        for _ in 0..100 {
            if let Ok(text) = std::fs::read_to_string(file) {
                if let Some(pid) = text.strip_suffix('\n').and_then(|t| t.parse().ok()) {
                    return pid;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no process id in {}", file.display());
    }

    #[tokio::test]
    async fn bash_reports_stdout_then_stderr_and_the_exit_code() {
        let (_dir, ctx) = workspace();
        let out = run(
            "Bash",
            &json!({"command": "echo out; echo err >&2; echo more"}),
            &ctx,
        )
        .await;
        assert_eq!(
            out,
            ToolOutput::ok("out\nmore\n--- stderr ---\nerr\nexit code 0")
        );
    }

    /// The changes a SessionStart hook asked for apply: set and unset, in order.
    #[tokio::test]
    async fn bash_gets_the_tasks_environment_changes() {
        use crate::hooks::envfile::EnvChange;
        let (_dir, mut ctx) = workspace();
        ctx.bash_env = super::super::BashEnv(vec![
            EnvChange::Set("RAWKO_TEST_FOO".into(), "it's $(not run)".into()),
            EnvChange::Set("HOME".into(), "/nowhere".into()),
            EnvChange::Unset("HOME".into()),
        ]);
        let out = run(
            "Bash",
            &json!({"command": "echo \"$RAWKO_TEST_FOO|${HOME-unset}\""}),
            &ctx,
        )
        .await;
        assert_eq!(out, ToolOutput::ok("it's $(not run)|unset\nexit code 0"));
        assert_eq!(
            format!("{:?}", ctx.bash_env),
            "BashEnv([\"RAWKO_TEST_FOO\", \"HOME\", \"-HOME\"], values redacted)"
        );
    }

    #[tokio::test]
    async fn bash_runs_in_the_workspace_with_no_input() {
        let (dir, ctx) = workspace();
        std::fs::write(dir.path().join("marker.txt"), "").unwrap();
        let out = run(
            "Bash",
            &json!({"command": "ls; readlink /proc/self/fd/0; pwd -P"}),
            &ctx,
        )
        .await;
        assert_eq!(
            out.content,
            format!(
                "marker.txt\n/dev/null\n{}\nexit code 0",
                ctx.workspace.display()
            )
        );
    }

    #[tokio::test]
    async fn bash_nonzero_exit_is_an_error() {
        let (_dir, ctx) = workspace();
        let out = run(
            "Bash",
            &json!({"command": "echo failing >&2; exit 3"}),
            &ctx,
        )
        .await;
        assert!(out.is_error);
        assert_eq!(out.content, "--- stderr ---\nfailing\nexit code 3");
        let out = run("Bash", &json!({"command": "kill -9 $$"}), &ctx).await;
        assert!(out.is_error);
        assert_eq!(out.content, "killed by SIGKILL");
    }

    #[tokio::test]
    async fn bash_output_is_capped() {
        let (_dir, mut ctx) = workspace();
        ctx.output_cap = 1000;
        let out = run(
            "Bash",
            &json!({"command": "yes abcdefghi | head -c 100000; echo oops >&2"}),
            &ctx,
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content
                .contains("[stdout cut: showing the first 995 of 100000 bytes]"),
            "{}",
            out.content
        );
        assert!(
            out.content.ends_with("--- stderr ---\noops\nexit code 0"),
            "{}",
            out.content
        );
        assert!(out.content.len() < 1200, "{}", out.content.len());

        // When both streams are long, stderr keeps half of the cap.
        let out = run(
            "Bash",
            &json!({"command": "yes out | head -c 5000; yes err | head -c 5000 >&2"}),
            &ctx,
        )
        .await;
        assert!(
            out.content
                .contains("[stdout cut: showing the first 500 of 5000 bytes]"),
            "{}",
            out.content
        );
        assert!(
            out.content
                .contains("[stderr cut: showing the first 500 of 5000 bytes]"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn bash_timeout_kills_the_command_and_says_so() {
        let (_dir, ctx) = workspace();
        let started = Instant::now();
        let out = run(
            "Bash",
            &json!({"command": "echo started; sleep 5", "timeout": 1000}),
            &ctx,
        )
        .await;
        let elapsed = started.elapsed();
        assert!(elapsed < Duration::from_secs(4), "took {elapsed:?}");
        assert!(out.is_error);
        assert_eq!(
            out.content,
            "started\ntimed out after 1 s; the command and every process it started were killed"
        );
    }

    #[tokio::test]
    async fn bash_timeout_kills_background_children_too() {
        let (dir, ctx) = workspace();
        let started = Instant::now();
        let out = run(
            "Bash",
            &json!({"command": "sleep 30 & echo $! > pid; wait", "timeout": 1000}),
            &ctx,
        )
        .await;
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(out.content.contains("timed out"), "{}", out.content);
        let pid = pid_in(&dir.path().join("pid")).await;
        assert!(gone_soon(pid).await, "background sleep {pid} survived");
    }

    #[tokio::test]
    async fn bash_ends_processes_left_behind_when_the_shell_exits() {
        let (dir, ctx) = workspace();
        let started = Instant::now();
        let out = run(
            "Bash",
            &json!({"command": "sleep 30 & echo $! > pid; echo done"}),
            &ctx,
        )
        .await;
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(
            out,
            ToolOutput::ok("done\n[processes the command left running were ended]\nexit code 0")
        );
        let pid = pid_in(&dir.path().join("pid")).await;
        assert!(gone_soon(pid).await, "background sleep {pid} survived");
    }

    #[tokio::test]
    async fn bash_cancelled_kills_the_process_group() {
        let (dir, ctx) = workspace();
        let pid_file = dir.path().join("pid");
        let input = json!({"command": "sleep 30 & echo $! > pid; wait"});
        tokio::select! {
            out = run("Bash", &input, &ctx) => panic!("the command finished: {out:?}"),
            _ = pid_in(&pid_file) => {}
        }
        // The run future was dropped when select! returned.
        let pid = pid_in(&pid_file).await;
        assert!(gone_soon(pid).await, "background sleep {pid} survived");
    }

    #[tokio::test]
    async fn bash_refuses_bad_timeouts() {
        let (_dir, ctx) = workspace();
        let out = run("Bash", &json!({"command": "true", "timeout": 600001}), &ctx).await;
        assert!(out.is_error);
        assert_eq!(
            out.content,
            "Bash: \"timeout\" is 600001; it is in milliseconds and must be more than 0 and at most 600000 (10 minutes)"
        );
        let out = run("Bash", &json!({"command": "true", "timeout": 0}), &ctx).await;
        assert!(out.is_error, "{out:?}");
        // Claude Code's usual input: a timeout in milliseconds and a description.
        let out = run(
            "Bash",
            &json!({"command": "echo ok", "timeout": 120000, "description": "Say ok"}),
            &ctx,
        )
        .await;
        assert!(!out.is_error, "{out:?}");
        let out = run("Bash", &json!({"command": "true", "timeout": "5"}), &ctx).await;
        assert_eq!(out.content, "Bash: \"timeout\" must be a number");
    }
}

//! Runs one command hook: `sh -c COMMAND` in the workspace, in a process group of its own, with
//! the event's JSON on stdin, through rawko's helper (crate::sandbox; no Landlock: hooks are the
//! user's own code). Everything the hook starts ends with it: what it leaves running when it exits
//! gets 200 ms, then SIGKILL. On timeout everything gets SIGTERM, then SIGKILL after a grace of
//! 5 s; dropping the future (the task was cancelled) does the same at once. (A process with no
//! helper, a unit test, runs `sh` directly: its group is killed on timeout and cancel only.)

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use crate::sandbox::{self, Supervised, Tail};

/// How long a hook gets between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(5);
/// How much of stderr is kept; the rest is counted and dropped.
pub const OUTPUT_CAP: usize = 256 * 1024;
/// How much of stdout is kept: a hook's JSON answer is read in full up to this bound (a guard's
/// deny after a megabyte of whitespace must still be read), however little of it is shown.
pub const ANSWER_CAP: usize = 16 * 1024 * 1024;
/// After the shell exits, how long processes it left behind may hold its output open.
const LINGER: Duration = Duration::from_millis(200);

/// How a command hook ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    /// Killed by a signal that rawko did not send.
    Signal(String),
    /// Ran past its time limit and was killed.
    TimedOut,
    /// Could not be started at all.
    SpawnFailed(String),
}

#[derive(Debug, Clone)]
pub struct CommandResult {
    pub exit: Exit,
    pub stdout: String,
    pub stderr: String,
    /// Bytes dropped beyond [`OUTPUT_CAP`], per stream.
    pub stdout_cut: usize,
    pub stderr_cut: usize,
    pub elapsed: Duration,
    /// The hook exited and left processes running, which were ended.
    pub left_running: bool,
}

#[derive(Default)]
struct Captured {
    kept: Vec<u8>,
    total: usize,
    tail: Tail,
}

async fn capture(stream: Option<impl AsyncRead + Unpin>, cap: usize, into: &mut Captured) {
    let Some(mut stream) = stream else { return };
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

/// Runs `command` with `input` on stdin and `env` added to rawko's environment. Never fails:
/// every way it can go wrong is an [`Exit`].
pub async fn run(
    command: &str,
    env: &[(String, String)],
    input: &[u8],
    cwd: &Path,
    timeout: Duration,
    grace: Duration,
) -> CommandResult {
    let started = Instant::now();
    let (mut shell, helper) = sandbox::shell_command(command, None, grace, LINGER);
    shell
        .current_dir(cwd)
        // Claude Code's hooks find the project here.
        .env("CLAUDE_PROJECT_DIR", cwd)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut process = match Supervised::spawn(shell, helper, grace) {
        Ok(p) => p,
        Err(e) => {
            return CommandResult {
                exit: Exit::SpawnFailed(format!("cannot start sh in {}: {e}", cwd.display())),
                stdout: String::new(),
                stderr: String::new(),
                stdout_cut: 0,
                stderr_cut: 0,
                elapsed: started.elapsed(),
                left_running: false,
            }
        }
    };
    let child = process.child();
    let stdin = child.stdin.take();
    let input = input.to_vec();
    // A hook that does not read its stdin must not block us: the write runs beside the wait and a
    // closed pipe is fine.
    let feed = async move {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
        }
    };
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let (mut out, mut err) = (Captured::default(), Captured::default());
    // The helper gives what a hook left running its moment before it exits: not counted against
    // the hook's time limit.
    let deadline =
        tokio::time::Instant::now() + timeout + if helper { LINGER } else { Duration::ZERO };
    let exit = {
        let reading = async {
            tokio::join!(
                feed,
                capture(stdout, ANSWER_CAP, &mut out),
                capture(stderr, OUTPUT_CAP, &mut err)
            );
        };
        tokio::pin!(reading);
        let mut read_done = false;
        let status = loop {
            tokio::select! {
                status = process.wait() => break Some(status),
                () = &mut reading, if !read_done => read_done = true,
                () = tokio::time::sleep_until(deadline) => break None,
            }
        };
        match status {
            Some(status) => {
                if !read_done {
                    // Let output still in the pipes arrive; a background process that keeps them
                    // open is not waited for.
                    let _ = tokio::time::timeout(LINGER, &mut reading).await;
                }
                match status {
                    Ok(s) => match (s.code(), s.signal()) {
                        (Some(code), _) => Exit::Code(code),
                        (None, Some(sig)) => Exit::Signal(
                            Signal::try_from(sig)
                                .map(|s| s.as_str().to_owned())
                                .unwrap_or_else(|_| format!("signal {sig}")),
                        ),
                        (None, None) => Exit::Signal("an unknown signal".to_owned()),
                    },
                    Err(e) => Exit::SpawnFailed(format!("cannot wait for the hook: {e}")),
                }
            }
            None => {
                process.terminate();
                let ended = tokio::time::timeout(process.grace(), process.wait())
                    .await
                    .is_ok();
                if !ended {
                    process.kill();
                    let _ = process.wait().await;
                }
                if !read_done {
                    // A finished read must not be polled again (a hook that closed its output
                    // and then outlived its timeout got here with the read done).
                    let _ = tokio::time::timeout(LINGER, &mut reading).await;
                }
                Exit::TimedOut
            }
        }
    };
    // Without the helper only a hook that timed out (or whose future is dropped) has its group
    // killed, as before; the helper has ended what the hook left running, and says so.
    if exit != Exit::TimedOut {
        process.leave_group();
    } else {
        drop(process);
    }
    let left_running = helper && err.tail.take_marker(&mut err.kept, &mut err.total);
    CommandResult {
        exit,
        stdout: String::from_utf8_lossy(&out.kept).into_owned(),
        stderr: String::from_utf8_lossy(&err.kept).into_owned(),
        stdout_cut: out.total - out.kept.len(),
        stderr_cut: err.total - err.kept.len(),
        elapsed: started.elapsed(),
        left_running,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn sh(cmd: &str, timeout_ms: u64) -> CommandResult {
        let dir = std::env::temp_dir();
        run(
            cmd,
            &[],
            b"{\"x\":1}",
            &dir,
            Duration::from_millis(timeout_ms),
            Duration::from_millis(300),
        )
        .await
    }

    #[tokio::test]
    async fn stdin_stdout_stderr_and_the_code() {
        let r = sh("cat; echo oops >&2; exit 3", 5000).await;
        assert_eq!(r.exit, Exit::Code(3));
        assert_eq!(r.stdout, "{\"x\":1}");
        assert_eq!(r.stderr, "oops\n");
    }

    #[tokio::test]
    async fn a_hang_is_killed_even_when_it_ignores_sigterm() {
        let r = sh("trap '' TERM; sleep 30", 200).await;
        assert_eq!(r.exit, Exit::TimedOut);
        assert!(r.elapsed < Duration::from_secs(5), "{:?}", r.elapsed);
    }

    #[tokio::test]
    async fn huge_and_binary_output_is_capped_and_lossy() {
        let r = sh(
            "head -c 20000000 /dev/zero; head -c 300000 /dev/zero >&2; printf '\\377\\376ok' >&2",
            10_000,
        )
        .await;
        assert_eq!(r.exit, Exit::Code(0));
        // stdout is kept up to the answer bound (it may be a JSON answer); stderr to the cap.
        assert_eq!(r.stdout.len(), ANSWER_CAP);
        assert_eq!(r.stdout_cut, 20_000_000 - ANSWER_CAP);
        assert_eq!(r.stderr_cut, 300_004 - OUTPUT_CAP);
        let r = sh("printf '\\377\\376ok' >&2", 10_000).await;
        assert!(r.stderr.ends_with("ok") && r.stderr.contains('\u{fffd}'));
    }

    #[tokio::test]
    async fn a_missing_command_is_127_and_a_crash_a_signal() {
        assert_eq!(sh("./no-such-hook.sh", 5000).await.exit, Exit::Code(127));
        assert_eq!(
            sh("kill -SEGV $$", 5000).await.exit,
            Exit::Signal("SIGSEGV".into())
        );
    }

    #[tokio::test]
    async fn a_hook_that_ignores_stdin_does_not_block() {
        let big = vec![b'x'; 4 * 1024 * 1024];
        let r = run(
            "echo done",
            &[],
            &big,
            &std::env::temp_dir(),
            Duration::from_secs(5),
            Duration::from_millis(300),
        )
        .await;
        assert_eq!(r.exit, Exit::Code(0));
        assert_eq!(r.stdout, "done\n");
    }

    #[tokio::test]
    async fn a_hook_that_closes_its_output_then_outlives_its_timeout_ends_cleanly() {
        // This once panicked: the finished output reader was polled again after the timeout.
        let r = sh("exec >/dev/null 2>&1; sleep 30", 200).await;
        assert_eq!(r.exit, Exit::TimedOut);
        assert!(r.elapsed < Duration::from_secs(5), "{:?}", r.elapsed);
    }
}

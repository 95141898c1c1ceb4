//! The commands rawko runs through its helper (`rawko __exec`, [`super::exec`]): building the
//! command line that starts a shell or a program under it (confined by the [`Rules`] given), and
//! watching a started one ([`Supervised`]) until it and everything it started have ended, however
//! the call ends; with the tail of its output ([`Tail`]).

use std::ffi::OsString;
use std::io;
use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use super::{exec, helper, Rules, HELPER_MARGIN, LEFT_RUNNING};

/// Builds the command that runs `sh -c command`: through the helper when this process has one
/// (`rules` confine it with Landlock; the helper gives what is left `linger` after the shell
/// exits, and everything `grace` between SIGTERM and SIGKILL), else `sh` itself. The second
/// value says which it is.
pub fn shell_command(
    command: &str,
    rules: Option<Rules>,
    grace: Duration,
    linger: Duration,
) -> (Command, bool) {
    program_command(
        "sh".into(),
        vec!["-c".into(), OsString::from(command)],
        rules,
        grace,
        linger,
    )
}

/// Builds the command that runs `program args` the way [`shell_command`] runs a shell: through
/// the helper when this process has one (confined by `rules` when given, what it leaves ended
/// with it), else `program` itself. For the processes rawko starts for its own work (git) and
/// for an ACP agent. The second value says whether it goes through the helper.
pub fn program_command(
    program: OsString,
    args: Vec<OsString>,
    rules: Option<Rules>,
    grace: Duration,
    linger: Duration,
) -> (Command, bool) {
    let Some(helper) = helper() else {
        let mut direct = Command::new(program);
        direct.args(args);
        return (direct, false);
    };
    let options = helper_options(
        program,
        args,
        rules,
        grace,
        linger,
        i32::try_from(std::process::id()).ok(),
    );
    let mut cmd = Command::new(helper);
    cmd.arg0("rawko")
        .arg(exec::SUBCOMMAND)
        .args(options.to_args());
    (cmd, true)
}

/// The helper's options for running `program args` (confined by `rules` when given), watching
/// `parent`.
fn helper_options(
    program: OsString,
    args: Vec<OsString>,
    rules: Option<Rules>,
    grace: Duration,
    linger: Duration,
    parent: Option<i32>,
) -> exec::Options {
    let landlock = rules.is_some();
    let Rules {
        read,
        write,
        unix_sockets,
    } = rules.unwrap_or_default();
    exec::Options {
        start: false,
        landlock,
        unix_sockets,
        read,
        write,
        grace,
        linger,
        parent,
        program,
        args,
    }
}

/// The program and arguments that run `sh -c command` the way [`shell_command`] does, for a
/// process another program starts (an editor's terminal): through the helper when this process
/// has one, with `rules`, but watching no parent (rawko is not the helper's parent there); the
/// variables in `unset` are taken out of the environment first (`env -u`). `Err` when a path is
/// not UTF-8 (the editor takes strings).
pub fn shell_argv(
    command: &str,
    rules: Option<Rules>,
    grace: Duration,
    linger: Duration,
    unset: &[String],
) -> Result<(String, Vec<String>), String> {
    let (program, mut args): (OsString, Vec<OsString>) = if unset.is_empty() {
        ("sh".into(), vec!["-c".into(), command.into()])
    } else {
        let mut args: Vec<OsString> = Vec::new();
        for name in unset {
            args.push("-u".into());
            args.push(name.into());
        }
        args.extend(["sh".into(), "-c".into(), command.into()]);
        ("env".into(), args)
    };
    let program = match helper() {
        None => program,
        Some(helper) => {
            // Another process starts it: `/proc/self/exe` would name that process's binary.
            let helper = if helper == Path::new("/proc/self/exe") {
                std::env::current_exe().map_err(|e| {
                    format!("cannot find rawko's own binary to confine the command with: {e}")
                })?
            } else {
                helper
            };
            let options = helper_options(program, args, rules, grace, linger, None);
            args = std::iter::once(OsString::from(exec::SUBCOMMAND))
                .chain(options.to_args())
                .collect();
            helper.into_os_string()
        }
    };
    let text = |s: OsString| {
        s.into_string()
            .map_err(|s| format!("{} is not UTF-8 text", s.to_string_lossy()))
    };
    Ok((
        text(program)?,
        args.into_iter().map(text).collect::<Result<_, _>>()?,
    ))
}

/// A running command rawko started with [`shell_command`], in a process group of its own, and
/// how to end it. Dropping it ends the command: the helper gets SIGTERM (and SIGKILL if it has
/// not ended everything within its grace); a shell run directly gets SIGKILL with its group.
pub struct Supervised {
    child: Option<Child>,
    pub(super) pid: Pid,
    helper: bool,
    grace: Duration,
}

impl Supervised {
    /// Starts `command` (from [`shell_command`]); `grace` is the helper's.
    pub fn spawn(mut command: Command, helper: bool, grace: Duration) -> io::Result<Self> {
        // The helper must get SIGTERM first, never tokio's SIGKILL on drop.
        command.process_group(0).kill_on_drop(!helper);
        let child = command.spawn()?;
        let pid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw)
            .ok_or_else(|| io::Error::other("it has no process id"))?;
        Ok(Supervised {
            child: Some(child),
            pid,
            helper,
            grace,
        })
    }

    /// Whether the command runs through the helper.
    pub fn is_helper(&self) -> bool {
        self.helper
    }

    pub fn child(&mut self) -> &mut Child {
        self.child
            .as_mut()
            .expect("the child is only taken when dropped")
    }

    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        self.child().wait().await
    }

    /// Whether the process rawko started is still there to signal (not yet reaped).
    fn running(&mut self) -> bool {
        matches!(self.child().try_wait(), Ok(None))
    }

    /// Asks the command to end: SIGTERM to the helper, which passes it on to every process
    /// below it; without a helper, SIGTERM to the shell's process group.
    pub fn terminate(&mut self) {
        if !self.helper {
            let _ = killpg(self.pid, Signal::SIGTERM);
        } else if self.running() {
            let _ = kill(self.pid, Signal::SIGTERM);
        }
    }

    /// How long to give the command after [`Supervised::terminate`] before [`Supervised::kill`].
    pub fn grace(&self) -> Duration {
        if self.helper {
            self.grace + HELPER_MARGIN
        } else {
            self.grace
        }
    }

    /// SIGKILL to the process group; with the helper, to every process below it (the command
    /// runs in a session of its own, outside the helper's group), then to the helper, if it is
    /// still there.
    pub fn kill(&mut self) {
        if !self.helper {
            let _ = killpg(self.pid, Signal::SIGKILL);
        } else if self.running() {
            kill_helper(self.pid);
        }
    }

    /// Lets a directly run shell's leftovers live on (the hooks' old behaviour): dropping does
    /// not kill its group. The helper ends them anyway.
    pub fn leave_group(mut self) {
        if !self.helper {
            self.child.take();
        }
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if !self.helper {
            // ESRCH: the group is empty already.
            let _ = killpg(self.pid, Signal::SIGKILL);
            return;
        }
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        let _ = kill(self.pid, Signal::SIGTERM);
        let (pid, grace) = (self.pid, self.grace());
        // The helper ends everything within its grace on its own; if it does not, SIGKILL. The
        // child is kept until then, so its process id cannot be reused under the signal.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if tokio::time::timeout(grace, child.wait()).await.is_err() {
                    kill_helper(pid);
                    let _ = child.wait().await;
                }
            });
        }
    }
}

/// rawko's last resort against a helper that has not ended its command: SIGKILL to every
/// process below the helper, while it still holds them (once it is gone they are orphans no
/// group or tree of rawko's reaches), then to its group and to the helper itself. The caller
/// has not reaped the helper, so its process id is still its own.
fn kill_helper(pid: Pid) {
    let root = u32::try_from(pid.as_raw()).unwrap_or(0);
    for below in exec::descendants(root) {
        let _ = kill(below, Signal::SIGKILL);
    }
    let _ = killpg(pid, Signal::SIGKILL);
    let _ = kill(pid, Signal::SIGKILL);
}

/// The last bytes of a stream, to find the helper's [`LEFT_RUNNING`] at its end however long
/// the stream was.
#[derive(Debug, Default)]
pub struct Tail(Vec<u8>);

impl Tail {
    pub fn push(&mut self, bytes: &[u8]) {
        let n = LEFT_RUNNING.len();
        if bytes.len() >= n {
            self.0.clear();
            self.0.extend_from_slice(&bytes[bytes.len() - n..]);
        } else {
            self.0.extend_from_slice(bytes);
            let extra = self.0.len().saturating_sub(n);
            self.0.drain(..extra);
        }
    }

    /// Whether the stream ended with [`LEFT_RUNNING`]; if so it is taken off the bytes kept
    /// (the first ones) and the count of all of them.
    pub fn take_marker(&self, kept: &mut Vec<u8>, total: &mut usize) -> bool {
        if self.0 != LEFT_RUNNING {
            return false;
        }
        *total -= LEFT_RUNNING.len();
        kept.truncate(*total);
        true
    }
}

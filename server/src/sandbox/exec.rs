//! `rawko __exec`: the small helper rawko starts every Bash command and command hook through.
//!
//! ```text
//! rawko __exec [--landlock [--unix-sockets]] [--read PATH]… [--write PATH]… [--grace MS]
//!              [--linger MS] [--parent PID] -- PROGRAM [ARG]…
//! rawko __exec --start [--landlock [--unix-sockets]] [--read PATH]… [--write PATH]… -- PROGRAM [ARG]…
//! ```
//!
//! It makes itself the child subreaper (`PR_SET_CHILD_SUBREAPER`), so every process the command
//! starts stays below it whatever it does (`setsid`, `nohup`, a double fork); then it runs
//! PROGRAM as its child with its own stdout and stderr, and waits. PROGRAM starts as the helper
//! again, `rawko __exec --start …` (the second stage), which puts itself in a new session, so
//! nothing below has a controlling terminal (no `/dev/tty`, no `TIOCSTI` into the terminal rawko
//! runs in), replaces a terminal on stdin with `/dev/null`, confines itself with Landlock when
//! asked (`--landlock`, see [`super::landlock`]) and, unless `--unix-sockets`, denies itself
//! Unix-domain sockets ([`super::seccomp`]), and becomes PROGRAM (exec). The helper itself
//! stays outside the sandbox and in the process group rawko gave it, so its signals reach
//! everything inside and rawko's reach it. The second stage is a process of its own because a
//! process group leader cannot start a session, and the helper may be one (rawko starts it in a
//! group of its own; an editor's terminal may start it as a session leader).
//!
//! - PROGRAM exits: processes still below the helper get `--linger` to end on their own, then
//!   SIGKILL; the helper exits as PROGRAM did (its code, or the same signal).
//! - SIGTERM, SIGINT or SIGHUP (rawko ending the call), or rawko (`--parent`) is gone: every
//!   process below gets SIGTERM, then SIGKILL after `--grace`; the helper exits as PROGRAM did,
//!   or 128 + the signal when PROGRAM was still running.
//!
//! When it had to end processes PROGRAM left running, the last bytes it writes to stderr are
//! [`LEFT_RUNNING`], which rawko takes off and reports in its own words.
//!
//! Its own failures exit 125 (bad arguments, no sandbox), 126 or 127 (PROGRAM cannot run) with
//! one line on stderr. It uses std, nix, landlock and seccompiler only: no tokio, no allocation per
//! wait.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::signal::{kill, raise, SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{getppid, Pid};

/// The hidden subcommand's name.
pub const SUBCOMMAND: &str = "__exec";

/// What the helper writes last to stderr when it ended processes the command left running.
pub const LEFT_RUNNING: &[u8] = b"\0rawko: ended processes the command left running\0";

/// How often the helper checks that rawko is still there.
const PARENT_CHECK: Duration = Duration::from_millis(500);
/// How long the helper keeps killing before it gives up on processes that do not die (stuck in
/// the kernel); rawko's own SIGKILL is the last resort.
const KILL_LIMIT: Duration = Duration::from_secs(5);

const USAGE: &str = "usage: rawko __exec [--landlock [--unix-sockets]] [--read PATH]... [--write PATH]... [--grace MS] [--linger MS] [--parent PID] -- PROGRAM [ARG]...";

/// The flag of the second stage (see the module's doc).
const START: &str = "--start";
/// The flag that keeps Unix-domain sockets allowed under `--landlock`.
const UNIX_SOCKETS: &str = "--unix-sockets";

/// The helper's arguments.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// The second stage: a new session, the sandbox, then PROGRAM in this process.
    pub start: bool,
    pub landlock: bool,
    /// With `landlock`: Unix-domain sockets stay allowed (else a seccomp filter refuses them).
    pub unix_sockets: bool,
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
    pub grace: Duration,
    pub linger: Duration,
    pub parent: Option<i32>,
    pub program: OsString,
    pub args: Vec<OsString>,
}

impl Options {
    /// The arguments that give these options, after the subcommand's name.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut out: Vec<OsString> = Vec::new();
        if self.start {
            out.push(START.into());
        }
        if self.landlock {
            out.push("--landlock".into());
        }
        if self.unix_sockets {
            out.push(UNIX_SOCKETS.into());
        }
        for (flag, paths) in [("--read", &self.read), ("--write", &self.write)] {
            for p in paths {
                out.push(flag.into());
                out.push(p.into());
            }
        }
        out.push("--grace".into());
        out.push(self.grace.as_millis().to_string().into());
        out.push("--linger".into());
        out.push(self.linger.as_millis().to_string().into());
        if let Some(pid) = self.parent {
            out.push("--parent".into());
            out.push(pid.to_string().into());
        }
        out.push("--".into());
        out.push(self.program.clone());
        out.extend(self.args.iter().cloned());
        out
    }

    pub fn parse(args: &[OsString]) -> Result<Options, String> {
        let mut o = Options {
            grace: Duration::from_secs(1),
            ..Options::default()
        };
        let mut i = 0;
        let value = |i: usize, flag: &str| -> Result<&OsString, String> {
            args.get(i + 1)
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        let millis = |v: &OsStr, flag: &str| -> Result<Duration, String> {
            v.to_str()
                .and_then(|s| s.parse::<u64>().ok())
                .map(Duration::from_millis)
                .ok_or_else(|| format!("{flag} takes milliseconds, not {}", v.to_string_lossy()))
        };
        while i < args.len() {
            let arg = args[i].to_str().unwrap_or("");
            match arg {
                START => {
                    o.start = true;
                    i += 1;
                    continue;
                }
                "--landlock" => {
                    o.landlock = true;
                    i += 1;
                    continue;
                }
                UNIX_SOCKETS => {
                    o.unix_sockets = true;
                    i += 1;
                    continue;
                }
                "--read" => o.read.push(value(i, arg)?.into()),
                "--write" => o.write.push(value(i, arg)?.into()),
                "--grace" => o.grace = millis(value(i, arg)?, arg)?,
                "--linger" => o.linger = millis(value(i, arg)?, arg)?,
                "--parent" => {
                    let v = value(i, arg)?;
                    o.parent = Some(v.to_str().and_then(|s| s.parse().ok()).ok_or_else(|| {
                        format!("--parent takes a process id, not {}", v.to_string_lossy())
                    })?);
                }
                "--" => {
                    let program = args.get(i + 1).ok_or("no program after --")?;
                    o.program = program.clone();
                    o.args = args[i + 2..].to_vec();
                    return Ok(o);
                }
                other => return Err(format!("unknown argument {other:?}")),
            }
            i += 2;
        }
        Err("no program (it follows --)".to_owned())
    }
}

/// The helper's `main`: runs with `args` (what follows `__exec`) and returns the exit code, unless
/// it ends itself with the signal that killed PROGRAM.
pub fn main(args: &[OsString]) -> i32 {
    let options = match Options::parse(args) {
        Ok(o) => o,
        Err(e) => return fail(125, &format!("rawko {SUBCOMMAND}: {e}\n{USAGE}")),
    };
    if options.start {
        let (code, message) = start(&options);
        return fail(code, &message);
    }
    match run(&options) {
        Ok(code) => code,
        Err((code, message)) => fail(code, &message),
    }
}

fn fail(code: i32, message: &str) -> i32 {
    let _ = writeln!(std::io::stderr(), "{message}");
    code
}

/// Where the helper is in its life.
#[derive(Clone, Copy)]
enum Phase {
    /// PROGRAM runs.
    Running,
    /// PROGRAM has exited; what it left may end on its own until then.
    Lingering(Instant),
    /// rawko asked to end (or is gone): SIGTERM went out, SIGKILL follows at the instant.
    Ending(Instant),
    /// SIGKILL to everything below, again and again, until nothing is left or the instant.
    Killing(Instant),
}

fn run(o: &Options) -> Result<i32, (i32, String)> {
    let error = |what: &str, e: Errno| (125, format!("rawko {SUBCOMMAND}: {what}: {e}"));
    if let Some(parent) = o.parent {
        if getppid().as_raw() != parent {
            return Err((125, format!("rawko {SUBCOMMAND}: rawko ({parent}) is gone")));
        }
    }
    nix::sys::prctl::set_child_subreaper(true)
        .map_err(|e| error("cannot become a subreaper", e))?;
    let mut mask = SigSet::empty();
    for s in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
    ] {
        mask.add(s);
    }
    // Blocked before any thread starts, so every thread inherits the mask and the signals wait
    // in the signalfd. (The shell starts with an empty mask: std resets it in the child.)
    mask.thread_block()
        .map_err(|e| error("cannot block signals", e))?;
    let signals = SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)
        .map_err(|e| error("cannot make a signalfd", e))?;

    let child = spawn(o)?;
    let shell = Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    drop(child);

    let mut phase = Phase::Running;
    let mut shell_status: Option<WaitStatus> = None;
    let mut stopped_by: Option<Signal> = None;
    let mut left_running = false;
    loop {
        // Reap everything that has ended; stop when nothing is left below the helper.
        let mut nothing_left = false;
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => break,
                Ok(status) => {
                    if status.pid() == Some(shell) {
                        shell_status = Some(status);
                        if let Phase::Running = phase {
                            phase = Phase::Lingering(Instant::now() + o.linger);
                        }
                    }
                }
                Err(Errno::EINTR) => {}
                Err(_) => {
                    // ECHILD: no child at all, and, as the subreaper, no descendant either.
                    nothing_left = true;
                    break;
                }
            }
        }
        if nothing_left {
            break;
        }
        let now = Instant::now();
        match phase {
            Phase::Lingering(until) if now >= until => {
                left_running = true;
                phase = Phase::Killing(now + KILL_LIMIT);
            }
            Phase::Ending(until) if now >= until => phase = Phase::Killing(now + KILL_LIMIT),
            Phase::Killing(until) if now >= until => break,
            _ => {}
        }
        let wait = match phase {
            Phase::Running => PARENT_CHECK,
            Phase::Lingering(until) | Phase::Ending(until) => {
                until.saturating_duration_since(now).min(PARENT_CHECK)
            }
            Phase::Killing(_) => {
                signal_descendants(Signal::SIGKILL);
                Duration::from_millis(20)
            }
        };
        let mut fds = [PollFd::new(
            std::os::fd::AsFd::as_fd(&signals),
            PollFlags::POLLIN,
        )];
        let millis = u16::try_from(wait.as_millis().max(1)).unwrap_or(u16::MAX);
        let _ = poll(&mut fds, PollTimeout::from(millis));
        let mut stop = None;
        while let Ok(Some(info)) = signals.read_signal() {
            if let Ok(signal) = Signal::try_from(info.ssi_signo as i32) {
                if signal != Signal::SIGCHLD {
                    stop = Some(signal);
                }
            }
        }
        if stop.is_none() && o.parent.is_some_and(|p| getppid().as_raw() != p) {
            stop = Some(Signal::SIGHUP);
        }
        if let (Some(signal), Phase::Running | Phase::Lingering(_)) = (stop, phase) {
            stopped_by = Some(signal);
            signal_descendants(Signal::SIGTERM);
            phase = Phase::Ending(Instant::now() + o.grace);
        }
    }
    if left_running {
        let mut err = std::io::stderr();
        let _ = err.write_all(LEFT_RUNNING);
        let _ = err.flush();
    }
    Ok(match (shell_status, stopped_by) {
        (Some(WaitStatus::Exited(_, code)), _) => code,
        (Some(WaitStatus::Signaled(_, signal, _)), _) => die_by(signal),
        (_, Some(signal)) => 128 + signal as i32,
        _ => 125,
    })
}

/// Starts PROGRAM through the second stage, `rawko __exec --start` (this binary), which becomes
/// it.
fn spawn(o: &Options) -> Result<std::process::Child, (i32, String)> {
    use std::os::unix::process::CommandExt;
    let second = Options {
        start: true,
        landlock: o.landlock,
        unix_sockets: o.unix_sockets,
        read: o.read.clone(),
        write: o.write.clone(),
        program: o.program.clone(),
        args: o.args.clone(),
        ..Options::default()
    };
    // From this thread, which lives as long as the helper: the second stage asks to be killed
    // when its parent thread ends (PR_SET_PDEATHSIG).
    Command::new("/proc/self/exe")
        .arg0("rawko")
        .arg(SUBCOMMAND)
        .args(second.to_args())
        .spawn()
        .map_err(|e| (126, format!("rawko: cannot start the command: {e}")))
}

/// The second stage: a session of its own (so no controlling terminal), stdin that is not a
/// terminal, the Landlock sandbox when asked, then PROGRAM in this process. Returns only when
/// one of them fails: the exit code and the message.
fn start(o: &Options) -> (i32, String) {
    use std::io::IsTerminal;
    use std::os::unix::process::CommandExt;
    let helper = getppid();
    // Killed with the helper, should rawko have to kill it: the helper is what ends the rest.
    if nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).is_err() || getppid() != helper {
        return (
            125,
            "rawko: the command was not run: its helper is gone".to_owned(),
        );
    }
    if let Err(e) = nix::unistd::setsid() {
        return (
            125,
            format!("rawko: the command was not run: it cannot be detached from the terminal: {e}"),
        );
    }
    if o.landlock {
        if let Err(e) = super::landlock::restrict_self(&o.read, &o.write) {
            return (
                125,
                format!("rawko: the command was not run: it cannot be confined with Landlock: {e}"),
            );
        }
        if !o.unix_sockets {
            if let Err(e) = super::seccomp::deny_unix_sockets() {
                return (
                    125,
                    format!("rawko: the command was not run: its Unix sockets cannot be denied with seccomp: {e}"),
                );
            }
        }
    }
    let mut program = Command::new(&o.program);
    program.args(&o.args);
    if std::io::stdin().is_terminal() {
        program.stdin(std::process::Stdio::null());
    }
    // std's exec resets the signal mask and SIGPIPE, which Rust's runtime ignores, for PROGRAM.
    let e = program.exec();
    let code = if e.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    };
    (
        code,
        format!("rawko: cannot start {}: {e}", o.program.to_string_lossy()),
    )
}

/// Sends `signal` to every process below the helper.
fn signal_descendants(signal: Signal) {
    for pid in descendants(std::process::id()) {
        let _ = kill(pid, signal);
    }
}

/// The processes below `root`, parents before their children, from /proc (each process's
/// parent is the fourth field of its `stat`). `/proc/<pid>/task/*/children` would be shorter
/// but needs CONFIG_PROC_CHILDREN, which not every kernel has.
pub fn descendants(root: u32) -> Vec<Pid> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut parents: Vec<(u32, u32)> = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split after the
        // last ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if let Some(ppid) = ppid {
            parents.push((pid, ppid));
        }
    }
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            parents
                .iter()
                .filter(|(pid, ppid)| *ppid == parent && !found.contains(pid))
                .map(|(pid, _)| *pid)
                .collect::<Vec<_>>(),
        );
        i += 1;
    }
    found
        .into_iter()
        .skip(1)
        .filter_map(|p| i32::try_from(p).ok().map(Pid::from_raw))
        .collect()
}

/// Ends the helper with `signal`, as PROGRAM ended (no core dump: PROGRAM's own crash made any
/// that was due). Returns 128 + the signal if the signal does not end a process.
fn die_by(signal: Signal) -> i32 {
    use nix::sys::resource::{setrlimit, Resource};
    let _ = setrlimit(Resource::RLIMIT_CORE, 0, 0);
    let mut only = SigSet::empty();
    only.add(signal);
    let _ = only.thread_unblock();
    // Twice: std's handler for SIGSEGV and SIGBUS (stack overflow detection) takes the first one,
    // sees no overflow, puts the default action back and returns.
    let _ = raise(signal);
    let _ = raise(signal);
    128 + signal as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn options_round_trip_through_arguments() {
        let o = Options {
            start: false,
            landlock: true,
            unix_sockets: true,
            read: vec!["/usr".into(), "/etc".into()],
            write: vec!["/ws dir".into()],
            grace: Duration::from_millis(1500),
            linger: Duration::from_millis(300),
            parent: Some(42),
            program: "sh".into(),
            args: os(&["-c", "echo -- --read"]),
        };
        assert_eq!(Options::parse(&o.to_args()), Ok(o));
    }

    #[test]
    fn bad_arguments_are_reported() {
        assert_eq!(
            Options::parse(&os(&["--grace", "soon", "--", "sh"])),
            Err("--grace takes milliseconds, not soon".to_owned())
        );
        assert_eq!(
            Options::parse(&os(&["--read"])),
            Err("--read needs a value".to_owned())
        );
        assert_eq!(
            Options::parse(&os(&["--frob", "--", "sh"])),
            Err("unknown argument \"--frob\"".to_owned())
        );
        assert_eq!(
            Options::parse(&os(&["--landlock"])),
            Err("no program (it follows --)".to_owned())
        );
        assert_eq!(
            Options::parse(&os(&["--"])),
            Err("no program after --".to_owned())
        );
    }

    #[test]
    fn descendants_of_this_process_include_a_child() {
        let mut child = Command::new("sleep").arg("5").spawn().unwrap();
        let found = descendants(std::process::id());
        let pid = Pid::from_raw(child.id() as i32);
        let _ = child.kill();
        let _ = child.wait();
        assert!(found.contains(&pid), "{found:?} lacks {pid}");
    }
}

//! How rawko starts and ends the commands it runs: Bash tool calls and command hooks
//! (invariant 7).
//!
//! Neither runs as rawko's own child. rawko starts `rawko __exec … -- sh -c COMMAND` ([`exec`]),
//! a small helper that becomes the subreaper of everything the command starts and ends all of
//! it when the command is done, when it times out or is cancelled, and when rawko goes away. The
//! command runs in a session of its own, with no controlling terminal and no terminal on stdin,
//! so nothing it starts can type into the terminal rawko runs in. For Bash the helper also
//! confines the shell with Landlock ([`landlock`]): it may write only in the workspace (not at all
//! in a phase that does not allow writing), the task's temporary directory (its `TMPDIR`) and the
//! paths the user adds, and read only those, the system's and the toolchains' directories (the
//! usual names under the home, and those its environment names: [`toolchains`]) and the devices
//! a shell needs (no terminal). Hooks are the user's own code: they get the reaping and the
//! session only.
//! A workspace's git directories elsewhere (a worktree's) go with the workspace, found by
//! [`repository`], which follows no `.git` the agent wrote unless git confirms it.
//!
//! The helper is a re-executed rawko because the workspace forbids `unsafe` code, so nothing
//! can run between fork and exec in rawko itself. The rawko binary registers itself with
//! [`set_helper`]; a process with no helper (the library's unit tests) runs `sh -c` directly, as
//! rawko did before, with its process group as the only net.

mod command;
pub mod exec;
mod landlock;
pub mod repository;
mod seccomp;
pub mod toolchains;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{OnceLock, PoisonError, RwLock};
use std::time::Duration;

use serde_json::Value;

pub use command::{program_command, shell_argv, shell_command, Supervised, Tail};
pub use exec::LEFT_RUNNING;
pub use repository::repository_dirs;
pub use toolchains::ToolchainDirs;

/// How long rawko waits beyond the helper's own grace before it kills the helper itself.
const HELPER_MARGIN: Duration = Duration::from_secs(1);

/// The environment variable that makes rawko report Landlock as unavailable, for tests of what
/// happens on a kernel without it.
pub const PRETEND_NO_LANDLOCK: &str = "RAWKO_TEST_NO_LANDLOCK";

/// The `sandbox` setting's mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SandboxMode {
    /// Landlock when the kernel has it; without it Bash runs unconfined, and the task says so.
    #[default]
    Auto,
    /// Landlock or no Bash at all.
    Required,
    /// No Landlock. (The processes a command starts are still ended with it.)
    Off,
}

impl SandboxMode {
    pub fn name(self) -> &'static str {
        match self {
            SandboxMode::Auto => "auto",
            SandboxMode::Required => "required",
            SandboxMode::Off => "off",
        }
    }

    fn parse(text: &str) -> Option<Self> {
        match text {
            "auto" => Some(SandboxMode::Auto),
            "required" => Some(SandboxMode::Required),
            "off" => Some(SandboxMode::Off),
            _ => None,
        }
    }
}

/// The `sandbox` setting: `"auto"`, `"required"`, `"off"`, or
/// `{"mode": …, "allowRead": [paths], "allowWrite": [paths], "agentRead": […], "agentWrite": […],
/// "unixSockets": bool}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxSettings {
    pub mode: SandboxMode,
    /// More paths Bash may read, as written: absolute, or `~/…`.
    pub allow_read: Vec<String>,
    /// More paths Bash may write (and read).
    pub allow_write: Vec<String>,
    /// More paths an ACP agent's own process may read (`acp` provider), as written.
    pub agent_read: Vec<String>,
    /// More paths an ACP agent's own process may write (and read).
    pub agent_write: Vec<String>,
    /// Whether a confined command may make Unix-domain sockets (`"unixSockets": true`); by
    /// default it may not (see [`seccomp`]).
    pub unix_sockets: bool,
}

/// What a `sandbox` value must be, for the message about a bad one.
pub const SETTING_SHAPE: &str = "\"auto\", \"required\", \"off\" or {\"mode\": …, \"allowRead\": [absolute or ~/ paths], \"allowWrite\": [paths], \"agentRead\": [paths], \"agentWrite\": [paths], \"unixSockets\": true|false}";

impl SandboxSettings {
    /// Reads a `sandbox` value; `None` when it is not one of the shapes of [`SETTING_SHAPE`].
    pub fn parse(value: &Value) -> Option<Self> {
        if let Some(text) = value.as_str() {
            return SandboxMode::parse(text).map(|mode| SandboxSettings {
                mode,
                ..SandboxSettings::default()
            });
        }
        let map = value.as_object()?;
        if map.keys().any(|k| {
            !matches!(
                k.as_str(),
                "mode" | "allowRead" | "allowWrite" | "agentRead" | "agentWrite" | "unixSockets"
            )
        }) {
            return None;
        }
        let mode = match map.get("mode") {
            None => SandboxMode::Auto,
            Some(m) => SandboxMode::parse(m.as_str()?)?,
        };
        let paths = |key: &str| -> Option<Vec<String>> {
            match map.get(key) {
                None => Some(Vec::new()),
                Some(list) => list
                    .as_array()?
                    .iter()
                    .map(|p| {
                        p.as_str()
                            .filter(|p| p.starts_with('/') || *p == "~" || p.starts_with("~/"))
                            .map(str::to_owned)
                    })
                    .collect(),
            }
        };
        Some(SandboxSettings {
            mode,
            allow_read: paths("allowRead")?,
            allow_write: paths("allowWrite")?,
            agent_read: paths("agentRead")?,
            agent_write: paths("agentWrite")?,
            unix_sockets: match map.get("unixSockets") {
                None => false,
                Some(v) => v.as_bool()?,
            },
        })
    }
}

static HELPER: RwLock<Option<PathBuf>> = RwLock::new(None);

/// Names the binary that holds `rawko __exec`: the rawko binary gives `/proc/self/exe` (itself,
/// even if the file was replaced since it started); tests and benches give the built binary.
pub fn set_helper(path: impl Into<PathBuf>) {
    let mut helper = HELPER.write().unwrap_or_else(PoisonError::into_inner);
    *helper = Some(path.into());
}

/// Forgets the helper: commands run as `sh -c` again, as before the helper existed. For the
/// benchmark that compares the two.
pub fn clear_helper() {
    let mut helper = HELPER.write().unwrap_or_else(PoisonError::into_inner);
    *helper = None;
}

/// The helper binary, if this process has one.
pub fn helper() -> Option<PathBuf> {
    HELPER
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// The Landlock ABI this kernel offers (at most the one rawko handles), or why Landlock cannot
/// be used. Probed once per process.
pub fn landlock_support() -> Result<u8, String> {
    if std::env::var_os(PRETEND_NO_LANDLOCK).is_some_and(|v| !v.is_empty()) {
        return Err(format!(
            "Landlock is reported unavailable because {PRETEND_NO_LANDLOCK} is set"
        ));
    }
    static PROBE: OnceLock<Result<u8, String>> = OnceLock::new();
    PROBE.get_or_init(landlock::probe).clone()
}

/// One line on the sandbox in effect, for `rawko config show`.
pub fn describe(settings: &SandboxSettings) -> String {
    let support = landlock_support();
    let mut text = match (settings.mode, &support) {
        (SandboxMode::Off, _) => {
            "off: Bash runs unconfined (what a call starts still ends with it)".to_owned()
        }
        (mode, Ok(abi)) => format!(
            "{}: Landlock (ABI {abi}) confines Bash to the workspace and its task's temp dir",
            mode.name()
        ),
        (SandboxMode::Auto, Err(why)) => {
            format!("auto: Landlock is not available ({why}); Bash runs unconfined")
        }
        (SandboxMode::Required, Err(why)) => {
            format!("required: Landlock is not available ({why}); Bash is refused")
        }
    };
    if settings.mode != SandboxMode::Off {
        for (what, list) in [
            ("reads", &settings.allow_read),
            ("writes", &settings.allow_write),
            ("an ACP agent reads", &settings.agent_read),
            ("an ACP agent writes", &settings.agent_write),
        ] {
            if !list.is_empty() {
                text.push_str(&format!("; also {what} {}", list.join(", ")));
            }
        }
        if settings.unix_sockets {
            text.push_str("; Unix sockets allowed");
        }
    }
    text
}

/// What a Bash command may do to the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkspaceAccess {
    ReadWrite,
    /// The phase does not allow writing: under Landlock the workspace is read-only to Bash.
    ReadOnly,
}

/// The sandbox of one task's Bash commands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sandbox {
    pub settings: SandboxSettings,
    /// The user's home: `~/…` paths and the toolchain directories are under it.
    pub home: Option<PathBuf>,
    /// The task's temporary directory: Bash's `TMPDIR`, writable to it. Made when needed.
    pub temp_dir: Option<PathBuf>,
    /// What Bash's environment adds to what it may read: its `PATH`, the toolchains' homes.
    pub toolchains: ToolchainDirs,
}

/// Directories of the system Bash may read (and run programs from).
const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/proc",
    "/sys",
    "/nix/store",
    // /etc/resolv.conf often links here.
    "/run/systemd/resolve",
];

/// Under the home directory: toolchains and their caches, and git's configuration. Read only.
const HOME_READ: &[&str] = &[
    ".cargo",
    ".rustup",
    ".npm",
    ".local",
    ".cache",
    ".gitconfig",
    ".config/git",
    ".nvm",
    ".pyenv",
    ".rbenv",
    "go",
    ".bun",
    ".deno",
];

/// Devices a shell reads. Of `/dev` Bash sees only these and [`DEVICES_WRITE`]: not the
/// terminals (`/dev/tty`, `/dev/pts/*`, `/dev/console`, `/dev/tty*`, so no pseudo-terminal of
/// its own either), the disks, or `/dev/shm`, which every process of the machine shares and
/// which outlives the task. (`/dev/fd` and `/dev/std*` are links into `/proc`, which it reads.)
const DEVICES_READ: &[&str] = &["/dev/random", "/dev/urandom"];

/// Devices a shell writes to.
const DEVICES_WRITE: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

/// The paths Landlock lets a Bash command read and write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
    /// Whether the command may make Unix-domain sockets (the user's `unixSockets`); otherwise
    /// a seccomp filter refuses them ([`seccomp`]).
    pub unix_sockets: bool,
}

impl Sandbox {
    /// `~` and `~/…` under the home directory; other paths as they are.
    fn expand(&self, path: &str) -> Option<PathBuf> {
        match path.strip_prefix('~') {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => self
                .home
                .as_ref()
                .map(|h| h.join(rest.trim_start_matches('/'))),
            _ => Some(PathBuf::from(path)),
        }
    }

    /// The Landlock rules for a Bash command in `workspace` (canonical).
    pub fn rules(&self, workspace: &Path, access: WorkspaceAccess) -> Rules {
        let mut read: Vec<PathBuf> = SYSTEM_READ
            .iter()
            .chain(DEVICES_READ)
            .map(PathBuf::from)
            .collect();
        if let Some(home) = &self.home {
            read.extend(HOME_READ.iter().map(|p| home.join(p)));
        }
        read.extend(self.toolchains.dirs.iter().cloned());
        read.extend(
            self.settings
                .allow_read
                .iter()
                .filter_map(|p| self.expand(p)),
        );
        let mut write: Vec<PathBuf> = DEVICES_WRITE.iter().map(PathBuf::from).collect();
        write.extend(self.temp_dir.iter().cloned());
        write.extend(
            self.settings
                .allow_write
                .iter()
                .filter_map(|p| self.expand(p)),
        );
        let mut project = vec![workspace.to_owned()];
        project.extend(repository::discover(workspace, &self.agent_writable(workspace)).outside);
        match access {
            WorkspaceAccess::ReadWrite => write.extend(project),
            WorkspaceAccess::ReadOnly => read.extend(project),
        }
        Rules {
            read,
            write,
            unix_sockets: self.settings.unix_sockets,
        }
    }

    /// What Bash may write in some phase besides the devices: the workspace, the task's temp dir
    /// and the user's `allowWrite` paths. A file there is the agent's to write, so it is never
    /// taken as the user's word (see [`repository`]).
    pub fn agent_writable(&self, workspace: &Path) -> Vec<PathBuf> {
        let mut out = vec![workspace.to_owned()];
        out.extend(self.temp_dir.iter().cloned());
        out.extend(
            self.settings
                .allow_write
                .iter()
                .filter_map(|p| self.expand(p)),
        );
        out
    }

    /// What the task should say once when the workspace's `.git` is not followed (an agent
    /// could have written it), so Bash gets no access to what it names; `None` when it is
    /// followed or there is none, and when Bash is not confined (there is nothing to say).
    pub fn repository_note(&self, workspace: &Path) -> Option<String> {
        if self.settings.mode == SandboxMode::Off
            || helper().is_none()
            || landlock_support().is_err()
        {
            return None;
        }
        repository::discover(workspace, &self.agent_writable(workspace)).ignored
    }

    /// The Landlock rules of an ACP agent's own process (the `acp` provider) in `workspace`: what
    /// [`Sandbox::rules`] gives Bash, with the agent's temporary directory `temp_dir` in place of
    /// the task's and the user's `agentRead` / `agentWrite` in place of `allowRead` /
    /// `allowWrite`, and what the agent needs of its own: `read` (its installation) and `write`
    /// (its state directories).
    pub fn agent_rules(
        &self,
        workspace: &Path,
        access: WorkspaceAccess,
        temp_dir: &Path,
        read: &[PathBuf],
        write: &[PathBuf],
    ) -> Rules {
        let mut settings = self.settings.clone();
        settings.allow_read.clear();
        settings.allow_write.clear();
        let bash = Sandbox {
            settings,
            home: self.home.clone(),
            temp_dir: Some(temp_dir.to_owned()),
            toolchains: self.toolchains.clone(),
        };
        let mut rules = bash.rules(workspace, access);
        rules.read.extend(read.iter().cloned());
        rules.read.extend(
            self.settings
                .agent_read
                .iter()
                .filter_map(|p| self.expand(p)),
        );
        rules.write.extend(write.iter().cloned());
        rules.write.extend(
            self.settings
                .agent_write
                .iter()
                .filter_map(|p| self.expand(p)),
        );
        rules
    }

    /// How a Bash command runs: `Ok(Some(rules))` confined by Landlock, `Ok(None)` unconfined,
    /// `Err` (the reason, for the agent and the user) not at all.
    pub fn plan(&self, workspace: &Path, access: WorkspaceAccess) -> Result<Option<Rules>, String> {
        if self.settings.mode == SandboxMode::Off {
            return Ok(None);
        }
        let why = match (helper(), landlock_support()) {
            (Some(_), Ok(_)) => return Ok(Some(self.rules(workspace, access))),
            (None, _) => "this process has no rawko helper to confine it with".to_owned(),
            (_, Err(why)) => why,
        };
        match self.settings.mode {
            SandboxMode::Required => Err(format!(
                "Bash is not run: the \"sandbox\" setting is \"required\" and the kernel sandbox cannot be used here: {why}. Set \"sandbox\" to \"auto\" in ~/.config/rawko/config.json to run Bash unconfined instead."
            )),
            _ => Ok(None),
        }
    }

    /// What the task should say once about the directories of Bash's environment the sandbox
    /// leaves out ([`ToolchainDirs::note`]), when the sandbox confines Bash.
    pub fn toolchains_note(&self) -> Option<String> {
        if self.settings.mode == SandboxMode::Off || helper().is_none() {
            return None;
        }
        landlock_support().ok()?;
        self.toolchains.note()
    }

    /// What the task should say once when its Bash commands run unconfined although the
    /// setting asks for the sandbox when it can (`auto`); `None` when they are confined, when the
    /// user turned the sandbox off, or in a process with no helper (a test).
    pub fn unconfined_note(&self) -> Option<String> {
        if self.settings.mode != SandboxMode::Auto || helper().is_none() {
            return None;
        }
        let why = landlock_support().err()?;
        Some(format!(
            "Bash runs without the kernel sandbox: {why}. Its commands can write outside the workspace, and in phases that do not allow writing only rawko's reading of the command stands in the way. Set \"sandbox\": \"required\" in ~/.config/rawko/config.json to refuse Bash instead."
        ))
    }
}

/// Makes the task's temporary directory (and its parents), private to the user.
pub fn make_temp_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(test)]
mod tests {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    use serde_json::json;
    use tokio::process::Command;

    use super::*;

    #[test]
    fn settings_take_a_mode_or_an_object() {
        assert_eq!(
            SandboxSettings::parse(&json!("required")).map(|s| s.mode),
            Some(SandboxMode::Required)
        );
        assert_eq!(
            SandboxSettings::parse(
                &json!({"allowRead": ["~/.m2", "/srv/data"], "allowWrite": ["~"]})
            ),
            Some(SandboxSettings {
                mode: SandboxMode::Auto,
                allow_read: vec!["~/.m2".into(), "/srv/data".into()],
                allow_write: vec!["~".into()],
                ..SandboxSettings::default()
            })
        );
        for bad in [
            json!("on"),
            json!(true),
            json!({"mode": "strict"}),
            json!({"allowRead": "/srv"}),
            json!({"allowWrite": ["relative/path"]}),
            json!({"allowWrite": ["~user/x"]}),
            json!({"allowread": []}),
        ] {
            assert_eq!(SandboxSettings::parse(&bad), None, "{bad}");
        }
    }

    #[test]
    fn rules_give_the_workspace_the_phases_access() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let sandbox = Sandbox {
            settings: SandboxSettings {
                mode: SandboxMode::Auto,
                allow_read: vec!["~/.m2".into()],
                allow_write: vec!["/srv/out".into()],
                ..SandboxSettings::default()
            },
            home: Some("/home/ada".into()),
            temp_dir: Some("/state/tasks/t1/tmp".into()),
            toolchains: ToolchainDirs {
                dirs: vec!["/ci/cargo".into()],
                left_out: Vec::new(),
            },
        };
        let rules = sandbox.rules(&ws, WorkspaceAccess::ReadWrite);
        assert!(rules.write.contains(&ws));
        assert!(!rules.read.contains(&ws));
        for p in ["/state/tasks/t1/tmp", "/srv/out", "/dev/null"] {
            assert!(rules.write.contains(&PathBuf::from(p)), "{p}");
        }
        for p in ["/usr", "/home/ada/.cargo", "/home/ada/.m2", "/ci/cargo"] {
            assert!(rules.read.contains(&PathBuf::from(p)), "{p}");
        }
        assert!(!rules.read.contains(&PathBuf::from("/home/ada")));
        // Of /dev, the devices a shell needs; no terminal.
        for p in [
            "/dev",
            "/dev/tty",
            "/dev/pts",
            "/dev/ptmx",
            "/dev/console",
            "/dev/shm",
        ] {
            let p = PathBuf::from(p);
            assert!(
                !rules.read.contains(&p) && !rules.write.contains(&p),
                "{}",
                p.display()
            );
        }
        let rules = sandbox.rules(&ws, WorkspaceAccess::ReadOnly);
        assert!(rules.read.contains(&ws));
        assert!(!rules.write.contains(&ws));
        assert!(rules.write.contains(&PathBuf::from("/state/tasks/t1/tmp")));
    }

    /// rawko's last resort (the helper did not end its command within its grace) reaches the
    /// command, which runs in a session of its own outside the helper's group.
    #[tokio::test]
    async fn killing_a_helper_that_does_not_end_reaches_what_runs_below_it() {
        // A stand-in for the helper that ignores SIGTERM, with a command in another session.
        let mark = format!("3600.{}", std::process::id());
        let mut stand_in = Command::new("sh");
        stand_in.args(["-c", &format!("trap '' TERM; setsid sleep {mark} & wait")]);
        let mut process = Supervised::spawn(stand_in, true, Duration::from_millis(100)).unwrap();
        let root = u32::try_from(process.pid.as_raw()).unwrap();
        let wanted = format!("sleep\0{mark}\0");
        let sleeping = |pid: &Pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c == wanted.as_bytes())
        };
        let until = std::time::Instant::now() + Duration::from_secs(10);
        let sleep = loop {
            if let Some(pid) = exec::descendants(root).into_iter().find(|p| sleeping(p)) {
                break pid;
            }
            if std::time::Instant::now() > until {
                process.kill();
                panic!("the command did not start");
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        process.terminate();
        process.kill();
        let _ = process.wait().await;
        let gone = |pid: Pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
                s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z'))
            })
        };
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while !gone(sleep) && std::time::Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if !gone(sleep) {
            let _ = kill(sleep, Signal::SIGKILL);
            panic!("the command below the helper outlived rawko's SIGKILL");
        }
    }

    #[test]
    fn an_agents_rules_take_its_own_paths_not_bashs() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().canonicalize().unwrap();
        let sandbox = Sandbox {
            settings: SandboxSettings::parse(&json!({
                "allowRead": ["~/.m2"], "allowWrite": ["/srv/out"],
                "agentRead": ["/opt/agent"], "agentWrite": ["~/.agent-cache"],
            }))
            .unwrap(),
            home: Some("/home/ada".into()),
            temp_dir: Some("/state/tasks/t1/tmp".into()),
            ..Default::default()
        };
        let own_read = [PathBuf::from("/usr/lib/node_modules/agent")];
        let own_write = [PathBuf::from("/home/ada/.claude")];
        let agent_tmp = Path::new("/state/tasks/t1/tmp/agent");
        let rules = sandbox.agent_rules(
            &ws,
            WorkspaceAccess::ReadOnly,
            agent_tmp,
            &own_read,
            &own_write,
        );
        for p in [
            "/state/tasks/t1/tmp/agent",
            "/home/ada/.claude",
            "/home/ada/.agent-cache",
        ] {
            assert!(rules.write.contains(&PathBuf::from(p)), "{p}");
        }
        for p in ["/state/tasks/t1/tmp", "/srv/out"] {
            assert!(!rules.write.contains(&PathBuf::from(p)), "{p}");
        }
        for p in ["/usr/lib/node_modules/agent", "/opt/agent", "/usr"] {
            assert!(rules.read.contains(&PathBuf::from(p)), "{p}");
        }
        assert!(!rules.read.contains(&PathBuf::from("/home/ada/.m2")));
        assert!(rules.read.contains(&ws) && !rules.write.contains(&ws));
        let rules = sandbox.agent_rules(&ws, WorkspaceAccess::ReadWrite, agent_tmp, &[], &[]);
        assert!(rules.write.contains(&ws));
    }

    #[test]
    fn the_marker_is_found_at_the_end_of_a_long_stream() {
        let mut tail = Tail::default();
        let mut kept = b"some output".to_vec();
        let mut total = kept.len();
        tail.push(b"some output");
        assert!(!tail.take_marker(&mut kept, &mut total));
        for piece in LEFT_RUNNING.chunks(5) {
            tail.push(piece);
            total += piece.len();
        }
        kept.extend_from_slice(&LEFT_RUNNING[..10]); // a cap cut it
        assert!(tail.take_marker(&mut kept, &mut total));
        assert_eq!((kept.as_slice(), total), (&b"some output"[..], 11));
    }
}

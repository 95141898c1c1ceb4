//! The real Claude Code CLI as a test subject: where its binary is (`RAWKO_CLAUDE_BIN`, installed
//! by scripts/install-claude-code.sh), and one `claude -p` run in a sealed environment: HOME, the
//! XDG directories, CLAUDE_CONFIG_DIR and TMPDIR in the test's temporary directory, the model API
//! on a loopback fake, no other traffic. The run is its own process group (so the `rawko hook` and
//! `rawko mcp` processes Claude Code starts go with it), killed when the run is dropped.

use super::tail;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The tools Claude Code's own permission system allows in these runs, so that rawko is what
/// decides. NotebookEdit and Glob/Grep are there too: a call Claude Code refused by itself would
/// hide whether rawko let it through.
pub const ALLOWED_TOOLS: &str =
    "Read,Glob,Grep,Write,Edit,MultiEdit,NotebookEdit,Bash,mcp__rawko__workflow_step";

/// The Claude Code binary, or `None` (with a note on stderr) when this test should be skipped.
///
/// `RAWKO_CLAUDE_BIN` names it. Without it the test is skipped when run by a developer, but fails
/// under CI (`CI` set), so a missing install can never pass unnoticed. `RAWKO_CLAUDE_E2E=0`
/// skips on purpose, CI or not.
#[allow(clippy::print_stderr)]
pub fn binary(test: &str) -> Option<PathBuf> {
    if std::env::var("RAWKO_CLAUDE_E2E").is_ok_and(|v| v == "0") {
        eprintln!("SKIPPED {test}: RAWKO_CLAUDE_E2E=0");
        return None;
    }
    match std::env::var_os("RAWKO_CLAUDE_BIN").filter(|v| !v.is_empty()) {
        Some(bin) => {
            let bin = PathBuf::from(bin);
            assert!(
                bin.is_file(),
                "RAWKO_CLAUDE_BIN={} is not a file; run scripts/install-claude-code.sh",
                bin.display()
            );
            Some(bin)
        }
        None => {
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
            assert!(
                !ci,
                "{test}: RAWKO_CLAUDE_BIN is not set, and under CI this test must not be skipped: \
                 set it to the output of scripts/install-claude-code.sh (scripts/test.sh does), \
                 or set RAWKO_CLAUDE_E2E=0 to skip it on purpose"
            );
            eprintln!(
                "SKIPPED {test}: the real Claude Code CLI is not available. To run it: \
                 RAWKO_CLAUDE_BIN=$(scripts/install-claude-code.sh) cargo test -p rawko --test claude_code_e2e"
            );
            None
        }
    }
}

/// `claude --version`'s first word.
pub fn version(bin: &Path) -> String {
    Command::new(bin)
        .arg("--version")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .ok()
        .and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .split_whitespace()
                .next()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| "?".to_owned())
}

/// One `claude -p` run.
pub struct Claude {
    child: Child,
    stdout: Output,
    stderr: Output,
    pub started: Instant,
    /// When it exited (seen by [`Claude::wait`]).
    pub ended: Option<Instant>,
    status: Option<ExitStatus>,
    /// Claude Code's debug log (`--debug-file`), where it times each hook.
    pub debug_log: PathBuf,
}

impl Claude {
    /// Starts `claude -p PROMPT --output-format json --allowedTools …` in `workspace`, with
    /// HOME and every XDG directory under `home` (XDG_RUNTIME_DIR is `home/run`, where
    /// `rawko serve` started with the same home keeps its endpoint file) and the model API at
    /// `api_url`.
    pub fn spawn(bin: &Path, workspace: &Path, home: &Path, api_url: &str, prompt: &str) -> Self {
        Self::spawn_with(bin, workspace, home, api_url, prompt, &[], &[])
    }

    /// [`Claude::spawn`] with more arguments (`--resume SESSION`; an `--allowedTools` there
    /// replaces [`ALLOWED_TOOLS`]) and environment variables.
    pub fn spawn_with(
        bin: &Path,
        workspace: &Path,
        home: &Path,
        api_url: &str,
        prompt: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Self {
        use std::os::unix::process::CommandExt;
        let tmp = home.join("tmp");
        std::fs::create_dir_all(&tmp).expect("create TMPDIR");
        let debug_log = home.join("claude-debug.log");
        let mut child = Command::new(bin)
            .arg("-p")
            .arg(prompt)
            .args(["--output-format", "json"])
            .args(if args.contains(&"--allowedTools") {
                &[][..]
            } else {
                &["--allowedTools", ALLOWED_TOOLS][..]
            })
            .arg("--debug-file")
            .arg(&debug_log)
            .current_dir(workspace)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("LANG", "C.UTF-8")
            .env("HOME", home)
            .env("CLAUDE_CONFIG_DIR", home.join(".claude"))
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("XDG_RUNTIME_DIR", home.join("run"))
            .env("TMPDIR", &tmp)
            .env("ANTHROPIC_BASE_URL", api_url)
            .env("ANTHROPIC_API_KEY", "sk-ant-rawko-test")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            // We may run as root: Claude Code refuses some modes as root outside a sandbox.
            .env("IS_SANDBOX", "1")
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let stdout = collect(child.stdout.take().expect("stdout"));
        let stderr = collect(child.stderr.take().expect("stderr"));
        Self {
            child,
            stdout,
            stderr,
            started: Instant::now(),
            ended: None,
            status: None,
            debug_log,
        }
    }

    /// Waits until claude exits or `timeout` passes (then kills it and returns `Err` saying so).
    /// `check` runs while waiting; a message from it ends the wait at once with that message.
    pub fn wait(
        &mut self,
        timeout: Duration,
        mut check: impl FnMut() -> Option<String>,
    ) -> Result<ExitStatus, String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.status {
                return Ok(status);
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                self.status = Some(status);
                self.ended = Some(Instant::now());
                // The last bytes: until both pipes closed (a straggler holding them is not
                // waited for long).
                let until = Instant::now() + Duration::from_secs(2);
                while !(self.stdout.done() && self.stderr.done()) && Instant::now() < until {
                    thread::sleep(Duration::from_millis(5));
                }
                return Ok(status);
            }
            if let Some(why) = check() {
                self.kill();
                return Err(why);
            }
            if Instant::now() >= deadline {
                self.kill();
                return Err(format!("claude did not exit within {timeout:?}; killed it"));
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Kills claude and everything it started (its process group).
    pub fn kill(&mut self) {
        if self.status.is_none() {
            let pgid = nix::unistd::Pid::from_raw(self.child.id() as i32);
            let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
            let _ = self.child.kill();
            if let Ok(status) = self.child.wait() {
                self.status = Some(status);
                self.ended = Some(Instant::now());
            }
        }
    }

    /// How long the run took (until now if it still runs).
    pub fn wall(&self) -> Duration {
        self.ended.unwrap_or_else(Instant::now) - self.started
    }

    pub fn stdout(&self) -> String {
        self.stdout.text()
    }

    pub fn stderr(&self) -> String {
        self.stderr.text()
    }

    /// The JSON result `--output-format json` prints at the end.
    pub fn result(&self) -> Option<Value> {
        let out = self.stdout();
        out.lines()
            .rev()
            .find_map(|l| serde_json::from_str::<Value>(l.trim()).ok())
    }

    /// Each command hook Claude Code ran, as its debug log times it.
    pub fn hook_timings(&self) -> Vec<HookTiming> {
        let log = std::fs::read_to_string(&self.debug_log).unwrap_or_default();
        log.lines().filter_map(HookTiming::parse).collect()
    }

    /// The tails of stdout, stderr and the debug log, for failure messages.
    pub fn report(&self) -> String {
        let debug = std::fs::read_to_string(&self.debug_log).unwrap_or_default();
        let hooks: Vec<&str> = debug
            .lines()
            .filter(|l| l.contains("Hook") || l.contains("hook") || l.contains("MCP"))
            .collect();
        format!(
            "--- claude status: {:?} after {:?}\n--- claude stdout (tail):\n{}\n--- claude stderr (tail):\n{}\n--- claude debug log, hook and MCP lines (tail):\n{}\n",
            self.status,
            self.wall(),
            tail(&self.stdout(), 3000),
            tail(&self.stderr(), 3000),
            tail(&hooks.join("\n"), 6000),
        )
    }
}

impl Drop for Claude {
    fn drop(&mut self) {
        self.kill();
    }
}

/// One hook run as Claude Code's debug log reports it:
/// `Hooks: PreToolUse:Write [<command>] finished with status 0 (14ms)`.
#[derive(Debug, Clone)]
pub struct HookTiming {
    /// `PreToolUse:Write`, `Stop`, …
    pub hook: String,
    pub command: String,
    pub status: i32,
    pub millis: u64,
}

impl HookTiming {
    pub fn parse(line: &str) -> Option<Self> {
        let rest = &line[line.find("Hooks: ")? + "Hooks: ".len()..];
        let (hook, rest) = rest.split_once(" [")?;
        let (command, rest) = rest.rsplit_once("] finished with status ")?;
        let (status, rest) = rest.split_once(" (")?;
        let millis = rest.strip_suffix("ms)")?.trim().parse::<f64>().ok()?;
        Some(Self {
            hook: hook.to_owned(),
            command: command.to_owned(),
            status: status.trim().parse().ok()?,
            millis: millis.round() as u64,
        })
    }

    /// The event without the tool: `PreToolUse`.
    pub fn event(&self) -> &str {
        self.hook.split(':').next().unwrap_or(&self.hook)
    }
}

/// What a reader thread has taken from a pipe, and whether the pipe closed.
struct Output {
    bytes: Arc<Mutex<Vec<u8>>>,
    closed: Arc<AtomicBool>,
}

impl Output {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes.lock().unwrap_or_else(PoisonError::into_inner))
            .into_owned()
    }

    fn done(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

fn collect(mut from: impl Read + Send + 'static) -> Output {
    let bytes = Arc::new(Mutex::new(Vec::new()));
    let closed = Arc::new(AtomicBool::new(false));
    let (b, c) = (bytes.clone(), closed.clone());
    thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => b
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .extend_from_slice(&buf[..n]),
            }
        }
        c.store(true, Ordering::SeqCst);
    });
    Output { bytes, closed }
}

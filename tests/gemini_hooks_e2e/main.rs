//! rawko in front of the real Gemini CLI through its hooks. Each scenario installs rawko's hooks
//! and MCP server into a temporary project (`rawko hook install --gemini --workflow KEY`), runs
//! `rawko serve` with a fake editor answering approvals, and runs `gemini -p` (headless) against
//! a loopback fake of the Gemini API (tests/support/fake_gemini.rs) whose scripted turns call the
//! tools. So what is tested is what a user gets: Gemini CLI's own hook runner, its tools and its
//! MCP client, talking to the real `rawko hook --gemini` and `rawko mcp`.
//!
//! The CLI is `RAWKO_GEMINI_CLI` (scripts/install-gemini-cli.sh installs the pinned version and
//! prints its entry point; scripts/test.sh sets it). Without it the tests are skipped, except
//! under CI, where they fail; `RAWKO_GEMINI_E2E=0` skips them on purpose. Each scenario prints
//! its timings (`[gemini-hooks timing]` lines; `--nocapture` shows them on success): the run's
//! wall time and each hook event's duration as Gemini CLI's own telemetry measures it (BeforeTool
//! is the decision latency: `rawko hook` started, the server asked, the answer read).

#[path = "../support/mod.rs"]
mod support;

mod scenarios;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::fake_gemini::{FakeGemini, Request, Turn};
use support::{Editor, Project};
use tempfile::TempDir;

/// The longest a scenario's `gemini -p` may run.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// In the first phase's instructions (so in its context and its reminder).
const PLAN_MARKER: &str = "PHASE-PLAN-MARKER";
/// In the second phase's instructions.
const IMPLEMENT_MARKER: &str = "PHASE-IMPLEMENT-MARKER";
/// A sentence of rawko's not-done reminder.
const REMINDER: &str = "You must NOT stop yet";
/// rawko's MCP tool that moves the workflow, as Gemini CLI names it.
const STEP: &str = "mcp_rawko_workflow_step";

/// The installed Gemini CLI's entry point, or `None` (with a note) when the test is skipped.
fn gemini_cli(test: &str) -> Option<PathBuf> {
    support::installed(
        test,
        &support::Agent {
            var: "RAWKO_GEMINI_CLI",
            skip: "RAWKO_GEMINI_E2E",
            script: "scripts/install-gemini-cli.sh",
            name: "Gemini CLI",
            filter: "--test gemini_hooks_e2e",
        },
    )
}

/// The project: a workflow whose first phase is read-only, a text file.
fn project() -> Project {
    let p = Project::empty();
    p.write(
        ".rawko/workflows/gated/workflow.yaml",
        "name: Gated\ncommandName: gated\ninitialMessage: \"Do this: {description}\"\nphases:\n  - plan.md\n  - implement.md\n",
    );
    p.write(
        ".rawko/workflows/gated/plan.md",
        &format!("---\nid: plan\nname: Plan\nemoji: \"📋\"\ntools:\n  whitelist: [Read, Glob, Grep]\n---\n{PLAN_MARKER}: read the code and change nothing.\n"),
    );
    p.write(
        ".rawko/workflows/gated/implement.md",
        &format!("---\nid: implement\nname: Implement\nemoji: \"🛠\"\n---\n{IMPLEMENT_MARKER}: make the change.\n"),
    );
    p.write("a.txt", "hello\n");
    p
}

/// Absolute paths in the workspace, for the scripted tool calls.
#[derive(Clone)]
struct Files(PathBuf);

impl Files {
    fn at(&self, rel: &str) -> String {
        self.0.join(rel).display().to_string()
    }
}

/// One scenario: a project with rawko's Gemini hooks, `rawko serve`, the fake API and (once
/// started) gemini. Fields drop in order: gemini first, the server last.
struct Scenario {
    name: &'static str,
    gemini: Option<Gemini>,
    api: FakeGemini,
    ed: Editor,
    project: Project,
    home: TempDir,
    entry: PathBuf,
}

impl Scenario {
    /// Sets the scenario up; `None` when Gemini CLI is not installed (the test is skipped).
    fn new<S>(
        name: &'static str,
        config: Option<Value>,
        script: impl FnOnce(Files) -> S,
    ) -> Option<Self>
    where
        S: FnMut(&Request) -> Turn + Send + 'static,
    {
        Self::with_editor(name, config, true, script)
    }

    /// [`Scenario::new`], with an editor attached (`initialize`) or not (`rawko serve` alone).
    fn with_editor<S>(
        name: &'static str,
        config: Option<Value>,
        initialize: bool,
        script: impl FnOnce(Files) -> S,
    ) -> Option<Self>
    where
        S: FnMut(&Request) -> Turn + Send + 'static,
    {
        let entry = gemini_cli(&format!("gemini_hooks_e2e ({name})"))?;
        let home = TempDir::new().expect("temp home");
        let h = home.path();
        let project = project();
        if let Some(config) = &config {
            project.write(".rawko/config.json", &config.to_string());
        }
        let out = install(&project.ws, h, &["--workflow", "gated"]);
        assert!(
            out.status.success(),
            "rawko hook install --gemini failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        gemini_home(h, &project.ws);
        let mut ed = Editor::spawn_in(&project.ws, h);
        if initialize {
            ed.initialize(json!({"countdownTickMillis": 20, "approvalTimeoutSeconds": 30}));
        }
        assert!(
            wait_endpoint(h, Duration::from_secs(10)),
            "rawko serve wrote no endpoint file in {}",
            h.join("run/rawko").display()
        );
        Some(Self {
            name,
            gemini: None,
            api: FakeGemini::start(script(Files(project.ws.clone()))),
            ed,
            project,
            home,
            entry,
        })
    }

    /// Runs `gemini -p PROMPT` to its end (or the timeout); its JSON result, or what went wrong.
    fn run(&mut self, prompt: &str) -> Result<Value, String> {
        self.run_with(prompt, &[])
    }

    /// [`Scenario::run`] with more arguments for gemini (`--resume ID`).
    fn run_with(&mut self, prompt: &str, args: &[&str]) -> Result<Value, String> {
        let mut gemini = Gemini::spawn(
            &self.entry,
            &self.project.ws,
            self.home.path(),
            &self.api.url(),
            prompt,
            args,
        );
        let status = gemini.wait(RUN_TIMEOUT);
        self.gemini = Some(gemini);
        let status = status?;
        let out = self.gemini().stdout();
        let result = serde_json::from_str::<Value>(out.trim())
            .map_err(|e| format!("gemini printed no JSON result ({e})"))?;
        if !status.success() {
            return Err(format!("gemini exited with {status}: {result}"));
        }
        Ok(result)
    }

    fn gemini(&self) -> &Gemini {
        self.gemini.as_ref().expect("gemini was started")
    }

    fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.project.path(rel)).ok()
    }

    /// A failure message: `why`, then gemini's output and what the fake API saw.
    fn failure(&self, why: &str) -> String {
        let gemini = self.gemini.as_ref().map(Gemini::report).unwrap_or_default();
        format!(
            "[{}] {why}\n{gemini}--- the fake Gemini API's requests:\n{}",
            self.name,
            self.api.report()
        )
    }

    /// The tools of the approvals the editor was asked for, in order.
    fn approved_tools(&self) -> Vec<String> {
        self.ed
            .approval_requests()
            .iter()
            .map(|a| a["params"]["tool"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// Prints the run's wall time and each hook event's durations (never asserted).
    #[allow(clippy::print_stderr)]
    fn print_timings(&self) {
        let Some(gemini) = &self.gemini else { return };
        let label = format!("[gemini-hooks timing] {}:", self.name);
        eprintln!(
            "{label} gemini -p wall time {} ms, {} model requests ({} in all), Gemini CLI 0.61.0",
            gemini.wall().as_millis(),
            self.api.main_requests().len(),
            self.api.requests().len()
        );
        let hooks = hook_timings(&self.home.path().join("telemetry.log"));
        if hooks.is_empty() {
            eprintln!("{label} no hook timings in Gemini CLI's telemetry");
        }
        let mut events: Vec<&str> = hooks.iter().map(|(e, _)| e.as_str()).collect();
        events.sort_unstable();
        events.dedup();
        for event in events {
            let ms: Vec<u64> = hooks
                .iter()
                .filter(|(e, _)| e == event)
                .map(|(_, ms)| *ms)
                .collect();
            eprintln!("{label} hook {event}: {}", stats(&ms));
        }
    }
}

fn stats(ms: &[u64]) -> String {
    let mut v = ms.to_vec();
    v.sort_unstable();
    match (v.first(), v.last()) {
        (Some(min), Some(max)) => format!(
            "n={} min={min}ms median={}ms max={max}ms",
            v.len(),
            v[v.len() / 2]
        ),
        _ => "n=0".to_owned(),
    }
}

/// Each hook call Gemini CLI's telemetry logged: (event, milliseconds). The local target writes
/// one JSON record after another, pretty-printed; a hook call's attributes hold
/// `hook_event_name` and `duration_ms`.
fn hook_timings(log: &Path) -> Vec<(String, u64)> {
    let Ok(text) = std::fs::read_to_string(log) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(&text).into_iter::<Value>();
    while let Some(Ok(record)) = stream.next() {
        let attrs = &record["attributes"];
        if attrs["event.name"] == "gemini_cli.hook_call" {
            if let (Some(event), Some(ms)) = (
                attrs["hook_event_name"].as_str(),
                attrs["duration_ms"].as_u64(),
            ) {
                out.push((event.to_owned(), ms));
            }
        }
    }
    out
}

/// `rawko hook install --gemini ARGS` in `ws`, with `home` as HOME.
fn install(ws: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_rawko"))
        .args(["hook", "install", "--gemini"])
        .args(args)
        .arg("--workspace")
        .arg(ws)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .output()
        .expect("run rawko hook install")
}

/// Gemini CLI's home as a user who set it up for rawko has it: the workspace trusted (else it
/// runs none of the project's hooks and MCP servers), an API key as the way in (headless `-p`
/// needs the auth type named), no usage statistics, no update checks, telemetry to a local file
/// (the hook timings).
fn gemini_home(home: &Path, ws: &Path) {
    let dir = home.join(".gemini");
    std::fs::create_dir_all(&dir).expect("mkdir ~/.gemini");
    std::fs::write(
        dir.join("trustedFolders.json"),
        json!({ws.display().to_string(): "TRUST_FOLDER"}).to_string(),
    )
    .expect("trustedFolders.json");
    std::fs::write(
        dir.join("settings.json"),
        json!({
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": false},
            "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
            "telemetry": {
                "enabled": true,
                "target": "local",
                "outfile": home.join("telemetry.log").display().to_string(),
                "logPrompts": false,
            },
        })
        .to_string(),
    )
    .expect("settings.json");
}

/// Waits until the server's endpoint file is there; false if it is not within `timeout`.
fn wait_endpoint(home: &Path, timeout: Duration) -> bool {
    let dir = home.join("run/rawko");
    let deadline = Instant::now() + timeout;
    loop {
        let written = std::fs::read_dir(&dir).is_ok_and(|d| {
            d.filter_map(Result::ok)
                .any(|e| e.path().extension().is_some_and(|x| x == "json"))
        });
        if written {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A script playing `turns` in order, then saying "Done." forever.
fn turns(turns: Vec<Turn>) -> impl FnMut(&Request) -> Turn + Send + 'static {
    let mut turns = turns.into_iter();
    move |_| turns.next().unwrap_or_else(|| Turn::text("Done."))
}

/// The functions a model request allowed through its `toolConfig`, when it named any.
fn allowed_functions(r: &Request) -> Option<Vec<String>> {
    r.body["toolConfig"]["functionCallingConfig"]["allowedFunctionNames"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect()
        })
}

/// One `gemini -p` run: its own process group (so the `rawko hook` and `rawko mcp` processes it
/// starts go with it), killed when dropped.
struct Gemini {
    child: Child,
    stdout: Arc<Mutex<Vec<u8>>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    started: Instant,
    ended: Option<Instant>,
}

impl Gemini {
    /// Starts `node ENTRY -p PROMPT --output-format json --approval-mode yolo ARGS` in `workspace`
    /// (yolo: Gemini CLI's own confirmations are off, so rawko is what decides), with HOME and
    /// every XDG directory under `home` (XDG_RUNTIME_DIR is `home/run`, where `rawko serve`
    /// keeps its endpoint file) and the model API at `api_url`.
    fn spawn(
        entry: &Path,
        workspace: &Path,
        home: &Path,
        api_url: &str,
        prompt: &str,
        args: &[&str],
    ) -> Self {
        use std::os::unix::process::CommandExt;
        let tmp = home.join("tmp");
        std::fs::create_dir_all(&tmp).expect("create TMPDIR");
        let mut child = Command::new("node")
            .arg(entry)
            .args([
                "-p",
                prompt,
                "--output-format",
                "json",
                "--approval-mode",
                "yolo",
            ])
            .args(args)
            .current_dir(workspace)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("LANG", "C.UTF-8")
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("XDG_RUNTIME_DIR", home.join("run"))
            .env("TMPDIR", &tmp)
            .env("GEMINI_API_KEY", "gemini-rawko-test")
            .env("GOOGLE_GEMINI_BASE_URL", api_url)
            .env("GEMINI_CLI_NO_RELAUNCH", "true")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("start gemini (is node on PATH?)");
        let stdout = collect(child.stdout.take().expect("stdout"));
        let stderr = collect(child.stderr.take().expect("stderr"));
        Self {
            child,
            stdout,
            stderr,
            started: Instant::now(),
            ended: None,
        }
    }

    /// Waits until gemini exits, or kills it after `timeout`.
    fn wait(&mut self, timeout: Duration) -> Result<ExitStatus, String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.ended = Some(Instant::now());
                // Its output pipes close with it (and with the hooks it started).
                std::thread::sleep(Duration::from_millis(50));
                return Ok(status);
            }
            if Instant::now() >= deadline {
                self.kill();
                return Err(format!("gemini did not exit within {timeout:?}; killed it"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill(&mut self) {
        let pgid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn wall(&self) -> Duration {
        self.ended.unwrap_or_else(Instant::now) - self.started
    }

    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout.lock().unwrap()).into_owned()
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    fn report(&self) -> String {
        format!(
            "--- gemini stdout:\n{}\n--- gemini stderr (end):\n{}\n",
            support::shorten(&self.stdout(), 4000),
            tail(&self.stderr(), 6000)
        )
    }
}

impl Drop for Gemini {
    fn drop(&mut self) {
        self.kill();
    }
}

fn tail(s: &str, max: usize) -> &str {
    let mut at = s.len().saturating_sub(max);
    while !s.is_char_boundary(at) {
        at += 1;
    }
    &s[at..]
}

fn collect(mut from: impl Read + Send + 'static) -> Arc<Mutex<Vec<u8>>> {
    let out = Arc::new(Mutex::new(Vec::new()));
    let sink = out.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    out
}

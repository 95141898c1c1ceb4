//! rawko in front of the real Codex CLI through its hooks. Each scenario installs rawko's hooks
//! and MCP server into a temporary project (`rawko hook install --codex --workflow KEY`), trusts
//! the project and reviews the hooks as a user would (the calls Codex's own `/hooks` screen makes:
//! `hooks/list` and `config/batchWrite` of `codex app-server`), runs `rawko serve` with a fake
//! editor answering approvals, and runs `codex exec` against a loopback fake of the OpenAI
//! Responses API (tests/support/fake_openai.rs) whose scripted turns call Codex's tools. So what
//! is tested is what a user gets: Codex's own hook runner, its shell and `apply_patch`, and its
//! MCP client, talking to the real `rawko hook` and `rawko mcp`.
//!
//! The CLI is `RAWKO_CODEX_BIN` (scripts/install-codex.sh installs the pinned version and prints
//! its launcher; scripts/test.sh sets it). Without it the tests are skipped, except under CI,
//! where they fail. Each scenario prints its timings (`[codex-e2e timing]` lines; run with
//! `--nocapture`): the run's wall time, and per tool call the time from the call leaving the
//! fake model to the next model request (the PreToolUse hook with rawko's decision, the tool and
//! Codex together), as Codex lets nothing time its hooks from outside:
//!
//!   RAWKO_CODEX_BIN=$(scripts/install-codex.sh | tail -n 1) cargo test -p rawko --test codex_hooks_e2e -- --nocapture

#[path = "../support/mod.rs"]
mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::fake_openai::{add_file_patch, FakeOpenAi, Request, Turn};
use support::{Editor, Project};
use tempfile::TempDir;

/// The longest a scenario's `codex exec` may run.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// In the first phase's instructions (so in its context and its reminder).
const PLAN_MARKER: &str = "PHASE-PLAN-MARKER";
/// In the second phase's instructions.
const IMPLEMENT_MARKER: &str = "PHASE-IMPLEMENT-MARKER";
/// A sentence of rawko's not-done reminder.
const REMINDER: &str = "You must NOT stop yet";
/// The variable that holds the fake's key for Codex's model provider.
const KEY_VAR: &str = "RAWKO_TEST_OPENAI_KEY";
/// A model Codex knows (its metadata decides the tools it offers: `apply_patch` among them).
const MODEL: &str = "gpt-5.5";

/// The Codex launcher, or `None` (with a note) when the test should be skipped.
#[allow(clippy::print_stderr)]
fn codex(test: &str) -> Option<PathBuf> {
    const VAR: &str = "RAWKO_CODEX_BIN";
    const SCRIPT: &str = "scripts/install-codex.sh";
    if std::env::var("RAWKO_CODEX_E2E").is_ok_and(|v| v == "0") {
        eprintln!("SKIPPED {test}: RAWKO_CODEX_E2E=0");
        return None;
    }
    match std::env::var_os(VAR).filter(|v| !v.is_empty()) {
        Some(bin) => {
            let bin = PathBuf::from(bin);
            assert!(
                bin.is_file(),
                "{VAR}={} is not a file; run {SCRIPT}",
                bin.display()
            );
            Some(bin)
        }
        None => {
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
            assert!(
                !ci,
                "{test}: {VAR} is not set, and under CI this test must not be skipped: set it to \
                 the last line of {SCRIPT} (scripts/test.sh does), or RAWKO_CODEX_E2E=0 to skip it"
            );
            eprintln!(
                "SKIPPED {test}: Codex CLI is not installed. To run it: \
                 {VAR}=$({SCRIPT} | tail -n 1) cargo test -p rawko --test codex_hooks_e2e"
            );
            None
        }
    }
}

/// The project: a workflow whose first phase only reads (a blacklist of Write and Edit, so Bash
/// runs, but not to write files, and every other tool is allowed) and whose second changes files,
/// and a text file.
fn project() -> Project {
    let p = Project::empty();
    p.write(
        ".rawko/workflows/gated/workflow.yaml",
        "name: Gated\ncommandName: gated\ninitialMessage: \"Do this: {description}\"\nphases:\n  - plan.md\n  - implement.md\n",
    );
    p.write(
        ".rawko/workflows/gated/plan.md",
        &format!("---\nid: plan\nname: Plan\nemoji: \"📋\"\ntools:\n  blacklist: [Write, Edit]\n---\n{PLAN_MARKER}: read the code and change nothing.\n"),
    );
    p.write(
        ".rawko/workflows/gated/implement.md",
        &format!("---\nid: implement\nname: Implement\nemoji: \"🛠\"\n---\n{IMPLEMENT_MARKER}: make the change.\n"),
    );
    p.write("a.txt", "hello from a.txt\n");
    p
}

/// `rawko hook install --codex …` (or `--uninstall`) in `ws`; its stdout.
fn rawko_install(ws: &Path, home: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_rawko"))
        .args(["hook", "install", "--codex"])
        .args(args)
        .arg("--workspace")
        .arg(ws)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .output()
        .expect("run rawko hook install");
    assert!(
        out.status.success(),
        "rawko hook install --codex {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The environment Codex (and the hooks and MCP servers it starts) runs with.
fn codex_command(bin: &Path, home: &Path, ws: &Path) -> Command {
    let tmp = home.join("tmp");
    std::fs::create_dir_all(&tmp).expect("create TMPDIR");
    let mut c = Command::new("node");
    c.arg(bin)
        .current_dir(ws)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LANG", "C.UTF-8")
        .env("HOME", home)
        .env("CODEX_HOME", home.join(".codex"))
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_RUNTIME_DIR", home.join("run"))
        .env("TMPDIR", &tmp)
        .env(KEY_VAR, "sk-rawko-test");
    c
}

/// Codex's `config.toml`: the fake as its model provider, and the project trusted (what
/// `codex exec --trust` writes), since a project's `.codex/` is read only in a trusted project.
fn write_codex_config(home: &Path, ws: &Path, api: &FakeOpenAi) {
    let dir = home.join(".codex");
    std::fs::create_dir_all(&dir).expect("mkdir CODEX_HOME");
    let config = format!(
        "{}\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        api.codex_config(MODEL, KEY_VAR),
        ws.display()
    );
    std::fs::write(dir.join("config.toml"), config).expect("write config.toml");
}

/// A JSON-RPC client of `codex app-server`, the way Codex's own `/hooks` screen reaches it.
struct AppServer {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
    next: i64,
}

impl AppServer {
    fn start(bin: &Path, home: &Path, ws: &Path) -> Self {
        let mut child = codex_command(bin, home, ws)
            .arg("app-server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start codex app-server");
        let out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut s = Self {
            child,
            out,
            next: 1,
        };
        s.call(
            "initialize",
            json!({"clientInfo": {"name": "rawko-test", "version": "1"}}),
        );
        s.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));
        s
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        writeln!(stdin, "{message}").expect("write to codex app-server");
        stdin.flush().expect("flush");
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            let n = self
                .out
                .read_line(&mut line)
                .expect("read codex app-server");
            assert!(n > 0, "codex app-server ended before answering {method}");
            let Ok(m) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if m["id"] == json!(id) {
                assert!(
                    m.get("error").is_none(),
                    "codex app-server refused {method}: {m}"
                );
                return m["result"].clone();
            }
        }
    }

    /// The hooks Codex sees for `ws`: (key, event, command, trust status, timeout).
    fn hooks(&mut self, ws: &Path) -> Vec<Value> {
        let r = self.call("hooks/list", json!({"cwds": [ws]}));
        r["data"][0]["hooks"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Trusts every hook of `ws` as it is now, as the user does in `/hooks`.
    fn trust_all(&mut self, ws: &Path) {
        let state: serde_json::Map<String, Value> = self
            .hooks(ws)
            .iter()
            .map(|h| {
                (
                    h["key"].as_str().unwrap_or_default().to_owned(),
                    json!({"trusted_hash": h["currentHash"]}),
                )
            })
            .collect();
        self.call(
            "config/batchWrite",
            json!({"edits": [{"keyPath": "hooks.state", "value": state, "mergeStrategy": "upsert"}],
                   "filePath": null, "expectedVersion": null, "reloadUserConfig": true}),
        );
    }
}

impl Drop for AppServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One scenario: a project with rawko's hooks (reviewed), `rawko serve` with a fake editor and
/// the fake API. Fields drop in order: the server before the project it serves.
struct Scenario {
    name: &'static str,
    ed: Editor,
    api: FakeOpenAi,
    project: Project,
    home: TempDir,
    bin: PathBuf,
    stdout: String,
    stderr: String,
    wall: Duration,
}

impl Scenario {
    fn new(
        name: &'static str,
        script: impl FnMut(&Request) -> Turn + Send + 'static,
    ) -> Option<Self> {
        Self::with_config(name, None, script)
    }

    /// [`Scenario::new`] with `config` as the project's `.rawko/config.json`.
    fn with_config(
        name: &'static str,
        config: Option<Value>,
        script: impl FnMut(&Request) -> Turn + Send + 'static,
    ) -> Option<Self> {
        let bin = codex(&format!("codex_hooks_e2e ({name})"))?;
        let home = TempDir::new().expect("temp home");
        let h = home.path();
        let project = project();
        if let Some(config) = &config {
            project.write(".rawko/config.json", &config.to_string());
        }
        let api = FakeOpenAi::start(script);
        write_codex_config(h, &project.ws, &api);
        let said = rawko_install(&project.ws, h, &["--workflow", "gated"]);
        assert!(
            said.contains("/hooks"),
            "install says how to review: {said}"
        );
        AppServer::start(&bin, h, &project.ws).trust_all(&project.ws);
        let mut ed = Editor::spawn_in(&project.ws, h);
        ed.initialize(json!({"countdownTickMillis": 20, "approvalTimeoutSeconds": 30}));
        wait_endpoint(h);
        Some(Self {
            name,
            ed,
            api,
            project,
            home,
            bin,
            stdout: String::new(),
            stderr: String::new(),
            wall: Duration::ZERO,
        })
    }

    /// Runs `codex exec PROMPT` to its end; its exit status.
    fn run(&mut self, prompt: &str) -> ExitStatus {
        self.run_exec(None, prompt)
    }

    /// Runs `codex exec PROMPT`, or `codex exec resume SESSION PROMPT`, to its end; its exit
    /// status.
    fn run_exec(&mut self, resume: Option<&str>, prompt: &str) -> ExitStatus {
        use std::os::unix::process::CommandExt;
        let started = Instant::now();
        let mut child = codex_command(&self.bin, self.home.path(), &self.project.ws)
            .arg("exec")
            .args(resume.map(|_| "resume"))
            .args([
                "--skip-git-repo-check",
                // Codex's own sandbox (bubblewrap) is not what is tested here; rawko's gate is.
                "--dangerously-bypass-approvals-and-sandbox",
            ])
            .args(resume)
            .arg(prompt)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("start codex exec");
        let mut out = child.stdout.take().expect("stdout");
        let mut err = child.stderr.take().expect("stderr");
        let out_reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = out.read_to_string(&mut s);
            s
        });
        let err_reader = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for codex") {
                break Some(status);
            }
            if started.elapsed() > RUN_TIMEOUT {
                // The whole group: codex and the hooks it runs.
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(child.id() as i32),
                    nix::sys::signal::Signal::SIGKILL,
                );
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        self.wall = started.elapsed();
        self.stdout = out_reader.join().unwrap_or_default();
        self.stderr = err_reader.join().unwrap_or_default();
        status.unwrap_or_else(|| panic!("{}", self.failure("codex exec did not end in time")))
    }

    fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.project.path(rel)).ok()
    }

    fn failure(&self, why: &str) -> String {
        format!(
            "[{}] {why}\n--- codex stdout:\n{}\n--- codex stderr:\n{}\n--- the fake OpenAI API's requests:\n{}",
            self.name,
            self.stdout,
            support::shorten(&self.stderr, 6000),
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

    /// Prints the run's wall time and, per tool call, the time from the call leaving the fake
    /// to the next model request.
    #[allow(clippy::print_stderr)]
    fn print_timings(&self) {
        let label = format!("[codex-e2e timing] {}:", self.name);
        let main = self.api.main_requests();
        eprintln!(
            "{label} codex exec wall time {} ms, {} model requests ({} in all)",
            self.wall.as_millis(),
            main.len(),
            self.api.requests().len()
        );
        let mut trips = Vec::new();
        for pair in main.windows(2) {
            let names: Vec<String> = pair[0].calls().into_iter().map(|c| c.1).collect();
            if let (false, Some(sent)) = (names.is_empty(), pair[0].replied) {
                let ms = pair[1].received.saturating_duration_since(sent).as_millis();
                trips.push(format!("{}={ms}ms", names.join("+")));
            }
        }
        eprintln!(
            "{label} tool call to next model request (PreToolUse with rawko's decision, the tool, Codex): {}",
            trips.join(", ")
        );
    }

    /// Prints how long `rawko hook PreToolUse --codex` takes to decide. The hook itself, as
    /// Codex runs it (a process reaching the running server), for a call the phase allows and
    /// one it refuses (the editor asked): in a session of its own, after Codex's has ended, so
    /// rawko's MCP tools never act on it (call it last: it adds approvals).
    #[allow(clippy::print_stderr)]
    fn print_hook_latency(&self) {
        let label = format!("[codex-e2e timing] {}:", self.name);
        for (what, input) in [
            ("allowed (Bash ls)", json!({"command": "ls"})),
            (
                "refused in the editor (Bash echo > f)",
                json!({"command": "echo x > f.txt"}),
            ),
        ] {
            let mut ms = Vec::new();
            for i in 0..5 {
                let started = Instant::now();
                let code = self.hook("PreToolUse", &json!({
                    "session_id": "latency-probe", "cwd": self.project.ws, "hook_event_name": "PreToolUse",
                    "tool_name": "Bash", "tool_use_id": format!("probe-{what}-{i}"), "tool_input": input,
                }));
                ms.push(format!(
                    "{:.1}ms/exit {code}",
                    started.elapsed().as_secs_f64() * 1000.0
                ));
            }
            eprintln!(
                "{label} rawko hook PreToolUse --codex, {what}: {}",
                ms.join(", ")
            );
        }
    }

    /// Runs `rawko hook EVENT --codex` with `input` as Codex runs it; its exit code.
    fn hook(&self, event: &str, input: &Value) -> i32 {
        let h = self.home.path();
        let mut child = Command::new(env!("CARGO_BIN_EXE_rawko"))
            .args(["hook", event, "--codex", "--workflow", "gated"])
            .current_dir(&self.project.ws)
            .env("HOME", h)
            .env("XDG_RUNTIME_DIR", h.join("run"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run rawko hook");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(input.to_string().as_bytes())
            .expect("write the hook input");
        drop(stdin);
        child
            .wait()
            .expect("wait for rawko hook")
            .code()
            .unwrap_or(-1)
    }
}

/// Waits until the server's endpoint file is there.
fn wait_endpoint(home: &Path) {
    let dir = home.join("run/rawko");
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        let written = std::fs::read_dir(&dir).is_ok_and(|d| {
            d.filter_map(Result::ok)
                .any(|e| e.path().extension().is_some_and(|x| x == "json"))
        });
        if written {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("rawko serve wrote no endpoint file in {}", dir.display());
}

/// A script playing `turns` in order, then saying "Done." forever.
fn turns(turns: Vec<Turn>) -> impl FnMut(&Request) -> Turn + Send + 'static {
    let mut turns = turns.into_iter();
    move |_| turns.next().unwrap_or_else(|| Turn::text("Done."))
}

/// The whole way through a workflow with Codex: the phase context reaches the model; in the
/// read-only phase a shell read runs, a shell write and an `apply_patch` go to the editor, which
/// refuses them, and the disk stays unchanged; the agent's first stop gets the not-done reminder
/// and it goes on; it moves the workflow with rawko's MCP tool (after Codex's tool search), its
/// `apply_patch` in the phase that allows writing runs without asking; with the workflow done it
/// may stop, and `codex exec` ends well.
#[test]
fn codex_runs_a_workflow_on_rawkos_rails() {
    let Some(mut s) = Scenario::new(
        "workflow",
        turns(vec![
            Turn::function("exec_command", json!({"cmd": "cat a.txt"})),
            Turn::function("exec_command", json!({"cmd": "echo x > made.txt"})),
            Turn::custom("apply_patch", add_file_patch("plan.txt", "the plan\n")),
            Turn::custom(
                "apply_patch",
                "*** Begin Patch\n*** Update File: a.txt\n@@\n-hello from a.txt\n+changed\n*** End Patch\n",
            ),
            Turn::text("Here is my plan: add impl.txt."),
            Turn::tool_search("workflow_step"),
            Turn::mcp("rawko", "workflow_step", json!({"action": "next"})),
            Turn::custom("apply_patch", add_file_patch("impl.txt", "implemented\n")),
            Turn::mcp("rawko", "workflow_step", json!({"action": "next"})),
            Turn::text("All done."),
        ]),
    ) else {
        return;
    };
    s.ed.set_approval_policy(|p| {
        if p["tool"]
            .as_str()
            .is_some_and(|t| t.starts_with("mcp__rawko__"))
        {
            Some("allow_once")
        } else {
            Some("reject_once")
        }
    });
    let status = s.run("Add impl.txt, following the workflow.");
    s.print_timings();
    let main = s.api.main_requests();
    assert!(
        main.first().is_some_and(|r| r.mentions(PLAN_MARKER)),
        "{}",
        s.failure("the first model request should carry the Plan phase's context")
    );
    let read = s
        .api
        .output_of("exec_command", |a| a["cmd"] == "cat a.txt")
        .map(|o| o.text)
        .unwrap_or_default();
    assert!(
        read.contains("hello from a.txt"),
        "{}",
        s.failure(&format!(
            "the shell read should run in Plan; it gave {read:?}"
        ))
    );
    assert_eq!(
        s.read("made.txt"),
        None,
        "{}",
        s.failure("a shell command that writes must not run in the read-only phase")
    );
    assert_eq!(
        s.read("plan.txt"),
        None,
        "{}",
        s.failure("an apply_patch must not run in the read-only phase")
    );
    assert_eq!(
        s.read("a.txt").as_deref(),
        Some("hello from a.txt\n"),
        "{}",
        s.failure("an apply_patch that updates a file must not run in the read-only phase")
    );
    assert_eq!(
        s.approved_tools(),
        vec!["Bash".to_owned(), "Write".to_owned(), "Edit".to_owned()],
        "{}",
        s.failure("the editor should be asked about the shell write and each patch's file, and nothing else")
    );
    let reminded = main
        .iter()
        .position(|r| r.mentions(REMINDER))
        .unwrap_or_else(|| {
            panic!(
                "{}",
                s.failure("the agent's first stop should bring rawko's reminder")
            )
        });
    assert!(
        main[reminded].mentions(PLAN_MARKER),
        "{}",
        s.failure("the reminder names the Plan phase's instructions")
    );
    assert_eq!(
        s.read("impl.txt").as_deref(),
        Some("implemented\n"),
        "{}",
        s.failure("the apply_patch in Implement should run")
    );
    assert!(
        main.iter().any(|r| r.mentions(IMPLEMENT_MARKER)),
        "{}",
        s.failure("the Implement phase's context should reach the model once the workflow moved")
    );
    assert!(
        status.success(),
        "{}",
        s.failure(&format!("codex exec should end well, not with {status}"))
    );
    s.print_hook_latency();
}

/// `rawko hook install --codex` writes hooks that Codex itself reads (every event, with the
/// workflow and rawko's timeouts; its MCP server is used in the workflow scenario), once whatever
/// the number of runs;
/// `--uninstall` leaves the user's own hooks as they were.
/// Every `codex exec` exit ends its session (SessionEnd). The task is suspended: blocked, the
/// reason naming Codex and `codex exec resume` with the session's id. `codex exec resume ID`
/// brings the same session back: the task goes on in the phase it was in (a write the phase
/// forbids still goes to the editor and does not run), and the editor sees it go on.
#[test]
fn a_codex_session_that_ends_is_suspended_and_resumes_in_its_phase() {
    let Some(mut s) = Scenario::with_config(
        "resume",
        Some(json!({"maxReminders": 0})),
        // A fresh prompt: the run's command; after its result, stop.
        |r: &Request| {
            let answered = r.input().last().is_some_and(|i| {
                matches!(
                    i["type"].as_str(),
                    Some("function_call_output" | "custom_tool_call_output")
                )
            });
            if answered {
                Turn::text("Stopping for now.")
            } else if r.last_user_text().contains("SECOND-RUN") {
                Turn::function("exec_command", json!({"cmd": "echo x > made.txt"}))
            } else {
                Turn::function("exec_command", json!({"cmd": "cat a.txt"}))
            }
        },
    ) else {
        return;
    };
    s.ed.set_approval_policy(|_| Some("reject_once"));
    let first = s.run("FIRST-RUN: plan the change.");
    s.print_timings();
    assert!(
        first.success(),
        "{}",
        s.failure(&format!("codex exec should end well, not with {first}"))
    );
    let session = s
        .stderr
        .lines()
        .chain(s.stdout.lines())
        .find_map(|l| l.trim().strip_prefix("session id: "))
        .map(str::to_owned)
        .unwrap_or_else(|| panic!("{}", s.failure("codex exec printed no session id")));
    let suspended =
        s.ed.wait_for("the suspended status", Duration::from_secs(10), |m| {
            m["method"] == "rawko/status"
                && m["params"]["state"] == "blocked"
                && m["params"]["reason"]
                    .as_str()
                    .is_some_and(|t| t.contains("suspended"))
        });
    let task = suspended["params"]["taskId"].as_str().unwrap().to_owned();
    let reason = suspended["params"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("the Codex session ended")
            && reason.contains(&format!("codex exec resume {session}")),
        "{}",
        s.failure(&format!(
            "the reason should name Codex and how to resume the session: {reason}"
        ))
    );

    // The same session, resumed: still in Plan, so its shell write goes to the editor, which
    // refuses it, and it does not run.
    let second = s.run_exec(Some(&session), "SECOND-RUN: go on.");
    s.print_timings();
    assert!(
        second.success(),
        "{}",
        s.failure(&format!(
            "codex exec resume should end well, not with {second}"
        ))
    );
    assert!(
        s.api
            .main_requests()
            .iter()
            .any(|r| r.last_user_text().contains("SECOND-RUN")),
        "{}",
        s.failure("the resumed run should reach the model")
    );
    assert_eq!(
        s.read("made.txt"),
        None,
        "{}",
        s.failure("the resumed session is still in Plan: its shell write must not run")
    );
    assert_eq!(
        s.approved_tools(),
        vec!["Bash".to_owned()],
        "{}",
        s.failure("the editor should be asked about the resumed session's shell write")
    );
    s.ed.wait_for("the task going on", Duration::from_secs(10), |m| {
        m["method"] == "rawko/status"
            && m["params"]["taskId"] == json!(task)
            && m["params"]["reason"]
                .as_str()
                .is_some_and(|t| t.contains("the Codex session resumed"))
    });
}

#[test]
fn install_and_uninstall_round_trip_through_codex() {
    let Some(bin) = codex("codex_hooks_e2e (install)") else {
        return;
    };
    let home = TempDir::new().expect("temp home");
    let h = home.path();
    let project = project();
    let ws = &project.ws;
    let mine = r#"{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}"#;
    project.write(".codex/hooks.json", mine);
    let api = FakeOpenAi::start(|_| Turn::text("unused"));
    write_codex_config(h, ws, &api);
    rawko_install(ws, h, &["--workflow", "gated"]);
    let again = rawko_install(ws, h, &["--workflow", "gated"]);
    assert!(
        !again.contains("added"),
        "a second install adds nothing: {again}"
    );
    let mut app = AppServer::start(&bin, h, ws);
    let hooks = app.hooks(ws);
    let ours: Vec<(String, String, u64)> = hooks
        .iter()
        .filter(|h| h["command"].as_str().is_some_and(|c| c.contains(" hook ")))
        .map(|h| {
            (
                h["eventName"].as_str().unwrap_or_default().to_owned(),
                h["command"].as_str().unwrap_or_default().to_owned(),
                h["timeoutSec"].as_u64().unwrap_or_default(),
            )
        })
        .collect();
    let mut events: Vec<&str> = ours.iter().map(|o| o.0.as_str()).collect();
    events.sort_unstable();
    assert_eq!(
        events,
        vec![
            "postToolUse",
            "preToolUse",
            "sessionEnd",
            "sessionStart",
            "stop",
            "userPromptSubmit",
        ],
        "Codex should read rawko's six hooks: {hooks:#?}"
    );
    for (event, command, timeout) in &ours {
        assert!(
            command.ends_with("--codex --workflow gated"),
            "{event}: {command}"
        );
        // Codex holds its SessionEnd hooks to 3 s, whatever the entry says.
        let want = match event.as_str() {
            "preToolUse" | "stop" => 600,
            "sessionEnd" => 3,
            _ => 30,
        };
        assert_eq!(*timeout, want, "{event}'s timeout as Codex reads it");
    }
    assert_eq!(hooks.len(), 7, "the user's own hook is kept: {hooks:#?}");
    drop(app);
    rawko_install(ws, h, &["--uninstall"]);
    let left: Value =
        serde_json::from_str(&std::fs::read_to_string(ws.join(".codex/hooks.json")).unwrap())
            .unwrap();
    assert_eq!(left, serde_json::from_str::<Value>(mine).unwrap());
    assert!(!ws.join(".codex/config.toml").exists());
    let hooks = AppServer::start(&bin, h, ws).hooks(ws);
    assert_eq!(hooks.len(), 1, "only the user's hook is left: {hooks:#?}");
}

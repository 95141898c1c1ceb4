//! A fake editor speaking LSP framing to the real `rawko serve` binary, in the style of
//! rust-analyzer's slow-tests support and biome's server test utilities. std only: a reader thread
//! parses the server's frames into JSON values and hands them to the test over a channel; the test
//! waits for what it expects (always a condition with a time limit, never a fixed sleep).
//!
//! The editor answers `rawko/approveToolCall` requests itself, from its reader thread, according
//! to an approval policy, and records every such request. On drop it sends `shutdown` and `exit`
//! and kills the server if it has not gone within a few seconds. When a test fails, the server's
//! stderr and the last messages received are shown.

#![allow(dead_code)]

pub mod claude_code;
pub mod fake_anthropic;
pub mod fake_gemini;
pub mod fake_http;
pub mod fake_openai;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tempfile::TempDir;

/// An agent the suite installs and runs: the variable naming its entry point, the one that skips
/// it on purpose, its install script, and how the skip note names it and its tests (`filter`:
/// the arguments of `cargo test -p rawko` that run them).
pub struct Agent {
    pub var: &'static str,
    pub skip: &'static str,
    pub script: &'static str,
    pub name: &'static str,
    pub filter: &'static str,
}

/// `agent`'s entry point, or `None` (with a note) when `test` should be skipped: never under CI,
/// where a missing agent fails the test instead of passing it unseen.
#[allow(clippy::print_stderr)]
pub fn installed(test: &str, agent: &Agent) -> Option<PathBuf> {
    let Agent {
        var,
        skip,
        script,
        name,
        filter,
    } = agent;
    if std::env::var(skip).is_ok_and(|v| v == "0") {
        eprintln!("SKIPPED {test}: {skip}=0");
        return None;
    }
    match std::env::var_os(var).filter(|v| !v.is_empty()) {
        Some(entry) => {
            let entry = PathBuf::from(entry);
            assert!(
                entry.is_file(),
                "{var}={} is not a file; run {script}",
                entry.display()
            );
            Some(entry)
        }
        None => {
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
            assert!(
                !ci,
                "{test}: {var} is not set, and under CI this test must not be skipped: \
                 set it to the output of {script} (scripts/test.sh does), \
                 or {skip}=0 to skip it on purpose"
            );
            eprintln!(
                "SKIPPED {test}: {name} is not installed. To run it: \
                 {var}=$({script}) cargo test -p rawko {filter}"
            );
            None
        }
    }
}

/// How much of the server's stderr is kept for failure reports.
const STDERR_KEPT: usize = 8 * 1024 * 1024;

/// How long a request waits for its response, and the usual wait for a notification.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// What the editor answers to an approval request: the outcome, or `None` to leave it unanswered.
pub type ApprovalPolicy = Box<dyn Fn(&Value) -> Option<&'static str> + Send>;

/// What the reader thread reports.
enum Incoming {
    Message(Value),
    /// A frame whose body is not JSON: a server bug, kept for the failure message.
    NotJson(String),
    /// stdout closed, or a frame could not be read.
    Closed(String),
}

/// A project directory (the workspace) in a temporary directory.
pub struct Project {
    _dir: TempDir,
    /// The workspace, canonical.
    pub ws: PathBuf,
}

impl Project {
    /// An empty workspace.
    pub fn empty() -> Self {
        let dir = TempDir::new().expect("temp dir");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).expect("create the workspace");
        let ws = ws.canonicalize().expect("canonical workspace");
        Self { _dir: dir, ws }
    }

    /// A workspace with the starter workflows in `.rawko/workflows` and a small project.
    pub fn with_starter() -> Self {
        let project = Self::empty();
        project.add_starter_workflows();
        project.write("README.md", "# greet\n\nSays hello.\n");
        project.write(
            "greet.sh",
            "#!/bin/sh\nname=\"${1:-world}\"\necho \"Hello, $name!\"\n",
        );
        project
    }

    /// Copies `server/starter/workflows/*` into `<ws>/.rawko/workflows`.
    pub fn add_starter_workflows(&self) {
        let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("starter/workflows");
        copy_dir(&from, &self.ws.join(".rawko/workflows"));
    }

    /// Writes `content` to `<ws>/rel`, creating parent directories; returns the path.
    pub fn write(&self, rel: &str, content: &str) -> PathBuf {
        let path = self.ws.join(rel);
        std::fs::create_dir_all(path.parent().expect("a file has a parent")).expect("mkdir");
        std::fs::write(&path, content).expect("write a project file");
        path
    }

    /// Writes a script of model turns to `<ws>/scripts/<name>.yaml`; returns the path relative to
    /// the workspace, as `rawko/startTask` takes it.
    pub fn script(&self, name: &str, yaml: &str) -> String {
        let rel = format!("scripts/{name}.yaml");
        self.write(&rel, yaml);
        rel
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.ws.join(rel)
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read the starter directory") {
        let entry = entry.expect("directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a starter file");
        }
    }
}

/// The editor: one `rawko serve` process and what it has said.
pub struct Editor {
    child: Child,
    stdin: Arc<Mutex<ChildStdin>>,
    incoming: Receiver<Incoming>,
    /// Everything received, in arrival order.
    log: Vec<Value>,
    /// Which of `log` a `wait_for` (or a request) has taken.
    consumed: Vec<bool>,
    /// Why the server's stdout ended, once it did.
    closed: Option<String>,
    stderr: Arc<Mutex<Vec<u8>>>,
    /// How many bytes the server wrote to stderr in all.
    stderr_bytes: Arc<AtomicU64>,
    policy: Arc<Mutex<ApprovalPolicy>>,
    approvals: Arc<Mutex<Vec<Value>>>,
    next_id: i64,
    /// Whether a failure message already showed the report.
    reported: bool,
    workspace: PathBuf,
    _home: Option<TempDir>,
}

impl Editor {
    /// Starts `rawko serve --workspace <workspace>` with HOME, XDG_CONFIG_HOME, XDG_STATE_HOME and
    /// PI_CODING_AGENT_DIR in a temporary directory of its own.
    pub fn spawn(workspace: &Path) -> Self {
        let home = TempDir::new().expect("temp home");
        let mut editor = Self::spawn_in(workspace, home.path());
        editor._home = Some(home);
        editor
    }

    /// Like [`Editor::spawn`], with HOME and the XDG directories under `home`, which the caller
    /// keeps: a second server started on the same `home` sees the first one's stored tasks.
    pub fn spawn_in(workspace: &Path, home: &Path) -> Self {
        Self::spawn_with(workspace, home, None, &[])
    }

    /// Like [`Editor::spawn_in`], with more environment variables for the server.
    pub fn spawn_with_env(workspace: &Path, home: &Path, env: &[(&str, &str)]) -> Self {
        Self::spawn_with(workspace, home, None, env)
    }

    /// Like [`Editor::spawn_in`], with the server's limit of open files (`ulimit -n`) lowered to
    /// `open_files`, as on a machine with a small limit.
    pub fn spawn_limited(workspace: &Path, home: &Path, open_files: u32) -> Self {
        Self::spawn_with(workspace, home, Some(open_files), &[])
    }

    /// Like [`Editor::spawn_in`], with more arguments after `serve` (`--web`, say).
    pub fn spawn_with_args(workspace: &Path, home: &Path, args: &[&str]) -> Self {
        Self::spawn_full(workspace, home, None, &[], args)
    }

    fn spawn_with(
        workspace: &Path,
        home: &Path,
        open_files: Option<u32>,
        env: &[(&str, &str)],
    ) -> Self {
        Self::spawn_full(workspace, home, open_files, env, &[])
    }

    fn spawn_full(
        workspace: &Path,
        home: &Path,
        open_files: Option<u32>,
        env: &[(&str, &str)],
        args: &[&str],
    ) -> Self {
        let h = home;
        // RAWKO_TEST_BIN runs another build (an older one, to measure what a change did).
        let rawko = std::env::var("RAWKO_TEST_BIN")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_rawko").to_owned());
        let mut command = match open_files {
            None => Command::new(&rawko),
            Some(n) => {
                // The shell lowers the limit and becomes rawko (same process id).
                let mut c = Command::new("sh");
                c.arg("-c")
                    .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                    .arg(&rawko);
                c
            }
        };
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command
            .arg("serve")
            .args(args)
            .arg("--workspace")
            .arg(workspace)
            .current_dir(h)
            .env("HOME", h)
            .env("XDG_CONFIG_HOME", h.join(".config"))
            .env("XDG_STATE_HOME", h.join(".local/state"))
            .env("PI_CODING_AGENT_DIR", h.join(".pi/agent"))
            .env("XDG_RUNTIME_DIR", h.join("run"))
            .env("RAWKO_LOG", "warn,rawko=debug")
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start rawko serve");
        let stdin = Arc::new(Mutex::new(child.stdin.take().expect("stdin")));
        let stdout = child.stdout.take().expect("stdout");
        let mut child_stderr = child.stderr.take().expect("stderr");

        let stderr = Arc::new(Mutex::new(Vec::new()));
        let stderr_bytes = Arc::new(AtomicU64::new(0));
        let sink = stderr.clone();
        let count = stderr_bytes.clone();
        thread::spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match child_stderr.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        count.fetch_add(n as u64, Ordering::Relaxed);
                        let mut kept = lock(&sink);
                        kept.extend_from_slice(&buf[..n]);
                        // A flood of log is counted, not kept: only its last part stays.
                        if kept.len() > STDERR_KEPT {
                            let excess = kept.len() - STDERR_KEPT / 2;
                            kept.drain(..excess);
                        }
                    }
                }
            }
        });

        let policy: Arc<Mutex<ApprovalPolicy>> = Arc::new(Mutex::new(Box::new(|_: &Value| None)));
        let approvals = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        {
            let stdin = stdin.clone();
            let policy = policy.clone();
            let approvals = approvals.clone();
            thread::spawn(move || read_loop(stdout, &tx, &stdin, &policy, &approvals));
        }

        Self {
            child,
            stdin,
            incoming: rx,
            log: Vec::new(),
            consumed: Vec::new(),
            closed: None,
            stderr,
            stderr_bytes,
            policy,
            approvals,
            next_id: 1,
            reported: false,
            workspace: workspace.to_owned(),
            _home: None,
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Kills the server with SIGKILL, as a crash would, and waits for it to be gone.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.closed = Some("killed by the test".to_owned());
    }

    /// The state directory the server keeps its tasks in.
    pub fn state_dir(home: &Path) -> PathBuf {
        home.join(".local/state/rawko")
    }

    /// Sends `initialize` (with `rootUri`, `workspaceFolders` and `initializationOptions`), waits
    /// for its result, then sends `initialized`. Returns the result.
    pub fn initialize(&mut self, options: Value) -> Value {
        let uri = format!("file://{}", self.workspace.display());
        let result = self
            .request(
                "initialize",
                json!({
                    "processId": std::process::id(),
                    "clientInfo": {"name": "rawko-e2e", "version": "0"},
                    "rootUri": uri,
                    "workspaceFolders": [{"uri": uri, "name": "ws"}],
                    "capabilities": {},
                    "initializationOptions": options,
                }),
            )
            .unwrap_or_else(|e| panic!("initialize failed: {e}"));
        self.notify("initialized", json!({}));
        result
    }

    /// Sets how the editor answers `rawko/approveToolCall` from now on.
    pub fn set_approval_policy(
        &self,
        policy: impl Fn(&Value) -> Option<&'static str> + Send + 'static,
    ) {
        *lock(&self.policy) = Box::new(policy);
    }

    /// Every `rawko/approveToolCall` request seen so far (whole messages), in arrival order.
    pub fn approval_requests(&self) -> Vec<Value> {
        lock(&self.approvals).clone()
    }

    /// Sends a request and waits for its response: `Ok(result)` or `Err(error object)`.
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, Value> {
        self.request_within(method, params, TIMEOUT)
    }

    pub fn request_within(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, Value> {
        let id = self.send_request(method, params);
        self.response(id, &format!("the response to {method} (id {id})"), timeout)
    }

    /// Sends a request without waiting; returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Waits for the response with `id`.
    pub fn response(&mut self, id: i64, what: &str, timeout: Duration) -> Result<Value, Value> {
        let msg = self.wait_for(what, timeout, |m| is_response(m) && m["id"] == json!(id));
        match msg.get("error") {
            Some(error) => Err(error.clone()),
            None => Ok(msg.get("result").cloned().unwrap_or(Value::Null)),
        }
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Answers a request the server sent.
    pub fn reply(&self, id: &Value, result: Value) {
        write_frame(
            &self.stdin,
            &json!({"jsonrpc": "2.0", "id": id, "result": result}),
        );
    }

    /// Sends one well-formed frame.
    pub fn send(&mut self, message: &Value) {
        write_frame(&self.stdin, message);
    }

    /// Sends `body` with a correct `Content-Length` header.
    pub fn send_frame(&mut self, body: &[u8]) {
        let mut bytes = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        bytes.extend_from_slice(body);
        self.send_raw(&bytes);
    }

    /// Sends bytes exactly as given.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let mut stdin = lock(&self.stdin);
        stdin
            .write_all(bytes)
            .and_then(|()| stdin.flush())
            .unwrap_or_else(|e| panic!("cannot write to rawko's stdin: {e}"));
    }

    /// The first message not yet taken that `matches`, among those received so far or arriving
    /// within `timeout`. Panics with what did arrive when none does.
    pub fn wait_for(
        &mut self,
        what: &str,
        timeout: Duration,
        matches: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + timeout;
        let mut next = 0;
        loop {
            while next < self.log.len() {
                if !self.consumed[next] && matches(&self.log[next]) {
                    self.consumed[next] = true;
                    return self.log[next].clone();
                }
                next += 1;
            }
            if !self.receive_until(deadline) {
                let why = match &self.closed {
                    Some(closed) => format!("rawko stopped talking ({closed})"),
                    None => format!("nothing matched within {timeout:?}"),
                };
                let report = self.report();
                self.reported = true;
                panic!("waiting for {what}: {why}\n{report}");
            }
        }
    }

    /// The notifications about `task_id` received so far, in arrival order.
    pub fn notifications(&mut self, task_id: &str) -> Vec<Value> {
        self.drain();
        self.log
            .iter()
            .filter(|m| m.get("id").is_none() && m["params"]["taskId"] == json!(task_id))
            .cloned()
            .collect()
    }

    /// Everything received so far, in arrival order.
    pub fn received(&mut self) -> Vec<Value> {
        self.drain();
        self.log.clone()
    }

    /// What the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&lock(&self.stderr)).into_owned()
    }

    /// How many bytes the server has written to stderr so far (more than [`Editor::stderr`]
    /// keeps when it floods).
    pub fn stderr_bytes(&self) -> u64 {
        self.stderr_bytes.load(Ordering::Relaxed)
    }

    /// The server's exit status, once it has exited (waits up to `timeout` for it).
    pub fn exit_status(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// Takes what the reader thread has queued, without waiting.
    fn drain(&mut self) {
        while self.receive_until(Instant::now()) {}
    }

    /// Receives one message, waiting until `deadline`. False when nothing came (or nothing will).
    fn receive_until(&mut self, deadline: Instant) -> bool {
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.incoming.recv_timeout(wait) {
            Ok(Incoming::Message(m)) => {
                self.log.push(m);
                self.consumed.push(false);
                true
            }
            Ok(Incoming::NotJson(text)) => {
                self.log.push(json!({"notJson": text}));
                self.consumed.push(false);
                true
            }
            Ok(Incoming::Closed(why)) => {
                self.closed = Some(why);
                false
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => {
                if self.closed.is_none() {
                    self.closed = Some("the reader thread ended".to_owned());
                }
                false
            }
        }
    }

    /// The last messages received and the tail of stderr, for a failure message.
    fn report(&mut self) -> String {
        // What arrived but no wait took yet belongs in the report too.
        self.drain();
        let status = match self.closed {
            Some(_) => match self.exit_status(Duration::from_secs(1)) {
                Some(s) => format!("rawko exited: {s}\n"),
                None => "rawko's stdout closed but the process still runs\n".to_owned(),
            },
            None => String::new(),
        };
        const SHOWN: usize = 60;
        let skip = self.log.len().saturating_sub(SHOWN);
        let mut out = format!(
            "{status}--- received ({} messages{}):\n",
            self.log.len(),
            if skip > 0 {
                format!(", the last {SHOWN} shown")
            } else {
                String::new()
            }
        );
        for (i, m) in self.log.iter().enumerate().skip(skip) {
            let mark = if self.consumed[i] { "  " } else { "* " };
            out.push_str(mark);
            out.push_str(&shorten(&m.to_string(), 400));
            out.push('\n');
        }
        out.push_str("--- rawko's stderr (tail):\n");
        out.push_str(&tail(&self.stderr(), 6000));
        out
    }
}

impl Drop for Editor {
    #[allow(clippy::print_stderr)]
    fn drop(&mut self) {
        if thread::panicking() && !self.reported {
            // The panic message may not have shown them (an assertion in the test body).
            let report = self.report();
            eprintln!("--- rawko serve, at the failure:\n{report}");
        }
        if self.closed.is_none() && self.child.try_wait().ok().flatten().is_none() {
            let id = self.next_id;
            self.next_id += 1;
            let shutdown =
                json!({"jsonrpc": "2.0", "id": id, "method": "shutdown", "params": null});
            if try_write_frame(&self.stdin, &shutdown) {
                let deadline = Instant::now() + Duration::from_secs(3);
                'wait: loop {
                    for m in &self.log {
                        if is_response(m) && m["id"] == json!(id) {
                            break 'wait;
                        }
                    }
                    if !self.receive_until(deadline) {
                        break;
                    }
                }
                try_write_frame(
                    &self.stdin,
                    &json!({"jsonrpc": "2.0", "method": "exit", "params": null}),
                );
            }
        }
        if self.exit_status(Duration::from_secs(3)).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Message helpers
// ---------------------------------------------------------------------------------------------

pub fn is_response(m: &Value) -> bool {
    m.get("method").is_none() && (m.get("result").is_some() || m.get("error").is_some())
}

/// A notification of `method` about `task_id`.
pub fn is_note(m: &Value, method: &str, task_id: &str) -> bool {
    m.get("id").is_none() && m["method"] == method && m["params"]["taskId"] == json!(task_id)
}

pub fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        format!(
            "{}… ({} bytes)",
            s.chars().take(max).collect::<String>(),
            s.len()
        )
    }
}

fn tail(s: &str, max: usize) -> String {
    let count = s.chars().count();
    if count <= max {
        s.to_owned()
    } else {
        format!("…{}", s.chars().skip(count - max).collect::<String>())
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn frame(message: &Value) -> Vec<u8> {
    let body = message.to_string();
    let mut bytes = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    bytes.extend_from_slice(body.as_bytes());
    bytes
}

fn try_write_frame(stdin: &Mutex<ChildStdin>, message: &Value) -> bool {
    let mut stdin = lock(stdin);
    stdin
        .write_all(&frame(message))
        .and_then(|()| stdin.flush())
        .is_ok()
}

fn write_frame(stdin: &Mutex<ChildStdin>, message: &Value) {
    assert!(
        try_write_frame(stdin, message),
        "cannot write to rawko's stdin (has it exited?): {}",
        shorten(&message.to_string(), 200)
    );
}

/// Reads frames until stdout closes; answers approval requests by the policy.
fn read_loop(
    stdout: ChildStdout,
    tx: &Sender<Incoming>,
    stdin: &Mutex<ChildStdin>,
    policy: &Mutex<ApprovalPolicy>,
    approvals: &Mutex<Vec<Value>>,
) {
    let mut reader = BufReader::new(stdout);
    loop {
        let body = match read_frame(&mut reader) {
            Ok(Some(body)) => body,
            Ok(None) => {
                let _ = tx.send(Incoming::Closed("end of stdout".to_owned()));
                return;
            }
            Err(e) => {
                let _ = tx.send(Incoming::Closed(format!("bad frame from rawko: {e}")));
                return;
            }
        };
        let message: Value = match serde_json::from_slice(&body) {
            Ok(m) => m,
            Err(_) => {
                let _ = tx.send(Incoming::NotJson(
                    String::from_utf8_lossy(&body).into_owned(),
                ));
                continue;
            }
        };
        if message["method"] == "rawko/approveToolCall" && message.get("id").is_some() {
            lock(approvals).push(message.clone());
            let outcome = (lock(policy))(&message["params"]);
            if let Some(outcome) = outcome {
                let answer =
                    json!({"jsonrpc": "2.0", "id": message["id"], "result": {"outcome": outcome}});
                // The server may be gone; the main thread will notice.
                let _ = try_write_frame(stdin, &answer);
            }
        }
        if tx.send(Incoming::Message(message)).is_err() {
            return;
        }
    }
}

/// One LSP frame's body; `None` at a clean end of stream.
fn read_frame(reader: &mut impl BufRead) -> std::io::Result<Option<Vec<u8>>> {
    let mut length = None;
    let mut line = String::new();
    let mut first = true;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return if first {
                Ok(None)
            } else {
                Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "stdout ended inside a header",
                ))
            };
        }
        first = false;
        let header = line.trim_end_matches(['\r', '\n']);
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse::<usize>().ok();
            }
        }
    }
    let length = length.ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "a frame without Content-Length",
        )
    })?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Some(body))
}

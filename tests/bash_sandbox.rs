//! Bash's kernel sandbox and the reaper, through the real `rawko __exec` helper (invariant 7):
//! escape attempts from Bash tool calls, which the kernel refuses, the ordinary commands that
//! still work, and processes a Bash call or a hook starts with `setsid`, `nohup` or a double fork,
//! which must not outlive the call however it ends (exit, timeout, cancel).
//!
//! The tools run in this process (the library), with the built `rawko` binary as their helper.
//! Tests that need Landlock check that the kernel has it and say so when it does not.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rawko::hooks::envfile::EnvChange;
use rawko::hooks::process;
use rawko::tools::{self, BashEnv, ToolContext, ToolOutput, WorkspaceAccess};
use serde_json::json;
use tempfile::TempDir;

/// A workspace, a home directory with secrets and a toolchain in it, and a directory beside the
/// workspace, all in one temporary directory.
struct Fixture {
    _dir: TempDir,
    ws: PathBuf,
    home: PathBuf,
    outside: PathBuf,
    ctx: ToolContext,
}

fn fixture() -> Fixture {
    rawko::sandbox::set_helper(env!("CARGO_BIN_EXE_rawko"));
    let dir = TempDir::new().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    let (ws, home, outside) = (root.join("ws"), root.join("home"), root.join("outside"));
    for d in [&ws, &home.join(".ssh"), &home.join(".cargo/bin"), &outside] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(ws.join("notes.txt"), "workspace notes\n").expect("write");
    std::fs::write(home.join(".ssh/id_ed25519"), "SECRET-KEY\n").expect("write");
    std::fs::write(home.join(".cargo/bin/tool"), "a toolchain file\n").expect("write");
    std::fs::write(outside.join("secret.txt"), "SECRET-BESIDE\n").expect("write");
    let mut ctx = ToolContext::new(&ws).expect("context");
    ctx.sandbox.home = Some(home.clone());
    ctx.sandbox.temp_dir = Some(root.join("state/tasks/t1/tmp"));
    ctx.bash_env = BashEnv(vec![EnvChange::Set(
        "HOME".into(),
        home.display().to_string(),
    )]);
    Fixture {
        _dir: dir,
        ws,
        home,
        outside,
        ctx,
    }
}

/// Whether the kernel offers Landlock; if not, the test says so and passes.
fn landlock() -> bool {
    match rawko::sandbox::landlock_support() {
        Ok(_) => true,
        Err(why) => {
            note(&format!("skipped: {why}"));
            false
        }
    }
}

async fn bash(ctx: &ToolContext, command: &str, access: WorkspaceAccess) -> ToolOutput {
    tools::run_with("Bash", &json!({"command": command}), ctx, access).await
}

#[tokio::test]
async fn writes_outside_the_workspace_are_refused_by_the_kernel() {
    if !landlock() {
        return;
    }
    let f = fixture();
    let stamp = format!("{}-{}", std::process::id(), next());
    let in_tmp = PathBuf::from(format!("/tmp/rawko-escape-{stamp}"));
    let in_real_home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .map(|h| h.join(format!("rawko-escape-{stamp}")));
    let mut attempts = vec![
        format!("touch {}", in_tmp.display()),
        format!("echo x > {}", in_tmp.display()),
        "touch \"$HOME/escaped\"".to_owned(),
        format!("cp notes.txt {}/copied", f.outside.display()),
        "mkdir ../made-beside".to_owned(),
        "ln -s /etc/passwd ../linked".to_owned(),
    ];
    if let Some(real) = &in_real_home {
        attempts.push(format!("touch {}", real.display()));
    }
    for command in &attempts {
        let out = bash(&f.ctx, command, WorkspaceAccess::ReadWrite).await;
        assert!(out.is_error, "{command}: {out:?}");
        assert!(
            out.content.contains("Permission denied"),
            "{command}: {}",
            out.content
        );
    }
    let escaped = [
        Some(in_tmp),
        in_real_home,
        Some(f.home.join("escaped")),
        Some(f.outside.join("copied")),
        Some(f.ws.parent().unwrap().join("made-beside")),
        Some(f.ws.parent().unwrap().join("linked")),
    ];
    for path in escaped.iter().flatten() {
        let exists = path.symlink_metadata().is_ok();
        if exists {
            let _ = std::fs::remove_file(path);
        }
        assert!(!exists, "{} was written from Bash", path.display());
    }
}

/// Landlock (up to ABI 7) does not govern connecting to a Unix socket by path, and a server
/// behind one may run commands for whoever connects (D-Bus's `systemd-run --user`, Docker,
/// `tmux send-keys`, an ssh agent): Bash may not make one, unless the user allows it. A socket
/// pair, which names nothing, still works.
#[tokio::test]
async fn bash_cannot_reach_a_unix_socket_unless_the_user_allows_it() {
    if !landlock() || !has_program("python3") {
        return;
    }
    let mut f = fixture();
    // The socket lives outside the workspace, as the user's services' do.
    let path = f.outside.join("control.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let connect = format!(
        "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"{}\"); s.sendall(b\"touch /tmp/ran\\n\"); print(\"connected\")'",
        path.display()
    );
    let accepted = |listener: &std::os::unix::net::UnixListener| {
        let mut n = 0;
        while listener.accept().is_ok() {
            n += 1;
        }
        n
    };
    let out = bash(&f.ctx, &connect, WorkspaceAccess::ReadWrite).await;
    assert!(out.is_error, "{out:?}");
    assert!(out.content.contains("Permission denied"), "{out:?}");
    assert_eq!(accepted(&listener), 0, "Bash reached the socket: {out:?}");
    // socat, nc -U and the like fail the same way; a socket pair still works.
    let out = bash(
        &f.ctx,
        "python3 -c 'import socket; a, b = socket.socketpair(); a.sendall(b\"x\"); print(b.recv(1))'",
        WorkspaceAccess::ReadWrite,
    )
    .await;
    assert!(!out.is_error && out.content.contains("b'x'"), "{out:?}");
    // The user's `"unixSockets": true` allows them.
    f.ctx.sandbox.settings.unix_sockets = true;
    let out = bash(&f.ctx, &connect, WorkspaceAccess::ReadWrite).await;
    assert!(out.content.contains("connected"), "{out:?}");
    assert_eq!(accepted(&listener), 1, "{out:?}");
}

#[tokio::test]
async fn secrets_outside_the_allowed_paths_cannot_be_read() {
    if !landlock() {
        return;
    }
    let f = fixture();
    for command in [
        "cat \"$HOME/.ssh/id_ed25519\"",
        "ls \"$HOME/.ssh\"",
        "cat ../outside/secret.txt",
        "ls \"$HOME\"",
    ] {
        let out = bash(&f.ctx, command, WorkspaceAccess::ReadWrite).await;
        assert!(out.is_error, "{command}: {out:?}");
        assert!(
            out.content.contains("Permission denied") && !out.content.contains("SECRET"),
            "{command}: {}",
            out.content
        );
    }
    // Signals reach only processes inside the sandbox: not rawko.
    let out = bash(
        &f.ctx,
        &format!("kill -0 {}", std::process::id()),
        WorkspaceAccess::ReadWrite,
    )
    .await;
    assert!(out.is_error, "{out:?}");
    // A toolchain directory under the home is readable, not writable.
    let out = bash(
        &f.ctx,
        "cat \"$HOME/.cargo/bin/tool\" && touch \"$HOME/.cargo/bin/new\"",
        WorkspaceAccess::ReadWrite,
    )
    .await;
    assert!(out.content.starts_with("a toolchain file\n"), "{out:?}");
    assert!(out.content.contains("Permission denied"), "{out:?}");
    assert!(!f.home.join(".cargo/bin/new").exists());
}

#[tokio::test]
async fn in_a_read_only_phase_writers_the_command_check_misses_are_refused() {
    if !landlock() {
        return;
    }
    let f = fixture();
    let mut writers = vec![
        ("echo x > f0", "f0"),
        ("rm notes.txt", "notes.txt"),
        ("sh -c 'touch f4'", "f4"),
        ("python3 -c \"open('f3', 'w').write('x')\"", "f3"),
        (
            "perl -e 'open(my $f, \">\", \"f5\") or die \"$!\\n\"'",
            "f5",
        ),
    ];
    // Writers rawko's reading of the command does not see: only the kernel stops them. (Not
    // `script`: Bash may not open a pseudo-terminal at all.)
    let missed = [
        ("iconv -f utf-8 -t utf-8 -o f1 notes.txt", "f1"),
        ("openssl rand -out f2 4", "f2"),
    ];
    for (command, _) in missed {
        let parts = rawko::workflow::shell::commands(command);
        assert!(
            parts.iter().all(|c| !c.effect.writes()),
            "{command} is now seen as writing: pick another"
        );
    }
    writers.extend(missed);
    for (command, file) in writers {
        let program = command.split_whitespace().next().unwrap_or_default();
        if !has_program(program) {
            note(&format!("{program} is not installed: {command} not tried"));
            continue;
        }
        let out = bash(&f.ctx, command, WorkspaceAccess::ReadOnly).await;
        let path = f.ws.join(file);
        if file == "notes.txt" {
            assert!(path.exists(), "{command} removed it: {out:?}");
        } else {
            assert!(!path.exists(), "{command} wrote {file}: {out:?}");
        }
        assert!(
            out.content.contains("Permission denied")
                || out.content.contains("Read-only file system")
                || out.content.contains("Operation not permitted"),
            "{command}: {out:?}"
        );
        // A failed command says why (one that exits 0 whatever it failed to do gets no note).
        assert_eq!(
            out.is_error,
            out.content.contains(
                "[the workspace is read-only to this command: the phase does not allow writing]"
            ),
            "{command}: {out:?}"
        );
    }
    // The same writer runs where the phase allows writing.
    let out = bash(
        &f.ctx,
        "iconv -f utf-8 -t utf-8 -o f1 notes.txt",
        WorkspaceAccess::ReadWrite,
    )
    .await;
    if has_program("iconv") {
        assert!(f.ws.join("f1").exists(), "{out:?}");
    }
}

#[tokio::test]
async fn ordinary_commands_still_work_under_the_sandbox() {
    if !landlock() {
        return;
    }
    let f = fixture();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&f.ws)
        .status();
    for (command, access, expected) in [
        ("ls", WorkspaceAccess::ReadOnly, "notes.txt\n"),
        ("cat notes.txt", WorkspaceAccess::ReadOnly, "workspace notes\n"),
        (
            "echo scratch > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && f=$(mktemp) && echo ok > \"$f\" && cat \"$f\"",
            WorkspaceAccess::ReadOnly,
            "scratch\nok\n",
        ),
        (
            "echo made > new.txt && cat new.txt && rm new.txt",
            WorkspaceAccess::ReadWrite,
            "made\n",
        ),
        (
            "echo out >/dev/null; echo err >&2 2>/dev/null; echo to-stdout > /dev/stdout",
            WorkspaceAccess::ReadOnly,
            "to-stdout\n",
        ),
        ("head -c 4 /dev/urandom | wc -c", WorkspaceAccess::ReadOnly, "4\n"),
    ] {
        let out = bash(&f.ctx, command, access).await;
        assert!(!out.is_error, "{command}: {out:?}");
        assert!(out.content.starts_with(expected), "{command}: {out:?}");
    }
    if matches!(git, Ok(s) if s.success()) {
        let out = bash(
            &f.ctx,
            "git status --short && git add notes.txt && git -c user.name=t -c user.email=t@e commit -qm one && git log --format=%s",
            WorkspaceAccess::ReadWrite,
        )
        .await;
        assert!(!out.is_error, "{out:?}");
        assert!(out.content.starts_with("?? notes.txt\none\n"), "{out:?}");
        let out = bash(&f.ctx, "git status --short", WorkspaceAccess::ReadOnly).await;
        assert_eq!(out, ToolOutput::ok("exit code 0"));
    }
    // The real home's toolchain, where there is one.
    let mut ctx = f.ctx.clone();
    ctx.bash_env = BashEnv::default();
    ctx.sandbox.home = std::env::var_os("HOME").map(PathBuf::from);
    if has_program("cargo") {
        let out = bash(&ctx, "cargo --version", WorkspaceAccess::ReadOnly).await;
        assert!(out.content.starts_with("cargo "), "{out:?}");
    }
}

#[tokio::test]
async fn the_temp_dir_is_bashs_tmpdir_and_private() {
    let f = fixture();
    let out = bash(&f.ctx, "echo \"$TMPDIR\"", WorkspaceAccess::ReadOnly).await;
    let tmp = f.ctx.sandbox.temp_dir.clone().unwrap();
    assert_eq!(out.content, format!("{}\nexit code 0", tmp.display()));
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&tmp).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700);
}

// ---- survivors ------------------------------------------------------------------------------

static COUNTER: AtomicU32 = AtomicU32::new(1);

fn next() -> u32 {
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

/// A number no other process has in its command line: `sleep` takes it as its duration.
fn marker() -> String {
    format!("300.{}{:03}", std::process::id(), next())
}

/// The command that starts three processes that try to outlive it, each `sleep MARKER`, waits
/// until all three are there and says how many it saw. The marker is put together in the shell,
/// so no command line but the sleeps' holds it.
fn escapers(marker: &str) -> String {
    let (head, tail) = marker.split_at(5);
    format!(
        "M={head}; M=\"$M\"{tail}; export M; \
         setsid sleep \"$M\" >/dev/null 2>&1 & \
         nohup sleep \"$M\" >/dev/null 2>&1 & \
         (sh -c 'sleep \"$M\" >/dev/null 2>&1 &' &); \
         for i in $(seq 100); do [ \"$(pgrep -fc \"^sleep $M$\")\" -ge 3 ] && break; sleep 0.05; done; \
         echo \"started $(pgrep -fc \"^sleep $M$\")\""
    )
}

/// How many processes are `sleep MARKER`.
fn count(marker: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let wanted = format!("sleep\0{marker}\0");
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .filter(|cmdline| cmdline == wanted.as_bytes())
        .count()
}

/// Waits up to 5 s for no process with `marker`; the count left.
async fn survivors(marker: &str) -> usize {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        let n = count(marker);
        if n == 0 || Instant::now() > until {
            return n;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits (up to 10 s) until the three escapers run.
async fn started(marker: &str) {
    let until = Instant::now() + Duration::from_secs(10);
    while count(marker) < 3 {
        assert!(Instant::now() < until, "the escapers did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn nothing_a_bash_call_starts_outlives_it() {
    let f = fixture();
    // The command exits.
    let m = marker();
    let started_at = Instant::now();
    let out = bash(&f.ctx, &escapers(&m), WorkspaceAccess::ReadWrite).await;
    assert!(started_at.elapsed() < Duration::from_secs(10));
    assert_eq!(
        out,
        ToolOutput::ok("started 3\n[processes the command left running were ended]\nexit code 0")
    );
    assert_eq!(survivors(&m).await, 0, "after exit");

    // The command times out.
    let m = marker();
    let input = json!({"command": format!("{}; sleep 30", escapers(&m)), "timeout": 1000});
    let out = tools::run("Bash", &input, &f.ctx).await;
    assert!(out.content.contains("started 3\n"), "{out:?}");
    assert!(out.content.contains("timed out after 1 s"), "{out:?}");
    assert_eq!(survivors(&m).await, 0, "after timeout");

    // The call is cancelled: its future dropped.
    let m = marker();
    let input = json!({"command": format!("{}; sleep 30", escapers(&m))});
    tokio::select! {
        out = tools::run("Bash", &input, &f.ctx) => panic!("the command finished: {out:?}"),
        () = started(&m) => {}
    }
    assert_eq!(survivors(&m).await, 0, "after cancel");
}

async fn hook(command: &str, timeout: Duration) -> process::CommandResult {
    rawko::sandbox::set_helper(env!("CARGO_BIN_EXE_rawko"));
    let dir = std::env::temp_dir();
    process::run(
        command,
        &[],
        b"{\"hook_event_name\":\"PreToolUse\"}",
        &dir,
        timeout,
        Duration::from_millis(500),
    )
    .await
}

#[tokio::test]
async fn nothing_a_hook_starts_outlives_it() {
    // The hook exits (and read its input first, as hooks do).
    let m = marker();
    let r = hook(
        &format!("cat >/dev/null; {}", escapers(&m)),
        Duration::from_secs(10),
    )
    .await;
    assert_eq!(r.exit, process::Exit::Code(0), "{r:?}");
    assert_eq!(r.stdout, "started 3\n");
    assert_eq!(r.stderr, "", "the helper's marker is taken off");
    assert!(r.left_running);
    assert_eq!(survivors(&m).await, 0, "after exit");

    // The hook times out.
    let m = marker();
    let r = hook(
        &format!("{}; sleep 30", escapers(&m)),
        Duration::from_secs(2),
    )
    .await;
    assert_eq!(r.exit, process::Exit::TimedOut, "{r:?}");
    assert_eq!(r.stdout, "started 3\n");
    assert_eq!(survivors(&m).await, 0, "after timeout");

    // The task is cancelled while the hook runs.
    let m = marker();
    let command = format!("{}; sleep 30", escapers(&m));
    tokio::select! {
        r = hook(&command, Duration::from_secs(60)) => panic!("the hook finished: {r:?}"),
        () = started(&m) => {}
    }
    assert_eq!(survivors(&m).await, 0, "after cancel");
}

/// A hook that exits without leaving anything: no note, its code and output as they were.
#[tokio::test]
async fn a_hook_through_the_helper_keeps_its_codes_and_output() {
    let r = hook("cat; echo oops >&2; exit 3", Duration::from_secs(10)).await;
    assert_eq!(r.exit, process::Exit::Code(3));
    assert_eq!(r.stdout, "{\"hook_event_name\":\"PreToolUse\"}");
    assert_eq!(r.stderr, "oops\n");
    assert!(!r.left_running);
    let r = hook("kill -SEGV $$", Duration::from_secs(10)).await;
    assert_eq!(r.exit, process::Exit::Signal("SIGSEGV".into()));
    let r = hook("echo \"$CLAUDE_PROJECT_DIR\"", Duration::from_secs(10)).await;
    assert_eq!(
        Path::new(r.stdout.trim_end()),
        std::env::temp_dir().as_path()
    );
    let r = hook("./no-such-hook.sh", Duration::from_secs(10)).await;
    assert_eq!(r.exit, process::Exit::Code(127));
}

/// A line for whoever runs the tests.
#[allow(clippy::print_stderr)]
fn note(text: &str) {
    eprintln!("{text}");
}

fn has_program(name: &str) -> bool {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {name} >/dev/null"))
        .status()
        .is_ok_and(|s| s.success())
}

// ---- through `rawko run` -------------------------------------------------------------------

/// A project with a workflow whose first phase allows only Read and Bash (no writing) and whose
/// second allows everything, and a home of its own.
struct Project {
    _dir: TempDir,
    root: PathBuf,
}

impl Project {
    fn new(config: &str) -> Self {
        let dir = TempDir::new().expect("temp dir");
        let root = dir.path().canonicalize().expect("canonical");
        let wf = root.join("project/.rawko/workflows/ro");
        std::fs::create_dir_all(&wf).expect("mkdir");
        std::fs::create_dir_all(root.join("home/.config/rawko")).expect("mkdir");
        std::fs::write(root.join("home/.config/rawko/config.json"), config).expect("write");
        for (file, text) in [
            (
                "workflow.yaml",
                "name: Look first\ncommandName: ro\ninitialMessage: \"{description}\"\nphases:\n  - look.md\n  - make.md\n",
            ),
            (
                "look.md",
                "---\nid: look\nname: Look\nemoji: \"👀\"\ntools:\n  whitelist: [Read, Bash]\n---\nLook only.\n",
            ),
            ("make.md", "---\nid: make\nname: Make\nemoji: \"🔨\"\n---\nMake it.\n"),
        ] {
            std::fs::write(wf.join(file), text).expect("write");
        }
        Project { _dir: dir, root }
    }

    fn ws(&self) -> PathBuf {
        self.root.join("project")
    }

    /// `rawko run` of `script` in the workflow; its output (both streams).
    fn run(&self, script: &str, env: &[(&str, &str)]) -> String {
        std::fs::write(self.ws().join("s.yaml"), script).expect("write");
        let home = self.root.join("home");
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_rawko"));
        cmd.args([
            "run",
            "try it",
            "--workflow",
            "ro",
            "--script",
            "s.yaml",
            "--deny",
        ])
        .current_dir(self.ws())
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_RUNTIME_DIR", home.join("run"))
        .env_remove(rawko::sandbox::PRETEND_NO_LANDLOCK)
        .stdin(std::process::Stdio::null());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run rawko");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "{text}");
        text
    }
}

const WRITERS_IN_BOTH_PHASES: &str = r#"
turns:
  - tool_calls:
      - {name: Bash, input: {command: "iconv -f utf-8 -t utf-8 -o f1 s.yaml 2>&1"}}
      - {name: Bash, input: {command: "openssl rand -out f2 4"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: Bash, input: {command: "iconv -f utf-8 -t utf-8 -o f3 s.yaml; echo made > f4; echo \"$TMPDIR\" > tmpdir"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Done."
"#;

/// The actor tells the tool what the phase allows: the writers the gate lets through in the
/// read-only phase are refused by the kernel, and the same ones run in the next phase. The task's
/// TMPDIR is removed when it ends.
#[test]
fn a_phase_that_does_not_allow_writing_is_enforced_by_the_kernel() {
    if !landlock() || !has_program("iconv") || !has_program("openssl") {
        return;
    }
    let p = Project::new("{}");
    let shown = p.run(WRITERS_IN_BOTH_PHASES, &[]);
    assert!(
        shown.contains("iconv: cannot open output file: Permission denied"),
        "{shown}"
    );
    let ws = p.ws();
    assert!(
        !ws.join("f1").exists() && !ws.join("f2").exists(),
        "{shown}"
    );
    assert!(ws.join("f3").exists() && ws.join("f4").exists(), "{shown}");
    let tmp = std::fs::read_to_string(ws.join("tmpdir")).expect("tmpdir");
    let tmp = Path::new(tmp.trim_end());
    assert!(tmp.ends_with("tmp"), "{}", tmp.display());
    assert!(
        tmp.starts_with(p.root.join("home/.local/state/rawko/tasks")),
        "{}",
        tmp.display()
    );
    assert!(!tmp.exists(), "the task's temp dir is removed when it ends");
    assert!(!shown.contains("without the kernel sandbox"), "{shown}");
}

/// Toolchains outside the home's usual names, as on CI machines and in containers: a program in a
/// directory on rawko's PATH, and `cargo` under a CARGO_HOME a SessionStart hook sets through
/// `CLAUDE_ENV_FILE` (run by its path, which the gate lets run only where writing is allowed),
/// both in a temporary directory, run under Landlock. PATH entries that would
/// open too much (`/`, an empty one) are left out, and the task says so once.
#[test]
fn toolchains_the_environment_names_run_wherever_they_are() {
    if !landlock() {
        return;
    }
    let dir = TempDir::new().expect("temp dir");
    let ci = dir.path().canonicalize().expect("canonical");
    let (tools, cargo) = (ci.join("tools/bin"), ci.join("cargo home"));
    for (file, text) in [
        (
            tools.join("hello-tool"),
            "#!/bin/sh\necho hello from a tool on the PATH\n",
        ),
        (
            cargo.join("bin/cargo"),
            "#!/bin/sh\necho \"cargo 9.9.9 (from CARGO_HOME $1)\"\n",
        ),
    ] {
        std::fs::create_dir_all(file.parent().unwrap()).expect("mkdir");
        std::fs::write(&file, text).expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let hook = format!(
        "echo 'export CARGO_HOME=\"{}\"' >> \"$CLAUDE_ENV_FILE\"",
        cargo.display()
    );
    let p = Project::new(
        &json!({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": hook}]}]}})
            .to_string(),
    );
    let path = format!(
        "{}:{}:/:",
        tools.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let shown = p.run(
        r#"
turns:
  - tool_calls:
      - {name: Bash, input: {command: "hello-tool"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: Bash, input: {command: "\"$CARGO_HOME/bin/cargo\" --version"}}
      - {name: workflow_step, input: {action: next}}
  - text: "Done."
"#,
        &[("PATH", &path)],
    );
    assert!(shown.contains("↳ hello from a tool on the PATH"), "{shown}");
    assert!(
        shown.contains("↳ cargo 9.9.9 (from CARGO_HOME --version)"),
        "{shown}"
    );
    assert_eq!(
        shown
            .matches("note: Bash's sandbox does not open PATH entry /, PATH entry \"\": it would open too much")
            .count(),
        1,
        "{shown}"
    );
}

/// `sandbox: "required"` on a kernel without Landlock: Bash is refused with a message that says
/// why and what to change, and nothing it was asked to do happens.
#[test]
fn required_refuses_bash_where_landlock_is_missing() {
    let p = Project::new(r#"{"sandbox": "required"}"#);
    let shown = p.run(
        WRITERS_IN_BOTH_PHASES,
        &[(rawko::sandbox::PRETEND_NO_LANDLOCK, "1")],
    );
    let refusal = "✗ Bash is not run: the \"sandbox\" setting is \"required\" and the kernel sandbox cannot be used here: Landlock is reported unavailable because RAWKO_TEST_NO_LANDLOCK is set. Set \"sandbox\" to \"auto\" in ~/.config/rawko/config.json to run Bash unconfined instead.";
    assert_eq!(shown.matches(refusal).count(), 3, "{shown}");
    for f in ["f1", "f2", "f3", "f4", "tmpdir"] {
        assert!(!p.ws().join(f).exists(), "{f}: {shown}");
    }
}

/// `auto` on a kernel without Landlock: Bash runs as before (only the gate stands in the way),
/// and the task says so once.
#[test]
fn auto_without_landlock_says_so_once_and_runs_bash_as_before() {
    let p = Project::new("{}");
    let shown = p.run(
        WRITERS_IN_BOTH_PHASES,
        &[(rawko::sandbox::PRETEND_NO_LANDLOCK, "1")],
    );
    assert_eq!(
        shown
            .matches("note: Bash runs without the kernel sandbox: Landlock is reported unavailable because RAWKO_TEST_NO_LANDLOCK is set.")
            .count(),
        1,
        "{shown}"
    );
    assert!(p.ws().join("f4").exists(), "{shown}");
    if has_program("iconv") {
        assert!(p.ws().join("f1").exists(), "unconfined, as before: {shown}");
    }
}

/// `rawko config show` says what the sandbox does here, and that a workspace cannot loosen it.
#[test]
fn config_show_says_what_the_sandbox_does() {
    let p = Project::new(r#"{"sandbox": {"mode": "auto", "allowRead": ["~/.m2"]}}"#);
    std::fs::write(p.ws().join(".rawko/config.json"), r#"{"sandbox": "off"}"#).expect("write");
    let home = p.root.join("home");
    let show = |env: &[(&str, &str)]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_rawko"));
        cmd.args(["config", "show"])
            .current_dir(p.ws())
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env_remove(rawko::sandbox::PRETEND_NO_LANDLOCK);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run rawko");
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let shown = show(&[(rawko::sandbox::PRETEND_NO_LANDLOCK, "1")]);
    assert!(
        shown.contains("  sandbox                 auto: Landlock is not available (Landlock is reported unavailable because RAWKO_TEST_NO_LANDLOCK is set); Bash runs unconfined; also reads ~/.m2\n"),
        "{shown}"
    );
    assert!(
        shown.contains("/.rawko/config.json: sandbox is not read from a workspace's config, which the agents working in it can write; set it in ~/.config/rawko/config.json"),
        "{shown}"
    );
    if let Ok(abi) = rawko::sandbox::landlock_support() {
        let shown = show(&[]);
        assert!(
            shown.contains(&format!("  sandbox                 auto: Landlock (ABI {abi}) confines Bash to the workspace and its task's temp dir; also reads ~/.m2\n")),
            "{shown}"
        );
    }
}

/// A `.git` file the agent writes (`gitdir: <a directory outside>`) opens nothing: a later Bash
/// call cannot write there, and a later task's read-only phase cannot read there. The task says
/// once why the file is not followed.
#[test]
fn a_git_file_the_agent_writes_opens_nothing_outside() {
    if !landlock() {
        return;
    }
    let p = Project::new("{}");
    let outside = p.root.join("outside");
    std::fs::create_dir_all(&outside).expect("mkdir");
    std::fs::write(outside.join("secret.txt"), "SECRET-OUTSIDE\n").expect("write");
    let planted = outside.join("planted");
    let first = format!(
        r#"
turns:
  - tool_calls:
      - {{name: workflow_step, input: {{action: next}}}}
  - tool_calls:
      - {{name: Write, input: {{path: .git, content: "gitdir: {outside}\n"}}}}
  - tool_calls:
      - {{name: Bash, input: {{command: "echo x > {planted}"}}}}
  - tool_calls:
      - {{name: workflow_step, input: {{action: next}}}}
  - text: "Done."
"#,
        outside = outside.display(),
        planted = planted.display(),
    );
    let shown = p.run(&first, &[]);
    assert!(
        std::fs::read_to_string(p.ws().join(".git")).is_ok_and(|t| t.starts_with("gitdir:")),
        "the Write happened: {shown}"
    );
    assert!(!planted.exists(), "Bash wrote outside: {shown}");
    assert_eq!(
        shown
            .matches(&format!(
                "note: the workspace's .git names {}, which git does not know as a worktree or submodule of {}: Bash gets no access to it, and rawko's git does not run there",
                outside.display(),
                p.ws().display()
            ))
            .count(),
        1,
        "{shown}"
    );

    // The next task reads in its read-only phase.
    let second = format!(
        r#"
turns:
  - tool_calls:
      - {{name: Bash, input: {{command: "cat {secret} > /dev/null && echo read-$((1 + 1))"}}}}
  - tool_calls:
      - {{name: workflow_step, input: {{action: next}}}}
  - tool_calls:
      - {{name: workflow_step, input: {{action: next}}}}
  - text: "Done."
"#,
        secret = outside.join("secret.txt").display(),
    );
    let shown = p.run(&second, &[]);
    assert!(!shown.contains("read-2"), "{shown}");
    assert!(
        shown.contains("🔧 Bash cat ") && shown.contains("✗"),
        "{shown}"
    );
}

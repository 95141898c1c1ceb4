//! The terminal `rawko run` was started in is out of reach of what rawko starts for an agent or a
//! hook (issue 30, part 2). `rawko run` runs in a pseudo-terminal, under a real shell that reads
//! that terminal (the user's shell); a Bash call of a read-only phase and a PreToolUse hook try
//! to type a command into it with `ioctl(TIOCSTI)`: through `/dev/tty`, the terminal's own
//! `/dev/pts/N`, and `/proc/<pid>/fd/0..2` of every process above them. A command typed that way
//! would run in the user's shell once rawko exits; each one would make a marker file.
//!
//! Also the helper started as the session leader of a terminal of its own, as an editor's
//! terminal starts the command of `rawko acp`'s Bash (`sandbox::shell_argv`).
//!
//! The launcher is python3's `pty` module; the test says so and passes when python3 or the
//! kernel's TIOCSTI is missing.

use std::path::PathBuf;
use std::process::Command;

use tempfile::TempDir;

/// `inject.py MARKS WHO tty|all`: tries TIOCSTI on the terminal through `/dev/tty`, or every
/// path it finds, printing a summary, then one line per path: `INJECTED <path>` or `refused
/// <path>: <why>`. The text typed is `touch <MARKS>/hit-<WHO>-<n>`.
const INJECT: &str = r#"
import fcntl, os, sys, termios
marks, who, which = sys.argv[1], sys.argv[2], sys.argv[3]
paths = ["/dev/tty"]
if which == "all":
    if os.environ.get("TEST_PTS"):
        paths.append(os.environ["TEST_PTS"])
    pid = os.getpid()
    while pid > 1:
        paths += [f"/proc/{pid}/fd/{n}" for n in (0, 1, 2)]
        try:
            stat = open(f"/proc/{pid}/stat").read()
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        except OSError:
            break
lines = []
for n, path in enumerate(paths):
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    except OSError as e:
        lines.append(f"refused {path}: {e.strerror}")
        continue
    try:
        for c in f"touch {marks}/hit-{who}-{n}\n".encode():
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))
        lines.append(f"INJECTED {path}")
    except OSError as e:
        lines.append(f"refused {path}: {e.strerror}")
    finally:
        os.close(fd)
# The first line sums up (a task shows only the first line of a long output).
injected = sum(1 for l in lines if l.startswith("INJECTED"))
print(f"injected {injected} of {len(paths)}: " + "; ".join(lines[:2]))
print("\n".join(lines))
if who == "hook":
    open(f"{marks}/hook-report", "a").write("\n".join(lines) + "\n")
"#;

/// Runs `line` in `sh` reading a new pseudo-terminal, then lets the shell read whatever else
/// was typed into the terminal meanwhile, and exits it. Prints everything the terminal showed.
const LAUNCHER: &str = r#"
import os, pty, select, sys, time
line = sys.argv[1]
pid, fd = pty.fork()
if pid == 0:
    os.environ["TEST_PTS"] = os.ttyname(0)
    os.execvp("sh", ["sh"])
def read_until(token, limit):
    out, end = b"", time.time() + limit
    while time.time() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            if token in out:
                break
    return out
os.write(fd, (line + "; echo RAWKO-$((40+2))-DONE\n").encode())
out = read_until(b"RAWKO-42-DONE", 240)
# What was typed into the terminal while rawko ran comes first; this line after it.
os.write(fd, b"echo SHELL-$((40+3))-IDLE\n")
out += read_until(b"SHELL-43-IDLE", 30)
os.write(fd, b"exit\n")
out += read_until(b"\0", 5)
os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
"#;

/// A python3 the sandbox lets Bash run: the system's, else the one on the PATH.
fn python() -> Option<PathBuf> {
    ["/usr/bin/python3", "/usr/local/bin/python3"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .or_else(|| {
            let out = Command::new("sh")
                .args(["-c", "command -v python3"])
                .output()
                .ok()?;
            let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
            (!path.is_empty()).then(|| PathBuf::from(path))
        })
}

/// Whether this kernel lets TIOCSTI type into a terminal at all (`dev.tty.legacy_tiocsti`; a
/// process with CAP_SYS_ADMIN may whatever it says).
fn tiocsti_possible() -> bool {
    let legacy = std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti")
        .map(|v| v.trim() == "1")
        .unwrap_or(true);
    legacy || nix::unistd::geteuid().is_root()
}

/// A line for whoever runs the tests.
#[allow(clippy::print_stderr)]
fn note(text: &str) {
    eprintln!("{text}");
}

#[test]
fn nothing_rawko_starts_can_type_into_the_users_terminal() {
    let Some(python) = python() else {
        note("skipped: no python3 to open a pseudo-terminal with");
        return;
    };
    if !tiocsti_possible() {
        note("skipped: this kernel refuses TIOCSTI (dev.tty.legacy_tiocsti = 0) to this user");
        return;
    }
    let landlock = rawko::sandbox::landlock_support().is_ok();
    let dir = TempDir::new().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    let (ws, home, marks) = (root.join("project"), root.join("home"), root.join("marks"));
    let wf = ws.join(".rawko/workflows/ro");
    for d in [&wf, &home.join(".config/rawko"), &marks] {
        std::fs::create_dir_all(d).expect("mkdir");
    }
    std::fs::write(ws.join("inject.py"), INJECT).expect("write");
    let python = python.display();
    // A hook is the user's own code, outside Landlock: as root it may open any terminal by its
    // path, so only its controlling terminal is tried. So is Bash's where Landlock is missing.
    let hook = format!(
        "{python} {}/inject.py {} hook tty",
        ws.display(),
        marks.display()
    );
    let which = if landlock {
        "all"
    } else {
        note("Landlock is missing: the Bash call tries /dev/tty only");
        "tty"
    };
    std::fs::write(
        home.join(".config/rawko/config.json"),
        serde_json::json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": hook}
        ]}]}})
        .to_string(),
    )
    .expect("write");
    for (file, text) in [
        (
            "workflow.yaml",
            "name: Look\ncommandName: ro\ninitialMessage: \"{description}\"\nphases:\n  - look.md\n",
        ),
        (
            "look.md",
            "---\nid: look\nname: Look\nemoji: \"L\"\ntools:\n  whitelist: [Read, Bash]\n---\nLook only.\n",
        ),
    ] {
        std::fs::write(wf.join(file), text).expect("write");
    }
    std::fs::write(
        ws.join("s.yaml"),
        format!(
            "turns:\n  - tool_calls:\n      - {{name: Bash, input: {{command: \"{python} inject.py {} bash {which}\"}}}}\n  - tool_calls:\n      - {{name: workflow_step, input: {{action: next}}}}\n  - text: \"Done.\"\n",
            marks.display()
        ),
    )
    .expect("write");
    let line = format!(
        "'{}' run 'try it' --workflow ro --script s.yaml --deny",
        env!("CARGO_BIN_EXE_rawko")
    );
    let out = Command::new(python.to_string())
        .args(["-c", LAUNCHER, &line])
        .current_dir(&ws)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_RUNTIME_DIR", home.join("run"))
        .env_remove(rawko::sandbox::PRETEND_NO_LANDLOCK)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("run the launcher");
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        shown.contains("SHELL-43-IDLE"),
        "the shell did not come back: {shown}"
    );
    let hits: Vec<String> = std::fs::read_dir(&marks)
        .expect("marks")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("hit-"))
        .collect();
    assert!(
        hits.is_empty(),
        "typed into the user's shell: {hits:?}\n{shown}"
    );
    // The Bash call ran and says what was refused; every path it tried was.
    assert!(!shown.contains("INJECTED"), "{shown}");
    let bash = shown
        .lines()
        .filter(|l| !l.contains("PreToolUse hook"))
        .find(|l| {
            l.split_once("injected ")
                .is_some_and(|(_, rest)| rest.starts_with(|c: char| c.is_ascii_digit()))
        })
        .unwrap_or_else(|| panic!("the Bash call's summary is missing: {shown}"));
    let expected = if landlock {
        // Landlock refuses to open any terminal, before the kernel would say there is none.
        ": refused /dev/tty: Permission denied; refused /dev/pts/"
    } else {
        "injected 0 of 1: refused /dev/tty: No such device or address"
    };
    assert!(
        bash.contains("injected 0 of ") && bash.contains(expected),
        "{bash}\n{shown}"
    );
    let report = std::fs::read_to_string(marks.join("hook-report")).unwrap_or_default();
    assert_eq!(
        report, "refused /dev/tty: No such device or address\n",
        "the hook: {shown}"
    );
}

/// Runs `argv` as the session leader of a new pseudo-terminal, whose controlling terminal it is;
/// prints what the terminal showed.
const IN_A_TERMINAL: &str = r#"
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b""
while True:
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
"#;

/// An editor's terminal starts the helper as the leader of the terminal's session: the command
/// still runs with no controlling terminal and with stdin that is not one.
#[test]
fn the_helper_detaches_its_command_from_a_terminal_it_was_started_in() {
    let Some(python) = python() else {
        note("skipped: no python3 to open a pseudo-terminal with");
        return;
    };
    let dir = TempDir::new().expect("temp dir");
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::write(root.join("inject.py"), INJECT).expect("write");
    let command = format!(
        "if [ -t 0 ]; then echo stdin is a terminal; else echo stdin is not a terminal; fi; {} inject.py {} editor tty",
        python.display(),
        root.display()
    );
    let out = Command::new(&python)
        .args([
            "-c",
            IN_A_TERMINAL,
            env!("CARGO_BIN_EXE_rawko"),
            "__exec",
            "--",
        ])
        .args(["sh", "-c", &command])
        .current_dir(&root)
        .output()
        .expect("run the launcher");
    let shown = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(shown.contains("stdin is not a terminal"), "{shown}");
    assert!(
        shown.contains("injected 0 of 1: refused /dev/tty: No such device or address"),
        "{shown}"
    );
    assert!(!root.join("hit-editor-0").exists(), "{shown}");
}

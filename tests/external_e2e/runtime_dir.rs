//! The runtime directory `rawko hook` reads its endpoint from (issue 30, part 2). Without
//! `XDG_RUNTIME_DIR` it is `$TMPDIR/rawko-runtime-<uid>`, which anybody may make first: `rawko
//! hook` must not trust an endpoint file in one that is not the user's alone (another user's, a
//! link, or one others may write), or it sends that user the hook input and follows their answer.
//! A fake endpoint on loopback records whether anything reached it.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::mpsc;

use super::*;

/// An endpoint that answers every request with a verdict of its own and tells the test.
struct FakeEndpoint {
    url: String,
    requests: mpsc::Receiver<String>,
}

impl FakeEndpoint {
    fn start() -> Self {
        use std::io::Read;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        let (tx, requests) = mpsc::channel();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut buf = vec![0u8; 64 * 1024];
                let n = stream.read(&mut buf).unwrap_or(0);
                let _ = tx.send(String::from_utf8_lossy(&buf[..n]).into_owned());
                let body = json!({"jsonrpc": "2.0", "id": 1, "result": {
                    "exitCode": 0, "stdout": "", "stderr": "answered by someone else"}})
                .to_string();
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        FakeEndpoint { url, requests }
    }

    /// Whether a request reached it (`rawko hook` has returned when this is asked).
    fn reached(&self) -> bool {
        self.requests
            .recv_timeout(Duration::from_millis(200))
            .is_ok()
    }
}

/// A temporary directory for `TMPDIR`, a workspace, and the fallback path rawko computes.
struct Place {
    _dir: TempDir,
    tmp: PathBuf,
    ws: PathBuf,
}

impl Place {
    fn new() -> Self {
        let dir = TempDir::new().expect("temp dir");
        let root = dir.path().canonicalize().expect("canonical");
        let (tmp, ws) = (root.join("tmp"), root.join("ws"));
        std::fs::create_dir_all(&tmp).expect("mkdir");
        std::fs::create_dir_all(&ws).expect("mkdir");
        Place { _dir: dir, tmp, ws }
    }

    fn fallback(&self) -> PathBuf {
        self.tmp
            .join(format!("rawko-runtime-{}", nix::unistd::getuid()))
    }

    /// Writes the endpoint file of the workspace under `base` (made, with `rawko/` in it, 0700)
    /// naming `endpoint`.
    fn plant(&self, base: &Path, endpoint: &FakeEndpoint) {
        let dir = base.join("rawko");
        std::fs::create_dir_all(&dir).expect("mkdir");
        for d in [base, &dir] {
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        }
        let file = rawko::endpoint::endpoint_file(base, &self.ws);
        std::fs::write(
            file,
            json!({"url": endpoint.url, "token": "t", "pid": 1, "workspace": self.ws.display().to_string()})
                .to_string(),
        )
        .expect("write");
    }

    /// `rawko hook PreToolUse` in the workspace, with `XDG_RUNTIME_DIR` as given (unset: None).
    fn hook(&self, xdg_runtime_dir: Option<&Path>) -> Run {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rawko"));
        cmd.args(["hook", "PreToolUse"])
            .current_dir(&self.ws)
            .env("HOME", self.tmp.join("home"))
            .env("TMPDIR", &self.tmp)
            .env_remove("XDG_RUNTIME_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = xdg_runtime_dir {
            cmd.env("XDG_RUNTIME_DIR", dir);
        }
        let mut child = cmd.spawn().expect("start rawko hook");
        let i = input(
            &self.ws,
            "PreToolUse",
            json!({"tool_name": "Bash", "tool_input": {"command": "ls"}}),
        );
        child.stdin.take().unwrap().write_all(i.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// The refusal: nothing reached the endpoint, the hook says why and fails open as without a
/// server.
fn assert_refused(r: &Run, endpoint: &FakeEndpoint, why: &str) {
    assert!(
        !endpoint.reached(),
        "the hook input went to the planted endpoint: {}",
        r.stderr
    );
    assert!(
        !r.stderr.contains("answered by someone else"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains(why), "{why}: {}", r.stderr);
    assert!(
        r.stderr
            .contains("rawko will not keep or read its endpoint there; remove it (rawko makes it again) or set XDG_RUNTIME_DIR; not gated (fail-open)"),
        "{}",
        r.stderr
    );
    assert_eq!(r.code, 0, "{}", r.stdout);
}

#[test]
fn a_fallback_runtime_dir_of_the_users_alone_is_used() {
    let place = Place::new();
    let endpoint = FakeEndpoint::start();
    place.plant(&place.fallback(), &endpoint);
    let r = place.hook(None);
    // What the test plants is what rawko reads: the refusals below are the checks' doing.
    assert!(endpoint.reached(), "{}", r.stderr);
    assert!(
        r.stderr.contains("answered by someone else"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_fallback_runtime_dir_others_may_write_is_refused() {
    let place = Place::new();
    let endpoint = FakeEndpoint::start();
    let base = place.fallback();
    place.plant(&base, &endpoint);
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let r = place.hook(None);
    assert_refused(
        &r,
        &endpoint,
        &format!(
            "{} may be used by other users (mode 777, not 700)",
            base.display()
        ),
    );
}

#[test]
fn a_fallback_runtime_dir_of_another_user_is_refused() {
    if !nix::unistd::geteuid().is_root() {
        note("skipped: only root can give a directory to another user");
        return;
    }
    let place = Place::new();
    let endpoint = FakeEndpoint::start();
    let base = place.fallback();
    place.plant(&base, &endpoint);
    let nobody = nix::unistd::Uid::from_raw(65534);
    nix::unistd::chown(&base, Some(nobody), None).expect("chown");
    let r = place.hook(None);
    assert_refused(
        &r,
        &endpoint,
        &format!("{} belongs to user 65534, not to you (0)", base.display()),
    );
}

#[test]
fn a_fallback_runtime_dir_that_is_a_link_is_refused() {
    let place = Place::new();
    let endpoint = FakeEndpoint::start();
    let elsewhere = place.tmp.join("elsewhere");
    place.plant(&elsewhere, &endpoint);
    std::os::unix::fs::symlink(&elsewhere, place.fallback()).expect("symlink");
    let r = place.hook(None);
    assert_refused(
        &r,
        &endpoint,
        &format!(
            "{} is a symbolic link, not a directory",
            place.fallback().display()
        ),
    );
}

#[test]
fn rawkos_dir_in_xdg_runtime_dir_others_may_write_is_refused() {
    let place = Place::new();
    let endpoint = FakeEndpoint::start();
    let xdg = place.tmp.join("xdg");
    place.plant(&xdg, &endpoint);
    std::fs::set_permissions(xdg.join("rawko"), std::fs::Permissions::from_mode(0o757))
        .expect("chmod");
    let r = place.hook(Some(&xdg));
    assert_refused(
        &r,
        &endpoint,
        &format!(
            "{}/rawko may be used by other users (mode 757, not 700)",
            xdg.display()
        ),
    );
}

/// A line for whoever runs the tests.
#[allow(clippy::print_stderr)]
fn note(text: &str) {
    eprintln!("{text}");
}

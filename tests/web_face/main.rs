//! The web face from outside, over real sockets: `rawko web`, `rawko serve --web` beside a fake
//! editor (tests/support) and `rawko run --web`, each the real binary with the scripted provider.
//! The HTTP client is a few lines of std (one request per connection; the event stream read on a
//! thread), so what is checked is exactly what goes over the wire. The page itself is driven in
//! Chromium by tests/web/run.mjs (scripts/test-web.sh).

#[path = "../support/mod.rs"]
mod support;

mod client;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::{Editor, Project, TIMEOUT};

use client::{Events, Page};

/// Two blocked Writes in the read-only Plan phase, then a Read.
const TWO_WRITES: &str = r#"
turns:
  - text: "Writing the plan down."
    tool_calls:
      - {name: Write, input: {path: PLAN.md, content: "1. shout\n"}}
  - text: "And the notes."
    tool_calls:
      - {name: Write, input: {path: NOTES.md, content: "notes\n"}}
  - text: "Carrying on."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "Thinking it over."
    delay_ms: 60000
"#;

/// `rawko web` (or another command) in `project` with HOME and XDG under `home`.
fn rawko(project: &Project, home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rawko"));
    cmd.args(args)
        .current_dir(&project.ws)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_RUNTIME_DIR", home.join("run"))
        .env("PI_CODING_AGENT_DIR", home.join(".pi/agent"))
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// A running `rawko web`: killed (SIGTERM first) when dropped.
struct Web {
    child: Child,
    page: Page,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Web {
    fn start(project: &Project, home: &Path, args: &[&str], log: &str) -> Web {
        let mut all = vec!["web"];
        all.extend_from_slice(args);
        let mut child = rawko(project, home, &all)
            .env("RAWKO_LOG", log)
            .spawn()
            .expect("start rawko web");
        let stderr = client::collect(child.stderr.take().expect("stderr"));
        let line = client::first_line(child.stdout.take().expect("stdout"), TIMEOUT)
            .unwrap_or_else(|| panic!("rawko web printed no address; stderr: {}", lock(&stderr)));
        let url = line
            .strip_prefix("rawko web: ")
            .unwrap_or_else(|| panic!("the first line is not `rawko web: URL`: {line:?}"));
        Web {
            child,
            page: Page::new(url),
            stderr,
        }
    }

    fn stderr(&self) -> String {
        lock(&self.stderr).clone()
    }

    /// The stderr once it holds `text` (its reader thread may still be taking in the line), or
    /// what it holds after 10 s.
    fn stderr_with(&self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let err = self.stderr();
            if err.contains(text) || Instant::now() >= deadline {
                return err;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Web {
    fn drop(&mut self) {
        let _ = nix_term(self.child.id());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn nix_term(pid: u32) -> std::io::Result<()> {
    Command::new("kill")
        .arg("-TERM")
        .arg(pid.to_string())
        .status()
        .map(|_| ())
}

fn nix_int(pid: u32) -> std::io::Result<()> {
    Command::new("kill")
        .arg("-INT")
        .arg(pid.to_string())
        .status()
        .map(|_| ())
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Waits until `path` exists (or not), up to the usual time limit.
fn wait_file(path: &Path, exists: bool) {
    let deadline = Instant::now() + TIMEOUT;
    while path.exists() != exists {
        assert!(
            Instant::now() < deadline,
            "{} should {}exist",
            path.display(),
            if exists { "" } else { "not " }
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn starter(script: &str) -> (Project, tempfile::TempDir, String) {
    let project = Project::with_starter();
    let script = project.script("s", script);
    let home = tempfile::TempDir::new().expect("home");
    (project, home, script)
}

#[test]
fn every_request_needs_the_token_and_the_first_visit_trades_it_for_a_cookie() {
    let (project, home, _) = starter(TWO_WRITES);
    let web = Web::start(&project, home.path(), &[], "trace");
    let page = &web.page;
    assert!(page.url.starts_with("http://127.0.0.1:"), "{}", page.url);
    for path in [
        "/",
        "/assets/app.js",
        "/assets/app.css",
        "/api/tasks",
        "/api/events",
        "/api/info",
    ] {
        let r = page.get_without_cookie(path);
        assert_eq!(r.status, 401, "{path} without the cookie: {r:?}");
    }
    let wrong = page.get_without_cookie("/?token=0000");
    assert_eq!(wrong.status, 401, "a wrong token: {wrong:?}");
    let first = page.get_without_cookie(&format!("/?token={}", page.token));
    assert_eq!(first.status, 303, "{first:?}");
    assert_eq!(first.header("location").as_deref(), Some("/"));
    let cookie = first.header("set-cookie").unwrap_or_default();
    for part in ["rawko_token=", "HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.contains(part), "the cookie has {part}: {cookie}");
    }
    assert_eq!(
        first.header("referrer-policy").as_deref(),
        Some("no-referrer")
    );
    let index = page.get("/");
    assert_eq!(index.status, 200);
    assert!(index.body.contains("<!doctype html") || index.body.contains("<!DOCTYPE html"));
    assert!(
        !index.body.contains(&page.token),
        "the page does not carry the token"
    );
    let js = page.get("/assets/app.js");
    assert_eq!(js.status, 200);
    assert!(js
        .header("content-type")
        .unwrap_or_default()
        .contains("javascript"));
    // Every state-changing request must come from the page.
    let foreign = page.post_from(
        "/api/tasks",
        &json!({"description": "x"}),
        Some("http://evil.example"),
    );
    assert_eq!(foreign.status, 403, "{foreign:?}");
    let none = page.post_from("/api/tasks", &json!({"description": "x"}), None);
    assert_eq!(none.status, 403, "{none:?}");
    let empty = page.post("/api/tasks", &json!({"description": "  "}));
    assert_eq!(empty.status, 400, "{empty:?}");
    assert!(empty.json()["error"]
        .as_str()
        .unwrap_or_default()
        .contains("description"));
    let unknown = page.post("/api/tasks/nope/cancel", &json!({}));
    assert_eq!(unknown.status, 404, "{unknown:?}");
    let bad = page.post(
        "/api/tasks/nope/approvals/x",
        &json!({"outcome": "yes please"}),
    );
    assert_eq!(bad.status, 400, "{bad:?}");
    // The token goes to stdout once and nowhere else, even with every log on.
    let stderr = web.stderr();
    assert!(
        !stderr.contains(&page.token),
        "the token is in the log:\n{stderr}"
    );
}

#[test]
fn a_task_started_from_the_page_asks_it_and_its_answers_decide() {
    let (project, home, script) = starter(TWO_WRITES);
    let script_path = project.path(&script);
    let web = Web::start(
        &project,
        home.path(),
        &[
            "--provider",
            "scripted",
            "--script",
            script_path.to_str().unwrap(),
        ],
        "warn",
    );
    let page = &web.page;
    let mut events = Events::open(page);
    assert_eq!(
        events.next_named("hello", TIMEOUT)["workspace"],
        json!(project.ws)
    );
    let info = page.get("/api/info").json();
    assert!(
        info["workflows"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["key"] == "feature"),
        "{info}"
    );
    let started = page.post(
        "/api/tasks",
        &json!({"description": "Add a --shout flag", "workflow": "feature"}),
    );
    assert_eq!(started.status, 200, "{started:?}");
    let task = started.json()["taskId"].as_str().unwrap().to_owned();
    let row = events.next_matching("task", TIMEOUT, |d| d["taskId"] == json!(task));
    assert_eq!(row["description"], "Add a --shout flag");
    // The first Write: offered with what it would write, denied from the page.
    let approval = events.next_named("approval", TIMEOUT);
    assert_eq!(approval["taskId"], json!(task));
    assert_eq!(approval["tool"], "Write");
    assert_eq!(approval["phase"], "Plan");
    assert!(
        approval["detail"].as_str().unwrap().contains("Plan"),
        "{approval}"
    );
    assert_eq!(approval["summary"], "Write PLAN.md (9 bytes)");
    assert_eq!(
        approval["changes"],
        json!([{"path": "PLAN.md", "oldText": null, "newText": "1. shout\n"}])
    );
    assert_eq!(approval["taskDescription"], "Add a --shout flag");
    let call = approval["toolCallId"].as_str().unwrap().to_owned();
    let pending = page.get("/api/approvals").json();
    assert_eq!(
        pending["approvals"][0]["toolCallId"],
        json!(call),
        "{pending}"
    );
    let detail = page.get(&format!("/api/tasks/{task}")).json();
    assert_eq!(detail["task"]["taskId"], json!(task));
    assert!(
        !detail["task"]["phases"].as_array().unwrap().is_empty(),
        "{detail}"
    );
    assert_eq!(detail["approvals"][0]["toolCallId"], json!(call));
    assert!(
        detail["output"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["kind"] == "assistant_delta"),
        "the task's output so far: {detail}"
    );
    let path = format!("/api/tasks/{task}/approvals/{call}");
    let denied = page.post(&path, &json!({"outcome": "reject_once"}));
    assert_eq!(denied.status, 200, "{denied:?}");
    let again = page.post(&path, &json!({"outcome": "allow_once"}));
    assert_eq!(again.status, 409, "a second answer is refused: {again:?}");
    let gone = events.next_named("approvalWithdrawn", TIMEOUT);
    assert_eq!(
        gone,
        json!({"taskId": task, "toolCallId": call, "by": "web", "outcome": "reject_once"})
    );
    // The second Write, allowed: it runs.
    let second = events.next_named("approval", TIMEOUT);
    assert_eq!(second["summary"], "Write NOTES.md (6 bytes)");
    let call2 = second["toolCallId"].as_str().unwrap();
    let allowed = page.post(
        &format!("/api/tasks/{task}/approvals/{call2}"),
        &json!({"outcome": "allow_once"}),
    );
    assert_eq!(allowed.status, 200, "{allowed:?}");
    wait_file(&project.path("NOTES.md"), true);
    assert!(
        !project.path("PLAN.md").exists(),
        "the denied Write did not run"
    );
    // The page hears the task's output and status as they happen.
    events.next_matching("output", TIMEOUT, |d| {
        d["kind"] == "tool_result" && d["tool"] == "Read"
    });
    assert!(page.get("/api/approvals").json()["approvals"]
        .as_array()
        .unwrap()
        .is_empty());
    // Interrupt and cancel from the page.
    let interrupted = page.post(&format!("/api/tasks/{task}/interrupt"), &json!({}));
    assert_eq!(interrupted.status, 200, "{interrupted:?}");
    let cancelled = page.post(&format!("/api/tasks/{task}/cancel"), &json!({}));
    assert_eq!(cancelled.status, 200, "{cancelled:?}");
    events.next_matching("finished", TIMEOUT, |d| d["taskId"] == json!(task));
    let resumed = page.post(&format!("/api/tasks/{task}/resume"), &json!({}));
    assert_eq!(
        resumed.status, 409,
        "a cancelled task does not resume: {resumed:?}"
    );
    assert!(resumed.json()["error"].as_str().is_some());
}

#[test]
fn beside_the_editor_the_first_answer_wins_and_the_other_question_is_withdrawn() {
    let (project, home, script) = starter(TWO_WRITES);
    let mut ed = Editor::spawn_with_args(&project.ws, home.path(), &["--web"]);
    // The address goes to stderr (stdout is the protocol).
    let deadline = Instant::now() + TIMEOUT;
    let url = loop {
        if let Some(url) = ed
            .stderr()
            .lines()
            .find_map(|l| l.strip_prefix("rawko web: ").map(str::to_owned))
        {
            break url;
        }
        assert!(
            Instant::now() < deadline,
            "no `rawko web:` line on stderr: {}",
            ed.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let page = Page::new(&url);
    ed.initialize(json!({"countdownTickMillis": 20}));
    // The editor is told of the page, with an "Open" action and without the token.
    let offer = ed.wait_for("window/showMessageRequest", TIMEOUT, |m| {
        m["method"] == "window/showMessageRequest"
    });
    assert_eq!(offer["params"]["actions"][0]["title"], "Open", "{offer}");
    let message = offer["params"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains(page.url.split('?').next().unwrap()),
        "{message}"
    );
    assert!(!message.contains(&page.token), "{message}");
    // The editor leaves the first question to the page and answers the second itself.
    ed.set_approval_policy(|p| (p["input"]["file_path"] == "NOTES.md").then_some("reject_once"));
    let mut events = Events::open(&page);
    events.next_named("hello", TIMEOUT);
    let task = ed
        .request(
            "rawko/startTask",
            json!({"description": "two writes", "workflow": "feature", "provider": "scripted", "script": script}),
        )
        .expect("startTask")["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    // Both are asked; the page answers first.
    let asked = ed.wait_for("rawko/approveToolCall", TIMEOUT, |m| {
        m["method"] == "rawko/approveToolCall" && m.get("id").is_some()
    });
    let in_page = events.next_named("approval", TIMEOUT);
    assert_eq!(in_page["toolCallId"], asked["params"]["toolCallId"]);
    let call = in_page["toolCallId"].as_str().unwrap().to_owned();
    let r = page.post(
        &format!("/api/tasks/{task}/approvals/{call}"),
        &json!({"outcome": "allow_once"}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    let request_id = asked["id"].clone();
    ed.wait_for("$/cancelRequest of the editor's question", TIMEOUT, |m| {
        m["method"] == "$/cancelRequest" && m["params"]["id"] == request_id
    });
    ed.wait_for("rawko/approvalWithdrawn", TIMEOUT, |m| {
        m["method"] == "rawko/approvalWithdrawn" && m["params"]["toolCallId"] == json!(call)
    });
    wait_file(&project.path("PLAN.md"), true);
    assert_eq!(
        events.next_named("approvalWithdrawn", TIMEOUT),
        json!({"taskId": task, "toolCallId": call, "by": "web", "outcome": "allow_once"})
    );
    // The second: the editor answers first, and the page's question goes.
    let in_page = events.next_named("approval", TIMEOUT);
    let gone = events.next_named("approvalWithdrawn", TIMEOUT);
    assert_eq!(gone["toolCallId"], in_page["toolCallId"]);
    assert_eq!(gone["by"], "editor");
    assert_eq!(gone["outcome"], "reject_once");
    let late = page.post(
        &format!(
            "/api/tasks/{task}/approvals/{}",
            in_page["toolCallId"].as_str().unwrap()
        ),
        &json!({"outcome": "allow_once"}),
    );
    assert_eq!(late.status, 409, "{late:?}");
    ed.wait_for("the Read after the writes", TIMEOUT, |m| {
        m["method"] == "rawko/output"
            && m["params"]["kind"] == "tool_result"
            && m["params"]["tool"] == "Read"
    });
    assert!(
        !project.path("NOTES.md").exists(),
        "the Write the editor denied did not run"
    );
}

#[test]
fn run_web_without_a_terminal_waits_for_the_page() {
    let (project, home, script) = starter(TWO_WRITES);
    let mut child = rawko(
        &project,
        home.path(),
        &[
            "run",
            "two writes",
            "--workflow",
            "feature",
            "--provider",
            "scripted",
            "--script",
            &script,
            "--web",
        ],
    )
    .env("RAWKO_LOG", "warn")
    .spawn()
    .expect("start rawko run --web");
    let stdout = client::collect(child.stdout.take().expect("stdout"));
    let stderr = client::collect(child.stderr.take().expect("stderr"));
    let deadline = Instant::now() + TIMEOUT;
    let url = loop {
        if let Some(url) = lock(&stderr)
            .lines()
            .find_map(|l| l.strip_prefix("rawko web: ").map(str::to_owned))
        {
            break url;
        }
        assert!(
            Instant::now() < deadline,
            "no address on stderr: {}",
            lock(&stderr)
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let page = Page::new(&url);
    for outcome in ["allow_once", "reject_once"] {
        let deadline = Instant::now() + TIMEOUT;
        let approval = loop {
            let list = page.get("/api/approvals").json();
            if let Some(a) = list["approvals"]
                .as_array()
                .and_then(|a| a.first())
                .cloned()
            {
                break a;
            }
            assert!(
                Instant::now() < deadline,
                "no approval in the page; stdout: {}",
                lock(&stdout)
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let r = page.post(
            &format!(
                "/api/tasks/{}/approvals/{}",
                approval["taskId"].as_str().unwrap(),
                approval["toolCallId"].as_str().unwrap()
            ),
            &json!({"outcome": outcome}),
        );
        assert_eq!(r.status, 200, "{r:?}");
    }
    wait_file(&project.path("PLAN.md"), true);
    let out = lock(&stdout).clone();
    assert!(
        out.contains("waiting for an answer in the web page"),
        "{out}"
    );
    assert!(
        !project.path("NOTES.md").exists(),
        "the denied Write did not run: {out}"
    );
    // Ctrl-C ends it as at a terminal.
    let _ = nix_int(child.id());
    let deadline = Instant::now() + TIMEOUT;
    while child.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "rawko run did not end: {out}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_address_other_machines_reach_needs_tls_or_insecure_http() {
    let (project, home, _) = starter(TWO_WRITES);
    let out = rawko(&project, home.path(), &["web", "--listen", "0.0.0.0:0"])
        .output()
        .expect("run rawko web");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--tls-cert") && err.contains("--insecure-http"),
        "{err}"
    );
    let half = rawko(&project, home.path(), &["web", "--tls-cert", "c.pem"])
        .output()
        .expect("run rawko web");
    assert_eq!(half.status.code(), Some(2), "{half:?}");
    // With a certificate it serves HTTPS, and the cookie is Secure.
    let dir = home.path().join("tls");
    std::fs::create_dir_all(&dir).unwrap();
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
        ])
        .arg("-keyout")
        .arg(dir.join("key.pem"))
        .arg("-out")
        .arg(dir.join("cert.pem"))
        .output()
        .expect("openssl (apt-get install openssl) makes a test certificate");
    assert!(made.status.success(), "{made:?}");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let web = Web::start(
        &project,
        home.path(),
        &[
            "--listen",
            "0.0.0.0:0",
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
        "warn",
    );
    assert!(web.page.url.starts_with("https://"), "{}", web.page.url);
    let port = web.page.port();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (status, cookie, index) = runtime.block_on(async {
        let client = reqwest::Client::builder()
            .danger_accept_invalid_certs(true)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let first = client
            .get(format!(
                "https://127.0.0.1:{port}/?token={}",
                web.page.token
            ))
            .send()
            .await
            .expect("an HTTPS request");
        let cookie = first
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let index = client
            .get(format!("https://127.0.0.1:{port}/"))
            .header("cookie", cookie.split(';').next().unwrap_or_default())
            .send()
            .await
            .expect("the page over HTTPS");
        (first.status().as_u16(), cookie, index.status().as_u16())
    });
    assert_eq!(status, 303);
    assert!(cookie.contains("Secure"), "{cookie}");
    assert_eq!(index, 200);
    // A key that is no key is refused in words.
    std::fs::write(dir.join("bad.pem"), "not a key").unwrap();
    let bad = rawko(
        &project,
        home.path(),
        &[
            "web",
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            dir.join("bad.pem").to_str().unwrap(),
        ],
    )
    .output()
    .expect("run rawko web");
    assert_eq!(bad.status.code(), Some(2), "{bad:?}");
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("private key"),
        "{bad:?}"
    );
}

#[test]
fn notify_webhook_gets_an_ntfy_message_without_the_token() {
    let (project, home, script) = starter(TWO_WRITES);
    let hook = client::Recorder::start();
    let config = home.path().join(".config/rawko");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.json"),
        json!({"notify": {"webhook": hook.url(), "topic": "my-rawko"}}).to_string(),
    )
    .unwrap();
    // A workspace's file may not set it: its agents can write that file.
    project.write(
        ".rawko/config.json",
        r#"{"notify": {"webhook": "http://127.0.0.1:9/x"}}"#,
    );
    let script_path = project.path(&script);
    let web = Web::start(
        &project,
        home.path(),
        &[
            "--provider",
            "scripted",
            "--script",
            script_path.to_str().unwrap(),
        ],
        "warn",
    );
    let err = web.stderr_with("notify is not read from a workspace's config");
    assert!(
        err.contains("notify is not read from a workspace's config"),
        "{err}"
    );
    let page = &web.page;
    let started = page.post(
        "/api/tasks",
        &json!({"description": "notes", "workflow": "feature"}),
    );
    assert_eq!(started.status, 200, "{started:?}");
    let body = hook
        .next(TIMEOUT)
        .expect("the webhook is called when an approval waits");
    let json: Value = serde_json::from_str(&body).expect("a JSON body");
    assert_eq!(json["topic"], "my-rawko");
    assert_eq!(json["title"], "rawko: Write waits for you");
    assert!(
        json["message"].as_str().unwrap().contains("Write PLAN.md"),
        "{json}"
    );
    assert_eq!(json["priority"], 4);
    assert_eq!(json["click"], json!(page.url.split('?').next().unwrap()));
    assert!(
        !body.contains(&page.token),
        "the token never leaves the machine: {body}"
    );
}

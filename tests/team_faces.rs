//! A team task answered from the web page (`rawko web --nats`, issue 37): the real binary as a
//! worker of a bare repository and as the page, on a one-node JetStream server on loopback. The
//! task's blocked Write shows among the page's approvals with the worker's name; the page's
//! answer lets it run, the task completes, its branch holds what it wrote, and a second answer
//! is refused (409: the first answer won). `tasks list | show --nats` then show it.
//! (scripts/test-team.sh runs the three-node, three-worker, 100-task scenario with editors.)
//!
//! The server is `RAWKO_NATS_SERVER` or the one scripts/install-nats.sh installs; without it the
//! test is skipped, saying how to run it (not under CI, where it fails instead).

#[allow(dead_code)]
#[path = "web_face/client.rs"]
mod client;
mod team_support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use client::Page;
use team_support::{nats_server, repo_root, Cluster};

/// A process ended when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

struct Team {
    tmp: tempfile::TempDir,
    nats: String,
}

impl Team {
    fn home(&self) -> PathBuf {
        self.tmp.path().join("home")
    }

    fn command(&self, args: &[&str], cwd: &Path) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rawko"));
        cmd.args(args)
            .current_dir(cwd)
            .env("HOME", self.home())
            .env("XDG_CONFIG_HOME", self.home().join(".config"))
            .env("XDG_STATE_HOME", self.home().join(".state"))
            .env_remove("RAWKO_LOG")
            .stdin(Stdio::null());
        cmd
    }

    fn rawko(&self, args: &[&str], cwd: &Path) -> Output {
        self.command(args, cwd).output().unwrap()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    /// Sets `team.nats` of the user's config (`None`: no config).
    fn user_team_nats(&self, nats: Option<Value>) {
        let file = self.home().join(".config/rawko/config.json");
        match nats {
            Some(nats) => {
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, json!({"team": {"nats": nats}}).to_string()).unwrap();
            }
            None => {
                let _ = std::fs::remove_file(&file);
            }
        }
    }

    /// `rawko tasks list --nats URL --json EXTRA` is admitted: an empty list.
    fn list_admitted(&self, url: &str, extra: &[&str]) {
        let mut args = vec!["tasks", "list", "--nats", url, "--json"];
        args.extend_from_slice(extra);
        let out = self.rawko(&args, self.tmp.path());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[]");
    }

    /// `rawko tasks list --nats URL` is refused at once (not after the 30 s wait for a server):
    /// its stderr, lower-cased.
    fn list_refused(&self, url: &str) -> String {
        let started = Instant::now();
        let out = self.rawko(&["tasks", "list", "--nats", url], self.tmp.path());
        assert_eq!(out.status.code(), Some(1));
        assert!(
            started.elapsed() < Duration::from_secs(25),
            "{:?}",
            started.elapsed()
        );
        String::from_utf8_lossy(&out.stderr).to_lowercase()
    }
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@t")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@t")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn wait_for<T>(what: &str, limit: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < limit, "waited {limit:?} for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A one-node JetStream server on `port` with `extra` in its config (its store in `dir`),
/// listening when this returns; ended when the value is dropped.
fn start_server(server: &Path, dir: &Path, port: u16, extra: &str) -> Running {
    let config = dir.join(format!("nats-{port}.conf"));
    std::fs::write(
        &config,
        format!(
            "server_name: s{port}\nlisten: 127.0.0.1:{port}\njetstream {{ store_dir: \"{}\" }}\n{extra}\n",
            dir.join(format!("store-{port}")).display()
        ),
    )
    .unwrap();
    let running = Running(
        Command::new(server)
            .arg("-c")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_for("the server to listen", Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });
    running
}

#[test]
fn a_team_task_is_answered_from_the_web_page_once() {
    let Some(server) = nats_server("team_faces") else {
        return;
    };
    let cluster = Cluster::start_at(&server, 1, 26222);
    let team = Team {
        tmp: tempfile::tempdir().unwrap(),
        nats: cluster.urls.clone(),
    };
    std::fs::create_dir_all(team.home()).unwrap();
    // The shared repository, with the test's workflow; a clone for the worker and one to
    // submit from.
    let remote = team.path("remote.git");
    std::fs::create_dir_all(&remote).unwrap();
    git(&remote, &["init", "-q", "--bare", "-b", "main"]);
    let seed = team.path("seed");
    git(
        team.tmp.path(),
        &["clone", "-q", remote.to_str().unwrap(), "seed"],
    );
    copy_dir(
        &repo_root().join("tests/team_fixture/workflows/team-e2e"),
        &seed.join(".rawko/workflows/team-e2e"),
    );
    std::fs::write(seed.join("README.md"), "the project\n").unwrap();
    git(&seed, &["add", "-A"]);
    git(&seed, &["commit", "-qm", "init"]);
    git(&seed, &["push", "-q", "origin", "HEAD:main"]);
    for clone in ["worker", "mine"] {
        git(
            team.tmp.path(),
            &["clone", "-q", remote.to_str().unwrap(), clone],
        );
    }

    let _worker = Running(
        team.command(
            &[
                "worker",
                "--nats",
                &team.nats,
                "--workspace",
                team.path("worker").to_str().unwrap(),
                "--name",
                "w1",
            ],
            team.tmp.path(),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap(),
    );
    let mut web = team
        .command(
            &[
                "web",
                "--nats",
                &team.nats,
                "--workspace",
                team.path("mine").to_str().unwrap(),
            ],
            team.tmp.path(),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let line = client::first_line(web.stdout.take().unwrap(), Duration::from_secs(60))
        .expect("rawko web prints its address");
    let _web = Running(web);
    let url = line
        .strip_prefix("rawko web: ")
        .unwrap_or_else(|| panic!("not the page's line: {line}"));
    let page = Page::new(url);

    let out = team.rawko(
        &[
            "submit",
            "write the result",
            "--nats",
            &team.nats,
            "--workflow",
            "team-e2e",
            "--script",
            repo_root()
                .join("tests/team_fixture/script.yaml")
                .to_str()
                .unwrap(),
            "--json",
        ],
        &team.path("mine"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let submitted: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = submitted["taskId"].as_str().unwrap().to_owned();

    // The team task's blocked Write is among the page's approvals.
    let ask = wait_for(
        "the team task's approval on the page",
        Duration::from_secs(60),
        || {
            let approvals = page.get("/api/approvals").json();
            approvals["approvals"]
                .as_array()?
                .iter()
                .find(|a| a["taskId"] == id.as_str())
                .cloned()
        },
    );
    assert_eq!(ask["tool"], "Write");
    assert!(
        ask["detail"]
            .as_str()
            .unwrap()
            .ends_with("(team task on w1)"),
        "{ask}"
    );
    let call = ask["toolCallId"].as_str().unwrap().to_owned();
    let answer = page.post(
        &format!("/api/tasks/{id}/approvals/{call}"),
        &json!({"outcome": "allow_once"}),
    );
    assert_eq!(answer.status, 200, "{}", answer.body);

    // It runs on, and ends complete; its branch holds its files.
    let list = wait_for("the task to complete", Duration::from_secs(60), || {
        let out = team.rawko(
            &["tasks", "list", "--nats", &team.nats, "--json"],
            team.tmp.path(),
        );
        let list: Value = serde_json::from_slice(&out.stdout).ok()?;
        let task = list
            .as_array()?
            .iter()
            .find(|t| t["taskId"] == id.as_str())?;
        (task["state"] == "finished").then(|| task.clone())
    });
    assert_eq!(list["outcome"], "complete", "{list}");
    assert_eq!(list["worker"], "w1");
    let show = |path: &str| {
        let out = Command::new("git")
            .arg("--git-dir")
            .arg(&remote)
            .args(["show", &format!("rawko/{id}:{path}")])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(show("out/result.txt"), "written by a team task\n");
    assert_eq!(show("trace.txt"), "step 1\nstep 2\n");

    // A second answer is refused: the first one won.
    let again = page.post(
        &format!("/api/tasks/{id}/approvals/{call}"),
        &json!({"outcome": "reject_once"}),
    );
    assert_eq!(again.status, 409, "{}", again.body);

    // Its history, from JetStream: the approval the page gave.
    let out = team.rawko(
        &["tasks", "show", &id, "--nats", &team.nats, "--json"],
        team.tmp.path(),
    );
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    let approvals: Vec<&Value> = shown["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["event"]["type"] == "approval")
        .collect();
    assert_eq!(approvals.len(), 1, "{shown}");
    assert_eq!(approvals[0]["event"]["answer"], "allow_once");
    let text = team.rawko(
        &["tasks", "show", &id, "--nats", &team.nats],
        team.tmp.path(),
    );
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("state:     finished (complete)"), "{text}");
    // An unknown id is said so.
    let out = team.rawko(
        &["tasks", "show", "task-none", "--nats", &team.nats],
        team.tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown team task"));
    drop(cluster);
}

/// The team's credentials: against a NATS server that admits one nkey user only, a command
/// without the key is refused with NATS's own reason, and with `--nats-nkey SEEDFILE` (or
/// `team.nats.nkey` of the user's config) it works.
#[test]
fn an_nkey_user_reaches_a_server_that_requires_it() {
    let Some(server) = nats_server("team_faces") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let user = nkeys::KeyPair::new_user();
    let seed = tmp.path().join("team.nk");
    std::fs::write(&seed, format!("{}\n", user.seed().unwrap())).unwrap();
    let port = 26232;
    let nats = start_server(
        &server,
        tmp.path(),
        port,
        &format!(
            "authorization {{ users: [ {{ nkey: {} }} ] }}",
            user.public_key()
        ),
    );
    let url = format!("nats://127.0.0.1:{port}");
    let team = Team {
        tmp,
        nats: url.clone(),
    };
    std::fs::create_dir_all(team.home()).unwrap();
    let seed_arg = seed.to_str().unwrap();
    team.list_admitted(&url, &["--nats-nkey", seed_arg]);
    // From the user's config, the same.
    team.user_team_nats(Some(json!({"url": url, "nkey": seed_arg})));
    team.list_admitted(&url, &[]);
    // Without the key: refused, and said so.
    team.user_team_nats(None);
    let err = team.list_refused(&url);
    assert!(
        err.contains("authorization") || err.contains("authentication"),
        "{err}"
    );
    // A seed file without a seed is named.
    let bad = team.path("bad.nk");
    std::fs::write(&bad, "not a seed\n").unwrap();
    let out = team.rawko(
        &[
            "tasks",
            "list",
            "--nats",
            &url,
            "--nats-nkey",
            bad.to_str().unwrap(),
        ],
        team.tmp.path(),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no user seed"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(nats);
}

/// TLS: against a NATS server that requires it, with a certificate of a CA made for the test
/// (by `openssl`), `--nats-tls-ca` (or `team.nats.tlsCa`) admits the client, and without the CA
/// the server's certificate is refused at once, saying so.
#[test]
#[allow(clippy::print_stderr)]
fn tls_with_the_teams_ca_is_required_and_checked() {
    let Some(server) = nats_server("team_faces") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let openssl = |args: &[&str]| {
        Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
    };
    let Ok(probe) = openssl(&["version"]) else {
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
        assert!(
            !ci,
            "tls test: openssl is not installed (apt-get install openssl)"
        );
        eprintln!("SKIPPED tls test: openssl is not installed");
        return;
    };
    assert!(probe.status.success());
    std::fs::write(
        dir.join("ext.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    for args in [
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=rawko test CA",
        ][..],
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=localhost",
        ][..],
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
        ][..],
    ] {
        let out = openssl(args).unwrap();
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let port = 26242;
    let nats = start_server(
        &server,
        dir,
        port,
        &format!(
            "tls {{ cert_file: \"{}\", key_file: \"{}\" }}",
            dir.join("server.pem").display(),
            dir.join("server.key").display()
        ),
    );
    let url = format!("tls://127.0.0.1:{port}");
    let ca = dir.join("ca.pem");
    let team = Team {
        tmp,
        nats: url.clone(),
    };
    std::fs::create_dir_all(team.home()).unwrap();
    team.list_admitted(&url, &["--nats-tls-ca", ca.to_str().unwrap()]);
    // The CA from the user's config.
    team.user_team_nats(Some(json!({"tlsCa": ca})));
    team.list_admitted(&url, &[]);
    // Without it, the test CA's certificate is not trusted: refused at once, and said.
    team.user_team_nats(None);
    let err = team.list_refused(&url);
    assert!(err.contains("tls") || err.contains("certificate"), "{err}");
    drop(nats);
}

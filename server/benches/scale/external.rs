//! `external` (N = 500): N new Claude Code sessions at once, through `http` hooks and then through
//! N `rawko hook` processes, against one `rawko serve`. Target: http p99 ≤ 250 ms, nothing
//! dropped.

use super::*;

/// A Claude Code hook input: the first event of a new session.
fn session_start(ws: &Path, session: &str) -> String {
    let cwd = ws.display().to_string();
    json!({"session_id": session, "transcript_path": "/tmp/transcript.jsonl", "cwd": cwd, "permission_mode": "default", "hook_event_name": "SessionStart", "source": "startup"}).to_string()
}

/// Whether a SessionStart answer (JSON) carries the first phase's context.
fn has_context(answer: &str) -> bool {
    serde_json::from_str::<Value>(answer.trim()).is_ok_and(|v| {
        let context = v["hookSpecificOutput"]["additionalContext"].as_str();
        context.is_some_and(|c| c.contains("Plan"))
    })
}

/// Runs `job(i)` for i in 0..n on n threads that start together; returns each one's latency or
/// why it failed.
fn all_at_once(
    n: usize,
    job: impl Fn(usize) -> Result<(), String> + Send + Sync + 'static,
) -> Vec<Result<Duration, String>> {
    let job = Arc::new(job);
    let barrier = Arc::new(Barrier::new(n));
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (job, barrier) = (job.clone(), barrier.clone());
            let thread = std::thread::Builder::new().stack_size(256 * 1024);
            let run = move || {
                barrier.wait();
                let start = Instant::now();
                job(i).map(|()| start.elapsed())
            };
            thread.spawn(run).expect("spawn a thread")
        })
        .collect();
    let joined = threads.into_iter().map(|t| t.join());
    joined
        .map(|r| r.unwrap_or_else(|_| Err("panicked".to_owned())))
        .collect()
}

/// Prints a load's latencies, its failures and the server's CPU meanwhile; false when any failed.
#[allow(clippy::print_stdout)]
fn report_load(name: &str, target: &str, results: Vec<Result<Duration, String>>, cpu: f64) -> bool {
    let n = results.len();
    let mut times: Vec<Duration> = results.iter().filter_map(|r| r.clone().ok()).collect();
    let failures: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    times.sort();
    let (p50, p99) = (ms(percentile(&times, 0.5)), ms(percentile(&times, 0.99)));
    let max = ms(times.last().copied().unwrap_or_default());
    println!("  {name}: p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms{target}");
    let failed = failures.len();
    println!("  {name}: dropped or failed: {failed} of {n} (target 0)");
    println!("  {name}: server CPU meanwhile: {cpu:.2} s");
    for f in failures.iter().take(5) {
        println!("    {f}");
    }
    failures.is_empty()
}

/// One `POST /hooks/SessionStart` on a connection of its own; Ok when answered 200 with context.
fn post_session_start(addr: &str, token: &str, body: &str) -> Result<(), String> {
    let mut c = std::net::TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    let _ = c.set_nodelay(true);
    let len = body.len();
    write!(c, "POST /hooks/SessionStart?workflow=feature HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n{body}").map_err(|e| format!("write: {e}"))?;
    let mut out = String::new();
    c.read_to_string(&mut out)
        .map_err(|e| format!("read: {e}"))?;
    let answer = out.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    if out.starts_with("HTTP/1.1 200") && has_context(answer) {
        return Ok(());
    }
    Err(out.chars().take(300).collect())
}

/// `rawko hook SessionStart` as Claude Code runs it; Ok when it exits 0 with context.
fn hook_session_start(fx: &Fixture, input: &str) -> Result<(), String> {
    let mut child = fx
        .rawko(&["hook", "SessionStart", "--workflow", "feature"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let written = child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes());
    written.map_err(|e| format!("stdin: {e}"))?;
    let out = child.wait_with_output().map_err(|e| format!("wait: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() && has_context(&stdout) {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    Err(format!("{} {stdout} {stderr}", out.status))
}

/// N new external sessions at once, through http hooks and then through `rawko hook`.
#[allow(clippy::print_stdout)]
pub(super) fn external(n: usize) -> bool {
    let what = "N new Claude Code sessions at once (SessionStart)";
    header("external", n, what);
    let fx = Arc::new(Fixture::new());
    let mut s = Server::start(&fx, json!({"countdownTickMillis": 20}));
    let endpoint_dir = fx.home.join("run/rawko");
    let deadline = Instant::now() + Duration::from_secs(30);
    let endpoint = loop {
        // The endpoint file, not the temporary file it is written to before its rename.
        let entry = fs::read_dir(&endpoint_dir).ok().and_then(|d| {
            d.filter_map(Result::ok)
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|x| x == "json"))
        });
        if let Some(path) = entry {
            break path;
        }
        assert!(Instant::now() < deadline, "no endpoint file");
        std::thread::sleep(Duration::from_millis(10));
    };
    let info: Value = serde_json::from_str(&fs::read_to_string(&endpoint).expect("endpoint"))
        .expect("endpoint JSON");
    let url = info["url"].as_str().expect("url");
    let addr = url.trim_start_matches("http://").to_owned();
    let token = info["token"].as_str().expect("token").to_owned();

    let (shared, cpu) = (fx.clone(), s.cpu_secs());
    let http = all_at_once(n, move |i| {
        let body = session_start(&shared.ws, &format!("scale-http-{i}"));
        post_session_start(&addr, &token, &body).map_err(|e| format!("session {i}: {e}"))
    });
    let name = "http hook POST /hooks/SessionStart";
    let mut ok = report_load(name, " (target p99 ≤ 250 ms)", http, s.cpu_secs() - cpu);
    let (shared, cpu) = (fx.clone(), s.cpu_secs());
    let hooks = all_at_once(n, move |i| {
        let input = session_start(&shared.ws, &format!("scale-hook-{i}"));
        hook_session_start(&shared, &input).map_err(|e| format!("session {i}: {e}"))
    });
    let name = "rawko hook SessionStart processes";
    ok &= report_load(name, "", hooks, s.cpu_secs() - cpu);

    let ((listed, took), want) = (s.list_tasks(), 2 * n);
    let took = ms(took);
    println!("  rawko/listTasks: {listed} tasks in {took:.1} ms (want {want})");
    println!("  peak RSS (VmHWM): {} KB", s.kib("VmHWM:"));
    ok &= listed == want;
    s.stop();
    ok
}

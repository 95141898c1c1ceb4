//! Benchmark of streaming: from the moment a loopback OpenAI-compatible server writes an SSE delta
//! to the moment `rawko serve` has put the matching `rawko/output` `assistant_delta` notification
//! on its stdout and the editor has read it; per delta (paced, one every 2 ms) and sustained
//! (deltas written back to back).
//!
//! Run: `cargo bench -p rawko --bench sse`. Target (issue 5): ≤ 50 µs per delta.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Serves one streamed chat completion per connection: `deltas` pieces, pacing them by `gap`.
/// Sends the write time of every delta back over `times`.
fn serve_once(
    listener: &TcpListener,
    deltas: usize,
    gap: Duration,
    times: &mpsc::Sender<(usize, Instant)>,
) {
    let (mut stream, _) = listener.accept().expect("accept");
    // Like a streaming API server: no Nagle delay on the small event writes.
    stream.set_nodelay(true).expect("nodelay");
    read_request(&mut stream);
    stream
        .write_all(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n")
        .expect("head");
    for i in 0..deltas {
        if !gap.is_zero() {
            thread::sleep(gap);
        }
        let chunk = json!({
            "id": "bench", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": 0, "delta": {"content": format!("d{i} ")}, "finish_reason": null}]
        });
        let frame = format!("data: {chunk}\n\n");
        let at = Instant::now();
        stream.write_all(frame.as_bytes()).expect("delta");
        stream.flush().expect("flush");
        let _ = times.send((i, at));
    }
    let last = json!({"id": "bench", "object": "chat.completion.chunk", "model": "m",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    let _ = stream.write_all(format!("data: {last}\n\ndata: [DONE]\n\n").as_bytes());
}

fn read_request(stream: &mut TcpStream) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut length = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line).expect("request line");
        let t = line.trim_end();
        if t.is_empty() {
            break;
        }
        if let Some(v) = t.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).expect("request body");
}

struct Editor {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    id: u64,
}

impl Editor {
    fn send(&mut self, v: &Value) {
        let body = serde_json::to_vec(v).expect("json");
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend_from_slice(&body);
        self.stdin.write_all(&frame).expect("write");
        self.stdin.flush().expect("flush");
    }

    fn read(&mut self) -> Value {
        let mut length = 0;
        let mut line = String::new();
        loop {
            line.clear();
            self.stdout.read_line(&mut line).expect("header");
            let t = line.trim_end();
            if t.is_empty() {
                break;
            }
            if let Some(n) = t.strip_prefix("Content-Length: ") {
                length = n.parse().expect("length");
            }
        }
        let mut body = vec![0; length];
        self.stdout.read_exact(&mut body).expect("body");
        serde_json::from_slice(&body).expect("json")
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.id += 1;
        let id = self.id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let m = self.read();
            if m["id"] == id && m.get("method").is_none() {
                return m;
            }
        }
    }
}

/// Runs one task; returns the latency of each delta and the whole stream's duration.
fn run(
    editor: &mut Editor,
    listener: &TcpListener,
    deltas: usize,
    gap: Duration,
) -> (Vec<Duration>, Duration) {
    let (tx, rx) = mpsc::channel();
    let server = {
        let listener = listener.try_clone().expect("listener");
        thread::spawn(move || serve_once(&listener, deltas, gap, &tx))
    };
    let r = editor.request(
        "rawko/startTask",
        json!({"description": "stream", "provider": "openai", "agent": "default"}),
    );
    let task = r["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"))
        .to_owned();
    let mut arrived = vec![None; deltas];
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    loop {
        let m = editor.read();
        if m["params"]["taskId"] != task.as_str() {
            continue;
        }
        if m["method"] == "rawko/output" && m["params"]["kind"] == "assistant_delta" {
            let now = Instant::now();
            let text = m["params"]["text"].as_str().unwrap_or_default();
            if let Some(i) = text
                .trim()
                .strip_prefix('d')
                .and_then(|n| n.parse::<usize>().ok())
            {
                if i < deltas {
                    arrived[i] = Some(now);
                    first.get_or_insert(now);
                    last = now;
                }
            }
        }
        if m["method"] == "rawko/taskFinished" {
            assert_eq!(m["params"]["outcome"], "complete", "{m}");
            break;
        }
    }
    server.join().expect("server");
    let written: Vec<(usize, Instant)> = rx.try_iter().collect();
    let mut latencies: Vec<Duration> = written
        .iter()
        .filter_map(|(i, at)| arrived[*i].map(|a| a.saturating_duration_since(*at)))
        .collect();
    assert_eq!(latencies.len(), deltas, "every delta arrived");
    latencies.sort();
    (
        latencies,
        last.saturating_duration_since(first.unwrap_or(last)),
    )
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// The floor to compare with: the same two hops (a TCP socket into a second process, a pipe out
/// of it) through a process that only copies bytes. This binary plays that relay when started
/// with `RAWKO_SSE_RELAY=<port>`.
fn relay(port: u16) {
    let mut socket = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let mut out = std::io::stdout().lock();
    let mut buf = [0u8; 8192];
    loop {
        let n = socket.read(&mut buf).unwrap_or(0);
        if n == 0 {
            return;
        }
        if out.write_all(&buf[..n]).and_then(|()| out.flush()).is_err() {
            return;
        }
    }
}

fn floor(samples: usize) -> Vec<Duration> {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let mut child = Command::new(std::env::current_exe().expect("exe"))
        .env("RAWKO_SSE_RELAY", port.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the relay");
    let mut from_relay = child.stdout.take().expect("stdout");
    let (mut to_relay, _) = listener.accept().expect("accept");
    to_relay.set_nodelay(true).expect("nodelay");
    let frame = [b'x'; 140];
    let mut back = [0u8; 140];
    let mut lat = Vec::with_capacity(samples);
    for _ in 0..samples {
        thread::sleep(Duration::from_millis(2));
        let at = Instant::now();
        to_relay.write_all(&frame).expect("write");
        from_relay.read_exact(&mut back).expect("read");
        lat.push(at.elapsed());
    }
    drop(to_relay);
    let _ = child.wait();
    lat.sort();
    lat
}

#[allow(clippy::print_stdout)]
fn main() {
    if let Some(port) = std::env::var("RAWKO_SSE_RELAY")
        .ok()
        .and_then(|p| p.parse().ok())
    {
        relay(port);
        return;
    }
    let quick = !std::env::args().any(|a| a == "--bench");
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let tmp = tempfile::tempdir().expect("tempdir");
    let home = tmp.path().join("home");
    let ws = tmp.path().join("ws");
    std::fs::create_dir_all(&ws).expect("mkdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rawko"))
        .args(["serve", "--workspace"])
        .arg(&ws)
        .env("HOME", &home)
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn rawko serve");
    let stdin = child.stdin.take().expect("stdin");
    let stdout = BufReader::with_capacity(1 << 16, child.stdout.take().expect("stdout"));
    let mut editor = Editor {
        child,
        stdin,
        stdout,
        id: 0,
    };
    let init = editor.request(
        "initialize",
        json!({"processId": null, "rootUri": format!("file://{}", ws.display()), "capabilities": {},
               "initializationOptions": {"providers": [{"name": "openai", "model": "m", "baseUrl": format!("http://127.0.0.1:{port}/v1")}]}}),
    );
    assert!(init.get("result").is_some(), "{init}");
    editor.send(&json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}));

    let paced = if quick { 50 } else { 1_000 };
    let (lat, _) = run(&mut editor, &listener, paced, Duration::from_millis(2));
    let pct = |p: f64| micros(lat[((lat.len() as f64 - 1.0) * p).round() as usize]);
    let sustained = if quick { 500 } else { 20_000 };
    let (_, span) = run(&mut editor, &listener, sustained, Duration::ZERO);

    println!("rawko serve streaming benchmark (OpenAI-compatible SSE on loopback → rawko/output on stdout)");
    println!(
        "  SSE delta written → assistant_delta read by the editor: p50 {:.1} µs, p90 {:.1} µs, p99 {:.1} µs ({paced} deltas, one every 2 ms)",
        pct(0.5),
        pct(0.9),
        pct(0.99)
    );
    let floor = floor(paced);
    let fpct = |p: f64| micros(floor[((floor.len() as f64 - 1.0) * p).round() as usize]);
    println!(
        "  the same two hops through a process that only copies bytes (the floor here): p50 {:.1} µs, p90 {:.1} µs",
        fpct(0.5),
        fpct(0.9)
    );
    println!(
        "  sustained: {sustained} deltas in {:.1} ms = {:.0} deltas per second",
        span.as_secs_f64() * 1e3,
        sustained as f64 / span.as_secs_f64().max(1e-9)
    );
    let _ = editor.child.kill();
    let _ = editor.child.wait();
}

//! A small HTTP/1.1 client on std sockets for the web face's tests: one request per connection
//! (`Connection: close`), the event stream read line by line on a thread, and a recorder that
//! plays a webhook.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// An answer: status, headers (names lower-case) and body.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// The page of one rawko: its address, token and host.
pub struct Page {
    pub url: String,
    pub token: String,
    host: String,
}

impl Page {
    pub fn new(url: &str) -> Page {
        let (base, token) = url
            .split_once("/?token=")
            .expect("the address carries a token");
        let host = base
            .strip_prefix("http://")
            .or_else(|| base.strip_prefix("https://"))
            .expect("an http(s) address")
            .to_owned();
        Page {
            url: url.to_owned(),
            token: token.to_owned(),
            host,
        }
    }

    pub fn port(&self) -> u16 {
        self.host.rsplit(':').next().unwrap().parse().unwrap()
    }

    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(("127.0.0.1", self.port())).expect("connect to the page");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        stream
    }

    fn send(&self, head: &str, body: &[u8]) -> Response {
        let mut stream = self.connect();
        stream.write_all(head.as_bytes()).expect("send");
        stream.write_all(body).expect("send");
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).expect("read the answer");
        parse(&raw)
    }

    fn cookie(&self) -> String {
        format!("Cookie: rawko_token={}\r\n", self.token)
    }

    pub fn get(&self, path: &str) -> Response {
        self.send(
            &format!(
                "GET {path} HTTP/1.1\r\nHost: {}\r\n{}Connection: close\r\n\r\n",
                self.host,
                self.cookie()
            ),
            b"",
        )
    }

    pub fn get_without_cookie(&self, path: &str) -> Response {
        self.send(
            &format!(
                "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
                self.host
            ),
            b"",
        )
    }

    /// A POST from the page itself (its Origin).
    pub fn post(&self, path: &str, body: &Value) -> Response {
        let origin = format!("http://{}", self.host);
        self.post_from(path, body, Some(&origin))
    }

    pub fn post_from(&self, path: &str, body: &Value, origin: Option<&str>) -> Response {
        let body = body.to_string();
        let origin = origin
            .map(|o| format!("Origin: {o}\r\n"))
            .unwrap_or_default();
        self.send(
            &format!(
                "POST {path} HTTP/1.1\r\nHost: {}\r\n{}{origin}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                self.host,
                self.cookie(),
                body.len()
            ),
            body.as_bytes(),
        )
    }
}

fn parse(raw: &[u8]) -> Response {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_owned()
    };
    Response {
        status,
        headers,
        body,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// The page's event stream: `(event name, data)` as they come.
pub struct Events {
    rx: Receiver<(String, Value)>,
}

impl Events {
    pub fn open(page: &Page) -> Events {
        let mut stream = page.connect();
        stream
            .set_read_timeout(None)
            .expect("no timeout on the stream");
        write!(
            stream,
            "GET /api/events HTTP/1.1\r\nHost: {}\r\n{}Accept: text/event-stream\r\n\r\n",
            page.host,
            page.cookie()
        )
        .expect("ask for events");
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let reader = BufReader::new(stream);
            let (mut event, mut data) = (String::new(), String::new());
            for line in reader.lines() {
                let Ok(line) = line else { break };
                if let Some(e) = line.strip_prefix("event: ") {
                    event = e.to_owned();
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push_str(d);
                } else if line.is_empty() && !event.is_empty() {
                    let value = serde_json::from_str(&data).unwrap_or(Value::Null);
                    if tx.send((std::mem::take(&mut event), value)).is_err() {
                        break;
                    }
                    data.clear();
                }
                // Chunk sizes and comments are skipped: an event's lines are whole.
            }
        });
        Events { rx }
    }

    /// The next event named `name` whose data fits `pred` (others are skipped).
    pub fn next_matching(
        &mut self,
        name: &str,
        timeout: Duration,
        pred: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok((event, data)) if event == name && pred(&data) => return data,
                Ok((event, data)) => seen.push(format!("{event}: {data}")),
                Err(_) => panic!(
                    "no `{name}` event within {timeout:?}; seen:\n{}",
                    seen.join("\n")
                ),
            }
        }
    }

    pub fn next_named(&mut self, name: &str, timeout: Duration) -> Value {
        self.next_matching(name, timeout, |_| true)
    }
}

/// Everything a pipe says, kept as it comes.
pub fn collect(mut from: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let kept = Arc::new(Mutex::new(String::new()));
    let sink = kept.clone();
    thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    kept
}

/// The first line a pipe says within `timeout`.
pub fn first_line(from: impl Read + Send + 'static, timeout: Duration) -> Option<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut reader = BufReader::new(from);
        let mut line = String::new();
        let _ = reader.read_line(&mut line);
        let _ = tx.send(line.trim_end().to_owned());
        // Keep reading so the process never blocks on a full pipe.
        let _ = std::io::copy(&mut reader, &mut std::io::sink());
    });
    rx.recv_timeout(timeout).ok().filter(|l| !l.is_empty())
}

/// A webhook on loopback that records the bodies POSTed to it.
pub struct Recorder {
    port: u16,
    rx: Receiver<String>,
}

impl Recorder {
    pub fn start() -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut length = 0usize;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
                    }
                    let line = line.trim_end();
                    if line.is_empty() {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':') {
                        if name.eq_ignore_ascii_case("content-length") {
                            length = value.trim().parse().unwrap_or(0);
                        }
                    }
                }
                let mut body = vec![0u8; length];
                let _ = reader.read_exact(&mut body);
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
                );
                if tx
                    .send(String::from_utf8_lossy(&body).into_owned())
                    .is_err()
                {
                    break;
                }
            }
        });
        Recorder { port, rx }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }

    pub fn next(&self, timeout: Duration) -> Option<String> {
        self.rx.recv_timeout(timeout).ok()
    }
}

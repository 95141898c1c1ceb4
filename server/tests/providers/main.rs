//! The HTTP providers against real HTTP servers on 127.0.0.1. Each test starts a tiny server that
//! reads a request, records it, and plays a scripted raw HTTP response: event streams written
//! chunk by chunk, error statuses, a connection reset mid-stream, or a stream that stalls.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rawko::provider::anthropic::AnthropicProvider;
use rawko::provider::http::Usage;
use rawko::provider::openai::OpenAiProvider;
use rawko::provider::{
    ErrorKind, Message, Provider, ProviderError, ProviderSpec, StopReason, ToolCall,
    ToolDescription, ToolResult, Turn, TurnRequest,
};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

mod anthropic;
mod openai;

const SYSTEM: &str = "You are a careful developer.";
const CONTEXT: &str = "Phase: 🧪 Test [3/4]. Run the tests before anything else.";
const KEY: &str = "sk-test-key-0123456789abcdef";

/// One thing the server does while answering.
#[derive(Debug, Clone)]
enum Step {
    /// Raw bytes.
    Raw(String),
    /// One chunk of a chunked body.
    Chunk(String),
    Sleep(Duration),
    /// The last chunk; the connection then closes.
    End,
    /// Closes the connection with a TCP reset.
    Reset,
}

type Reply = Vec<Step>;

/// A request the server received.
#[derive(Debug, Clone)]
struct Recorded {
    path: String,
    headers: Vec<(String, String)>,
    body: Value,
    at: Instant,
}

impl Recorded {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A loopback HTTP server that answers the n-th request with the n-th reply (the last one again
/// once they run out). It stops with the test's runtime.
struct Server {
    url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl Server {
    async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        tokio::spawn(async move {
            let mut n = 0;
            while let Ok((socket, _)) = listener.accept().await {
                let reply = replies[n.min(replies.len() - 1)].clone();
                n += 1;
                tokio::spawn(serve(socket, reply, recorded.clone()));
            }
        });
        Self { url, requests }
    }

    fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(mut socket: TcpStream, reply: Reply, recorded: Arc<Mutex<Vec<Recorded>>>) {
    let Some(request) = read_request(&mut socket).await else {
        return;
    };
    recorded.lock().unwrap().push(request);
    for step in reply {
        let written = match step {
            Step::Raw(text) => socket.write_all(text.as_bytes()).await,
            Step::Chunk(data) => {
                socket
                    .write_all(format!("{:x}\r\n{data}\r\n", data.len()).as_bytes())
                    .await
            }
            Step::Sleep(d) => {
                tokio::time::sleep(d).await;
                Ok(())
            }
            Step::End => socket.write_all(b"0\r\n\r\n").await,
            Step::Reset => {
                socket.set_zero_linger().unwrap();
                return;
            }
        };
        if written.is_err() {
            return;
        }
        let _ = socket.flush().await;
    }
    let _ = socket.shutdown().await;
}

async fn read_request(socket: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines.next()?.split(' ').nth(1)?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    Some(Recorded {
        path,
        headers,
        body: serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or(Value::Null),
        at: Instant::now(),
    })
}

const STREAM_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";

/// A whole streamed reply.
fn stream(events: Vec<Step>) -> Reply {
    let mut reply = vec![Step::Raw(STREAM_HEAD.to_owned())];
    reply.extend(events);
    reply.push(Step::End);
    reply
}

/// A streamed reply that is cut off by a reset after `events`.
fn reset_after(events: Vec<Step>) -> Reply {
    let mut reply = vec![Step::Raw(STREAM_HEAD.to_owned())];
    reply.extend(events);
    // Let the client read what was sent before the reset throws it away.
    reply.push(Step::Sleep(Duration::from_millis(150)));
    reply.push(Step::Reset);
    reply
}

/// A reply with a status and a body.
fn status(code: u16, reason: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut head = format!(
        "HTTP/1.1 {code} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    vec![Step::Raw(format!("{head}\r\n{body}"))]
}

/// The conversation every test continues: a user message, a tool call, and its failed result.
fn conversation() -> Vec<Message> {
    vec![
        Message::User("Add a --shout flag to greet.sh".into()),
        Message::Assistant {
            text: "Reading it first.".into(),
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "Read".into(),
                input: json!({"path": "greet.sh"}),
            }],
        },
        Message::ToolResults(vec![ToolResult {
            tool_call_id: "call_1".into(),
            content: "no such file".into(),
            is_error: true,
        }]),
    ]
}

fn tools() -> Vec<ToolDescription> {
    vec![ToolDescription {
        name: "Read".into(),
        description: "Reads a file of the workspace".into(),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
    }]
}

/// Runs one turn; returns it and the pieces of text streamed, in order.
async fn take_turn(provider: &mut dyn Provider) -> (Result<Turn, ProviderError>, Vec<String>) {
    let messages = conversation();
    let tools = tools();
    let pieces = Mutex::new(Vec::new());
    let sink = |s: &str| pieces.lock().unwrap().push(s.to_owned());
    let request = TurnRequest {
        system: Some(SYSTEM),
        messages: &messages,
        context: Some(CONTEXT),
        tools: &tools,
    };
    let result = provider.turn(request, &sink).await;
    (result, pieces.into_inner().unwrap())
}

#[test]
fn unknown_providers_list_the_known_ones() {
    let spec = ProviderSpec {
        name: "gemini".into(),
        script: None,
        model: None,
        base_url: None,
        ..ProviderSpec::default()
    };
    let e = spec.build_with(&|_| None).map(|_| ()).unwrap_err();
    assert_eq!(
        e,
        "unknown provider \"gemini\"; this build knows: scripted, anthropic, openai, acp"
    );
}

//! rawko's JSON-RPC transport over stdio: LSP framing that survives bad input, the dispatch of
//! requests to tower-lsp-server's `LspService`, and rawko's own server → client traffic.
//!
//! tower-lsp-server's `Server` ends its read loop at the first frame it cannot decode (tokio-util's
//! `FramedRead` stops after a decoder error), which would let one malformed message stop rawko.
//! This reader answers every bad frame with a JSON-RPC error, finds the next `Content-Length`
//! header, and goes on (invariant 8).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use dashmap::DashMap;
use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tower::Service;
use tower_lsp_server::jsonrpc::{Request, Response};
use tower_lsp_server::{ClientSocket, LanguageServer, LspService};

use rawko_protocol::error_codes;

/// The largest message body rawko reads; a larger one is skipped and answered with an error.
pub const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

/// How many bytes a header block may take before it is treated as garbage.
const MAX_HEADER_BYTES: usize = 8 * 1024;

/// Prefix of the ids of rawko's own server → client requests (tower-lsp-server's are numbers).
const OWN_ID_PREFIX: &str = "rawko-";

/// An answer to one of rawko's server → client requests: the result, or the error object.
pub type Answer = Result<Value, Value>;

/// The way out to the client for rawko's notifications and requests, ordered with everything
/// else the server writes.
pub struct Outgoing {
    frames: mpsc::UnboundedSender<Vec<u8>>,
    /// Bytes queued in `frames` and not yet written to the client, and the most there were.
    queued: Arc<Queued>,
    pending: DashMap<String, oneshot::Sender<Answer>>,
    next_id: AtomicU64,
    /// An editor is attached (it sent `initialized`): until then rawko's own notifications are
    /// not written (nothing may precede the `initialize` answer) and its requests are not sent.
    ready: AtomicBool,
}

/// Frames a JSON body with its `Content-Length` header.
pub fn frame(body: &[u8]) -> Vec<u8> {
    let mut out = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    out.extend_from_slice(body);
    out
}

/// Bytes of frames queued for the client.
#[derive(Debug, Default)]
pub struct Queued {
    pub now: AtomicU64,
    pub peak: AtomicU64,
}

impl Queued {
    fn written(&self, n: usize) {
        self.now.fetch_sub(n as u64, Ordering::Relaxed);
        crate::pressure::OUTGOING.sub(n as u64);
    }
}

impl Outgoing {
    /// Queues a frame for the client.
    fn push(&self, frame: Vec<u8>) {
        let n = frame.len() as u64;
        let now = self.queued.now.fetch_add(n, Ordering::Relaxed) + n;
        self.queued.peak.fetch_max(now, Ordering::Relaxed);
        crate::pressure::OUTGOING.add(n);
        if self.frames.send(frame).is_err() {
            self.queued.now.fetch_sub(n, Ordering::Relaxed);
            crate::pressure::OUTGOING.sub(n);
        }
    }

    /// Bytes queued for the client now, and the most there were.
    pub fn queued_bytes(&self) -> (u64, u64) {
        (
            self.queued.now.load(Ordering::Relaxed),
            self.queued.peak.load(Ordering::Relaxed),
        )
    }

    /// rawko's requests to the client still waiting for an answer.
    pub fn pending_count(&self) -> usize {
        self.pending.len()
    }

    fn send(&self, message: &Value) {
        match serde_json::to_vec(message) {
            Ok(body) => self.push(frame(&body)),
            Err(e) => tracing::error!("cannot serialise a message: {e}"),
        }
    }

    /// Marks the editor attached: from now on notifications and requests go out.
    pub fn set_ready(&self) {
        self.ready.store(true, Ordering::Release);
    }

    /// Whether an editor is attached to ask and to tell.
    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Sends a notification (serialised straight to bytes: no intermediate JSON value). Before an
    /// editor is attached it is dropped: what it said is in the task's log and snapshot.
    pub fn notify<N: rawko_protocol::Notification>(&self, params: &N::Params) {
        if !self.is_ready() {
            return;
        }
        #[derive(serde::Serialize)]
        struct Envelope<'a, P> {
            jsonrpc: &'static str,
            method: &'static str,
            params: &'a P,
        }
        let envelope = Envelope {
            jsonrpc: "2.0",
            method: N::METHOD,
            params,
        };
        match serde_json::to_vec(&envelope) {
            Ok(body) => self.push(frame(&body)),
            Err(e) => tracing::error!("cannot serialise a notification: {e}"),
        }
    }

    /// Sends a request; the answer arrives on the receiver (dropped unanswered if the client
    /// goes away).
    pub fn request<R: rawko_protocol::Request>(
        &self,
        params: &R::Params,
    ) -> (String, oneshot::Receiver<Answer>) {
        let id = format!(
            "{OWN_ID_PREFIX}{}",
            self.next_id.fetch_add(1, Ordering::Relaxed) + 1
        );
        let (tx, rx) = oneshot::channel();
        self.pending.insert(id.clone(), tx);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": R::METHOD, "params": params}));
        (id, rx)
    }

    /// Withdraws a request the server no longer waits for (`$/cancelRequest`), so the editor can
    /// close its prompt.
    pub fn cancel(&self, id: &str) {
        if self.pending.remove(id).is_some() {
            self.send(
                &json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": id}}),
            );
        }
    }

    fn resolve(&self, id: &str, answer: Answer) {
        match self.pending.remove(id) {
            Some((_, tx)) => {
                let _ = tx.send(answer);
            }
            None => tracing::debug!(
                "an answer to request {}, which nobody waits for any more",
                crate::clip::clip(id)
            ),
        }
    }

    /// Answers with an error; the message is clipped (see [`crate::clip::clip_message`]).
    fn error(&self, id: Value, code: i64, message: &str) {
        let message = crate::clip::clip_message(message);
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        );
    }
}

/// One unit read from the input.
#[derive(Debug, PartialEq)]
enum Frame {
    Body(Vec<u8>),
    /// A frame that cannot be read; the message says why.
    Bad(String),
}

/// Reads LSP frames, resynchronising on the next `Content-Length` after bad input.
struct FrameReader<R> {
    input: R,
    buf: Vec<u8>,
    eof: bool,
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|w| w.eq_ignore_ascii_case(needle))
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    fn new(input: R) -> Self {
        Self {
            input,
            buf: Vec::with_capacity(64 * 1024),
            eof: false,
        }
    }

    /// Reads more input; `false` at the end of it.
    async fn fill(&mut self) -> std::io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        // Read straight into the buffer's spare room (no zeroed scratch buffer per read).
        self.buf.reserve(64 * 1024);
        let n = self.input.read_buf(&mut self.buf).await?;
        if n == 0 {
            self.eof = true;
            return Ok(false);
        }
        Ok(true)
    }

    /// The next frame, or `None` at the end of the input.
    async fn next(&mut self) -> std::io::Result<Option<Frame>> {
        loop {
            // Anything before a header is left over from a bad frame: skip it.
            match find(&self.buf, b"content-length") {
                Some(0) => {}
                Some(start) => {
                    tracing::warn!("skipped {start} bytes of input that were not a message");
                    self.buf.drain(..start);
                }
                None => {
                    let keep = self.buf.len().min(16);
                    let dropped = self.buf.len() - keep;
                    if dropped > 0 && !self.buf[..dropped].iter().all(u8::is_ascii_whitespace) {
                        tracing::warn!("skipped {dropped} bytes of input that were not a message");
                    }
                    self.buf.drain(..dropped);
                    if !self.fill().await? {
                        return Ok(None);
                    }
                    continue;
                }
            }
            let Some(end) = find(&self.buf, b"\r\n\r\n") else {
                if self.buf.len() > MAX_HEADER_BYTES {
                    self.buf.drain(..1);
                    return Ok(Some(Frame::Bad(
                        "the message header is too long or not terminated".to_owned(),
                    )));
                }
                if !self.fill().await? {
                    return Ok(None);
                }
                continue;
            };
            let header = String::from_utf8_lossy(&self.buf[..end]).into_owned();
            self.buf.drain(..end + 4);
            let mut length: Option<Result<usize, String>> = None;
            for line in header.split("\r\n") {
                let Some((name, value)) = line.split_once(':') else {
                    length = Some(Err(format!(
                        "invalid header line \"{}\"",
                        crate::clip::clip(line)
                    )));
                    break;
                };
                if name.trim().eq_ignore_ascii_case("content-length") {
                    length = Some(value.trim().parse::<usize>().map_err(|_| {
                        format!(
                            "invalid Content-Length \"{}\"",
                            crate::clip::clip(value.trim())
                        )
                    }));
                }
            }
            let length = match length {
                Some(Ok(n)) => n,
                Some(Err(why)) => return Ok(Some(Frame::Bad(why))),
                None => return Ok(Some(Frame::Bad("missing Content-Length header".to_owned()))),
            };
            if length > MAX_BODY_BYTES {
                // Skip the body without keeping it.
                let mut left = length;
                loop {
                    let take = left.min(self.buf.len());
                    self.buf.drain(..take);
                    left -= take;
                    if left == 0 || !self.fill().await? {
                        break;
                    }
                }
                return Ok(Some(Frame::Bad(format!(
                    "message of {length} bytes is larger than the limit of {MAX_BODY_BYTES}"
                ))));
            }
            while self.buf.len() < length {
                if !self.fill().await? {
                    return Ok(None);
                }
            }
            let body: Vec<u8> = self.buf.drain(..length).collect();
            return Ok(Some(Frame::Body(body)));
        }
    }
}

/// Serves `service` over `input`/`output` until the client sends `exit` or closes the input.
pub async fn serve<S, I, O>(
    input: I,
    output: O,
    mut service: LspService<S>,
    socket: ClientSocket,
    outgoing: Arc<Outgoing>,
    frames: mpsc::UnboundedReceiver<Vec<u8>>,
) where
    S: LanguageServer,
    I: AsyncRead + Unpin,
    O: AsyncWrite + Unpin + Send + 'static,
{
    let (stop_writer, writer_stop) = oneshot::channel();
    let writer = tokio::spawn(write_frames(
        output,
        frames,
        outgoing.queued.clone(),
        writer_stop,
    ));
    let (mut client_requests, mut client_responses) = socket.split();
    // tower-lsp-server's own server → client messages (window/showMessage, …).
    let forward = {
        let outgoing = outgoing.clone();
        tokio::spawn(async move {
            while let Some(request) = client_requests.next().await {
                match serde_json::to_value(&request) {
                    Ok(v) => outgoing.send(&v),
                    Err(e) => tracing::error!("cannot serialise a request to the client: {e}"),
                }
            }
        })
    };

    let mut reader = FrameReader::new(input);
    let mut lifecycle = Lifecycle::Uninitialized;
    loop {
        let frame = match reader.next().await {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(e) => {
                tracing::error!("cannot read stdin: {e}");
                break;
            }
        };
        let body = match frame {
            Frame::Body(body) => body,
            Frame::Bad(why) => {
                outgoing.error(
                    Value::Null,
                    error_codes::PARSE_ERROR,
                    &format!("parse error: {why}"),
                );
                continue;
            }
        };
        // The common case first: a well-formed request or notification, parsed in one go.
        // (tower-lsp-server's Request defaults a missing method to "", so a response parses too.)
        if let Some(request) = serde_json::from_slice::<Request>(&body)
            .ok()
            .filter(|r| !r.method().is_empty())
        {
            if !dispatch(&mut service, request, &outgoing, &mut lifecycle).await {
                break;
            }
            continue;
        }
        let value: Value = match serde_json::from_slice(&body) {
            Ok(v) => v,
            Err(e) => {
                outgoing.error(
                    Value::Null,
                    error_codes::PARSE_ERROR,
                    &format!("parse error: {e}"),
                );
                continue;
            }
        };
        let id = value.get("id").cloned().unwrap_or(Value::Null);
        if !value.is_object() {
            let why = if value.is_array() {
                "batches are not supported"
            } else {
                "a message must be a JSON object"
            };
            outgoing.error(
                Value::Null,
                error_codes::INVALID_REQUEST,
                &format!("invalid request: {why}"),
            );
            continue;
        }
        if value.get("method").is_none() {
            // A response to a server → client request.
            if let Some(own) = id.as_str().filter(|s| s.starts_with(OWN_ID_PREFIX)) {
                let answer = match (value.get("result"), value.get("error")) {
                    (_, Some(error)) => Err(error.clone()),
                    (Some(result), None) => Ok(result.clone()),
                    (None, None) => Err(
                        json!({"code": error_codes::INVALID_REQUEST, "message": "a response without result or error"}),
                    ),
                };
                outgoing.resolve(own, answer);
            } else if value.get("result").is_some() || value.get("error").is_some() {
                match serde_json::from_value::<Response>(value) {
                    Ok(response) => {
                        if client_responses.send(response).await.is_err() {
                            tracing::warn!("a response nobody waits for");
                        }
                    }
                    Err(e) => tracing::warn!(
                        "an unreadable response from the client: {}",
                        crate::clip::clip_message(&e.to_string())
                    ),
                }
            } else {
                outgoing.error(
                    id,
                    error_codes::INVALID_REQUEST,
                    "invalid request: no method, result or error",
                );
            }
            continue;
        }
        // It has a method but is not a valid request (a wrong jsonrpc version, bad params type…).
        let why = serde_json::from_value::<Request>(value)
            .err()
            .map_or_else(|| "the method name is empty".to_owned(), |e| e.to_string());
        outgoing.error(
            id,
            error_codes::INVALID_REQUEST,
            &format!("invalid request: {why}"),
        );
    }
    forward.abort();
    // Let the writer send what is queued (the answer to shutdown, say), then stop.
    let _ = stop_writer.send(());
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), writer).await;
}

/// Where the LSP lifecycle stands. tower-lsp-server keeps its own state for the methods it
/// routes; the transport follows the answers to `initialize` and `shutdown` to answer the
/// requests it does not hand on in the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lifecycle {
    Uninitialized,
    Initialized,
    ShutDown,
}

/// Whether rawko serves `method` (a request or a notification the client sends).
fn serves(method: &str) -> bool {
    matches!(
        method,
        "initialize"
            | "initialized"
            | "shutdown"
            | "exit"
            | "workspace/executeCommand"
            | "$/cancelRequest"
    ) || rawko_protocol::ALL_METHODS
        .iter()
        .any(|m| m.direction == rawko_protocol::Direction::ClientToServer && m.method == method)
}

/// The error rawko answers itself, before the service sees the request, or `None` to hand it on.
///
/// tower-lsp-server answers a method it does not know with -32601 in every state (and echoes the
/// name whole in `data`), and it marks the server shut down *before* it checks `shutdown`'s
/// params, so a `shutdown` it then refuses would still end the session.
fn refusal(request: &Request, lifecycle: Lifecycle) -> Option<(i64, String)> {
    let method = request.method();
    request.id()?;
    if !serves(method) {
        return Some(match lifecycle {
            Lifecycle::Uninitialized => (
                error_codes::SERVER_NOT_INITIALIZED,
                "server not initialized: send initialize first".to_owned(),
            ),
            Lifecycle::Initialized => (
                error_codes::METHOD_NOT_FOUND,
                format!("unknown method \"{}\"", crate::clip::clip(method)),
            ),
            Lifecycle::ShutDown => (
                error_codes::INVALID_REQUEST,
                "the server is shutting down; only exit is accepted".to_owned(),
            ),
        });
    }
    let params_given = request.params().is_some_and(|p| !p.is_null());
    if method == "shutdown" && lifecycle == Lifecycle::Initialized && params_given {
        return Some((
            error_codes::INVALID_PARAMS,
            "shutdown takes no params (leave params out, or send null)".to_owned(),
        ));
    }
    None
}

/// An error response with its message clipped and its `data` left out: messages from
/// tower-lsp-server and serde quote the input whole (an unknown variant, unexpected params).
fn clipped(response: Response) -> Response {
    if !response.is_error() {
        return response;
    }
    let (id, body) = response.into_parts();
    let body = body.map_err(|mut error| {
        if let std::borrow::Cow::Owned(m) = crate::clip::clip_message(&error.message) {
            error.message = m.into();
        }
        error.data = None;
        error
    });
    Response::from_parts(id, body)
}

/// Hands a request to the service and sends its response. Returns `false` when the server should
/// stop reading (after `exit`, or when the service has exited).
async fn dispatch<S: LanguageServer>(
    service: &mut LspService<S>,
    request: Request,
    outgoing: &Arc<Outgoing>,
    lifecycle: &mut Lifecycle,
) -> bool {
    if let Some((code, message)) = refusal(&request, *lifecycle) {
        let id = request.id().map_or(Value::Null, |id| json!(id));
        outgoing.error(id, code, &message);
        return true;
    }
    if futures::future::poll_fn(|cx| service.poll_ready(cx))
        .await
        .is_err()
    {
        return false;
    }
    let method = request.method().to_owned();
    let call = service.call(request);
    let respond = {
        let outgoing = outgoing.clone();
        async move {
            let Ok(Some(response)) = call.await else {
                return false;
            };
            let ok = response.is_ok();
            match serde_json::to_vec(&clipped(response)) {
                Ok(body) => outgoing.push(frame(&body)),
                Err(e) => tracing::error!("cannot serialise a response: {e}"),
            }
            ok
        }
    };
    match method.as_str() {
        // The lifecycle is ordered: nothing else runs until initialize (or shutdown) has
        // answered, and exit ends the loop.
        "initialize" => {
            if respond.await && *lifecycle == Lifecycle::Uninitialized {
                *lifecycle = Lifecycle::Initialized;
            }
        }
        "shutdown" => {
            if respond.await && *lifecycle == Lifecycle::Initialized {
                *lifecycle = Lifecycle::ShutDown;
            }
        }
        "exit" => {
            respond.await;
            return false;
        }
        _ => {
            // Most handlers finish at once: answer those without a task of their own.
            let mut respond = Box::pin(respond);
            if futures::FutureExt::now_or_never(&mut respond).is_none() {
                tokio::spawn(respond);
            }
        }
    }
    true
}

/// Writes frames in the order they were queued, until `stop` fires; then writes what is still
/// queued and returns.
/// The most bytes gathered into one write to stdout.
const MAX_WRITE_BATCH: usize = 256 * 1024;

async fn write_frames<O: AsyncWrite + Unpin>(
    mut output: O,
    frames: mpsc::UnboundedReceiver<Vec<u8>>,
    queued: Arc<Queued>,
    mut stop: oneshot::Receiver<()>,
) {
    /// The frames left unwritten when the writer ends (the client gone) are not counted as
    /// queued any more.
    struct Frames(mpsc::UnboundedReceiver<Vec<u8>>, Arc<Queued>);
    impl Drop for Frames {
        fn drop(&mut self) {
            self.0.close();
            while let Ok(frame) = self.0.try_recv() {
                self.1.written(frame.len());
            }
        }
    }
    let mut frames = Frames(frames, queued.clone());
    let frames = &mut frames.0;
    loop {
        let frame = tokio::select! {
            frame = frames.recv() => frame,
            _ = &mut stop => {
                while let Ok(frame) = frames.try_recv() {
                    let written = output.write_all(&frame).await;
                    queued.written(frame.len());
                    if written.is_err() {
                        return;
                    }
                }
                let _ = output.flush().await;
                return;
            }
        };
        let Some(mut batch) = frame else { return };
        // What else is queued goes out in the same write (one system call for a burst of
        // notifications, not one per notification).
        while batch.len() < MAX_WRITE_BATCH {
            match frames.try_recv() {
                Ok(more) => batch.extend_from_slice(&more),
                Err(_) => break,
            }
        }
        let written = match output.write_all(&batch).await {
            Ok(()) => output.flush().await,
            Err(e) => Err(e),
        };
        queued.written(batch.len());
        if let Err(e) = written {
            tracing::error!("cannot write to stdout: {e}");
            return;
        }
    }
}

/// A new outgoing channel and the receiver its frames go to.
pub fn outgoing() -> (Arc<Outgoing>, mpsc::UnboundedReceiver<Vec<u8>>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (
        Arc::new(Outgoing {
            frames: tx,
            queued: Arc::default(),
            pending: DashMap::new(),
            next_id: AtomicU64::new(0),
            ready: AtomicBool::new(false),
        }),
        rx,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn frames(input: &[u8]) -> Vec<Frame> {
        let mut reader = FrameReader::new(input);
        let mut out = Vec::new();
        while let Some(f) = reader.next().await.unwrap() {
            out.push(f);
        }
        out
    }

    fn body(s: &str) -> Frame {
        Frame::Body(s.as_bytes().to_vec())
    }

    #[tokio::test]
    async fn reads_frames_and_resynchronises_after_bad_ones() {
        let mut input = frame(b"{\"a\":1}");
        input.extend_from_slice(b"Content-Length: 3\r\n\r\n{\"b\":2}");
        input.extend(frame(b"{\"c\":3}"));
        input.extend_from_slice(b"Content-Length: x\r\n\r\n");
        input.extend_from_slice(b"garbage");
        input.extend(frame(b"{\"d\":4}"));
        input.extend_from_slice(b"Content-Type: text\r\n\r\n");
        input.extend_from_slice(b"content-length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}");
        let got = frames(&input).await;
        assert_eq!(
            got,
            vec![
                body("{\"a\":1}"),
                body("{\"b"),
                body("{\"c\":3}"),
                Frame::Bad("invalid Content-Length \"x\"".to_owned()),
                body("{\"d\":4}"),
                body("{}"),
            ]
        );
    }

    #[tokio::test]
    async fn an_oversized_body_is_skipped() {
        let mut input = format!("Content-Length: {}\r\n\r\n", MAX_BODY_BYTES + 1).into_bytes();
        input.extend(std::iter::repeat_n(b'x', MAX_BODY_BYTES + 1));
        input.extend(frame(b"{}"));
        let got = frames(&input).await;
        assert!(
            matches!(&got[0], Frame::Bad(why) if why.contains("larger than the limit")),
            "{got:?}"
        );
        assert_eq!(got[1], body("{}"));
    }

    #[tokio::test]
    async fn a_truncated_body_at_the_end_is_dropped() {
        let got = frames(b"Content-Length: 10\r\n\r\n{}").await;
        assert!(got.is_empty());
    }
}

//! The ACP face's transport: newline-delimited JSON-RPC on stdin and stdout, read with a bound.
//!
//! The SDK (`agent-client-protocol`) would read stdin itself, line by line: a line that is not
//! UTF-8 ended the connection and every session with it, and a line of any length was buffered
//! whole (a 64 MiB answer took rawko to 268 MB). So rawko reads the lines and hands the SDK only
//! well-formed ones, unchanged (its `Lines` transport):
//!
//! - input is read in chunks, and a line is kept only up to [`MAX_LINE`] bytes: a longer one is
//!   dropped as it comes, up to its newline, and answered with an error that says so;
//! - a line that is not UTF-8 or not JSON is answered with `-32700` (id `null`, as JSON-RPC 2.0
//!   says; the SDK's own answer would echo the whole line back);
//! - a blank line is skipped;
//!
//! and the connection goes on. A refused line that was the client's answer to one of rawko's own
//! requests is not guessed at: that request fails by its bound (`client_io.rs`).
//!
//! These answers and the SDK's own messages go out through one [`LineWriter`], which writes each
//! line whole under a lock, so no answer lands in the middle of another line.

use std::io;
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The longest line rawko reads as one message (the newline not counted).
pub const MAX_LINE: usize = 16 << 20;

/// How much of the input is read at a time.
const CHUNK: usize = 64 << 10;

/// JSON-RPC 2.0's codes for what cannot be read as a request.
const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;

type Output = Box<dyn AsyncWrite + Unpin + Send>;

/// The one writer of the connection's output: each line is written whole (with its newline)
/// and flushed before the next one starts.
#[derive(Clone)]
pub struct LineWriter {
    out: Arc<tokio::sync::Mutex<Output>>,
}

impl LineWriter {
    pub fn new(out: impl AsyncWrite + Unpin + Send + 'static) -> Self {
        Self {
            out: Arc::new(tokio::sync::Mutex::new(Box::new(out))),
        }
    }

    /// Writes `line` and a newline, whole.
    pub async fn write_line(&self, mut line: String) -> io::Result<()> {
        line.push('\n');
        let mut out = self.out.lock().await;
        out.write_all(line.as_bytes()).await?;
        out.flush().await
    }
}

/// What the reader makes of one line it read whole.
#[derive(Debug, PartialEq)]
enum Judged {
    /// A JSON text: for the SDK, as it came.
    Pass(String),
    /// Blank: nothing to do.
    Skip,
    /// Not readable: answered with this error (code, message).
    Refuse(i64, String),
}

/// Judges one line (without its newline; a `\r` before it is dropped, as `BufRead::lines` does).
fn judge(mut line: Vec<u8>) -> Judged {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return Judged::Skip;
    }
    let text = match String::from_utf8(line) {
        Ok(text) => text,
        Err(e) => {
            return Judged::Refuse(
                PARSE_ERROR,
                format!(
                    "parse error: the line is not valid UTF-8 (at byte {})",
                    e.utf8_error().valid_up_to()
                ),
            )
        }
    };
    // Checked here so that the SDK never answers it: its answer carries the whole line back.
    match serde_json::from_str::<serde::de::IgnoredAny>(&text) {
        Ok(_) => Judged::Pass(text),
        Err(e) => Judged::Refuse(
            PARSE_ERROR,
            format!("parse error: the line is not JSON ({e})"),
        ),
    }
}

/// The answer to a line rawko could not read: an error with id `null`.
fn refusal(code: i64, message: &str) -> String {
    let error: Value =
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    error.to_string()
}

/// The message for a line past [`MAX_LINE`].
fn too_long() -> String {
    format!(
        "the line was over {} MiB (the most rawko reads as one message), so it was dropped unread",
        MAX_LINE >> 20
    )
}

/// Reads the input's lines, answers the ones it refuses, and gives the rest.
pub struct LineReader<R> {
    input: BufReader<R>,
    out: LineWriter,
    /// The line read so far (empty while a long one is dropped).
    line: Vec<u8>,
    /// A line past the bound is being dropped up to its newline.
    dropping: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    pub fn new(input: R, out: LineWriter) -> Self {
        Self {
            input: BufReader::with_capacity(CHUNK, input),
            out,
            line: Vec::new(),
            dropping: false,
        }
    }

    /// The next well-formed line; `None` at the end of the input.
    pub async fn next_line(&mut self) -> io::Result<Option<String>> {
        loop {
            let Some(line) = self.read_line().await? else {
                return Ok(None);
            };
            match line {
                Err(message) => {
                    self.out
                        .write_line(refusal(INVALID_REQUEST, &message))
                        .await?;
                }
                Ok(bytes) => match judge(bytes) {
                    Judged::Pass(text) => return Ok(Some(text)),
                    Judged::Skip => {}
                    Judged::Refuse(code, message) => {
                        tracing::debug!("refused a line of the client: {message}");
                        self.out.write_line(refusal(code, &message)).await?;
                    }
                },
            }
        }
    }

    /// The next line's bytes, or the message for a line past the bound (dropped as it came);
    /// `None` at the end of the input. A last line without a newline counts.
    async fn read_line(&mut self) -> io::Result<Option<Result<Vec<u8>, String>>> {
        loop {
            let chunk = self.input.fill_buf().await?;
            if chunk.is_empty() {
                if std::mem::take(&mut self.dropping) {
                    return Ok(Some(Err(too_long())));
                }
                if self.line.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(Ok(std::mem::take(&mut self.line))));
            }
            let (part, ends) = match chunk.iter().position(|&b| b == b'\n') {
                Some(at) => (at, true),
                None => (chunk.len(), false),
            };
            if !self.dropping {
                if self.line.len() + part > MAX_LINE {
                    tracing::debug!("a line of the client is over {MAX_LINE} bytes: dropped");
                    self.dropping = true;
                    // Given back, not just cleared: the bound is on memory, not only on length.
                    self.line = Vec::new();
                } else {
                    self.line.extend_from_slice(&chunk[..part]);
                }
            }
            self.input.consume(part + usize::from(ends));
            if ends {
                if std::mem::take(&mut self.dropping) {
                    return Ok(Some(Err(too_long())));
                }
                return Ok(Some(Ok(std::mem::take(&mut self.line))));
            }
        }
    }
}

/// The SDK's transport over `input` and `output`: the lines [`LineReader`] lets through in, and
/// the SDK's messages out through the same [`LineWriter`] as the reader's answers.
pub fn lines(
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> agent_client_protocol::Lines<
    impl futures::Sink<String, Error = io::Error> + Send + 'static,
    impl futures::Stream<Item = io::Result<String>> + Send + 'static,
> {
    let out = LineWriter::new(output);
    let reader = LineReader::new(input, out.clone());
    let incoming = futures::stream::unfold(Some(reader), |reader| async move {
        let mut reader = reader?;
        match reader.next_line().await {
            Ok(Some(line)) => Some((Ok(line), Some(reader))),
            Ok(None) => None,
            // A read error ends the input (the SDK ends the connection with it).
            Err(e) => Some((Err(e), None)),
        }
    });
    let outgoing = futures::sink::unfold(out, |out, line: String| async move {
        out.write_line(line).await?;
        Ok::<_, io::Error>(out)
    });
    agent_client_protocol::Lines::new(Box::pin(outgoing), Box::pin(incoming))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[test]
    fn lines_are_judged_json_blank_not_utf8_or_not_json() {
        assert_eq!(
            judge(br#"{"jsonrpc": "2.0"}"#.to_vec()),
            Judged::Pass(r#"{"jsonrpc": "2.0"}"#.into())
        );
        assert_eq!(
            judge(b"{\"a\": 1}\r".to_vec()),
            Judged::Pass("{\"a\": 1}".into()),
            "a CRLF line ends as a LF line"
        );
        assert_eq!(judge(b"".to_vec()), Judged::Skip);
        assert_eq!(judge(b" \t\r".to_vec()), Judged::Skip);
        assert_eq!(
            judge(b"{\"a\": \"\xff\"}".to_vec()),
            Judged::Refuse(
                PARSE_ERROR,
                "parse error: the line is not valid UTF-8 (at byte 7)".into()
            )
        );
        let Judged::Refuse(code, message) = judge(b"{not json".to_vec()) else {
            panic!("passed")
        };
        assert_eq!(code, PARSE_ERROR);
        assert!(
            message.starts_with("parse error: the line is not JSON (key must be a string"),
            "{message}"
        );
        assert!(matches!(
            judge(b"{\"a\": 1} trailing".to_vec()),
            Judged::Refuse(PARSE_ERROR, _)
        ));
    }

    /// Feeds `input` through a reader; returns the lines it gives and what it answered.
    async fn read_all(input: Vec<u8>) -> (Vec<String>, Vec<Value>) {
        let (answers, mut answered) = tokio::io::duplex(1 << 20);
        let mut reader = LineReader::new(&input[..], LineWriter::new(answers));
        let mut lines = Vec::new();
        while let Some(line) = reader.next_line().await.expect("read") {
            lines.push(line);
        }
        drop(reader);
        let mut out = String::new();
        answered.read_to_string(&mut out).await.expect("answers");
        let answers = out
            .lines()
            .map(|l| serde_json::from_str(l).expect("an answer is one JSON line"))
            .collect();
        (lines, answers)
    }

    #[tokio::test]
    async fn good_lines_pass_whole_across_chunks_and_bad_ones_are_answered_in_order() {
        let long = format!("{{\"text\": \"{}\"}}", "y".repeat(3 * CHUNK));
        let input = [
            b"{\"id\": 1}\n".to_vec(),
            b"\n".to_vec(),
            b"\xff\n".to_vec(),
            long.as_bytes().to_vec(),
            b"\n{oops\n".to_vec(),
            b"{\"id\": 2}".to_vec(),
        ]
        .concat();
        let (lines, answers) = read_all(input).await;
        assert_eq!(lines, ["{\"id\": 1}", long.as_str(), "{\"id\": 2}"]);
        assert_eq!(answers.len(), 2, "{answers:#?}");
        for answer in &answers {
            assert_eq!(answer["jsonrpc"], "2.0");
            assert!(answer["id"].is_null(), "{answer}");
            assert_eq!(answer["error"]["code"], PARSE_ERROR, "{answer}");
        }
        assert!(answers[0]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("UTF-8")));
        assert!(answers[1]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("not JSON")));
    }

    #[tokio::test]
    async fn a_line_past_the_bound_is_dropped_to_its_newline_and_answered() {
        // Exactly the bound passes; one byte more does not, and neither does a long last line.
        let at_bound = format!("\"{}\"", "a".repeat(MAX_LINE - 2));
        let over = format!("\"{}\"", "b".repeat(MAX_LINE - 1));
        let input = [
            at_bound.as_bytes(),
            b"\n",
            over.as_bytes(),
            b"\n{\"id\": 3}\n",
            over.as_bytes(),
        ]
        .concat();
        let (lines, answers) = read_all(input).await;
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].len(), MAX_LINE);
        assert_eq!(lines[1], "{\"id\": 3}");
        assert_eq!(answers.len(), 2, "{answers:#?}");
        for answer in &answers {
            assert!(answer["id"].is_null(), "{answer}");
            assert_eq!(answer["error"]["code"], INVALID_REQUEST, "{answer}");
            assert_eq!(
                answer["error"]["message"],
                "the line was over 16 MiB (the most rawko reads as one message), so it was dropped unread"
            );
        }
    }

    #[tokio::test]
    async fn answers_and_the_sdks_lines_never_interleave() {
        let (out, mut written) = tokio::io::duplex(64);
        let writer = LineWriter::new(out);
        let long = "z".repeat(10_000);
        let a = {
            let writer = writer.clone();
            let long = long.clone();
            tokio::spawn(async move {
                for _ in 0..20 {
                    writer.write_line(long.clone()).await.expect("write");
                }
            })
        };
        let b = {
            let writer = writer.clone();
            tokio::spawn(async move {
                for _ in 0..20 {
                    writer.write_line("short".into()).await.expect("write");
                }
            })
        };
        let reading = tokio::spawn(async move {
            let mut all = String::new();
            written.read_to_string(&mut all).await.expect("read");
            all
        });
        a.await.expect("a");
        b.await.expect("b");
        drop(writer);
        let all = reading.await.expect("reading");
        let lines: Vec<&str> = all.lines().collect();
        assert_eq!(lines.len(), 40);
        assert!(lines.iter().all(|l| *l == "short" || *l == long));
    }
}

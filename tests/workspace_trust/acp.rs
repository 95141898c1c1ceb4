//! `rawko acp` (the face for ACP agent panels), which cannot ask: an untrusted workspace's
//! `acp` provider command does not run, and the session's output says why.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

use super::*;

/// A bare ACP client: requests, and every message kept.
struct Client {
    child: Child,
    stdin: ChildStdin,
    rx: mpsc::Receiver<Value>,
    next_id: u64,
    seen: Vec<Value>,
}

impl Client {
    fn start(sb: &Sandbox, args: &[&str]) -> Client {
        let mut all = vec!["acp"];
        all.extend_from_slice(args);
        let mut child = sb
            .command(&all, None)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("rawko acp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let Ok(message) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if tx.send(message).is_err() {
                    break;
                }
            }
        });
        Client {
            child,
            stdin,
            rx,
            next_id: 0,
            seen: Vec::new(),
        }
    }

    /// Sends a request and waits for its response (answering nothing else).
    fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{request}").expect("write");
        self.stdin.flush().expect("flush");
        loop {
            let m = self
                .rx
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no answer to {method}; seen {:#?}", self.seen));
            self.seen.push(m.clone());
            if m.get("method").is_none() && m["id"] == json!(id) {
                return m;
            }
        }
    }

    /// The agent's message text so far.
    fn said(&self) -> String {
        self.seen
            .iter()
            .filter(|m| m["method"] == "session/update")
            .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
            .collect()
    }

    /// `initialize`, `session/new` and one prompt; returns the prompt's response.
    fn prompt_once(&mut self, cwd: &Path) -> Value {
        self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        );
        let session = self.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
        let sid = session["result"]["sessionId"].clone();
        self.call(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Do it"}]}),
        )
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn an_untrusted_acp_command_does_not_run_and_the_session_says_why() {
    let sb = Sandbox::new();
    let (script, marker) = sb.marker_script("agent");
    sb.workspace_config(json!({"providers": [{"name": "acp", "command": script}]}));
    let mut client = Client::start(&sb, &["--provider", "acp"]);
    let answer = client.prompt_once(&sb.project());
    assert!(!marker.exists(), "the untrusted agent command ran");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("needs the agent's command")),
        "{answer}"
    );
    assert!(
        client.said().contains(&format!(
            "the providers in {} are not used: this workspace is not trusted (`rawko trust` in it trusts it)",
            sb.config_file()
        )),
        "{:#?}",
        client.seen
    );
    drop(client);

    sb.trust();
    let mut client = Client::start(&sb, &["--provider", "acp"]);
    let _ = client.prompt_once(&sb.project());
    assert!(
        wait_for_file(&marker),
        "trusted, the agent command runs: {:#?}",
        client.seen
    );
    assert!(!client.said().contains("not used"), "{:#?}", client.seen);
}

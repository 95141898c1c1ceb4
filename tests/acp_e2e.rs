//! `rawko acp` as an editor's agent panel runs it: the real binary over pipes, newline-delimited
//! JSON-RPC (ACP v1), a scripted provider. Initialize, a session, prompts and their updates,
//! permissions answered both ways with the effect on disk, modes, slash commands, cancel.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};
use tempfile::TempDir;

/// How long any one message may take to come.
const WAIT: Duration = Duration::from_secs(30);

struct Sandbox {
    _tmp: TempDir,
    root: PathBuf,
}

impl Sandbox {
    fn new() -> Self {
        let tmp = TempDir::new().expect("tempdir");
        let root = tmp.path().to_owned();
        std::fs::create_dir_all(root.join("project")).expect("mkdir");
        let sb = Sandbox { _tmp: tmp, root };
        let init = sb
            .command(&["init"])
            .stdout(Stdio::null())
            .output()
            .expect("rawko init");
        assert!(init.status.success(), "{init:?}");
        sb.write("README.md", "# a project\n");
        sb
    }

    fn project(&self) -> PathBuf {
        std::fs::canonicalize(self.root.join("project")).expect("project")
    }

    /// Writes the user's `config.json` (in the sandbox's home).
    fn user_config(&self, config: &Value) {
        let path = self.root.join("home/.config/rawko/config.json");
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, config.to_string()).expect("write config");
    }

    fn write(&self, rel: &str, content: &str) {
        let path = self.root.join("project").join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }

    fn command(&self, args: &[&str]) -> Command {
        let home = self.root.join("home");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rawko"));
        cmd.args(args)
            .current_dir(self.root.join("project"))
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("PI_CODING_AGENT_DIR", home.join(".pi"))
            .env_remove("RAWKO_LOG");
        cmd
    }

    /// `rawko acp` with `args`, speaking ACP on its stdin and stdout.
    fn acp(&self, args: &[&str]) -> Acp {
        let mut all = vec!["acp"];
        all.extend_from_slice(args);
        let mut child = self
            .command(&all)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn rawko acp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let message: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line}"));
                if tx.send(message).is_err() {
                    break;
                }
            }
        });
        Acp {
            child,
            stdin: Some(stdin),
            rx,
            next_id: 0,
            seen: Vec::new(),
        }
    }
}

/// A client: sends requests, answers permission requests with a policy, keeps every message.
struct Acp {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::Receiver<Value>,
    next_id: u64,
    /// Every message from the agent, in order.
    seen: Vec<Value>,
}

impl Acp {
    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("open stdin");
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
    }

    /// Sends `bytes` as they are (with no newline added).
    fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("open stdin");
        stdin.write_all(bytes).expect("write");
        stdin.flush().expect("flush");
    }

    fn request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next message from the agent.
    fn next(&mut self) -> Value {
        let message = self
            .rx
            .recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("no message within {WAIT:?}; so far: {:#?}", self.seen));
        self.seen.push(message.clone());
        message
    }

    /// Reads until the response to `id`, answering permission requests with `permit` (an
    /// option id, or `None` for a cancelled outcome).
    fn response(
        &mut self,
        id: u64,
        permit: &mut dyn FnMut(&Value) -> Option<&'static str>,
    ) -> Value {
        loop {
            let m = self.next();
            if m["method"] == "session/request_permission" {
                let outcome = match permit(&m["params"]) {
                    Some(option) => json!({"outcome": "selected", "optionId": option}),
                    None => json!({"outcome": "cancelled"}),
                };
                let answer =
                    json!({"jsonrpc": "2.0", "id": m["id"], "result": {"outcome": outcome}});
                self.send(&answer);
                continue;
            }
            if m.get("method").is_none() && m["id"] == json!(id) {
                return m;
            }
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        let m = self.response(id, &mut |_| panic!("no permission expected"));
        m
    }

    fn initialize(&mut self) -> Value {
        self.initialize_offering(json!({}))
    }

    /// `initialize` with the client offering `capabilities` (its files, its terminal).
    fn initialize_offering(&mut self, capabilities: Value) -> Value {
        self.call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": capabilities, "clientInfo": {"name": "test", "version": "1"}}),
        )
    }

    /// `session/new` in the project; returns the response's result.
    fn new_session(&mut self, cwd: &std::path::Path) -> Value {
        let m = self.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
        m["result"].clone()
    }

    /// The `session/update`s seen, their `update` objects, from message `from` on.
    fn updates(&self, from: usize) -> Vec<Value> {
        self.seen[from..]
            .iter()
            .filter(|m| m["method"] == "session/update")
            .map(|m| m["params"]["update"].clone())
            .collect()
    }

    /// The agent's message text from message `from` on.
    fn message_text(&self, from: usize) -> String {
        self.updates(from)
            .iter()
            .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|u| u["content"]["text"].as_str())
            .collect()
    }

    fn close(mut self) {
        drop(self.stdin.take());
        let status = wait_exit(&mut self.child);
        assert!(
            status.success(),
            "rawko acp exits 0 when the client closes: {status:?}"
        );
    }
}

fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("rawko acp did not exit after stdin closed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for Acp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const FEATURE: &str = r#"
turns:
  - text: "Reading."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - tool_calls:
      - {name: Write, input: {path: plan.md, content: "the plan"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "All done."
"#;

#[test]
fn initialize_and_a_session_with_workflows_as_modes_and_the_slash_commands() {
    let sb = Sandbox::new();
    sb.write("s.yaml", FEATURE);
    let mut acp = sb.acp(&["--script", "s.yaml"]);
    let init = acp.initialize();
    let result = &init["result"];
    assert_eq!(result["protocolVersion"], 1, "{init}");
    assert_eq!(result["agentInfo"]["name"], "rawko", "{init}");
    assert_eq!(result["agentCapabilities"]["loadSession"], true, "{init}");
    assert_eq!(
        result["agentCapabilities"]["promptCapabilities"]["embeddedContext"], true,
        "{init}"
    );
    let from = acp.seen.len();
    let session = acp.new_session(&sb.project());
    assert!(session["sessionId"].is_string(), "{session}");
    let modes: Vec<&str> = session["modes"]["availableModes"]
        .as_array()
        .expect("modes")
        .iter()
        .map(|m| m["id"].as_str().expect("id"))
        .collect();
    assert_eq!(modes, ["none", "feature"], "{session}");
    // The commands come right after the session.
    let commands = acp.next();
    assert_eq!(commands["method"], "session/update", "{commands}");
    let update = &commands["params"]["update"];
    assert_eq!(update["sessionUpdate"], "available_commands_update");
    let names: Vec<&str> = update["availableCommands"]
        .as_array()
        .expect("commands")
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "next",
            "loop",
            "status",
            "cancel-workflow",
            "interrupt",
            "rewind"
        ]
    );
    let _ = from;
    // Modes: choose one, get a current_mode_update; an unknown one is refused.
    let sid = session["sessionId"].clone();
    let from = acp.seen.len();
    let set = acp.call(
        "session/set_mode",
        json!({"sessionId": sid, "modeId": "feature"}),
    );
    assert!(set.get("error").is_none(), "{set}");
    assert!(
        acp.updates(from)
            .iter()
            .any(|u| u["sessionUpdate"] == "current_mode_update" && u["currentModeId"] == "feature"),
        "{:#?}",
        acp.seen
    );
    let bad = acp.call(
        "session/set_mode",
        json!({"sessionId": sid, "modeId": "nope"}),
    );
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    // A slash command before any task says so and ends the turn.
    let from = acp.seen.len();
    let status = acp.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "/status"}]}),
    );
    assert_eq!(status["result"]["stopReason"], "end_turn", "{status}");
    assert!(
        acp.message_text(from).contains("No task is running"),
        "{:#?}",
        acp.seen
    );
    acp.close();
}

/// Runs the feature workflow with the blocked Write answered `answer`; returns the messages
/// after the prompt and the prompt's response.
fn feature_run(answer: &'static str) -> (Sandbox, Vec<Value>, Value, String) {
    let sb = Sandbox::new();
    sb.write("s.yaml", FEATURE);
    let mut acp = sb.acp(&["--script", "s.yaml", "--workflow", "feature"]);
    acp.initialize();
    let session = acp.new_session(&sb.project());
    assert_eq!(session["modes"]["currentModeId"], "feature", "{session}");
    let sid = session["sessionId"].clone();
    let from = acp.seen.len();
    let id = acp.request(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Add a plan"}]}),
    );
    let mut asked = Vec::new();
    let response = acp.response(id, &mut |params| {
        asked.push(params.clone());
        Some(answer)
    });
    assert_eq!(asked.len(), 1, "one permission request: {asked:#?}");
    let ask = &asked[0];
    assert_eq!(ask["sessionId"], sid);
    assert_eq!(ask["toolCall"]["kind"], "edit", "{ask}");
    assert!(
        ask["toolCall"]["title"]
            .as_str()
            .is_some_and(|t| t.contains("Write plan.md") && t.contains("Plan")),
        "{ask}"
    );
    let options: Vec<&str> = ask["options"]
        .as_array()
        .expect("options")
        .iter()
        .map(|o| o["optionId"].as_str().expect("id"))
        .collect();
    assert_eq!(
        options,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    let updates = acp.updates(from);
    let text = acp.message_text(from);
    acp.close();
    (sb, updates, response, text)
}

fn plan_statuses(update: &Value) -> Vec<String> {
    update["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["status"].as_str().expect("status").to_owned())
        .collect()
}

#[test]
fn a_prompt_runs_the_workflow_with_plan_stream_tool_calls_and_an_allowed_write() {
    let (sb, updates, response, text) = feature_run("allow_once");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert_eq!(
        std::fs::read_to_string(sb.project().join("plan.md")).expect("plan.md written"),
        "the plan"
    );
    // The plan: the flattened phases, first at start, then at each phase change, all completed
    // at the end.
    let plans: Vec<&Value> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "plan")
        .collect();
    assert!(plans.len() >= 6, "{plans:#?}");
    let contents: Vec<&str> = plans[0]["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| e["content"].as_str().expect("content"))
        .collect();
    assert_eq!(contents.len(), 5, "{contents:?}");
    assert_eq!(contents[0], "Feature > 📋 Plan [1/4]");
    assert_eq!(
        plan_statuses(plans[0]),
        ["in_progress", "pending", "pending", "pending", "pending"]
    );
    assert_eq!(
        plan_statuses(plans[1]),
        ["completed", "in_progress", "pending", "pending", "pending"]
    );
    assert_eq!(plan_statuses(plans.last().expect("last")), ["completed"; 5]);
    // Streamed text, the context line, the tool calls with kind, status and location.
    assert!(text.starts_with("Reading."), "{text}");
    assert!(text.contains("All done."), "{text}");
    assert!(
        updates
            .iter()
            .any(|u| u["sessionUpdate"] == "agent_thought_chunk"
                && u["content"]["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("rawko injected the phase context"))),
        "{updates:#?}"
    );
    let read = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call" && u["kind"] == "read")
        .expect("the Read call");
    assert_eq!(read["status"], "in_progress");
    assert_eq!(
        read["locations"][0]["path"],
        json!(sb.project().join("README.md"))
    );
    let id = read["toolCallId"].clone();
    assert!(
        updates
            .iter()
            .any(|u| u["sessionUpdate"] == "tool_call_update"
                && u["toolCallId"] == id
                && u["status"] == "completed"),
        "{updates:#?}"
    );
}

#[test]
fn a_rejected_write_does_not_happen_and_the_stream_says_so() {
    let (sb, updates, response, text) = feature_run("reject_once");
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert!(
        !sb.project().join("plan.md").exists(),
        "a rejected Write wrote"
    );
    assert!(text.contains("🚫 Rejected: Write plan.md"), "{text}");
    let write = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call" && u["kind"] == "edit")
        .expect("the Write call");
    let id = write["toolCallId"].clone();
    assert!(
        updates
            .iter()
            .any(|u| u["sessionUpdate"] == "tool_call_update"
                && u["toolCallId"] == id
                && u["status"] == "failed"),
        "{updates:#?}"
    );
}

#[test]
fn cancel_ends_the_turn_cancelled_and_the_next_prompt_goes_on_with_the_task() {
    let sb = Sandbox::new();
    sb.write(
        "s.yaml",
        "turns:\n  - text: \"Thinking long.\"\n    delay_ms: 20000\n  - text: \"Done after your message.\"\n",
    );
    let mut acp = sb.acp(&["--script", "s.yaml"]);
    acp.initialize();
    let session = acp.new_session(&sb.project());
    assert_eq!(session["modes"]["currentModeId"], "none", "{session}");
    let sid = session["sessionId"].clone();
    let id = acp.request(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Think"}]}),
    );
    // Give the task time to start its turn, then cancel.
    std::thread::sleep(Duration::from_millis(500));
    acp.notify("session/cancel", json!({"sessionId": sid}));
    let response = acp.response(id, &mut |_| None);
    assert_eq!(response["result"]["stopReason"], "cancelled", "{response}");
    let from = acp.seen.len();
    let second = acp.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Go on"}]}),
    );
    assert_eq!(second["result"]["stopReason"], "end_turn", "{second}");
    assert!(
        acp.message_text(from).contains("Done after your message."),
        "{:#?}",
        acp.seen
    );
    acp.close();
}

/// `/rewind PHASE` takes the session's finished task and its files back to the phase's start,
/// and the next prompt resumes it from there to its end.
#[test]
fn rewind_takes_the_task_back_to_a_phase_and_the_next_prompt_resumes_it() {
    let sb = Sandbox::new();
    sb.write(
        "s.yaml",
        "turns:
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: Write, input: {file_path: a.txt, content: \"from the task\"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: \"All done.\"
",
    );
    let mut acp = sb.acp(&["--script", "s.yaml", "--workflow", "feature"]);
    acp.initialize();
    let session = acp.new_session(&sb.project());
    let sid = session["sessionId"].clone();
    let id = acp.request(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Add a flag"}]}),
    );
    let done = acp.response(id, &mut |_| Some("allow_once"));
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    let written = sb.project().join("a.txt");
    assert!(written.exists(), "{:#?}", acp.seen);

    let from = acp.seen.len();
    let rewound = acp.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "/rewind implement"}]}),
    );
    assert_eq!(rewound["result"]["stopReason"], "end_turn", "{rewound}");
    let said = acp.message_text(from);
    assert!(said.contains("to the start of Implement"), "{said}");
    assert!(said.contains("- remove a.txt"), "{said}");
    assert!(!written.exists(), "{said}");

    let from = acp.seen.len();
    let id = acp.request(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Go on"}]}),
    );
    let again = acp.response(id, &mut |_| Some("allow_once"));
    assert_eq!(again["result"]["stopReason"], "end_turn", "{again}");
    assert!(
        acp.message_text(from).contains("All done."),
        "{:#?}",
        acp.seen
    );
    assert!(written.exists(), "Implement ran again");
    acp.close();
}

#[test]
fn a_prompt_the_task_service_refuses_is_an_error_the_client_sees() {
    let sb = Sandbox::new();
    // No provider configured and none named.
    let mut acp = sb.acp(&[]);
    acp.initialize();
    let session = acp.new_session(&sb.project());
    let sid = session["sessionId"].clone();
    let response = acp.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Do it"}]}),
    );
    assert_eq!(response["error"]["code"], -32602, "{response}");
    assert!(
        response["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no provider")),
        "{response}"
    );
    let unknown = acp.call(
        "session/prompt",
        json!({"sessionId": "nope", "prompt": [{"type": "text", "text": "x"}]}),
    );
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    acp.close();
}

#[test]
fn a_session_loads_after_rawko_acp_was_killed_and_its_task_goes_on() {
    let sb = Sandbox::new();
    sb.write(
        "s.yaml",
        "turns:\n  - text: \"Thinking long.\"\n    delay_ms: 1500\n  - text: \"Done after your message.\"\n",
    );
    let mut first = sb.acp(&["--script", "s.yaml"]);
    let init = first.initialize();
    assert_eq!(
        init["result"]["agentCapabilities"]["loadSession"], true,
        "{init}"
    );
    let session = first.new_session(&sb.project());
    let sid = session["sessionId"].clone();
    first.request(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Think it over"}]}),
    );
    // The task has started (its start is logged) well before its first turn ends; then SIGKILL.
    std::thread::sleep(Duration::from_millis(700));
    first.child.kill().expect("SIGKILL rawko acp");
    let _ = first.child.wait();
    drop(first);

    let mut second = sb.acp(&["--script", "s.yaml"]);
    second.initialize();
    let from = second.seen.len();
    let loaded = second.call(
        "session/load",
        json!({"sessionId": sid, "cwd": sb.project(), "mcpServers": []}),
    );
    assert!(loaded.get("error").is_none(), "{loaded}");
    assert!(loaded["result"]["modes"].is_object(), "{loaded}");
    let replay = second.updates(from);
    assert_eq!(
        replay[0]["sessionUpdate"], "user_message_chunk",
        "{replay:#?}"
    );
    assert_eq!(replay[0]["content"]["text"], "Think it over", "{replay:#?}");
    assert!(
        second.message_text(from).contains("rawko task task-"),
        "{replay:#?}"
    );
    let from = second.seen.len();
    let next = second.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Go on"}]}),
    );
    assert_eq!(next["result"]["stopReason"], "end_turn", "{next}");
    let text = second.message_text(from);
    assert!(
        text.contains("Thinking long."),
        "the task goes on where it was: {text}"
    );
    // An unknown session does not load.
    let unknown = second.call(
        "session/load",
        json!({"sessionId": "acp-0-0-0", "cwd": sb.project(), "mcpServers": []}),
    );
    assert_eq!(unknown["error"]["code"], -32002, "{unknown}");
    second.close();
}

/// The errors with no id (answers to lines rawko could not read) among `messages`.
fn line_errors(messages: &[Value]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m.get("method").is_none() && m["id"].is_null() && m.get("error").is_some())
        .map(|m| m["error"].clone())
        .collect()
}

/// Runs a whole task in the session (a scripted turn of text) and checks its turn ends.
fn a_whole_task_runs(acp: &mut Acp, sid: &Value) {
    let from = acp.seen.len();
    let done = acp.call(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Say hello"}]}),
    );
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(
        acp.message_text(from).contains("Hello after it all."),
        "{:#?}",
        acp.seen
    );
}

const HELLO: &str = "turns:\n  - text: \"Hello after it all.\"\n";

#[test]
fn a_line_of_invalid_utf8_or_not_json_gets_a_parse_error_and_the_session_keeps_working() {
    let sb = Sandbox::new();
    sb.write("s.yaml", HELLO);
    let mut acp = sb.acp(&["--script", "s.yaml"]);
    acp.initialize();
    let session = acp.new_session(&sb.project());
    let sid = session["sessionId"].clone();
    let _commands = acp.next();
    for (bad, says) in [
        (
            &b"{\"jsonrpc\": \"2.0\", \"id\": 50, \"method\": \"\xff\xfe\"}\n"[..],
            "UTF-8",
        ),
        (&b"{not json\n"[..], "not JSON"),
    ] {
        let from = acp.seen.len();
        acp.send_raw(bad);
        // The valid request after the bad line is answered, and the bad line got its error first.
        let set = acp.call(
            "session/set_mode",
            json!({"sessionId": sid, "modeId": "none"}),
        );
        assert!(set.get("error").is_none(), "{set}");
        let errors = line_errors(&acp.seen[from..]);
        assert_eq!(errors.len(), 1, "one error for the bad line: {errors:#?}");
        assert_eq!(errors[0]["code"], -32700, "{errors:#?}");
        assert!(
            errors[0]["message"]
                .as_str()
                .is_some_and(|m| m.contains(says)),
            "{errors:#?}"
        );
    }
    a_whole_task_runs(&mut acp, &sid);
    acp.close();
}

#[test]
fn a_line_over_16_mib_is_refused_unread_and_the_session_keeps_working() {
    let sb = Sandbox::new();
    sb.write("s.yaml", HELLO);
    let mut acp = sb.acp(&["--script", "s.yaml"]);
    acp.initialize();
    let session = acp.new_session(&sb.project());
    let sid = session["sessionId"].clone();
    let _commands = acp.next();
    let from = acp.seen.len();
    // A well-formed request of 17 MiB, streamed a MiB at a time: read whole, it would change the
    // mode and be answered (id 900).
    acp.send_raw(
        format!(
            "{{\"jsonrpc\": \"2.0\", \"id\": 900, \"method\": \"session/set_mode\", \"params\": {{\"sessionId\": {sid}, \"modeId\": \"none\", \"padding\": \""
        )
        .as_bytes(),
    );
    let mib = vec![b'x'; 1 << 20];
    for _ in 0..17 {
        acp.send_raw(&mib);
    }
    acp.send_raw(b"\"}}\n");
    let ping = acp.call(
        "session/set_mode",
        json!({"sessionId": sid, "modeId": "none"}),
    );
    assert!(ping.get("error").is_none(), "{ping}");
    let errors = line_errors(&acp.seen[from..]);
    assert_eq!(errors.len(), 1, "one error for the long line: {errors:#?}");
    assert!(
        errors[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("over 16 MiB")),
        "{errors:#?}"
    );
    assert!(
        !acp.seen[from..].iter().any(|m| m["id"] == 900),
        "the long line was read and answered"
    );
    a_whole_task_runs(&mut acp, &sid);
    acp.close();
}

/// A session whose client offers its files and terminal but never answers `ignored`; the editor
/// request bound is 1 s. Runs `script` and returns the failed tool result's text.
fn a_client_that_never_answers(ignored: &str, script: &str) -> String {
    let sb = Sandbox::new();
    sb.user_config(&json!({"editorRequestSeconds": 1}));
    sb.write("s.yaml", script);
    let mut acp = sb.acp(&["--script", "s.yaml"]);
    acp.initialize_offering(
        json!({"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}),
    );
    let session = acp.new_session(&sb.project());
    let sid = session["sessionId"].clone();
    let from = acp.seen.len();
    let id = acp.request(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Go"}]}),
    );
    // Answers what a terminal needs, except `ignored`.
    let mut terminals = 0;
    let mut unanswered = None;
    let response = loop {
        let m = acp.next();
        if m.get("method").is_none() && m["id"] == json!(id) {
            break m;
        }
        let (Some(method), Some(request)) = (m["method"].as_str(), m.get("id")) else {
            continue;
        };
        if method == ignored {
            unanswered = Some(request.clone());
            continue;
        }
        let result = match method {
            "terminal/create" => {
                terminals += 1;
                json!({"terminalId": format!("term-{terminals}")})
            }
            "terminal/wait_for_exit" => json!({"exitCode": 0}),
            "terminal/output" => {
                json!({"output": "hi\n", "truncated": false, "exitStatus": {"exitCode": 0}})
            }
            "fs/read_text_file" => json!({"content": "# a project\n"}),
            _ => json!({}),
        };
        let answer = json!({"jsonrpc": "2.0", "id": request, "result": result});
        acp.send(&answer);
    };
    assert_eq!(
        response["result"]["stopReason"], "end_turn",
        "the turn goes on past the bound: {response}"
    );
    assert!(
        acp.message_text(from).contains("Went on after it."),
        "the agent's next turn ran: {:#?}",
        acp.seen
    );
    let failed: Vec<String> = acp
        .updates(from)
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "failed")
        .filter_map(|u| {
            u["content"][0]["content"]["text"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(failed.len(), 1, "{:#?}", acp.seen);
    // rawko withdrew the request it gave up on, so the editor can drop it.
    let unanswered = unanswered.expect("the ignored request was sent");
    assert!(
        acp.seen[from..]
            .iter()
            .any(|m| m["method"] == "$/cancel_request" && m["params"]["requestId"] == unanswered),
        "a $/cancel_request of {ignored} {unanswered}: {:#?}",
        acp.seen
    );
    acp.close();
    failed[0].clone()
}

#[test]
fn a_client_that_never_answers_fs_read_text_file_fails_the_read_after_the_bound() {
    let result = a_client_that_never_answers(
        "fs/read_text_file",
        "turns:\n  - tool_calls:\n      - {name: Read, input: {path: README.md}}\n  - text: \"Went on after it.\"\n",
    );
    assert!(
        result.contains("the editor did not answer fs/read_text_file within 1 s"),
        "{result}"
    );
}

#[test]
fn a_client_that_never_answers_terminal_create_fails_the_command_after_the_bound() {
    let result = a_client_that_never_answers(
        "terminal/create",
        "turns:\n  - tool_calls:\n      - {name: Bash, input: {command: \"ls\"}}\n  - text: \"Went on after it.\"\n",
    );
    assert!(
        result.contains("the editor did not answer terminal/create within 1 s"),
        "{result}"
    );
}

#[test]
fn a_client_that_never_answers_terminal_output_fails_the_command_after_the_bound() {
    let result = a_client_that_never_answers(
        "terminal/output",
        "turns:\n  - tool_calls:\n      - {name: Bash, input: {command: \"ls\"}}\n  - text: \"Went on after it.\"\n",
    );
    assert!(
        result.contains("the editor did not answer terminal/output within 1 s"),
        "{result}"
    );
}

#[test]
fn a_permission_request_nobody_answers_is_rejected_after_the_approval_timeout() {
    let sb = Sandbox::new();
    sb.user_config(&json!({"approvalTimeoutSeconds": 1}));
    sb.write("s.yaml", FEATURE);
    let mut acp = sb.acp(&["--script", "s.yaml", "--workflow", "feature"]);
    acp.initialize();
    let session = acp.new_session(&sb.project());
    let sid = session["sessionId"].clone();
    let from = acp.seen.len();
    let id = acp.request(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Add a plan"}]}),
    );
    // Nothing answers the permission request: `response` only skips it.
    let response = loop {
        let m = acp.next();
        if m.get("method").is_none() && m["id"] == json!(id) {
            break m;
        }
    };
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert!(
        acp.seen[from..]
            .iter()
            .any(|m| m["method"] == "session/request_permission"),
        "{:#?}",
        acp.seen
    );
    assert!(
        !sb.project().join("plan.md").exists(),
        "an unanswered Write wrote"
    );
    let text = acp.message_text(from);
    assert!(text.contains("⌛ No answer in time"), "{text}");
    acp.close();
}

/// A session loaded in another folder resumes its task under the definitions the task started
/// with (pinned in the store), not under the other folder's workflow of the same name.
#[test]
fn a_session_loaded_from_another_folder_resumes_under_the_pinned_workflow() {
    let sb = Sandbox::new();
    let guard =
        "name: Guard\ncommandName: guard\ninitialMessage: \"Do {description}\"\nphases:\n  - look.md\n";
    sb.write(".rawko/workflows/guard/workflow.yaml", guard);
    sb.write(
        ".rawko/workflows/guard/look.md",
        "---\nid: look\nname: Look\nemoji: \"👀\"\ntools:\n  whitelist: [Read]\n---\nLook around only.\n",
    );
    // Another folder whose workflow of the same name has no rules.
    sb.write("../other/.rawko/workflows/guard/workflow.yaml", guard);
    sb.write(
        "../other/.rawko/workflows/guard/look.md",
        "---\nid: look\nname: Look\nemoji: \"👀\"\n---\nWrite anything.\n",
    );
    sb.write(
        "s.yaml",
        r#"
turns:
  - text: "Looking."
    tool_calls:
      - {name: Read, input: {path: README.md}}
  - text: "Writing."
    delay_ms: 1500
    tool_calls:
      - {name: Write, input: {path: escaped.txt, content: "written"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Done."
"#,
    );
    let mut first = sb.acp(&["--script", "s.yaml", "--workflow", "guard"]);
    first.initialize();
    let session = first.new_session(&sb.project());
    assert_eq!(session["modes"]["currentModeId"], "guard", "{session}");
    let sid = session["sessionId"].clone();
    first.request(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Look"}]}),
    );
    // The Read has its result (logged before it is shown); then SIGKILL while the model thinks.
    loop {
        let m = first.next();
        let u = &m["params"]["update"];
        if u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed" {
            break;
        }
    }
    first.child.kill().expect("SIGKILL rawko acp");
    let _ = first.child.wait();
    drop(first);

    let other = std::fs::canonicalize(sb.root.join("other")).expect("other folder");
    let mut second = sb.acp(&[]);
    second.initialize();
    let loaded = second.call(
        "session/load",
        json!({"sessionId": sid, "cwd": other, "mcpServers": []}),
    );
    assert!(loaded.get("error").is_none(), "{loaded}");
    let id = second.request(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Go on"}]}),
    );
    let mut asked = Vec::new();
    let response = second.response(id, &mut |params| {
        asked.push(params.clone());
        Some("reject_once")
    });
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert!(
        !sb.project().join("escaped.txt").exists(),
        "the Write ran under the other folder's workflow"
    );
    assert!(
        asked.iter().any(|a| a["toolCall"]["title"]
            .as_str()
            .is_some_and(|t| t.contains("Write escaped.txt") && t.contains("Look"))),
        "the pinned phase asked before the Write: {asked:#?}"
    );
    second.close();
}

/// The session records `rawko acp` wrote (`$XDG_STATE_HOME/rawko/sessions/session-*.json`).
fn session_records(sb: &Sandbox) -> Vec<Value> {
    let dir = sb.root.join("home/.local/state/rawko/sessions");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("session-") && n.ends_with(".json"))
        })
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("read the session record");
            serde_json::from_str(&text).expect("a session record is JSON")
        })
        .collect()
}

/// Two sessions in one folder share its task service (one session record for both), yet each
/// gets only its own task's updates and its own `fs/read_text_file` requests, with two prompts
/// running at once.
#[test]
fn two_sessions_of_one_folder_share_its_service_and_each_gets_only_its_own_task() {
    let sb = Sandbox::new();
    sb.write(
        "s.yaml",
        "turns:\n  - text: \"Reading.\"\n    delay_ms: 600\n    tool_calls:\n      - {name: Read, input: {path: README.md}}\n  - text: \"Read it.\"\n",
    );
    let mut acp = sb.acp(&["--script", "s.yaml"]);
    acp.initialize_offering(json!({"fs": {"readTextFile": true, "writeTextFile": true}}));
    let a = acp.new_session(&sb.project())["sessionId"].clone();
    let b = acp.new_session(&sb.project())["sessionId"].clone();
    assert_ne!(a, b);
    let from = acp.seen.len();
    let prompt_a = acp.request(
        "session/prompt",
        json!({"sessionId": a, "prompt": [{"type": "text", "text": "The task of A"}]}),
    );
    let prompt_b = acp.request(
        "session/prompt",
        json!({"sessionId": b, "prompt": [{"type": "text", "text": "The task of B"}]}),
    );
    // The editor answers each read with the name of the session that asked.
    let mut reads: Vec<Value> = Vec::new();
    let mut done = Vec::new();
    while done.len() < 2 {
        let m = acp.next();
        if m.get("method").is_none() && (m["id"] == json!(prompt_a) || m["id"] == json!(prompt_b)) {
            assert_eq!(m["result"]["stopReason"], "end_turn", "{m}");
            done.push(m["id"].clone());
            continue;
        }
        if m["method"] == "fs/read_text_file" {
            let asker = m["params"]["sessionId"]
                .as_str()
                .expect("sessionId")
                .to_owned();
            reads.push(json!(asker));
            let answer = json!({"jsonrpc": "2.0", "id": m["id"],
                "result": {"content": format!("the README as {asker} sees it")}});
            acp.send(&answer);
        }
    }
    let mut asked = reads.clone();
    asked.sort_by_key(|v| v.to_string());
    let mut both = vec![a.clone(), b.clone()];
    both.sort_by_key(|v| v.to_string());
    assert_eq!(
        asked, both,
        "one read per session, each by its own task: {reads:?}"
    );
    for (mine, other, title) in [(&a, &b, "The task of A"), (&b, &a, "The task of B")] {
        let updates: Vec<String> = acp.seen[from..]
            .iter()
            .filter(|m| m["method"] == "session/update" && m["params"]["sessionId"] == *mine)
            .map(|m| m["params"]["update"].to_string())
            .collect();
        let all = updates.join("\n");
        let text: String = acp.seen[from..]
            .iter()
            .filter(|m| m["method"] == "session/update" && m["params"]["sessionId"] == *mine)
            .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
            .filter_map(|m| m["params"]["update"]["content"]["text"].as_str())
            .collect();
        let mine_s = mine.as_str().expect("id");
        let other_s = other.as_str().expect("id");
        assert!(
            all.contains(&format!("the README as {mine_s} sees it")),
            "the session shows its own read: {all}"
        );
        assert!(
            !all.contains(&format!("the README as {other_s} sees it")),
            "the session shows nothing of the other's task: {all}"
        );
        assert!(all.contains(title), "its title is its task's: {all}");
        assert_eq!(
            text.matches("Read it.").count(),
            1,
            "one task's text in the session: {text}"
        );
    }
    // One service for the folder: one session record, with both tasks.
    let records = session_records(&sb);
    assert_eq!(records.len(), 1, "one record for the folder: {records:#?}");
    assert_eq!(records[0]["command"], "acp", "{records:#?}");
    acp.close();
}

/// Closing one of two sessions of a folder ends neither the other's task nor the folder's
/// session record: its Stop hooks run when the last session closes.
#[test]
fn closing_one_of_two_sessions_leaves_the_other_running_and_the_record_open() {
    let sb = Sandbox::new();
    let stopped = sb.root.join("stopped.jsonl");
    sb.user_config(&json!({"hooks": {
        "Stop": [{"type": "command", "command": format!("echo stopped >> {}", stopped.display())}]
    }}));
    sb.write(
        "s.yaml",
        "turns:\n  - text: \"Slow hello.\"\n    delay_ms: 1500\n",
    );
    let mut acp = sb.acp(&["--script", "s.yaml"]);
    acp.initialize();
    let a = acp.new_session(&sb.project())["sessionId"].clone();
    let b = acp.new_session(&sb.project())["sessionId"].clone();
    let first = acp.call(
        "session/prompt",
        json!({"sessionId": a, "prompt": [{"type": "text", "text": "Hello from A"}]}),
    );
    assert_eq!(first["result"]["stopReason"], "end_turn", "{first}");
    let from = acp.seen.len();
    let running = acp.request(
        "session/prompt",
        json!({"sessionId": b, "prompt": [{"type": "text", "text": "Hello from B"}]}),
    );
    let closed = acp.request("session/close", json!({"sessionId": a}));
    let closed = acp.response(closed, &mut |_| None);
    assert!(closed.get("error").is_none(), "{closed}");
    assert!(
        !stopped.exists(),
        "the Stop hooks wait for the folder's last session: {}",
        std::fs::read_to_string(&stopped).unwrap_or_default()
    );
    let records = session_records(&sb);
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_eq!(records[0]["status"], "active", "{records:#?}");
    // The other session's task goes on to its end.
    let response = acp.response(running, &mut |_| None);
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert!(
        acp.message_text(from).contains("Slow hello."),
        "{:#?}",
        acp.seen
    );
    let closed = acp.call("session/close", json!({"sessionId": b}));
    assert!(closed.get("error").is_none(), "{closed}");
    let stops =
        std::fs::read_to_string(&stopped).expect("the Stop hooks ran with the last session");
    assert_eq!(stops, "stopped\n", "the Stop hooks ran once");
    // The record ends with both sessions' tasks in it (it is written behind, so wait for it).
    let deadline = std::time::Instant::now() + WAIT;
    let record = loop {
        let records = session_records(&sb);
        assert_eq!(records.len(), 1, "{records:#?}");
        if records[0]["status"] != "active" || std::time::Instant::now() > deadline {
            break records[0].clone();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_ne!(record["status"], "active", "the record ended: {record:#}");
    assert!(record["endTime"].is_i64(), "{record:#}");
    assert_eq!(record["tasks"]["planned"], 2, "{record:#}");
    acp.close();
}

#[test]
fn each_subagent_is_a_tool_call_of_its_own_and_its_blocked_call_is_asked() {
    let sb = Sandbox::new();
    sb.write(
        ".rawko/workflows/orchestrate/workflow.yaml",
        "name: Orchestrate\ncommandName: orchestrate\ninitialMessage: \"{description}\"\nphases:\n  - plan.md\n",
    );
    sb.write(
        ".rawko/workflows/orchestrate/plan.md",
        "---\nid: plan\nname: Plan\nemoji: \"📋\"\nsubagentTools:\n  whitelist: [Read]\n---\nPlan with a reviewer.\n",
    );
    sb.write(
        ".pi/agents/checker.md",
        "---\nname: checker\n---\nYou check.\n",
    );
    sb.write(
        "s.yaml",
        r#"turns:
  - tool_calls:
      - {id: fan, name: delegate_to_subagents, input: {tasks: [{profile: checker, prompt: "Review"}]}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "Reviewed."
subagents:
  checker:
    - tool_calls:
        - {name: Write, input: {file_path: notes.md, content: "x"}}
    - text: "Looks good."
"#,
    );
    let mut acp = sb.acp(&["--script", "s.yaml", "--workflow", "orchestrate"]);
    acp.initialize();
    let session = acp.new_session(&sb.project());
    let sid = session["sessionId"].clone();
    let from = acp.seen.len();
    let id = acp.request(
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "Review it"}]}),
    );
    let mut asked = Vec::new();
    let response = acp.response(id, &mut |params| {
        asked.push(params.clone());
        Some("reject_once")
    });
    assert_eq!(response["result"]["stopReason"], "end_turn", "{response}");
    assert!(!sb.project().join("notes.md").exists());
    let updates = acp.updates(from);
    assert_eq!(asked.len(), 1, "{asked:#?} {updates:#?}");
    assert_eq!(asked[0]["sessionId"], sid);
    let started = updates
        .iter()
        .find(|u| {
            u["sessionUpdate"] == "tool_call"
                && u["toolCallId"]
                    .as_str()
                    .is_some_and(|i| i.starts_with("subagent-"))
        })
        .unwrap_or_else(|| panic!("no subagent tool call: {updates:#?}"));
    let title = started["title"].as_str().unwrap_or_default();
    assert!(title.starts_with("checker (subagent of task-"), "{started}");
    assert_eq!(started["rawInput"]["parentToolCallId"], "fan");
    let call = started["toolCallId"].clone();
    let last = updates
        .iter()
        .rev()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["toolCallId"] == call)
        .unwrap_or_else(|| panic!("no update of the subagent: {updates:#?}"));
    assert_eq!(last["status"], "completed", "{last}");
    let content = last["content"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        content.starts_with("🔧 Write notes.md") && content.ends_with("Looks good."),
        "{content}"
    );
    // The session's task is still the orchestrator: its turn ended it, not the subagent's end.
    assert!(acp.message_text(from).contains("Reviewed."));
    acp.close();
}

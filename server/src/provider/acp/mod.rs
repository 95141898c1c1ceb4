//! The `acp` provider: any agent that speaks the Agent Client Protocol (Claude Code through
//! `claude-code-acp`, Gemini CLI, Codex through `codex-acp`) as the "model" of a rawko task, with
//! rawko as its ACP client.
//!
//! A rawko turn is one `session/prompt` (the phase context as its first block), or the part of one
//! up to the agent's next request: the agent runs its own tools, and everything it asks of its
//! client becomes a tool call of the turn for the task actor to decide, exactly as a model's call
//! is decided (hooks, the agent's filter, the phase gate, the editor's approval):
//!
//! | the agent asks | the turn's call | who runs it |
//! |---|---|---|
//! | `session/request_permission` | its tool (`Write`, `Bash`, `NotebookEdit`, an MCP tool …) with its input | the agent, once allowed ([`Runner::Agent`]) |
//! | `fs/read_text_file` | `Read` | rawko, confined to the workspace |
//! | `fs/write_text_file` | `Write` | rawko, confined |
//! | `terminal/create` | `Bash` | rawko, through its sandbox; the terminal then answers from the result |
//! | rawko's MCP tool `workflow_step` (`rawko mcp`) | `workflow_step` | rawko |
//!
//! The answer goes back when the actor asks for the next turn with the call's result. A tool the
//! agent ran without asking (a read-only one) is shown and logged with its result
//! ([`Runner::AgentRan`]). A prompt that ends (`end_turn`) ends the turn, so the task's not-done
//! logic (countdown, reminder) applies; the reminder is the next prompt. Interrupting or cancelling
//! the task drops the turn; the next prompt first sends `session/cancel`.

mod agent;
mod answer;
mod asking;
mod auth;
mod calls;
mod carry;
mod confine;
mod from_agent;
mod grants;
mod mcp;
mod modes;
mod process;
mod turn;
mod updates;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use super::{ProviderError, ProviderSpec, ToolCall};

pub use calls::split_command;
pub use mcp::{CONNECTED as MCP_CONNECTED, TOKEN_VAR as MCP_TOKEN_VAR, URL_VAR as MCP_URL_VAR};

/// What `acp` needs and did not get.
pub const NO_COMMAND: &str = "provider \"acp\" needs the agent's command: {\"name\": \"acp\", \"command\": \"claude-code-acp\"} in the providers of ~/.config/rawko/config.json (or of a workspace's .rawko/config.json once you trust the workspace), or `--agent-command CMD`";

/// How long the agent may take to answer `initialize` and `session/new`.
const START_LIMIT: Duration = Duration::from_secs(60);

/// How long the agent may stay silent in a prompt turn by default.
const DEFAULT_STALL: Duration = Duration::from_secs(600);

/// How long one prompt turn of the agent may go on by default.
const DEFAULT_TURN: Duration = Duration::from_secs(1800);

/// The agent's command and where it runs.
#[derive(Debug, Clone)]
pub struct AgentCommand {
    pub program: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: PathBuf,
    pub stall: Duration,
    /// How long one prompt turn may take the agent (`turnSeconds`).
    pub turn_limit: Duration,
}

impl AgentCommand {
    /// The command line as the user sees it, for messages.
    pub fn shown(&self) -> String {
        std::iter::once(self.program.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The provider of one task: the agent is started at the first turn and ended with the task.
pub struct AcpAgentProvider {
    command: AgentCommand,
    /// The running agent and its session, once started.
    agent: Option<agent::Running>,
    /// How many messages of the conversation the agent has been given (or has made).
    seen: usize,
    /// The task was resumed: the agent's first prompt is primed with the conversation so far
    /// (unless its session loaded).
    resumed: bool,
    /// The agent session of the task's log, to load when the agent starts.
    load: Option<String>,
    /// The agent's session when rawko ended its process (the phase's access changed, it
    /// stalled): the next start opens it again.
    reopen_session: Option<String>,
    /// The agent was ended during the task: a new process goes on where it stopped.
    restarted: bool,
    /// How the task confines the agent's process (told before every turn).
    confinement: Option<super::Confinement>,
    /// How the agent can open its session again, once it has said (at `initialize`).
    reopen: Option<agent::Reopen>,
    /// The task was told once that the agent runs without the kernel sandbox.
    unconfined_noted: bool,
    /// What the task was last told of the agent's asking: the mode it is kept in, or empty when
    /// it cannot be made to ask.
    asking_noted: Option<String>,
    /// The task was told the agent never connected to `rawko mcp`.
    mcp_noted: bool,
    /// The agent's requests waiting for the task's decision, by the call id the turn gave them.
    pending: HashMap<String, answer::Pending>,
    /// What the agent's tool calls are, by its tool call id: their name and input.
    known: HashMap<String, updates::AgentCall>,
    /// Terminals rawko ran (`terminal/create`): their output and exit, until released.
    terminals: HashMap<String, calls::Finished>,
    /// What the user's approvals of the agent's permission requests cover: a file write or
    /// terminal (through rawko) that is not asked about again.
    grants: grants::Grants,
    /// Why rawko refused the agent's calls since its last prompt (ACP's permission answer has no
    /// room for a reason): told in the next prompt.
    refusals: Vec<String>,
    /// Writes of the agent's own tools the user approved past the gate while its process has the
    /// workspace read-only, by its tool call id: made by rawko when the kernel refuses them.
    approved_own: HashMap<String, ToolCall>,
    /// What rawko made for the agent ([`carry`]): told at once, in a new prompt.
    carried: Vec<String>,
    /// A counter for the ids of calls rawko makes up (fs, terminal, MCP requests).
    next: u64,
}

impl AcpAgentProvider {
    pub fn from_spec(spec: &ProviderSpec) -> Result<Self, String> {
        let program = spec
            .command
            .clone()
            .filter(|c| !c.trim().is_empty())
            .ok_or(NO_COMMAND)?;
        let cwd = spec
            .cwd
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .ok_or("provider \"acp\" has no workspace to open its session in")?;
        let command = AgentCommand {
            program,
            args: spec.args.clone(),
            env: spec.env.clone(),
            cwd,
            stall: spec
                .stall_seconds
                .filter(|s| *s > 0)
                .map_or(DEFAULT_STALL, Duration::from_secs),
            turn_limit: spec
                .turn_seconds
                .filter(|s| *s > 0)
                .map_or(DEFAULT_TURN, Duration::from_secs),
        };
        Ok(AcpAgentProvider {
            command,
            agent: None,
            seen: 0,
            resumed: false,
            load: None,
            reopen_session: None,
            restarted: false,
            confinement: None,
            reopen: None,
            unconfined_noted: false,
            asking_noted: None,
            mcp_noted: false,
            pending: HashMap::new(),
            known: HashMap::new(),
            terminals: HashMap::new(),
            grants: grants::Grants::default(),
            refusals: Vec::new(),
            approved_own: HashMap::new(),
            carried: Vec::new(),
            next: 0,
        })
    }

    fn fail(&self, why: impl std::fmt::Display) -> ProviderError {
        let tail = self
            .agent
            .as_ref()
            .map(|a| a.stderr_tail())
            .filter(|t| !t.trim().is_empty())
            .map(|t| format!("; its stderr ends with:\n{t}"))
            .unwrap_or_default();
        ProviderError::new(
            super::ErrorKind::Unknown,
            format!("the agent `{}` {why}{tail}", self.command.shown()),
        )
    }
}

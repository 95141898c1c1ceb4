//! Model providers behind one trait: the engine asks for the next turn and gets text and tool
//! calls back, with text streamed as it arrives. `scripted` replays a file of turns with no
//! network (tests, `rawko demo`, the editor tests).

pub mod acp;
pub mod anthropic;
pub mod failover;
pub mod http;
pub mod openai;
pub mod scripted;

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of the conversation the provider continues.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    User(String),
    Assistant {
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    ToolResults(Vec<ToolResult>),
}

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: Value,
}

/// What a tool call gave back to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResult {
    pub tool_call_id: String,
    pub content: String,
    pub is_error: bool,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDescription {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// Everything a provider needs for one turn.
pub struct TurnRequest<'a> {
    /// The running agent's system prompt.
    pub system: Option<&'a str>,
    /// The conversation so far.
    pub messages: &'a [Message],
    /// The phase context, injected fresh before every turn (not kept in the conversation).
    pub context: Option<&'a str>,
    pub tools: &'a [ToolDescription],
}

/// Why the model stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
}

/// How full the model's context is after a turn, as the provider reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContextUsage {
    /// Tokens in the context: the turn's input and its output.
    pub used: u64,
    /// The model's context window in tokens, when it is known.
    pub window: Option<u64>,
}

/// Who runs the tool calls of a turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Runner {
    /// rawko runs them, once the gate (or the user) allowed them.
    #[default]
    Rawko,
    /// The agent runs them itself once rawko allowed them (an ACP agent's permission request):
    /// rawko decides (hooks, gate, approval) and runs nothing.
    Agent,
    /// rawko runs them without asking again: the user allowed the agent's permission request for
    /// exactly this write or command past the gate ([`Provider::user_approved`]); a Bash call
    /// runs with the workspace writable, as an approved call does (hooks and the agent's filter
    /// still apply).
    RawkoApproved,
    /// The agent ran it without asking (a read-only tool of its own): rawko shows and logs it
    /// with what it gave back.
    AgentRan { content: String, is_error: bool },
    /// The agent runs them itself once allowed, and its own rules would ask its user first
    /// (Claude Code's PermissionRequest): rawko decides as for [`Runner::Agent`], and a call the
    /// phase allows goes to the user too, since the agent's rules wanted someone to say yes.
    AgentAsks,
}

/// A whole turn of the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub stop_reason: StopReason,
    /// Who runs `tool_calls`.
    pub runner: Runner,
}

/// The provider error codes (the same across providers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    AuthenticationFailed,
    RateLimited,
    ContextLengthExceeded,
    InvalidRequest,
    ModelUnavailable,
    NetworkError,
    Unknown,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::AuthenticationFailed => "authentication_failed",
            ErrorKind::RateLimited => "rate_limited",
            ErrorKind::ContextLengthExceeded => "context_length_exceeded",
            ErrorKind::InvalidRequest => "invalid_request",
            ErrorKind::ModelUnavailable => "model_unavailable",
            ErrorKind::NetworkError => "network_error",
            ErrorKind::Unknown => "unknown",
        }
    }

    pub fn parse(code: &str) -> Option<Self> {
        [
            ErrorKind::AuthenticationFailed,
            ErrorKind::RateLimited,
            ErrorKind::ContextLengthExceeded,
            ErrorKind::InvalidRequest,
            ErrorKind::ModelUnavailable,
            ErrorKind::NetworkError,
            ErrorKind::Unknown,
        ]
        .into_iter()
        .find(|k| k.as_str() == code)
    }

    /// Errors worth retrying: they say nothing about the request itself.
    pub fn is_recoverable(self) -> bool {
        matches!(self, ErrorKind::RateLimited | ErrorKind::NetworkError)
    }
}

/// A failed turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderError {
    pub kind: ErrorKind,
    pub message: String,
    pub retry_after: Option<Duration>,
}

impl ProviderError {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
            retry_after: None,
        }
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.as_str(), self.message)
    }
}

impl std::error::Error for ProviderError {}

/// Receives streamed text as the model produces it.
pub type TextSink<'a> = &'a (dyn Fn(&str) + Send + Sync);

pub type TurnFuture<'a> = Pin<Box<dyn Future<Output = Result<Turn, ProviderError>> + Send + 'a>>;

/// A model provider. Dropping the returned future aborts the turn.
pub trait Provider: Send {
    /// The provider's name as configured (`scripted`, `anthropic`, `openai`).
    fn name(&self) -> &str;

    /// Runs one turn: streams text to `on_text` and returns the whole turn.
    fn turn<'a>(&'a mut self, request: TurnRequest<'a>, on_text: TextSink<'a>) -> TurnFuture<'a>;

    /// Continues a resumed task whose log recorded `turns` turns of this provider. Providers that
    /// are given the whole conversation each turn need nothing; a scripted one skips what it played.
    fn resume_after(&mut self, _turns: usize) {}

    /// The session of the agent behind this provider (`acp`), once it has one: the task logs it,
    /// so that a resumed task can load it again.
    fn agent_session(&self) -> Option<String> {
        None
    }

    /// The agent session a resumed task had (from its log), to load instead of starting anew.
    fn load_session(&mut self, _id: String) {}

    /// The user allowed the agent's call `call_id` (run by the agent, [`Runner::Agent`]) that the
    /// gate had blocked. Told before the call's result is given back. An `acp` agent's write or
    /// terminal that follows from exactly that call is not asked about again; one the phase
    /// allowed by itself is decided again.
    fn user_approved(&mut self, _call_id: &str) {}

    /// What confines the agent's own process from the next turn on (`acp`): told before every
    /// turn; an agent already running is started again (its session loaded) when the phase's
    /// access to the workspace changed.
    fn confine(&mut self, _confinement: &Confinement) {}
    /// The context usage the provider reported for its last turn, if it reports any.
    fn context_usage(&self) -> Option<ContextUsage> {
        None
    }
}

/// How to build a task's provider again, as written in its log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Where an HTTP provider's API is (never a key: the spec is written to task logs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Providers to fail over to, in order, when this one stays rate limited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fallbacks: Vec<ProviderSpec>,
    /// `acp`: the agent's program (found on `PATH` when it has no `/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// `acp`: the program's arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// `acp`: variables set for the agent. Read from the settings, never written to a task's log
    /// (they may hold keys): a resumed task takes them from the settings again.
    #[serde(default, skip_serializing)]
    pub env: std::collections::BTreeMap<String, String>,
    /// `acp`: the workspace the agent's session opens in (set when the spec is resolved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// `acp`: how long the agent may stay silent in a prompt turn before the task fails
    /// (seconds; default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_seconds: Option<u64>,
    /// `acp`: how long one prompt turn of the agent may go on, talking or not, before the task
    /// fails (seconds; default 1800). The time rawko spends deciding on its calls (an approval
    /// waiting for the user) does not count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_seconds: Option<u64>,
    /// `scripted`: the script's `subagents:` entry this provider plays (a subagent of a scripted
    /// task, by its profile), instead of its `turns`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<String>,
}

/// What confines the process of an agent behind a provider (`acp`), as the task's current phase
/// has it: the task's sandbox, its workspace (canonical), and whether the phase lets the
/// workspace be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    pub sandbox: crate::sandbox::Sandbox,
    pub workspace: PathBuf,
    pub access: crate::sandbox::WorkspaceAccess,
    /// A workflow's phase is current (not before a workflow starts, nor after it ends): an agent
    /// given the workspace then is started again with it at once, not at its next prompt.
    pub in_phase: bool,
}

/// The providers this build knows.
pub const KNOWN: &str = "scripted, anthropic, openai, acp";

impl ProviderSpec {
    /// `anthropic`, or `openai:gpt-4.1@http://localhost:11434/v1`: what cooldowns are kept for.
    pub fn label(&self) -> String {
        let mut label = self.name.clone();
        if let Some(m) = &self.model {
            label.push(':');
            label.push_str(m);
        }
        if let Some(u) = &self.base_url {
            label.push('@');
            label.push_str(u);
        }
        label
    }

    /// Builds the provider (there is no way without the keys, so no face forgets the `apiKeys`
    /// setting); the error says what is wrong with the spec. `keys(name)` gives the API key configured for provider `name`, which
    /// goes before the environment's (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`).
    pub fn build_with(
        &self,
        keys: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Box<dyn Provider>, String> {
        if !self.fallbacks.is_empty() {
            let mut chain = Vec::with_capacity(1 + self.fallbacks.len());
            let first = ProviderSpec {
                fallbacks: Vec::new(),
                ..self.clone()
            };
            for spec in std::iter::once(&first).chain(&self.fallbacks) {
                chain.push((spec.label(), spec.build_with(keys)?));
            }
            return Ok(Box::new(failover::Failover::new(
                chain,
                failover::Cooldowns::global(),
                failover::default_cooldown(),
            )));
        }
        match self.name.as_str() {
            "scripted" => {
                let script = self
                    .script
                    .as_ref()
                    .ok_or("provider \"scripted\" needs a script: the path of a file of turns")?;
                scripted::ScriptedProvider::load_for(script, self.subagent.as_deref())
                    .map(|p| Box::new(p) as Box<dyn Provider>)
                    .map_err(|e| e.to_string())
            }
            "anthropic" => anthropic::AnthropicProvider::from_spec(self, keys("anthropic"))
                .map(|p| Box::new(p) as Box<dyn Provider>),
            "openai" => openai::OpenAiProvider::from_spec(self, keys("openai"))
                .map(|p| Box::new(p) as Box<dyn Provider>),
            "acp" => {
                acp::AcpAgentProvider::from_spec(self).map(|p| Box::new(p) as Box<dyn Provider>)
            }
            other => Err(format!(
                "unknown provider \"{other}\"; this build knows: {KNOWN}"
            )),
        }
    }
}

/// What a task asked for, to be resolved against the configured providers.
#[derive(Debug, Clone, Default)]
pub struct ProviderRequest<'a> {
    pub name: Option<&'a str>,
    pub model: Option<&'a str>,
    pub script: Option<&'a std::path::Path>,
    pub base_url: Option<&'a str>,
    /// `acp`: the agent's command line (program and arguments, split as a shell would).
    pub agent_command: Option<&'a str>,
}

/// The provider spec of a task: the named provider (or, with a script only, `scripted`; with
/// nothing, the first configured one), completed from its configured entry, with the other
/// configured providers as fallbacks. Scripts are resolved against the workspace.
pub fn resolve_spec(
    request: &ProviderRequest<'_>,
    configured: &[ProviderSpec],
    workspace: &std::path::Path,
) -> Result<ProviderSpec, String> {
    let name = request
        .name
        .map(str::to_owned)
        .or_else(|| request.script.map(|_| "scripted".to_owned()))
        .or_else(|| configured.first().map(|p| p.name.clone()))
        .ok_or(
            "no provider: set ANTHROPIC_API_KEY, or configure \"providers\" in ~/.config/rawko/config.json (or in a workspace's .rawko/config.json once you trust the workspace; e.g. [{\"name\": \"anthropic\", \"model\": \"claude-sonnet-4-5\"}]), or name one (scripted needs a script)",
        )?;
    let mut spec = configured
        .iter()
        .find(|p| p.name == name)
        .cloned()
        .unwrap_or(ProviderSpec {
            name: name.clone(),
            ..ProviderSpec::default()
        });
    spec.fallbacks = Vec::new();
    if let Some(m) = request.model {
        spec.model = Some(m.to_owned());
    }
    if let Some(u) = request.base_url {
        spec.base_url = Some(u.to_owned());
    }
    if let Some(s) = request.script {
        spec.script = Some(s.to_owned());
    }
    if let Some(s) = &spec.script {
        if s.is_relative() {
            spec.script = Some(workspace.join(s));
        }
    }
    if spec.name == "scripted" && spec.script.is_none() {
        return Err("provider \"scripted\" needs a script: the path of a file of turns".to_owned());
    }
    if !["scripted", "anthropic", "openai", "acp"].contains(&spec.name.as_str()) {
        return Err(format!(
            "unknown provider \"{}\"; this build knows: {KNOWN}",
            spec.name
        ));
    }
    if spec.name != "acp" && request.agent_command.is_some() {
        return Err(format!(
            "--agent-command is for the acp provider, not \"{}\": add --provider acp",
            spec.name
        ));
    }
    if spec.name == "acp" {
        if let Some(line) = request.agent_command {
            let mut words = acp::split_command(line)?.into_iter();
            spec.command = words.next();
            spec.args = words.collect();
        }
        if spec.command.as_deref().is_none_or(|c| c.trim().is_empty()) {
            return Err(acp::NO_COMMAND.to_owned());
        }
        spec.cwd = Some(workspace.to_owned());
        // An agent holds its own conversation: it never fails over, nor is it a fallback.
        return Ok(spec);
    }
    let label = spec.label();
    spec.fallbacks = configured
        .iter()
        .filter(|p| p.name != "scripted" && p.name != "acp")
        .map(|p| {
            let mut p = p.clone();
            p.fallbacks = Vec::new();
            p
        })
        .filter(|p| p.label() != label)
        .collect();
    if spec.name == "scripted" {
        // A script is a test: it never fails over to a real model.
        spec.fallbacks.clear();
    }
    Ok(spec)
}

/// The model of the provider picked by default for `ANTHROPIC_API_KEY` (or `apiKeys.anthropic`).
pub const DEFAULT_ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// The model of the provider picked by default for `OPENAI_API_KEY` (or `apiKeys.openai`).
pub const DEFAULT_OPENAI_MODEL: &str = "gpt-4.1";

/// [`resolve_spec`], except that with no provider configured, named or scripted, the provider
/// whose key is there (`has_key("anthropic")` before `has_key("openai")`) is used with its default
/// model; the note then says which, for the user to see once.
pub fn resolve_spec_or_default(
    request: &ProviderRequest<'_>,
    configured: &[ProviderSpec],
    workspace: &std::path::Path,
    has_key: &dyn Fn(&str) -> bool,
) -> Result<(ProviderSpec, Option<String>), String> {
    if request.name.is_some() || request.script.is_some() || !configured.is_empty() {
        return resolve_spec(request, configured, workspace).map(|s| (s, None));
    }
    let Some((name, model, var)) = [
        ("anthropic", DEFAULT_ANTHROPIC_MODEL, anthropic::KEY_VAR),
        ("openai", DEFAULT_OPENAI_MODEL, openai::KEY_VAR),
    ]
    .into_iter()
    .find(|(name, _, _)| has_key(name)) else {
        return resolve_spec(request, configured, workspace).map(|s| (s, None));
    };
    let default = ProviderSpec {
        name: name.to_owned(),
        model: Some(model.to_owned()),
        ..ProviderSpec::default()
    };
    let spec = resolve_spec(request, std::slice::from_ref(&default), workspace)?;
    let note = format!(
        "no provider configured: using {name} ({}) because {var} or apiKeys.{name} is set (docs/providers.md)",
        spec.model.as_deref().unwrap_or(model)
    );
    Ok((spec, Some(note)))
}

#[cfg(test)]
mod resolve_tests {
    use super::*;

    #[test]
    fn with_nothing_configured_a_key_picks_the_provider_anthropic_first() {
        let ws = std::path::Path::new("/ws");
        let none = ProviderRequest::default();
        let both = |_: &str| true;
        let (s, note) = resolve_spec_or_default(&none, &[], ws, &both).unwrap();
        assert_eq!(
            (s.name.as_str(), s.model.as_deref()),
            ("anthropic", Some(DEFAULT_ANTHROPIC_MODEL))
        );
        assert!(note
            .unwrap()
            .contains("using anthropic (claude-sonnet-4-5)"));
        let openai = |n: &str| n == "openai";
        let (s, note) = resolve_spec_or_default(&none, &[], ws, &openai).unwrap();
        assert_eq!(
            (s.name.as_str(), s.model.as_deref()),
            ("openai", Some(DEFAULT_OPENAI_MODEL))
        );
        assert!(note.unwrap().contains("OPENAI_API_KEY"));
        // A model asked for replaces the default one.
        let model = ProviderRequest {
            model: Some("gpt-5"),
            ..Default::default()
        };
        let (s, _) = resolve_spec_or_default(&model, &[], ws, &openai).unwrap();
        assert_eq!(s.model.as_deref(), Some("gpt-5"));
    }

    #[test]
    fn a_named_provider_a_script_or_a_configured_one_wins_over_the_keys() {
        let ws = std::path::Path::new("/ws");
        let both = |_: &str| true;
        let named = ProviderRequest {
            name: Some("openai"),
            ..Default::default()
        };
        let (s, note) = resolve_spec_or_default(&named, &[], ws, &both).unwrap();
        assert_eq!((s.name.as_str(), s.model, note), ("openai", None, None));
        let script = ProviderRequest {
            script: Some(std::path::Path::new("s.yaml")),
            ..Default::default()
        };
        let (s, note) = resolve_spec_or_default(&script, &[], ws, &both).unwrap();
        assert_eq!((s.name.as_str(), note), ("scripted", None));
        let configured = [spec("openai", Some("local"))];
        let (s, note) =
            resolve_spec_or_default(&ProviderRequest::default(), &configured, ws, &both).unwrap();
        assert_eq!(
            (s.name.as_str(), s.model.as_deref(), note),
            ("openai", Some("local"), None)
        );
    }

    #[test]
    fn an_agent_command_names_the_acp_agent_and_nothing_else() {
        let ws = std::path::Path::new("/ws");
        let acp = ProviderRequest {
            name: Some("acp"),
            agent_command: Some("gemini --experimental-acp"),
            ..Default::default()
        };
        let s = resolve_spec(&acp, &[], ws).unwrap();
        assert_eq!(s.command.as_deref(), Some("gemini"));
        assert_eq!(s.args, ["--experimental-acp"]);
        assert_eq!(s.cwd.as_deref(), Some(ws));
        let wrong = ProviderRequest {
            name: Some("openai"),
            agent_command: Some("gemini"),
            ..Default::default()
        };
        assert_eq!(
            resolve_spec(&wrong, &[], ws).unwrap_err(),
            "--agent-command is for the acp provider, not \"openai\": add --provider acp"
        );
        let none = ProviderRequest {
            name: Some("acp"),
            ..Default::default()
        };
        assert_eq!(resolve_spec(&none, &[], ws).unwrap_err(), acp::NO_COMMAND);
    }

    #[test]
    fn with_no_key_and_nothing_configured_there_is_no_provider() {
        let e = resolve_spec_or_default(
            &ProviderRequest::default(),
            &[],
            std::path::Path::new("/ws"),
            &|_| false,
        )
        .unwrap_err();
        assert!(e.starts_with("no provider"), "{e}");
    }

    fn spec(name: &str, model: Option<&str>) -> ProviderSpec {
        ProviderSpec {
            name: name.to_owned(),
            model: model.map(str::to_owned),
            ..ProviderSpec::default()
        }
    }

    #[test]
    fn the_named_provider_is_completed_from_config_and_the_rest_are_fallbacks() {
        let configured = [
            spec("anthropic", Some("claude")),
            spec("openai", Some("gpt")),
        ];
        let ws = std::path::Path::new("/w");
        let r = resolve_spec(&ProviderRequest::default(), &configured, ws).unwrap();
        assert_eq!(r.label(), "anthropic:claude");
        assert_eq!(
            r.fallbacks
                .iter()
                .map(ProviderSpec::label)
                .collect::<Vec<_>>(),
            ["openai:gpt"]
        );
        let r = resolve_spec(
            &ProviderRequest {
                name: Some("openai"),
                ..Default::default()
            },
            &configured,
            ws,
        )
        .unwrap();
        assert_eq!(r.label(), "openai:gpt");
        assert_eq!(
            r.fallbacks
                .iter()
                .map(ProviderSpec::label)
                .collect::<Vec<_>>(),
            ["anthropic:claude"]
        );
        let script = std::path::Path::new("s.yaml");
        let r = resolve_spec(
            &ProviderRequest {
                script: Some(script),
                ..Default::default()
            },
            &configured,
            ws,
        )
        .unwrap();
        assert_eq!(r.name, "scripted");
        assert_eq!(r.script.as_deref(), Some(std::path::Path::new("/w/s.yaml")));
        assert!(r.fallbacks.is_empty());
    }

    #[test]
    fn missing_or_unknown_providers_are_clear() {
        let ws = std::path::Path::new("/w");
        assert!(resolve_spec(&ProviderRequest::default(), &[], ws)
            .unwrap_err()
            .starts_with("no provider"));
        assert!(resolve_spec(
            &ProviderRequest {
                name: Some("gemini"),
                ..Default::default()
            },
            &[],
            ws
        )
        .unwrap_err()
        .contains("unknown provider \"gemini\""));
        assert!(resolve_spec(
            &ProviderRequest {
                name: Some("scripted"),
                ..Default::default()
            },
            &[],
            ws
        )
        .unwrap_err()
        .contains("needs a script"));
    }
}

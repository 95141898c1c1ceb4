//! rawko's settings: defaults, then `~/.config/rawko/config.json`, then `<workspace>/.rawko/config.json`,
//! then what the editor passes as `initializationOptions`. Later layers override earlier ones key by
//! key. A bad value is reported and the default kept, so a typo never stops the server.
//!
//! AutoAgent's `<workspace>/.autoagent/config.json` is read too, between the two, for its hooks
//! only: its other keys (`providers`, `failoverDelay`, …) are AutoAgent's settings, which rawko
//! leaves alone with one note.
//!
//! The agents working in a workspace can write its files, so a workspace's file is never a source
//! of policy the user did not trust: its `sandbox` is not read at all, and its hooks and the
//! settings that choose what runs or where keys go (`trusted.rs`) apply only once the user
//! trusted the workspace with exactly them ([`Settings::trusting`]).

mod trusted;

pub use trusted::{
    section_of as trusted_section_of, workspace_trust_section, WorkspaceSettings, NEEDS_TRUST,
};

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Map, Value};

/// How many subagents of one `delegate_to_subagents` call run at once unless `maxSubagents` says.
pub const DEFAULT_MAX_SUBAGENTS: u32 = 3;

/// The settings the engine uses.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// How long a blocked tool call waits for the user before it counts as rejected.
    pub approval_timeout: Duration,
    /// How many not-done reminders may follow each other before the task fails.
    pub max_reminders: u32,
    /// How many subagents of one `delegate_to_subagents` call run at once.
    pub max_subagents: u32,
    /// The countdown before a reminder, in ticks.
    pub countdown_seconds: u32,
    /// How long one countdown tick lasts (1 s; shorter in tests).
    pub countdown_tick: Duration,
    /// The default time limit of a Bash tool call.
    pub bash_timeout: Duration,
    /// How long `rawko acp` waits for the editor's answer to a file or terminal request it sends
    /// (`fs/*`, `terminal/*` but the wait for a command's exit) before the tool call fails.
    pub editor_request_timeout: Duration,
    /// The orchestrator's limit of agent runs per task.
    pub max_iterations: u32,
    /// How many failures in a row end a task.
    pub max_failures: u32,
    /// The agent a task starts with when the user names none.
    pub default_agent: Option<String>,
    /// The workflow an external agent's session runs when its hook names none.
    pub default_workflow: Option<String>,
    /// The arbiter: `None` for the deterministic one, or the provider (and script) a model arbiter
    /// is asked through. Like `providers` and `api_keys`, the workspace's value is in here only
    /// once [`Settings::trusting`] says the workspace is trusted.
    pub arbiter: Option<crate::provider::ProviderSpec>,
    /// The model providers, in order of preference: the first runs tasks, the others take over
    /// when it stays rate limited.
    pub providers: Vec<crate::provider::ProviderSpec>,
    /// API keys from the config files, by provider name (never logged or written anywhere).
    pub api_keys: ApiKeys,
    /// How long a provider that stays rate limited is left alone.
    pub rate_limit_cooldown: Duration,
    /// The hooks of both config files, the user's first; each knows where it came from, since a
    /// workspace's hooks run only in a trusted workspace (see [`Settings::hooks_to_run`]).
    pub hooks: Vec<crate::hooks::Hook>,
    /// The workspace's hooks as written, for the trust check: the `hooks` section of
    /// `.rawko/config.json`, or, when `.autoagent/config.json` has hooks too, both sections
    /// (see [`crate::hooks::trust::combine`]).
    pub workspace_hooks: Option<Value>,
    /// `secrets.env`: more environment variables that hold secrets. Like the provider keys, they
    /// are kept out of Bash calls and their values redacted from what rawko shows and logs.
    pub secret_env: Vec<String>,
    /// Bash's kernel sandbox: the mode and the paths added to what it may read and write. Read
    /// from the user's config and the editor's settings only: the workspace's own file is one
    /// its agents can write.
    pub sandbox: crate::sandbox::SandboxSettings,
    /// `notify`: where the web face (`rawko web`) tells a phone that an approval waits. Read from
    /// the user's config and the editor's settings only: a workspace's file must not send what
    /// its tasks ask to a server of its choosing.
    pub notify: Option<Notify>,
    /// The workspace's files that have hooks, in the order their hooks run.
    pub workspace_hook_files: Vec<PathBuf>,
    /// The settings of the workspace's `.rawko/config.json` that apply only once the workspace
    /// is trusted (`providers`, `arbiter`, `apiKeys`), if it has any.
    pub workspace_settings: Option<WorkspaceSettings>,
    /// What the user may want to know about the files, which is not a problem (AutoAgent's
    /// settings that rawko does not use).
    pub notes: Vec<String>,
}

/// Where an approval that starts waiting is announced (`notify` in the user's config): a JSON
/// POST in ntfy's format to `webhook`, naming `topic` when one is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notify {
    pub webhook: String,
    pub topic: Option<String>,
}

impl Notify {
    fn parse(v: &Value) -> Option<Notify> {
        let map = v.as_object()?;
        if map.keys().any(|k| k != "webhook" && k != "topic") {
            return None;
        }
        let webhook = map.get("webhook")?.as_str()?.trim();
        if !(webhook.starts_with("http://") || webhook.starts_with("https://")) {
            return None;
        }
        let topic = match map.get("topic") {
            None | Some(Value::Null) => None,
            Some(t) => Some(t.as_str().filter(|t| !t.trim().is_empty())?.to_owned()),
        };
        Some(Notify {
            webhook: webhook.to_owned(),
            topic,
        })
    }
}

/// API keys by provider name. Its `Debug` shows only the names.
#[derive(Clone, Default, PartialEq)]
pub struct ApiKeys(pub std::collections::HashMap<String, String>);

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.0.keys().collect();
        names.sort();
        write!(f, "ApiKeys({names:?}, redacted)")
    }
}

impl ApiKeys {
    pub fn get(&self, provider: &str) -> Option<String> {
        self.0.get(provider).cloned()
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            approval_timeout: Duration::from_secs(120),
            max_reminders: 8,
            max_subagents: DEFAULT_MAX_SUBAGENTS,
            countdown_seconds: 3,
            countdown_tick: Duration::from_secs(1),
            bash_timeout: Duration::from_secs(120),
            editor_request_timeout: Duration::from_secs(30),
            max_iterations: 50,
            max_failures: 3,
            default_agent: None,
            default_workflow: None,
            arbiter: None,
            providers: Vec::new(),
            api_keys: ApiKeys::default(),
            secret_env: Vec::new(),
            sandbox: Default::default(),
            notify: None,
            rate_limit_cooldown: Duration::from_secs(3600),
            hooks: Vec::new(),
            workspace_hooks: None,
            workspace_hook_files: Vec::new(),
            workspace_settings: None,
            notes: Vec::new(),
        }
    }
}

impl Settings {
    /// The hooks that may run: all of them in a trusted workspace, else the user's only.
    pub fn hooks_to_run(&self, workspace_trusted: bool) -> Vec<crate::hooks::Hook> {
        self.hooks
            .iter()
            .filter(|h| workspace_trusted || h.source == crate::hooks::HookSource::User)
            .cloned()
            .collect()
    }

    /// Whether the workspace's config has hooks of its own.
    pub fn has_workspace_hooks(&self) -> bool {
        self.workspace_hooks.is_some()
    }

    /// These settings as they apply when the workspace is trusted or not: the workspace's
    /// `providers`, `arbiter` and `apiKeys` only in a trusted one, the user's and the editor's in
    /// either. The settings [`load`] returns are those of an untrusted workspace.
    pub fn trusting(&self, trusted: bool) -> Settings {
        let mut settings = self.clone();
        if let Some(w) = &self.workspace_settings {
            if trusted {
                w.trusted.apply_to(&mut settings);
            } else {
                w.untrusted.apply_to(&mut settings);
            }
        }
        settings
    }

    /// What the user trusts a workspace with (see [`crate::hooks::trust::cover`]): its hooks and
    /// its settings that need trust; `None` when it has neither.
    pub fn trust_section(&self) -> Option<Value> {
        crate::hooks::trust::cover(
            self.workspace_hooks.as_ref(),
            self.workspace_settings.as_ref().map(|w| &w.section),
        )
    }

    /// What an untrusted workspace leaves out, for a note that ends with the reason: `the hooks
    /// in /ws/.rawko/config.json do not run`, `the providers and apiKeys in /ws/.rawko/config.json
    /// are not used`, or both joined; `None` when there is nothing to trust.
    pub fn untrusted_text(&self, workspace: &Path) -> Option<String> {
        let hooks = self
            .has_workspace_hooks()
            .then(|| format!("the hooks in {}", self.workspace_hook_files_text(workspace)));
        let settings = self
            .workspace_settings
            .as_ref()
            .map(WorkspaceSettings::not_used);
        match (hooks, settings) {
            (Some(h), None) => Some(format!("{h} do not run")),
            (None, Some(s)) => Some(s),
            (Some(h), Some(s)) => Some(format!("{h} do not run and {s}")),
            (None, None) => None,
        }
    }

    /// The workspace's settings that need trust, a line each (see [`WorkspaceSettings::lines`]).
    pub fn workspace_settings_lines(&self) -> Vec<String> {
        self.workspace_settings
            .as_ref()
            .map(WorkspaceSettings::lines)
            .unwrap_or_default()
    }

    /// The workspace's files with hooks, for messages: `/ws/.rawko/config.json`, or
    /// `/ws/.autoagent/config.json and /ws/.rawko/config.json`.
    pub fn workspace_hook_files_text(&self, workspace: &Path) -> String {
        let files: Vec<String> = if self.workspace_hook_files.is_empty() {
            vec![workspace.join(".rawko").join("config.json")]
        } else {
            self.workspace_hook_files.clone()
        }
        .iter()
        .map(|f| f.display().to_string())
        .collect();
        files.join(" and ")
    }
}

/// Where a config file sits, which decides what rawko reads of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FileKind {
    /// `~/.config/rawko/config.json`: settings and the user's hooks.
    User,
    /// `<workspace>/.rawko/config.json`: settings and the workspace's hooks.
    Workspace,
    /// `<workspace>/.autoagent/config.json`: AutoAgent's; only its hooks (the workspace's).
    AutoAgent,
}

fn kind_of(file: &Path) -> FileKind {
    match file
        .parent()
        .and_then(Path::file_name)
        .and_then(|n| n.to_str())
    {
        Some(".rawko") => FileKind::Workspace,
        Some(".autoagent") => FileKind::AutoAgent,
        _ => FileKind::User,
    }
}

/// The one note about the keys of AutoAgent's config other than `hooks`, if it has any.
fn autoagent_note(map: &Map<String, Value>, source: &str) -> Option<String> {
    let mut keys: Vec<&str> = map
        .keys()
        .filter(|k| *k != "hooks" && *k != "$schema")
        .map(String::as_str)
        .collect();
    // Named in one order whatever order the file has them in (serde_json keeps the file's order
    // when its `preserve_order` feature is on, as the ACP SDK turns it on).
    keys.sort_unstable();
    if keys.is_empty() {
        return None;
    }
    let mut note = format!(
        "{source}: rawko runs the hooks of AutoAgent's config and leaves its settings to AutoAgent ({} not used; rawko's own settings go in .rawko/config.json)",
        keys.join(", ")
    );
    let on = |k: &str| map.get(k) == Some(&Value::Bool(true));
    if on("gitAutoCommit") || on("gitAutoPush") {
        note.push_str(
            "; for gitAutoCommit and gitAutoPush, `rawko config set-auto-commit true` and `rawko config set-auto-push true` add git hooks",
        );
    }
    Some(note)
}

/// A settings layer that could not be used as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigProblem {
    /// The file, or `initializationOptions`.
    pub source: String,
    pub message: String,
}

impl std::fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.source, self.message)
    }
}

/// The config files, lowest precedence first: the user's, AutoAgent's in the workspace (for its
/// hooks), the workspace's.
pub fn config_files(workspace: &Path, env: impl Fn(&str) -> Option<OsString>) -> Vec<PathBuf> {
    let non_empty = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let mut files = Vec::new();
    let config =
        non_empty("XDG_CONFIG_HOME").or_else(|| non_empty("HOME").map(|h| h.join(".config")));
    if let Some(config) = config {
        files.push(config.join("rawko").join("config.json"));
    }
    files.extend(workspace_files(workspace));
    files
}

/// The workspace's config files, in the order their hooks run.
pub fn workspace_files(workspace: &Path) -> [PathBuf; 2] {
    [
        workspace.join(".autoagent").join("config.json"),
        workspace.join(".rawko").join("config.json"),
    ]
}

/// Reads the config files (a missing one is fine) and applies `overrides` last.
///
/// The settings returned are those of an untrusted workspace: the settings of the workspace's
/// file that need trust are kept aside in [`Settings::workspace_settings`], with what they give
/// once the workspace is trusted ([`Settings::trusting`]).
pub fn load(files: &[PathBuf], overrides: Option<&Value>) -> (Settings, Vec<ConfigProblem>) {
    let mut settings = Settings::default();
    // The same layers with the workspace's settings that need trust among them: what those
    // settings are in a trusted workspace.
    let mut trusting = Settings::default();
    let mut workspace_settings = None;
    let mut problems = Vec::new();
    let (mut rawko_hooks, mut autoagent_hooks) = (None, None);
    for file in files {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                problems.push(ConfigProblem {
                    source: file.display().to_string(),
                    message: format!("cannot read: {e}"),
                });
                continue;
            }
        };
        let source = file.display().to_string();
        match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => {
                let kind = kind_of(file);
                match kind {
                    FileKind::AutoAgent => settings.notes.extend(autoagent_note(&map, &source)),
                    FileKind::Workspace => {
                        let mut map = map.clone();
                        if map.remove("notify").is_some() {
                            problems.push(ConfigProblem {
                                source: source.clone(),
                                message: "notify is not read from a workspace's config, which the agents working in it can write; set it in ~/.config/rawko/config.json".to_owned(),
                            });
                        }
                        if map.remove("sandbox").is_some() {
                            problems.push(ConfigProblem {
                                source: source.clone(),
                                message: "sandbox is not read from a workspace's config, which the agents working in it can write; set it in ~/.config/rawko/config.json".to_owned(),
                            });
                        }
                        let needs_trust = trusted::take(&mut map);
                        apply(&mut settings, &map, &source, &mut problems);
                        apply(&mut trusting, &map, &source, &mut Vec::new());
                        if let Some(needs_trust) = needs_trust {
                            // Checked now, so a typo is reported whether or not it applies.
                            apply(&mut trusting, &needs_trust, &source, &mut problems);
                            workspace_settings = Some((file.clone(), Value::Object(needs_trust)));
                        }
                    }
                    FileKind::User => {
                        apply(&mut settings, &map, &source, &mut problems);
                        apply(&mut trusting, &map, &source, &mut Vec::new());
                    }
                }
                if let Some(section) = map.get("hooks") {
                    let origin = if kind == FileKind::User {
                        crate::hooks::HookSource::User
                    } else {
                        crate::hooks::HookSource::Workspace
                    };
                    let (hooks, hook_problems) = crate::hooks::config::parse(section, origin);
                    problems.extend(hook_problems.into_iter().map(|p| ConfigProblem {
                        source: source.clone(),
                        message: p.message,
                    }));
                    let has_any = section.as_object().is_some_and(|o| !o.is_empty());
                    if kind != FileKind::User && has_any {
                        settings.workspace_hook_files.push(file.clone());
                        match kind {
                            FileKind::AutoAgent => autoagent_hooks = Some(section.clone()),
                            _ => rawko_hooks = Some(section.clone()),
                        }
                    }
                    let earlier = std::mem::take(&mut settings.hooks);
                    settings.hooks = crate::hooks::config::merge(earlier, hooks);
                }
            }
            Ok(_) => problems.push(ConfigProblem {
                source,
                message: "must be a JSON object".to_owned(),
            }),
            Err(e) => problems.push(ConfigProblem {
                source,
                message: format!("invalid JSON: {e}"),
            }),
        }
    }
    settings.workspace_hooks =
        crate::hooks::trust::combine(rawko_hooks.as_ref(), autoagent_hooks.as_ref());
    match overrides {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            apply(&mut settings, map, "initializationOptions", &mut problems);
            apply(&mut trusting, map, "initializationOptions", &mut Vec::new());
        }
        Some(_) => problems.push(ConfigProblem {
            source: "initializationOptions".to_owned(),
            message: "must be a JSON object".to_owned(),
        }),
    }
    settings.workspace_settings = workspace_settings.map(|(file, section)| WorkspaceSettings {
        file,
        section,
        untrusted: trusted::Chosen::of(&settings),
        trusted: trusted::Chosen::of(&trusting),
    });
    (settings, problems)
}

fn apply(
    settings: &mut Settings,
    map: &Map<String, Value>,
    source: &str,
    problems: &mut Vec<ConfigProblem>,
) {
    let mut bad = |key: &str, want: &str, got: &Value| {
        problems.push(ConfigProblem {
            source: source.to_owned(),
            message: format!(
                "{key} must be {want}, found {}; the default is used",
                crate::clip::clip(&got.to_string())
            ),
        });
    };
    // Every duration in seconds: more than 0 (fractions are fine) and at most a day.
    const SECONDS: &str = "a number of seconds above 0 and at most 86400 (a day)";
    let seconds = |v: &Value| {
        v.as_f64()
            .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
    };
    if let Some(v) = map.get("approvalTimeoutSeconds") {
        match seconds(v) {
            Some(s) => settings.approval_timeout = Duration::from_secs_f64(s),
            None => bad("approvalTimeoutSeconds", SECONDS, v),
        }
    }
    if let Some(v) = map.get("maxReminders") {
        match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(n) => settings.max_reminders = n,
            None => bad("maxReminders", "a whole number", v),
        }
    }
    if let Some(v) = map.get("maxSubagents") {
        match v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| (1..=16).contains(n))
        {
            Some(n) => settings.max_subagents = n,
            None => bad("maxSubagents", "a whole number from 1 to 16", v),
        }
    }
    if let Some(v) = map.get("countdownSeconds") {
        match v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n <= 60)
        {
            Some(n) => settings.countdown_seconds = n,
            None => bad("countdownSeconds", "a whole number from 0 to 60", v),
        }
    }
    if let Some(v) = map.get("countdownTickMillis") {
        match v.as_u64().filter(|n| (1..=60_000).contains(n)) {
            Some(n) => settings.countdown_tick = Duration::from_millis(n),
            None => bad("countdownTickMillis", "a whole number from 1 to 60000", v),
        }
    }
    if let Some(v) = map.get("maxIterations") {
        match v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
        {
            Some(n) => settings.max_iterations = n,
            None => bad("maxIterations", "a whole number above 0", v),
        }
    }
    if let Some(v) = map.get("maxFailures") {
        match v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
        {
            Some(n) => settings.max_failures = n,
            None => bad("maxFailures", "a whole number above 0", v),
        }
    }
    if let Some(v) = map.get("defaultAgent") {
        match v.as_str().filter(|s| !s.trim().is_empty()) {
            Some(name) => settings.default_agent = Some(name.to_owned()),
            None => bad("defaultAgent", "an agent name", v),
        }
    }
    if let Some(v) = map.get("notify") {
        match Notify::parse(v) {
            Some(n) => settings.notify = Some(n),
            None => bad(
                "notify",
                "{\"webhook\": \"https://…\", \"topic\": \"…\"} (topic optional)",
                v,
            ),
        }
    }
    if let Some(v) = map.get("defaultWorkflow") {
        match v.as_str().filter(|s| !s.trim().is_empty()) {
            Some(key) => settings.default_workflow = Some(key.to_owned()),
            None => bad("defaultWorkflow", "a workflow key", v),
        }
    }
    if let Some(v) = map.get("arbiter") {
        // {"type": "deterministic"} or {"type": "model", "provider": "scripted", "script": "…", "model": "…"}
        let kind = v.get("type").and_then(Value::as_str);
        match kind {
            Some("deterministic") => settings.arbiter = None,
            Some("model") => match v.get("provider").and_then(Value::as_str) {
                Some(provider) => {
                    settings.arbiter = Some(crate::provider::ProviderSpec {
                        name: provider.to_owned(),
                        script: v.get("script").and_then(Value::as_str).map(PathBuf::from),
                        model: v.get("model").and_then(Value::as_str).map(str::to_owned),
                        base_url: v.get("baseUrl").and_then(Value::as_str).map(str::to_owned),
                        ..Default::default()
                    })
                }
                None => bad(
                    "arbiter.provider",
                    "a provider name for the model arbiter",
                    v,
                ),
            },
            _ => bad(
                "arbiter",
                "{\"type\": \"deterministic\"} or {\"type\": \"model\", \"provider\": …}",
                v,
            ),
        }
    }
    if let Some(v) = map.get("providers") {
        let parsed: Result<Vec<crate::provider::ProviderSpec>, _> =
            serde_json::from_value(v.clone());
        match parsed {
            Ok(list) if list.iter().all(|p| !p.name.trim().is_empty()) => settings.providers = list,
            _ => bad("providers", "a list of {\"name\": \"anthropic\"|\"openai\"|\"scripted\", \"model\": …, \"baseUrl\": …} or {\"name\": \"acp\", \"command\": …, \"args\": […], \"env\": {…}}", v),
        }
    }
    if let Some(v) = map.get("apiKeys") {
        match v.as_object() {
            Some(keys) if keys.values().all(Value::is_string) => {
                for (name, key) in keys {
                    if let Some(key) = key.as_str() {
                        settings.api_keys.0.insert(name.clone(), key.to_owned());
                    }
                }
            }
            // Never echo the value: it may hold a key.
            _ => bad(
                "apiKeys",
                "an object of provider name → key",
                &Value::String("(not shown)".to_owned()),
            ),
        }
    }
    if let Some(v) = map.get("rateLimitCooldownSeconds") {
        match seconds(v) {
            Some(s) => settings.rate_limit_cooldown = Duration::from_secs_f64(s),
            None => bad("rateLimitCooldownSeconds", SECONDS, v),
        }
    }
    if let Some(v) = map.get("bashTimeoutSeconds") {
        match seconds(v) {
            Some(s) => settings.bash_timeout = Duration::from_secs_f64(s),
            None => bad("bashTimeoutSeconds", SECONDS, v),
        }
    }
    if let Some(v) = map.get("editorRequestSeconds") {
        match seconds(v) {
            Some(s) => settings.editor_request_timeout = Duration::from_secs_f64(s),
            None => bad("editorRequestSeconds", SECONDS, v),
        }
    }
    if let Some(v) = map.get("sandbox") {
        match crate::sandbox::SandboxSettings::parse(v) {
            Some(sandbox) => settings.sandbox = sandbox,
            None => bad("sandbox", crate::sandbox::SETTING_SHAPE, v),
        }
    }
    if let Some(v) = map.get("secrets") {
        let names = v.get("env").and_then(Value::as_array).and_then(|list| {
            list.iter()
                .map(|n| {
                    n.as_str()
                        .filter(|n| !n.is_empty() && !n.contains('='))
                        .map(str::to_owned)
                })
                .collect::<Option<Vec<String>>>()
        });
        match names {
            Some(names) => {
                for n in names {
                    if !settings.secret_env.contains(&n) {
                        settings.secret_env.push(n);
                    }
                }
            }
            None => bad("secrets", "{\"env\": [names of environment variables]}", v),
        }
    }
}

#[cfg(test)]
mod tests;

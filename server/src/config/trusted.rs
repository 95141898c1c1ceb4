//! The settings of a workspace's `.rawko/config.json` that apply only once the user trusted the
//! workspace: those that choose what runs, where requests and keys go, or which provider runs.
//! `providers` (an `acp` agent's command, arguments and environment; a base URL that gets the
//! key), `arbiter` (its provider, base URL and script) and `apiKeys` (a key of someone else's
//! routes the user's conversations to their account). The agents working in a workspace can
//! write its files, so an agent's Write of `.rawko/config.json` must not decide what the user's
//! next task starts or where their key is sent.
//!
//! The trust hash covers these settings with the hooks (`hooks/trust.rs`), so a change asks again.
//! Until the workspace is trusted the user's own settings and the editor's apply, and the faces
//! say once what was left out ([`WorkspaceSettings::keys_text`], [`WorkspaceSettings::lines`]).

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::hooks::template::shell_quote;
use crate::hooks::trust::{combine, cover};
use crate::provider::ProviderSpec;

use super::ApiKeys;

/// The keys of a workspace's config that apply only in a trusted workspace, in the order they are
/// named to the user.
pub const NEEDS_TRUST: [&str; 3] = ["providers", "arbiter", "apiKeys"];

/// What the settings that need trust decide, as one set of layers gives them.
#[derive(Clone, Default, PartialEq)]
pub struct Chosen {
    pub providers: Vec<ProviderSpec>,
    pub arbiter: Option<ProviderSpec>,
    pub api_keys: ApiKeys,
}

impl Chosen {
    pub(super) fn of(settings: &super::Settings) -> Chosen {
        Chosen {
            providers: settings.providers.clone(),
            arbiter: settings.arbiter.clone(),
            api_keys: settings.api_keys.clone(),
        }
    }

    pub(super) fn apply_to(&self, settings: &mut super::Settings) {
        settings.providers = self.providers.clone();
        settings.arbiter = self.arbiter.clone();
        settings.api_keys = self.api_keys.clone();
    }
}

/// The settings that need trust which a workspace's `.rawko/config.json` has.
#[derive(Clone, PartialEq)]
pub struct WorkspaceSettings {
    /// The file they are in.
    pub file: PathBuf,
    /// Those keys as written (only the ones the file has), for the trust hash. It holds key
    /// values: show [`WorkspaceSettings::lines`], never this.
    pub section: Value,
    /// What applies while the workspace is not trusted: the user's and the editor's layers.
    pub(super) untrusted: Chosen,
    /// What applies once it is: the workspace's layer between those two.
    pub(super) trusted: Chosen,
}

impl std::fmt::Debug for WorkspaceSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkspaceSettings")
            .field("file", &self.file)
            .field("keys", &self.keys())
            .finish_non_exhaustive()
    }
}

impl WorkspaceSettings {
    /// The keys the file has, in [`NEEDS_TRUST`]'s order.
    pub fn keys(&self) -> Vec<&'static str> {
        NEEDS_TRUST
            .into_iter()
            .filter(|k| self.section.get(*k).is_some())
            .collect()
    }

    /// The keys for a sentence: `providers`, `providers and apiKeys`, `providers, arbiter and
    /// apiKeys`.
    pub fn keys_text(&self) -> String {
        let keys = self.keys();
        match keys.split_last() {
            None => String::new(),
            Some((last, [])) => (*last).to_owned(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        }
    }

    /// `the providers and apiKeys in /ws/.rawko/config.json are not used`: what an untrusted
    /// workspace leaves out.
    pub fn not_used(&self) -> String {
        let verb = if self.keys() == ["arbiter"] {
            "is"
        } else {
            "are"
        };
        format!(
            "the {} in {} {verb} not used",
            self.keys_text(),
            self.file.display()
        )
    }

    /// One line per setting, for the user deciding whether to trust the workspace: each
    /// provider with the command it runs and the base URL it sends the key to, the arbiter, the
    /// providers `apiKeys` has keys for. Key values (and the values of an agent's `env`) are
    /// never shown, only their names.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        match self.section.get("providers") {
            None => {}
            Some(Value::Array(list)) if !list.is_empty() => lines.extend(
                list.iter()
                    .map(|p| format!("provider {}", describe_provider(p))),
            ),
            Some(Value::Array(_)) => lines.push("providers: none (an empty list)".to_owned()),
            Some(_) => lines.push("providers: not a list of providers".to_owned()),
        }
        match self.section.get("arbiter") {
            None => {}
            Some(v) if v.get("type").and_then(Value::as_str) == Some("model") => {
                lines.push(format!("arbiter: the model of {}", describe_arbiter(v)))
            }
            Some(v) if v.get("type").and_then(Value::as_str) == Some("deterministic") => {
                lines.push("arbiter: deterministic".to_owned())
            }
            Some(_) => lines.push("arbiter: not an arbiter setting".to_owned()),
        }
        match self.section.get("apiKeys") {
            None => {}
            Some(Value::Object(keys)) => {
                let mut names: Vec<&str> = keys.keys().map(String::as_str).collect();
                names.sort_unstable();
                lines.push(format!(
                    "apiKeys: a key for {} (values not shown)",
                    if names.is_empty() {
                        "no provider".to_owned()
                    } else {
                        names.join(", ")
                    }
                ));
            }
            Some(_) => lines.push("apiKeys: not an object of keys (not shown)".to_owned()),
        }
        lines
    }
}

/// A provider entry as written, in one line: `anthropic (model m) at http://…`, `acp runs node
/// agent.js (env: NAME)`.
fn describe_provider(entry: &Value) -> String {
    let text = |key: &str| entry.get(key).and_then(Value::as_str);
    let mut line = text("name").unwrap_or("(no name)").to_owned();
    if let Some(model) = text("model") {
        line.push_str(&format!(" (model {model})"));
    }
    if let Some(url) = text("baseUrl") {
        line.push_str(&format!(" at {url}"));
    }
    if let Some(command) = text("command") {
        let mut words = vec![shell_quote(command)];
        if let Some(args) = entry.get("args").and_then(Value::as_array) {
            words.extend(args.iter().map(|a| match a.as_str() {
                Some(a) => shell_quote(a),
                None => a.to_string(),
            }));
        }
        line.push_str(&format!(" runs {}", words.join(" ")));
    }
    if let Some(script) = text("script") {
        line.push_str(&format!(" replays {script}"));
    }
    if let Some(env) = entry.get("env").and_then(Value::as_object) {
        let mut names: Vec<&str> = env.keys().map(String::as_str).collect();
        names.sort_unstable();
        if !names.is_empty() {
            line.push_str(&format!(" (env: {})", names.join(", ")));
        }
    }
    crate::clip::clip_to(&line, 300).into_owned()
}

fn describe_arbiter(arbiter: &Value) -> String {
    let mut entry = arbiter.clone();
    if let Some(provider) = arbiter.get("provider") {
        entry["name"] = provider.clone();
    }
    describe_provider(&entry)
}

/// Takes the keys that need trust out of a workspace file's `map`; `None` when it has none.
pub(super) fn take(map: &mut Map<String, Value>) -> Option<Map<String, Value>> {
    let taken: Map<String, Value> = NEEDS_TRUST
        .into_iter()
        .filter_map(|k| map.remove(k).map(|v| (k.to_owned(), v)))
        .collect();
    (!taken.is_empty()).then_some(taken)
}

/// The settings that need trust of a workspace file's `map`, as trust covers them; `None` when
/// it has none.
pub fn section_of(map: &Map<String, Value>) -> Option<Value> {
    take(&mut map.clone()).map(Value::Object)
}

/// What trust covers in `workspace` (see [`cover`]), read from its files now, if anything. It is
/// here, not in `hooks/trust.rs`, because it reads the workspace's config files as this module does.
pub fn workspace_trust_section(workspace: &Path) -> Option<Value> {
    let read = |file: PathBuf| -> Option<Map<String, Value>> {
        let text = std::fs::read_to_string(file).ok()?;
        serde_json::from_str::<Value>(&text)
            .ok()?
            .as_object()
            .cloned()
    };
    let hooks = |map: &Option<Map<String, Value>>| -> Option<Value> {
        map.as_ref()?
            .get("hooks")
            .filter(|h| h.as_object().is_some_and(|o| !o.is_empty()))
            .cloned()
    };
    let [autoagent, rawko] = super::workspace_files(workspace);
    let (autoagent, rawko) = (read(autoagent), read(rawko));
    let settings = rawko.as_ref().and_then(section_of);
    cover(
        combine(hooks(&rawko).as_ref(), hooks(&autoagent).as_ref()).as_ref(),
        settings.as_ref(),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn settings(section: Value) -> WorkspaceSettings {
        WorkspaceSettings {
            file: PathBuf::from("/ws/.rawko/config.json"),
            section,
            untrusted: Chosen::default(),
            trusted: Chosen::default(),
        }
    }

    #[test]
    fn the_lines_name_commands_and_urls_and_never_a_keys_value() {
        let w = settings(json!({
            "apiKeys": {"openai": "sk-secret-openai", "anthropic": "sk-ant-secret"},
            "providers": [
                {"name": "anthropic", "model": "m", "baseUrl": "http://127.0.0.1:9/"},
                {"name": "acp", "command": "node", "args": ["agent.js", "--a b"],
                 "env": {"TOKEN": "sk-in-env-secret"}}
            ],
            "arbiter": {"type": "model", "provider": "openai", "baseUrl": "http://x/v1"},
        }));
        assert_eq!(w.keys(), ["providers", "arbiter", "apiKeys"]);
        assert_eq!(w.keys_text(), "providers, arbiter and apiKeys");
        assert_eq!(
            w.lines(),
            [
                "provider anthropic (model m) at http://127.0.0.1:9/",
                "provider acp runs node agent.js '--a b' (env: TOKEN)",
                "arbiter: the model of openai at http://x/v1",
                "apiKeys: a key for anthropic, openai (values not shown)",
            ]
        );
        let shown = format!("{:?} {:?}", w, w.lines());
        assert!(!shown.contains("secret"), "{shown}");
        assert_eq!(settings(json!({"apiKeys": "sk-x"})).keys_text(), "apiKeys");
        assert_eq!(
            settings(json!({"apiKeys": "sk-secret", "providers": {}})).lines(),
            [
                "providers: not a list of providers",
                "apiKeys: not an object of keys (not shown)"
            ]
        );
    }

    #[test]
    fn take_removes_exactly_the_keys_that_need_trust() {
        let mut map = json!({"providers": [], "maxReminders": 2, "apiKeys": {}, "hooks": {}})
            .as_object()
            .cloned()
            .unwrap();
        let taken = take(&mut map).unwrap();
        assert_eq!(
            Value::Object(taken),
            json!({"providers": [], "apiKeys": {}})
        );
        assert_eq!(
            Value::Object(map.clone()),
            json!({"maxReminders": 2, "hooks": {}})
        );
        assert_eq!(take(&mut map), None);
    }
}

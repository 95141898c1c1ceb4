//! The secrets rawko holds for a task: the provider keys it uses (from the environment and the
//! config's `apiKeys`) and the variables the user names in `secrets.env`. Their names are removed
//! from the environment of Bash calls, so `env` in a Bash call cannot put a key into a tool
//! result, the task log or the next model request; their values are redacted from every text rawko
//! announces or logs (model text, tool results, hook output), not only from provider errors.

use std::borrow::Cow;

use serde_json::Value;

use crate::config::Settings;

/// The environment variables that hold the keys of the providers rawko speaks to.
pub const PROVIDER_KEY_VARS: &[&str] = &[
    crate::provider::anthropic::KEY_VAR,
    "ANTHROPIC_AUTH_TOKEN",
    crate::provider::openai::KEY_VAR,
];

/// What replaces a secret's value in text.
pub const REDACTED: &str = "<redacted>";

/// A value shorter than this is not redacted: it would blank out ordinary words.
const MIN_SECRET_LEN: usize = 8;

#[derive(Debug, Clone, Default)]
pub struct Secrets {
    names: Vec<String>,
    /// Longest first, so a key that contains another is replaced whole.
    values: Vec<String>,
}

impl Secrets {
    /// The secrets of `settings` and the environment (read through `env`).
    pub fn new(settings: &Settings, env: impl Fn(&str) -> Option<String>) -> Self {
        let mut names: Vec<String> = PROVIDER_KEY_VARS.iter().map(|n| (*n).to_owned()).collect();
        for name in &settings.secret_env {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        let mut values: Vec<String> = names
            .iter()
            .filter_map(|n| env(n))
            .chain(settings.api_keys.0.values().cloned())
            .map(|v| v.trim().to_owned())
            .filter(|v| v.len() >= MIN_SECRET_LEN)
            .collect();
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Self { names, values }
    }

    /// The variables removed from a Bash call's environment.
    pub fn env_names(&self) -> &[String] {
        &self.names
    }

    /// `text` with every known secret value replaced by [`REDACTED`].
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if !self.values.iter().any(|v| text.contains(v.as_str())) {
            return Cow::Borrowed(text);
        }
        let mut out = text.to_owned();
        for v in &self.values {
            if out.contains(v.as_str()) {
                out = out.replace(v.as_str(), REDACTED);
            }
        }
        Cow::Owned(out)
    }

    /// Redacts `text` in place.
    pub fn scrub(&self, text: &mut String) {
        if let Cow::Owned(clean) = self.redact(text) {
            *text = clean;
        }
    }

    /// Redacts every string in a JSON value.
    pub fn scrub_value(&self, value: &mut Value) {
        if self.values.is_empty() {
            return;
        }
        match value {
            Value::String(s) => self.scrub(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.scrub_value(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.scrub_value(v)),
            _ => {}
        }
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn secrets() -> Secrets {
        let mut settings = Settings {
            secret_env: vec!["GITHUB_TOKEN".into(), "SHORT".into()],
            ..Default::default()
        };
        settings
            .api_keys
            .0
            .insert("openai".into(), "sk-config-key-0123".into());
        Secrets::new(&settings, |name| match name {
            "ANTHROPIC_API_KEY" => Some("sk-ant-env-key-abcdef".into()),
            "GITHUB_TOKEN" => Some("ghp_0123456789".into()),
            "SHORT" => Some("abc".into()),
            _ => None,
        })
    }

    #[test]
    fn names_cover_the_provider_keys_and_the_users_list() {
        let s = secrets();
        for n in [
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "SHORT",
        ] {
            assert!(s.env_names().iter().any(|x| x == n), "{n}");
        }
    }

    #[test]
    fn every_known_value_is_redacted_in_text_and_json() {
        let s = secrets();
        assert_eq!(
            s.redact("ANTHROPIC_API_KEY=sk-ant-env-key-abcdef\nOPENAI=sk-config-key-0123 ghp_0123456789 abc"),
            "ANTHROPIC_API_KEY=<redacted>\nOPENAI=<redacted> <redacted> abc"
        );
        assert!(matches!(s.redact("nothing here"), Cow::Borrowed(_)));
        let mut v = json!({"a": ["x sk-ant-env-key-abcdef"], "b": {"c": "ghp_0123456789"}, "n": 1});
        s.scrub_value(&mut v);
        assert_eq!(
            v,
            json!({"a": ["x <redacted>"], "b": {"c": "<redacted>"}, "n": 1})
        );
    }
}

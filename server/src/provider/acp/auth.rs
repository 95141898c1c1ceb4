//! Logging the agent in when it asks (`auth_required` from `session/new`, `session/load` or
//! `session/resume`), without a user: rawko answers only a method that takes an API key, which the
//! agent reads from its own environment (the provider's `env` on top of rawko's), as codex-acp's
//! `api-key` method does (`CODEX_API_KEY` or `OPENAI_API_KEY`). A login that needs a person — a
//! browser, a device code, a terminal — is left to the user, and the task says what to do.

use agent_client_protocol::v1::schema::AuthMethod;
use serde_json::{Map, Value};

/// Whether the agent's answer says it needs a login first.
pub(super) fn required(error: &agent_client_protocol::Error) -> bool {
    error.code == agent_client_protocol::ErrorCode::AUTH_REQUIRED
}

/// Whether a name (an id, a `_meta` key) says "API key": `api-key`, `api_key`, `apiKey`,
/// `gemini-api-key`, "API Key".
fn names_api_key(name: &str) -> bool {
    let plain: String = name
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    plain.contains("apikey")
}

/// The method rawko can log the agent in with by itself: the first one the agent handles
/// (`agent`, not `terminal`) that takes an API key, by its id, its name or a key of its `_meta`.
pub(super) fn api_key_method(methods: &[AuthMethod]) -> Option<&AuthMethod> {
    methods.iter().find(|m| match m {
        AuthMethod::Agent(a) => {
            names_api_key(&a.id.0)
                || names_api_key(&a.name)
                || a.meta
                    .as_ref()
                    .is_some_and(|meta: &Map<String, Value>| meta.keys().any(|k| names_api_key(k)))
        }
        _ => false,
    })
}

/// The methods as the user knows them: "ChatGPT (chat-gpt), API Key (api-key)".
fn listed(methods: &[AuthMethod]) -> String {
    methods
        .iter()
        .map(|m| format!("{} ({})", m.name(), m.id().0))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why the agent cannot be logged in, and what the user can do: `tried` is the API key method
/// rawko tried and the agent's answer, `None` when it offers none.
pub(super) fn cannot_log_in(methods: &[AuthMethod], tried: Option<(&AuthMethod, &str)>) -> String {
    let fix = "log in once with the agent's own command (Codex: `codex login`), or give it its API key in the provider's \"env\" (codex-acp: OPENAI_API_KEY or CODEX_API_KEY)";
    match tried {
        Some((method, why)) => format!(
            "needs a login: rawko tried its {} method ({}), which failed: {}; {fix}",
            method.name(),
            method.id().0,
            why.lines()
                .next()
                .unwrap_or_default()
                // The JSON-RPC code's name some agents put first says nothing to the user.
                .trim_start_matches("Internal error: ")
                .trim_end_matches('.'),
        ),
        None if methods.is_empty() => format!("needs a login and offers no way to log in; {fix}"),
        None => format!(
            "needs a login, and none of the ways it offers works without you ({}); {fix}",
            listed(methods)
        ),
    }
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::v1::schema::{AuthMethodAgent, AuthMethodTerminal};
    use serde_json::json;

    use super::*;

    fn agent(id: &str, name: &str, meta: Option<Value>) -> AuthMethod {
        let mut m = AuthMethodAgent::new(id.to_owned(), name);
        m.meta = meta.and_then(|v| v.as_object().cloned());
        AuthMethod::Agent(m)
    }

    #[test]
    fn an_api_key_method_is_found_by_its_id_name_or_meta() {
        // codex-acp 2.6's methods, as it advertises them.
        let codex = [
            agent(
                "api-key",
                "API Key",
                Some(json!({"api-key": {"provider": "openai"}})),
            ),
            agent("chat-gpt", "ChatGPT", None),
        ];
        assert_eq!(
            api_key_method(&codex).map(|m| m.id().0.to_string()),
            Some("api-key".to_owned())
        );
        let by_meta = [agent("key", "Key", Some(json!({"apiKey": {}})))];
        assert!(api_key_method(&by_meta).is_some());
        let by_name = [agent("gemini", "Use Gemini API key", None)];
        assert!(api_key_method(&by_name).is_some());
    }

    #[test]
    fn a_login_that_needs_a_person_is_not_tried() {
        let methods = [
            agent("chat-gpt", "ChatGPT", None),
            AuthMethod::Terminal(AuthMethodTerminal::new(
                "api-key-terminal".to_owned(),
                "API key",
            )),
        ];
        assert!(api_key_method(&methods).is_none());
        let message = cannot_log_in(&methods, None);
        assert!(
            message.starts_with("needs a login, and none of the ways it offers works without you (ChatGPT (chat-gpt), API key (api-key-terminal))"),
            "{message}"
        );
        assert!(message.contains("codex login"), "{message}");
    }

    #[test]
    fn a_failed_api_key_login_names_the_agents_answer() {
        let methods = [agent("api-key", "API Key", None)];
        let message = cannot_log_in(
            &methods,
            Some((
                &methods[0],
                "Internal error: CODEX_API_KEY or OPENAI_API_KEY is not set",
            )),
        );
        assert!(
            message.starts_with("needs a login: rawko tried its API Key method (api-key), which failed: CODEX_API_KEY or OPENAI_API_KEY is not set; log in once"),
            "{message}"
        );
    }
}

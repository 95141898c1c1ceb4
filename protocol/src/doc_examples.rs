//! The JSON examples of `docs/protocol.md`, for the unit tests: every method's example must
//! deserialise into the method's types and serialise back to the same JSON.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::{Notification, Request};

const PROTOCOL_MD: &str = include_str!("../../docs/protocol.md");

/// The JSON messages in the ```json blocks of the section `### `method``.
fn examples(method: &str) -> Vec<Value> {
    let heading = format!("### `{method}`");
    let mut lines = PROTOCOL_MD
        .lines()
        .skip_while(|line| line.trim_end() != heading);
    assert!(
        lines.next().is_some(),
        "docs/protocol.md has no section {heading}"
    );
    let mut messages = Vec::new();
    let mut block: Option<String> = None;
    for line in lines.take_while(|line| !line.starts_with("## ") && !line.starts_with("### ")) {
        match &mut block {
            None if line.trim() == "```json" => block = Some(String::new()),
            None => {}
            Some(text) if line.trim() == "```" => {
                let message = serde_json::from_str(text)
                    .unwrap_or_else(|err| panic!("an example of {method} is not JSON: {err}"));
                messages.push(message);
                block = None;
            }
            Some(text) => {
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    messages
}

/// The one example message that calls `method`.
fn call(method: &str, messages: &[Value]) -> Value {
    let calls: Vec<_> = messages.iter().filter(|m| m["method"] == method).collect();
    assert_eq!(
        calls.len(),
        1,
        "{method} needs exactly one example message calling it"
    );
    assert_eq!(
        calls[0]["jsonrpc"], "2.0",
        "{method}: the example lacks jsonrpc 2.0"
    );
    calls[0].clone()
}

/// Deserialises `value` into `T`, serialises it back and checks nothing changed.
fn round_trip<T: Serialize + DeserializeOwned>(what: &str, value: &Value) {
    let typed: T = serde_json::from_value(value.clone())
        .unwrap_or_else(|err| panic!("{what} of the docs' example does not fit the type: {err}"));
    let back = serde_json::to_value(&typed).unwrap();
    assert_eq!(
        &back, value,
        "{what} of the docs' example changed on the round trip"
    );
}

/// Checks request `R`'s example: the request's params and the response's result.
pub(crate) fn check_request<R: Request>() {
    let messages = examples(R::METHOD);
    let request = call(R::METHOD, &messages);
    assert!(
        request.get("id").is_some(),
        "{}: the example request has no id",
        R::METHOD
    );
    round_trip::<R::Params>(&format!("{} params", R::METHOD), &request["params"]);
    let response = messages
        .iter()
        .find(|m| m.get("result").is_some())
        .unwrap_or_else(|| panic!("{}: the docs show no response", R::METHOD));
    assert_eq!(
        response["id"],
        request["id"],
        "{}: the response's id differs",
        R::METHOD
    );
    round_trip::<R::Result>(&format!("{} result", R::METHOD), &response["result"]);
}

/// Checks notification `N`'s example.
pub(crate) fn check_notification<N: Notification>() {
    let messages = examples(N::METHOD);
    let notification = call(N::METHOD, &messages);
    assert!(
        notification.get("id").is_none(),
        "{}: a notification has no id",
        N::METHOD
    );
    round_trip::<N::Params>(&format!("{} params", N::METHOD), &notification["params"]);
}

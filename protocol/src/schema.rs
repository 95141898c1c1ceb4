//! JSON Schemas rendered from the wire types and the file formats, for the editor clients and for
//! users' editors checking workflow files. `protocol/schema/` holds them, and
//! `tests/schema_current.rs` fails when they are stale (`UPDATE_SCHEMA=1 cargo test -p
//! rawko-protocol` rewrites them).

use schemars::Schema;

use crate::files::{PhaseFrontmatter, WorkflowFile};
use crate::methods::{root_schema, ALL_METHODS};

/// Put in every generated file, so nobody edits one by hand.
const GENERATED_NOTE: &str =
    "generated from crate rawko-protocol; refresh with UPDATE_SCHEMA=1 cargo test -p rawko-protocol";

/// Every schema file as `(file name, JSON text)`: for each method `rawko.<name>.params.json` and,
/// for requests, `rawko.<name>.result.json`; the local endpoint's as `endpoint.rawko.<name>.…`; then `workflow.schema.json` for `workflow.yaml` and
/// `phase.schema.json` for a phase file's frontmatter. The text is pretty-printed and ends in a
/// newline.
pub fn schema_files() -> Vec<(String, String)> {
    let mut files = Vec::new();
    for info in ALL_METHODS {
        let stem = info.method.replace('/', ".");
        files.push((
            format!("{stem}.params.json"),
            render((info.params_schema)()),
        ));
        if let Some(result_schema) = info.result_schema {
            files.push((format!("{stem}.result.json"), render(result_schema())));
        }
    }
    for info in crate::endpoint::ENDPOINT_METHODS {
        let stem = format!("endpoint.{}", info.method);
        files.push((
            format!("{stem}.params.json"),
            render((info.params_schema)()),
        ));
        if let Some(result_schema) = info.result_schema {
            files.push((format!("{stem}.result.json"), render(result_schema())));
        }
    }
    files.push((
        "workflow.schema.json".to_owned(),
        render(root_schema::<WorkflowFile>()),
    ));
    files.push((
        "phase.schema.json".to_owned(),
        render(root_schema::<PhaseFrontmatter>()),
    ));
    files.push((
        "config.schema.json".to_owned(),
        render(root_schema::<crate::files::ConfigFile>()),
    ));
    files.push((
        "agent.schema.json".to_owned(),
        render(root_schema::<crate::files::AgentFile>()),
    ));
    files
}

fn render(mut schema: Schema) -> String {
    schema.insert("$comment".to_owned(), GENERATED_NOTE.into());
    let value = serde_json::to_value(&schema).expect("a schema is always valid JSON");
    let mut text = serde_json::to_string_pretty(&sorted(value)).expect("valid JSON");
    text.push('\n');
    text
}

/// `value` with every object's keys in sorted order. The order serde_json and schemars give
/// depends on serde_json's `preserve_order` feature, which another crate of the same build may
/// turn on (the server's ACP SDK does): the files must be the same however this crate is built.
fn sorted(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn file_names_are_unique() {
        let files = schema_files();
        let names: HashSet<_> = files.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names.len(), files.len());
        assert!(names.contains("rawko.startTask.params.json"));
        assert!(names.contains("rawko.startTask.result.json"));
        assert!(names.contains("rawko.status.params.json"));
        assert!(!names.contains("rawko.status.result.json"));
    }

    #[test]
    fn workflow_schema_states_the_rules_of_workflow_yaml() {
        let schema = root_schema::<WorkflowFile>().to_value();
        assert_eq!(schema["required"], serde_json::json!(["name", "phases"]));
        assert_eq!(
            schema["properties"]["commandName"]["pattern"],
            "^[a-zA-Z0-9_-]+$"
        );
        assert_eq!(schema["properties"]["phases"]["minItems"], 1);
        assert_eq!(schema["properties"]["loopable"]["default"], true);
        assert_eq!(schema["properties"]["show"]["default"], "user");
        assert_eq!(
            schema["else"]["required"],
            serde_json::json!(["commandName", "initialMessage"])
        );
    }

    #[test]
    fn phase_schema_allows_one_tool_list_only() {
        let schema = root_schema::<PhaseFrontmatter>().to_value();
        let tool_list = &schema["$defs"]["ToolList"];
        let variants = tool_list["oneOf"].as_array().expect("ToolList is a oneOf");
        assert_eq!(variants.len(), 2);
        for variant in variants {
            assert_eq!(variant["additionalProperties"], false);
            assert_eq!(variant["required"].as_array().map(Vec::len), Some(1));
        }
    }
}

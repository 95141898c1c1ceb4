//! A blocked call as the page shows it: the editor's question (`rawko/approveToolCall`'s
//! params) with the change it would make, for the page's diff and the phone's notification.

use std::path::Path;

use rawko_protocol::to_client::ApproveToolCallParams;
use serde::Serialize;
use serde_json::Value;

/// A pending approval as the page shows it: the editor's question plus what it changes.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Approval {
    #[serde(flatten)]
    pub params: ApproveToolCallParams,
    /// The change a Write, Edit or MultiEdit would make.
    pub changes: Vec<Change>,
    pub task_description: String,
}

/// One file's change in an approval: a Write's old text is the file as it is now (`None`: a
/// new file), an Edit's the text it replaces.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    pub path: String,
    pub old_text: Option<String>,
    pub new_text: String,
}

/// What a Write, Edit or MultiEdit call would change, for the page's diff.
pub fn changes(tool: &str, input: &Value, workspace: &Path) -> Vec<Change> {
    let Some(path) = ["file_path", "path"]
        .iter()
        .find_map(|k| input.get(*k).and_then(Value::as_str))
        .filter(|p| !p.is_empty())
    else {
        return Vec::new();
    };
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let edit = |v: &Value| -> Option<Change> {
        Some(Change {
            path: path.to_owned(),
            old_text: Some(text(v, "old_string").or_else(|| text(v, "old_text"))?),
            new_text: text(v, "new_string").or_else(|| text(v, "new_text"))?,
        })
    };
    match crate::workflow::tools::canonical(tool) {
        "Write" => text(input, "content")
            .map(|content| Change {
                path: path.to_owned(),
                old_text: crate::acp::current_text_in(workspace, &workspace.join(path)),
                new_text: content,
            })
            .into_iter()
            .collect(),
        "Edit" => edit(input).into_iter().collect(),
        "MultiEdit" => input
            .get("edits")
            .and_then(Value::as_array)
            .map(|edits| edits.iter().filter_map(edit).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_shows_the_file_as_it_is_and_an_edit_its_strings() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "old\n").unwrap();
        let write = changes(
            "Write",
            &serde_json::json!({"file_path": "a.txt", "content": "new\n"}),
            dir.path(),
        );
        assert_eq!(write[0].old_text.as_deref(), Some("old\n"));
        assert_eq!(write[0].new_text, "new\n");
        let new = changes(
            "Write",
            &serde_json::json!({"file_path": "b.txt", "content": "x"}),
            dir.path(),
        );
        assert_eq!(new[0].old_text, None);
        let edits = changes(
            "MultiEdit",
            &serde_json::json!({"file_path": "a.txt", "edits": [
                {"old_string": "o", "new_string": "n"}, {"old_string": "l", "new_string": "m"}]}),
            dir.path(),
        );
        assert_eq!(edits.len(), 2);
        assert!(changes("Bash", &serde_json::json!({"command": "ls"}), dir.path()).is_empty());
    }
}

//! Workspace trust. A workspace's `.rawko/config.json` (and AutoAgent's `.autoagent/config.json`)
//! comes with the project, and the agents working in it can write it. Its hooks run arbitrary
//! commands, and its `providers`, `arbiter` and `apiKeys` choose what runs and where requests and
//! keys go (`config/trusted.rs`), so they apply only after the user trusted that workspace
//! (`rawko trust`, the editor's prompt, `rawko run`'s question). Trust is recorded with a hash of
//! what it covers ([`cover`]); a change asks again.
//!
//! The record is `$XDG_CONFIG_HOME/rawko/trusted-workspaces.json` (`~/.config/rawko/…`):
//! `{"v": 1, "workspaces": {"/abs/path": {"hooksHash": "sha256:…", "trustedAt": ms}}}`.

use std::ffi::OsString;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

/// Whether a workspace's hooks may run and its settings that need trust apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust {
    /// The workspace has no hooks and no settings that need trust: nothing to trust.
    Nothing,
    Trusted,
    /// Never trusted.
    Untrusted,
    /// Trusted once, but what trust covers changed since.
    Changed,
}

impl Trust {
    /// Whether the workspace's hooks run and its settings apply.
    pub fn allows(self) -> bool {
        matches!(self, Trust::Nothing | Trust::Trusted)
    }

    /// Why the workspace's hooks and settings are left out, for a note.
    pub fn reason(self) -> &'static str {
        match self {
            Trust::Changed => "they changed since you trusted this workspace",
            _ => "this workspace is not trusted",
        }
    }
}

/// The hash trust is recorded with: SHA-256 of the section's JSON text, its object keys sorted
/// (serde_json keeps them in file order when a dependency turns on its `preserve_order`, so the
/// text is made canonical here: reordering keys does not change what was trusted, and hashes
/// recorded before stay valid).
pub fn hooks_hash(section: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&map[k])))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    let text = serde_json::to_string(&sorted(section)).unwrap_or_default();
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// What trust covers, from the `hooks` sections (non-empty ones only) of a workspace's
/// `.rawko/config.json` and `.autoagent/config.json`: the first alone when the second has none,
/// so a trust recorded before rawko read AutoAgent's file still holds; else both, keyed by file.
pub fn combine(rawko: Option<&Value>, autoagent: Option<&Value>) -> Option<Value> {
    match autoagent {
        None => rawko.cloned(),
        Some(a) => Some(json!({
            ".autoagent/config.json": a,
            ".rawko/config.json": rawko.cloned().unwrap_or(Value::Null),
        })),
    }
}

/// What trust covers: the workspace's hooks sections (as [`combine`] joins them) and, when its
/// `.rawko/config.json` has settings that need trust, those settings as written (key values
/// included, so a changed key asks again; only the hash is recorded). A workspace whose files
/// have only hooks is covered by its hooks alone, so a trust recorded before rawko covered
/// settings still holds. A hooks section's keys are event names, so the object with `hooks` and
/// `settings` is never one.
pub fn cover(hooks: Option<&Value>, settings: Option<&Value>) -> Option<Value> {
    match settings {
        None => hooks.cloned(),
        Some(settings) => Some(json!({
            "hooks": hooks.cloned().unwrap_or(Value::Null),
            "settings": settings,
        })),
    }
}

/// The file trust is recorded in.
pub fn store_path(env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let non_empty = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let base =
        non_empty("XDG_CONFIG_HOME").or_else(|| non_empty("HOME").map(|h| h.join(".config")))?;
    Some(base.join("rawko").join("trusted-workspaces.json"))
}

fn key(workspace: &Path) -> String {
    std::fs::canonicalize(workspace)
        .unwrap_or_else(|_| workspace.to_path_buf())
        .display()
        .to_string()
}

fn read(store: &Path) -> Map<String, Value> {
    std::fs::read_to_string(store)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v.get("workspaces").and_then(Value::as_object).cloned())
        .unwrap_or_default()
}

fn write(store: &Path, workspaces: Map<String, Value>) -> io::Result<()> {
    if let Some(dir) = store.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let text = serde_json::to_string_pretty(&json!({"v": 1, "workspaces": workspaces}))
        .map_err(io::Error::other)?;
    let tmp = store.with_extension("json.tmp");
    std::fs::write(&tmp, text + "\n")?;
    std::fs::rename(&tmp, store)
}

/// Whether what trust covers in `workspace` (`section`, as
/// [`crate::config::workspace_trust_section`] or [`crate::config::Settings::trust_section`] read
/// it) is trusted.
pub fn check(store: Option<&Path>, workspace: &Path, section: Option<&Value>) -> Trust {
    let Some(section) = section else {
        return Trust::Nothing;
    };
    let Some(store) = store else {
        return Trust::Untrusted;
    };
    match read(store).get(&key(workspace)) {
        None => Trust::Untrusted,
        Some(entry) => {
            if entry.get("hooksHash").and_then(Value::as_str) == Some(hooks_hash(section).as_str())
            {
                Trust::Trusted
            } else {
                Trust::Changed
            }
        }
    }
}

/// Records that the user trusts `workspace` with `section` (see [`cover`]).
pub fn record(store: &Path, workspace: &Path, section: &Value) -> io::Result<()> {
    let mut all = read(store);
    all.insert(
        key(workspace),
        json!({"hooksHash": hooks_hash(section), "trustedAt": crate::clock::now_millis()}),
    );
    write(store, all)
}

/// Forgets the trust of `workspace`. Returns whether it was trusted.
pub fn revoke(store: &Path, workspace: &Path) -> io::Result<bool> {
    let mut all = read(store);
    let was = all.remove(&key(workspace)).is_some();
    if was {
        write(store, all)?;
    }
    Ok(was)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_follows_the_hash() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("t.json");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let a = json!({"Stop": [{"type": "command", "command": "a"}]});
        let b = json!({"Stop": [{"type": "command", "command": "b"}]});
        assert_eq!(check(Some(&store), &ws, None), Trust::Nothing);
        assert_eq!(check(Some(&store), &ws, Some(&a)), Trust::Untrusted);
        record(&store, &ws, &a).unwrap();
        assert_eq!(check(Some(&store), &ws, Some(&a)), Trust::Trusted);
        assert_eq!(check(Some(&store), &ws, Some(&b)), Trust::Changed);
        assert!(revoke(&store, &ws).unwrap());
        assert_eq!(check(Some(&store), &ws, Some(&a)), Trust::Untrusted);
        assert!(!revoke(&store, &ws).unwrap());
    }

    #[test]
    fn the_hash_does_not_depend_on_key_order() {
        let a: Value =
            serde_json::from_str(r#"{"b": 1, "a": {"y": [1, {"q": 2, "p": 3}], "x": true}}"#)
                .unwrap();
        let b: Value =
            serde_json::from_str(r#"{"a": {"x": true, "y": [1, {"p": 3, "q": 2}]}, "b": 1}"#)
                .unwrap();
        assert_eq!(hooks_hash(&a), hooks_hash(&b));
        // The hash of the sorted text, as rawko recorded it before key order was kept.
        let sorted = r#"{"a":{"x":true,"y":[1,{"p":3,"q":2}]},"b":1}"#;
        let digest = Sha256::digest(sorted.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hooks_hash(&a), format!("sha256:{hex}"));
    }
}

//! What the user's approval of an agent's permission request covers when the agent then sends
//! the call through rawko (`fs/write_text_file`, `terminal/create`): exactly the path approved,
//! normalised beneath the workspace, or exactly the command approved, run in the workspace; once.
//!
//! Only the user's approval counts. A permission request the phase allowed (no one was asked)
//! grants nothing: the write or terminal that follows is decided by the gate again, and a
//! terminal then runs with the access the phase gives Bash (read-only in a read-only phase), so a
//! writer the gate's reading of the command misses cannot ride on the permission.

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::provider::{Runner, ToolCall};

/// One approval, to be used once.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Grant {
    /// A file write of this path (absolute, normalised, beneath the workspace).
    Write(PathBuf),
    /// This command line, run in the workspace.
    Bash(String),
}

/// The approvals the user gave the agent's permission requests that rawko has not used yet.
#[derive(Debug, Default)]
pub(super) struct Grants {
    /// Permission requests (by call id) the user allowed past the gate, told by the task before
    /// the request is answered.
    by_user: HashSet<String>,
    open: Vec<Grant>,
}

impl Grants {
    /// The user allowed the call `id`, which the gate had blocked.
    pub(super) fn user_approved(&mut self, id: &str) {
        self.by_user.insert(id.to_owned());
    }

    /// The task allowed the agent's permission request `call`: what it covers is kept when the
    /// user approved it.
    pub(super) fn allowed(&mut self, call: &ToolCall, workspace: &Path) {
        if !self.by_user.remove(&call.id) {
            return;
        }
        let grant = match call.name.as_str() {
            "Bash" => call
                .input
                .get("command")
                .and_then(Value::as_str)
                .map(|c| Grant::Bash(c.to_owned())),
            "Write" | "Edit" | "MultiEdit" => ["file_path", "path"]
                .iter()
                .find_map(|k| call.input.get(*k).and_then(Value::as_str))
                .and_then(|p| beneath(workspace, Path::new(p)))
                .map(Grant::Write),
            _ => None,
        };
        self.open.extend(grant);
    }

    /// The task refused the call `id`: nothing is kept for it.
    pub(super) fn refused(&mut self, id: &str) {
        self.by_user.remove(id);
    }

    /// Who decides on the agent's `fs/write_text_file` of `path`: no one again when the user
    /// approved a write of exactly that path ([`Runner::RawkoApproved`]), else the gate.
    pub(super) fn write(&mut self, path: &Path, workspace: &Path) -> Runner {
        match beneath(workspace, path) {
            Some(path) => self.take(&Grant::Write(path)),
            None => Runner::Rawko,
        }
    }

    /// Who decides on the agent's terminal running `command` in `cwd` (the workspace when
    /// `None`): no one again when the user approved exactly that command, run in the workspace.
    pub(super) fn terminal(
        &mut self,
        command: &str,
        cwd: Option<&Path>,
        workspace: &Path,
    ) -> Runner {
        match cwd {
            Some(cwd) if beneath(workspace, cwd).as_deref() != Some(workspace) => Runner::Rawko,
            _ => self.take(&Grant::Bash(command.to_owned())),
        }
    }

    fn take(&mut self, grant: &Grant) -> Runner {
        match self.open.iter().position(|g| g == grant) {
            Some(i) => {
                self.open.remove(i);
                Runner::RawkoApproved
            }
            None => Runner::Rawko,
        }
    }
}

/// `path` made absolute against `workspace` and normalised (`.` dropped, `..` taken back), when
/// it is the workspace or beneath it. Lexical: a symlink is the file tools' business, which
/// resolve every path beneath the workspace themselves.
pub(super) fn beneath(workspace: &Path, path: &Path) -> Option<PathBuf> {
    let joined = workspace.join(path);
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out.starts_with(workspace).then_some(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(id: &str, name: &str, input: Value) -> ToolCall {
        ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            input,
        }
    }

    #[test]
    fn paths_are_normalised_beneath_the_workspace() {
        let ws = Path::new("/w/p");
        assert_eq!(
            beneath(ws, Path::new("a.txt")),
            Some(PathBuf::from("/w/p/a.txt"))
        );
        assert_eq!(
            beneath(ws, Path::new("./x/../a.txt")),
            Some(PathBuf::from("/w/p/a.txt"))
        );
        assert_eq!(
            beneath(ws, Path::new("/w/p/locked/a.txt")),
            Some(PathBuf::from("/w/p/locked/a.txt"))
        );
        assert_eq!(beneath(ws, Path::new("../p2/a.txt")), None);
        assert_eq!(beneath(ws, Path::new("/w/p2/a.txt")), None);
        assert_eq!(beneath(ws, Path::new("/etc/passwd")), None);
        assert_eq!(beneath(ws, Path::new(".")), Some(PathBuf::from("/w/p")));
    }

    #[test]
    fn an_approved_write_covers_its_path_only_and_once() {
        let ws = Path::new("/w/p");
        let mut g = Grants::default();
        g.user_approved("1");
        g.allowed(
            &call("1", "Write", json!({"file_path": "a.txt", "content": "x"})),
            ws,
        );
        assert_eq!(g.write(Path::new("/w/p/locked/a.txt"), ws), Runner::Rawko);
        assert_eq!(g.write(Path::new("/w/a.txt"), ws), Runner::Rawko);
        assert_eq!(
            g.write(Path::new("/w/p/./a.txt"), ws),
            Runner::RawkoApproved
        );
        assert_eq!(g.write(Path::new("/w/p/a.txt"), ws), Runner::Rawko);
    }

    #[test]
    fn only_the_users_approval_grants_anything() {
        let ws = Path::new("/w/p");
        let mut g = Grants::default();
        // The phase allowed it: no one was asked.
        g.allowed(
            &call("1", "Bash", json!({"command": "openssl rand -out f 4"})),
            ws,
        );
        assert_eq!(g.terminal("openssl rand -out f 4", None, ws), Runner::Rawko);
        g.user_approved("2");
        g.allowed(&call("2", "Bash", json!({"command": "touch f"})), ws);
        assert_eq!(g.terminal("touch f ", None, ws), Runner::Rawko);
        assert_eq!(
            g.terminal("touch f", Some(Path::new("/w/p/sub")), ws),
            Runner::Rawko
        );
        assert_eq!(
            g.terminal("touch f", Some(Path::new("/w/p/")), ws),
            Runner::RawkoApproved
        );
        // A refused request leaves nothing behind.
        g.user_approved("3");
        g.refused("3");
        g.allowed(&call("3", "Bash", json!({"command": "touch g"})), ws);
        assert_eq!(g.terminal("touch g", None, ws), Runner::Rawko);
    }
}

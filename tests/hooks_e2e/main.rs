//! Hooks end to end: real hook scripts (bash and python) configured in the user's and the
//! workspace's config, run by the real `rawko serve` while a scripted agent works, driven by the
//! fake editor of tests/support. Each hook writes what it was given to a ledger file, so the tests
//! check both what rawko told the hook and what it did with the answer.

#[path = "../support/mod.rs"]
mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use support::{is_note, Editor, Project, TIMEOUT};
use tempfile::TempDir;

mod claude_code_fields;
mod lifecycle;
mod sessions_and_faults;
mod tool_and_stop;

/// A home directory with the user's config (and hook scripts) in it.
struct Home {
    dir: TempDir,
}

impl Home {
    fn new() -> Self {
        Self {
            dir: TempDir::new().expect("temp home"),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes an executable script under `<home>/hooks/`; returns its path.
    fn script(&self, name: &str, body: &str) -> PathBuf {
        let path = self.path().join("hooks").join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, body).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// The user's `~/.config/rawko/config.json`.
    fn config(&self, value: Value) {
        let path = self.path().join(".config/rawko/config.json");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_string_pretty(&value).unwrap()).unwrap();
    }

    fn ledger(&self) -> PathBuf {
        self.path().join("ledger.jsonl")
    }

    /// Every JSON line the hooks wrote to the ledger.
    fn entries(&self) -> Vec<Value> {
        std::fs::read_to_string(self.ledger())
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("ledger line {l}: {e}")))
            .collect()
    }
}

/// A python hook that appends its stdin to the ledger, then runs `then` (python, with `data`).
fn python_hook(home: &Home, name: &str, then: &str) -> String {
    let ledger = home.ledger();
    let body = format!(
        "#!/usr/bin/env python3\nimport json, sys\ndata = json.load(sys.stdin)\nwith open({ledger:?}, 'a') as f:\n    f.write(json.dumps(data) + '\\n')\n{then}\n",
        ledger = ledger.display().to_string()
    );
    home.script(name, &body).display().to_string()
}

fn serve(project: &Project, home: &Home, options: Value) -> Editor {
    let mut ed = Editor::spawn_in(&project.ws, home.path());
    ed.initialize(options);
    ed
}

fn fast() -> Value {
    json!({"countdownTickMillis": 20, "approvalTimeoutSeconds": 10})
}

fn start(ed: &mut Editor, description: &str, workflow: Option<&str>, script: &str) -> String {
    let mut params = json!({"description": description, "provider": "scripted", "script": script});
    if let Some(w) = workflow {
        params["workflow"] = json!(w);
    }
    let result = ed
        .request("rawko/startTask", params)
        .unwrap_or_else(|e| panic!("rawko/startTask failed: {e}"));
    result["taskId"].as_str().unwrap().to_owned()
}

fn wait_finished(ed: &mut Editor, task: &str) -> Value {
    ed.wait_for("taskFinished", Duration::from_secs(30), |m| {
        is_note(m, "rawko/taskFinished", task)
    })["params"]
        .clone()
}

fn outputs(ed: &mut Editor, task: &str, kind: &str) -> Vec<String> {
    ed.notifications(task)
        .iter()
        .filter(|m| m["method"] == "rawko/output" && m["params"]["kind"] == kind)
        .map(|m| m["params"]["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn tool_results(ed: &mut Editor, task: &str) -> Vec<(String, bool)> {
    ed.notifications(task)
        .iter()
        .filter(|m| m["method"] == "rawko/output" && m["params"]["kind"] == "tool_result")
        .map(|m| {
            (
                m["params"]["text"].as_str().unwrap_or_default().to_owned(),
                m["params"]["isError"] == json!(true),
            )
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------

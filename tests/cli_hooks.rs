//! `rawko config`, `rawko trust`, `rawko sessions` and `rawko run` with hooks, as a user runs them:
//! the real binary, HOME and the XDG directories in a temporary directory, real git repositories
//! with a bare repository as the remote.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};
use tempfile::TempDir;

struct Sandbox {
    _tmp: TempDir,
    root: PathBuf,
}

impl Sandbox {
    fn new() -> Self {
        let tmp = TempDir::new().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join("project")).expect("mkdir");
        Sandbox { _tmp: tmp, root }
    }

    fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn user_config_file(&self) -> PathBuf {
        self.home().join(".config/rawko/config.json")
    }

    fn workspace_config_file(&self) -> PathBuf {
        self.project().join(".rawko/config.json")
    }

    /// AutoAgent's config in the workspace, read for its hooks.
    fn autoagent_config_file(&self) -> PathBuf {
        self.project().join(".autoagent/config.json")
    }

    fn sessions_dir(&self) -> PathBuf {
        self.home().join(".local/state/rawko/sessions")
    }

    fn trust_file(&self) -> PathBuf {
        self.home().join(".config/rawko/trusted-workspaces.json")
    }

    fn command(&self, args: &[&str]) -> Command {
        let home = self.home();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rawko"));
        cmd.args(args)
            .current_dir(self.project())
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("PI_CODING_AGENT_DIR", home.join(".pi"))
            // The git hooks commit as this user; no system or user git config is read.
            .env("GIT_AUTHOR_NAME", "Rawko Test")
            .env("GIT_AUTHOR_EMAIL", "rawko-test@example.invalid")
            .env("GIT_COMMITTER_NAME", "Rawko Test")
            .env("GIT_COMMITTER_EMAIL", "rawko-test@example.invalid")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("RUST_LOG")
            .env_remove("RAWKO_LOG")
            // Not a terminal: rawko cannot ask, and says so.
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("run rawko")
    }

    /// Runs rawko, expects exit 0, returns stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}:\n{}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn ok_json(&self, args: &[&str]) -> Value {
        let stdout = self.ok(args);
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{args:?}: {e}:\n{stdout}"))
    }

    fn write(&self, path: &Path, content: &str) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }

    fn write_json(&self, path: &Path, value: &Value) {
        self.write(path, &serde_json::to_string_pretty(value).expect("json"));
    }

    /// A script of model turns outside the project (so a commit does not pick it up).
    fn script(&self, name: &str, yaml: &str) -> String {
        let path = self.root.join(format!("{name}.yaml"));
        self.write(&path, yaml);
        path.display().to_string()
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}:\n{text}", path.display()))
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The project as a git repository on `main` with one commit, and a bare `origin` that has it.
fn git_project(sb: &Sandbox) -> PathBuf {
    let bare = sb.root.join("remote.git");
    std::fs::create_dir_all(&bare).expect("mkdir");
    git(&bare, &["init", "-q", "--bare", "-b", "main"]);
    let p = sb.project();
    git(&p, &["init", "-q", "-b", "main"]);
    git(&p, &["config", "user.name", "Rawko Test"]);
    git(&p, &["config", "user.email", "rawko-test@example.invalid"]);
    git(&p, &["config", "commit.gpgsign", "false"]);
    sb.write(&p.join("README.md"), "# a project\n");
    git(&p, &["add", "-A"]);
    git(&p, &["commit", "-q", "-m", "initial"]);
    git(
        &p,
        &["remote", "add", "origin", bare.to_str().expect("utf-8")],
    );
    git(&p, &["push", "-q", "origin", "main"]);
    bare
}

const DONE: &str = "turns:\n  - text: \"All done.\"\n";

const WRITE_THEN_DONE: &str = r#"
turns:
  - tool_calls:
      - {name: Write, input: {path: greet.txt, content: "hello\n"}}
  - text: "Wrote the greeting."
"#;

// --- rawko config -----------------------------------------------------------------------------

#[test]
fn config_show_lists_both_shapes_with_where_each_hook_comes_from() {
    let sb = Sandbox::new();
    let shown = sb.ok(&["config", "show"]);
    assert!(
        shown.contains(
            "Hooks: none (`rawko config set-auto-commit true` adds a git commit after each task)"
        ),
        "{shown}"
    );
    let empty = sb.ok_json(&["config", "show", "--json"]);
    assert_eq!(empty["hooks"], json!([]));
    assert_eq!(
        empty["files"],
        json!([
            {"path": sb.user_config_file().display().to_string(), "exists": false},
            {"path": sb.autoagent_config_file().display().to_string(), "exists": false},
            {"path": sb.workspace_config_file().display().to_string(), "exists": false},
        ])
    );

    // AutoAgent's shape in the user's file (timeout in ms), Claude Code's in the workspace's (s).
    sb.write_json(
        &sb.user_config_file(),
        &json!({"maxReminders": 4, "hooks": {
            "PreExecutionStart": [{"type": "command", "command": "./pre.sh", "timeout": 1500}],
            "PostExecutionEnd": [{"type": "git-commit", "message": "done {{taskId}}", "noVerify": true}, {"type": "git-push", "remote": "up"}]
        }}),
    );
    sb.write_json(
        &sb.workspace_config_file(),
        &json!({"hooks": {
            "PreToolUse": [{"matcher": "Bash|Write", "hooks": [{"type": "command", "command": "./guard.sh", "timeout": 5, "failClosed": true}]}]
        }}),
    );
    let shown = sb.ok(&["config", "show"]);
    for line in [
        "  maxReminders            4",
        "Hooks, in the order they run:",
        "  PreExecutionStart: ./pre.sh  (user)",
        "  PostExecutionEnd: git-commit \"done {{taskId}}\" --no-verify  (user)",
        "  PostExecutionEnd: git-push to up  (user)",
        "  PreToolUse [Bash|Write]: ./guard.sh  (workspace, not trusted: does not run (`rawko trust`))",
    ] {
        assert!(
            shown.lines().any(|l| l == line),
            "missing line {line:?}:\n{shown}"
        );
    }
    let json = sb.ok_json(&["config", "show", "--json"]);
    assert_eq!(json["maxReminders"], json!(4));
    let hooks = json["hooks"].as_array().expect("hooks");
    assert_eq!(hooks.len(), 4, "{json:#}");
    let of = |hook: &str| {
        hooks
            .iter()
            .find(|h| h["hook"] == hook)
            .unwrap_or_else(|| panic!("no {hook} in {json:#}"))
            .clone()
    };
    assert_eq!(
        of("PreExecutionStart: ./pre.sh"),
        json!({"event": "PreExecutionStart", "hook": "PreExecutionStart: ./pre.sh", "source": "user", "runs": true, "timeoutSeconds": 1.5, "failClosed": false})
    );
    assert_eq!(
        of("PreToolUse [Bash|Write]: ./guard.sh"),
        json!({"event": "PreToolUse", "hook": "PreToolUse [Bash|Write]: ./guard.sh", "source": "workspace", "runs": false, "timeoutSeconds": 5.0, "failClosed": true})
    );
    assert_eq!(
        of("PostExecutionEnd: git-push to up")["timeoutSeconds"],
        60.0
    );

    // Trusted, the workspace's hook runs.
    sb.ok(&["trust"]);
    let shown = sb.ok(&["config", "show"]);
    assert!(
        shown
            .lines()
            .any(|l| l == "  PreToolUse [Bash|Write]: ./guard.sh  (workspace)"),
        "{shown}"
    );
    let json = sb.ok_json(&["config", "show", "--json"]);
    assert!(
        json["hooks"]
            .as_array()
            .expect("hooks")
            .iter()
            .all(|h| h["runs"] == true),
        "{json:#}"
    );

    // A hook rawko cannot use is left out and reported; the exit status says so.
    sb.write_json(
        &sb.workspace_config_file(),
        &json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "http", "url": "http://x"}]}], "Nope": []}}),
    );
    let out = sb.run(&["config", "show"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains(
            "hooks.PreToolUse[0].hooks[0]: hooks of type \"http\" are not supported by rawko"
        ),
        "{shown}"
    );
    assert!(shown.contains("hooks.Nope: no such event"), "{shown}");
    let json = sb.ok_json(&["config", "show", "--json"]);
    assert_eq!(
        json["problems"].as_array().map(Vec::len),
        Some(2),
        "{json:#}"
    );
}

/// AutoAgent's documented `.autoagent/config.json` (its hooks design, as published), unchanged.
const AUTOAGENT_DOCUMENTED_CONFIG: &str = r#"{
  "providers": ["claude", "gemini"],
  "failoverDelay": 5000,
  "retryAttempts": 3,
  "maxTokens": 100000,
  "rateLimitCooldown": 3600000,
  "gitAutoCommit": false,
  "logLevel": "info",
  "hooks": {
    "PreExecutionStart": [
      {
        "type": "command",
        "command": "echo 'About to start issue {{issueNumber}}: {{issueTitle}}' >> ~/.autoagent/execution.log"
      }
    ],
    "PostExecutionStart": [
      {
        "type": "command",
        "command": "bash .autoagent/hooks/track-execution-start.sh"
      }
    ],
    "PreExecutionEnd": [
      {
        "type": "command",
        "command": "bash .autoagent/hooks/validate-execution.sh",
        "blocking": true,
        "timeout": 60000
      }
    ],
    "PostExecutionEnd": [
      {
        "type": "command",
        "command": "bash .autoagent/hooks/notify-completion.sh"
      },
      {
        "type": "git-commit",
        "message": "Complete issue #{{issueNumber}}: {{issueTitle}}"
      }
    ]
  }
}"#;

#[test]
fn autoagents_documented_config_is_read_unchanged() {
    let sb = Sandbox::new();
    let ws = sb.project().display().to_string();
    sb.write(&sb.autoagent_config_file(), AUTOAGENT_DOCUMENTED_CONFIG);

    // `config show` lists its hooks, says once that AutoAgent's settings are not rawko's, exits 0.
    let out = sb.run(&["config", "show"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    let untrusted = "(workspace, not trusted: does not run (`rawko trust`))";
    let expected = [
        "PreExecutionStart: echo 'About to start issue {{issueNumber}}: {{issueTitle}}' >> ~/.autoagent/execution.log",
        "PostExecutionStart: bash .autoagent/hooks/track-execution-start.sh",
        "PreExecutionEnd: bash .autoagent/hooks/validate-execution.sh",
        "PostExecutionEnd: bash .autoagent/hooks/notify-completion.sh",
        "PostExecutionEnd: git-commit \"Complete issue #{{issueNumber}}: {{issueTitle}}\"",
    ];
    for hook in expected {
        let line = format!("  {hook}  {untrusted}");
        assert!(shown.lines().any(|l| l == line), "no {line:?}:\n{shown}");
    }
    assert!(
        shown.contains(&format!(
            "  {ws}/.autoagent/config.json (AutoAgent's: only its hooks are read)\n"
        )),
        "{shown}"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let notes: Vec<&str> = stderr.lines().filter(|l| l.starts_with("note: ")).collect();
    assert_eq!(notes.len(), 1, "{stderr}");
    assert!(
        notes[0].contains("providers") && notes[0].contains("failoverDelay"),
        "{stderr}"
    );
    assert!(!stderr.contains("warning"), "{stderr}");
    let json = sb.ok_json(&["config", "show", "--json"]);
    assert_eq!(json["problems"], json!([]), "{json:#}");
    assert_eq!(json["notes"].as_array().map(Vec::len), Some(1), "{json:#}");
    assert_eq!(
        json["providers"],
        json!([]),
        "AutoAgent's provider names are not rawko's"
    );
    assert_eq!(json["hooks"].as_array().map(Vec::len), Some(5), "{json:#}");

    // A hook written the same way in rawko's own file runs once; AutoAgent's file comes first.
    sb.write_json(
        &sb.workspace_config_file(),
        &json!({"hooks": {
            "PreExecutionStart": [{"type": "command", "command": "echo 'About to start issue {{issueNumber}}: {{issueTitle}}' >> ~/.autoagent/execution.log"}],
            "PostExecutionEnd": [{"type": "command", "command": "echo rawko ran >> ledger.txt"}]
        }}),
    );
    let shown = sb.ok(&["config", "show"]);
    let hooks: Vec<&str> = shown
        .lines()
        .skip_while(|l| *l != "Hooks, in the order they run:")
        .skip(1)
        .collect();
    assert_eq!(hooks.len(), 6, "{shown}");
    let of = |event: &str| -> Vec<&str> {
        hooks
            .iter()
            .copied()
            .filter(|l| l.starts_with(&format!("  {event}: ")))
            .collect()
    };
    assert_eq!(of("PreExecutionStart").len(), 1, "{shown}");
    let end = of("PostExecutionEnd");
    assert!(
        end.len() == 3 && end[0].contains("notify-completion") && end[2].contains("rawko ran"),
        "{shown}"
    );

    // Trust covers both files.
    let said = sb.ok(&["trust"]);
    assert!(
        said.ends_with(&format!(
            "If the hooks in {ws}/.autoagent/config.json and {ws}/.rawko/config.json change, rawko asks again.\n"
        )),
        "{said}"
    );

    // A run runs them: the documented scripts, the echo once, the commit (not a git repository).
    for (name, what) in [
        ("track-execution-start.sh", "started"),
        ("validate-execution.sh", "validated"),
        ("notify-completion.sh", "notified"),
    ] {
        sb.write(
            &sb.project().join(".autoagent/hooks").join(name),
            &format!("echo {what} >> ledger.txt\n"),
        );
    }
    std::fs::create_dir_all(sb.home().join(".autoagent")).unwrap();
    let script = sb.script("done", DONE);
    let out = sb.run(&["run", "Add auth (it's \"urgent\")", "--script", &script]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    let log = std::fs::read_to_string(sb.home().join(".autoagent/execution.log")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert!(
        lines[0].starts_with("About to start issue task-")
            && lines[0].ends_with(": Add auth (it's \"urgent\")"),
        "{log}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.project().join("ledger.txt")).unwrap(),
        "started\nvalidated\nnotified\nrawko ran\n"
    );
    assert!(shown.contains("is not a git repository"), "{shown}");

    // A change in AutoAgent's file needs trust again.
    let changed = AUTOAGENT_DOCUMENTED_CONFIG.replace("notify-completion", "notify-others");
    sb.write(&sb.autoagent_config_file(), &changed);
    let out = sb.run(&["run", "Again", "--script", &script]);
    let shown = text(&out);
    assert!(
        shown.contains(&format!(
            "note: the hooks in {ws}/.autoagent/config.json and {ws}/.rawko/config.json do not run: they changed since you trusted this workspace"
        )),
        "{shown}"
    );
    assert_eq!(
        log,
        std::fs::read_to_string(sb.home().join(".autoagent/execution.log")).unwrap()
    );
}

#[test]
fn config_set_commands_edit_the_hooks_as_autoagent_does() {
    let sb = Sandbox::new();
    let ws = sb.workspace_config_file();
    let at = ws.display().to_string();
    sb.write_json(&ws, &json!({"maxReminders": 3}));

    let said = sb.ok(&["config", "set-auto-push", "true"]);
    assert_eq!(
        said,
        format!("{at}: added a git-push hook to PostExecutionEnd\n")
    );
    let said = sb.ok(&["config", "set-auto-commit", "TRUE"]);
    assert_eq!(
        said,
        format!("{at}: added a git-commit hook to PostExecutionEnd\n")
    );
    // The commit goes before the push, whatever the order they were turned on in.
    assert_eq!(
        read_json(&ws),
        json!({"maxReminders": 3, "hooks": {"PostExecutionEnd": [
            {"type": "git-commit", "message": "rawko: {{taskDescription}}"},
            {"type": "git-push", "remote": "origin"}
        ]}})
    );
    let said = sb.ok(&["config", "set-auto-commit", "true"]);
    assert_eq!(
        said,
        format!("{at}: a git-commit hook is already in PostExecutionEnd; nothing changed\n")
    );
    let said = sb.ok(&["config", "set-git-no-verify", "true"]);
    assert_eq!(said, format!("{at}: set noVerify on 1 git-commit hook\n"));
    let said = sb.ok(&["config", "set-push-remote", "upstream"]);
    assert_eq!(
        said,
        format!("{at}: pushes go to upstream (1 git-push hook)\n")
    );
    assert_eq!(
        read_json(&ws)["hooks"]["PostExecutionEnd"],
        json!([
            {"type": "git-commit", "message": "rawko: {{taskDescription}}", "noVerify": true},
            {"type": "git-push", "remote": "upstream"}
        ])
    );
    // The workspace had no hooks, so the user's own edit leaves it trusted: the hooks run.
    let shown = sb.ok(&["config", "show"]);
    for line in [
        "  PostExecutionEnd: git-commit \"rawko: {{taskDescription}}\" --no-verify  (workspace)",
        "  PostExecutionEnd: git-push to upstream  (workspace)",
    ] {
        assert!(
            shown.lines().any(|l| l == line),
            "missing {line:?}:\n{shown}"
        );
    }
    let said = sb.ok(&["config", "set-git-no-verify", "false"]);
    assert_eq!(
        said,
        format!("{at}: cleared noVerify on 1 git-commit hook\n")
    );
    assert_eq!(
        read_json(&ws)["hooks"]["PostExecutionEnd"][0]["noVerify"],
        json!(false)
    );

    // Turned off, the hooks go, and so does the empty section; the other keys stay.
    let said = sb.ok(&["config", "set-auto-push", "false"]);
    assert_eq!(said, format!("{at}: removed 1 git-push hook\n"));
    let said = sb.ok(&["config", "set-auto-commit", "False"]);
    assert_eq!(said, format!("{at}: removed 1 git-commit hook\n"));
    assert_eq!(read_json(&ws), json!({"maxReminders": 3}));
    let said = sb.ok(&["config", "set-auto-commit", "false"]);
    assert_eq!(
        said,
        format!("{at}: there was no git-commit hook; nothing changed\n")
    );
    let said = sb.ok(&["config", "set-git-no-verify", "true"]);
    assert_eq!(
        said,
        format!("{at}: there is no git-commit hook to change (rawko config set-auto-commit true adds one)\n")
    );

    // --global edits the user's file.
    let user = sb.user_config_file();
    let said = sb.ok(&["config", "set-auto-commit", "true", "--global"]);
    assert_eq!(
        said,
        format!(
            "{}: added a git-commit hook to PostExecutionEnd\n",
            user.display()
        )
    );
    sb.ok(&["config", "set-auto-push", "true", "-g"]);
    sb.ok(&["config", "set-push-remote", "mirror", "--global"]);
    assert_eq!(
        read_json(&user),
        json!({"hooks": {"PostExecutionEnd": [
            {"type": "git-commit", "message": "rawko: {{taskDescription}}"},
            {"type": "git-push", "remote": "mirror"}
        ]}})
    );
    assert_eq!(read_json(&ws), json!({"maxReminders": 3}));
    let json = sb.ok_json(&["config", "show", "--json"]);
    let sources: Vec<(&str, &str)> = json["hooks"]
        .as_array()
        .expect("hooks")
        .iter()
        .map(|h| (h["hook"].as_str().unwrap(), h["source"].as_str().unwrap()))
        .collect();
    assert_eq!(
        sources,
        vec![
            (
                "PostExecutionEnd: git-commit \"rawko: {{taskDescription}}\"",
                "user"
            ),
            ("PostExecutionEnd: git-push to mirror", "user"),
        ]
    );
}

#[test]
fn a_value_that_is_not_true_or_false_is_refused() {
    let sb = Sandbox::new();
    for args in [
        &["config", "set-auto-commit", "maybe"][..],
        &["config", "set-auto-push", "yes"][..],
        &["config", "set-git-no-verify", "1", "--global"][..],
    ] {
        let out = sb.run(args);
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {shown}");
        assert!(
            shown.contains(&format!("expected true or false, found \"{}\"", args[2])),
            "{args:?}: {shown}"
        );
    }
    assert!(!sb.workspace_config_file().exists());
    assert!(!sb.user_config_file().exists());
}

#[test]
fn a_broken_config_file_or_a_bad_remote_changes_nothing() {
    let sb = Sandbox::new();
    let ws = sb.workspace_config_file();

    // Not a remote name: refused before any file is read.
    for bad in ["two words", ""] {
        let out = sb.run(&["config", "set-push-remote", bad]);
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(2), "{shown}");
        assert!(
            shown.contains(&format!("error: \"{bad}\" is not a remote name")),
            "{shown}"
        );
    }
    // Nothing to change: no file is created.
    let said = sb.ok(&["config", "set-push-remote", "upstream"]);
    assert_eq!(
        said,
        format!(
            "{}: there is no git-push hook to change (rawko config set-auto-push true adds one)\n",
            ws.display()
        )
    );
    assert!(!ws.exists(), "a file was written for nothing");

    let broken = "{\"hooks\": {\"PostExecutionEnd\": [{\"type\": \"git-push\"}]\n";
    sb.write(&ws, broken);
    let out = sb.run(&["config", "set-push-remote", "upstream"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains(&format!("error: {} is not valid JSON (", ws.display())),
        "{shown}"
    );
    assert!(
        shown.contains("); fix it first, nothing was changed"),
        "{shown}"
    );
    assert_eq!(std::fs::read_to_string(&ws).unwrap(), broken);
    // `config show` reports the file and goes on with the rest.
    let out = sb.run(&["config", "show"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains(&format!("warning: {}: invalid JSON", ws.display())),
        "{}",
        text(&out)
    );

    for (content, needle) in [
        ("[1, 2]\n", "must hold a JSON object"),
        (
            "{\"hooks\": 3}\n",
            "\"hooks\" in FILE is not an object; fix it first, nothing was changed",
        ),
    ] {
        sb.write(&ws, content);
        let out = sb.run(&["config", "set-push-remote", "upstream"]);
        let shown = text(&out);
        assert_eq!(out.status.code(), Some(1), "{shown}");
        let needle = needle.replace("FILE", &ws.display().to_string());
        assert!(shown.contains(&needle), "missing {needle:?}: {shown}");
        assert_eq!(std::fs::read_to_string(&ws).unwrap(), content);
    }
}

// --- rawko trust ------------------------------------------------------------------------------

#[test]
fn trust_records_the_hooks_hash_and_revoke_forgets_it() {
    let sb = Sandbox::new();
    let ws = sb.project().display().to_string();
    let file = sb.workspace_config_file().display().to_string();

    let said = sb.ok(&["trust"]);
    assert_eq!(
        said,
        format!("{file} defines no hooks; there is nothing to trust.\n")
    );
    assert_eq!(
        sb.ok_json(&["trust", "--json"]),
        json!({"workspace": ws, "trusted": false, "hooks": []})
    );
    assert!(!sb.trust_file().exists());

    sb.write_json(
        &sb.workspace_config_file(),
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}], "Stop": [{"type": "command", "command": "echo bye"}]}}),
    );
    let said = sb.ok(&["trust"]);
    assert_eq!(
        said,
        format!(
            "Trusted {ws}. These hooks will run:\n  PreToolUse [Bash]: ./guard.sh\n  Stop: echo bye\nIf the hooks in {file} change, rawko asks again.\n"
        )
    );
    let store = read_json(&sb.trust_file());
    let entry = &store["workspaces"][&ws];
    assert_eq!(store["v"], json!(1));
    let hash = entry["hooksHash"].as_str().expect("hooksHash");
    assert!(
        hash.starts_with("sha256:") && hash.len() == "sha256:".len() + 64,
        "{hash}"
    );
    assert!(entry["trustedAt"].as_i64().is_some(), "{store:#}");

    let said = sb.ok(&["trust"]);
    assert!(
        said.starts_with(&format!("Trusted {ws} (it already was).")),
        "{said}"
    );
    let json = sb.ok_json(&["trust", "--json"]);
    assert_eq!(
        json,
        json!({"workspace": ws, "trusted": true, "hooksHash": hash, "hooks": ["PreToolUse [Bash]: ./guard.sh", "Stop: echo bye"]})
    );

    // Reformatting the file is not a change; a different hook is.
    let same = serde_json::to_string(&read_json(&sb.workspace_config_file())).unwrap();
    sb.write(&sb.workspace_config_file(), &same);
    assert!(sb.ok(&["trust"]).contains("(it already was)"));
    sb.write_json(
        &sb.workspace_config_file(),
        &json!({"hooks": {"Stop": [{"type": "command", "command": "echo changed"}]}}),
    );
    assert!(sb.ok(&["config", "show"]).contains(
        "  Stop: echo changed  (workspace, changed since trusted: does not run (`rawko trust`))"
    ));
    let said = sb.ok(&["trust"]);
    assert!(
        said.starts_with(&format!(
            "Trusted {ws} again (its hooks changed). These hooks will run:\n  Stop: echo changed\n"
        )),
        "{said}"
    );
    assert_ne!(
        read_json(&sb.trust_file())["workspaces"][&ws]["hooksHash"],
        json!(hash)
    );

    let said = sb.ok(&["trust", "--revoke"]);
    assert_eq!(
        said,
        format!("{ws} is no longer trusted: its hooks will not run until you trust it again.\n")
    );
    assert_eq!(read_json(&sb.trust_file())["workspaces"], json!({}));
    assert_eq!(
        sb.ok(&["trust", "--revoke"]),
        format!("{ws} was not trusted.\n")
    );
    assert_eq!(
        sb.ok_json(&["trust", "--revoke", "--json"]),
        json!({"workspace": ws, "trusted": false, "wasTrusted": false})
    );
    assert!(sb
        .ok(&["config", "show"])
        .contains("  Stop: echo changed  (workspace, not trusted: does not run (`rawko trust`))"));
}

// --- rawko sessions ---------------------------------------------------------------------------

#[test]
fn sessions_are_listed_and_shown_in_text_and_json() {
    let sb = Sandbox::new();
    assert_eq!(
        sb.ok(&["sessions", "list"]),
        "No sessions in this workspace yet. Each `rawko serve` or `rawko run` is one.\n"
    );
    assert_eq!(
        sb.ok(&["sessions", "list", "--all"]),
        "No sessions yet. Each `rawko serve` or `rawko run` is one.\n"
    );
    assert_eq!(sb.ok_json(&["sessions", "list", "--json"]), json!([]));
    let out = sb.run(&["sessions", "show"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("error: there is no current session yet"),
        "{}",
        text(&out)
    );

    let done = sb.script("done", DONE);
    sb.ok(&["run", "First task", "--script", &done]);
    let failing = sb.script("failing", "turns:\n  - error: authentication_failed\n");
    let out = sb.run(&["run", "Second task", "--script", &failing]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // A session of another workspace.
    let other = sb.root.join("other");
    std::fs::create_dir_all(&other).expect("mkdir");
    sb.ok(&[
        "run",
        "Elsewhere",
        "--script",
        &done,
        "--workspace",
        other.to_str().unwrap(),
    ]);

    let list = sb.ok_json(&["sessions", "list", "--json"]);
    let list = list.as_array().expect("a list");
    assert_eq!(list.len(), 2, "{list:#?}");
    let (second, first) = (&list[0], &list[1]);
    let ws = sb.project().display().to_string();
    for s in [first, second] {
        assert_eq!(s["command"], "run");
        assert_eq!(s["workspace"], json!(ws));
        assert_eq!(s["provider"], "scripted");
        assert_eq!(s["currentTask"], Value::Null);
        assert!(s["endTime"].as_i64() >= s["startTime"].as_i64(), "{s:#}");
        let id = s["id"].as_str().expect("id");
        let (ms, random) = id.split_once('-').expect("<ms>-<random>");
        assert_eq!(ms, s["startTime"].as_i64().unwrap().to_string());
        assert!(
            random.len() == 16 && random.chars().all(|c| c.is_ascii_hexdigit()),
            "{id}"
        );
        // Not a git repository.
        assert_eq!(s["metadata"]["gitBranch"], Value::Null);
    }
    assert_eq!(first["status"], "completed");
    assert_eq!(
        first["tasks"],
        json!({"planned": 1, "completed": 1, "failed": 0, "cancelled": 0})
    );
    assert_eq!(
        first["args"],
        json!(["run", "First task", "--script", done])
    );
    assert_eq!(second["status"], "failed");
    assert_eq!(
        second["tasks"],
        json!({"planned": 1, "completed": 0, "failed": 1, "cancelled": 0})
    );
    let all = sb.ok_json(&["sessions", "list", "--all", "--json"]);
    assert_eq!(all.as_array().map(Vec::len), Some(3));
    assert_eq!(all[0]["workspace"], json!(other.display().to_string()));

    let table = sb.ok(&["sessions", "list"]);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        header,
        ["ID", "STATUS", "COMMAND", "STARTED", "TOOK", "TASKS"]
    );
    for (line, s, tasks) in [
        (lines[1], second, "0 done, 1 failed of 1"),
        (lines[2], first, "1 done, 0 failed of 1"),
    ] {
        assert!(line.starts_with(s["id"].as_str().unwrap()), "{line}");
        assert!(
            line.contains(&format!("  {}  ", s["status"].as_str().unwrap())),
            "{line}"
        );
        assert!(line.contains("  run  "), "{line}");
        assert!(line.ends_with(tasks), "{line}");
    }

    // The files: one per session, and `current` pointing at the newest.
    let dir = sb.home().join(".local/state/rawko/sessions");
    assert_eq!(dir, sb.sessions_dir());
    let current = std::fs::read_link(dir.join("current")).expect("the current symlink");
    assert_eq!(
        current,
        PathBuf::from(format!("session-{}.json", all[0]["id"].as_str().unwrap()))
    );
    for s in all.as_array().unwrap() {
        let file = dir.join(format!("session-{}.json", s["id"].as_str().unwrap()));
        assert_eq!(&read_json(&file), s);
    }

    // `show` takes an id, a start of one, or `current` (the default).
    let id = first["id"].as_str().unwrap();
    let shown = sb.ok(&["sessions", "show", &id[..id.len() - 4]]);
    let expected_start = format!(
        "session {id}\n  status     completed\n  command    rawko run 'First task' --script {done}\n  workspace  {ws}\n  started    "
    );
    assert!(shown.starts_with(&expected_start), "{shown}");
    for line in [
        "  tasks      1 planned, 1 complete, 0 failed, 0 cancelled",
        "  provider   scripted",
    ] {
        assert!(
            shown.lines().any(|l| l == line),
            "missing {line:?}:\n{shown}"
        );
    }
    assert!(shown.contains("\n  ended      "), "{shown}");
    assert_eq!(
        sb.ok_json(&["sessions", "show", &format!("session-{id}.json"), "--json"]),
        *first
    );
    assert_eq!(sb.ok_json(&["sessions", "show", "--json"]), all[0]);
    let out = sb.run(&["sessions", "show", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("error: no session nope; `rawko sessions list` shows the sessions"),
        "{}",
        text(&out)
    );
}

// --- rawko run with hooks ---------------------------------------------------------------------

#[test]
fn run_commits_and_pushes_with_the_users_git_hooks() {
    let sb = Sandbox::new();
    let bare = git_project(&sb);
    let stop_file = sb.root.join("stop.json");
    sb.write_json(
        &sb.user_config_file(),
        &json!({"hooks": {
            "PostExecutionEnd": [
                {"type": "git-commit", "message": "rawko: {{taskDescription}}"},
                {"type": "git-push"}
            ],
            // AutoAgent's Stop: the session ends.
            "Stop": [{"type": "command", "command": format!("cat > {}; echo session {{{{sessionId}}}} ended", stop_file.display())}]
        }}),
    );
    let script = sb.script("write", WRITE_THEN_DONE);
    let out = sb.run(&["run", "Add a greeting", "--script", &script, "--yes"]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");

    // The remote has the commit, with the rendered message and the agent's file.
    assert_eq!(
        git(&bare, &["log", "--format=%s", "main"]),
        "rawko: Add a greeting\ninitial"
    );
    assert_eq!(git(&bare, &["show", "main:greet.txt"]), "hello");
    let project = sb.project();
    assert_eq!(
        git(&project, &["rev-parse", "--abbrev-ref", "@{upstream}"]),
        "origin/main"
    );
    assert_eq!(git(&project, &["status", "--porcelain"]), "");
    let short = git(&project, &["rev-parse", "--short", "HEAD"]);

    // The hooks' lines, in order.
    let commit_line = format!("  🪝 Committed 1 file as {short}: rawko: Add a greeting");
    let push_line = "  🪝 Pushed main to origin";
    let stdout = String::from_utf8_lossy(&out.stdout);
    let at = |needle: &str| {
        stdout
            .find(needle)
            .unwrap_or_else(|| panic!("missing {needle:?}:\n{shown}"))
    };
    assert!(at(&commit_line) < at(push_line), "{shown}");

    // The session: completed, with the task counted; the Stop hook saw it end.
    let session = sb.ok_json(&["sessions", "show", "--json"]);
    assert_eq!(session["status"], "completed", "{session:#}");
    assert_eq!(
        session["tasks"],
        json!({"planned": 1, "completed": 1, "failed": 0, "cancelled": 0})
    );
    assert_eq!(session["metadata"]["gitBranch"], "main");
    let id = session["id"].as_str().expect("id");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("  🪝 Stop hook `cat > ")
                && l.ends_with(&format!(": session {id} ended"))),
        "{shown}"
    );
    assert!(at(push_line) < at(&format!("session {id} ended")));
    let stop = read_json(&stop_file);
    assert_eq!(stop["eventName"], "Stop");
    assert_eq!(stop["reason"], "completed");
    assert_eq!(stop["sessionId"], json!(id));
    assert_eq!(stop["tasksCompleted"], json!(1));
    assert_eq!(stop["tasksFailed"], json!(0));
    assert_eq!(stop["workspace"], json!(project.display().to_string()));
}

/// At the terminal: quiet JSON answers print nothing, and a hook that cannot run is one line for
/// the task (not one per call, and not once more as the status's reason).
#[test]
fn run_shows_a_broken_hook_once_and_quiet_answers_not_at_all() {
    let sb = Sandbox::new();
    sb.write_json(
        &sb.user_config_file(),
        &json!({"hooks": {"PreToolUse": [{"hooks": [
            {"type": "command", "command": "echo '{\"continue\": true}'"},
            {"type": "command", "command": "./no-such-guard.sh"}
        ]}]}}),
    );
    let script = sb.script(
        "three",
        "turns:\n  - tool_calls:\n      - {name: Bash, input: {command: \"echo one\"}}\n      - {name: Bash, input: {command: \"echo two\"}}\n  - tool_calls:\n      - {name: Bash, input: {command: \"echo three\"}}\n  - text: done\n",
    );
    let out = sb.run(&["run", "Do it", "--script", &script]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert_eq!(
        shown.matches("hook configuration error").count(),
        1,
        "{shown}"
    );
    assert!(!shown.contains("🪝"), "{shown}");
    assert_eq!(shown.matches("↳ three").count(), 1, "{shown}");
}

#[test]
fn without_a_terminal_untrusted_workspace_hooks_do_not_run_and_rawko_says_how_to_trust() {
    let sb = Sandbox::new();
    sb.write_json(
        &sb.workspace_config_file(),
        &json!({"hooks": {"PreExecutionStart": [{"type": "command", "command": "echo ran >> ran.txt; echo workspace hook ran"}]}}),
    );
    let script = sb.script("done", DONE);
    let ran = sb.project().join("ran.txt");
    let note = format!(
        "note: the hooks in {}/.rawko/config.json do not run: this workspace is not trusted (`rawko trust` trusts it)",
        sb.project().display()
    );

    let out = sb.run(&["run", "Do it", "--script", &script]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(&note),
        "{shown}"
    );
    assert!(!ran.exists(), "an untrusted hook ran:\n{shown}");
    assert!(!shown.contains("workspace hook ran"), "{shown}");

    // Trusted, it runs, and there is no note.
    sb.ok(&["trust"]);
    let out = sb.run(&["run", "Do it", "--script", &script]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(!shown.contains("note: the hooks in"), "{shown}");
    assert!(
        shown.contains(
            "  🪝 PreExecutionStart hook `echo ran >> ran.txt; echo workspace hook ran`: workspace hook ran"
        ),
        "{shown}"
    );
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "ran\n");

    // Changed since: they do not run again until trusted again.
    sb.write_json(
        &sb.workspace_config_file(),
        &json!({"hooks": {"PreExecutionStart": [{"type": "command", "command": "echo changed >> ran.txt"}]}}),
    );
    let out = sb.run(&["run", "Do it", "--script", &script]);
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        shown.contains(&format!(
            "note: the hooks in {}/.rawko/config.json do not run: they changed since you trusted this workspace (`rawko trust` trusts it)",
            sb.project().display()
        )),
        "{shown}"
    );
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "ran\n");

    // The user's own hooks run in any case.
    sb.write_json(
        &sb.user_config_file(),
        &json!({"hooks": {"PreExecutionStart": [{"type": "command", "command": "echo user hook ran"}]}}),
    );
    let out = sb.run(&["run", "Do it", "--script", &script]);
    let shown = text(&out);
    assert!(shown.contains("they changed since you trusted"), "{shown}");
    assert!(
        shown.contains("  🪝 PreExecutionStart hook `echo user hook ran`: user hook ran"),
        "{shown}"
    );
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "ran\n");
}

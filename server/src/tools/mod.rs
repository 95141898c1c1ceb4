//! The built-in tools an agent calls: Read, Write, Edit, MultiEdit, Glob, Grep and Bash. Their
//! names and input schemas are Claude Code's (`file_path`, `old_string`, `output_mode`, …), the
//! names models are trained on and hook scripts read; rawko's older names (`path`, `old_text`,
//! `new_text`, `case_insensitive`) are still accepted, and [`canonical_input`] rewrites them.
//!
//! Every file tool goes through [`resolve`], which refuses a path that leads out of the workspace
//! after following symlinks, and then opens what it names beneath the workspace's directory handle
//! in one race-free step (`confine.rs`; invariant 7): Glob and Grep walk through that handle too
//! (`walk.rs`). Bash runs with the workspace as its working directory, through rawko's helper
//! (crate::sandbox): confined by Landlock to the workspace and its temp dir, and everything it
//! starts is ended when the command ends, times out or is cancelled. Bad input never panics: it
//! comes back as a [`ToolOutput`] with `is_error` set and a message the model can act on.
//!
//! File I/O runs on tokio's blocking pool, so a current-thread runtime is never blocked.
//!
//! A client that offers to (an ACP editor: `fs/*`, `terminal/*`) does the I/O of Read, Write,
//! Edit, MultiEdit and Bash instead, behind the same gate and the same confinement (`client.rs`).

mod bash;
mod client;
mod confine;
mod content;
mod file_locks;
mod files;
#[cfg(test)]
mod race_tests;
mod search;
mod walk;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

pub use crate::sandbox::WorkspaceAccess;
pub use client::{ClientError, ClientFuture, ClientIo, ClientOffers, TerminalCommand, TerminalRun};
pub use confine::resolve;

/// The longest a Bash command may be given to run, in seconds.
pub const MAX_BASH_TIMEOUT_SECS: u64 = 600;

/// A tool as the model sees it: a name, what it does and the JSON Schema of its input.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
}

/// Where and how the tools run for one task.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The workspace, canonical (symlinks resolved): every file tool stays inside it.
    pub workspace: PathBuf,
    /// The workspace opened once, when the context is made: the file tools open every path beneath
    /// this handle, never by an absolute path.
    root: Arc<cap_std::fs::Dir>,
    /// How long a Bash command may run when its input gives no `timeout`.
    pub bash_timeout: Duration,
    /// The most bytes of output a tool returns; longer output is cut, with a note saying so.
    pub output_cap: usize,
    /// Environment variables a Bash call does not inherit (the provider keys, `secrets.env`).
    pub env_remove: Vec<String>,
    /// Changes to rawko's environment for Bash commands (what SessionStart hooks wrote to
    /// `CLAUDE_ENV_FILE`), in order.
    pub bash_env: BashEnv,
    /// Where Bash may read and write (Landlock), and its temporary directory.
    pub sandbox: crate::sandbox::Sandbox,
    /// The client that reads and writes files and runs Bash for the tools, when it offers to (an
    /// ACP editor); `None`: the tools do it themselves.
    pub client: Option<Arc<dyn ClientIo>>,
}

/// Changes to the environment of Bash commands. Its `Debug` shows the names only: values may be
/// secrets.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct BashEnv(pub Vec<crate::hooks::envfile::EnvChange>);

impl BashEnv {
    /// The value Bash gets for `name`: the last change to it, else `base`'s (rawko's own).
    pub fn var(&self, name: &str, base: impl Fn(&str) -> Option<OsString>) -> Option<OsString> {
        use crate::hooks::envfile::EnvChange;
        match self.0.iter().rev().find(|c| match c {
            EnvChange::Set(n, _) | EnvChange::Unset(n) => n == name,
        }) {
            Some(EnvChange::Set(_, value)) => Some(value.into()),
            Some(EnvChange::Unset(_)) => None,
            None => base(name),
        }
    }
}

impl std::fmt::Debug for BashEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::hooks::envfile::EnvChange;
        let names: Vec<String> = self
            .0
            .iter()
            .map(|c| match c {
                EnvChange::Set(n, _) => n.clone(),
                EnvChange::Unset(n) => format!("-{n}"),
            })
            .collect();
        write!(f, "BashEnv({names:?}, values redacted)")
    }
}

impl ToolContext {
    /// A context for `workspace` (canonicalised, and opened as the handle the file tools open every
    /// path beneath) with a 120 s Bash timeout and a 64 KiB output cap.
    pub fn new(workspace: &Path) -> std::io::Result<Self> {
        let workspace = workspace.canonicalize()?;
        if !workspace.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("workspace {} is not a directory", workspace.display()),
            ));
        }
        let root = shared_root(&workspace)?;
        Ok(ToolContext {
            workspace,
            root,
            bash_timeout: Duration::from_secs(120),
            output_cap: 64 * 1024,
            env_remove: crate::secrets::PROVIDER_KEY_VARS
                .iter()
                .map(|n| (*n).to_owned())
                .collect(),
            bash_env: BashEnv::default(),
            sandbox: {
                let home = std::env::var_os("HOME")
                    .filter(|h| !h.is_empty())
                    .map(PathBuf::from);
                crate::sandbox::Sandbox {
                    toolchains: crate::sandbox::ToolchainDirs::from_env(
                        |k| std::env::var_os(k),
                        home.as_deref(),
                    ),
                    home,
                    ..Default::default()
                }
            },
            client: None,
        })
    }
}

/// The handle of `workspace` (canonical), shared by every task of the process that uses it while
/// one does: ten thousand tasks of one workspace hold one directory handle, not ten thousand. A
/// handle whose directory is no longer the one at the path (the workspace was replaced) is not
/// reused.
fn shared_root(workspace: &Path) -> std::io::Result<Arc<cap_std::fs::Dir>> {
    use std::collections::HashMap;
    use std::os::unix::fs::MetadataExt;
    use std::sync::{Mutex, OnceLock, Weak};
    static ROOTS: OnceLock<Mutex<HashMap<PathBuf, Weak<cap_std::fs::Dir>>>> = OnceLock::new();
    let roots = ROOTS.get_or_init(Default::default);
    let at_path = std::fs::metadata(workspace)?;
    let same = |dir: &cap_std::fs::Dir| {
        dir.dir_metadata().is_ok_and(|m| {
            cap_fs_ext::MetadataExt::dev(&m) == at_path.dev()
                && cap_fs_ext::MetadataExt::ino(&m) == at_path.ino()
        })
    };
    let mut roots = roots
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(dir) = roots.get(workspace).and_then(Weak::upgrade) {
        if same(&dir) {
            return Ok(dir);
        }
    }
    let dir = Arc::new(cap_std::fs::Dir::open_ambient_dir(
        workspace,
        cap_std::ambient_authority(),
    )?);
    roots.retain(|_, d| d.strong_count() > 0);
    roots.insert(workspace.to_owned(), Arc::downgrade(&dir));
    Ok(dir)
}

/// What a tool call gives back to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: false,
        }
    }

    pub fn error(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: true,
        }
    }
}

impl From<Result<String, String>> for ToolOutput {
    fn from(result: Result<String, String>) -> Self {
        match result {
            Ok(content) => ToolOutput::ok(content),
            Err(message) => ToolOutput::error(message),
        }
    }
}

const TOOL_NAMES: [&str; 7] = ["Read", "Write", "Edit", "MultiEdit", "Glob", "Grep", "Bash"];

/// The longest a Bash command may be given to run, in milliseconds (Claude Code's unit).
pub const MAX_BASH_TIMEOUT_MS: u64 = MAX_BASH_TIMEOUT_SECS * 1000;
/// How long Bash's process group gets between SIGTERM and SIGKILL, and to close its output
/// after SIGKILL (whether it runs here, `bash.rs`, or in an editor's terminal, `client.rs`).
const GRACE: Duration = Duration::from_secs(1);
/// How long processes left behind by an exited shell may go on writing before they are ended.
const LINGER: Duration = Duration::from_millis(300);

/// The built-in tools with the JSON Schema of each input: Claude Code's names and schemas.
pub fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "Read",
            description: "Read a text file in the workspace. Returns its text, or the lines from \
                          `offset` (1-based) on, at most `limit` of them. Long output is cut, with a \
                          note saying where to read on.",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "file_path": {"type": "string", "description": "file path, relative to the workspace or absolute inside it"},
                    "offset": {"type": "integer", "minimum": 1, "description": "first line to read (1-based)"},
                    "limit": {"type": "integer", "minimum": 1, "description": "most lines to read"}
                },
                "required": ["file_path"]
            }),
        },
        ToolSpec {
            name: "Write",
            description: "Write a file in the workspace, replacing it if it exists. Missing parent \
                          directories are created.",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "file_path": {"type": "string", "description": "file path, relative to the workspace or absolute inside it"},
                    "content": {"type": "string", "description": "the whole new content of the file"}
                },
                "required": ["file_path", "content"]
            }),
        },
        ToolSpec {
            name: "Edit",
            description: "Replace exact text in a file in the workspace. `old_string` must occur \
                          exactly once unless `replace_all` is true.",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "file_path": {"type": "string", "description": "file path, relative to the workspace or absolute inside it"},
                    "old_string": {"type": "string", "description": "the exact text to replace"},
                    "new_string": {"type": "string", "description": "the text to put in its place"},
                    "replace_all": {"type": "boolean", "default": false, "description": "replace every occurrence"}
                },
                "required": ["file_path", "old_string", "new_string"]
            }),
        },
        ToolSpec {
            name: "MultiEdit",
            description: "Make several exact-text replacements in one file, in order, each on the \
                          result of the one before. Either every edit applies or none does.",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "file_path": {"type": "string", "description": "file path, relative to the workspace or absolute inside it"},
                    "edits": {
                        "type": "array",
                        "minItems": 1,
                        "items": {
                            "type": "object",
                            "properties": {
                                "old_string": {"type": "string", "description": "the exact text to replace"},
                                "new_string": {"type": "string", "description": "the text to put in its place"},
                                "replace_all": {"type": "boolean", "default": false, "description": "replace every occurrence"}
                            },
                            "required": ["old_string", "new_string"]
                        }
                    }
                },
                "required": ["file_path", "edits"]
            }),
        },
        ToolSpec {
            name: "Glob",
            description: "List the files in the workspace whose paths match a glob pattern, \
                          relative to `path` (default: the workspace). `*` stays within one \
                          directory; `**/` matches any depth, e.g. `**/*.rs`. Files ignored by \
                          .gitignore are left out. One workspace-relative path per line, sorted.",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "glob pattern, e.g. src/**/*.rs"},
                    "path": {"type": "string", "description": "directory to search in (default: the workspace)"}
                },
                "required": ["pattern"]
            }),
        },
        ToolSpec {
            name: "Grep",
            description: "Search file contents in the workspace with a regular expression (Rust \
                          regex syntax). `output_mode` \"files_with_matches\" (the default) lists the \
                          files that match; \"content\" answers `file:line:text` lines; \"count\" \
                          answers `file:count` lines. Files ignored by .gitignore and binary files \
                          are skipped.",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "regular expression"},
                    "path": {"type": "string", "description": "file or directory to search (default: the workspace)"},
                    "glob": {"type": "string", "description": "only files matching this glob, e.g. *.rs (a pattern without / matches file names)"},
                    "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"], "default": "files_with_matches"},
                    "-i": {"type": "boolean", "default": false, "description": "case-insensitive"},
                    "-n": {"type": "boolean", "default": true, "description": "line numbers in content mode"},
                    "head_limit": {"type": "integer", "minimum": 1, "description": "only the first N lines or files"}
                },
                "required": ["pattern"]
            }),
        },
        ToolSpec {
            name: "Bash",
            description: "Run a shell command (sh -c) in the workspace directory, with no input. \
                          Answers its stdout, then its stderr after a `--- stderr ---` line, then \
                          the exit code. Processes it leaves running in the background are ended \
                          when it exits. It may write files only in the workspace and in $TMPDIR \
                          (the task's temporary directory), and in a phase that does not allow \
                          writing not in the workspace either.",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "the command line"},
                    "description": {"type": "string", "description": "what the command does, in a few words"},
                    "timeout": {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_BASH_TIMEOUT_MS, "description": "milliseconds before the command is killed (default 120000)"}
                },
                "required": ["command"]
            }),
        },
    ]
}

/// Whether `name` is a built-in tool (case-insensitive).
pub fn is_builtin(name: &str) -> bool {
    TOOL_NAMES
        .iter()
        .any(|tool| tool.eq_ignore_ascii_case(name))
}

/// Runs the built-in tool `name` (case-insensitive) with `input`, in a phase that allows writing.
///
/// An unknown tool or bad input gives an error output, never a panic. Dropping the future of a
/// running Bash command ends it and every process it started.
pub async fn run(name: &str, input: &Value, ctx: &ToolContext) -> ToolOutput {
    run_with(name, input, ctx, WorkspaceAccess::ReadWrite).await
}

/// Like [`run`]; `access` is what the phase lets a Bash command do to the workspace, which the
/// kernel enforces where it can (the other tools are kept in line by the gate).
pub async fn run_with(
    name: &str,
    input: &Value,
    ctx: &ToolContext,
    access: WorkspaceAccess,
) -> ToolOutput {
    run_call(name, input, ctx, access, None).await
}

/// Like [`run_with`], for the tool call `call_id` (a client that runs Bash in its terminal shows
/// the terminal in that call).
pub async fn run_call(
    name: &str,
    input: &Value,
    ctx: &ToolContext,
    access: WorkspaceAccess,
    call_id: Option<&str>,
) -> ToolOutput {
    // Each tool's future is boxed: a call holds the one it runs, not room for the largest
    // (Bash's, 18 KB), and ten thousand tasks released at once each hold one.
    match name.to_ascii_lowercase().as_str() {
        "read" => Box::pin(files::read(input, ctx)).await,
        "write" => Box::pin(files::write(input, ctx)).await,
        "edit" => Box::pin(files::edit(input, ctx)).await,
        "multiedit" => Box::pin(files::multi_edit(input, ctx)).await,
        "glob" => Box::pin(search::glob(input, ctx)).await,
        "grep" => Box::pin(search::grep(input, ctx)).await,
        "bash" => Box::pin(bash::bash(input, ctx, access, call_id)).await,
        _ => ToolOutput::error(format!(
            "unknown tool \"{}\"; the built-in tools are {}",
            crate::clip::clip(name),
            TOOL_NAMES.join(", ")
        )),
    }
}

/// The input of a call of `tool` in Claude Code's field names, when it used rawko's older ones
/// (`path` → `file_path`, `old_text` → `old_string`, `new_text` → `new_string`,
/// `case_insensitive` → `-i`); `None` when there is nothing to rename. Hooks, the gate and the
/// tools then all see one shape, the one Claude Code's hooks see.
pub fn canonical_input(tool: &str, input: &Value) -> Option<Value> {
    let map = input.as_object()?;
    let tool = crate::workflow::tools::canonical(tool);
    let renames: &[(&str, &str)] = match tool {
        "Read" | "Write" => &[("path", "file_path")],
        "Edit" => &[
            ("path", "file_path"),
            ("old_text", "old_string"),
            ("new_text", "new_string"),
        ],
        "MultiEdit" => &[("path", "file_path")],
        "Grep" => &[("case_insensitive", "-i")],
        _ => &[],
    };
    let renames_edits = tool == "MultiEdit"
        && map
            .get("edits")
            .and_then(Value::as_array)
            .is_some_and(|edits| {
                edits.iter().any(|e| {
                    e.as_object()
                        .is_some_and(|e| e.contains_key("old_text") || e.contains_key("new_text"))
                })
            });
    if !renames_edits
        && !renames
            .iter()
            .any(|(old, new)| map.contains_key(*old) && !map.contains_key(*new))
    {
        return None;
    }
    let mut out = map.clone();
    for (old, new) in renames {
        if !out.contains_key(*new) {
            if let Some(value) = out.remove(*old) {
                out.insert((*new).to_owned(), value);
            }
        }
    }
    if renames_edits {
        if let Some(Value::Array(edits)) = out.get_mut("edits") {
            for e in edits.iter_mut().filter_map(Value::as_object_mut) {
                for (old, new) in [("old_text", "old_string"), ("new_text", "new_string")] {
                    if !e.contains_key(new) {
                        if let Some(value) = e.remove(old) {
                            e.insert(new.to_owned(), value);
                        }
                    }
                }
            }
        }
    }
    Some(Value::Object(out))
}

/// Runs blocking file work on tokio's blocking pool.
async fn blocking<F>(work: F) -> ToolOutput
where
    F: FnOnce() -> Result<String, String> + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result.into(),
        Err(error) => ToolOutput::error(format!("the tool failed: {error}")),
    }
}

/// A tool's input object, read by field name with aliases (the first name is the canonical one).
struct Args<'a> {
    tool: &'static str,
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    fn new(tool: &'static str, input: &'a Value) -> Result<Self, String> {
        match input {
            Value::Object(map) => Ok(Args { tool, map }),
            other => Err(format!(
                "{tool} takes a JSON object as input, not {}",
                kind_of(other)
            )),
        }
    }

    /// The first of `names` that is present and not null.
    fn get(&self, names: &[&str]) -> Option<&'a Value> {
        names
            .iter()
            .find_map(|name| self.map.get(*name).filter(|value| !value.is_null()))
    }

    fn missing(&self, names: &[&str], what: &str) -> String {
        format!("{} needs \"{}\" ({what})", self.tool, names[0])
    }

    fn wrong(&self, names: &[&str], what: &str) -> String {
        format!("{}: \"{}\" must be {what}", self.tool, names[0])
    }

    fn opt_str(&self, names: &[&str]) -> Result<Option<&'a str>, String> {
        match self.get(names) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(_) => Err(self.wrong(names, "a string")),
        }
    }

    fn str(&self, names: &[&str]) -> Result<&'a str, String> {
        self.opt_str(names)?
            .ok_or_else(|| self.missing(names, "a string"))
    }

    fn bool(&self, names: &[&str]) -> Result<bool, String> {
        match self.get(names) {
            None => Ok(false),
            Some(Value::Bool(flag)) => Ok(*flag),
            Some(_) => Err(self.wrong(names, "true or false")),
        }
    }

    /// An optional integer of at least 1.
    fn positive(&self, names: &[&str]) -> Result<Option<usize>, String> {
        match self.get(names) {
            None => Ok(None),
            Some(value) => value
                .as_u64()
                .filter(|n| *n >= 1)
                .and_then(|n| usize::try_from(n).ok())
                .map(Some)
                .ok_or_else(|| self.wrong(names, "a whole number of at least 1")),
        }
    }

    fn opt_number(&self, names: &[&str]) -> Result<Option<f64>, String> {
        match self.get(names) {
            None => Ok(None),
            Some(value) => value
                .as_f64()
                .map(Some)
                .ok_or_else(|| self.wrong(names, "a number")),
        }
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// `path` relative to the workspace, for messages (`.` for the workspace itself).
fn shown(ctx: &ToolContext, path: &Path) -> String {
    match path.strip_prefix(&ctx.workspace) {
        Ok(relative) if relative.as_os_str().is_empty() => ".".to_owned(),
        Ok(relative) => relative.to_string_lossy().into_owned(),
        Err(_) => path.to_string_lossy().into_owned(),
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::ToolContext;

    /// A fresh workspace and a context for it.
    pub(crate) fn workspace() -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().expect("temp dir");
        let ctx = ToolContext::new(dir.path()).expect("context");
        (dir, ctx)
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::workspace;
    use super::*;

    #[test]
    fn specs_name_the_seven_tools_with_object_schemas() {
        let specs = specs();
        let names: Vec<_> = specs.iter().map(|spec| spec.name).collect();
        assert_eq!(names, TOOL_NAMES);
        for spec in &specs {
            assert_eq!(spec.input_schema["type"], "object", "{}", spec.name);
            assert!(
                spec.input_schema["required"].as_array().is_some(),
                "{}",
                spec.name
            );
        }
    }

    #[test]
    fn older_field_names_are_rewritten_to_claude_codes() {
        assert_eq!(
            canonical_input("Read", &json!({"path": "a", "offset": 2})),
            Some(json!({"file_path": "a", "offset": 2}))
        );
        assert_eq!(
            canonical_input(
                "edit",
                &json!({"path": "a", "old_text": "x", "new_text": "y"})
            ),
            Some(json!({"file_path": "a", "old_string": "x", "new_string": "y"}))
        );
        assert_eq!(
            canonical_input(
                "MultiEdit",
                &json!({"path": "a", "edits": [{"old_text": "x", "new_text": "y"}]})
            ),
            Some(json!({"file_path": "a", "edits": [{"old_string": "x", "new_string": "y"}]}))
        );
        assert_eq!(
            canonical_input("Grep", &json!({"pattern": "x", "case_insensitive": true})),
            Some(json!({"pattern": "x", "-i": true}))
        );
        // Already canonical, or nothing to rename: unchanged.
        assert_eq!(
            canonical_input("Write", &json!({"file_path": "a", "content": ""})),
            None
        );
        assert_eq!(
            canonical_input("Glob", &json!({"pattern": "*", "path": "src"})),
            None
        );
        assert_eq!(canonical_input("Bash", &json!({"command": "ls"})), None);
        assert_eq!(canonical_input("Read", &json!("a")), None);
        // Both given: Claude Code's wins and the older one stays for the tool to ignore.
        assert_eq!(
            canonical_input("Read", &json!({"path": "a", "file_path": "b"})),
            None
        );
    }

    #[test]
    fn builtin_names_are_case_insensitive() {
        assert!(is_builtin("Read"));
        assert!(is_builtin("bash"));
        assert!(is_builtin("GREP"));
        assert!(!is_builtin("workflow_step"));
        assert!(!is_builtin(""));
    }

    #[test]
    fn context_canonicalises_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("w")).unwrap();
        let ctx = ToolContext::new(&dir.path().join("w/../w/.")).unwrap();
        assert_eq!(ctx.workspace, dir.path().canonicalize().unwrap().join("w"));
        assert_eq!(ctx.bash_timeout, Duration::from_secs(120));
        assert_eq!(ctx.output_cap, 65536);
        assert!(ToolContext::new(&dir.path().join("missing")).is_err());
    }

    #[tokio::test]
    async fn unknown_tool_is_an_error() {
        let (_dir, ctx) = workspace();
        let out = run("Frobnicate", &json!({}), &ctx).await;
        assert!(out.is_error);
        assert!(
            out.content.contains("unknown tool \"Frobnicate\""),
            "{out:?}"
        );
    }

    #[tokio::test]
    async fn tool_names_are_case_insensitive_when_run() {
        let (dir, ctx) = workspace();
        std::fs::write(dir.path().join("a.txt"), "hi\n").unwrap();
        let out = run("rEAD", &json!({"path": "a.txt"}), &ctx).await;
        assert_eq!(out, ToolOutput::ok("hi\n"));
    }

    #[tokio::test]
    async fn bad_input_is_a_clear_error() {
        let (_dir, ctx) = workspace();
        for (tool, input, expected) in [
            (
                "Read",
                json!("a.txt"),
                "Read takes a JSON object as input, not a string",
            ),
            ("Read", json!({}), "Read needs \"file_path\" (a string)"),
            (
                "Read",
                json!({"path": 3}),
                "Read: \"file_path\" must be a string",
            ),
            (
                "Read",
                json!({"path": "a", "offset": 0}),
                "Read: \"offset\" must be a whole number of at least 1",
            ),
            (
                "Write",
                json!({"path": "a"}),
                "Write needs \"content\" (a string)",
            ),
            (
                "Edit",
                json!({"path": "a", "old_text": "x", "new_text": "y", "replace_all": "yes"}),
                "Edit: \"replace_all\" must be true or false",
            ),
            (
                "Glob",
                json!({"path": "."}),
                "Glob needs \"pattern\" (a string)",
            ),
            (
                "Bash",
                json!({"command": ["ls"]}),
                "Bash: \"command\" must be a string",
            ),
        ] {
            let out = run(tool, &input, &ctx).await;
            assert!(out.is_error, "{tool} {input}: {out:?}");
            assert_eq!(out.content, expected, "{tool} {input}");
        }
    }
}

//! What confines the agent's own process: the Landlock rules it starts under, through rawko's
//! sandbox helper (`rawko __exec`, which also ends everything the agent starts with it).
//!
//! The agent may read what Bash may read (the system, the toolchains, the `PATH`), its own
//! installation (the program and every script among its arguments, with their package and the
//! `node_modules` directories above them), rawko's binary (it starts `rawko mcp`) and the
//! workspace; it may write its own state directories (known per agent, [`state_paths`]), a
//! temporary directory of its own (its `TMPDIR`, under the task's), what the user adds with
//! `sandbox.agentWrite`, and the workspace only in a phase that allows writing.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::provider::Confinement;
use crate::sandbox::{self, Rules, SandboxMode, WorkspaceAccess};

use super::AgentCommand;

/// How the agent's process is started: its rules (`None`: unconfined), and its `TMPDIR`.
#[derive(Debug, Clone, Default)]
pub(super) struct Plan {
    pub rules: Option<Rules>,
    pub temp_dir: Option<PathBuf>,
    /// Why the agent runs unconfined although the setting asks for the sandbox where it can.
    pub unconfined: Option<String>,
}

/// How the agent starts under `confinement` with `access` to the workspace; `Err` when it may
/// not start at all (`"required"` without Landlock).
pub(super) fn plan(
    command: &AgentCommand,
    confinement: &Confinement,
    access: WorkspaceAccess,
) -> Result<Plan, String> {
    let sandbox = &confinement.sandbox;
    let temp_dir = sandbox.temp_dir.as_ref().map(|t| t.join("agent"));
    if let Some(dir) = &temp_dir {
        sandbox::make_temp_dir(dir).map_err(|e| {
            format!(
                "cannot be given its temporary directory {}: {e}",
                dir.display()
            )
        })?;
    }
    if sandbox.settings.mode == SandboxMode::Off {
        return Ok(Plan {
            temp_dir,
            ..Plan::default()
        });
    }
    let why = match (sandbox::helper(), sandbox::landlock_support()) {
        (Some(_), Ok(_)) => None,
        (None, _) => Some("this process has no rawko helper to confine it with".to_owned()),
        (_, Err(why)) => Some(why),
    };
    if let Some(why) = why {
        return match sandbox.settings.mode {
            SandboxMode::Required => Err(format!(
                "is not started: the \"sandbox\" setting is \"required\" and the kernel sandbox cannot be used here: {why}. Set \"sandbox\" to \"auto\" in ~/.config/rawko/config.json to run the agent unconfined instead"
            )),
            _ => Ok(Plan {
                temp_dir,
                unconfined: Some(why),
                ..Plan::default()
            }),
        };
    }
    let home = sandbox.home.as_deref();
    let mut write = state_paths(command, home, &|k| std::env::var_os(k));
    for path in &write {
        // The agent cannot make a directory or file of its own in a home it may not write: they
        // are made for it, private to the user, as it would make them.
        if path.extension().is_some_and(|e| e == "json") {
            make_json_file(path);
        } else {
            let _ = sandbox::make_temp_dir(path);
        }
    }
    write.retain(|p| p.exists());
    let read = install_paths(command, home);
    let temp = temp_dir.clone().unwrap_or_else(std::env::temp_dir);
    Ok(Plan {
        rules: Some(sandbox.agent_rules(&confinement.workspace, access, &temp, &read, &write)),
        temp_dir,
        unconfined: None,
    })
}

/// Makes an empty JSON object at `path` when nothing is there (`~/.claude.json`).
fn make_json_file(path: &Path) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        let _ = file.write_all(b"{}\n");
    }
}

/// What the agent is, from its command line: the state directories each of the agents rawko
/// knows writes, found by running them (docs/providers.md lists them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Claude Code (`claude-code-acp`, `claude-agent-acp`, or `claude` itself).
    Claude,
    /// Gemini CLI (`gemini --acp`).
    Gemini,
    /// Codex (`codex-acp`, `codex`).
    Codex,
}

pub(super) fn kinds(command: &AgentCommand) -> Vec<Kind> {
    let mut out = Vec::new();
    for word in std::iter::once(&command.program).chain(&command.args) {
        // The names of the program and of a script given to it, and the packages they are in.
        // Only the file and the package it is in: the names after the last `node_modules`, else
        // the file's and, for a checkout, its package's directory (the nearest with a
        // `package.json`). Directories further up say where it was put, not what it is (a clone
        // in `~/src/codex-tests/` runs no Codex), and would give an agent another's state.
        let path = Path::new(word);
        let all: Vec<&str> = path
            .components()
            .filter_map(|c| c.as_os_str().to_str())
            .collect();
        let mut names: Vec<String> = match all.iter().rposition(|n| *n == "node_modules") {
            Some(at) => all[at + 1..].iter().map(|n| (*n).to_owned()).collect(),
            None => all.last().map(|n| (*n).to_owned()).into_iter().collect(),
        };
        if path.is_absolute() && !all.contains(&"node_modules") {
            let package = path
                .parent()
                .into_iter()
                .flat_map(Path::ancestors)
                .take(4)
                .find(|d| d.join("package.json").is_file())
                .and_then(|d| d.file_name()?.to_str());
            names.extend(package.map(str::to_owned));
        }
        let names: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
        for (needle, kind) in [
            ("claude", Kind::Claude),
            ("gemini", Kind::Gemini),
            ("codex", Kind::Codex),
        ] {
            if names.iter().any(|n| n.contains(needle)) && !out.contains(&kind) {
                out.push(kind);
            }
        }
    }
    out
}

/// The state the agent writes outside the workspace, by what it is: directories, and
/// `~/.claude.json` (a file). `var` reads rawko's environment; the agent's own `env` comes first.
fn state_paths(
    command: &AgentCommand,
    home: Option<&Path>,
    var: &dyn Fn(&str) -> Option<std::ffi::OsString>,
) -> Vec<PathBuf> {
    let env = |name: &str| -> Option<PathBuf> {
        command
            .env
            .get(name)
            .map(PathBuf::from)
            .or_else(|| var(name).map(PathBuf::from))
            .filter(|p| p.is_absolute())
    };
    let in_home = |rel: &str| home.map(|h| h.join(rel));
    let mut out = Vec::new();
    for kind in kinds(command) {
        match kind {
            Kind::Claude => {
                // Its settings, sessions and todos; its lock, backups and temporary copies of
                // `.claude.json` beside that file; its MCP logs under ~/.cache.
                match env("CLAUDE_CONFIG_DIR") {
                    Some(dir) => out.push(dir),
                    None => {
                        out.extend(in_home(".claude"));
                        out.extend(in_home(".claude.json"));
                    }
                }
                out.extend(in_home(".cache/claude-cli-nodejs"));
            }
            // Its settings, chats, history and logs (GEMINI_CLI_HOME stands for the home).
            Kind::Gemini => match env("GEMINI_CLI_HOME") {
                Some(home) => out.push(home.join(".gemini")),
                None => out.extend(in_home(".gemini")),
            },
            Kind::Codex => match env("CODEX_HOME") {
                Some(dir) => out.push(dir),
                None => out.extend(in_home(".codex")),
            },
        }
    }
    out
}

/// What the agent runs from: the program (found on the agent's `PATH` when it has no `/`) and
/// every argument that names a file (a script), each with what it points to, its package (the
/// nearest directory above it with a `package.json`) and the `node_modules` directories above
/// it; rawko's own binary, which the agent starts as its MCP server. Never the home directory or
/// `/` themselves.
fn install_paths(command: &AgentCommand, home: Option<&Path>) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = Vec::new();
    let path_var = command
        .env
        .get("PATH")
        .cloned()
        .or_else(|| std::env::var("PATH").ok())
        .unwrap_or_default();
    if command.program.contains('/') {
        files.push(command.cwd.join(&command.program));
    } else if let Some(found) = on_path(&command.program, &path_var) {
        files.push(found);
    }
    for arg in &command.args {
        let path = command.cwd.join(arg);
        if !arg.is_empty() && path.is_file() {
            files.push(path);
        }
    }
    files.extend(std::env::current_exe().ok());
    let mut out: Vec<PathBuf> = Vec::new();
    let too_wide = |dir: &Path| {
        dir.parent().is_none() || home.is_some_and(|h| h.starts_with(dir)) || dir == Path::new("")
    };
    for file in files {
        let real = file.canonicalize().unwrap_or_else(|_| file.clone());
        for f in [&file, &real] {
            if !out.contains(f) {
                out.push(f.clone());
            }
        }
        let Some(dir) = real.parent() else { continue };
        let package = dir
            .ancestors()
            .take_while(|d| !too_wide(d))
            .find(|d| d.join("package.json").is_file());
        if let Some(package) = package {
            out.push(package.to_owned());
        }
        for above in dir.ancestors().take_while(|d| !too_wide(d)) {
            let modules = above.join("node_modules");
            if modules.is_dir() && !out.contains(&modules) {
                out.push(modules);
            }
        }
    }
    out
}

/// `program` in the directories of `path` (`PATH`'s form), as a shell finds it.
fn on_path(program: &str, path: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(OsStr::new(path))
        .map(|dir| dir.join(program))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn command(program: &str, args: &[&str], env: &[(&str, &str)], cwd: &Path) -> AgentCommand {
        AgentCommand {
            program: program.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            cwd: cwd.to_owned(),
            stall: Duration::from_secs(1),
            turn_limit: Duration::from_secs(1),
        }
    }

    #[test]
    fn each_known_agent_writes_its_own_state() {
        let home = Path::new("/home/ada");
        let none = |_: &str| None;
        let ws = Path::new("/w");
        let claude = command("claude-code-acp", &[], &[], ws);
        assert_eq!(
            state_paths(&claude, Some(home), &none),
            [
                "/home/ada/.claude",
                "/home/ada/.claude.json",
                "/home/ada/.cache/claude-cli-nodejs"
            ]
            .map(PathBuf::from)
        );
        let claude = command(
            "node",
            &["/opt/x/node_modules/@zed-industries/claude-agent-acp/dist/index.js"],
            &[("CLAUDE_CONFIG_DIR", "/cfg/claude")],
            ws,
        );
        assert_eq!(
            state_paths(&claude, Some(home), &none),
            ["/cfg/claude", "/home/ada/.cache/claude-cli-nodejs"].map(PathBuf::from)
        );
        let gemini = command("gemini", &["--experimental-acp"], &[], ws);
        assert_eq!(
            state_paths(&gemini, Some(home), &none),
            [PathBuf::from("/home/ada/.gemini")]
        );
        let codex = command("codex-acp", &[], &[], ws);
        let codex_home = |k: &str| (k == "CODEX_HOME").then(|| "/srv/codex".into());
        assert_eq!(
            state_paths(&codex, Some(home), &codex_home),
            [PathBuf::from("/srv/codex")]
        );
        let other = command("my-agent", &["--acp"], &[], ws);
        assert!(state_paths(&other, Some(home), &none).is_empty());
    }

    #[test]
    fn an_agent_is_known_by_its_file_and_package_not_by_where_it_was_put() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let at = |rel: &str, package: &str| {
            let file = root.join(rel);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, "").unwrap();
            std::fs::write(root.join(package).join("package.json"), "{}").unwrap();
            file.to_string_lossy().into_owned()
        };
        let ws = Path::new("/w");
        let kind = |program: &str, args: &[&str]| kinds(&command(program, args, &[], ws));
        let installed = at(
            "Cache/codex-acp-2.6.0/node_modules/@agentclientprotocol/codex-acp/dist/index.js",
            "Cache/codex-acp-2.6.0/node_modules/@agentclientprotocol/codex-acp",
        );
        assert_eq!(kind("node", &[&installed]), [Kind::Codex]);
        let checkout = at("src/Codex-ACP/dist/index.js", "src/Codex-ACP");
        assert_eq!(kind("node", &[&checkout]), [Kind::Codex]);
        assert_eq!(
            kind("npx", &["-y", "@agentclientprotocol/claude-agent-acp"]),
            [Kind::Claude]
        );
        assert_eq!(kind("/usr/local/bin/gemini", &["--acp"]), [Kind::Gemini]);
        // An agent of the user's own, in a checkout or a home whose name says another agent's.
        let own = at(
            "wt/codex31/tests/acp/fault-agent.mjs",
            "wt/codex31/tests/acp",
        );
        assert_eq!(kind("node", &[&own, "mcp"]), []);
        assert_eq!(kind("/home/claude-fan/gemini/bin/my-agent", &[]), []);
        let own = at(
            "codex/node_modules/my-agent/dist/index.js",
            "codex/node_modules/my-agent",
        );
        assert_eq!(kind("node", &[&own]), []);
    }

    #[test]
    fn a_scripts_package_and_node_modules_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let package = root.join("lib/node_modules/@zed-industries/claude-code-acp");
        std::fs::create_dir_all(package.join("dist")).unwrap();
        std::fs::write(package.join("package.json"), "{}").unwrap();
        std::fs::write(package.join("dist/index.js"), "").unwrap();
        std::fs::create_dir_all(package.join("node_modules")).unwrap();
        let script = package.join("dist/index.js");
        let cmd = command(
            "node",
            &[script.to_str().unwrap(), "--flag"],
            &[],
            Path::new("/"),
        );
        let read = install_paths(&cmd, Some(&root));
        assert!(read.contains(&script), "{read:?}");
        assert!(read.contains(&package), "{read:?}");
        assert!(read.contains(&package.join("node_modules")), "{read:?}");
        assert!(read.contains(&root.join("lib/node_modules")), "{read:?}");
        // The home directory (here: the temporary root) and its parents are never given whole.
        assert!(!read.contains(&root), "{read:?}");
        assert!(!read.iter().any(|p| p == Path::new("/")), "{read:?}");
        let node = read.iter().any(|p| p.ends_with("node"));
        assert!(node || on_path("node", &std::env::var("PATH").unwrap()).is_none());
    }
}

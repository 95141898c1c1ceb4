//! End-to-end tests of the `rawko` binary's agent commands: `agents list | validate` in text and
//! `--json`, their exit statuses (0 fine, 1 problems found), and the starter agents `rawko init`
//! writes.
//!
//! Every run gets `--workspace <temp dir>` and has HOME and XDG_CONFIG_HOME pointed into a
//! temporary home, so the user's real configuration is never read; it runs from a third, empty
//! directory so nothing depends on the current directory.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use tempfile::TempDir;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// A workspace and a home directory, both temporary.
struct Sandbox {
    tmp: TempDir,
    ws: PathBuf,
    home: PathBuf,
}

impl Sandbox {
    fn new() -> Self {
        let tmp = TempDir::new().expect("temp dir");
        let ws = tmp.path().join("ws");
        let home = tmp.path().join("home");
        for dir in [&ws, &home, &tmp.path().join("cwd")] {
            std::fs::create_dir_all(dir).expect("create dir");
        }
        Self { tmp, ws, home }
    }

    /// `$XDG_CONFIG_HOME/rawko/agents` (XDG_CONFIG_HOME is `<home>/.config`).
    fn user_root(&self) -> PathBuf {
        self.home.join(".config/rawko/agents")
    }

    /// `<workspace>/.rawko/agents`.
    fn project_root(&self) -> PathBuf {
        self.ws.join(".rawko/agents")
    }
}

/// Writes `content` to `dir/rel`, creating the parent directories.
fn write(dir: &Path, rel: &str, content: &str) -> PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().expect("a file has a parent")).expect("mkdir");
    std::fs::write(&path, content).expect("write");
    path
}

/// Runs `rawko --workspace <ws> ARGS…` in the sandbox with XDG_CONFIG_HOME = `<home>/.config`.
fn rawko(sb: &Sandbox, args: &[&str]) -> Output {
    rawko_with(sb, args, |cmd| {
        cmd.env("XDG_CONFIG_HOME", sb.home.join(".config"));
    })
}

/// Runs `rawko --workspace <ws> ARGS…` with HOME set to the sandbox's home, XDG_CONFIG_HOME
/// unset, and then whatever `setup` changes.
fn rawko_with(sb: &Sandbox, args: &[&str], setup: impl FnOnce(&mut Command)) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rawko"));
    cmd.arg("--workspace")
        .arg(&sb.ws)
        .args(args.iter().map(OsStr::new))
        .current_dir(sb.tmp.path().join("cwd"))
        .env("HOME", &sb.home)
        .env_remove("XDG_CONFIG_HOME")
        .env("PI_CODING_AGENT_DIR", sb.home.join(".pi/agent"))
        .env_remove("RUST_LOG");
    setup(&mut cmd);
    cmd.output().expect("run the rawko binary")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("stdout is UTF-8")
}

fn stderr(out: &Output) -> String {
    String::from_utf8(out.stderr.clone()).expect("stderr is UTF-8")
}

/// Asserts the exit status, showing both streams when it differs.
#[track_caller]
fn assert_exit(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "exit status\n--- stdout:\n{}\n--- stderr:\n{}",
        stdout(out),
        stderr(out)
    );
}

fn json(out: &Output) -> Value {
    serde_json::from_str(&stdout(out))
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", stdout(out)))
}

/// A sandbox with the starter workflows and agents written by `rawko init`.
fn with_starter() -> Sandbox {
    let sb = Sandbox::new();
    assert_exit(&rawko(&sb, &["init"]), 0);
    sb
}

fn yaml_agent(name: &str, on_success: &str) -> String {
    format!(
        "name: {name}\nsystemPrompt: You are {name}.\ntransitions:\n  onSuccess: {on_success}\n"
    )
}

const STARTER_AGENTS: [&str; 4] = ["planner.md", "developer.md", "tester.md", "reviewer.md"];

// ---------------------------------------------------------------------------------------------
// Help
// ---------------------------------------------------------------------------------------------

#[test]
fn help_explains_the_agent_commands() {
    let sb = Sandbox::new();
    let out = rawko(&sb, &["--help"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("agents"), "{text}");
    assert!(
        text.contains("Write the starter workflows and agents"),
        "{text}"
    );

    let out = rawko(&sb, &["agents", "--help"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    for needle in [
        "Usage: rawko agents",
        "list",
        "validate",
        "exit status 1",
        ".rawko/agents",
    ] {
        assert!(
            text.contains(needle),
            "agents --help lacks {needle:?}:\n{text}"
        );
    }

    let out = rawko(&sb, &["agents", "frob"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("'frob'"), "{}", stderr(&out));
}

// ---------------------------------------------------------------------------------------------
// init
// ---------------------------------------------------------------------------------------------

#[test]
fn init_writes_the_starter_agents_and_they_validate() {
    let sb = Sandbox::new();
    let out = rawko(&sb, &["init"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    for file in STARTER_AGENTS {
        assert!(
            text.contains(&format!("wrote .rawko/agents/{file}\n")),
            "init does not say it wrote {file}:\n{text}"
        );
        let content =
            std::fs::read_to_string(sb.project_root().join(file)).expect("starter agent written");
        assert!(content.starts_with("---\nname: "), "{file}:\n{content}");
    }
    let mut on_disk: Vec<String> = std::fs::read_dir(sb.project_root())
        .expect("agents folder")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    assert_eq!(
        on_disk,
        ["developer.md", "planner.md", "reviewer.md", "tester.md"],
        "no temporary files are left behind"
    );

    let out = rawko(&sb, &["agents", "validate"]);
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out),
        "4 agents: 4 valid, 0 invalid; 0 errors, 0 warnings\n"
    );
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

#[test]
fn init_again_keeps_agents_and_force_rewrites_them() {
    let sb = with_starter();
    let planner = sb.project_root().join("planner.md");
    let original = std::fs::read_to_string(&planner).expect("planner.md");
    let edited = original.replace("maxIterations: 5", "maxIterations: 7");
    assert_ne!(edited, original);
    std::fs::write(&planner, &edited).expect("edit planner.md");

    let out = rawko(&sb, &["init"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.contains("kept  .rawko/agents/planner.md (exists; --force overwrites)"),
        "{text}"
    );
    assert!(!text.contains("wrote"), "{text}");
    assert_eq!(std::fs::read_to_string(&planner).expect("planner"), edited);

    let out = rawko(&sb, &["init", "--force"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("wrote .rawko/agents/planner.md"), "{text}");
    assert!(!text.contains("kept "), "{text}");
    assert_eq!(
        std::fs::read_to_string(&planner).expect("planner"),
        original
    );
}

#[test]
fn init_restores_a_deleted_agent() {
    let sb = with_starter();
    std::fs::remove_file(sb.project_root().join("tester.md")).expect("rm");
    let out = rawko(&sb, &["init"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("wrote .rawko/agents/tester.md"), "{text}");
    assert_eq!(text.matches("kept  .rawko/agents/").count(), 3, "{text}");
}

#[test]
fn init_says_when_a_kept_agent_is_broken() {
    let sb = with_starter();
    let planner = sb.project_root().join("planner.md");
    let text = std::fs::read_to_string(&planner).expect("planner.md");
    std::fs::write(
        &planner,
        text.replace("onSuccess: developer", "onSuccess: nobody"),
    )
    .expect("break planner.md");
    let out = rawko(&sb, &["init"]);
    assert_exit(&out, 1);
    let err = stderr(&out);
    assert!(
        err.contains(".rawko/agents/planner.md: transitions.onSuccess names no agent: there is no \"nobody\""),
        "{err}"
    );
    assert!(err.contains("run `rawko agents validate`"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// list
// ---------------------------------------------------------------------------------------------

#[test]
fn list_shows_the_starter_agents_as_a_table() {
    let sb = with_starter();
    let out = rawko(&sb, &["agents", "list"]);
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out),
        "\
NAME       DISPLAY NAME  TOOLS                              ON SUCCESS  SOURCE
developer  Developer     all; Bash filtered                 tester      .rawko/agents/developer.md
planner    Planner       Read, Glob, Grep, Bash (filtered)  developer   .rawko/agents/planner.md
reviewer   Reviewer      Read, Glob, Grep, Bash (filtered)  complete    .rawko/agents/reviewer.md
tester     Tester        Read, Glob, Grep, Bash (filtered)  reviewer    .rawko/agents/tester.md
"
    );
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

#[test]
fn list_json_describes_every_agent() {
    let sb = with_starter();
    let out = rawko(&sb, &["--json", "agents", "list"]);
    assert_exit(&out, 0);
    let v = json(&out);
    assert_eq!(v["diagnostics"], serde_json::json!([]));
    let agents = v["agents"].as_array().expect("agents array");
    let names: Vec<&str> = agents.iter().filter_map(|a| a["name"].as_str()).collect();
    assert_eq!(names, ["developer", "planner", "reviewer", "tester"]);
    let planner = &agents[1];
    assert_eq!(planner["displayName"], "Planner");
    assert!(planner["whenToUse"]
        .as_str()
        .is_some_and(|w| w.starts_with("At the start of a task")));
    assert_eq!(
        planner["tools"]["allowed"],
        serde_json::json!(["Read", "Glob", "Grep", "Bash"])
    );
    let commands = planner["tools"]["bashFilter"]["allowedCommands"]
        .as_array()
        .expect("allowedCommands");
    assert!(commands.contains(&Value::from("git")), "{commands:?}");
    assert!(planner["tools"]["bashFilter"]["blockedPatterns"]
        .as_array()
        .is_some_and(|p| !p.is_empty()));
    assert_eq!(
        planner["transitions"],
        serde_json::json!({"onSuccess": "developer", "onFailure": "planner", "onMaxIterations": null})
    );
    assert_eq!(planner["limits"]["maxIterations"], 5);
    assert_eq!(planner["limits"]["timeout"], 60000);
    assert_eq!(planner["provider"], Value::Null);
    assert_eq!(planner["source"], ".rawko/agents/planner.md");
    let developer = &agents[0];
    assert_eq!(developer["tools"]["allowed"], Value::Null);
    assert_eq!(developer["transitions"]["onMaxIterations"], "reviewer");
}

#[test]
fn list_with_no_agents_says_how_to_get_some() {
    let sb = Sandbox::new();
    let out = rawko(&sb, &["agents", "list"]);
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out),
        "no agents found; run `rawko init` to write the starter agents into .rawko/agents\n"
    );
}

#[test]
fn list_notes_files_left_out_on_stderr() {
    let sb = Sandbox::new();
    write(&sb.project_root(), "a.yaml", &yaml_agent("a", "complete"));
    write(&sb.project_root(), "b.yaml", "name: b\n");
    let out = rawko(&sb, &["agents", "list"]);
    assert_exit(&out, 0);
    assert!(stdout(&out).contains("\na  "), "{}", stdout(&out));
    assert!(!stdout(&out).contains("\nb  "), "{}", stdout(&out));
    assert_eq!(
        stderr(&out),
        "1 agent file was left out because of errors; run `rawko agents validate` to see them\n"
    );
}

#[test]
fn user_agents_are_listed_and_project_agents_override_them() {
    let sb = Sandbox::new();
    write(&sb.user_root(), "dev.yaml", &yaml_agent("dev", "complete"));
    let mine = write(&sb.user_root(), "mine.yaml", &yaml_agent("mine", "dev"));
    write(&sb.project_root(), "dev.yaml", &yaml_agent("dev", "mine"));
    let out = rawko(&sb, &["--json", "agents", "list"]);
    assert_exit(&out, 0);
    let v = json(&out);
    let rows: Vec<(&str, &str, &str)> = v["agents"]
        .as_array()
        .expect("agents")
        .iter()
        .map(|a| {
            (
                a["name"].as_str().expect("name"),
                a["transitions"]["onSuccess"].as_str().expect("onSuccess"),
                a["source"].as_str().expect("source"),
            )
        })
        .collect();
    let mine = mine.display().to_string();
    assert_eq!(
        rows,
        [
            ("dev", "mine", ".rawko/agents/dev.yaml"),
            ("mine", "dev", mine.as_str())
        ]
    );
}

#[test]
fn the_user_root_follows_xdg_config_home_or_home() {
    let sb = Sandbox::new();
    write(
        &sb.home.join(".config/rawko/agents"),
        "homecfg.yaml",
        &yaml_agent("homecfg", "complete"),
    );
    let xdg = sb.tmp.path().join("xdg");
    write(
        &xdg.join("rawko/agents"),
        "xdgcfg.yaml",
        &yaml_agent("xdgcfg", "complete"),
    );
    let names = |out: &Output| -> Vec<String> {
        json(out)["agents"]
            .as_array()
            .expect("agents")
            .iter()
            .map(|a| a["name"].as_str().expect("name").to_owned())
            .collect()
    };
    // Without XDG_CONFIG_HOME: ~/.config.
    let out = rawko_with(&sb, &["--json", "agents", "list"], |_| {});
    assert_exit(&out, 0);
    assert_eq!(names(&out), ["homecfg"]);
    // With it: only XDG_CONFIG_HOME.
    let out = rawko_with(&sb, &["--json", "agents", "list"], |cmd| {
        cmd.env("XDG_CONFIG_HOME", &xdg);
    });
    assert_exit(&out, 0);
    assert_eq!(names(&out), ["xdgcfg"]);
}

// ---------------------------------------------------------------------------------------------
// validate
// ---------------------------------------------------------------------------------------------

#[test]
fn validate_with_no_agents_names_the_folders_it_searched() {
    let sb = Sandbox::new();
    let out = rawko(&sb, &["agents", "validate"]);
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out),
        format!(
            "no agents found in {}, .rawko/agents; run `rawko init` to write the starter agents\n",
            sb.user_root().display()
        )
    );
}

#[test]
fn validate_reports_each_problem_with_path_and_line_and_fails() {
    let sb = with_starter();
    // A YAML error on line 2, a missing target on line 4, and an unknown tool (a warning).
    write(
        &sb.project_root(),
        "broken.yaml",
        "name: broken\nsystemPrompt: x: y\n",
    );
    write(
        &sb.project_root(),
        "lost.yaml",
        "name: lost\nsystemPrompt: x\ntransitions:\n  onSuccess: nowhere\n",
    );
    write(
        &sb.project_root(),
        "odd.md",
        "---\nname: odd\ntools:\n  allowed: [Read, Teleport]\ntransitions: {onSuccess: complete}\n---\nOdd.\n",
    );
    let out = rawko(&sb, &["agents", "validate"]);
    assert_exit(&out, 1);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.iter().any(|l| l.starts_with(
            ".rawko/agents/broken.yaml:2:16: error: invalid YAML: mapping values are not allowed"
        )),
        "{text}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with(
            ".rawko/agents/lost.yaml:4: error: transitions.onSuccess names no agent: there is no \"nowhere\" (agents: developer, lost, odd, planner, reviewer, tester;"
        )),
        "{text}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with(
            ".rawko/agents/odd.md:4: warning: tools.allowed[1]: \"Teleport\" is not a tool rawko knows"
        )),
        "{text}"
    );
    assert_eq!(
        lines.last().copied(),
        Some("7 agents: 5 valid, 2 invalid; 2 errors, 1 warning"),
        "{text}"
    );
}

#[test]
fn validate_passes_with_warnings_only() {
    let sb = Sandbox::new();
    write(&sb.project_root(), "loop.yaml", &yaml_agent("loop", "loop"));
    let out = rawko(&sb, &["agents", "validate"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.starts_with(".rawko/agents/loop.yaml:4: warning: transitions.onSuccess leads back to \"loop\" itself"),
        "{text}"
    );
    assert!(
        text.ends_with("\n1 agent: 1 valid, 0 invalid; 0 errors, 1 warning\n"),
        "{text}"
    );
}

#[test]
fn validate_json_lists_valid_invalid_and_diagnostics() {
    let sb = Sandbox::new();
    write(&sb.project_root(), "a.yaml", &yaml_agent("a", "complete"));
    write(
        &sb.project_root(),
        "b.md",
        "---\nname: b\ntools:\n  bashFilter:\n    blockedPatterns: ['(']\ntransitions: {onSuccess: a}\n---\nB.\n",
    );
    let out = rawko(&sb, &["--json", "agents", "validate"]);
    assert_exit(&out, 1);
    let v = json(&out);
    assert_eq!(v["valid"], serde_json::json!(["a"]));
    assert_eq!(
        v["invalid"],
        serde_json::json!([{"name": "b", "source": ".rawko/agents/b.md"}])
    );
    let diagnostics = v["diagnostics"].as_array().expect("diagnostics");
    assert_eq!(diagnostics.len(), 1, "{diagnostics:?}");
    let d = &diagnostics[0];
    assert_eq!(d["path"], ".rawko/agents/b.md");
    assert_eq!(d["line"], 5);
    assert_eq!(d["severity"], "error");
    assert!(
        d["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("tools.bashFilter.blockedPatterns[0]: blocked pattern `(` is not a valid regular expression")),
        "{d}"
    );
}

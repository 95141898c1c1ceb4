//! End-to-end tests of the `rawko` binary's workflow commands: `--help`, `init`, and
//! `workflows list | validate | show`, in text and `--json`, with their exit statuses
//! (0 fine, 1 problems found, 2 could not run as given).
//!
//! Every run gets `--workspace <temp dir>` and has HOME, XDG_CONFIG_HOME and PI_CODING_AGENT_DIR
//! pointed into a temporary home, so the user's real configuration is never read; it runs from a
//! third, empty directory so nothing depends on the current directory.

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

    /// `~/.config/rawko/workflows` under the temporary home (via XDG_CONFIG_HOME).
    fn user_root(&self) -> PathBuf {
        self.home.join(".config/rawko/workflows")
    }

    /// `$PI_CODING_AGENT_DIR/workflows`.
    fn pi_global_root(&self) -> PathBuf {
        self.home.join(".pi/agent/workflows")
    }

    /// `<workspace>/.rawko/workflows`.
    fn project_root(&self) -> PathBuf {
        self.ws.join(".rawko/workflows")
    }
}

/// Writes `content` to `dir/rel`, creating the parent directories.
fn write(dir: &Path, rel: &str, content: &str) -> PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().expect("a file has a parent")).expect("mkdir");
    std::fs::write(&path, content).expect("write");
    path
}

/// Runs `rawko --workspace <ws> ARGS…` in the sandbox.
fn rawko(sb: &Sandbox, args: &[&str]) -> Output {
    let mut all: Vec<&OsStr> = vec![OsStr::new("--workspace"), sb.ws.as_os_str()];
    all.extend(args.iter().map(OsStr::new));
    rawko_raw(sb, &all)
}

/// Runs `rawko ARGS…` exactly as given (the caller passes `--workspace`).
fn rawko_raw(sb: &Sandbox, args: &[&OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rawko"))
        .args(args)
        .current_dir(sb.tmp.path().join("cwd"))
        .env("HOME", &sb.home)
        .env("XDG_CONFIG_HOME", sb.home.join(".config"))
        .env("PI_CODING_AGENT_DIR", sb.home.join(".pi/agent"))
        .env_remove("RUST_LOG")
        .output()
        .expect("run the rawko binary")
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

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .expect("a JSON array")
        .iter()
        .map(|s| s.as_str().expect("a JSON string"))
        .collect()
}

/// A sandbox with the starter workflows written by `rawko init`.
fn with_starter() -> Sandbox {
    let sb = Sandbox::new();
    assert_exit(&rawko(&sb, &["init"]), 0);
    sb
}

/// Adds a workflow `broken` whose one phase file is missing (line 5 of its workflow.yaml).
fn add_broken(sb: &Sandbox) {
    write(
        &sb.project_root(),
        "broken/workflow.yaml",
        "name: Broken\ncommandName: broken\ninitialMessage: hi\nphases:\n  - missing.md\n",
    );
}

fn phase(id: &str, name: &str) -> String {
    format!("---\nid: {id}\nname: {name}\nemoji: 🔧\n---\nDo the {id} work.\n")
}

/// Writes a one-phase user workflow `key` under `root`.
fn add_workflow(root: &Path, key: &str, name: &str, command: &str) {
    write(
        root,
        &format!("{key}/workflow.yaml"),
        &format!("name: {name}\ncommandName: {command}\ninitialMessage: hi\nphases:\n  - one.md\n"),
    );
    write(root, &format!("{key}/one.md"), &phase("one", "One"));
}

const STARTER_FILES: [&str; 7] = [
    "feature/workflow.yaml",
    "feature/plan.md",
    "feature/implement.md",
    "feature/test.md",
    "review/workflow.yaml",
    "review/static-analysis.md",
    "review/peer-review.md",
];

// ---------------------------------------------------------------------------------------------
// Help and usage errors
// ---------------------------------------------------------------------------------------------

#[test]
fn help_explains_the_commands() {
    let sb = Sandbox::new();
    let out = rawko(&sb, &["--help"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    for needle in [
        "Usage: rawko",
        "workflows",
        "init",
        "--workspace",
        "--json",
        ".rawko/workflows",
        "Start with `rawko demo`",
        "`rawko init`",
        "`rawko run",
    ] {
        assert!(text.contains(needle), "--help lacks {needle:?}:\n{text}");
    }

    let out = rawko(&sb, &["workflows", "--help"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    for needle in [
        "Usage: rawko workflows",
        "list",
        "validate",
        "show",
        "exit status 1",
        "breadcrumb",
    ] {
        assert!(
            text.contains(needle),
            "workflows --help lacks {needle:?}:\n{text}"
        );
    }

    let out = rawko(&sb, &["workflows", "show", "--help"]);
    assert_exit(&out, 0);
    assert!(stdout(&out).contains("--task"), "{}", stdout(&out));
}

#[test]
fn workspace_that_does_not_exist_is_a_usage_error() {
    let sb = Sandbox::new();
    let missing = sb.tmp.path().join("does/not/exist");
    let out = rawko_raw(
        &sb,
        &[
            OsStr::new("--workspace"),
            missing.as_os_str(),
            OsStr::new("workflows"),
            OsStr::new("list"),
        ],
    );
    assert_exit(&out, 2);
    let err = stderr(&out);
    assert!(
        err.contains(&format!(
            "workspace {} is not a directory",
            missing.display()
        )),
        "{err}"
    );
    assert!(err.contains("--workspace DIR"), "says how to fix it: {err}");
    assert!(stdout(&out).is_empty());
}

#[test]
fn unknown_subcommand_is_a_usage_error() {
    let sb = Sandbox::new();
    let out = rawko(&sb, &["frobnicate"]);
    assert_exit(&out, 2);
    assert!(
        stderr(&out).contains("unrecognized subcommand 'frobnicate'"),
        "{}",
        stderr(&out)
    );

    let out = rawko(&sb, &["workflows", "frob"]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("'frob'"), "{}", stderr(&out));
}

// ---------------------------------------------------------------------------------------------
// init
// ---------------------------------------------------------------------------------------------

#[test]
fn init_writes_the_starter_workflows() {
    let sb = Sandbox::new();
    let out = rawko(&sb, &["init"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    for rel in STARTER_FILES {
        assert!(
            text.contains(&format!("wrote .rawko/workflows/{rel}\n")),
            "init does not say it wrote {rel}:\n{text}"
        );
        let path = sb.project_root().join(rel);
        let content = std::fs::read_to_string(&path).expect("starter file written");
        assert!(!content.trim().is_empty(), "{rel} is empty");
    }
    assert!(text.contains("rawko workflows show feature"), "{text}");
    // No temporary files are left behind.
    let leftovers: Vec<_> = walk(&sb.project_root())
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("rawko-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert_eq!(walk(&sb.project_root()).len(), STARTER_FILES.len());
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[test]
fn init_again_keeps_files_and_force_rewrites_them() {
    let sb = with_starter();
    let plan = sb.project_root().join("feature/plan.md");
    let original = std::fs::read_to_string(&plan).expect("plan.md");
    let edited = original.replace("short plan", "very short plan");
    assert_ne!(edited, original);
    std::fs::write(&plan, &edited).expect("edit plan.md");

    let out = rawko(&sb, &["init"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.contains("kept  .rawko/workflows/feature/plan.md (exists; --force overwrites)"),
        "{text}"
    );
    assert!(
        !text.contains("wrote"),
        "nothing is rewritten without --force:\n{text}"
    );
    assert_eq!(std::fs::read_to_string(&plan).expect("plan.md"), edited);

    let out = rawko(&sb, &["init", "--force"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.contains("wrote .rawko/workflows/feature/plan.md"),
        "{text}"
    );
    assert!(!text.contains("kept"), "{text}");
    assert_eq!(std::fs::read_to_string(&plan).expect("plan.md"), original);
}

#[test]
fn init_restores_a_deleted_file_and_keeps_the_rest() {
    let sb = with_starter();
    std::fs::remove_file(sb.project_root().join("review/peer-review.md")).expect("rm");
    let out = rawko(&sb, &["init"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.contains("wrote .rawko/workflows/review/peer-review.md"),
        "{text}"
    );
    assert_eq!(
        text.matches("kept  .rawko/workflows/").count(),
        STARTER_FILES.len() - 1,
        "{text}"
    );
}

// ---------------------------------------------------------------------------------------------
// validate
// ---------------------------------------------------------------------------------------------

#[test]
fn validate_the_starter() {
    let sb = with_starter();
    let out = rawko(&sb, &["workflows", "validate"]);
    assert_exit(&out, 0);
    assert_eq!(
        stdout(&out),
        "2 workflows: 2 valid, 0 invalid; 0 errors, 0 warnings\n"
    );
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

#[test]
fn validate_reports_a_broken_workflow_next_to_good_ones() {
    let sb = with_starter();
    add_broken(&sb);
    // A second problem, in a phase file: a YAML error on line 4 of the file.
    write(
        &sb.project_root(),
        "yamlbug/workflow.yaml",
        "name: Yaml Bug\ncommandName: yamlbug\ninitialMessage: hi\nphases:\n  - p.md\n",
    );
    write(
        &sb.project_root(),
        "yamlbug/p.md",
        "---\nid: p\nname: P\nemoji: a: b\n---\nDo it.\n",
    );
    let out = rawko(&sb, &["workflows", "validate"]);
    assert_exit(&out, 1);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.iter().any(|l| l.starts_with(
            ".rawko/workflows/broken/workflow.yaml:5: error: phase file \"missing.md\" not found"
        )),
        "{text}"
    );
    assert!(
        lines.iter().any(|l| {
            l.starts_with(
            ".rawko/workflows/yamlbug/p.md:4:9: error: invalid YAML: mapping values are not allowed"
        )
        }),
        "{text}"
    );
    assert_eq!(
        lines.last().copied(),
        Some("4 workflows: 2 valid, 2 invalid; 2 errors, 0 warnings"),
        "{text}"
    );
}

#[test]
fn validate_counts_warnings_without_failing() {
    let sb = with_starter();
    std::fs::create_dir_all(sb.project_root().join("empty")).expect("mkdir");
    let out = rawko(&sb, &["workflows", "validate"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.starts_with(".rawko/workflows/empty: warning: empty directory"),
        "{text}"
    );
    assert!(
        text.ends_with("2 workflows: 2 valid, 0 invalid; 0 errors, 1 warning\n"),
        "{text}"
    );
}

#[test]
fn validate_json() {
    let sb = with_starter();
    add_broken(&sb);
    let out = rawko(&sb, &["workflows", "validate", "--json"]);
    assert_exit(&out, 1);
    let doc = json(&out);
    assert_eq!(strings(&doc["valid"]), ["feature", "review"]);
    assert_eq!(strings(&doc["invalid"]), ["broken"]);
    let diags = doc["diagnostics"].as_array().expect("diagnostics");
    assert_eq!(diags.len(), 1, "{doc}");
    let d = &diags[0];
    assert_eq!(d["path"], ".rawko/workflows/broken/workflow.yaml");
    assert_eq!(d["line"], 5);
    assert_eq!(d["severity"], "error");
    assert_eq!(d["workflow"], "broken");
    assert!(
        d["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("phase file \"missing.md\" not found")),
        "{d}"
    );

    // The starter alone: exit 0 and nothing to report.
    std::fs::remove_dir_all(sb.project_root().join("broken")).expect("rm");
    let out = rawko(&sb, &["workflows", "validate", "--json"]);
    assert_exit(&out, 0);
    let doc = json(&out);
    assert_eq!(doc["invalid"].as_array().map(Vec::len), Some(0));
    assert_eq!(doc["diagnostics"].as_array().map(Vec::len), Some(0));
}

#[test]
fn validate_on_an_empty_workspace_says_how_to_start() {
    let sb = Sandbox::new();
    let out = rawko(&sb, &["workflows", "validate"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.starts_with("no workflows found in "), "{text}");
    assert!(text.contains(".rawko/workflows"), "names the roots: {text}");
    assert!(text.contains("rawko init"), "{text}");
}

// ---------------------------------------------------------------------------------------------
// list
// ---------------------------------------------------------------------------------------------

/// The table's rows, each split into its columns (the last one, SOURCE, may hold a space).
fn table(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| {
            let cols: Vec<&str> = l.split("  ").filter(|c| !c.is_empty()).collect();
            cols.iter().map(|c| c.trim().to_owned()).collect()
        })
        .collect()
}

#[test]
fn list_shows_a_table() {
    let sb = with_starter();
    let out = rawko(&sb, &["workflows", "list"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    let rows = table(&text);
    assert_eq!(
        rows,
        [
            vec!["KEY", "NAME", "COMMAND", "PHASES", "SOURCE"],
            vec![
                "feature",
                "Feature",
                "feature",
                "5",
                "project (.rawko/workflows/feature)"
            ],
            vec![
                "review",
                "Review",
                "(subworkflow)",
                "2",
                "project (.rawko/workflows/review)"
            ],
        ],
        "{text}"
    );
    // The columns line up.
    let col = |line: &str| line.find("PHASES").or_else(|| line.find('5'));
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(col(lines[0]), col(lines[1]), "{text}");
    assert!(stderr(&out).is_empty(), "{}", stderr(&out));
}

#[test]
fn list_mentions_skipped_workflows() {
    let sb = with_starter();
    add_broken(&sb);
    let out = rawko(&sb, &["workflows", "list"]);
    assert_exit(&out, 0);
    assert!(!stdout(&out).contains("broken"), "{}", stdout(&out));
    assert!(
        stderr(&out)
            .contains("1 workflow was skipped because of errors; run `rawko workflows validate`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn list_json() {
    let sb = with_starter();
    let out = rawko(&sb, &["workflows", "list", "--json"]);
    assert_exit(&out, 0);
    let doc = json(&out);
    let list = doc["workflows"].as_array().expect("workflows");
    assert_eq!(list.len(), 2, "{doc}");
    let feature = &list[0];
    assert_eq!(feature["key"], "feature");
    assert_eq!(feature["name"], "Feature");
    assert_eq!(feature["commandName"], "feature");
    assert_eq!(feature["phaseCount"], 5);
    assert_eq!(feature["show"], "user");
    assert_eq!(feature["source"], ".rawko/workflows/feature");
    assert_eq!(feature["root"], "project");
    let review = &list[1];
    assert_eq!(review["key"], "review");
    assert_eq!(review["phaseCount"], 2);
    assert_eq!(review["show"], "workflows");
    assert_eq!(doc["diagnostics"].as_array().map(Vec::len), Some(0));
}

#[test]
fn list_on_an_empty_workspace_says_how_to_start() {
    let sb = Sandbox::new();
    let out = rawko(&sb, &["workflows", "list"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(text.contains("no workflows found"), "{text}");
    assert!(text.contains("`rawko init`"), "{text}");

    let out = rawko(&sb, &["workflows", "list", "--json"]);
    assert_exit(&out, 0);
    assert_eq!(json(&out)["workflows"].as_array().map(Vec::len), Some(0));
}

#[test]
fn global_roots_are_listed_and_the_project_overrides_them() {
    let sb = with_starter();
    add_workflow(&sb.user_root(), "mine", "Mine", "mine");
    add_workflow(&sb.user_root(), "feature", "Home Feature", "feature");
    add_workflow(&sb.pi_global_root(), "pi-flow", "Pi Flow", "piflow");
    add_workflow(&sb.ws.join(".pi/workflows"), "legacy", "Legacy", "legacy");

    let out = rawko(&sb, &["workflows", "list", "--json"]);
    assert_exit(&out, 0);
    let doc = json(&out);
    let list = doc["workflows"].as_array().expect("workflows");
    let by_key = |key: &str| {
        list.iter()
            .find(|w| w["key"] == key)
            .unwrap_or_else(|| panic!("{key} not listed: {doc}"))
    };
    let mine = by_key("mine");
    assert_eq!(mine["root"], "user");
    assert_eq!(
        mine["source"],
        sb.user_root().join("mine").display().to_string()
    );
    assert_eq!(by_key("pi-flow")["root"], "pi-global");
    assert_eq!(by_key("legacy")["root"], "pi-project");
    assert_eq!(by_key("legacy")["source"], ".pi/workflows/legacy");
    // The project's feature replaces the home one.
    let feature = by_key("feature");
    assert_eq!(feature["name"], "Feature");
    assert_eq!(feature["root"], "project");
    assert_eq!(list.len(), 5, "{doc}");

    let out = rawko(&sb, &["workflows", "list"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    let rows = table(&text);
    let row = |key: &str| {
        rows.iter()
            .find(|r| r[0] == key)
            .unwrap_or_else(|| panic!("{key} not in table:\n{text}"))
    };
    assert_eq!(
        row("mine")[4],
        format!("user ({})", sb.user_root().join("mine").display())
    );
    assert_eq!(row("feature")[1], "Feature");
    assert!(!text.contains("Home Feature"), "{text}");

    // Without the project's feature, the home one shows through.
    std::fs::remove_dir_all(sb.project_root().join("feature")).expect("rm");
    let doc = json(&rawko(&sb, &["workflows", "list", "--json"]));
    let feature = doc["workflows"]
        .as_array()
        .and_then(|l| l.iter().find(|w| w["key"] == "feature"))
        .cloned()
        .expect("feature listed");
    assert_eq!(feature["name"], "Home Feature");
    assert_eq!(feature["root"], "user");
}

// ---------------------------------------------------------------------------------------------
// show
// ---------------------------------------------------------------------------------------------

#[test]
fn show_previews_every_phase() {
    let sb = with_starter();
    let out = rawko(&sb, &["workflows", "show", "feature", "--task", "X"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.starts_with(
            "Feature (feature) from project (.rawko/workflows/feature)\n\
             command: feature; 5 phases; looping allowed\n"
        ),
        "{text}"
    );
    let headings: Vec<&str> = text.lines().filter(|l| l.starts_with("━━━")).collect();
    assert_eq!(
        headings,
        [
            "━━━ 1/5  Feature > 📋 Plan [1/4]",
            "━━━ 2/5  Feature > 🛠️ Implement [2/4]",
            "━━━ 3/5  Feature > 🧪 Test [3/4]",
            "━━━ 4/5  Feature > Review [4/4] > 🔍 Static Analysis [1/2]",
            "━━━ 5/5  Feature > Review [4/4] > 👀 Peer Review [2/2]",
        ],
        "{text}"
    );
    let tools: Vec<&str> = text.lines().filter(|l| l.starts_with("tools: ")).collect();
    assert_eq!(
        tools,
        [
            "tools: only Read, Glob, Grep (and workflow_step)",
            "tools: all",
            "tools: all except WebFetch",
            "tools: only Read, Glob, Grep, Bash (and workflow_step)",
            "tools: only Read, Glob, Grep (and workflow_step)",
        ],
        "{text}"
    );
    assert!(
        text.contains("file:  .rawko/workflows/review/static-analysis.md"),
        "{text}"
    );
    assert_eq!(text.matches("  │ **Task:** X\n").count(), 5, "{text}");
    // The phase's template variables are filled in.
    assert!(text.contains("focused on the task: X"), "{text}");
    assert!(
        text.contains("Do not change any file in this phase. Next comes Implement."),
        "{text}"
    );
}

#[test]
fn show_json() {
    let sb = with_starter();
    let out = rawko(
        &sb,
        &["workflows", "show", "feature", "--task", "Y", "--json"],
    );
    assert_exit(&out, 0);
    let doc = json(&out);
    assert_eq!(doc["key"], "feature");
    assert_eq!(doc["loopable"], true);
    let phases = doc["phases"].as_array().expect("phases");
    assert_eq!(phases.len(), 5);
    assert_eq!(
        phases[3]["breadcrumb"],
        "Feature > Review [4/4] > 🔍 Static Analysis [1/2]"
    );
    assert_eq!(phases[3]["tools"]["policy"], "whitelist");
    assert_eq!(phases[2]["tools"]["policy"], "blacklist");
    assert_eq!(phases[1]["tools"]["policy"], "all");
    assert!(phases.iter().all(|p| p["prompt"]
        .as_str()
        .is_some_and(|s| s.contains("**Task:** Y"))));
}

#[test]
fn show_a_subworkflow() {
    let sb = with_starter();
    let out = rawko(&sb, &["workflows", "show", "review"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.contains("subworkflow only (show: workflows); 2 phases; looping disabled"),
        "{text}"
    );
    assert!(
        text.contains("━━━ 1/2  Review > 🔍 Static Analysis [1/2]"),
        "{text}"
    );
}

#[test]
fn show_by_command_name() {
    let sb = with_starter();
    add_workflow(&sb.project_root(), "bugfix-flow", "Bug Fix", "fix");
    let out = rawko(&sb, &["workflows", "show", "fix", "--task", "crash"]);
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(
        text.starts_with("Bug Fix (bugfix-flow) from project (.rawko/workflows/bugfix-flow)\n"),
        "{text}"
    );
    assert!(text.contains("━━━ 1/1  Bug Fix > 🔧 One [1/1]"), "{text}");
    assert!(text.contains("**Task:** crash"), "{text}");
}

#[test]
fn show_an_unknown_workflow_names_the_available_ones() {
    let sb = with_starter();
    let out = rawko(&sb, &["workflows", "show", "nosuch"]);
    assert_exit(&out, 1);
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    assert_eq!(
        stderr(&out),
        "error: unknown workflow \"nosuch\"; available: feature, review\n"
    );

    let empty = Sandbox::new();
    let out = rawko(&empty, &["workflows", "show", "feature"]);
    assert_exit(&out, 1);
    assert!(stderr(&out).contains("rawko init"), "{}", stderr(&out));
}

#[test]
fn show_a_broken_workflow_prints_its_errors() {
    let sb = with_starter();
    add_broken(&sb);
    let out = rawko(&sb, &["workflows", "show", "broken"]);
    assert_exit(&out, 1);
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(
        lines.first().copied(),
        Some("error: workflow \"broken\" (.rawko/workflows/broken) has errors:"),
        "{err}"
    );
    assert!(
        lines[1].starts_with(
            ".rawko/workflows/broken/workflow.yaml:5: error: phase file \"missing.md\" not found"
        ),
        "{err}"
    );
    assert_eq!(lines.len(), 2, "only this workflow's problems: {err}");
}

#[test]
fn validate_reads_subagent_tools_like_tools_and_knows_delegate_to_subagents() {
    let sb = with_starter();
    write(
        &sb.project_root(),
        "fan/workflow.yaml",
        "name: Fan\ncommandName: fan\ninitialMessage: hi\nphases:\n  - a.md\n  - b.md\n",
    );
    // A whitelist naming the tool is no unknown tool; subagentTools is checked like tools.
    write(
        &sb.project_root(),
        "fan/a.md",
        "---\nid: a\nname: A\nemoji: 🔧\ntools:\n  whitelist: [Read, delegate_to_subagents]\nsubagentTools:\n  whitelist: [Read, Wrtie]\n---\nFan out.\n",
    );
    write(
        &sb.project_root(),
        "fan/b.md",
        "---\nid: b\nname: B\nemoji: 🔧\nsubagentTools:\n  whitelist: [Read]\n  blacklist: [Write]\n---\nFan out.\n",
    );
    let out = rawko(&sb, &["workflows", "validate"]);
    assert_exit(&out, 1);
    let text = stdout(&out);
    assert!(
        text.contains(".rawko/workflows/fan/a.md:7: warning: subagentTools.whitelist names \"Wrtie\", which is no tool rawko knows (did you mean Write?)"),
        "{text}"
    );
    assert!(
        text.contains(".rawko/workflows/fan/b.md:5: error: subagentTools has both whitelist and blacklist; a phase may use only one"),
        "{text}"
    );
    assert!(!text.contains("delegate_to_subagents"), "{text}");
}

//! `rawko rewind` and `rawko tasks prune` as a user runs them: the real binary in a git
//! workspace, a scripted agent that writes, edits and runs a writing Bash command in Implement
//! and goes on to the end; then the workspace and the task taken back to Implement, the task
//! resumed to its end, a user's own edit stopping a rewind, and the task pruned with its refs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use tempfile::TempDir;

struct Sandbox {
    _tmp: TempDir,
    root: PathBuf,
}

/// The agent: into Implement; a Write and an Edit; a Bash command that writes two files; then
/// through Test and Review to the end.
const SCRIPT: &str = r##"
turns:
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: Write, input: {file_path: a.txt, content: "from the task\n"}}
      - {name: Edit, input: {file_path: README.md, old_string: "# a project", new_string: "# a project, edited"}}
  - tool_calls:
      - {name: Bash, input: {command: "echo built > made.txt && echo more >> a.txt"}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - tool_calls:
      - {name: workflow_step, input: {action: next}}
  - text: "All done."
"##;

impl Sandbox {
    /// A project that is a git repository: rawko's starter (`rawko init`), a README and a
    /// .gitignore of `*.log` committed; an ignored notes.log; the user's own branch, stash and
    /// staged change.
    fn new() -> Self {
        let tmp = TempDir::new().expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonical");
        std::fs::create_dir_all(root.join("project")).expect("mkdir");
        std::fs::create_dir_all(root.join("home")).expect("mkdir");
        let sb = Sandbox { _tmp: tmp, root };
        let init = sb.run(&["init"]);
        assert!(init.status.success(), "{}", text(&init));
        sb.write("README.md", "# a project\n");
        sb.write(".gitignore", "*.log\n");
        sb.git(&["init", "-q", "-b", "main"]);
        sb.git(&["add", "-A"]);
        sb.git(&["commit", "-qm", "initial"]);
        sb.write("notes.log", "mine, ignored\n");
        sb.git(&["branch", "topic"]);
        sb.write("README.md", "# stashed\n");
        sb.git(&["stash", "-q"]);
        sb.write("staged.txt", "staged\n");
        sb.git(&["add", "staged.txt"]);
        sb.write("s.yaml", SCRIPT);
        sb
    }

    fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn write(&self, rel: &str, content: &str) {
        let path = self.project().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, content).expect("write");
    }

    fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.project().join(rel)).ok()
    }

    /// The user's git, with a home of its own.
    fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=Ada", "-c", "user.email=ada@example.invalid"])
            .args(args)
            .current_dir(self.project())
            .env("HOME", self.home())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// What the user has of theirs: HEAD, the index byte for byte, the branches, the stash.
    fn users(&self) -> (String, Vec<u8>, String, String) {
        (
            self.git(&["rev-parse", "HEAD"]),
            std::fs::read(self.project().join(".git/index")).expect("index"),
            self.git(&["for-each-ref", "refs/heads", "refs/tags"]),
            self.git(&["stash", "list"]),
        )
    }

    fn run(&self, args: &[&str]) -> Output {
        let home = self.home();
        Command::new(env!("CARGO_BIN_EXE_rawko"))
            .args(args)
            .current_dir(self.project())
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("PI_CODING_AGENT_DIR", home.join(".pi"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY")
            .stdin(Stdio::null())
            .output()
            .expect("run rawko")
    }

    fn task_dir(&self, id: &str) -> PathBuf {
        self.home().join(".local/state/rawko/tasks").join(id)
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn task_id(shown: &str) -> String {
    shown
        .lines()
        .find_map(|l| l.strip_prefix("task "))
        .expect("a `task ID` line")
        .trim()
        .to_owned()
}

/// Runs the script's task (or resumes task `id`) to its end.
fn run_to_end(sb: &Sandbox, resume: Option<&str>) -> String {
    let out = match resume {
        None => sb.run(&[
            "run", "Add a flag", "--workflow", "feature", "--agent", "default", "--script",
            "s.yaml", "--yes",
        ]),
        Some(id) => sb.run(&["run", "--resume", id, "--yes"]),
    };
    let shown = text(&out);
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(shown.contains("All done."), "{shown}");
    shown
}

fn lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

// Needs part A's checkpoints (a `checkpoint` record at each phase's entry and after each
// writing call): without them the task has no checkpoint of Implement to go back to.
#[test]
fn a_task_rewound_to_implement_gets_its_files_back_resumes_and_is_pruned() {
    let sb = Sandbox::new();
    let users = sb.users();
    let shown = run_to_end(&sb, None);
    let id = task_id(&shown);
    assert_eq!(sb.read("a.txt").as_deref(), Some("from the task\nmore\n"));
    assert_eq!(sb.read("made.txt").as_deref(), Some("built\n"));
    assert_eq!(sb.read("README.md").as_deref(), Some("# a project, edited\n"));

    // A phase that does not exist: the phases are named.
    let out = sb.run(&["rewind", &id, "--to", "deploy"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("1 plan (Plan), 2 implement (Implement)"),
        "{}",
        text(&out)
    );

    // The dry run lists and changes nothing.
    let out = sb.run(&["rewind", &id, "--to", "implement", "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let expected = ["restore README.md", "remove a.txt", "remove made.txt"];
    let mut listed = lines(&out);
    listed.sort();
    let mut want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(listed, want, "{}", text(&out));
    assert_eq!(sb.read("made.txt").as_deref(), Some("built\n"));
    assert_eq!(sb.read("README.md").as_deref(), Some("# a project, edited\n"));

    // The rewind: the files of Implement's start; the user's things as they were.
    let out = sb.run(&["rewind", &id, "--to", "Implement"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let mut listed = lines(&out);
    listed.sort();
    assert_eq!(listed, want, "{}", text(&out));
    assert_eq!(sb.read("README.md").as_deref(), Some("# a project\n"));
    assert!(!exists(&sb.project().join("a.txt")));
    assert!(!exists(&sb.project().join("made.txt")));
    assert_eq!(sb.read("notes.log").as_deref(), Some("mine, ignored\n"));
    assert_eq!(sb.read("staged.txt").as_deref(), Some("staged\n"));
    assert_eq!(sb.users(), users, "HEAD, index, branches and stash untouched");

    // The task is back in Implement, no longer complete.
    let out = sb.run(&["tasks", "show", &id]);
    let shown = text(&out);
    assert!(shown.contains("state:     interrupted"), "{shown}");
    assert!(shown.contains("position:  Feature > 🛠️ Implement [2/4]"), "{shown}");
    assert!(shown.contains("rewound"), "{shown}");

    // Resumed, it plays Implement again and completes.
    let shown = run_to_end(&sb, Some(&id));
    assert!(shown.contains("resuming task"), "{shown}");
    assert_eq!(sb.read("a.txt").as_deref(), Some("from the task\nmore\n"));
    assert_eq!(sb.read("README.md").as_deref(), Some("# a project, edited\n"));

    // The user's own edit after the task's last checkpoint stops a rewind, unless --force.
    sb.write("a.txt", "the user's now\n");
    let out = sb.run(&["rewind", &id, "--to", "2"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("a.txt") && stderr.contains("--force"), "{stderr}");
    assert_eq!(sb.read("a.txt").as_deref(), Some("the user's now\n"));
    assert_eq!(sb.read("README.md").as_deref(), Some("# a project, edited\n"));
    let out = sb.run(&["rewind", &id, "--to", "2", "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!exists(&sb.project().join("a.txt")));
    assert_eq!(sb.read("README.md").as_deref(), Some("# a project\n"));
    // Back in Implement, it has not finished: prune keeps it.
    let out = sb.run(&["tasks", "prune"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(lines(&out).is_empty(), "{}", text(&out));
    assert!(sb.task_dir(&id).join("events.jsonl").is_file());
    run_to_end(&sb, Some(&id));

    // Pruned: its folder and its refs go; the user's things stay.
    let refs = sb.git(&["for-each-ref", "--format=%(refname)", "refs/rawko/"]);
    assert!(refs.contains(&format!("refs/rawko/tasks/{id}/latest")), "{refs}");
    let out = sb.run(&["tasks", "prune"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(lines(&out), [format!("removed {id}")]);
    assert!(!sb.task_dir(&id).exists());
    assert_eq!(
        sb.git(&["for-each-ref", "--format=%(refname)", "refs/rawko/"]),
        ""
    );
    let (head, _, branches, stash) = users;
    assert_eq!(sb.git(&["rev-parse", "HEAD"]), head);
    assert_eq!(sb.git(&["for-each-ref", "refs/heads", "refs/tags"]), branches);
    assert_eq!(sb.git(&["stash", "list"]), stash);
}

#[test]
fn nothing_to_prune_and_an_unknown_task_are_said_plainly() {
    let sb = Sandbox::new();
    let out = sb.run(&["tasks", "prune", "--older-than", "30"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(lines(&out).is_empty());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no finished tasks"),
        "{}",
        text(&out)
    );
    let out = sb.run(&["rewind", "task-0-0", "--to", "implement"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown task \"task-0-0\""),
        "{}",
        text(&out)
    );
}

//! The tools through a client: a fake editor that serves files from disk (or from an "unsaved
//! buffer" it holds) and runs terminal commands as real processes, recording every request.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::json;

use super::*;
use crate::tools::test_support::workspace;
use crate::tools::{run, run_call};

#[derive(Debug, Default)]
struct FakeEditor {
    offers: ClientOffers,
    /// Unsaved buffers: what the editor has for a path instead of the disk's text.
    buffers: Mutex<HashMap<PathBuf, String>>,
    /// Every request, as `read PATH`, `write PATH`, `terminal PROGRAM ARGS…`.
    calls: Mutex<Vec<String>>,
    /// The editor's own environment, given to terminal commands.
    env: Vec<(String, String)>,
    /// Answer every request with this error.
    fail: Option<ClientError>,
}

impl FakeEditor {
    fn all() -> Arc<FakeEditor> {
        Arc::new(FakeEditor {
            offers: ClientOffers {
                read: true,
                write: true,
                terminal: true,
            },
            env: vec![("EDITOR_SECRET".into(), "shh".into())],
            ..FakeEditor::default()
        })
    }

    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

impl ClientIo for FakeEditor {
    fn offers(&self) -> ClientOffers {
        self.offers
    }

    fn read_text_file(&self, path: PathBuf) -> ClientFuture<Result<String, ClientError>> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("read {}", path.display()));
        let answer = match (&self.fail, self.buffers.lock().unwrap().get(&path)) {
            (Some(e), _) => Err(e.clone()),
            (None, Some(buffer)) => Ok(buffer.clone()),
            (None, None) => {
                std::fs::read_to_string(&path).map_err(|e| ClientError::Answered(e.to_string()))
            }
        };
        Box::pin(async move { answer })
    }

    fn write_text_file(
        &self,
        path: PathBuf,
        content: String,
    ) -> ClientFuture<Result<(), ClientError>> {
        self.calls
            .lock()
            .unwrap()
            .push(format!("write {}", path.display()));
        let answer = match &self.fail {
            Some(e) => Err(e.clone()),
            None => {
                std::fs::write(&path, content).map_err(|e| ClientError::Answered(e.to_string()))
            }
        };
        Box::pin(async move { answer })
    }

    fn run_in_terminal(
        &self,
        command: TerminalCommand,
    ) -> ClientFuture<Result<TerminalRun, ClientError>> {
        self.calls.lock().unwrap().push(format!(
            "terminal {} {}",
            command.program,
            command.args.join(" ")
        ));
        let env = self.env.clone();
        let fail = self.fail.clone();
        Box::pin(async move {
            if let Some(e) = fail {
                return Err(e);
            }
            let mut process = tokio::process::Command::new(&command.program);
            process
                .args(&command.args)
                .current_dir(&command.cwd)
                .envs(env)
                .envs(command.env.iter().cloned())
                .kill_on_drop(true);
            let run = tokio::time::timeout(command.timeout, process.output()).await;
            Ok(match run {
                Err(_) => TerminalRun {
                    timed_out: true,
                    signal: Some("SIGKILL".into()),
                    ..TerminalRun::default()
                },
                Ok(output) => {
                    let output = output.map_err(|e| ClientError::Answered(e.to_string()))?;
                    TerminalRun {
                        output: String::from_utf8_lossy(&[output.stdout, output.stderr].concat())
                            .into_owned(),
                        exit_code: output.status.code().and_then(|c| u32::try_from(c).ok()),
                        ..TerminalRun::default()
                    }
                }
            })
        })
    }
}

fn with_client(editor: &Arc<FakeEditor>) -> (tempfile::TempDir, ToolContext) {
    let (dir, mut ctx) = workspace();
    ctx.client = Some(editor.clone());
    (dir, ctx)
}

fn real(dir: &Path, rel: &str) -> PathBuf {
    dir.canonicalize().unwrap().join(rel)
}

#[tokio::test]
async fn read_serves_the_editors_unsaved_buffer_with_offset_and_limit() {
    let editor = FakeEditor::all();
    let (dir, ctx) = with_client(&editor);
    std::fs::write(dir.path().join("a.txt"), "on disk\n").unwrap();
    editor
        .buffers
        .lock()
        .unwrap()
        .insert(real(dir.path(), "a.txt"), "one\ntwo\nthree\n".into());
    let out = run(
        "Read",
        &json!({"file_path": "a.txt", "offset": 2, "limit": 1}),
        &ctx,
    )
    .await;
    assert_eq!(out, ToolOutput::ok("two\n"));
    assert_eq!(
        editor.calls(),
        [format!("read {}", real(dir.path(), "a.txt").display())]
    );
    // A buffer of a file not yet on disk is read too.
    editor
        .buffers
        .lock()
        .unwrap()
        .insert(real(dir.path(), "new.txt"), "fresh\n".into());
    let out = run("Read", &json!({"file_path": "new.txt"}), &ctx).await;
    assert_eq!(out, ToolOutput::ok("fresh\n"));
}

#[tokio::test]
async fn paths_outside_the_workspace_never_reach_the_editor() {
    let editor = FakeEditor::all();
    let (dir, ctx) = with_client(&editor);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "s\n").unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
    let secret = outside.path().join("secret");
    let secret = secret.to_str().unwrap();
    for (tool, input) in [
        ("Read", json!({"file_path": secret})),
        ("Read", json!({"file_path": "link/secret"})),
        ("Read", json!({"file_path": "../x"})),
        ("Write", json!({"file_path": "link/new", "content": "x"})),
        ("Write", json!({"file_path": secret, "content": "x"})),
        (
            "Edit",
            json!({"file_path": "link/secret", "old_string": "s", "new_string": "t"}),
        ),
    ] {
        let out = run(tool, &input, &ctx).await;
        assert!(out.is_error, "{tool} {input}: {out:?}");
        assert!(out.content.contains("outside the workspace"), "{out:?}");
    }
    assert!(editor.calls().is_empty(), "{:?}", editor.calls());
    assert_eq!(
        std::fs::read_to_string(outside.path().join("secret")).unwrap(),
        "s\n"
    );
}

#[tokio::test]
async fn directories_and_missing_files_get_the_local_tools_words() {
    let editor = FakeEditor::all();
    let (dir, ctx) = with_client(&editor);
    std::fs::create_dir(dir.path().join("src")).unwrap();
    let out = run("Read", &json!({"file_path": "src"}), &ctx).await;
    assert_eq!(
        out,
        ToolOutput::error("\"src\" is a directory, not a file; Glob lists what is in it")
    );
    let out = run("Write", &json!({"file_path": "src", "content": ""}), &ctx).await;
    assert_eq!(out, ToolOutput::error("\"src\" is a directory, not a file"));
    let out = run("Read", &json!({"file_path": "nope.txt"}), &ctx).await;
    assert_eq!(out, ToolOutput::error("file \"nope.txt\" does not exist"));
    // Only the missing file was asked about (the editor may have had a buffer).
    assert_eq!(editor.calls().len(), 1, "{:?}", editor.calls());
}

#[tokio::test]
async fn write_goes_through_the_editor_with_its_directories_made() {
    let editor = FakeEditor::all();
    let (dir, ctx) = with_client(&editor);
    let out = run(
        "Write",
        &json!({"file_path": "deep/er/out.txt", "content": "hello\n"}),
        &ctx,
    )
    .await;
    assert_eq!(out, ToolOutput::ok("wrote 6 bytes to deep/er/out.txt"));
    assert_eq!(
        editor.calls(),
        [format!(
            "write {}",
            real(dir.path(), "deep/er/out.txt").display()
        )]
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("deep/er/out.txt")).unwrap(),
        "hello\n"
    );
}

#[tokio::test]
async fn edit_edits_the_editors_text_and_writes_it_back() {
    let editor = FakeEditor::all();
    let (dir, ctx) = with_client(&editor);
    std::fs::write(dir.path().join("a.rs"), "fn a() {}\n").unwrap();
    let path = real(dir.path(), "a.rs");
    editor
        .buffers
        .lock()
        .unwrap()
        .insert(path.clone(), "fn a() { unsaved }\n".into());
    let out = run(
        "Edit",
        &json!({"file_path": "a.rs", "old_string": "unsaved", "new_string": "saved"}),
        &ctx,
    )
    .await;
    assert_eq!(out, ToolOutput::ok("replaced 1 occurrence in a.rs"));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "fn a() { saved }\n"
    );
    // A failed MultiEdit writes nothing.
    let out = run(
        "MultiEdit",
        &json!({"file_path": "a.rs", "edits": [
            {"old_string": "fn", "new_string": "pub fn"},
            {"old_string": "missing", "new_string": "x"}
        ]}),
        &ctx,
    )
    .await;
    assert!(out.is_error, "{out:?}");
    assert!(out.content.contains("edit 2; no edit was made"), "{out:?}");
    let writes = editor
        .calls()
        .iter()
        .filter(|c| c.starts_with("write"))
        .count();
    assert_eq!(writes, 1);
}

#[tokio::test]
async fn the_editors_errors_are_said_and_nothing_is_claimed() {
    let editor = Arc::new(FakeEditor {
        offers: ClientOffers {
            read: true,
            write: true,
            terminal: true,
        },
        fail: Some(ClientError::Answered("the buffer is read-only".into())),
        ..FakeEditor::default()
    });
    let (dir, ctx) = with_client(&editor);
    std::fs::write(dir.path().join("a.txt"), "x\n").unwrap();
    let out = run("Read", &json!({"file_path": "a.txt"}), &ctx).await;
    assert_eq!(
        out,
        ToolOutput::error("cannot read \"a.txt\": the editor answered: the buffer is read-only")
    );
    let out = run(
        "Write",
        &json!({"file_path": "a.txt", "content": "y"}),
        &ctx,
    )
    .await;
    assert_eq!(
        out,
        ToolOutput::error("cannot write \"a.txt\": the editor answered: the buffer is read-only")
    );
    let out = run("Bash", &json!({"command": "true"}), &ctx).await;
    assert_eq!(
        out,
        ToolOutput::error(
            "cannot run the command in the editor's terminal: the buffer is read-only"
        )
    );
}

#[tokio::test]
async fn an_editor_that_does_not_answer_in_time_is_said_so_even_for_a_file_not_on_disk() {
    let why = |method: &str| format!("the editor did not answer {method} within 30 s");
    let editor = Arc::new(FakeEditor {
        offers: ClientOffers {
            read: true,
            write: true,
            terminal: true,
        },
        fail: Some(ClientError::NoAnswer(why("fs/read_text_file"))),
        ..FakeEditor::default()
    });
    let (dir, ctx) = with_client(&editor);
    std::fs::write(dir.path().join("a.txt"), "x\n").unwrap();
    for file in ["a.txt", "not-on-disk.txt"] {
        let out = run("Read", &json!({"file_path": file}), &ctx).await;
        assert_eq!(
            out,
            ToolOutput::error(format!(
                "cannot read \"{file}\": {}",
                why("fs/read_text_file")
            ))
        );
    }
    let out = run(
        "Edit",
        &json!({"file_path": "a.txt", "old_string": "x", "new_string": "y"}),
        &ctx,
    )
    .await;
    assert_eq!(
        out,
        ToolOutput::error(format!(
            "cannot read \"a.txt\": {}",
            why("fs/read_text_file")
        ))
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "x\n"
    );
}

#[tokio::test]
async fn without_the_offer_the_tools_do_their_own_io() {
    let editor = Arc::new(FakeEditor {
        offers: ClientOffers {
            read: true,
            write: false,
            terminal: false,
        },
        ..FakeEditor::default()
    });
    let (dir, ctx) = with_client(&editor);
    std::fs::write(dir.path().join("a.txt"), "x\n").unwrap();
    run(
        "Write",
        &json!({"file_path": "b.txt", "content": "y"}),
        &ctx,
    )
    .await;
    // Edit needs both: done locally.
    run(
        "Edit",
        &json!({"file_path": "a.txt", "old_string": "x", "new_string": "z"}),
        &ctx,
    )
    .await;
    let out = run("Bash", &json!({"command": "echo local"}), &ctx).await;
    assert_eq!(out, ToolOutput::ok("local\nexit code 0"));
    assert!(editor.calls().is_empty(), "{:?}", editor.calls());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
        "z\n"
    );
}

#[tokio::test]
async fn bash_runs_in_the_editors_terminal_without_rawkos_keys() {
    use crate::hooks::envfile::EnvChange;
    let editor = FakeEditor::all();
    let (_dir, mut ctx) = with_client(&editor);
    ctx.env_remove = vec!["EDITOR_SECRET".into()];
    ctx.bash_env = crate::tools::BashEnv(vec![
        EnvChange::Set("RAWKO_T".into(), "set by a hook".into()),
        EnvChange::Set("GONE".into(), "x".into()),
        EnvChange::Unset("GONE".into()),
    ]);
    let out = run_call(
        "Bash",
        &json!({"command": "echo \"${EDITOR_SECRET-none}|$RAWKO_T|${GONE-unset}\"; echo err >&2; exit 3"}),
        &ctx,
        WorkspaceAccess::ReadWrite,
        Some("call-7"),
    )
    .await;
    assert_eq!(
        out,
        ToolOutput::error("none|set by a hook|unset\nerr\nexit code 3")
    );
    let calls = editor.calls();
    assert_eq!(calls.len(), 1);
    assert!(
        calls[0].starts_with("terminal env -u EDITOR_SECRET -u GONE sh -c "),
        "{calls:?}"
    );
}

#[tokio::test]
async fn a_terminal_command_past_its_time_limit_is_reported_killed() {
    let editor = FakeEditor::all();
    let (_dir, ctx) = with_client(&editor);
    let out = run("Bash", &json!({"command": "sleep 5", "timeout": 200}), &ctx).await;
    assert!(out.is_error);
    assert_eq!(
        out.content,
        "timed out after 0.2 s; the command and every process it started were killed"
    );
}

#[test]
fn the_terminal_report_cuts_long_output_and_names_what_the_helper_ended() {
    let (_dir, mut ctx) = workspace();
    ctx.output_cap = 8;
    let marker = String::from_utf8_lossy(LEFT_RUNNING).into_owned();
    let out = report(
        &ctx,
        TerminalRun {
            output: format!("0123456789abc\n{marker}"),
            exit_code: Some(0),
            ..TerminalRun::default()
        },
        Duration::from_secs(1),
        false,
    );
    assert_eq!(
        out,
        ToolOutput::ok(
            "01234567\n[output cut: showing the first 8 of 14 bytes]\n[processes the command left running were ended]\nexit code 0"
        )
    );
    let out = report(
        &ctx,
        TerminalRun {
            signal: Some("SIGTERM".into()),
            ..TerminalRun::default()
        },
        Duration::from_secs(1),
        true,
    );
    assert_eq!(
        out,
        ToolOutput::error(
            "[the workspace is read-only to this command: the phase does not allow writing]\nkilled by SIGTERM"
        )
    );
}

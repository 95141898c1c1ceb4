//! Read, Write, Edit and MultiEdit: the file tools. Each confines its path with [`confine`] and
//! then opens it beneath the workspace handle, and does all its I/O through that one open file:
//! Edit reads and writes back through the handle it opened, never by the path again.

use std::io::{self, BufRead, BufReader, ErrorKind, Read, Seek, SeekFrom, Write};

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::fs::{File, OpenOptions};
use serde_json::Value;

use super::confine::{confine, led_outside, open_failed, Confined};
use super::content::{
    apply_edits, create_dirs, edited, looks_binary, not_a_regular_file, read_lines, Replacement,
};
use super::{blocking, shown, Args, ToolContext, ToolOutput};

/// Claude Code's name first (the one messages use), then rawko's older one.
const PATH: &[&str] = &["file_path", "path"];
const OLD: &[&str] = &["old_string", "old_text"];
const NEW: &[&str] = &["new_string", "new_text"];

pub(super) async fn read(input: &Value, ctx: &ToolContext) -> ToolOutput {
    let parsed = (|| {
        let args = Args::new("Read", input)?;
        Ok::<_, String>((
            args.str(PATH)?.to_owned(),
            args.positive(&["offset"])?.unwrap_or(1),
            args.positive(&["limit"])?,
        ))
    })();
    let (path, offset, limit) = match parsed {
        Ok(parsed) => parsed,
        Err(message) => return ToolOutput::error(message),
    };
    if let Some(client) = ctx.client.as_ref().filter(|c| c.offers().read) {
        return super::client::read(client.as_ref(), ctx, &path, offset, limit)
            .await
            .into();
    }
    let ctx = ctx.clone();
    blocking(move || read_file(&ctx, &path, offset, limit)).await
}

pub(super) async fn write(input: &Value, ctx: &ToolContext) -> ToolOutput {
    let parsed = (|| {
        let args = Args::new("Write", input)?;
        Ok::<_, String>((
            args.str(PATH)?.to_owned(),
            args.str(&["content"])?.to_owned(),
        ))
    })();
    let (path, content) = match parsed {
        Ok(parsed) => parsed,
        Err(message) => return ToolOutput::error(message),
    };
    if let Some(client) = ctx.client.as_ref().filter(|c| c.offers().write) {
        return super::client::write(client.as_ref(), ctx, &path, &content)
            .await
            .into();
    }
    // Held until the blocking write ends, even if this task stops waiting for it.
    let turn = super::file_locks::turn(&ctx.workspace, &path).await;
    let ctx = ctx.clone();
    blocking(move || {
        let _turn = turn;
        write_file(&ctx, &path, &content)
    })
    .await
}

pub(super) async fn edit(input: &Value, ctx: &ToolContext) -> ToolOutput {
    let parsed = (|| {
        let args = Args::new("Edit", input)?;
        Ok::<_, String>((
            args.str(PATH)?.to_owned(),
            vec![Replacement {
                old_text: args.str(OLD)?.to_owned(),
                new_text: args.str(NEW)?.to_owned(),
                replace_all: args.bool(&["replace_all"])?,
            }],
        ))
    })();
    match parsed {
        Ok((path, edits)) => edit_with(ctx, path, edits).await,
        Err(message) => ToolOutput::error(message),
    }
}

pub(super) async fn multi_edit(input: &Value, ctx: &ToolContext) -> ToolOutput {
    let parsed = (|| {
        let args = Args::new("MultiEdit", input)?;
        let path = args.str(PATH)?.to_owned();
        let list = match args.get(&["edits"]) {
            Some(Value::Array(list)) if !list.is_empty() => list,
            Some(Value::Array(_)) => return Err("MultiEdit: \"edits\" is empty; give at least one edit".to_owned()),
            Some(_) => return Err("MultiEdit: \"edits\" must be a list of {old_string, new_string, replace_all?} objects".to_owned()),
            None => return Err("MultiEdit needs \"edits\" (a list of {old_string, new_string, replace_all?} objects)".to_owned()),
        };
        let mut edits = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            let args = Args::new("MultiEdit", item).map_err(|_| {
                format!(
                    "MultiEdit: edit {} must be an object with old_string and new_string",
                    i + 1
                )
            })?;
            let field = |e: String| format!("{e} (edit {})", i + 1);
            edits.push(Replacement {
                old_text: args.str(OLD).map_err(field)?.to_owned(),
                new_text: args.str(NEW).map_err(field)?.to_owned(),
                replace_all: args.bool(&["replace_all"]).map_err(field)?,
            });
        }
        Ok::<_, String>((path, edits))
    })();
    match parsed {
        Ok((path, edits)) => edit_with(ctx, path, edits).await,
        Err(message) => ToolOutput::error(message),
    }
}

/// Edit and MultiEdit: through the client when it reads and writes files for rawko, else here.
async fn edit_with(ctx: &ToolContext, path: String, edits: Vec<Replacement>) -> ToolOutput {
    if let Some(client) = ctx
        .client
        .as_ref()
        .filter(|c| c.offers().read && c.offers().write)
    {
        return super::client::edit(client.as_ref(), ctx, &path, &edits)
            .await
            .into();
    }
    // Held until the blocking edit ends: another task's edit of the file reads it after this one.
    let turn = super::file_locks::turn(&ctx.workspace, &path).await;
    let ctx = ctx.clone();
    blocking(move || {
        let _turn = turn;
        edit_file(&ctx, &path, &edits)
    })
    .await
}

/// How a file tool opens what it names: the last component is never followed (the path is
/// resolved already, so a symlink there was put in after [`confine`] looked), and nothing blocks
/// on opening a FIFO.
fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.follow(FollowSymlinks::No).nonblock(true);
    options
}

/// Opens the existing regular file `confined` names beneath the workspace with `options`, or
/// says why not; `failed` words an error of the open itself.
fn open_regular(
    ctx: &ToolContext,
    given: &str,
    confined: &Confined,
    options: &OpenOptions,
    failed: impl Fn(&io::Error) -> String,
) -> Result<File, String> {
    let missing_or = |error: &io::Error| match error.kind() {
        ErrorKind::NotFound => format!("file \"{given}\" does not exist"),
        _ => failed(error),
    };
    // A look first (beneath the workspace, without opening), so that a directory, a FIFO or a
    // device gets its message and is never opened.
    let metadata = ctx
        .root
        .metadata(confined.beneath())
        .map_err(|error| open_failed(ctx, given, &error, missing_or))?;
    not_a_regular_file(&metadata, given)?;
    let file = ctx
        .root
        .open_with(confined.beneath(), options)
        .map_err(|error| open_failed(ctx, given, &error, missing_or))?;
    // What counts is what was opened: the path may have changed since the look.
    let metadata = file.metadata().map_err(|error| failed(&error))?;
    not_a_regular_file(&metadata, given)?;
    Ok(file)
}

fn read_file(
    ctx: &ToolContext,
    given: &str,
    offset: usize,
    limit: Option<usize>,
) -> Result<String, String> {
    let confined = confine(ctx, given)?;
    let reading = |error: &io::Error| format!("cannot read \"{given}\": {error}");
    let file = open_regular(ctx, given, &confined, options().read(true), reading)?;
    let failed = |error: io::Error| reading(&error);
    let mut reader = BufReader::new(file);
    if looks_binary(reader.fill_buf().map_err(failed)?) {
        return Err(format!("\"{given}\" is a binary file, not text"));
    }
    read_lines(reader, given, offset, limit, ctx.output_cap, &reading)
}

fn write_file(ctx: &ToolContext, given: &str, content: &str) -> Result<String, String> {
    let confined = confine(ctx, given)?;
    let writing = |error: &io::Error| format!("cannot write \"{given}\": {error}");
    match ctx.root.metadata(confined.beneath()) {
        Ok(metadata) if metadata.is_dir() => {
            return Err(format!("\"{given}\" is a directory, not a file"))
        }
        Ok(metadata) if !metadata.is_file() => {
            return Err(format!("\"{given}\" is not a regular file"))
        }
        Err(error) if led_outside(&error) => return Err(open_failed(ctx, given, &error, writing)),
        _ => {}
    }
    if let Some(parent) = confined
        .relative
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        create_dirs(ctx, parent).map_err(|error| {
            open_failed(ctx, given, &error, |error| {
                format!("cannot create the directories for \"{given}\": {error}")
            })
        })?;
    }
    let mut file = ctx
        .root
        .open_with(
            confined.beneath(),
            options().write(true).create(true).truncate(true),
        )
        .map_err(|error| open_failed(ctx, given, &error, writing))?;
    let metadata = file.metadata().map_err(|error| writing(&error))?;
    if !metadata.is_file() {
        return Err(format!("\"{given}\" is not a regular file"));
    }
    file.write_all(content.as_bytes())
        .map_err(|error| writing(&error))?;
    Ok(format!(
        "wrote {} bytes to {}",
        content.len(),
        shown(ctx, &confined.real)
    ))
}

/// Applies `edits` in order, each to the result of the one before, and writes the file once:
/// either every edit applies or the file is left as it was.
fn edit_file(ctx: &ToolContext, given: &str, edits: &[Replacement]) -> Result<String, String> {
    let confined = confine(ctx, given)?;
    let reading = |error: &io::Error| format!("cannot read \"{given}\": {error}");
    let writing = |error: &io::Error| format!("cannot write \"{given}\": {error}");
    // Opened once for reading and writing: the edit is written back through the handle it was
    // read from, whatever happens to the path meanwhile.
    let mut file = open_regular(
        ctx,
        given,
        &confined,
        options().read(true).write(true),
        |error| match error.kind() {
            ErrorKind::PermissionDenied => writing(error),
            _ => reading(error),
        },
    )?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|error| reading(&error))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("\"{given}\" is not UTF-8 text"))?;
    let (text, total) = apply_edits(text, given, edits)?;
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.write_all(text.as_bytes()))
        .and_then(|()| file.set_len(text.len() as u64))
        .map_err(|error| writing(&error))?;
    Ok(edited(total, edits.len(), &shown(ctx, &confined.real)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::run;
    use super::super::test_support::workspace;

    #[tokio::test]
    async fn read_returns_the_text() {
        let (dir, ctx) = workspace();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let out = run("Read", &json!({"path": "a.txt"}), &ctx).await;
        assert!(!out.is_error);
        assert_eq!(out.content, "one\ntwo\nthree\n");
    }

    #[tokio::test]
    async fn read_takes_offset_and_limit_in_lines() {
        let (dir, ctx) = workspace();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\nthree\nfour").unwrap();
        let out = run(
            "Read",
            &json!({"file_path": "a.txt", "offset": 2, "limit": 2}),
            &ctx,
        )
        .await;
        assert_eq!(out.content, "two\nthree\n");
        let out = run("Read", &json!({"path": "a.txt", "offset": 4}), &ctx).await;
        assert_eq!(out.content, "four");
        let out = run("Read", &json!({"path": "a.txt", "offset": 9}), &ctx).await;
        assert!(out.is_error);
        assert_eq!(
            out.content,
            "offset 9 is past the end of \"a.txt\", which has 4 lines"
        );
    }

    #[tokio::test]
    async fn read_cuts_at_the_output_cap_and_says_where_to_go_on() {
        let (dir, mut ctx) = workspace();
        ctx.output_cap = 10;
        std::fs::write(dir.path().join("a.txt"), "1234\n5678\nabcd\n").unwrap();
        let out = run("Read", &json!({"path": "a.txt"}), &ctx).await;
        assert!(!out.is_error);
        assert_eq!(
            out.content,
            "1234\n5678\n[cut: the output reached the 10-byte cap; to read on, use offset 3]"
        );
        let out = run("Read", &json!({"path": "a.txt", "offset": 3}), &ctx).await;
        assert_eq!(out.content, "abcd\n");

        std::fs::write(dir.path().join("long.txt"), "é".repeat(20)).unwrap();
        let out = run("Read", &json!({"path": "long.txt"}), &ctx).await;
        assert_eq!(
            out.content,
            "ééééé\n[cut: line 1 is longer than the 10-byte cap; only its start is shown]"
        );
    }

    #[tokio::test]
    async fn read_refuses_directories_binaries_and_missing_files() {
        let (dir, ctx) = workspace();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("blob.bin"), b"\x7fELF\0\0\x01").unwrap();
        std::fs::write(dir.path().join("latin1.txt"), b"caf\xe9\n").unwrap();
        for (path, expected) in [
            (
                "src",
                "\"src\" is a directory, not a file; Glob lists what is in it",
            ),
            ("blob.bin", "\"blob.bin\" is a binary file, not text"),
            ("latin1.txt", "\"latin1.txt\" is not UTF-8 text (line 1)"),
            ("nope.txt", "file \"nope.txt\" does not exist"),
        ] {
            let out = run("Read", &json!({"path": path}), &ctx).await;
            assert!(out.is_error, "{path}");
            assert_eq!(out.content, expected);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_edits_of_one_file_by_many_tasks_all_land() {
        // Each edit reads the file, changes it and writes it back: without turns, two at once
        // read the same text and the first one's change is lost.
        let (dir, ctx) = workspace();
        std::fs::write(dir.path().join("log.md"), "END\n").unwrap();
        let ctx = std::sync::Arc::new(ctx);
        let edits: Vec<_> = (0..48)
            .map(|i| {
                let ctx = ctx.clone();
                tokio::spawn(async move {
                    let input = json!({
                        "file_path": "log.md",
                        "old_string": "END",
                        "new_string": format!("entry {i}\nEND"),
                    });
                    run("Edit", &input, &ctx).await
                })
            })
            .collect();
        for edit in edits {
            let out = edit.await.unwrap();
            assert!(!out.is_error, "{}", out.content);
        }
        let text = std::fs::read_to_string(dir.path().join("log.md")).unwrap();
        for i in 0..48 {
            assert!(
                text.contains(&format!("entry {i}\n")),
                "entry {i} lost:\n{text}"
            );
        }
        assert!(text.ends_with("END\n"));
    }

    #[tokio::test]
    async fn write_creates_parent_directories() {
        let (dir, ctx) = workspace();
        let out = run(
            "Write",
            &json!({"path": "notes/plan.md", "content": "the plan\n"}),
            &ctx,
        )
        .await;
        assert_eq!(out.content, "wrote 9 bytes to notes/plan.md");
        assert!(!out.is_error);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("notes/plan.md")).unwrap(),
            "the plan\n"
        );
        let out = run(
            "Write",
            &json!({"path": "notes/plan.md", "content": "shorter"}),
            &ctx,
        )
        .await;
        assert_eq!(out.content, "wrote 7 bytes to notes/plan.md");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("notes/plan.md")).unwrap(),
            "shorter"
        );
        let out = run("Write", &json!({"path": "notes", "content": "x"}), &ctx).await;
        assert!(out.is_error);
        assert_eq!(out.content, "\"notes\" is a directory, not a file");
    }

    #[tokio::test]
    async fn write_through_a_symlink_inside_writes_its_target() {
        let (dir, ctx) = workspace();
        std::fs::create_dir(dir.path().join("real")).unwrap();
        std::os::unix::fs::symlink("real", dir.path().join("alias")).unwrap();
        let out = run(
            "Write",
            &json!({"path": "alias/x.txt", "content": "x"}),
            &ctx,
        )
        .await;
        assert_eq!(out.content, "wrote 1 bytes to real/x.txt");
        assert!(dir.path().join("real/x.txt").is_file());
    }

    #[tokio::test]
    async fn edit_replaces_unique_text() {
        let (dir, ctx) = workspace();
        let file = dir.path().join("main.rs");
        std::fs::write(&file, "fn main() {\n    old();\n}\n").unwrap();
        let out = run(
            "Edit",
            &json!({"path": "main.rs", "old_string": "old()", "new_string": "new()"}),
            &ctx,
        )
        .await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(out.content, "replaced 1 occurrence in main.rs");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "fn main() {\n    new();\n}\n"
        );
    }

    #[tokio::test]
    async fn edit_refuses_missing_empty_and_ambiguous_text() {
        let (dir, ctx) = workspace();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "x = 1\nx = 1\nx = 1\n").unwrap();
        for (old, expected) in [
            (
                "y = 2",
                "old_string was not found in \"a.txt\"; it must match the file exactly, including whitespace",
            ),
            (
                "",
                "old_string is empty; give the exact text to replace in \"a.txt\"",
            ),
            (
                "x = 1",
                "old_string occurs 3 times in \"a.txt\"; give more surrounding text to make it unique, or set replace_all",
            ),
        ] {
            let out = run(
                "Edit",
                &json!({"path": "a.txt", "old_text": old, "new_text": "z"}),
                &ctx,
            )
            .await;
            assert!(out.is_error, "{old:?}");
            assert_eq!(out.content, expected);
        }
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "x = 1\nx = 1\nx = 1\n"
        );
        let out = run(
            "Edit",
            &json!({"path": "gone.txt", "old_text": "a", "new_text": "b"}),
            &ctx,
        )
        .await;
        assert_eq!(out.content, "file \"gone.txt\" does not exist");
    }

    #[tokio::test]
    async fn edit_with_replace_all_replaces_every_occurrence() {
        let (dir, ctx) = workspace();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "x = 1\nx = 1\ny = 1\n").unwrap();
        let out = run(
            "Edit",
            &json!({"path": "a.txt", "old_text": "x = 1", "new_text": "x = 2", "replace_all": true}),
            &ctx,
        )
        .await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(out.content, "replaced 2 occurrences in a.txt");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "x = 2\nx = 2\ny = 1\n"
        );
    }

    #[tokio::test]
    async fn multi_edit_applies_every_edit_in_order_or_none() {
        let (dir, ctx) = workspace();
        let file = dir.path().join("a.rs");
        std::fs::write(&file, "let a = 1;\nlet b = 2;\nlet b2 = 2;\n").unwrap();
        let out = run(
            "MultiEdit",
            &json!({"file_path": file.display().to_string(), "edits": [
                {"old_string": "let a = 1;", "new_string": "let a = 10;"},
                {"old_string": "= 2;", "new_string": "= 20;", "replace_all": true},
                {"old_string": "a = 10", "new_string": "alpha = 10"}
            ]}),
            &ctx,
        )
        .await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(out.content, "replaced 4 occurrences in a.rs (3 edits)");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "let alpha = 10;\nlet b = 20;\nlet b2 = 20;\n"
        );
        // The second edit fails: the first is not written either.
        let out = run(
            "MultiEdit",
            &json!({"file_path": "a.rs", "edits": [
                {"old_string": "alpha", "new_string": "beta"},
                {"old_string": "gamma", "new_string": "delta"}
            ]}),
            &ctx,
        )
        .await;
        assert!(out.is_error);
        assert_eq!(
            out.content,
            "old_string was not found in \"a.rs\"; it must match the file exactly, including whitespace (edit 2; no edit was made)"
        );
        assert!(std::fs::read_to_string(&file)
            .unwrap()
            .starts_with("let alpha"));
        for (input, expected) in [
            (json!({"file_path": "a.rs"}), "MultiEdit needs \"edits\" (a list of {old_string, new_string, replace_all?} objects)"),
            (json!({"file_path": "a.rs", "edits": []}), "MultiEdit: \"edits\" is empty; give at least one edit"),
            (json!({"file_path": "a.rs", "edits": "x"}), "MultiEdit: \"edits\" must be a list of {old_string, new_string, replace_all?} objects"),
            (json!({"file_path": "a.rs", "edits": [7]}), "MultiEdit: edit 1 must be an object with old_string and new_string"),
            (json!({"file_path": "a.rs", "edits": [{"old_string": "a"}]}), "MultiEdit needs \"new_string\" (a string) (edit 1)"),
        ] {
            let out = run("MultiEdit", &input, &ctx).await;
            assert_eq!((out.is_error, out.content.as_str()), (true, expected), "{input}");
        }
    }

    #[tokio::test]
    async fn claude_code_field_names_are_the_canonical_ones() {
        let (dir, ctx) = workspace();
        let out = run(
            "Write",
            &json!({"file_path": "n.md", "content": "one two"}),
            &ctx,
        )
        .await;
        assert!(!out.is_error, "{out:?}");
        let out = run(
            "Edit",
            &json!({"file_path": "n.md", "old_string": "two", "new_string": "three", "replace_all": false}),
            &ctx,
        )
        .await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("n.md")).unwrap(),
            "one three"
        );
    }

    #[tokio::test]
    async fn edit_that_shortens_the_file_leaves_nothing_behind() {
        let (dir, ctx) = workspace();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "keep\na long line that goes away\nend\n").unwrap();
        let out = run(
            "Edit",
            &json!({"file_path": "a.txt", "old_string": "a long line that goes away", "new_string": "x"}),
            &ctx,
        )
        .await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep\nx\nend\n");
    }

    #[tokio::test]
    async fn an_absolute_symlink_inside_the_workspace_still_leads_to_its_target() {
        let (dir, ctx) = workspace();
        std::fs::create_dir(ctx.workspace.join("real")).unwrap();
        std::os::unix::fs::symlink(ctx.workspace.join("real"), dir.path().join("abs")).unwrap();
        let out = run(
            "Write",
            &json!({"path": "abs/x.txt", "content": "one"}),
            &ctx,
        )
        .await;
        assert_eq!(out.content, "wrote 3 bytes to real/x.txt");
        let out = run(
            "Edit",
            &json!({"path": "abs/x.txt", "old_string": "one", "new_string": "two"}),
            &ctx,
        )
        .await;
        assert_eq!(out.content, "replaced 1 occurrence in real/x.txt");
        let out = run("Read", &json!({"path": "abs/x.txt"}), &ctx).await;
        assert_eq!(out, super::super::ToolOutput::ok("two"));
    }

    #[tokio::test]
    async fn a_fifo_is_refused_without_blocking() {
        let (dir, ctx) = workspace();
        let status = std::process::Command::new("mkfifo")
            .arg(dir.path().join("pipe"))
            .status()
            .unwrap();
        assert!(status.success());
        for (tool, input) in [
            ("Read", json!({"path": "pipe"})),
            ("Write", json!({"path": "pipe", "content": "x"})),
            (
                "Edit",
                json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
            ),
        ] {
            let out =
                tokio::time::timeout(std::time::Duration::from_secs(10), run(tool, &input, &ctx))
                    .await
                    .unwrap_or_else(|_| panic!("{tool} blocked on a FIFO"));
            assert!(out.is_error, "{tool}");
            assert_eq!(out.content, "\"pipe\" is not a regular file", "{tool}");
        }
        let out = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            run("Grep", &json!({"pattern": "x"}), &ctx),
        )
        .await
        .expect("Grep blocked on a FIFO");
        assert_eq!(out.content, "no matches for \"x\"");
    }

    #[test]
    fn missing_directories_are_not_made_through_a_symlink_leading_outside() {
        let (dir, ctx) = workspace();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("d")).unwrap();
        let error = super::create_dirs(&ctx, std::path::Path::new("d/sub")).unwrap_err();
        assert!(super::led_outside(&error), "{error}");
        // "d" exists, but as a link out: not taken for a directory that is there already.
        let error = super::create_dirs(&ctx, std::path::Path::new("d")).unwrap_err();
        assert!(super::led_outside(&error), "{error}");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        super::create_dirs(&ctx, std::path::Path::new("e/f/g")).unwrap();
        super::create_dirs(&ctx, std::path::Path::new("e/f/g")).unwrap();
        assert!(dir.path().join("e/f/g").is_dir());
    }
}

//! What the file tools do with a file's contents, wherever its bytes come from (the workspace,
//! opened beneath its handle in `files.rs`, or an editor that reads and writes files for rawko in
//! `client.rs`): the checks on what was opened, reading lines as Read answers them, applying
//! Edit's replacements and wording what they did, and creating missing directories.

use std::io::{self, BufRead, ErrorKind};

use cap_std::fs::Metadata;

use super::ToolContext;
use crate::clip::prefix_bytes;

/// A file whose first bytes hold a NUL is taken for binary, as git and ripgrep do.
const BINARY_SNIFF_BYTES: usize = 8192;

/// Why `metadata` is not that of a regular file `given` can name, if it is not.
pub(super) fn not_a_regular_file(metadata: &Metadata, given: &str) -> Result<(), String> {
    if metadata.is_dir() {
        return Err(format!(
            "\"{given}\" is a directory, not a file; Glob lists what is in it"
        ));
    }
    if !metadata.is_file() {
        return Err(format!("\"{given}\" is not a regular file"));
    }
    Ok(())
}

/// Whether `text` looks binary (a NUL in its first bytes), as git and ripgrep judge.
pub(super) fn looks_binary(text: &[u8]) -> bool {
    text.iter().take(BINARY_SNIFF_BYTES).any(|byte| *byte == 0)
}

/// The lines of `reader` from `offset` (1-based), at most `limit` of them and at most `cap`
/// bytes, with a note saying where to read on when cut: what Read answers.
pub(super) fn read_lines(
    mut reader: impl BufRead,
    given: &str,
    offset: usize,
    limit: Option<usize>,
    cap: usize,
    reading: &dyn Fn(&io::Error) -> String,
) -> Result<String, String> {
    let failed = |error: io::Error| reading(&error);
    let mut text = String::new();
    let mut line = Vec::new();
    let mut line_number = 0;
    let mut lines_taken = 0;
    let mut cut_at_line = None;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(failed)? == 0 {
            break;
        }
        line_number += 1;
        if line_number < offset {
            continue;
        }
        if limit.is_some_and(|limit| lines_taken >= limit) {
            break;
        }
        if line.contains(&0) {
            return Err(format!("\"{given}\" is a binary file, not text"));
        }
        let line_text = std::str::from_utf8(&line)
            .map_err(|_| format!("\"{given}\" is not UTF-8 text (line {line_number})"))?;
        if text.len() + line_text.len() > cap {
            // Whole lines only, unless the first line alone is over the cap.
            if lines_taken == 0 {
                text.push_str(prefix_bytes(line_text, cap));
            }
            cut_at_line = Some(line_number);
            break;
        }
        text.push_str(line_text);
        lines_taken += 1;
    }

    if offset > 1 && line_number < offset {
        return Err(format!(
            "offset {offset} is past the end of \"{given}\", which has {line_number} lines"
        ));
    }
    if let Some(line) = cut_at_line {
        if !text.ends_with('\n') {
            text.push('\n');
        }
        if lines_taken > 0 {
            text.push_str(&format!(
                "[cut: the output reached the {cap}-byte cap; to read on, use offset {line}]"
            ));
        } else {
            text.push_str(&format!(
                "[cut: line {line} is longer than the {cap}-byte cap; only its start is shown]"
            ));
        }
    }
    Ok(text)
}

/// Creates the directory `relative` and every missing one above it, each beneath the workspace.
///
/// Unlike `create_dir_all`, a component that exists already is looked at beneath the workspace
/// (following symlinks that stay inside): one that is a symlink leading out is refused as an
/// escape, not taken for "already exists".
pub(super) fn create_dirs(ctx: &ToolContext, relative: &std::path::Path) -> io::Result<()> {
    let mut prefix = std::path::PathBuf::new();
    for component in relative.components() {
        prefix.push(component);
        match ctx.root.create_dir(&prefix) {
            Ok(()) => {}
            Err(error) if error.kind() == ErrorKind::AlreadyExists => {
                if !ctx.root.metadata(&prefix)?.is_dir() {
                    return Err(error);
                }
            }
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

pub(super) struct Replacement {
    pub(super) old_text: String,
    pub(super) new_text: String,
    pub(super) replace_all: bool,
}

/// `text` with `edits` applied in order, each to the result of the one before, and how many
/// occurrences were replaced; or why not (then no edit counts).
pub(super) fn apply_edits(
    mut text: String,
    given: &str,
    edits: &[Replacement],
) -> Result<(String, usize), String> {
    let mut total = 0;
    for (i, edit) in edits.iter().enumerate() {
        let which = if edits.len() > 1 {
            format!(" (edit {}; no edit was made)", i + 1)
        } else {
            String::new()
        };
        if edit.old_text.is_empty() {
            return Err(format!(
                "old_string is empty; give the exact text to replace in \"{given}\"{which}"
            ));
        }
        if edit.old_text == edit.new_text {
            return Err(format!(
                "old_string and new_string are the same; nothing would change{which}"
            ));
        }
        let count = text.matches(edit.old_text.as_str()).count();
        if count == 0 {
            return Err(format!(
                "old_string was not found in \"{given}\"; it must match the file exactly, including whitespace{which}"
            ));
        }
        if count > 1 && !edit.replace_all {
            return Err(format!(
                "old_string occurs {count} times in \"{given}\"; give more surrounding text to make it unique, or set replace_all{which}"
            ));
        }
        text = text.replace(edit.old_text.as_str(), &edit.new_text);
        total += count;
    }
    Ok((text, total))
}

/// What Edit and MultiEdit answer when they replaced `total` occurrences with `edits` edits.
pub(super) fn edited(total: usize, edits: usize, shown: &str) -> String {
    let occurrences = if total == 1 {
        "occurrence"
    } else {
        "occurrences"
    };
    let edits_made = if edits > 1 {
        format!(" ({edits} edits)")
    } else {
        String::new()
    };
    format!("replaced {total} {occurrences} in {shown}{edits_made}")
}

//! Glob and Grep: finding files and text in the workspace.
//!
//! Both walk with [`walk`], which leaves out what ripgrep's walker would (`.gitignore`, `.ignore`,
//! `.git/info/exclude`) and opens every directory and file beneath the workspace handle. The walk
//! always starts at the workspace root, so ignore files between the workspace and a searched
//! subdirectory apply, and nothing above the workspace is read: parent ignore files and the user's
//! global git excludes are left out. `.gitignore` applies whether or not the workspace is a git
//! repository. Hidden files are included, `.git` is not, and symlinks are listed but not followed,
//! so neither a link nor a directory swapped for one mid-walk can lead a search out of the
//! workspace.

use std::io::Read;
use std::path::Path;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::fs::OpenOptions;
use globset::{GlobBuilder, GlobMatcher};
use regex::{Regex, RegexBuilder};
use serde_json::Value;

use super::confine::{confine, open_failed, Confined};
use super::walk::walk;
use super::{blocking, shown, Args, ToolContext, ToolOutput};
use crate::clip::prefix_bytes;

/// A file whose first bytes hold a NUL is taken for binary and not searched, as ripgrep does.
const BINARY_SNIFF_BYTES: usize = 8192;
/// Files larger than this are not searched.
const MAX_SEARCHED_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// A matching line longer than this is shown cut.
const MAX_LINE_BYTES: usize = 1000;

pub(super) async fn glob(input: &Value, ctx: &ToolContext) -> ToolOutput {
    let parsed = (|| {
        let args = Args::new("Glob", input)?;
        Ok::<_, String>((
            args.str(&["pattern"])?.to_owned(),
            args.opt_str(&["path"])?.map(str::to_owned),
        ))
    })();
    let (pattern, path) = match parsed {
        Ok(parsed) => parsed,
        Err(message) => return ToolOutput::error(message),
    };
    let ctx = ctx.clone();
    blocking(move || glob_files(&ctx, &pattern, path.as_deref())).await
}

pub(super) async fn grep(input: &Value, ctx: &ToolContext) -> ToolOutput {
    let parsed = (|| {
        let args = Args::new("Grep", input)?;
        let mode = match args.opt_str(&["output_mode"])? {
            None | Some("files_with_matches") => Mode::Files,
            Some("content") => Mode::Content,
            Some("count") => Mode::Count,
            Some(other) => {
                return Err(format!(
                    "Grep: \"output_mode\" is \"{other}\"; it must be content, files_with_matches or count"
                ))
            }
        };
        let line_numbers = match args.get(&["-n"]) {
            None => true,
            Some(_) => args.bool(&["-n"])?,
        };
        Ok::<_, String>(Search {
            pattern: args.str(&["pattern"])?.to_owned(),
            path: args.opt_str(&["path"])?.map(str::to_owned),
            glob: args.opt_str(&["glob"])?.map(str::to_owned),
            case_insensitive: args.bool(&["-i", "case_insensitive"])?,
            mode,
            line_numbers,
            head_limit: args.positive(&["head_limit"])?,
        })
    })();
    let search = match parsed {
        Ok(parsed) => parsed,
        Err(message) => return ToolOutput::error(message),
    };
    let ctx = ctx.clone();
    blocking(move || grep_files(&ctx, &search)).await
}

/// The directory or file `path` names (the workspace when absent), confined and checked to exist.
fn search_base(
    ctx: &ToolContext,
    path: Option<&str>,
) -> Result<(Confined, cap_std::fs::Metadata), String> {
    let given = path.unwrap_or(".");
    let base = confine(ctx, given)?;
    let metadata = ctx.root.metadata(base.beneath()).map_err(|error| {
        open_failed(ctx, given, &error, |error| {
            format!("cannot search \"{given}\": {error}")
        })
    })?;
    Ok((base, metadata))
}

fn compile_glob(pattern: &str) -> Result<GlobMatcher, String> {
    if pattern.starts_with('/') {
        return Err(format!(
            "glob pattern \"{pattern}\" is absolute; give it relative to the searched directory"
        ));
    }
    let relative = pattern.strip_prefix("./").unwrap_or(pattern);
    GlobBuilder::new(relative)
        .literal_separator(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|error| format!("bad glob pattern \"{pattern}\": {error}"))
}

fn glob_files(ctx: &ToolContext, pattern: &str, path: Option<&str>) -> Result<String, String> {
    let matcher = compile_glob(pattern)?;
    let (base, metadata) = search_base(ctx, path)?;
    if !metadata.is_dir() {
        return Err(format!("\"{}\" is not a directory", path.unwrap_or(".")));
    }
    let mut found: Vec<String> = Vec::new();
    walk(ctx, &base.relative, &mut |entry| {
        let matches = entry
            .relative
            .strip_prefix(&base.relative)
            .is_ok_and(|relative| matcher.is_match(relative));
        if !entry.kind.is_dir() && matches {
            found.push(entry.relative.to_string_lossy().into_owned());
        }
        true
    });
    if found.is_empty() {
        return Ok(format!("no files match \"{pattern}\""));
    }
    found.sort();
    let mut listing = Capped::new(ctx.output_cap);
    for (index, file) in found.iter().enumerate() {
        if !listing.push_line(file) {
            let more = found.len() - index;
            listing.text.push_str(&format!(
                "[cut: {more} more files did not fit in the {}-byte cap; narrow the pattern]",
                ctx.output_cap
            ));
            break;
        }
    }
    Ok(listing.text.trim_end_matches('\n').to_owned())
}

struct Search {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    case_insensitive: bool,
    mode: Mode,
    /// `file:line:text` rather than `file:text` in content mode.
    line_numbers: bool,
    /// At most this many lines (content) or files (the other modes).
    head_limit: Option<usize>,
}

/// What Grep answers (Claude Code's `output_mode`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `file:line:text` per matching line.
    Content,
    /// The files that match, one per line (the default).
    Files,
    /// `file:count` per file that matches.
    Count,
}

/// Which files Grep searches: a pattern with a `/` matches the path below the searched directory,
/// one without matches the file name.
struct FileFilter {
    matcher: GlobMatcher,
    by_name: bool,
}

impl FileFilter {
    fn new(pattern: &str) -> Result<Self, String> {
        Ok(FileFilter {
            matcher: compile_glob(pattern)?,
            by_name: !pattern.contains('/'),
        })
    }

    fn admits(&self, relative: &Path) -> bool {
        if self.by_name {
            relative
                .file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        } else {
            self.matcher.is_match(relative)
        }
    }
}

fn grep_files(ctx: &ToolContext, search: &Search) -> Result<String, String> {
    let regex = RegexBuilder::new(&search.pattern)
        .case_insensitive(search.case_insensitive)
        .build()
        .map_err(|error| format!("bad regex \"{}\": {error}", search.pattern))?;
    let filter = search.glob.as_deref().map(FileFilter::new).transpose()?;
    let (base, metadata) = search_base(ctx, search.path.as_deref())?;

    let mut matches = Capped::new(ctx.output_cap);
    matches.limit = search.head_limit;
    if metadata.is_file() {
        search_file(ctx, &regex, &base.relative, search, &mut matches);
    } else {
        walk(ctx, &base.relative, &mut |entry| {
            if !entry.kind.is_file() {
                return true;
            }
            let Ok(relative) = entry.relative.strip_prefix(&base.relative) else {
                return true;
            };
            if filter
                .as_ref()
                .is_some_and(|filter| !filter.admits(relative))
            {
                return true;
            }
            search_file(ctx, &regex, &entry.relative, search, &mut matches)
        });
    }
    if matches.lines == 0 {
        return Ok(format!("no matches for \"{}\"", search.pattern));
    }
    if matches.cut {
        matches.text.push_str(&format!(
            "[cut: more matches did not fit in the {}-byte cap; narrow the search]",
            ctx.output_cap
        ));
    } else if matches.limited {
        matches.text.push_str(&format!(
            "[head_limit {}: there are more; raise it or narrow the search]",
            search.head_limit.unwrap_or_default()
        ));
    }
    Ok(matches.text.trim_end_matches('\n').to_owned())
}

/// Adds what `file` (relative to the workspace) contributes in the search's mode to `matches`;
/// false once they are full. The file is opened beneath the workspace handle without following a
/// symlink at its last component; one that cannot be, or is not a regular file, adds nothing.
fn search_file(
    ctx: &ToolContext,
    regex: &Regex,
    file: &Path,
    search: &Search,
    matches: &mut Capped,
) -> bool {
    let mut options = OpenOptions::new();
    options.read(true).follow(FollowSymlinks::No).nonblock(true);
    let Ok(mut handle) = ctx.root.open_with(file, &options) else {
        return true;
    };
    let searchable = handle
        .metadata()
        .is_ok_and(|metadata| metadata.is_file() && metadata.len() <= MAX_SEARCHED_FILE_BYTES);
    if !searchable {
        return true;
    }
    let mut bytes = Vec::new();
    if handle.read_to_end(&mut bytes).is_err() {
        return true;
    }
    if bytes.iter().take(BINARY_SNIFF_BYTES).any(|byte| *byte == 0) {
        return true;
    }
    let text = String::from_utf8_lossy(&bytes);
    let name = shown(ctx, &ctx.workspace.join(file));
    match search.mode {
        Mode::Files => {
            return !text.lines().any(|line| regex.is_match(line)) || matches.push_line(&name);
        }
        Mode::Count => {
            let count = text.lines().filter(|line| regex.is_match(line)).count();
            return count == 0 || matches.push_line(&format!("{name}:{count}"));
        }
        Mode::Content => {}
    }
    for (index, line) in text.lines().enumerate() {
        if !regex.is_match(line) {
            continue;
        }
        let shown_line = prefix_bytes(line, MAX_LINE_BYTES);
        let ellipsis = if shown_line.len() < line.len() {
            " […]"
        } else {
            ""
        };
        let entry = if search.line_numbers {
            format!("{name}:{}:{shown_line}{ellipsis}", index + 1)
        } else {
            format!("{name}:{shown_line}{ellipsis}")
        };
        if !matches.push_line(&entry) {
            return false;
        }
    }
    true
}

/// Lines of output up to a byte cap.
struct Capped {
    text: String,
    cap: usize,
    lines: usize,
    cut: bool,
    /// At most this many lines (Grep's `head_limit`).
    limit: Option<usize>,
    limited: bool,
}

impl Capped {
    fn new(cap: usize) -> Self {
        Capped {
            text: String::new(),
            cap,
            lines: 0,
            cut: false,
            limit: None,
            limited: false,
        }
    }

    /// Adds `line` if it fits; false (and marked cut, or limited) if it does not.
    fn push_line(&mut self, line: &str) -> bool {
        if self.limit.is_some_and(|limit| self.lines >= limit) {
            self.limited = true;
            return false;
        }
        if self.text.len() + line.len() + 1 > self.cap {
            self.cut = true;
            return false;
        }
        self.text.push_str(line);
        self.text.push('\n');
        self.lines += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::super::test_support::workspace;
    use super::super::{run, ToolContext};

    fn files(root: &Path, files: &[(&str, &str)]) {
        for (path, content) in files {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
    }

    async fn ok(tool: &str, input: serde_json::Value, ctx: &ToolContext) -> String {
        let out = run(tool, &input, ctx).await;
        assert!(!out.is_error, "{tool} {input}: {}", out.content);
        out.content
    }

    #[tokio::test]
    async fn glob_lists_matching_files_sorted_and_workspace_relative() {
        let (dir, ctx) = workspace();
        files(
            dir.path(),
            &[
                ("z.rs", ""),
                ("a.rs", ""),
                ("README.md", ""),
                ("src/b.rs", ""),
                ("src/deep/c.rs", ""),
            ],
        );
        assert_eq!(
            ok("Glob", json!({"pattern": "**/*.rs"}), &ctx).await,
            "a.rs\nsrc/b.rs\nsrc/deep/c.rs\nz.rs"
        );
        assert_eq!(
            ok("Glob", json!({"pattern": "*.rs"}), &ctx).await,
            "a.rs\nz.rs"
        );
        assert_eq!(
            ok("Glob", json!({"pattern": "src/*.rs"}), &ctx).await,
            "src/b.rs"
        );
        assert_eq!(
            ok("Glob", json!({"pattern": "**/*.rs", "path": "src"}), &ctx).await,
            "src/b.rs\nsrc/deep/c.rs"
        );
        assert_eq!(
            ok("Glob", json!({"pattern": "*", "path": "src/deep"}), &ctx).await,
            "src/deep/c.rs"
        );
        assert_eq!(
            ok("Glob", json!({"pattern": "*.py"}), &ctx).await,
            "no files match \"*.py\""
        );
    }

    #[tokio::test]
    async fn glob_respects_gitignore_outside_a_git_repository() {
        let (dir, ctx) = workspace();
        files(
            dir.path(),
            &[
                (".gitignore", "target/\n*.log\n"),
                ("src/main.rs", ""),
                ("src/run.log", ""),
                ("src/.gitignore", "generated.rs\n"),
                ("src/generated.rs", ""),
                ("target/debug/out.rs", ""),
                (".github/ci.yml", ""),
            ],
        );
        assert_eq!(
            ok("Glob", json!({"pattern": "**/*"}), &ctx).await,
            ".github/ci.yml\n.gitignore\nsrc/.gitignore\nsrc/main.rs"
        );
        // The root .gitignore still applies when only a subdirectory is listed.
        assert_eq!(
            ok("Glob", json!({"pattern": "*", "path": "src"}), &ctx).await,
            "src/.gitignore\nsrc/main.rs"
        );
    }

    #[tokio::test]
    async fn ignore_files_above_the_workspace_are_not_read() {
        let root = tempfile::tempdir().unwrap();
        files(
            root.path(),
            &[(".gitignore", "*.md\n"), ("w/notes.md", "plan\n")],
        );
        let ctx = ToolContext::new(&root.path().join("w")).unwrap();
        assert_eq!(ok("Glob", json!({"pattern": "*"}), &ctx).await, "notes.md");
        assert_eq!(
            ok(
                "Grep",
                json!({"output_mode": "content", "pattern": "plan"}),
                &ctx
            )
            .await,
            "notes.md:1:plan"
        );
    }

    #[tokio::test]
    async fn glob_refuses_bad_patterns_and_non_directories() {
        let (dir, ctx) = workspace();
        files(dir.path(), &[("a.rs", "")]);
        let out = run("Glob", &json!({"pattern": "a[b"}), &ctx).await;
        assert!(out.is_error);
        assert!(
            out.content.starts_with("bad glob pattern \"a[b\""),
            "{}",
            out.content
        );
        let out = run("Glob", &json!({"pattern": "*", "path": "a.rs"}), &ctx).await;
        assert!(out.is_error);
        assert_eq!(out.content, "\"a.rs\" is not a directory");
    }

    #[tokio::test]
    async fn glob_output_is_capped() {
        let (dir, mut ctx) = workspace();
        ctx.output_cap = 12;
        files(
            dir.path(),
            &[("a1", ""), ("a2", ""), ("a3", ""), ("a4", ""), ("a5", "")],
        );
        assert_eq!(
            ok("Glob", json!({"pattern": "a*"}), &ctx).await,
            "a1\na2\na3\na4\n[cut: 1 more files did not fit in the 12-byte cap; narrow the pattern]"
        );
    }

    #[tokio::test]
    async fn grep_answers_file_line_text() {
        let (dir, ctx) = workspace();
        files(
            dir.path(),
            &[
                ("src/lib.rs", "pub mod a;\nfn helper() {}\n"),
                ("src/main.rs", "fn main() {\n    helper();\n}\n"),
                ("notes.md", "fn is not code here\n"),
            ],
        );
        assert_eq!(
            ok("Grep", json!({"output_mode": "content", "pattern": r"^fn \w+"}), &ctx).await,
            "notes.md:1:fn is not code here\nsrc/lib.rs:2:fn helper() {}\nsrc/main.rs:1:fn main() {"
        );
        assert_eq!(
            ok(
                "Grep",
                json!({"output_mode": "content", "pattern": "HELPER", "glob": "*.rs", "case_insensitive": true}),
                &ctx
            )
            .await,
            "src/lib.rs:2:fn helper() {}\nsrc/main.rs:2:    helper();"
        );
        assert_eq!(
            ok(
                "Grep",
                json!({"output_mode": "content", "pattern": "HELPER"}),
                &ctx
            )
            .await,
            "no matches for \"HELPER\""
        );
        assert_eq!(
            ok(
                "Grep",
                json!({"output_mode": "content", "pattern": "helper", "path": "src/main.rs"}),
                &ctx
            )
            .await,
            "src/main.rs:2:    helper();"
        );
        assert_eq!(
            ok(
                "Grep",
                json!({"output_mode": "content", "pattern": "fn", "path": "src", "glob": "src/m*.rs"}),
                &ctx
            )
            .await,
            "no matches for \"fn\""
        );
        assert_eq!(
            ok(
                "Grep",
                json!({"output_mode": "content", "pattern": "fn", "path": "src", "glob": "m*.rs"}),
                &ctx
            )
            .await,
            "src/main.rs:1:fn main() {"
        );
    }

    #[tokio::test]
    async fn grep_respects_gitignore_and_skips_binaries() {
        let (dir, ctx) = workspace();
        // A repository this time: .git itself is never searched.
        files(
            dir.path(),
            &[
                (".gitignore", "build/\n"),
                ("build/gen.rs", "needle\n"),
                ("src/a.rs", "needle\n"),
                (".git/HEAD", "needle\n"),
            ],
        );
        std::fs::write(dir.path().join("blob.bin"), b"needle\0\x01").unwrap();
        assert_eq!(
            ok(
                "Grep",
                json!({"output_mode": "content", "pattern": "needle"}),
                &ctx
            )
            .await,
            "src/a.rs:1:needle"
        );
    }

    #[tokio::test]
    async fn grep_bad_regex_is_a_clear_error() {
        let (_dir, ctx) = workspace();
        let out = run(
            "Grep",
            &json!({"output_mode": "content", "pattern": "fn (main"}),
            &ctx,
        )
        .await;
        assert!(out.is_error);
        assert!(
            out.content.starts_with("bad regex \"fn (main\": "),
            "{}",
            out.content
        );
        assert!(out.content.contains("unclosed group"), "{}", out.content);
    }

    #[tokio::test]
    async fn grep_output_is_capped() {
        let (dir, mut ctx) = workspace();
        ctx.output_cap = 20;
        files(dir.path(), &[("a", "x\nx\nx\nx\nx\nx\n")]);
        assert_eq!(
            ok("Grep", json!({"output_mode": "content", "pattern": "x"}), &ctx).await,
            "a:1:x\na:2:x\na:3:x\n[cut: more matches did not fit in the 20-byte cap; narrow the search]"
        );
    }

    #[tokio::test]
    async fn grep_output_modes_are_claude_codes() {
        let (dir, ctx) = workspace();
        files(
            dir.path(),
            &[
                ("a.rs", "fn a() {}\nfn b() {}\n"),
                ("b.rs", "fn c() {}\n"),
                ("c.md", "nothing\n"),
            ],
        );
        // The default lists the files that match.
        assert_eq!(
            ok("Grep", json!({"pattern": "fn"}), &ctx).await,
            "a.rs\nb.rs"
        );
        assert_eq!(
            ok(
                "Grep",
                json!({"pattern": "fn", "output_mode": "count"}),
                &ctx
            )
            .await,
            "a.rs:2\nb.rs:1"
        );
        assert_eq!(
            ok(
                "Grep",
                json!({"pattern": "fn", "output_mode": "content", "-n": false}),
                &ctx
            )
            .await,
            "a.rs:fn a() {}\na.rs:fn b() {}\nb.rs:fn c() {}"
        );
        assert_eq!(
            ok(
                "Grep",
                json!({"pattern": "FN", "-i": true, "output_mode": "content", "head_limit": 1}),
                &ctx
            )
            .await,
            "a.rs:1:fn a() {}\n[head_limit 1: there are more; raise it or narrow the search]"
        );
        let out = run(
            "Grep",
            &json!({"pattern": "fn", "output_mode": "lines"}),
            &ctx,
        )
        .await;
        assert_eq!(
            (out.is_error, out.content.as_str()),
            (
                true,
                "Grep: \"output_mode\" is \"lines\"; it must be content, files_with_matches or count"
            )
        );
    }
}

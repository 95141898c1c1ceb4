//! The path race of issue 14. An agent swaps a directory of the workspace for a symlink to a
//! directory outside it, over and over (`renameat2(RENAME_EXCHANGE)`, as a Bash call of its own
//! could), while the file tools work on paths under that directory. Not one of their reads,
//! writes, edits or searches may reach outside (invariant 7).
//!
//! `race_swapping_a_directory_for_an_outside_symlink_never_escapes` is the bounded run the suite
//! keeps (a second or two). The bigger run is by hand:
//! `RAWKO_RACE_SCALE=10 cargo test -p rawko --lib race_tests -- --ignored --nocapture`
//! (ten times the calls; it prints its tally).

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::fs::{renameat_with, RenameFlags, CWD};
use serde_json::{json, Value};

use super::{run, ToolContext};

const OUTSIDE_TEXT: &str = "OUTSIDE secret\n";

/// How many calls of each tool one run makes at scale 1.
const WRITES: usize = 1000;
const READS: usize = 1000;
const EDITS: usize = 100;
const SEARCHES: usize = 40;

/// The workspace `w/` with the directory `w/d/` and the symlink `w/swap` to `outside/`, which
/// holds files of the same names (so a redirected call finds something to act on) and a canary.
struct Arena {
    _root: tempfile::TempDir,
    ctx: ToolContext,
    outside: PathBuf,
}

impl Arena {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let base = root.path().canonicalize().unwrap();
        let ws = base.join("w");
        let outside = base.join("outside");
        std::fs::create_dir_all(ws.join("d")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(ws.join("d/file.txt"), "inside\n").unwrap();
        std::fs::write(ws.join("d/edit.txt"), "state: 0\n").unwrap();
        std::fs::write(outside.join("file.txt"), OUTSIDE_TEXT).unwrap();
        std::fs::write(outside.join("edit.txt"), "state: 0\n").unwrap();
        std::fs::write(outside.join("only-outside.txt"), OUTSIDE_TEXT).unwrap();
        std::fs::write(outside.join("canary.txt"), "canary\n").unwrap();
        std::os::unix::fs::symlink(&outside, ws.join("swap")).unwrap();
        let ctx = ToolContext::new(&ws).unwrap();
        Arena {
            _root: root,
            ctx,
            outside,
        }
    }

    /// Every file and directory below `outside/`, with the text of each file.
    fn outside_tree(&self) -> BTreeMap<PathBuf, String> {
        fn walk(dir: &Path, base: &Path, into: &mut BTreeMap<PathBuf, String>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                let relative = path.strip_prefix(base).unwrap().to_path_buf();
                let kind = std::fs::symlink_metadata(&path).unwrap().file_type();
                if kind.is_dir() {
                    into.insert(relative, "<dir>".to_owned());
                    walk(&path, base, into);
                } else {
                    let text = std::fs::read(&path).unwrap();
                    into.insert(relative, String::from_utf8_lossy(&text).into_owned());
                }
            }
        }
        let mut tree = BTreeMap::new();
        walk(&self.outside, &self.outside, &mut tree);
        tree
    }
}

/// A thread that exchanges `w/d` and `w/swap` until it is stopped: `d` is the real directory one
/// moment and the symlink to `outside/` the next.
struct Swapper {
    stop: Arc<AtomicBool>,
    swaps: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Swapper {
    fn start(ws: &Path) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU64::new(0));
        let (a, b) = (ws.join("d"), ws.join("swap"));
        let thread = {
            let (stop, swaps) = (stop.clone(), swaps.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE)
                        .expect("renameat2(RENAME_EXCHANGE)");
                    swaps.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        // The calls start once the exchanges are under way.
        let started = Instant::now();
        while swaps.load(Ordering::Relaxed) < 100 && started.elapsed() < Duration::from_secs(10) {
            std::thread::yield_now();
        }
        Swapper {
            stop,
            swaps,
            thread: Some(thread),
        }
    }

    /// Stops the thread and says how many exchanges it made.
    fn stop(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        self.swaps.load(Ordering::Relaxed)
    }
}

impl Drop for Swapper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// What the tools did while the swapper ran.
#[derive(Default)]
struct Tally {
    calls: u64,
    ok: u64,
    refused: u64,
    other_errors: BTreeMap<String, u64>,
    /// Reads whose answer held text from outside.
    reads_outside: u64,
    /// Greps and Globs whose answer named or quoted a file outside.
    searches_outside: u64,
    /// Files and directories outside that Writes created or changed (counted from `outside/`
    /// afterwards, so many Writes to one file count once).
    writes_outside: u64,
    /// Edits whose change landed in `outside/edit.txt`.
    edits_outside: u64,
    swaps: u64,
    elapsed: Duration,
}

impl Tally {
    fn escapes(&self) -> u64 {
        self.reads_outside + self.searches_outside + self.writes_outside + self.edits_outside
    }

    async fn call(&mut self, ctx: &ToolContext, tool: &str, input: Value) -> Option<String> {
        let out = run(tool, &input, ctx).await;
        self.calls += 1;
        if !out.is_error {
            self.ok += 1;
            return Some(out.content);
        }
        if out.content.contains("outside the workspace") {
            self.refused += 1;
        } else {
            // The message without the call's own file name, so alike errors add up.
            let kind = out.content.replace(|c: char| c.is_ascii_digit(), "N");
            *self.other_errors.entry(kind).or_default() += 1;
        }
        None
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} calls in {:.2?} while the directory was swapped {} times: {} ok, {} refused as outside",
            self.calls, self.elapsed, self.swaps, self.ok, self.refused
        )?;
        writeln!(
            f,
            "escapes: {} writes, {} reads, {} edits, {} searches reached outside",
            self.writes_outside, self.reads_outside, self.edits_outside, self.searches_outside
        )?;
        for (error, count) in &self.other_errors {
            writeln!(f, "other error ×{count}: {error}")?;
        }
        Ok(())
    }
}

/// One run at `scale` times the calls; the tally says what happened.
async fn race(scale: usize) -> Tally {
    let arena = Arena::new();
    let before = arena.outside_tree();
    let ctx = &arena.ctx;
    let mut tally = Tally::default();
    let started = Instant::now();
    let swapper = Swapper::start(&ctx.workspace);

    for i in 0..WRITES * scale {
        let path = match i % 50 {
            // Rewrites a file that exists on both sides.
            0..=4 => "d/file.txt".to_owned(),
            // Creates the missing parent directory first.
            5 => format!("d/sub-{i}/new.txt"),
            _ => format!("d/new-{i}.txt"),
        };
        let content = if path == "d/file.txt" {
            "inside\n".to_owned()
        } else {
            format!("written {i}\n")
        };
        tally
            .call(ctx, "Write", json!({"file_path": path, "content": content}))
            .await;
    }
    for _ in 0..READS * scale {
        let read = tally
            .call(ctx, "Read", json!({"file_path": "d/file.txt"}))
            .await;
        if read.is_some_and(|text| text.contains(OUTSIDE_TEXT.trim())) {
            tally.reads_outside += 1;
        }
    }
    for i in 0..EDITS * scale {
        let input = if i % 2 == 0 {
            json!({"file_path": "d/edit.txt", "old_string": "state: ", "new_string": format!("state: {i},")})
        } else {
            json!({"file_path": "d/edit.txt", "edits": [
                {"old_string": "state: ", "new_string": format!("state: {i},")}
            ]})
        };
        let tool = if i % 2 == 0 { "Edit" } else { "MultiEdit" };
        tally.call(ctx, tool, input).await;
    }
    for i in 0..SEARCHES * scale {
        let (tool, input) = match i % 4 {
            0 => (
                "Grep",
                json!({"pattern": "OUTSIDE", "path": "d", "output_mode": "content"}),
            ),
            1 => (
                "Grep",
                json!({"pattern": "OUTSIDE", "output_mode": "content"}),
            ),
            2 => ("Glob", json!({"pattern": "**/*", "path": "d"})),
            _ => ("Glob", json!({"pattern": "**/*"})),
        };
        // A match quotes the line; "no matches for \"OUTSIDE\"" does not.
        let answer = tally.call(ctx, tool, input).await;
        if answer
            .is_some_and(|text| text.contains(OUTSIDE_TEXT.trim()) || text.contains("only-outside"))
        {
            tally.searches_outside += 1;
        }
    }

    tally.swaps = swapper.stop();
    tally.elapsed = started.elapsed();
    let after = arena.outside_tree();
    for (path, text) in &after {
        if path == Path::new("edit.txt") {
            // Each escaped edit adds its number and a comma.
            tally.edits_outside = text.matches(',').count() as u64;
        } else if before.get(path) != Some(text) {
            tally.writes_outside += 1;
        }
    }
    tally
}

#[tokio::test]
async fn race_swapping_a_directory_for_an_outside_symlink_never_escapes() {
    let tally = race(1).await;
    assert_eq!(tally.escapes(), 0, "{tally}");
    // The race really ran: calls landed on both sides of the swap.
    assert!(
        tally.swaps > 0 && tally.ok > 0 && tally.refused > 0,
        "{tally}"
    );
}

#[tokio::test]
#[ignore = "a longer run, by hand: RAWKO_RACE_SCALE=10 cargo test -p rawko --lib race_tests -- --ignored --nocapture"]
async fn race_at_scale_never_escapes() {
    let scale = std::env::var("RAWKO_RACE_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let tally = race(scale).await;
    let _ = write!(std::io::stderr(), "scale {scale}: {tally}");
    assert_eq!(tally.escapes(), 0, "{tally}");
}

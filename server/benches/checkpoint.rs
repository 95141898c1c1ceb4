//! Benchmark of one checkpoint (`rawko::checkpoint`): a git repository of 10,000 files in 100
//! folders, committed; a first checkpoint (its private index seeded from the repository's), then,
//! each round, 3 files changed and one checkpoint taken — `git add -A` into the private index
//! (with the submodule check of `Repo::add_all`), `write-tree`, `commit-tree`, `update-ref`,
//! every process through rawko's hardened git. The median and the slowest of the rounds are
//! printed, with the first checkpoint's time, the same through the `rawko __exec` helper (as the
//! server starts every git process), and a private repository's first and next ones.
//!
//! The time is git's (its processes and their stat of every file), so the dev profile measures
//! the same as an optimised build: `cargo test -p rawko --bench checkpoint` (or `cargo bench -p
//! rawko --bench checkpoint`).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use rawko::checkpoint::{Checkpoints, Reason};

const FILES: usize = 10_000;
const CHANGED: usize = 3;
const ROUNDS: usize = 30;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=bench", "-c", "user.email=bench@localhost"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// 10,000 small files in 100 folders.
fn populate(ws: &Path) {
    for d in 0..100 {
        let dir = ws.join(format!("src/m{d:02}"));
        std::fs::create_dir_all(&dir).expect("mkdir");
        for f in 0..FILES / 100 {
            std::fs::write(
                dir.join(format!("f{f:03}.rs")),
                format!("// module {d} file {f}\npub fn f{f}() -> u32 {{ {f} }}\n"),
            )
            .expect("write");
        }
    }
}

fn change(ws: &Path, round: usize) {
    for i in 0..CHANGED {
        let path = ws.join(format!(
            "src/m{:02}/f{:03}.rs",
            (round * 7 + i * 31) % 100,
            i
        ));
        std::fs::write(path, format!("// changed in round {round}\n")).expect("write");
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// First checkpoint, then `ROUNDS` of 3 changes and a checkpoint: (first, median, slowest).
fn measure(rt: &tokio::runtime::Runtime, ws: &Path, task_dir: &Path) -> (f64, f64, f64) {
    let mut cps = Checkpoints::for_task(ws, task_dir);
    let started = Instant::now();
    rt.block_on(cps.take(Reason::PhaseEntered, Some(0)))
        .expect("first checkpoint");
    let first = ms(started.elapsed());
    let mut times = Vec::with_capacity(ROUNDS);
    for round in 0..ROUNDS {
        change(ws, round);
        let started = Instant::now();
        let cp = rt
            .block_on(cps.take(Reason::ToolCall, None))
            .expect("checkpoint");
        times.push(ms(started.elapsed()));
        assert!(cp.new, "round {round} recorded no change");
    }
    times.sort_by(f64::total_cmp);
    (first, times[ROUNDS / 2], times[ROUNDS - 1])
}

// A benchmark reports on stdout.
#[allow(clippy::print_stdout)]
fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path().canonicalize().expect("canonical");

    let ws = root.join("repo");
    std::fs::create_dir_all(&ws).expect("mkdir");
    populate(&ws);
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-qm", "initial"]);
    let (first, median, slowest) = measure(&rt, &ws, &root.join("state/tasks/task-1-1"));
    println!(
        "checkpoint, git repository of {FILES} files, {CHANGED} changed: median {median:.1} ms, slowest {slowest:.1} ms of {ROUNDS}; first checkpoint (index seeded) {first:.1} ms"
    );
    // As the server runs git: each process through the `rawko __exec` helper.
    rawko::sandbox::set_helper(env!("CARGO_BIN_EXE_rawko"));
    let (first, median, slowest) = measure(&rt, &ws, &root.join("state/tasks/task-1-2"));
    rawko::sandbox::clear_helper();
    println!(
        "the same through the rawko __exec helper (as the server runs git): median {median:.1} ms, slowest {slowest:.1} ms of {ROUNDS}; first checkpoint {first:.1} ms"
    );

    let plain = root.join("plain");
    std::fs::create_dir_all(&plain).expect("mkdir");
    populate(&plain);
    let (first, median, slowest) = measure(&rt, &plain, &root.join("state/tasks/task-2-1"));
    println!(
        "checkpoint, plain folder of {FILES} files (private repository), {CHANGED} changed: median {median:.1} ms, slowest {slowest:.1} ms of {ROUNDS}; first checkpoint (every file hashed) {first:.1} ms"
    );
}

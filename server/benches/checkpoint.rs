//! Benchmark of one checkpoint (`rawko::checkpoint`): a git repository of 10,000 files in 100
//! folders, committed; a first checkpoint (its private index seeded from the repository's), then,
//! each round, 3 files changed and one checkpoint taken — `git add -A` into the private index,
//! `write-tree`, `commit-tree`, `update-ref`, run as one script (`Repo::script`) whose git is
//! rawko's hardened git. The median and the slowest of the rounds are
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

fn change(ws: &Path, pass: &Path, round: usize) {
    for i in 0..CHANGED {
        let path = ws.join(format!(
            "src/m{:02}/f{:03}.rs",
            (round * 7 + i * 31) % 100,
            i
        ));
        std::fs::write(
            path,
            format!("// changed in round {round} of {}\n", pass.display()),
        )
        .expect("write");
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The floor: the same four git commands a checkpoint runs after its first (`add -A`,
/// `write-tree`, `commit-tree`, `update-ref`), started directly with a private index of their
/// own, no hardening. Returns the milliseconds.
fn bare_round(ws: &Path, index: &Path, parent: &mut Option<String>) -> f64 {
    let git = |args: &[&str]| -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(ws)
            .env("GIT_INDEX_FILE", index)
            .env("GIT_AUTHOR_NAME", "bench")
            .env("GIT_AUTHOR_EMAIL", "bench@localhost")
            .env("GIT_COMMITTER_NAME", "bench")
            .env("GIT_COMMITTER_EMAIL", "bench@localhost")
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let started = Instant::now();
    git(&["add", "-A"]);
    let tree = git(&["write-tree"]);
    let mut args = vec!["commit-tree", tree.as_str(), "-m", "bare"];
    if let Some(p) = parent.as_deref() {
        args.extend(["-p", p]);
    }
    let commit = git(&args);
    git(&["update-ref", "refs/bench/bare", &commit]);
    let took = ms(started.elapsed());
    *parent = Some(commit);
    took
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
        change(ws, task_dir, round);
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
    // Git's floor, measured beside the checkpoints (interleaved, so the machine's load hits
    // both alike).
    let index = root.join("bare.index");
    std::fs::copy(ws.join(".git/index"), &index).expect("seed the bare index");
    let mut parent = None;
    bare_round(&ws, &index, &mut parent);
    let mut cps = Checkpoints::for_task(&ws, &root.join("state/tasks/task-0-1"));
    rt.block_on(cps.take(Reason::PhaseEntered, Some(0)))
        .expect("first checkpoint");
    let (mut bare, mut ours) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        change(&ws, &index, round);
        bare.push(bare_round(&ws, &index, &mut parent));
        let started = Instant::now();
        rt.block_on(cps.take(Reason::ToolCall, None))
            .expect("checkpoint");
        ours.push(ms(started.elapsed()));
    }
    bare.sort_by(f64::total_cmp);
    ours.sort_by(f64::total_cmp);
    println!(
        "interleaved, {CHANGED} changed of {FILES}: git alone (add -A, write-tree, commit-tree, update-ref) median {:.1} ms; a checkpoint median {:.1} ms",
        bare[ROUNDS / 2],
        ours[ROUNDS / 2]
    );
    let (first, median, slowest) = measure(&rt, &ws, &root.join("state/tasks/task-1-1"));
    println!(
        "checkpoint, git repository of {FILES} files, {CHANGED} changed: median {median:.1} ms, slowest {slowest:.1} ms of {ROUNDS}; first checkpoint (index seeded) {first:.1} ms"
    );
    // As the server runs git: each process through the `rawko __exec` helper.
    // RAWKO_BENCH_HELPER names another build as the helper (a release build, as users run it).
    let helper = std::env::var("RAWKO_BENCH_HELPER")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_rawko").to_owned());
    rawko::sandbox::set_helper(helper);
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

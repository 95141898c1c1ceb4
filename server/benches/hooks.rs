//! Benchmark of dispatching one command hook: what rawko adds above the bare cost of spawning it.
//!
//! - bare: `tokio::process::Command` running `sh -c true` with stdin, stdout and stderr piped,
//!   spawn and wait (stdin closed at once): the floor a hook cannot go under;
//! - run: `rawko::hooks::process::run("true", …)` with a PreToolUse event's JSON on stdin — the
//!   `rawko __exec` helper it runs through, its own process group, the stdin write beside the
//!   wait, both streams captured, the time limit;
//! - dispatch: `Hooks::dispatch` of one PreToolUse command hook `true` for a realistic Write call
//!   (the fields the task actor sends): matcher, template rendering, the stdin JSON, `run`, and
//!   reading the answer.
//!
//! Criterion measures each; then the three are timed again, interleaved so the machine's drift
//! hits them alike, and the medians and the differences (run − bare, dispatch − bare) are printed.
//!
//! Run: `cargo bench -p rawko --bench hooks`.

use std::hint::black_box;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use criterion::Criterion;
use rawko::hooks::config::{parse, HookSource};
use rawko::hooks::{HookEvent, Hooks, Invocation};
use serde_json::{json, Value};
use tokio::runtime::Runtime;

const TIMEOUT: Duration = Duration::from_secs(60);
const GRACE: Duration = Duration::from_secs(5);

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

async fn bare(cwd: &Path) {
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg("true")
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn sh");
    drop(child.stdin.take());
    let status = child.wait().await.expect("wait");
    assert!(status.success());
}

/// The PreToolUse hook's view of a Write call, as the task actor builds it.
fn invocation(workspace: &Path) -> Invocation {
    let input = json!({
        "path": "src/greet.sh",
        "content": "#!/bin/sh\nif [ \"$1\" = \"--shout\" ]; then\n  echo \"Hello, ${2:-world}!\" | tr '[:lower:]' '[:upper:]'\n  exit 0\nfi\nname=\"${1:-world}\"\necho \"Hello, $name!\"\n"
    });
    let description = "Add a --shout flag to greet.sh";
    let task = "task-1795307937277-1";
    Invocation::new(HookEvent::PreToolUse)
        .subject("Write")
        .field("taskId", task)
        .field("taskDescription", description)
        .field("issueNumber", task)
        .field("issueTitle", description)
        .field("issueFile", task)
        .field("planFile", description)
        .field("workflowKey", "feature")
        .field("phaseId", "implement")
        .field("phaseName", "Implement")
        .field("provider", "anthropic")
        .field("session_id", task)
        .field(
            "transcript_path",
            format!("/home/ada/.local/state/rawko/tasks/{task}/events.jsonl"),
        )
        .field("tool_name", "Write")
        .field("tool_input", input.clone())
        .field("tool_use_id", "toolu_01A2b3C4d5E6f7G8h9")
        .field("toolName", "Write")
        .field("toolInput", input)
        .field("toolUseId", "toolu_01A2b3C4d5E6f7G8h9")
        .var("sessionId", "1795307937000-0123456789abcdef")
        .var("workspace", workspace.display().to_string())
        .var("taskId", task)
        .var("taskDescription", description)
        .var("workflowKey", "feature")
        .var("phaseId", "implement")
        .var("phaseName", "Implement")
        .var("provider", "anthropic")
}

/// The JSON `run` gets on stdin: what the dispatch builds for the invocation.
fn stdin_json(inv: &Invocation, workspace: &Path) -> Vec<u8> {
    let mut m = inv.fields.clone();
    for (k, v) in [
        ("eventName", json!("PreToolUse")),
        ("sessionId", json!("1795307937000-0123456789abcdef")),
        ("workspace", json!(workspace.display().to_string())),
        ("timestamp", json!(1_795_307_937_277_i64)),
        ("hook_event_name", json!("PreToolUse")),
        ("cwd", json!(workspace.display().to_string())),
        ("permission_mode", json!("default")),
    ] {
        m.insert(k.to_owned(), v);
    }
    serde_json::to_vec_pretty(&Value::Object(m)).expect("json")
}

fn hooks(workspace: &Path) -> Hooks {
    let (hooks, problems) = parse(
        &json!({"PreToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "true"}]}]}),
        HookSource::User,
    );
    assert!(problems.is_empty(), "{problems:?}");
    Hooks::new(
        hooks,
        "1795307937000-0123456789abcdef",
        workspace.to_owned(),
    )
}

struct Setup {
    rt: Runtime,
    dir: tempfile::TempDir,
    input: Vec<u8>,
    hooks: Hooks,
    inv: Invocation,
}

impl Setup {
    fn new() -> Self {
        // As the rawko binary runs hooks: through its helper (benches/sandbox.rs compares).
        rawko::sandbox::set_helper(env!("CARGO_BIN_EXE_rawko"));
        let dir = tempfile::tempdir().expect("tempdir");
        let inv = invocation(dir.path());
        Self {
            rt: runtime(),
            input: stdin_json(&inv, dir.path()),
            hooks: hooks(dir.path()),
            inv,
            dir,
        }
    }

    fn bare(&self) {
        self.rt.block_on(bare(self.dir.path()));
    }

    fn run(&self) {
        let r = self.rt.block_on(rawko::hooks::process::run(
            "true",
            &[],
            black_box(&self.input),
            self.dir.path(),
            TIMEOUT,
            GRACE,
        ));
        assert_eq!(r.exit, rawko::hooks::process::Exit::Code(0));
    }

    fn dispatch(&self) {
        let d = self
            .rt
            .block_on(self.hooks.dispatch(black_box(self.inv.clone())));
        assert_eq!(d.ran, 1);
        assert!(d.blocked.is_none() && d.notes.is_empty(), "{d:?}");
    }
}

fn benches(c: &mut Criterion, s: &Setup) {
    let mut group = c.benchmark_group("hooks");
    group.sample_size(100);
    group.bench_function("bare: sh -c true, spawn + wait, stdio piped", |b| {
        b.iter(|| s.bare())
    });
    group.bench_function("process::run(\"true\") with the event JSON", |b| {
        b.iter(|| s.run())
    });
    group.bench_function("Hooks::dispatch of one PreToolUse hook `true`", |b| {
        b.iter(|| s.dispatch())
    });
    group.finish();
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

#[allow(clippy::print_stdout)]
fn report(s: &Setup, rounds: usize) {
    let kinds: [&dyn Fn(); 3] = [&|| s.bare(), &|| s.run(), &|| s.dispatch()];
    for _ in 0..rounds.min(20) {
        kinds.iter().for_each(|k| k());
    }
    // Each round times the three once, in a rotating order, so neither the position in the round
    // nor the machine's drift favours one of them.
    let mut times: [Vec<Duration>; 3] = Default::default();
    let mut run_diff = Vec::new();
    let mut dispatch_diff = Vec::new();
    for round in 0..rounds {
        let mut t = [Duration::ZERO; 3];
        for i in 0..3 {
            let k = (round + i) % 3;
            let start = Instant::now();
            kinds[k]();
            t[k] = start.elapsed();
        }
        for k in 0..3 {
            times[k].push(t[k]);
        }
        run_diff.push(micros(t[1]) - micros(t[0]));
        dispatch_diff.push(micros(t[2]) - micros(t[0]));
    }
    let [mut a, mut b, mut c] = times;
    let (a, b, c) = (median(&mut a), median(&mut b), median(&mut c));
    let mid = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!("one command hook, {rounds} rounds (medians; the differences are medians of each round's difference):");
    println!(
        "  bare: sh -c true, spawn + wait       {:8.1} µs",
        micros(a)
    );
    println!(
        "  process::run(\"true\", event JSON)    {:8.1} µs   run − bare      {:+7.1} µs",
        micros(b),
        mid(&mut run_diff)
    );
    println!(
        "  Hooks::dispatch (one PreToolUse)    {:8.1} µs   dispatch − bare {:+7.1} µs",
        micros(c),
        mid(&mut dispatch_diff)
    );
    println!(
        "  (the PreToolUse event's stdin JSON: {} bytes)",
        s.input.len()
    );
    // Wall time on a busy machine is noisy; the CPU time of this thread (the runtime is
    // current-thread, so the spawn, the pipes and the wait all happen here) is not.
    let cpu: Vec<Option<f64>> = kinds
        .iter()
        .map(|k| {
            let before = thread_cpu()?;
            for _ in 0..rounds {
                k();
            }
            Some(micros(thread_cpu()?.saturating_sub(before)) / rounds as f64)
        })
        .collect();
    if let [Some(a), Some(b), Some(c)] = cpu[..] {
        println!("CPU time of rawko's thread per hook ({rounds} in a row each):");
        println!("  bare {a:.1} µs, run {b:.1} µs (run − bare {:+.1} µs), dispatch {c:.1} µs (dispatch − bare {:+.1} µs)", b - a, c - a);
    }
}

/// The CPU time this thread has had (`/proc/thread-self/schedstat`, Linux).
fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

fn main() {
    let setup = Setup::new();
    // `cargo test --benches` runs each benchmark once (`--test`); keep the report short then.
    let test_mode = std::env::args().any(|a| a == "--test");
    let mut c = Criterion::default().configure_from_args();
    benches(&mut c, &setup);
    c.final_summary();
    report(&setup, if test_mode { 5 } else { 500 });
}

//! What the `rawko __exec` helper (crate::sandbox) adds to a Bash call and to a command hook:
//! the same `true` through the old path (`sh -c` as rawko's own child, which is what a process
//! with no helper still does) and through the helper, with and without Landlock.
//!
//! - Bash, old: `tools::run("Bash", {"command": "true"})` with no helper;
//! - Bash, helper: the same through `rawko __exec` with `"sandbox": "off"` (the reaper only);
//! - Bash, helper + Landlock: the same confined, as a task runs it by default;
//! - hook, old / hook, helper: `hooks::process::run("true", …)` with a PreToolUse-sized input.
//!
//! The five are timed in turn, round after round, so the machine's drift hits them alike; the
//! medians and the added cost are printed. Run: `cargo bench -p rawko --bench sandbox`
//! (`RAWKO_BENCH_ROUNDS`, default 300).

use std::time::{Duration, Instant};

use rawko::sandbox::{SandboxMode, SandboxSettings};
use rawko::tools::{self, ToolContext};
use serde_json::json;

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

#[allow(clippy::print_stdout)]
fn main() {
    let rounds: usize = std::env::var("RAWKO_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(300);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).expect("mkdir");
    let mut confined = ToolContext::new(&ws).expect("context");
    confined.sandbox.temp_dir = Some(dir.path().join("tmp"));
    let mut unconfined = confined.clone();
    unconfined.sandbox.settings = SandboxSettings {
        mode: SandboxMode::Off,
        ..Default::default()
    };
    let landlock = rawko::sandbox::landlock_support();
    let input = json!({"command": "true"});
    let event = vec![b'x'; 1500];
    let helper = env!("CARGO_BIN_EXE_rawko");

    let bash = |ctx: &ToolContext| {
        let out = rt.block_on(tools::run("Bash", &input, ctx));
        assert_eq!(out.content, "exit code 0", "{out:?}");
    };
    let hook = || {
        let r = rt.block_on(rawko::hooks::process::run(
            "true",
            &[],
            &event,
            &ws,
            Duration::from_secs(60),
            Duration::from_secs(5),
        ));
        assert_eq!(r.exit, rawko::hooks::process::Exit::Code(0), "{r:?}");
    };
    let mut times: [Vec<Duration>; 5] = Default::default();
    let mut time = |i: usize, f: &dyn Fn()| {
        let start = Instant::now();
        f();
        times[i].push(start.elapsed());
    };
    // Warm up: page in the binary and the shell.
    for _ in 0..10 {
        rawko::sandbox::set_helper(helper);
        bash(&confined);
        hook();
    }
    for _ in 0..rounds {
        rawko::sandbox::clear_helper();
        time(0, &|| bash(&confined));
        time(3, &|| hook());
        rawko::sandbox::set_helper(helper);
        time(1, &|| bash(&unconfined));
        time(2, &|| bash(&confined));
        time(4, &|| hook());
    }
    let m: Vec<Duration> = times.iter_mut().map(|t| median(t)).collect();
    println!("{rounds} rounds, interleaved; medians of the wall time of `true`:");
    println!(
        "  Bash, old (sh -c as rawko's child)       {:8.1} µs",
        micros(m[0])
    );
    println!(
        "  Bash, helper (reaper only)               {:8.1} µs   {:+8.1} µs",
        micros(m[1]),
        micros(m[1]) - micros(m[0])
    );
    println!(
        "  Bash, helper + Landlock ({})       {:8.1} µs   {:+8.1} µs",
        match &landlock {
            Ok(abi) => format!("ABI {abi}"),
            Err(_) => "absent".to_owned(),
        },
        micros(m[2]),
        micros(m[2]) - micros(m[0])
    );
    println!(
        "  hook, old                                {:8.1} µs",
        micros(m[3])
    );
    println!(
        "  hook, helper                             {:8.1} µs   {:+8.1} µs",
        micros(m[4]),
        micros(m[4]) - micros(m[3])
    );
}

//! Benchmarks of task persistence on the real disk, through the log writer (group commit):
//! one task appending one event and waiting until it is durable (a task's per-event latency),
//! a thousand tasks appending one event each at once until all are durable (what group commit
//! shares), the same until announced (what an editor waits for), and snapshots (queued, written
//! in place by the snapshot writer).
//!
//! Run: `cargo bench -p rawko --bench store`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use rawko::store::TaskFiles;
use serde_json::json;

fn benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut files = TaskFiles::create(dir.path(), "bench-task").expect("create");
    let event = json!({
        "type": "tool_finished",
        "id": "call_12_1",
        "content": "wrote 312 bytes to src/greet.sh",
        "isError": false
    });
    let mut group = c.benchmark_group("store");
    group.sample_size(50);
    // What each event cost before the log writer: the task wrote its line and synced it itself.
    let line = {
        let mut l =
            serde_json::to_vec(&json!({"v": 1, "seq": 1, "at": 1, "event": event})).unwrap();
        l.push(b'\n');
        l
    };
    let mut own = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.path().join("reference.jsonl"))
        .expect("open");
    group.bench_function("reference: write + fdatasync in the task", |b| {
        b.iter(|| {
            use std::io::Write;
            own.write_all(black_box(&line)).expect("write");
            own.sync_data().expect("sync");
        })
    });
    group.bench_function("one task: append one event until durable", |b| {
        b.iter(|| {
            files.append(1, black_box(&event)).expect("append");
            files.flush_blocking();
        })
    });
    group.bench_function("one task: append one event until announced", |b| {
        b.iter(|| {
            files.append(1, black_box(&event)).expect("append");
            let (tx, rx) = std::sync::mpsc::channel();
            files.then(move || tx.send(()).expect("announce"));
            rx.recv().expect("announced");
        })
    });
    let mut many: Vec<TaskFiles> = (0..1000)
        .map(|i| TaskFiles::create(dir.path(), &format!("bench-{i}")).expect("create"))
        .collect();
    group.sample_size(20);
    group.bench_function("1000 tasks: one event each until all durable", |b| {
        b.iter(|| {
            for f in &mut many {
                f.append(1, black_box(&event)).expect("append");
            }
            many[0].flush_blocking();
        })
    });
    let snapshot = json!({
        "v": 1,
        "taskId": "task-1795307937277-1",
        "description": "Add a --shout flag to greet.sh",
        "workflow": "feature",
        "workspace": "/home/ada/project",
        "state": "running",
        "machineState": "executing",
        "breadcrumbText": "Feature > Review [4/4] > 🔍 Static Analysis [1/2]",
        "startedAt": 1795307937277u64,
        "updatedAt": 1795307939000u64
    });
    group.sample_size(50);
    group.bench_function("write one snapshot (in place) until written", |b| {
        b.iter(|| {
            files
                .write_snapshot(black_box(&snapshot))
                .expect("snapshot");
            files.flush_blocking();
        })
    });
    group.sample_size(10);
    group.bench_function("1000 tasks: one snapshot each until all written", |b| {
        b.iter(|| {
            for f in &many {
                f.write_snapshot(black_box(&snapshot)).expect("snapshot");
            }
            many[0].flush_blocking();
        })
    });
    group.finish();
}

criterion_group!(store, benches);
criterion_main!(store);

//! Benchmarks of task persistence on the real disk: appending one event to a task's log (write +
//! fsync) and writing one snapshot (temporary file, fsync, rename).
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
    group.bench_function("append one event (write + fsync)", |b| {
        b.iter(|| files.append(1, black_box(&event)).expect("append"))
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
    group.bench_function("write one snapshot (tmp + fsync + rename)", |b| {
        b.iter(|| {
            files
                .write_snapshot(black_box(&snapshot))
                .expect("snapshot")
        })
    });
    group.finish();
}

criterion_group!(store, benches);
criterion_main!(store);

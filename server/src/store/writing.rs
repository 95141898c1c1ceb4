//! What the log writer's threads share: each task log's target as the writer knows it, the counts
//! of their work (`rawko/serverStats`), and opening a file whose directory may not exist yet. The
//! writer (`journal.rs`), the syncer (`syncer.rs`) and the snapshot writer (`snapshots.rs`) all use
//! it, and it uses none of them.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// One task's log as the writer knows it.
#[derive(Debug)]
pub struct LogTarget {
    pub(super) id: u64,
    pub(super) path: PathBuf,
    /// A task's log: its state directory and id, whose WAL makes its records durable (without
    /// one, the log itself is synced).
    pub(super) task: Option<(PathBuf, String)>,
    pub(super) durable: AtomicBool,
    /// The first error writing or syncing this log; nothing is written after it, so the log on
    /// disk stays a valid prefix.
    pub(super) error: Mutex<Option<String>>,
}

impl LogTarget {
    pub(super) fn new(path: PathBuf, task: Option<(PathBuf, String)>) -> Arc<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Arc::new(LogTarget {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            path,
            task,
            durable: AtomicBool::new(true),
            error: Mutex::new(None),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn set_durable(&self, durable: bool) {
        self.durable.store(durable, Ordering::Relaxed);
    }

    /// The first error of this log, if any.
    pub fn error(&self) -> Option<String> {
        self.error.lock().ok().and_then(|e| e.clone())
    }

    pub(super) fn fail(&self, message: String) {
        if let Ok(mut e) = self.error.lock() {
            if e.is_none() {
                tracing::error!("{}: {message}", self.path.display());
                *e = Some(message);
            }
        }
    }

    pub(super) fn failed(&self) -> bool {
        self.error.lock().map(|e| e.is_some()).unwrap_or(true)
    }
}

/// The upper bounds (µs) of the buckets of [`JournalStats::announce_latency`]: from a quarter
/// of a millisecond up, each about 1.4 times the one before, to a minute; the last bucket takes
/// the rest.
pub const LATENCY_BOUNDS_MICROS: [u64; 37] = [
    250, 350, 500, 700, 1_000, 1_400, 2_000, 2_800, 4_000, 5_000, 6_000, 8_000, 10_000, 14_000,
    20_000, 28_000, 40_000, 56_000, 80_000, 110_000, 160_000, 230_000, 320_000, 450_000, 640_000,
    900_000, 1_300_000, 1_800_000, 2_500_000, 3_500_000, 5_000_000, 7_000_000, 10_000_000,
    14_000_000, 20_000_000, 40_000_000, 60_000_000,
];

/// Counts of the writer's work, for `rawko/serverStats` and the benchmarks.
#[derive(Debug)]
pub struct JournalStats {
    pub batches: AtomicU64,
    pub records: AtomicU64,
    pub syncs: AtomicU64,
    pub open_logs: AtomicU64,
    /// How long announcements waited from being queued (right after the records they follow)
    /// until they ran (those records durable): a histogram over [`LATENCY_BOUNDS_MICROS`], with
    /// one more bucket for anything longer.
    pub announce_latency: [AtomicU64; LATENCY_BOUNDS_MICROS.len() + 1],
}

impl Default for JournalStats {
    fn default() -> Self {
        JournalStats {
            batches: AtomicU64::new(0),
            records: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            open_logs: AtomicU64::new(0),
            announce_latency: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl JournalStats {
    pub(super) fn record_latency(&self, waited: std::time::Duration) {
        let micros = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
        let i = LATENCY_BOUNDS_MICROS.partition_point(|b| *b < micros);
        self.announce_latency[i].fetch_add(1, Ordering::Relaxed);
    }

    /// The announcement latency histogram: (upper bound in µs, `u64::MAX` for the last, count)
    /// for each bucket that has any.
    pub fn latency_buckets(&self) -> Vec<(u64, u64)> {
        self.announce_latency
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let bound = LATENCY_BOUNDS_MICROS.get(i).copied().unwrap_or(u64::MAX);
                (bound, n.load(Ordering::Relaxed))
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

/// Opens `path` with `options`, making its directory first when it is missing (a new task's,
/// made here off the server's thread).
pub(super) fn open_making_dir(path: &Path, options: &OpenOptions) -> std::io::Result<File> {
    match options.open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            path.parent().map_or(Err(e), std::fs::create_dir_all)?;
            options.open(path)
        }
        other => other,
    }
}

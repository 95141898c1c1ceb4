//! The snapshot writer: a thread of its own behind the log writer, so writing snapshots (a file
//! each, opened, written and cut) never holds up the sync the announcements wait for. The log
//! writer hands it each batch's snapshots and barriers once the batch's records are durable.

use std::collections::HashMap;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::Arc;
use std::time::Instant;

use super::writing::open_making_dir;

/// The longest the snapshot writer holds a burst's snapshots back, gathering the later ones of
/// the same tasks (each replaces the one before): a burst of tasks writes each one's snapshot a
/// few times a second, not at every step. A `flush` writes them at once.
const SNAPSHOTS_HELD_AT_MOST: std::time::Duration = std::time::Duration::from_millis(250);

/// From this many snapshots waiting at once (a burst of tasks), they are held back; fewer are
/// written at once, so a quiet task's snapshot is on disk a moment after its records.
const BURST_SNAPSHOTS: usize = 64;

/// The most snapshots held back at once.
const MAX_HELD_SNAPSHOTS: usize = 8192;

/// What the log writer hands on once the lines before it are durable.
pub(super) enum Later {
    Snapshot(PathBuf, Vec<u8>),
    Barrier(Box<dyn FnOnce() + Send>),
}

/// The snapshot writer: a thread of its own, so writing snapshots (a file each, opened, written
/// and cut) never holds up the sync the announcements wait for. It takes whatever was handed on
/// while it was busy, writes the last snapshot of each path, then runs the barriers.
pub(super) fn start_snapshot_writer() -> Option<SnapshotWriter> {
    let (tx, rx) = mpsc::channel::<Vec<Later>>();
    let busy = Arc::new(AtomicU64::new(0));
    let held_back = Arc::new(AtomicBool::new(false));
    let (done, holding) = (busy.clone(), held_back.clone());
    let spawned = std::thread::Builder::new()
        .name("rawko-snapshots".to_owned())
        .spawn(move || {
            // The snapshots held back (the last of each path), and when the oldest came.
            let mut held: HashMap<PathBuf, Vec<u8>> = HashMap::new();
            let mut since: Option<Instant> = None;
            loop {
                let next = match since {
                    None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
                    Some(t) => rx.recv_timeout(SNAPSHOTS_HELD_AT_MOST.saturating_sub(t.elapsed())),
                };
                let mut barriers = Vec::new();
                let mut taken = 0;
                match next {
                    Ok(later) => {
                        sort_later(later, &mut held, &mut barriers);
                        taken += 1;
                        while let Ok(more) = rx.try_recv() {
                            sort_later(more, &mut held, &mut barriers);
                            taken += 1;
                        }
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        write_snapshots(held.drain());
                        return;
                    }
                }
                since = since.or_else(|| (!held.is_empty()).then(Instant::now));
                let due = since.is_some_and(|t| t.elapsed() >= SNAPSHOTS_HELD_AT_MOST);
                let burst = held.len() >= BURST_SNAPSHOTS;
                if !barriers.is_empty() || !burst || due || held.len() >= MAX_HELD_SNAPSHOTS {
                    write_snapshots(held.drain());
                    since = None;
                }
                holding.store(!held.is_empty(), Ordering::Release);
                for f in barriers {
                    f();
                }
                done.fetch_sub(taken, Ordering::AcqRel);
            }
        });
    match spawned {
        Ok(_) => Some(SnapshotWriter {
            tx,
            busy,
            held_back,
        }),
        Err(e) => {
            tracing::warn!("cannot start the snapshot writer thread ({e}); the log writer writes the snapshots");
            None
        }
    }
}

/// The snapshot writer's queue, and how many hand-overs it has not finished.
pub(super) struct SnapshotWriter {
    tx: Sender<Vec<Later>>,
    busy: Arc<AtomicU64>,
    /// Whether it holds snapshots back (set only while it takes a hand-over, so with `busy` at 0
    /// it is settled).
    held_back: Arc<AtomicBool>,
}

/// Hands a batch's snapshots and barriers to the snapshot writer (`None` when its thread could
/// not start: written here). Barriers alone, while it writes nothing and holds nothing back, run
/// here at once: a flush returns without a hop to the other thread.
pub(super) fn hand_over(writer: Option<&SnapshotWriter>, later: Vec<Later>) {
    let only_barriers = later.iter().all(|l| matches!(l, Later::Barrier(_)));
    match writer {
        _ if later.is_empty() => {}
        Some(w)
            if only_barriers
                && w.busy.load(Ordering::Acquire) == 0
                && !w.held_back.load(Ordering::Acquire) =>
        {
            write_later(later)
        }
        Some(w) => {
            w.busy.fetch_add(1, Ordering::AcqRel);
            if let Err(mpsc::SendError(later)) = w.tx.send(later) {
                w.busy.fetch_sub(1, Ordering::AcqRel);
                write_later(later);
            }
        }
        None => write_later(later),
    }
}

/// Sorts what was handed on: the last snapshot of each path into `snapshots`, the barriers in
/// order into `barriers`.
fn sort_later(
    later: Vec<Later>,
    snapshots: &mut HashMap<PathBuf, Vec<u8>>,
    barriers: &mut Vec<Box<dyn FnOnce() + Send>>,
) {
    for item in later {
        match item {
            Later::Snapshot(path, body) => {
                snapshots.insert(path, body);
            }
            Later::Barrier(f) => barriers.push(f),
        }
    }
}

/// Writes the snapshots (the last of each path), then runs the barriers.
fn write_later(later: Vec<Later>) {
    let (mut snapshots, mut barriers) = (HashMap::new(), Vec::new());
    sort_later(later, &mut snapshots, &mut barriers);
    write_snapshots(snapshots);
    for f in barriers {
        f();
    }
}

fn write_snapshots(snapshots: impl IntoIterator<Item = (PathBuf, Vec<u8>)>) {
    for (path, body) in snapshots {
        if let Err(e) = write_replacing(&path, &body) {
            tracing::warn!("cannot write {}: {e}", path.display());
        }
    }
}

/// Overwrites `path` in place: written over from the start, then cut to its length. No
/// temporary file and no rename: on ext4 a rename over a file forces its blocks out at once,
/// which made a thousand snapshots cost a third of a second. A snapshot is a cache, written
/// after the log records it reflects are durable; one cut short (a crash, or read while being
/// written) does not parse, and is rebuilt from the log.
fn write_replacing(path: &Path, body: &[u8]) -> std::io::Result<()> {
    let mut file = open_making_dir(
        path,
        OpenOptions::new().create(true).write(true).truncate(false),
    )?;
    file.write_all(body)?;
    file.set_len(body.len() as u64)
}

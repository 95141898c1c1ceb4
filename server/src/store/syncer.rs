//! The log syncer: a thread behind the log writer ([`super::journal`]) that makes the written
//! batches durable with one sync of the WAL for all of them, then runs their announcements in
//! order and hands their snapshots and barriers to the snapshot writer.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::snapshots::{Later, SnapshotWriter};
use super::writing::{JournalStats, LogTarget};
use crate::pressure::LOG_BACKLOG;

/// A state directory's WAL, shared by the writer (which opens it and knows it is there) and the
/// syncer (which appends to it, syncs it and checkpoints it). `None` once closed.
pub(super) type SharedWal = Arc<Mutex<Option<super::wal::Wal>>>;

/// What the writer hands the syncer for one batch, in order: the batch's WAL lines to append
/// and sync, then its announcements, then its snapshots and barriers.
pub(super) struct Job {
    pub(super) wal: Vec<(SharedWal, Vec<u8>, Vec<Arc<LogTarget>>)>,
    pub(super) thens: Vec<(Box<dyn FnOnce() + Send>, Instant)>,
    pub(super) later: Vec<Later>,
    /// The WALs to close after this job (the process ends).
    pub(super) closing: Vec<SharedWal>,
    /// What the batch counted for in the backlog: given back once its job is done.
    pub(super) cost: u64,
    /// When the writer made it (the debug log says how long it waited for the syncer).
    pub(super) made: Instant,
}

/// The log syncer: appends the jobs' lines to their WALs, syncs each WAL once for every job
/// waiting, then runs the jobs' announcements in order and hands their snapshots and barriers to
/// the snapshot writer. A thread of its own, so the writer gathers and writes the next batch
/// while a sync is under way (the announcements wait for one sync, not for a sync and a batch).
pub(super) struct Syncer {
    pub(super) stats: Arc<JournalStats>,
    /// The snapshot writer (`None` when its thread could not start: written here).
    pub(super) snapshots: Option<SnapshotWriter>,
    /// The WALs synced so far (and not closed): while idle, the syncer writes zeros ahead of
    /// their ends ([`super::wal::Wal::zero_ahead`]).
    pub(super) wals: Vec<SharedWal>,
}

/// The most jobs one sync takes.
const MAX_JOBS: usize = 1024;

/// A lock that a panic elsewhere does not make unusable (what it guards stays consistent).
pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Syncer {
    pub(super) fn run(state: &Mutex<Syncer>, unfinished: &AtomicU64, rx: Receiver<Job>) {
        let mut jobs = Vec::new();
        // A job that came while the syncer wrote zeros ahead.
        let mut next = None;
        while let Some(first) = next.take().or_else(|| rx.recv().ok()) {
            jobs.push(first);
            while jobs.len() < MAX_JOBS {
                match rx.try_recv() {
                    Ok(job) => jobs.push(job),
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
                }
            }
            let count = jobs.len() as u64;
            lock(state).round(std::mem::take(&mut jobs));
            unfinished.fetch_sub(count, Ordering::AcqRel);
            // Idle: zeros ahead of the WALs' ends, a chunk at a time, until a job comes.
            loop {
                match rx.try_recv() {
                    Ok(job) => {
                        next = Some(job);
                        break;
                    }
                    Err(TryRecvError::Disconnected) => break,
                    Err(TryRecvError::Empty) => {}
                }
                if !lock(state).zero_ahead() {
                    break;
                }
            }
        }
    }

    /// One chunk of zeros ahead of the end of a WAL that has fewer than it keeps; whether there
    /// was one to write.
    fn zero_ahead(&mut self) -> bool {
        self.wals.retain(|w| lock(w).is_some());
        for shared in &self.wals {
            let mut guard = lock(shared);
            let Some(wal) = guard.as_mut() else {
                continue;
            };
            let began = Instant::now();
            match wal.zero_ahead() {
                Ok(true) => {
                    tracing::debug!(
                        us = began.elapsed().as_micros() as u64,
                        ahead = wal.zeroed_ahead(),
                        "WAL zeros ahead"
                    );
                    return true;
                }
                Ok(false) => {}
                Err(e) => tracing::warn!(
                    "cannot write zeros ahead in the WAL of {} ({e}): its lines go to new blocks",
                    wal.state_dir().display()
                ),
            }
        }
        false
    }

    /// One sync for `jobs`, then their announcements, in order.
    pub(super) fn round(&mut self, jobs: Vec<Job>) {
        let timed = tracing::enabled!(tracing::Level::DEBUG);
        let runnable = || if timed { runnable_waiting_ns() } else { 0 };
        let began = Instant::now();
        let runnable_at_start = runnable();
        // Each WAL's lines of all the jobs, appended and synced at once.
        let mut wals: Vec<(SharedWal, Vec<u8>, Vec<Arc<LogTarget>>)> = Vec::new();
        let mut thens = Vec::new();
        let mut later = Vec::new();
        let mut closing = Vec::new();
        let mut cost = 0;
        let first_queued = jobs.iter().find_map(|j| j.thens.first().map(|t| t.1));
        let count = jobs.len();
        let handed_over = jobs
            .first()
            .map(|j| began.saturating_duration_since(j.made));
        for job in jobs {
            for (wal, bytes, targets) in job.wal {
                match wals.iter_mut().find(|(w, ..)| Arc::ptr_eq(w, &wal)) {
                    Some((_, all, all_targets)) => {
                        all.extend_from_slice(&bytes);
                        all_targets.extend(targets);
                    }
                    None => wals.push((wal, bytes, targets)),
                }
            }
            thens.extend(job.thens);
            later.extend(job.later);
            closing.extend(job.closing);
            cost += job.cost;
        }
        let waited_before = first_queued
            .map(|t| began.saturating_duration_since(t))
            .unwrap_or_default();
        let started = Instant::now();
        let mut bytes_synced = 0;
        for (wal, bytes, targets) in &wals {
            if !self.wals.iter().any(|w| Arc::ptr_eq(w, wal)) {
                self.wals.push(wal.clone());
            }
            let mut guard = lock(wal);
            let Some(wal) = guard.as_mut() else {
                for target in targets {
                    target.fail("the WAL was closed before this line".to_owned());
                }
                continue;
            };
            self.stats.syncs.fetch_add(1, Ordering::Relaxed);
            bytes_synced += bytes.len();
            if let Err(e) = wal.append_durably(bytes) {
                for target in targets {
                    target.fail(format!("cannot write the WAL: {e}"));
                }
            }
        }
        if started.elapsed() > std::time::Duration::from_secs(1) {
            // Everything the tasks announce waits on this: say why they are slow.
            tracing::warn!(
                "syncing the task logs' WAL took {:.1} s (the disk is busy)",
                started.elapsed().as_secs_f64()
            );
        }
        let runnable_after_sync = runnable();
        let synced = Instant::now();
        let announcements = thens.len();
        let mut longest_wait = std::time::Duration::ZERO;
        // The announcements go out as soon as their records are durable.
        for (f, queued) in thens {
            let waited = queued.elapsed();
            longest_wait = longest_wait.max(waited);
            self.stats.record_latency(waited);
            f();
        }
        let announced = Instant::now();
        for (wal, ..) in &wals {
            let mut guard = lock(wal);
            let Some(wal) = guard.as_mut().filter(|w| w.full()) else {
                continue;
            };
            let checkpoint = Instant::now();
            let done = wal.checkpoint();
            tracing::debug!(
                us = checkpoint.elapsed().as_micros() as u64,
                "WAL checkpoint"
            );
            if let Err(e) = done {
                tracing::warn!(
                    "cannot checkpoint the WAL of {}: {e}",
                    wal.state_dir().display()
                );
            }
        }
        for wal in closing {
            let taken = lock(&wal).take();
            if let Some(Err(e)) = taken.map(super::wal::Wal::close) {
                tracing::warn!("cannot close a WAL: {e}");
            }
        }
        // The snapshots (a cache) and the barriers behind them, on the snapshot writer: no
        // announcement waits for a snapshot.
        super::snapshots::hand_over(self.snapshots.as_ref(), later);
        LOG_BACKLOG.sub(cost);
        if timed {
            let micros = |d: std::time::Duration| d.as_micros() as u64;
            let runnable_end = runnable();
            tracing::debug!(
                jobs = count,
                bytes = bytes_synced,
                announcements,
                gather_us = micros(started - began),
                sync_us = micros(synced - started),
                then_us = micros(announced - synced),
                rest_us = micros(announced.elapsed()),
                // How long the first announcement had waited when the round began, and the
                // longest wait of the round's announcements when they ran.
                waited_before_us = micros(waited_before),
                // How long the round's first job waited for the syncer.
                handed_us = handed_over.map_or(0, micros),
                longest_wait_us = micros(longest_wait),
                // Of the round's time, how long the syncer was ready to run but had no CPU.
                runnable_in_sync_us = runnable_after_sync.saturating_sub(runnable_at_start) / 1000,
                runnable_after_sync_us = runnable_end.saturating_sub(runnable_after_sync) / 1000,
                "log sync"
            );
        }
    }
}

/// How long the calling thread has waited, ready to run, for a CPU (ns; the second field of
/// `/proc/thread-self/schedstat`), or 0 where the kernel does not say: the part of the syncer's
/// time that the machine's load, not its own work, decides.
fn runnable_waiting_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|w| w.parse().ok()))
        .unwrap_or(0)
}

//! Group commit of the task logs: one writer thread per process takes whatever the tasks have
//! queued (log lines, snapshots, announcements) and writes the lines; a syncer thread makes them
//! durable with as few syncs as it can (one `fdatasync` of the WAL for every batch written while
//! the last sync ran), and only then runs the announcements that followed them (invariant 6: an
//! event is on disk before anything is told about it). The writer syncs a batch itself when the
//! syncer is idle and nothing else waits: a task alone pays no hand-over between threads. The snapshots, a cache, go to a thread of their
//! own after that, which in a burst holds them back a quarter of a second at most (a task's next
//! snapshot replaces the one before), and a `flush` returns once they are written too.
//!
//! Concurrent tasks share the cost of a sync: while one batch syncs, the next one gathers. A batch
//! that touched few logs syncs each (`fdatasync`); one that touched many syncs their file system
//! once (`syncfs`, one journal commit for all of them, about ten times cheaper than a thousand
//! `fdatasync`s on ext4). A task alone waits for one `fdatasync`, as it did before.
//!
//! A log's file is open only while its task is, and only while it is busy: dropping the task's
//! [`LogTarget`] closes it, in order after its last line, and past [`MAX_OPEN_LOGS`] the writer
//! closes the logs it did not just write.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use super::snapshots::{start_snapshot_writer, Later};
use super::syncer::{lock, Job, SharedWal, Syncer};
use super::writing::open_making_dir;
pub use super::writing::{JournalStats, LogTarget, LATENCY_BOUNDS_MICROS};
use crate::pressure::LOG_BACKLOG;

/// The most operations one batch takes (about 170 records, a fraction of a millisecond of writes),
/// so a flood announces in slices: a thousand tasks released at once log a thousand records at
/// once, and the first announcements go out while the writer writes the next slice, instead of
/// all after all of them.
const MAX_BATCH: usize = 512;

/// From this many logs in one batch on one file system, one `syncfs` replaces their `fdatasync`s.
const SYNCFS_FROM: usize = 4;

/// The most log files the writer keeps open: past it, the logs the last batch did not write are
/// closed (and opened again when their task logs again), so ten thousand waiting tasks do not
/// hold ten thousand files. A quarter of the process's file limit, at most this many (a thousand
/// busy tasks then keep their logs open instead of opening them for every batch).
const MAX_OPEN_LOGS: usize = 2048;

/// [`MAX_OPEN_LOGS`] within a quarter of the soft limit of open files (at least 64).
fn max_open_logs() -> usize {
    use nix::sys::resource::{getrlimit, Resource};
    let soft = getrlimit(Resource::RLIMIT_NOFILE).map_or(1024, |(soft, _)| soft);
    usize::try_from(soft / 4)
        .unwrap_or(MAX_OPEN_LOGS)
        .clamp(64, MAX_OPEN_LOGS)
}

/// What an announcement is counted as in the backlog: its closure and the event it carries.
const THEN_COST: u64 = 256;

enum Op {
    Append(Arc<LogTarget>, Vec<u8>),
    /// The last snapshot of a batch for a path wins: a snapshot is a cache.
    Snapshot(PathBuf, Vec<u8>),
    /// Runs after the lines queued before it are durable (before the batch's snapshots are
    /// written: a snapshot is a cache, and the announcements do not wait for it); queued at the
    /// instant given.
    Then(Box<dyn FnOnce() + Send>, Instant),
    /// Runs after everything queued before it is written, snapshots included.
    Barrier(Box<dyn FnOnce() + Send>),
    /// A barrier that first closes the WALs: the process ends.
    Finish(Box<dyn FnOnce() + Send>),
    /// Opens the WAL of a state directory now rather than with its first record.
    Prepare(PathBuf),
    Close(u64),
}

impl Op {
    /// What the operation counts for in the backlog.
    fn cost(&self) -> u64 {
        match self {
            Op::Append(_, line) => line.len() as u64 + 64,
            Op::Snapshot(path, body) => (path.as_os_str().len() + body.len()) as u64 + 64,
            Op::Then(..) | Op::Barrier(_) | Op::Finish(_) => THEN_COST,
            Op::Close(_) | Op::Prepare(_) => 16,
        }
    }
}

/// The process's log writer.
pub struct Journal {
    tx: Sender<Op>,
    stats: Arc<JournalStats>,
}

static JOURNAL: OnceLock<Journal> = OnceLock::new();

/// Writes out whatever is queued, if the journal was used.
pub fn flush_if_started() {
    if let Some(j) = JOURNAL.get() {
        j.flush_blocking();
    }
}

/// Writes out whatever is queued and closes the WALs, if the journal was used: before the
/// process exits.
pub fn finish_if_started() {
    if let Some(j) = JOURNAL.get() {
        j.finish_blocking();
    }
}

/// The journal of this process (its writer thread starts on first use).
pub fn journal() -> &'static Journal {
    JOURNAL.get_or_init(|| {
        let (tx, rx) = mpsc::channel();
        let stats = Arc::new(JournalStats::default());
        let writer_stats = stats.clone();
        let spawned = std::thread::Builder::new()
            .name("rawko-log-writer".to_owned())
            .spawn(move || Writer::new(writer_stats).run(rx));
        if let Err(e) = spawned {
            // Without the thread nothing would ever be written: say so loudly, once. Every
            // operation then runs at once (announcements included) and appends report errors.
            tracing::error!("cannot start the log writer thread: {e}");
        }
        Journal { tx, stats }
    })
}

impl Journal {
    fn send(&self, op: Op) {
        let cost = op.cost();
        LOG_BACKLOG.add(cost);
        if let Err(mpsc::SendError(op)) = self.tx.send(op) {
            LOG_BACKLOG.sub(cost);
            // No writer: fail appends, keep the announcements flowing.
            match op {
                Op::Append(target, _) => target.fail("the log writer is not running".to_owned()),
                Op::Then(f, _) | Op::Barrier(f) | Op::Finish(f) => f(),
                Op::Snapshot(..) | Op::Close(_) | Op::Prepare(_) => {}
            }
        }
    }

    /// A log for the file at `path` (created on the first line), synced on its own.
    pub fn target(&self, path: PathBuf) -> Arc<LogTarget> {
        LogTarget::new(path, None)
    }

    /// The log of task `id` in `state_dir` (`tasks/<id>/events.jsonl`), made durable through the
    /// state directory's WAL ([`super::wal`]).
    pub fn task_target(&self, state_dir: &Path, id: &str) -> Arc<LogTarget> {
        let path = super::TaskFiles::dir_of(state_dir, id).join("events.jsonl");
        LogTarget::new(path, Some((state_dir.to_owned(), id.to_owned())))
    }

    /// Opens the WAL of `state_dir` (recovering the dead processes' ones) ahead of the first
    /// record, so a server's open files are the same before its first task and after its last.
    pub fn prepare(&self, state_dir: &Path) {
        self.send(Op::Prepare(state_dir.to_owned()));
    }

    /// [`Journal::flush_blocking`], then every WAL is checkpointed and removed: the process
    /// ends.
    pub fn finish_blocking(&self) {
        self.wait_blocking(Op::Finish);
    }

    /// Queues the op `make` builds around a wake-up, and blocks the thread until it runs.
    fn wait_blocking(&self, make: impl FnOnce(Box<dyn FnOnce() + Send>) -> Op) {
        let (tx, rx) = mpsc::channel();
        self.send(make(Box::new(move || {
            let _ = tx.send(());
        })));
        let _ = rx.recv();
    }

    /// Queues a complete line (with its newline).
    pub fn append(&self, target: &Arc<LogTarget>, line: Vec<u8>) {
        self.send(Op::Append(target.clone(), line));
    }

    /// Queues a snapshot: written in place (by the snapshot writer) once the lines queued
    /// before it are durable.
    pub fn snapshot(&self, path: PathBuf, body: Vec<u8>) {
        self.send(Op::Snapshot(path, body));
    }

    /// Runs `f` on the writer once everything queued before it is durable.
    pub fn then(&self, f: impl FnOnce() + Send + 'static) {
        self.send(Op::Then(Box::new(f), Instant::now()));
    }

    /// Closes a log's file after its queued lines.
    pub fn close(&self, target: &LogTarget) {
        self.send(Op::Close(target.id));
    }

    /// Waits until everything queued so far is written: lines durable, snapshots written.
    pub async fn flush(&self) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.send(Op::Barrier(Box::new(move || {
            let _ = tx.send(());
        })));
        let _ = rx.await;
    }

    /// [`Journal::flush`] for code outside the runtime (or at a task's violent end).
    pub fn flush_blocking(&self) {
        self.wait_blocking(Op::Barrier);
    }

    pub fn stats(&self) -> &JournalStats {
        &self.stats
    }
}

struct OpenLog {
    file: File,
    dev: u64,
    /// The file's length after the last complete line: a failed write is cut back to it.
    len: u64,
    target: Arc<LogTarget>,
}

struct Writer {
    open: HashMap<u64, OpenLog>,
    max_open: usize,
    stats: Arc<JournalStats>,
    /// The WAL of each state directory (`None` where it cannot be made: its task logs are
    /// synced on their own).
    wals: HashMap<PathBuf, Option<SharedWal>>,
    /// The syncer's queue and how many jobs it has not finished (`None` when its thread could
    /// not start: the writer syncs).
    syncer: Option<(Sender<Job>, Arc<AtomicU64>)>,
    /// The syncer's state, shared: the writer syncs a batch itself when the syncer is idle and
    /// nothing else waits (a task alone then waits for no hand-over between threads).
    shared: Arc<Mutex<Syncer>>,
}

impl Writer {
    fn new(stats: Arc<JournalStats>) -> Self {
        let (tx, rx) = mpsc::channel::<Job>();
        let shared = Arc::new(Mutex::new(Syncer {
            stats: stats.clone(),
            snapshots: start_snapshot_writer(),
            wals: Vec::new(),
        }));
        let unfinished = Arc::new(AtomicU64::new(0));
        let (state, count) = (shared.clone(), unfinished.clone());
        let syncer = match std::thread::Builder::new()
            .name("rawko-log-sync".to_owned())
            .spawn(move || Syncer::run(&state, &count, rx))
        {
            Ok(_) => Some((tx, unfinished)),
            Err(e) => {
                tracing::warn!("cannot start the log syncer thread ({e}): the writer syncs");
                None
            }
        };
        Writer {
            open: HashMap::new(),
            max_open: max_open_logs(),
            stats,
            wals: HashMap::new(),
            syncer,
            shared,
        }
    }

    /// The WAL of `state_dir`, opened (and the dead processes' ones recovered) on first use.
    fn wal(&mut self, state_dir: &Path) -> Option<&SharedWal> {
        if !self.wals.contains_key(state_dir) {
            let wal = super::wal::Wal::open(state_dir)
                .inspect_err(|e| {
                    tracing::warn!(
                        "cannot start a WAL in {} ({e}): its task logs are synced one by one",
                        super::wal::dir_of(state_dir).display()
                    );
                })
                .ok()
                .map(|w| Arc::new(Mutex::new(Some(w))));
            self.wals.insert(state_dir.to_owned(), wal);
        }
        self.wals.get(state_dir).and_then(Option::as_ref)
    }

    fn run(mut self, rx: Receiver<Op>) {
        let mut batch = Vec::new();
        // The first op of the next batch, taken to see whether anything waits.
        let mut next: Option<Op> = None;
        loop {
            match next.take().map_or_else(|| rx.recv().ok(), Some) {
                Some(first) => batch.push(first),
                None => break,
            }
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(op) => batch.push(op),
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
                }
            }
            let cost: u64 = batch.iter().map(Op::cost).sum();
            let job = self.batch(&mut batch, cost);
            next = rx.try_recv().ok();
            // Under load the syncer syncs while the writer writes the next batch; a batch alone
            // (nothing waits, the syncer idle) is synced here, without a hand-over.
            let job = match &self.syncer {
                Some((tx, unfinished))
                    if next.is_some() || unfinished.load(Ordering::Acquire) > 0 =>
                {
                    unfinished.fetch_add(1, Ordering::AcqRel);
                    match tx.send(job) {
                        Ok(()) => continue,
                        Err(mpsc::SendError(job)) => {
                            // The syncer is gone (it panicked): sync here from now on.
                            tracing::error!("the log syncer stopped: the writer syncs");
                            self.syncer = None;
                            job
                        }
                    }
                }
                _ => job,
            };
            lock(&self.shared).round(vec![job]);
        }
    }

    /// Writes a batch's lines to their logs and hands the rest (the WAL's lines, the
    /// announcements, the snapshots) on as a [`Job`] for the syncer. The writer goes on with the
    /// next batch while the syncer syncs; the syncer then takes every job handed on meanwhile
    /// with one sync.
    fn batch(&mut self, batch: &mut Vec<Op>, cost: u64) -> Job {
        // With the debug log on, each batch says where its time went (see `log batch` below).
        let timed = tracing::enabled!(tracing::Level::DEBUG);
        let began = Instant::now();
        // Each log's lines of the batch, in order, written at once.
        let mut lines: Vec<(Arc<LogTarget>, Vec<u8>)> = Vec::new();
        let mut line_at: HashMap<u64, usize> = HashMap::new();
        let mut thens: Vec<(Box<dyn FnOnce() + Send>, Instant)> = Vec::new();
        let mut later: Vec<Later> = Vec::new();
        let mut closes: Vec<u64> = Vec::new();
        let mut records = 0;
        let mut finishing = false;
        for op in batch.drain(..) {
            match op {
                Op::Append(target, line) => {
                    records += 1;
                    match line_at.get(&target.id) {
                        Some(i) => lines[*i].1.extend_from_slice(&line),
                        None => {
                            line_at.insert(target.id, lines.len());
                            lines.push((target, line));
                        }
                    }
                }
                Op::Snapshot(path, body) => later.push(Later::Snapshot(path, body)),
                Op::Then(f, queued) => thens.push((f, queued)),
                Op::Barrier(f) => later.push(Later::Barrier(f)),
                Op::Finish(f) => {
                    finishing = true;
                    later.push(Later::Barrier(f));
                }
                Op::Close(id) => closes.push(id),
                Op::Prepare(state_dir) => {
                    self.wal(&state_dir);
                }
            }
        }
        let writing = Instant::now();
        let oldest = thens.first().map(|t| began.saturating_duration_since(t.1));
        let mut dirty: Vec<u64> = Vec::new();
        // A task log's lines go to its state directory's WAL too: one sync for them all.
        let mut wal: Vec<(SharedWal, Vec<u8>, Vec<Arc<LogTarget>>)> = Vec::new();
        for (target, bytes) in &lines {
            if !self.write(target, bytes) {
                continue;
            }
            let shared = match &target.task {
                Some((state, _)) => self.wal(state).cloned(),
                None => None,
            };
            match (shared, &target.task) {
                (Some(shared), Some((_, id))) => {
                    let at = match wal.iter().position(|(w, ..)| Arc::ptr_eq(w, &shared)) {
                        Some(at) => at,
                        None => {
                            wal.push((shared, Vec::new(), Vec::new()));
                            wal.len() - 1
                        }
                    };
                    let (_, out, targets) = &mut wal[at];
                    for line in bytes.split_inclusive(|b| *b == b'\n') {
                        super::wal::line(out, id, line);
                    }
                    targets.push(target.clone());
                }
                _ => dirty.push(target.id),
            }
        }
        let syncing = Instant::now();
        // The logs without a WAL are synced here, before their announcements are handed on.
        self.sync(&dirty);
        let closing = if finishing {
            self.wals.drain().filter_map(|(_, w)| w).collect()
        } else {
            Vec::new()
        };
        for id in closes {
            self.open.remove(&id);
        }
        if self.open.len() > self.max_open {
            self.open.retain(|id, _| line_at.contains_key(id));
        }
        if timed {
            let micros = |d: std::time::Duration| d.as_micros() as u64;
            tracing::debug!(
                records,
                logs = lines.len(),
                synced = dirty.len(),
                oldest_us = oldest.map_or(0, micros),
                sort_us = micros(writing - began),
                write_us = micros(syncing - writing),
                sync_us = micros(syncing.elapsed()),
                "log batch"
            );
        }
        self.stats.batches.fetch_add(1, Ordering::Relaxed);
        self.stats.records.fetch_add(records, Ordering::Relaxed);
        self.stats
            .open_logs
            .store(self.open.len() as u64, Ordering::Relaxed);
        Job {
            wal,
            thens,
            later,
            closing,
            cost,
            made: Instant::now(),
        }
    }

    /// Writes one line; whether the log needs a sync.
    fn write(&mut self, target: &Arc<LogTarget>, line: &[u8]) -> bool {
        if target.failed() {
            return false;
        }
        let log = match self.open.entry(target.id) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => match open_log(&target.path) {
                Ok((meta, file)) => v.insert(OpenLog {
                    file,
                    dev: meta.dev(),
                    len: meta.len(),
                    target: target.clone(),
                }),
                Err(e) => {
                    target.fail(format!("cannot open the log: {e}"));
                    return false;
                }
            },
        };
        match log.file.write_all(line) {
            Ok(()) => {
                log.len += line.len() as u64;
                target.durable.load(Ordering::Relaxed)
            }
            Err(e) => {
                // Cut a partly written line off, so the log stays whole lines.
                let _ = log.file.set_len(log.len);
                target.fail(format!("cannot write the log: {e}"));
                false
            }
        }
    }

    /// Makes the written lines of `dirty` durable: `fdatasync` each, or `syncfs` once per file
    /// system where a batch touched many logs.
    fn sync(&mut self, dirty: &[u64]) {
        let mut by_dev: Vec<(u64, Vec<u64>)> = Vec::new();
        for id in dirty {
            let Some(log) = self.open.get(id) else {
                continue;
            };
            match by_dev.iter_mut().find(|(d, _)| *d == log.dev) {
                Some((_, ids)) => ids.push(*id),
                None => by_dev.push((log.dev, vec![*id])),
            }
        }
        for (_, ids) in by_dev {
            if ids.len() >= SYNCFS_FROM {
                let Some(first) = self.open.get(&ids[0]) else {
                    continue;
                };
                self.stats.syncs.fetch_add(1, Ordering::Relaxed);
                if let Err(e) = nix::unistd::syncfs(&first.file) {
                    for id in &ids {
                        if let Some(log) = self.open.get(id) {
                            log.target.fail(format!("cannot sync the log: {e}"));
                        }
                    }
                }
            } else {
                for id in &ids {
                    if let Some(log) = self.open.get(id) {
                        self.stats.syncs.fetch_add(1, Ordering::Relaxed);
                        if let Err(e) = log.file.sync_data() {
                            log.target.fail(format!("cannot sync the log: {e}"));
                        }
                    }
                }
            }
        }
    }
}

/// Opens a log for appending; a new task's directory is made here, off the server's thread.
fn open_log(path: &Path) -> std::io::Result<(std::fs::Metadata, File)> {
    let file = open_making_dir(path, OpenOptions::new().create(true).append(true))?;
    Ok((file.metadata()?, file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_durable_before_what_follows_them_runs() {
        let dir = tempfile::tempdir().unwrap();
        let j = journal();
        let targets: Vec<Arc<LogTarget>> = (0..8)
            .map(|i| j.target(dir.path().join(format!("l{i}"))))
            .collect();
        let (tx, rx) = mpsc::channel();
        for round in 0..50 {
            for (i, t) in targets.iter().enumerate() {
                j.append(t, format!("{round}\n").into_bytes());
                let path = t.path().to_owned();
                let tx = tx.clone();
                j.then(move || {
                    // What is announced is already in the file.
                    let text = std::fs::read_to_string(&path).unwrap();
                    tx.send((i, round, text.lines().count())).unwrap();
                });
            }
        }
        drop(tx);
        let mut told = [0usize; 8];
        for (i, round, lines) in rx {
            assert!(
                lines > round,
                "log {i}: line {round} told with {lines} lines written"
            );
            assert_eq!(told[i], round, "log {i}: told out of order");
            told[i] += 1;
        }
        assert_eq!(told, [50; 8]);
        for t in &targets {
            j.close(t);
        }
        j.flush_blocking();
    }

    #[test]
    fn a_log_that_cannot_be_opened_reports_it_and_later_lines_still_announce() {
        let j = journal();
        // Beneath a plain file: no directory can be made there, not even by root.
        let file = tempfile::NamedTempFile::new().unwrap();
        let t = j.target(file.path().join("task").join("events.jsonl"));
        j.append(&t, b"x\n".to_vec());
        let (tx, rx) = mpsc::channel();
        j.then(move || tx.send(()).unwrap());
        rx.recv().unwrap();
        assert!(t.error().unwrap().contains("cannot open the log"));
    }

    #[test]
    fn a_snapshot_is_written_without_a_flush_once_the_writer_is_idle() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("snapshot.json");
        journal().snapshot(path.clone(), b"{\"idle\":1}".to_vec());
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        while std::fs::read_to_string(&path).ok().as_deref() != Some("{\"idle\":1}") {
            assert!(Instant::now() < deadline, "never written");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }

    #[test]
    fn announcements_are_timed() {
        let timed = || -> u64 {
            journal()
                .stats()
                .latency_buckets()
                .iter()
                .map(|b| b.1)
                .sum()
        };
        let before = timed();
        journal().flush_blocking();
        let (tx, rx) = mpsc::channel();
        journal().then(move || tx.send(()).unwrap());
        rx.recv().unwrap();
        assert!(timed() > before);
    }

    #[test]
    fn the_last_snapshot_of_a_batch_wins() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("snapshot.json");
        let j = journal();
        for n in 0..100 {
            j.snapshot(path.clone(), format!("{{\"n\":{n}}}").into_bytes());
        }
        j.flush_blocking();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"n\":99}");
        // A shorter one replaces a longer one whole.
        j.snapshot(path.clone(), b"{}".to_vec());
        j.flush_blocking();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{}");
    }
}

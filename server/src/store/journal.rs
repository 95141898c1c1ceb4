//! Group commit of the task logs: one writer thread per process takes whatever the tasks have
//! queued (log lines, snapshots, announcements), writes the lines, makes them durable with as few
//! syncs as it can, writes the snapshots, and only then runs the announcements that followed them
//! (invariant 6: an event is on disk before anything is told about it).
//!
//! Concurrent tasks share the cost of a sync: while one batch syncs, the next one gathers. A batch
//! that touched few logs syncs each (`fdatasync`); one that touched many syncs their file system
//! once (`syncfs`, one journal commit for all of them, about ten times cheaper than a thousand
//! `fdatasync`s on ext4). A task alone waits for one `fdatasync`, as it did before.
//!
//! A log's file is open only while its task is, and only while it is busy: dropping the task's
//! [`LogTarget`] closes it, in order after its last line, and past [`MAX_OPEN_LOGS`] the writer
//! closes the logs it did not just write.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::{Arc, Mutex, OnceLock};

/// The most operations one batch takes, so a flood still announces in slices.
const MAX_BATCH: usize = 16_384;

/// From this many logs in one batch on one file system, one `syncfs` replaces their `fdatasync`s.
const SYNCFS_FROM: usize = 4;

/// The most log files the writer keeps open: past it, the logs the last batch did not write are
/// closed (and opened again when their task logs again), so ten thousand waiting tasks do not
/// hold ten thousand files.
const MAX_OPEN_LOGS: usize = 256;

/// One task's log as the writer knows it.
#[derive(Debug)]
pub struct LogTarget {
    id: u64,
    path: PathBuf,
    durable: AtomicBool,
    /// The first error writing or syncing this log; nothing is written after it, so the log on
    /// disk stays a valid prefix.
    error: Mutex<Option<String>>,
}

impl LogTarget {
    fn new(path: PathBuf) -> Arc<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Arc::new(LogTarget {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            path,
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

    fn fail(&self, message: String) {
        if let Ok(mut e) = self.error.lock() {
            if e.is_none() {
                tracing::error!("{}: {message}", self.path.display());
                *e = Some(message);
            }
        }
    }

    fn failed(&self) -> bool {
        self.error.lock().map(|e| e.is_some()).unwrap_or(true)
    }
}

enum Op {
    Append(Arc<LogTarget>, Vec<u8>),
    /// The last snapshot of a batch for a path wins: a snapshot is a cache.
    Snapshot(PathBuf, Vec<u8>),
    /// Runs after everything queued before it is durable.
    Then(Box<dyn FnOnce() + Send>),
    Close(u64),
}

/// Counts of the writer's work, for `rawko/serverStats` and the benchmarks.
#[derive(Debug, Default)]
pub struct JournalStats {
    pub batches: AtomicU64,
    pub records: AtomicU64,
    pub syncs: AtomicU64,
    pub open_logs: AtomicU64,
}

/// The process's log writer.
pub struct Journal {
    tx: Sender<Op>,
    stats: Arc<JournalStats>,
}

static JOURNAL: OnceLock<Journal> = OnceLock::new();

/// Writes out whatever is queued, if the journal was used: before the process exits.
pub fn flush_if_started() {
    if let Some(j) = JOURNAL.get() {
        j.flush_blocking();
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
        if let Err(mpsc::SendError(op)) = self.tx.send(op) {
            // No writer: fail appends, keep the announcements flowing.
            match op {
                Op::Append(target, _) => target.fail("the log writer is not running".to_owned()),
                Op::Then(f) => f(),
                Op::Snapshot(..) | Op::Close(_) => {}
            }
        }
    }

    /// A log for the file at `path` (created on the first line).
    pub fn target(&self, path: PathBuf) -> Arc<LogTarget> {
        LogTarget::new(path)
    }

    /// Queues a complete line (with its newline).
    pub fn append(&self, target: &Arc<LogTarget>, line: Vec<u8>) {
        self.send(Op::Append(target.clone(), line));
    }

    /// Queues a snapshot: written by a temporary file and a rename once the lines queued before
    /// it are durable.
    pub fn snapshot(&self, path: PathBuf, body: Vec<u8>) {
        self.send(Op::Snapshot(path, body));
    }

    /// Runs `f` on the writer once everything queued before it is durable.
    pub fn then(&self, f: impl FnOnce() + Send + 'static) {
        self.send(Op::Then(Box::new(f)));
    }

    /// Closes a log's file after its queued lines.
    pub fn close(&self, target: &LogTarget) {
        self.send(Op::Close(target.id));
    }

    /// Waits until everything queued so far is durable.
    pub async fn flush(&self) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.then(move || {
            let _ = tx.send(());
        });
        let _ = rx.await;
    }

    /// [`Journal::flush`] for code outside the runtime (or at a task's violent end).
    pub fn flush_blocking(&self) {
        let (tx, rx) = mpsc::channel();
        self.then(move || {
            let _ = tx.send(());
        });
        let _ = rx.recv();
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
    stats: Arc<JournalStats>,
}

impl Writer {
    fn new(stats: Arc<JournalStats>) -> Self {
        Writer {
            open: HashMap::new(),
            stats,
        }
    }

    fn run(mut self, rx: Receiver<Op>) {
        let mut batch = Vec::new();
        while let Ok(first) = rx.recv() {
            batch.push(first);
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(op) => batch.push(op),
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
                }
            }
            self.batch(&mut batch);
        }
    }

    fn batch(&mut self, batch: &mut Vec<Op>) {
        let mut dirty: Vec<u64> = Vec::new();
        let mut seen: HashSet<u64> = HashSet::new();
        let mut snapshots: Vec<(PathBuf, Vec<u8>)> = Vec::new();
        let mut thens: Vec<Box<dyn FnOnce() + Send>> = Vec::new();
        let mut closes: Vec<u64> = Vec::new();
        let mut records = 0;
        for op in batch.drain(..) {
            match op {
                Op::Append(target, line) => {
                    records += 1;
                    if self.write(&target, &line) && seen.insert(target.id) {
                        dirty.push(target.id);
                    }
                }
                Op::Snapshot(path, body) => match snapshots.iter_mut().find(|(p, _)| *p == path) {
                    Some(slot) => slot.1 = body,
                    None => snapshots.push((path, body)),
                },
                Op::Then(f) => thens.push(f),
                Op::Close(id) => closes.push(id),
            }
        }
        let started = std::time::Instant::now();
        self.sync(&dirty);
        if started.elapsed() > std::time::Duration::from_secs(1) {
            // Everything the tasks announce waits on this: say why they are slow.
            tracing::warn!(
                "syncing {} task logs took {:.1} s (the disk is busy)",
                dirty.len(),
                started.elapsed().as_secs_f64()
            );
        }
        for (path, body) in snapshots {
            if let Err(e) = write_replacing(&path, &body) {
                tracing::warn!("cannot write {}: {e}", path.display());
            }
        }
        for f in thens {
            f();
        }
        for id in closes {
            self.open.remove(&id);
        }
        if self.open.len() > MAX_OPEN_LOGS {
            self.open.retain(|id, _| seen.contains(id));
        }
        self.stats.batches.fetch_add(1, Ordering::Relaxed);
        self.stats.records.fetch_add(records, Ordering::Relaxed);
        self.stats
            .open_logs
            .store(self.open.len() as u64, Ordering::Relaxed);
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

/// Opens `path` with `options`, making its directory first when it is missing (a new task's,
/// made here off the server's thread).
fn open_making_dir(path: &Path, options: &OpenOptions) -> std::io::Result<File> {
    match options.open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            path.parent().map_or(Err(e), std::fs::create_dir_all)?;
            options.open(path)
        }
        other => other,
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

//! The write-ahead log that makes task records durable: one file per process and state
//! directory (`<state>/journal/<pid>-<n>.wal`), one `fdatasync` per batch for every task at once.
//!
//! Each batch of records is written to the tasks' own logs (`tasks/<id>/events.jsonl`, not
//! synced) and appended here, one line per record: the task's id, a tab, and the record's line.
//! Syncing this one file makes the whole batch durable, whatever the number of tasks: a quarter of
//! a millisecond on the machine of `docs/performance.md`, where syncing a thousand task logs took
//! 4 to 20 ms. Once the file passes [`CHECKPOINT_BYTES`] (and when the process ends), the task
//! logs are synced with one `syncfs` and the file starts again empty.
//!
//! Ahead of its end the file keeps zeros already written and synced (up to [`ZEROED_AHEAD`],
//! written a chunk at a time while the log syncer has nothing else to do): a line then lands in
//! blocks the file system has allocated and written before, so its sync writes the line's pages
//! and nothing else. Appended to fresh blocks, a sync also allocates them, turns them from
//! unwritten to written on a kernel worker thread and writes the inode: more work, and more
//! threads to wait for on a busy machine. Recovery reads up to the first zero byte.
//!
//! After a crash of the machine a task log may lack records that were announced: they are in a
//! WAL file. The next rawko that uses the state directory recovers every WAL file no live process
//! holds (each process holds its own under an exclusive `flock`; `recover.rs`): it gives each
//! task log the records it lacks, syncs the logs, and removes the file (or keeps it aside when a
//! record in it is damaged). A crash of rawko alone loses nothing (its writes are in the page
//! cache): recovery then finds every record in place.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use nix::fcntl::{Flock, FlockArg};
// Where the WAL files are and how a line is written are kept with the reading of them
// (`recover.rs`), which this module's `open` runs, so that recovery needs nothing of this module.
pub use super::recover::{dir_of, line};

/// Past this many bytes, the task logs are synced and the WAL starts again.
pub const CHECKPOINT_BYTES: u64 = 16 << 20;

/// How far ahead of its last line the WAL keeps zeros written, at most: room for a burst's lines
/// (a thousand tasks released at once log about 11 MB).
pub const ZEROED_AHEAD: u64 = 16 << 20;

/// The zeros written ahead at a time: a quarter of a millisecond of the disk or so, the longest
/// a line that comes meanwhile waits for them.
const ZERO_CHUNK: usize = 256 << 10;

static ZEROS: [u8; ZERO_CHUNK] = [0; ZERO_CHUNK];

/// This process's WAL for one state directory.
pub struct Wal {
    state_dir: PathBuf,
    path: PathBuf,
    file: Flock<File>,
    /// The end of the last line: the next goes there.
    len: u64,
    /// The end of the zeros written (and synced) ahead of `len` (`len` when there are none).
    zeroed: u64,
    /// Writing zeros ahead failed once (a full disk): the lines are appended to fresh blocks.
    no_zeros: bool,
}

impl Wal {
    /// Recovers the WAL files no live process holds, then starts this process's own.
    pub fn open(state_dir: &Path) -> io::Result<Wal> {
        let dir = dir_of(state_dir);
        fs::create_dir_all(&dir)?;
        if let Err(e) = super::recover::recover(state_dir) {
            tracing::warn!(
                "cannot recover the task logs' WAL in {}: {e}",
                dir.display()
            );
        }
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let name = format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        // Locked under a name recovery does not look at, then renamed: another process never
        // takes a file this one is about to use.
        let pending = dir.join(format!("{name}.new"));
        // Each line is written at `len`, the end of the last one (not at the end of the file,
        // which may hold zeros written ahead).
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&pending)?;
        let file = Flock::lock(file, FlockArg::LockExclusiveNonblock)
            .map_err(|(_, errno)| io::Error::from(errno))?;
        // A file of a dead process that had this pid.
        file.set_len(0)?;
        let path = dir.join(format!("{name}.wal"));
        fs::rename(&pending, &path)?;
        File::open(&dir)?.sync_all()?;
        Ok(Wal {
            state_dir: state_dir.to_owned(),
            path,
            file,
            len: 0,
            zeroed: 0,
            no_zeros: false,
        })
    }

    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// Appends `bytes` (whole lines) and makes them durable. On failure the file is cut back to
    /// what it held, so it stays whole lines.
    pub fn append_durably(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self.write_durably_at(bytes, self.len) {
            Ok(()) => {
                self.len += bytes.len() as u64;
                self.zeroed = self.zeroed.max(self.len);
                Ok(())
            }
            Err(e) => {
                // The zeros ahead go too: what follows the last line is nothing or zeros.
                let _ = self.file.set_len(self.len);
                self.zeroed = self.len;
                Err(e)
            }
        }
    }

    fn write_durably_at(&self, bytes: &[u8], at: u64) -> io::Result<()> {
        self.file.write_all_at(bytes, at)?;
        self.file.sync_data()
    }

    /// How many bytes of zeros are written ahead of the last line.
    pub fn zeroed_ahead(&self) -> u64 {
        self.zeroed.saturating_sub(self.len)
    }

    /// Writes and syncs one more chunk of zeros ahead of the last line, if fewer than
    /// [`ZEROED_AHEAD`] bytes are there; whether it wrote any (call it again while idle).
    pub fn zero_ahead(&mut self) -> io::Result<bool> {
        if self.no_zeros || self.zeroed >= self.len + ZEROED_AHEAD {
            return Ok(false);
        }
        match self.write_durably_at(&ZEROS, self.zeroed) {
            Ok(()) => {
                self.zeroed += ZERO_CHUNK as u64;
                Ok(true)
            }
            Err(e) => {
                self.no_zeros = true;
                let _ = self.file.set_len(self.zeroed);
                Err(e)
            }
        }
    }

    /// Whether the file is big enough for a checkpoint.
    pub fn full(&self) -> bool {
        self.len >= CHECKPOINT_BYTES
    }

    /// Makes the task logs durable on their own (one `syncfs`), then empties the WAL.
    pub fn checkpoint(&mut self) -> io::Result<()> {
        nix::unistd::syncfs(&*self.file).map_err(io::Error::from)?;
        // The zeros ahead go with the lines (they are written again while idle).
        self.file.set_len(0)?;
        self.file.sync_all()?;
        self.len = 0;
        self.zeroed = 0;
        Ok(())
    }

    /// The task logs made durable on their own, and the file is removed: the process ends.
    pub fn close(self) -> io::Result<()> {
        nix::unistd::syncfs(&*self.file).map_err(io::Error::from)?;
        fs::remove_file(&self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::super::recover::recover;
    use super::*;

    fn record(seq: u64) -> Vec<u8> {
        format!("{{\"v\":1,\"seq\":{seq},\"at\":0,\"event\":{{\"type\":\"interrupted\"}}}}\n")
            .into_bytes()
    }

    /// Task t's record `seq` as a WAL line.
    fn wal_line(seq: u64) -> Vec<u8> {
        let mut out = Vec::new();
        line(&mut out, "t", &record(seq));
        out
    }

    fn seqs(path: &Path) -> Vec<u64> {
        let text = fs::read_to_string(path).unwrap();
        text.lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    }

    #[test]
    fn records_the_logs_lack_come_back_from_a_dead_process_wal_and_the_file_goes() {
        let state = tempfile::tempdir().unwrap();
        let state = state.path();
        // Task a lost its last two records, b its whole log but the first line, and its tail is
        // torn; c has everything; d was removed since.
        let log = |id: &str| state.join("tasks").join(id).join("events.jsonl");
        for id in ["a", "b", "c"] {
            fs::create_dir_all(log(id).parent().unwrap()).unwrap();
        }
        fs::write(log("a"), [record(1), record(2)].concat()).unwrap();
        let mut torn = record(1);
        torn.extend_from_slice(b"{\"v\":1,\"se");
        fs::write(log("b"), torn).unwrap();
        fs::write(log("c"), [record(1), record(2)].concat()).unwrap();
        let mut wal = Vec::new();
        for (id, seq) in [
            ("a", 2),
            ("a", 3),
            ("b", 2),
            ("c", 2),
            ("d", 1),
            ("a", 4),
            ("b", 3),
        ] {
            line(&mut wal, id, &record(seq));
        }
        wal.extend_from_slice(b"a\t{\"v\":1,\"seq\":5"); // torn: never synced, never announced
        fs::create_dir_all(dir_of(state)).unwrap();
        fs::write(dir_of(state).join("999999-1.wal"), wal).unwrap();

        assert_eq!(recover(state).unwrap(), 4);
        assert_eq!(seqs(&log("a")), [1, 2, 3, 4]);
        assert_eq!(seqs(&log("b")), [1, 2, 3]);
        assert_eq!(seqs(&log("c")), [1, 2]);
        assert!(!state.join("tasks/d").exists());
        assert_eq!(fs::read_dir(dir_of(state)).unwrap().count(), 0);
        // Again: nothing more to do.
        assert_eq!(recover(state).unwrap(), 0);
    }

    #[test]
    fn after_a_checkpoint_or_a_failed_append_the_wal_starts_at_its_new_end() {
        let state = tempfile::tempdir().unwrap();
        let mut wal = Wal::open(state.path()).unwrap();
        let (first, second) = (wal_line(1), wal_line(2));
        wal.append_durably(&first).unwrap();
        wal.checkpoint().unwrap();
        wal.append_durably(&second).unwrap();
        // No hole where the checkpointed lines were: a hole is zeros before the next id, which
        // recovery would read as one line (and a long-lived server's holes add up to every
        // byte it ever logged).
        assert_eq!(fs::read(&wal.path).unwrap(), second);
        // The other way of cutting back: a failed append (here, cut by hand as it does).
        wal.file.set_len(0).unwrap();
        wal.len = 0;
        wal.append_durably(&first).unwrap();
        assert_eq!(fs::read(&wal.path).unwrap(), first);
        wal.close().unwrap();
    }

    #[test]
    fn lines_go_over_the_zeros_written_ahead_and_recovery_stops_at_them() {
        let state = tempfile::tempdir().unwrap();
        let mut wal = Wal::open(state.path()).unwrap();
        let (first, second) = (wal_line(1), wal_line(2));
        wal.append_durably(&first).unwrap();
        assert!(wal.zero_ahead().unwrap());
        assert_eq!(wal.zeroed_ahead(), ZERO_CHUNK as u64);
        wal.append_durably(&second).unwrap();
        // The second line follows the first, over the zeros, not after them.
        let text = fs::read(&wal.path).unwrap();
        let lines = [first.clone(), second.clone()].concat();
        assert_eq!(text.len() as u64, first.len() as u64 + ZERO_CHUNK as u64);
        assert_eq!(&text[..lines.len()], lines);
        assert!(text[lines.len()..].iter().all(|b| *b == 0));
        assert_eq!(wal.zeroed_ahead(), ZERO_CHUNK as u64 - second.len() as u64);

        // A dead process's WAL with zeros ahead, over which the machine stopped while writing
        // the third line: its first blocks are zeros still, its last one reached the disk. The
        // first two come back; the third, never synced and never announced, does not.
        let other = tempfile::tempdir().unwrap();
        let log = other.path().join("tasks/t/events.jsonl");
        fs::create_dir_all(log.parent().unwrap()).unwrap();
        fs::write(&log, b"").unwrap();
        let mut dead = text.clone();
        let mut third = b"\n".to_vec();
        line(&mut third, "t", &record(3));
        let at = lines.len() + 100;
        dead[at..at + third.len()].copy_from_slice(&third);
        fs::create_dir_all(dir_of(other.path())).unwrap();
        fs::write(dir_of(other.path()).join("999999-1.wal"), dead).unwrap();
        assert_eq!(recover(other.path()).unwrap(), 2);
        assert_eq!(seqs(&log), [1, 2]);
        wal.close().unwrap();
    }

    #[test]
    fn zeros_are_written_ahead_up_to_a_limit_and_a_checkpoint_drops_them() {
        let state = tempfile::tempdir().unwrap();
        let mut wal = Wal::open(state.path()).unwrap();
        let mut chunks = 0;
        while wal.zero_ahead().unwrap() {
            chunks += 1;
        }
        assert_eq!(chunks, ZEROED_AHEAD / ZERO_CHUNK as u64);
        assert_eq!(wal.zeroed_ahead(), ZEROED_AHEAD);
        let bytes = wal_line(1);
        wal.append_durably(&bytes).unwrap();
        // One line used some: one more chunk tops them up.
        assert!(wal.zero_ahead().unwrap());
        assert!(!wal.zero_ahead().unwrap());
        wal.checkpoint().unwrap();
        assert_eq!(fs::metadata(&wal.path).unwrap().len(), 0);
        assert_eq!(wal.zeroed_ahead(), 0);
        wal.append_durably(&bytes).unwrap();
        assert_eq!(fs::read(&wal.path).unwrap(), bytes);
        wal.close().unwrap();
    }

    #[test]
    fn a_live_process_wal_is_left_alone_and_a_closed_one_is_gone() {
        let state = tempfile::tempdir().unwrap();
        let mut wal = Wal::open(state.path()).unwrap();
        let mut bytes = Vec::new();
        line(&mut bytes, "t", &record(1));
        wal.append_durably(&bytes).unwrap();
        // Another process (here: another open) recovers nothing of it and keeps it.
        let other = Wal::open(state.path()).unwrap();
        assert!(wal.path.exists());
        assert_eq!(fs::read(&wal.path).unwrap(), bytes);
        wal.checkpoint().unwrap();
        assert_eq!(fs::metadata(&wal.path).unwrap().len(), 0);
        let path = wal.path.clone();
        wal.close().unwrap();
        assert!(!path.exists());
        other.close().unwrap();
        assert_eq!(fs::read_dir(dir_of(state.path())).unwrap().count(), 0);
    }
}

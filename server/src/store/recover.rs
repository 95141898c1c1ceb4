//! Recovery after a crash: the records of the WAL files no live process holds go back into the
//! task logs that lack them (`wal.rs` writes those files).
//!
//! A WAL is read up to where its lines end: the zeros written ahead of its last line (stop 28 of
//! docs/performance.md), or lines the machine stopped writing over them. Such a torn end was
//! never synced, so its records were never announced, and it is not read. A record damaged in
//! place (a zero byte inside it with whole lines after it, or a line that is no record) is
//! another thing: the records after it are read all the same, the damaged one is reported in the
//! server's log and in the log of the task it concerns, and the WAL is kept aside
//! (`<name>.wal.damaged`, beside it) instead of removed.
//!
//! How the two are told apart: the lines of a batch are written over zeros and then synced, and a
//! stop of the machine leaves each of the batch's sectors (512 bytes) either written or still
//! zeros. So the torn end of a WAL starts with a zero at a line's start (the batch's first sector
//! was not written), or holds, inside a line, zeros from a sector's start to a sector's end.
//! Zeros anywhere else inside a line are damage.
//!
//! A task's log gets every record it lacks: those after its last whole one and, where a line of
//! the log itself is damaged (a crash of the machine can leave zeros in the middle of a file it
//! was writing), the record that line held, from the WAL. A record found in neither is lost: a
//! `damaged` note takes its place (its seq), so the log still reads, keeps every good record
//! after it, and says what happened (the engine does not resume such a task). A log with damaged
//! lines is written anew and its old copy kept beside it (`events.jsonl.damaged`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use super::{TaskFiles, FORMAT_VERSION};

/// What a disk writes whole: a stop of the machine leaves each sector of a write either written
/// or as it was.
const SECTOR: usize = 512;

/// Recovery's note about a damaged record of a task, added to the task's log as a record of
/// kind `damaged` (engine/log.rs reads it as `LogEvent::Damaged`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DamageNote {
    /// The file that holds the damaged copy: the WAL kept aside, or the log's old copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    /// Where the damaged copy starts in that file, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// The record was lost (no good copy was found): this note stands in its place.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub lost: bool,
    /// What recovery found and did, with the file and the offset.
    pub note: String,
}

/// The fields of a record recovery reads.
#[derive(Deserialize)]
struct Head {
    v: u32,
    seq: u64,
}

/// A record of a dead WAL: where its line starts, and the record's line (without the task's id).
struct WalRecord {
    offset: u64,
    line: Vec<u8>,
}

/// A line of a dead WAL that is no record: where it starts, and the task and the seq it names
/// when they can still be read.
#[derive(Debug, Clone)]
struct Damage {
    offset: u64,
    task: Option<String>,
    seq: Option<u64>,
}

/// What a dead WAL holds.
#[derive(Default)]
struct WalContents {
    /// Each task's records by seq (a later copy of a seq replaces an earlier one: the same line).
    tasks: BTreeMap<String, BTreeMap<u64, WalRecord>>,
    damaged: Vec<Damage>,
    /// Where a torn end with more than a line cut short starts (lines the machine stopped
    /// writing over the zeros).
    torn: Option<u64>,
    /// The end of the last byte that is not a zero.
    end: u64,
}

/// [`recover`] before the store is read, saying what went wrong in the log (never fatal: the
/// next rawko tries again).
pub fn recover_before_reading(state_dir: &Path) {
    if let Err(e) = recover(state_dir) {
        tracing::warn!(
            "cannot recover the task logs' WAL in {}: {e}",
            dir_of(state_dir).display()
        );
    }
}

/// Recovers the WAL files of `state_dir` that no live process holds; how many records it put back
/// into task logs.
pub fn recover(state_dir: &Path) -> io::Result<usize> {
    let dir = dir_of(state_dir);
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut restored = 0;
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "wal") {
            continue;
        }
        let Ok(file) = OpenOptions::new().read(true).write(true).open(&path) else {
            continue;
        };
        // Held by a live process: its own.
        let Ok(file) = Flock::lock(file, FlockArg::LockExclusiveNonblock) else {
            continue;
        };
        restored += recover_file(state_dir, &path, &file)?;
    }
    Ok(restored)
}

/// The records of one dead WAL put back into the task logs that lack them; then the file goes,
/// or is kept aside when a record in it is damaged.
fn recover_file(state_dir: &Path, path: &Path, file: &File) -> io::Result<usize> {
    let bytes = fs::read(path)?;
    let wal = read_wal(&bytes);
    if let Some(at) = wal.torn {
        tracing::warn!(
            "{}: the machine stopped while lines were written at byte {at}; they were never synced (nor announced) and are not recovered",
            path.display()
        );
    }
    // Decided before the logs are mended, whose notes name it.
    let aside = (!wal.damaged.is_empty()).then(|| unused(path, "damaged"));
    let wal_file = aside.as_deref().unwrap_or(path);
    for d in &wal.damaged {
        tracing::warn!(
            "{}: a damaged record at byte {} (task {}, seq {}); the records after it are recovered",
            wal_file.display(),
            d.offset,
            d.task.as_deref().unwrap_or("unknown"),
            d.seq.map_or("unknown".to_owned(), |s| s.to_string()),
        );
    }
    let ids: BTreeSet<&str> = wal
        .tasks
        .keys()
        .map(String::as_str)
        .chain(wal.damaged.iter().filter_map(|d| d.task.as_deref()))
        .collect();
    let none = BTreeMap::new();
    let mut restored = 0;
    for id in ids {
        let dir = TaskFiles::dir_of(state_dir, id);
        if !dir.is_dir() {
            // The task was removed since.
            continue;
        }
        let records = wal.tasks.get(id).unwrap_or(&none);
        let damage: Vec<&Damage> = wal
            .damaged
            .iter()
            .filter(|d| d.task.as_deref().is_none_or(|t| t == id))
            .collect();
        restored += mend(&dir.join("events.jsonl"), records, &damage, wal_file)?;
    }
    match &aside {
        Some(aside) => {
            // The zeros written ahead tell nothing: the copy kept ends with its last line.
            file.set_len(wal.end)?;
            fs::rename(path, aside)?;
            tracing::warn!(
                "{}: {} damaged record(s); the WAL is kept as {}",
                path.display(),
                wal.damaged.len(),
                aside.display()
            );
        }
        None => fs::remove_file(path)?,
    }
    if let Some(dir) = path.parent() {
        File::open(dir)?.sync_all()?;
    }
    Ok(restored)
}

/// `path` with `.<suffix>` added, or `.<suffix>-N` when that is taken.
fn unused(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".{suffix}"));
    let mut n = 1;
    let mut candidate = PathBuf::from(&name);
    while candidate.exists() {
        n += 1;
        let mut again = name.clone();
        again.push(format!("-{n}"));
        candidate = PathBuf::from(again);
    }
    candidate
}

/// Reads a dead WAL's lines up to their end (see the module's doc).
fn read_wal(b: &[u8]) -> WalContents {
    let end = b.iter().rposition(|x| *x != 0).map_or(0, |i| i + 1);
    let mut wal = WalContents {
        end: end as u64,
        ..WalContents::default()
    };
    let mut p = 0;
    while p < end {
        if b[p] == 0 {
            // Zeros at a line's start: the first sector of the last batch was not written.
            wal.torn = Some(p as u64);
            break;
        }
        let Some(nl) = b[p..end].iter().position(|x| *x == b'\n') else {
            // The last line, cut short: it was never synced. Zeros inside it say more lines
            // were being written after them.
            if b[p..end].contains(&0) {
                wal.torn = Some(p as u64);
            }
            break;
        };
        let line = &b[p..=p + nl];
        if let Some(z) = line.iter().position(|x| *x == 0) {
            let from = p + z;
            let to = from + b[from..].iter().take_while(|x| **x == 0).count();
            if from % SECTOR == 0 && to % SECTOR == 0 {
                // Whole sectors never written: the torn end.
                wal.torn = Some(p as u64);
                break;
            }
        }
        match parse_wal_line(line) {
            Some((id, seq, record)) => {
                wal.tasks.entry(id.to_owned()).or_default().insert(
                    seq,
                    WalRecord {
                        offset: p as u64,
                        line: record.to_vec(),
                    },
                );
            }
            None => wal.damaged.push(damage_of(p as u64, line)),
        }
        p += nl + 1;
    }
    wal
}

/// The directory of the WAL files of a state directory.
pub fn dir_of(state_dir: &Path) -> PathBuf {
    state_dir.join("journal")
}

/// One line of a WAL: the task's id, a tab, the record's line (with its newline).
pub fn line(out: &mut Vec<u8>, task_id: &str, record: &[u8]) {
    out.extend_from_slice(task_id.as_bytes());
    out.push(b'\t');
    out.extend_from_slice(record);
}

/// A WAL line's task id, seq and record, if it is a whole record.
fn parse_wal_line(line: &[u8]) -> Option<(&str, u64, &[u8])> {
    let tab = line.iter().position(|b| *b == b'\t')?;
    let id = task_id(&line[..tab])?;
    let record = &line[tab + 1..];
    let seq = record_seq(record)?;
    Some((id, seq, record))
}

/// A WAL line's task id (one that names no task's directory is mapped aside by
/// `TaskFiles::dir_of`).
fn task_id(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes)
        .ok()
        .filter(|id| !id.is_empty() && !id.contains('\0'))
}

/// The seq of a log line that is a whole record of this format (no zero byte in it).
fn record_seq(line: &[u8]) -> Option<u64> {
    if line.contains(&0) || !line.ends_with(b"\n") {
        return None;
    }
    serde_json::from_slice::<Head>(line)
        .ok()
        .filter(|h| h.v == FORMAT_VERSION)
        .map(|h| h.seq)
}

/// What can still be read of a damaged WAL line: its task's id before the tab, and its seq from
/// the record's head as rawko writes it (`{"v":1,"seq":N,`).
fn damage_of(offset: u64, line: &[u8]) -> Damage {
    let tab = line.iter().position(|b| *b == b'\t');
    let task = tab.and_then(|t| task_id(&line[..t])).map(str::to_owned);
    let head = format!("{{\"v\":{FORMAT_VERSION},\"seq\":");
    let seq = tab
        .map(|t| &line[t + 1..])
        .and_then(|record| record.strip_prefix(head.as_bytes()))
        .and_then(|rest| {
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            let after = rest.get(digits);
            (digits > 0 && after == Some(&b','))
                .then(|| std::str::from_utf8(&rest[..digits]).ok()?.parse().ok())
                .flatten()
        });
    Damage { offset, task, seq }
}

/// A task's log as recovery finds it.
struct LogScan {
    /// Its records by seq: where each one's line is (the first copy).
    records: BTreeMap<u64, Range<usize>>,
    /// Its damaged lines (whole lines that are no record, or a second copy of a seq).
    damaged: Vec<Range<usize>>,
    /// Whether its records count up from 1 in order, with no damaged line among them.
    clean: bool,
    /// The end of its last whole line (what follows is a line cut short).
    whole: usize,
}

fn scan_log(text: &[u8]) -> LogScan {
    let mut scan = LogScan {
        records: BTreeMap::new(),
        damaged: Vec::new(),
        clean: true,
        whole: 0,
    };
    let mut at = 0;
    for line in text.split_inclusive(|b| *b == b'\n') {
        let range = at..at + line.len();
        at += line.len();
        if !line.ends_with(b"\n") {
            break;
        }
        scan.whole = range.end;
        match record_seq(line) {
            Some(seq) if !scan.records.contains_key(&seq) => {
                scan.clean &= seq == scan.records.len() as u64 + 1;
                scan.records.insert(seq, range);
            }
            _ => {
                scan.clean = false;
                scan.damaged.push(range);
            }
        }
    }
    scan
}

/// One record of a log as recovery writes it.
enum Entry<'a> {
    Line(&'a [u8]),
    Note(DamageNote),
}

/// Gives the log at `path` the records of `wal` (the task's records in the WAL `wal_file`) it
/// lacks, a `damaged` note in the place of each record lost, and one for each other damaged
/// copy of its records; how many records came back from the WAL. A log that needs nothing is
/// left as it is (but for a line cut short at its end): it may be a live task's.
fn mend(
    path: &Path,
    wal: &BTreeMap<u64, WalRecord>,
    damage: &[&Damage],
    wal_file: &Path,
) -> io::Result<usize> {
    let text = match fs::read(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e),
    };
    let scan = scan_log(&text);
    let log_last = scan.records.keys().next_back().copied().unwrap_or(0);
    // A damaged WAL line that names the task's last record counts: it was synced, so it may
    // have been announced.
    let named_last = damage
        .iter()
        .filter(|d| d.task.is_some())
        .filter_map(|d| d.seq);
    let last = wal
        .keys()
        .copied()
        .chain(named_last)
        .max()
        .unwrap_or(0)
        .max(log_last);
    if scan.clean && last == log_last {
        if scan.whole < text.len() {
            // A line cut short at the end goes, so the next append starts a fresh line.
            let file = OpenOptions::new().write(true).open(path)?;
            file.set_len(scan.whole as u64)?;
            file.sync_all()?;
        }
        return Ok(0);
    }
    // A log with damaged lines is written anew; its old copy stays beside it.
    let old_copy = (!scan.clean).then(|| unused(path, "damaged"));
    let mut used_log = vec![false; scan.damaged.len()];
    let mut used_wal = vec![false; damage.len()];
    let mut entries = Vec::new();
    let mut restored = 0;
    let first = if scan.clean { log_last + 1 } else { 1 };
    for seq in first..=last {
        if let Some(range) = scan.records.get(&seq) {
            entries.push(Entry::Line(&text[range.clone()]));
        } else if let Some(record) = wal.get(&seq) {
            entries.push(Entry::Line(&record.line));
            restored += 1;
        } else {
            // Where a damaged copy of it could be: the WAL's line that names it, a damaged line
            // of the log between its neighbours, or a nameless WAL line between theirs.
            let around = |s: u64| scan.records.get(&s).map(|r| (r.start, r.end));
            let (after, before) = (
                seq.checked_sub(1).and_then(around).map_or(0, |r| r.1),
                around(seq + 1).map_or(usize::MAX, |r| r.0),
            );
            let wal_around = |s: u64| wal.get(&s).map(|r| r.offset);
            let (wal_after, wal_before) = (
                seq.checked_sub(1).and_then(wal_around).unwrap_or(0),
                wal_around(seq + 1).unwrap_or(u64::MAX),
            );
            let named = damage
                .iter()
                .position(|d| d.task.is_some() && d.seq == Some(seq));
            let in_log = || {
                (0..scan.damaged.len()).find(|i| {
                    !used_log[*i]
                        && scan.damaged[*i].start >= after
                        && scan.damaged[*i].end <= before
                })
            };
            let nameless = || {
                (0..damage.len()).find(|i| {
                    let d = damage[*i];
                    !used_wal[*i]
                        && (d.task.is_none() || d.seq.is_none())
                        && d.offset > wal_after
                        && d.offset < wal_before
                })
            };
            let (file, offset, why) = if let Some(i) = named {
                used_wal[i] = true;
                let why = "its copy in the WAL is damaged";
                (Some(wal_file), Some(damage[i].offset), why)
            } else if let Some(i) = in_log() {
                used_log[i] = true;
                let why = "its line in the log is damaged and the WAL has no copy";
                (old_copy.as_deref(), Some(scan.damaged[i].start as u64), why)
            } else if let Some(i) = nameless() {
                used_wal[i] = true;
                let why = "a damaged line of the WAL may have held it";
                (Some(wal_file), Some(damage[i].offset), why)
            } else {
                (None, None, "it is in neither the log nor the WAL")
            };
            entries.push(Entry::Note(DamageNote {
                file: file.map(Path::to_owned),
                offset,
                lost: true,
                note: format!(
                    "record {seq} was lost in a crash: {why}{}",
                    place(file, offset)
                ),
            }));
        }
    }
    // The other damaged copies: told, though nothing was lost with them.
    let unused_log = scan.damaged.iter().zip(&used_log).filter(|(_, u)| !**u);
    for (range, _) in unused_log {
        let file = old_copy.as_deref();
        let offset = Some(range.start as u64);
        entries.push(Entry::Note(DamageNote {
            file: file.map(Path::to_owned),
            offset,
            lost: false,
            note: format!(
                "a damaged line of the log was dropped; every record around it was found{}",
                place(file, offset)
            ),
        }));
    }
    // A nameless WAL line no lost record needed is not this task's to tell.
    let unused_wal = damage
        .iter()
        .zip(&used_wal)
        .filter(|(d, u)| !**u && d.task.is_some());
    for (d, _) in unused_wal {
        let offset = Some(d.offset);
        let what = match d.seq {
            Some(seq) => {
                format!("the WAL's copy of record {seq} is damaged; a good copy was found")
            }
            None => {
                "a damaged line of the WAL names this task; every record of it was found".to_owned()
            }
        };
        entries.push(Entry::Note(DamageNote {
            file: Some(wal_file.to_owned()),
            offset,
            lost: false,
            note: format!("{what}{}", place(Some(wal_file), offset)),
        }));
    }
    let lost = entries
        .iter()
        .filter(|e| matches!(e, Entry::Note(n) if n.lost))
        .count();
    let notes = entries
        .iter()
        .filter(|e| matches!(e, Entry::Note(_)))
        .count();
    let mut bytes = Vec::new();
    let now = crate::clock::now_millis();
    for (seq, entry) in (first..).zip(&entries) {
        match entry {
            Entry::Line(line) => bytes.extend_from_slice(line),
            Entry::Note(note) => note_line(&mut bytes, seq, now, note),
        }
    }
    match &old_copy {
        None => {
            // The log's records stand as they are: only what follows them is written.
            let file = OpenOptions::new().write(true).open(path).or_else(|e| {
                if e.kind() == io::ErrorKind::NotFound {
                    File::create(path)
                } else {
                    Err(e)
                }
            })?;
            file.set_len(scan.whole as u64)?;
            let mut file = OpenOptions::new().append(true).open(path)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
        }
        Some(old_copy) => {
            fs::hard_link(path, old_copy)?;
            let tmp = path.with_extension("jsonl.tmp");
            let mut file = File::create(&tmp)?;
            file.write_all(&bytes)?;
            file.sync_all()?;
            fs::rename(&tmp, path)?;
            if let Some(dir) = path.parent() {
                File::open(dir)?.sync_all()?;
            }
        }
    }
    if restored > 0 {
        tracing::warn!(
            "{}: {restored} record(s) restored from the WAL (the machine stopped before they were written back)",
            path.display()
        );
    }
    if notes > 0 {
        tracing::warn!(
            "{}: {notes} damaged record(s) noted in the log ({lost} lost){}",
            path.display(),
            old_copy
                .as_ref()
                .map(|c| format!("; the log as it was is kept as {}", c.display()))
                .unwrap_or_default()
        );
    }
    Ok(restored)
}

/// ` (byte N of FILE)`, as far as they are known.
fn place(file: Option<&Path>, offset: Option<u64>) -> String {
    match (file, offset) {
        (Some(file), Some(offset)) => format!(" (byte {offset} of {})", file.display()),
        (Some(file), None) => format!(" ({})", file.display()),
        _ => String::new(),
    }
}

/// A `damaged` record's line.
fn note_line(out: &mut Vec<u8>, seq: u64, at: i64, note: &DamageNote) {
    let mut event = serde_json::to_value(note).unwrap_or_default();
    if let Some(map) = event.as_object_mut() {
        map.insert("type".to_owned(), "damaged".into());
    }
    let record = super::LogRecord {
        v: FORMAT_VERSION,
        seq,
        at,
        event,
    };
    if serde_json::to_writer(&mut *out, &record).is_ok() {
        out.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::read_log;

    fn record(seq: u64) -> Vec<u8> {
        format!("{{\"v\":1,\"seq\":{seq},\"at\":0,\"event\":{{\"type\":\"interrupted\"}}}}\n")
            .into_bytes()
    }

    /// A state directory with the logs of tasks `t` and `u` as given.
    fn state_with(t: &[u8], u: &[u8]) -> tempfile::TempDir {
        let state = tempfile::tempdir().unwrap();
        for (id, text) in [("t", t), ("u", u)] {
            let log = log_of(state.path(), id);
            fs::create_dir_all(log.parent().unwrap()).unwrap();
            fs::write(log, text).unwrap();
        }
        fs::create_dir_all(dir_of(state.path())).unwrap();
        state
    }

    fn log_of(state: &Path, id: &str) -> PathBuf {
        state.join("tasks").join(id).join("events.jsonl")
    }

    /// The log's records: each one's seq, and the `damaged` notes' events.
    fn read(state: &Path, id: &str) -> (Vec<u64>, Vec<DamageNote>) {
        let records = read_log(&log_of(state, id)).unwrap().records;
        let notes = records
            .iter()
            .filter(|r| r.event["type"] == "damaged")
            .map(|r| serde_json::from_value(r.event.clone()).unwrap())
            .collect();
        (records.iter().map(|r| r.seq).collect(), notes)
    }

    fn journal(state: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir_of(state))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_zero_inside_a_record_loses_that_record_alone_and_the_wal_is_kept_aside() {
        // The machine stopped with t's log at record 1 and u's empty; the WAL has the rest, and
        // a zero byte inside t's record 3 (the disk damaged it), then the zeros written ahead.
        let state = state_with(&record(1), b"");
        let mut wal = Vec::new();
        line(&mut wal, "t", &record(2));
        let damaged_at = wal.len();
        line(&mut wal, "t", &record(3));
        wal[damaged_at + 20] = 0;
        for (id, seq) in [("t", 4), ("u", 1), ("u", 2)] {
            line(&mut wal, id, &record(seq));
        }
        let lines = wal.len();
        wal.extend_from_slice(&[0; 4096]);
        let path = dir_of(state.path()).join("999999-1.wal");
        fs::write(&path, &wal).unwrap();

        assert_eq!(recover(state.path()).unwrap(), 4);
        // Every good record is back; record 3 is lost, and a note stands in its place.
        let aside = dir_of(state.path()).join("999999-1.wal.damaged");
        let (seqs, notes) = read(state.path(), "t");
        assert_eq!(seqs, [1, 2, 3, 4]);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].lost);
        assert_eq!(notes[0].file.as_deref(), Some(aside.as_path()));
        assert_eq!(notes[0].offset, Some(damaged_at as u64));
        assert!(
            notes[0].note.contains("record 3 was lost")
                && notes[0]
                    .note
                    .contains(&format!("byte {damaged_at} of {}", aside.display())),
            "{}",
            notes[0].note
        );
        assert_eq!(read(state.path(), "u"), (vec![1, 2], vec![]));
        // The WAL is kept aside, without the zeros ahead, and not read again.
        assert_eq!(journal(state.path()), ["999999-1.wal.damaged"]);
        assert_eq!(fs::read(&aside).unwrap(), &wal[..lines]);
        assert_eq!(recover(state.path()).unwrap(), 0);
        assert_eq!(read(state.path(), "t").0, [1, 2, 3, 4]);
    }

    #[test]
    fn a_damaged_last_record_is_lost_not_dropped() {
        // The WAL's copy of t's last record is damaged (u's record follows it, so it is no torn
        // end) and the log lacks it: a note says it was lost.
        let state = state_with(&record(1), b"");
        let mut wal = Vec::new();
        line(&mut wal, "t", &record(2));
        let damaged_at = wal.len();
        line(&mut wal, "t", &record(3));
        wal[damaged_at + 30] = 0;
        line(&mut wal, "u", &record(1));
        fs::write(dir_of(state.path()).join("999999-1.wal"), &wal).unwrap();

        assert_eq!(recover(state.path()).unwrap(), 2);
        let (seqs, notes) = read(state.path(), "t");
        assert_eq!(seqs, [1, 2, 3]);
        assert!(notes.len() == 1 && notes[0].lost, "{notes:?}");
        assert_eq!(notes[0].offset, Some(damaged_at as u64));
    }

    #[test]
    fn a_damaged_line_in_a_task_log_is_mended_from_the_wal_and_its_old_copy_kept() {
        // The machine stopped while t's log was written: the page holding record 3 never made
        // it (zeros, then the end of the line on the next page), though record 4's did.
        let mut hole = vec![0u8; record(3).len() - 10];
        hole.extend_from_slice(&record(3)[record(3).len() - 10..]);
        let log = [record(1), record(2), hole, record(4)].concat();
        let state = state_with(&log, b"");
        let mut wal = Vec::new();
        for seq in [3, 4, 5] {
            line(&mut wal, "t", &record(seq));
        }
        fs::write(dir_of(state.path()).join("999999-1.wal"), &wal).unwrap();

        assert_eq!(recover(state.path()).unwrap(), 2);
        let (seqs, notes) = read(state.path(), "t");
        assert_eq!(seqs, [1, 2, 3, 4, 5, 6]);
        let old_copy = log_of(state.path(), "t").with_extension("jsonl.damaged");
        assert_eq!(fs::read(&old_copy).unwrap(), log);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(!notes[0].lost, "{notes:?}");
        assert_eq!(notes[0].file.as_deref(), Some(old_copy.as_path()));
        assert_eq!(notes[0].offset, Some(2 * record(1).len() as u64));
        // The WAL was whole: it goes.
        assert!(journal(state.path()).is_empty());
    }

    #[test]
    fn zeros_of_whole_sectors_inside_a_line_are_the_torn_end_and_nothing_after_them_is_read() {
        // The last batch's second sector was never written (zeros from one sector's start to
        // the next's), its third was: the lines there were never synced nor announced.
        let state = state_with(b"", b"");
        let mut wal = Vec::new();
        line(&mut wal, "t", &record(1));
        while wal.len() < 2 * SECTOR + 100 {
            let seq = wal.iter().filter(|b| **b == b'\n').count() as u64 + 1;
            line(&mut wal, "t", &record(seq));
        }
        let whole_lines_before = wal[..SECTOR].iter().filter(|b| **b == b'\n').count();
        wal[SECTOR..2 * SECTOR].fill(0);
        wal.extend_from_slice(&[0; 1024]);
        fs::write(dir_of(state.path()).join("999999-1.wal"), &wal).unwrap();

        assert_eq!(recover(state.path()).unwrap(), whole_lines_before);
        let (seqs, notes) = read(state.path(), "t");
        assert_eq!(seqs.len(), whole_lines_before);
        assert!(notes.is_empty(), "{notes:?}");
        assert!(journal(state.path()).is_empty(), "not damage: the WAL goes");
    }
}

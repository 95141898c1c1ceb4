//! Pinned definitions: the contents of the workflow and agent files tasks started with (and the
//! lists that name them), kept by their SHA-256 as `<state dir>/definitions/<digest>` and shared
//! by every task that pinned the same contents.
//!
//! A file is durable before any task's log names it (invariant 6): written under a temporary
//! name, synced, renamed, and the folder synced. A process remembers which digests it has made
//! durable, so the ten-thousandth task of one workflow writes (and syncs) nothing. A file read
//! back is checked against its name: a damaged or altered copy is refused, never used.

use std::collections::{HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use crate::workflow::source::digest;

/// The folder under the state directory.
const DIR: &str = "definitions";

/// The pinned definitions of one state directory.
#[derive(Debug)]
pub struct Definitions {
    dir: PathBuf,
    /// The digests this process has made (or found) durable.
    durable: Mutex<HashSet<String>>,
    /// Held while files are written, so tasks starting at once write each file once.
    writing: Mutex<()>,
}

/// The pinned definitions of `state_dir` (one value per state directory in the process).
pub fn definitions(state_dir: &Path) -> Arc<Definitions> {
    static ALL: LazyLock<Mutex<HashMap<PathBuf, Arc<Definitions>>>> =
        LazyLock::new(Default::default);
    let mut all = ALL.lock().unwrap_or_else(|p| p.into_inner());
    all.entry(state_dir.to_owned())
        .or_insert_with(|| {
            Arc::new(Definitions {
                dir: state_dir.join(DIR),
                durable: Mutex::new(HashSet::new()),
                writing: Mutex::new(()),
            })
        })
        .clone()
}

/// Whether `digest` is a SHA-256 in lower-case hex (and so a plain file name).
pub fn is_digest(digest: &str) -> bool {
    digest.len() == 64
        && digest
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl Definitions {
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of `digest`.
    pub fn path(&self, digest: &str) -> PathBuf {
        self.dir.join(digest)
    }

    /// Whether every one of `digests` is durable already, as far as this process knows (no I/O).
    pub fn all_durable<'a>(&self, mut digests: impl Iterator<Item = &'a str>) -> bool {
        let durable = self.durable.lock().unwrap_or_else(|p| p.into_inner());
        digests.all(|d| durable.contains(d))
    }

    /// Makes every file of `items` (contents by digest) durable. Blocks: call it off the
    /// runtime's threads.
    pub fn put(&self, items: &[(&str, &[u8])]) -> io::Result<()> {
        if self.all_durable(items.iter().map(|(d, _)| *d)) {
            return Ok(());
        }
        let _writing = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        let todo: Vec<&(&str, &[u8])> = {
            let durable = self.durable.lock().unwrap_or_else(|p| p.into_inner());
            items
                .iter()
                .filter(|(d, _)| !durable.contains(*d))
                .collect()
        };
        if todo.is_empty() {
            return Ok(());
        }
        self.make_dir()?;
        for (name, bytes) in &todo {
            if !is_digest(name) || digest(bytes) != *name {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{name} is not the SHA-256 of the contents to pin"),
                ));
            }
            self.write_one(name, bytes)?;
        }
        // The new names are durable with their folder.
        File::open(&self.dir)?.sync_all()?;
        let mut durable = self.durable.lock().unwrap_or_else(|p| p.into_inner());
        durable.extend(todo.iter().map(|(d, _)| (*d).to_owned()));
        Ok(())
    }

    /// The contents pinned as `digest`, checked against it. Blocks.
    pub fn get(&self, digest_hex: &str) -> io::Result<Vec<u8>> {
        if !is_digest(digest_hex) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "\"{}\" is not a pinned definition's digest",
                    clip(digest_hex)
                ),
            ));
        }
        let path = self.path(digest_hex);
        let bytes = fs::read(&path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot read the pinned copy {}: {e}", path.display()),
            )
        })?;
        if digest(&bytes) != digest_hex {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the pinned copy {} is damaged or was altered (its contents do not match its name)",
                    path.display()
                ),
            ));
        }
        Ok(bytes)
    }

    /// Creates the folder; a new one is made durable in its parent.
    fn make_dir(&self) -> io::Result<()> {
        if self.dir.is_dir() {
            return Ok(());
        }
        fs::create_dir_all(&self.dir)?;
        if let Some(parent) = self.dir.parent() {
            File::open(parent)?.sync_all()?;
        }
        Ok(())
    }

    /// Writes one file durably, unless a good copy is there already (another process, or this
    /// one before a restart, pinned it); a bad copy is replaced.
    fn write_one(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let path = self.path(name);
        if let Ok(existing) = fs::read(&path) {
            if existing == bytes {
                // Written by a process that may have died before syncing it.
                return File::open(&path)?.sync_all();
            }
        }
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let tmp = self.dir.join(format!(
            ".{name}.{}-{}.tmp",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let result = (|| {
            let mut file = OpenOptions::new().write(true).create_new(true).open(&tmp)?;
            file.write_all(bytes)?;
            file.sync_all()?;
            fs::rename(&tmp, &path)
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result
    }
}

fn clip(s: &str) -> String {
    crate::clip::clip(s).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_file_is_kept_by_digest_and_read_back_checked() {
        let state = tempfile::tempdir().unwrap();
        let defs = definitions(state.path());
        let a = b"phase A".as_slice();
        let d = digest(a);
        defs.put(&[(&d, a)]).unwrap();
        assert!(defs.all_durable([d.as_str()].into_iter()));
        assert_eq!(defs.get(&d).unwrap(), a);
        assert_eq!(
            fs::read(state.path().join("definitions").join(&d)).unwrap(),
            a
        );
        // Pinning the same contents again writes nothing new.
        defs.put(&[(&d, a)]).unwrap();
        assert_eq!(fs::read_dir(defs.dir()).unwrap().count(), 1);
    }

    #[test]
    fn an_altered_copy_is_refused_and_a_bad_name_never_reaches_the_file_system() {
        let state = tempfile::tempdir().unwrap();
        let defs = definitions(state.path());
        let a = b"tools: {whitelist: [Read]}".as_slice();
        let d = digest(a);
        defs.put(&[(&d, a)]).unwrap();
        fs::write(defs.path(&d), "no rules").unwrap();
        let err = defs.get(&d).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("altered"), "{err}");
        assert!(defs.get("../../etc/passwd").is_err());
        assert!(defs
            .put(&[(
                "0000000000000000000000000000000000000000000000000000000000000000",
                a
            )])
            .is_err());
    }

    #[test]
    fn a_copy_another_process_left_is_kept_when_good_and_replaced_when_not() {
        let state = tempfile::tempdir().unwrap();
        let a = b"agent".as_slice();
        let d = digest(a);
        fs::create_dir_all(state.path().join("definitions")).unwrap();
        fs::write(state.path().join("definitions").join(&d), "torn").unwrap();
        let defs = definitions(state.path());
        defs.put(&[(&d, a)]).unwrap();
        assert_eq!(defs.get(&d).unwrap(), a);
    }
}

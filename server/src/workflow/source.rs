//! The files a definition is read from, kept as they were read: each with its SHA-256, so a task
//! can pin exactly what it started with (the store keeps the contents by digest) and tell later
//! whether the file on disk still says the same.
//!
//! The workflow and agent loaders read through [`Files`]: the disk, or the copies a task pinned.
//! This is part of the loaders, and like them it only reads.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

/// One file a definition was read from, as it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceFile {
    pub path: PathBuf,
    /// The SHA-256 of `bytes`, in lower-case hex.
    pub digest: String,
    pub bytes: Arc<[u8]>,
}

impl SourceFile {
    pub fn new(path: PathBuf, bytes: Arc<[u8]>) -> Self {
        SourceFile {
            digest: digest(&bytes),
            path,
            bytes,
        }
    }
}

/// The SHA-256 of `bytes`, in lower-case hex.
pub fn digest(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for b in hash {
        hex.push(char::from(HEX[usize::from(b >> 4)]));
        hex.push(char::from(HEX[usize::from(b & 0xf)]));
    }
    hex
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Where a loader reads its files.
#[derive(Debug, Clone, Copy)]
pub enum Files<'a> {
    /// The file system.
    Disk,
    /// The copies a task pinned, by the path they were read from; no other file exists.
    Pinned(&'a HashMap<PathBuf, Arc<[u8]>>),
}

impl Files<'_> {
    pub fn read(&self, path: &Path) -> io::Result<Arc<[u8]>> {
        match self {
            Files::Disk => std::fs::read(path).map(Arc::from),
            Files::Pinned(files) => files
                .get(path)
                .cloned()
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound)),
        }
    }

    pub fn exists(&self, path: &Path) -> bool {
        match self {
            Files::Disk => path.exists(),
            Files::Pinned(files) => files.contains_key(path),
        }
    }

    pub fn is_pinned(&self) -> bool {
        matches!(self, Files::Pinned(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_sha256_in_hex() {
        assert_eq!(
            digest(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn pinned_files_are_the_only_ones_that_exist() {
        let mut map = HashMap::new();
        map.insert(PathBuf::from("/w/a.md"), Arc::from(&b"A"[..]));
        let files = Files::Pinned(&map);
        assert_eq!(&*files.read(Path::new("/w/a.md")).unwrap(), b"A");
        assert!(files.exists(Path::new("/w/a.md")));
        assert!(!files.exists(Path::new("/w/b.md")));
        assert_eq!(
            files.read(Path::new("/w/b.md")).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }
}

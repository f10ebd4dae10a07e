//! Reader-side cache of directory lookups `(parent, name) -> ino`, with
//! the owner, group and mode of the directory found (what the traversal
//! rule asks of every directory a path walks through, `perm.rs`).
//!
//! Only directories are cached, and only positive lookups; the root's
//! facts are kept under `(0, "")`. Any committed change that removes or
//! re-points a directory entry (rmdir, renaming a directory, replacing one)
//! or changes a directory's owner, group or mode bumps the generation
//! *after* the batch is written and before the writer returns, which
//! invalidates every entry at once. A reader reads the generation before it
//! reads RocksDB and stores the entry under that generation, so an entry
//! filled from a state older than the last directory change can never be
//! served.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

const MAX_ENTRIES: usize = 262_144;

/// The facts of a directory the traversal rule needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Perm {
    pub uid: u32,
    pub gid: u32,
    pub mode: u32,
}

impl Perm {
    pub fn of(i: &crate::Inode) -> Perm {
        Perm {
            uid: i.uid,
            gid: i.gid,
            mode: i.mode,
        }
    }
}

struct Entry {
    parent: u64,
    name: Box<[u8]>,
    ino: u64,
    perm: Perm,
    gen: u64,
}

pub(crate) struct DirCache {
    gen: AtomicU64,
    hasher: RandomState,
    map: RwLock<HashMap<u64, Entry>>,
}

impl DirCache {
    pub fn new() -> DirCache {
        DirCache {
            gen: AtomicU64::new(1),
            hasher: RandomState::new(),
            map: RwLock::new(HashMap::new()),
        }
    }

    fn key(&self, parent: u64, name: &[u8]) -> u64 {
        self.hasher.hash_one((parent, name))
    }

    /// The current generation; read it before the RocksDB lookup whose
    /// result is then stored with [`DirCache::put`].
    pub fn generation(&self) -> u64 {
        self.gen.load(Ordering::Acquire)
    }

    pub fn get(&self, parent: u64, name: &[u8]) -> Option<(u64, Perm)> {
        let g = self.generation();
        let map = self.map.read().unwrap_or_else(|p| p.into_inner());
        map.get(&self.key(parent, name))
            .filter(|e| e.gen == g && e.parent == parent && *e.name == *name)
            .map(|e| (e.ino, e.perm))
    }

    pub fn put(&self, gen: u64, parent: u64, name: &[u8], ino: u64, perm: Perm) {
        let mut map = self.map.write().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_ENTRIES {
            map.clear();
        }
        map.insert(
            self.key(parent, name),
            Entry {
                parent,
                name: name.into(),
                ino,
                perm,
                gen,
            },
        );
    }

    /// Bytes the cache holds, about (walks every entry: for the metrics
    /// scrape).
    pub fn bytes(&self) -> usize {
        let map = self.map.read().unwrap_or_else(|p| p.into_inner());
        map.capacity() * (std::mem::size_of::<(u64, Entry)>() + 1)
            + map.values().map(|e| e.name.len()).sum::<usize>()
    }

    /// A directory entry was removed or re-pointed, or a directory's
    /// owner, group or mode changed: forget everything.
    pub fn invalidate(&self) {
        self.gen.fetch_add(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generations_invalidate() {
        let c = DirCache::new();
        let g = c.generation();
        let p = Perm {
            uid: 1,
            gid: 2,
            mode: 0o755,
        };
        c.put(g, 1, b"a", 7, p);
        assert_eq!(c.get(1, b"a"), Some((7, p)));
        assert_eq!(c.get(1, b"b"), None);
        assert_eq!(c.get(2, b"a"), None);
        c.invalidate();
        assert_eq!(c.get(1, b"a"), None);
        // An entry filled under an old generation is never served.
        c.put(g, 1, b"a", 8, p);
        assert_eq!(c.get(1, b"a"), None);
    }
}

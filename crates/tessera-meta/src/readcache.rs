//! Reader-side cache of committed inode and directory-entry records (raw
//! values, as RocksDB holds them), so that a stat of a hot path costs no
//! RocksDB lookups.
//!
//! Every change to those two column families goes through a `Txn`, one at
//! a time (the writer lock). A commit brackets its batch write with
//! [`ReadCache::begin_write`] and [`ReadCache::end_write`]:
//!
//! - `begin_write` makes the sequence number odd and removes every key the
//!   batch touches; `end_write` removes them again and makes it even.
//! - A reader reads the sequence number before it reads RocksDB, and stores
//!   what it read only if the number is still the same even value when it
//!   holds the map's write lock.
//!
//! So an entry is only ever filled from a RocksDB read that no commit
//! overlapped, and a touched key has no entry from the moment its commit
//! begins: a hit is always the committed value (a reader may still see the
//! old value until the commit's batch is written, as without the cache).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockWriteGuard};

/// Entries kept before the cache starts over (each holds a key and a value
/// of some tens of bytes).
const MAX_ENTRIES: usize = 262_144;

/// Which records are cached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Inode,
    Dentry,
}

#[derive(Default)]
struct Maps {
    inodes: HashMap<Box<[u8]>, Box<[u8]>>,
    dentries: HashMap<Box<[u8]>, Box<[u8]>>,
}

impl Maps {
    fn get(&self, kind: Kind) -> &HashMap<Box<[u8]>, Box<[u8]>> {
        match kind {
            Kind::Inode => &self.inodes,
            Kind::Dentry => &self.dentries,
        }
    }

    fn of(&mut self, kind: Kind) -> &mut HashMap<Box<[u8]>, Box<[u8]>> {
        match kind {
            Kind::Inode => &mut self.inodes,
            Kind::Dentry => &mut self.dentries,
        }
    }
}

pub(crate) struct ReadCache {
    seq: AtomicU64,
    maps: RwLock<Maps>,
}

impl ReadCache {
    pub fn new() -> ReadCache {
        ReadCache {
            seq: AtomicU64::new(0),
            maps: RwLock::new(Maps::default()),
        }
    }

    /// The sequence number to pass to [`ReadCache::fill`]; read it before
    /// the RocksDB read.
    pub fn seq(&self) -> u64 {
        self.seq.load(Ordering::Acquire)
    }

    pub fn get(&self, kind: Kind, key: &[u8]) -> Option<Vec<u8>> {
        let m = self.maps.read().unwrap_or_else(|p| p.into_inner());
        m.get(kind).get(key).map(|v| v.to_vec())
    }

    /// Remember `value`, read from RocksDB after [`ReadCache::seq`] gave
    /// `seq`, unless a commit began since.
    pub fn fill(&self, seq: u64, kind: Kind, key: &[u8], value: &[u8]) {
        if seq % 2 == 1 {
            return;
        }
        let mut m = self.lock();
        if self.seq.load(Ordering::Acquire) != seq {
            return;
        }
        if m.inodes.len() + m.dentries.len() >= MAX_ENTRIES {
            *m = Maps::default();
        }
        m.of(kind).insert(key.into(), value.into());
    }

    /// A commit touching `keys` is about to write its batch.
    pub fn begin_write<'k>(&self, keys: impl Iterator<Item = (Kind, &'k [u8])>) {
        let mut m = self.lock();
        self.seq.fetch_add(1, Ordering::AcqRel);
        for (kind, k) in keys {
            m.of(kind).remove(k);
        }
    }

    /// The batch of the commit that began with the same keys is written
    /// (or failed: `ok` false forgets everything).
    pub fn end_write<'k>(&self, keys: impl Iterator<Item = (Kind, &'k [u8])>, ok: bool) {
        let mut m = self.lock();
        if ok {
            for (kind, k) in keys {
                m.of(kind).remove(k);
            }
        } else {
            *m = Maps::default();
        }
        self.seq.fetch_add(1, Ordering::AcqRel);
    }

    fn lock(&self) -> RwLockWriteGuard<'_, Maps> {
        self.maps.write().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_after_fill_and_misses_after_a_commit_touches_the_key() {
        let c = ReadCache::new();
        let s = c.seq();
        c.fill(s, Kind::Inode, b"k1", b"v1");
        c.fill(s, Kind::Dentry, b"k1", b"d1");
        assert_eq!(c.get(Kind::Inode, b"k1").as_deref(), Some(&b"v1"[..]));
        assert_eq!(c.get(Kind::Dentry, b"k1").as_deref(), Some(&b"d1"[..]));
        let touched = [(Kind::Inode, &b"k1"[..])];
        c.begin_write(touched.iter().copied());
        assert_eq!(c.get(Kind::Inode, b"k1"), None);
        // Another kind's entry under the same key bytes is untouched.
        assert_eq!(c.get(Kind::Dentry, b"k1").as_deref(), Some(&b"d1"[..]));
        c.end_write(touched.iter().copied(), true);
        assert_eq!(c.get(Kind::Inode, b"k1"), None);
    }

    #[test]
    fn a_read_overlapping_a_commit_is_not_kept() {
        let c = ReadCache::new();
        let touched = [(Kind::Inode, &b"k"[..])];
        // Read began before the commit, finished during it.
        let before = c.seq();
        c.begin_write(touched.iter().copied());
        c.fill(before, Kind::Inode, b"k", b"old");
        assert_eq!(c.get(Kind::Inode, b"k"), None);
        // Read began during the commit, finished after it.
        let during = c.seq();
        c.fill(during, Kind::Inode, b"k", b"old");
        c.end_write(touched.iter().copied(), true);
        c.fill(during, Kind::Inode, b"k", b"old");
        assert_eq!(c.get(Kind::Inode, b"k"), None);
        // A read that began after it is kept.
        let after = c.seq();
        c.fill(after, Kind::Inode, b"k", b"new");
        assert_eq!(c.get(Kind::Inode, b"k").as_deref(), Some(&b"new"[..]));
    }

    #[test]
    fn a_failed_commit_forgets_everything() {
        let c = ReadCache::new();
        let s = c.seq();
        c.fill(s, Kind::Inode, b"a", b"1");
        c.fill(s, Kind::Dentry, b"b", b"2");
        c.begin_write(std::iter::empty());
        c.end_write(std::iter::empty(), false);
        assert_eq!(c.get(Kind::Inode, b"a"), None);
        assert_eq!(c.get(Kind::Dentry, b"b"), None);
    }
}

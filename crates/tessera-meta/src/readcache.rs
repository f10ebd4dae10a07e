//! Reader-side cache of committed inode records (decoded: decoding one
//! cost more than the rest of a stat) and directory-entry records (raw
//! values, as RocksDB holds them), so that a stat of a hot path costs no
//! RocksDB lookups and no decoding.
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

use crate::records::Inode;
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
    inodes: HashMap<u64, Inode>,
    dentries: HashMap<Box<[u8]>, Box<[u8]>>,
}

impl Maps {
    fn len(&self) -> usize {
        self.inodes.len() + self.dentries.len()
    }

    /// Forget the record under RocksDB key `k` of `kind`.
    fn remove(&mut self, kind: Kind, k: &[u8]) {
        match kind {
            Kind::Inode => match <[u8; 8]>::try_from(k) {
                Ok(b) => {
                    self.inodes.remove(&u64::from_be_bytes(b));
                }
                // Not an inode key: forget every inode, to be safe.
                Err(_) => self.inodes.clear(),
            },
            Kind::Dentry => {
                self.dentries.remove(k);
            }
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

    pub fn dentry(&self, key: &[u8]) -> Option<Vec<u8>> {
        let m = self.maps.read().unwrap_or_else(|p| p.into_inner());
        m.dentries.get(key).map(|v| v.to_vec())
    }

    pub fn inode(&self, ino: u64) -> Option<Inode> {
        let m = self.maps.read().unwrap_or_else(|p| p.into_inner());
        m.inodes.get(&ino).cloned()
    }

    /// Remember a directory entry's `value`, read from RocksDB after
    /// [`ReadCache::seq`] gave `seq`, unless a commit began since.
    pub fn fill_dentry(&self, seq: u64, key: &[u8], value: &[u8]) {
        self.fill(seq, |m| {
            m.dentries.insert(key.into(), value.into());
        })
    }

    /// Remember inode `i`, read from RocksDB after [`ReadCache::seq`]
    /// gave `seq`, unless a commit began since.
    pub fn fill_inode(&self, seq: u64, i: &Inode) {
        self.fill(seq, |m| {
            m.inodes.insert(i.ino, i.clone());
        })
    }

    fn fill(&self, seq: u64, put: impl FnOnce(&mut Maps)) {
        if seq % 2 == 1 {
            return;
        }
        let mut m = self.lock();
        if self.seq.load(Ordering::Acquire) != seq {
            return;
        }
        if m.len() >= MAX_ENTRIES {
            *m = Maps::default();
        }
        put(&mut m);
    }

    /// A commit touching `keys` is about to write its batch.
    pub fn begin_write<'k>(&self, keys: impl Iterator<Item = (Kind, &'k [u8])>) {
        let mut m = self.lock();
        self.seq.fetch_add(1, Ordering::AcqRel);
        for (kind, k) in keys {
            m.remove(kind, k);
        }
    }

    /// The batch of the commit that began with the same keys is written
    /// (or failed: `ok` false forgets everything).
    pub fn end_write<'k>(&self, keys: impl Iterator<Item = (Kind, &'k [u8])>, ok: bool) {
        let mut m = self.lock();
        if ok {
            for (kind, k) in keys {
                m.remove(kind, k);
            }
        } else {
            *m = Maps::default();
        }
        self.seq.fetch_add(1, Ordering::AcqRel);
    }

    /// Bytes the cache holds, about: its tables and what their entries
    /// point to (walks every entry: for the metrics scrape).
    pub fn bytes(&self) -> usize {
        let m = self.maps.read().unwrap_or_else(|p| p.into_inner());
        let table = |cap: usize, elem: usize| cap * (elem + 1);
        table(m.inodes.capacity(), std::mem::size_of::<(u64, Inode)>())
            + m.inodes
                .values()
                .map(|i| i.name.capacity() + i.layout.capacity())
                .sum::<usize>()
            + table(
                m.dentries.capacity(),
                std::mem::size_of::<(Box<[u8]>, Box<[u8]>)>(),
            )
            + m.dentries
                .iter()
                .map(|(k, v)| k.len() + v.len())
                .sum::<usize>()
    }

    fn lock(&self) -> RwLockWriteGuard<'_, Maps> {
        self.maps.write().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ino(n: u64) -> Inode {
        Inode {
            ino: n,
            parent: 1,
            name: b"f".to_vec(),
            mode: 0o644,
            mtime_ns: n as i64,
            size: n,
            ..Default::default()
        }
    }

    #[test]
    fn hits_after_fill_and_misses_after_a_commit_touches_the_key() {
        let c = ReadCache::new();
        let s = c.seq();
        c.fill_inode(s, &ino(7));
        c.fill_dentry(s, b"k1", b"d1");
        assert_eq!(c.inode(7), Some(ino(7)));
        assert_eq!(c.dentry(b"k1").as_deref(), Some(&b"d1"[..]));
        let key = 7u64.to_be_bytes();
        let touched = [(Kind::Inode, &key[..])];
        c.begin_write(touched.iter().copied());
        assert_eq!(c.inode(7), None);
        assert_eq!(c.dentry(b"k1").as_deref(), Some(&b"d1"[..]));
        c.end_write(touched.iter().copied(), true);
        assert_eq!(c.inode(7), None);
        let touched = [(Kind::Dentry, &b"k1"[..])];
        c.begin_write(touched.iter().copied());
        assert_eq!(c.dentry(b"k1"), None);
        c.end_write(touched.iter().copied(), true);
    }

    #[test]
    fn a_read_overlapping_a_commit_is_not_kept() {
        let c = ReadCache::new();
        let key = 5u64.to_be_bytes();
        let touched = [(Kind::Inode, &key[..])];
        // Read began before the commit, finished during it.
        let before = c.seq();
        c.begin_write(touched.iter().copied());
        c.fill_inode(before, &ino(5));
        assert_eq!(c.inode(5), None);
        // Read began during the commit, finished after it.
        let during = c.seq();
        c.fill_inode(during, &ino(5));
        c.end_write(touched.iter().copied(), true);
        c.fill_inode(during, &ino(5));
        assert_eq!(c.inode(5), None);
        // A read that began after it is kept.
        let after = c.seq();
        let mut new = ino(5);
        new.size = 99;
        c.fill_inode(after, &new);
        assert_eq!(c.inode(5).map(|i| i.size), Some(99));
    }

    #[test]
    fn a_failed_commit_forgets_everything() {
        let c = ReadCache::new();
        let s = c.seq();
        c.fill_inode(s, &ino(1));
        c.fill_dentry(s, b"b", b"2");
        c.begin_write(std::iter::empty());
        c.end_write(std::iter::empty(), false);
        assert_eq!(c.inode(1), None);
        assert_eq!(c.dentry(b"b"), None);
    }
}

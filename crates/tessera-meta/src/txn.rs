//! A write transaction: a RocksDB `WriteBatch` plus an overlay so that reads
//! inside the transaction see its own uncommitted writes. Only used with
//! the writer lock held, so no other writer can interleave.

use crate::error::MetaError;
use crate::keys::*;
use crate::readcache::{Kind, ReadCache};
use crate::records::*;
use rocksdb::{WriteBatch, DB};
use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Cf {
    Inode,
    Dentry,
    Xattr,
    Quota,
    /// The default column family (settings, access rules, recycle bins).
    Meta,
}

impl Cf {
    pub fn name(self) -> &'static str {
        match self {
            Cf::Inode => CF_INODE,
            Cf::Dentry => CF_DENTRY,
            Cf::Xattr => CF_XATTR,
            Cf::Quota => CF_QUOTA,
            Cf::Meta => CF_META,
        }
    }
}

/// Committed inode and quota records, as writers last saw them. Only
/// writers (holding the writer lock) read or fill it, and it is updated only
/// after a batch is written, so it always equals committed state. Readers
/// never use it. Bounded: cleared when it grows past `WRITER_CACHE_MAX`.
#[derive(Default)]
pub(crate) struct WriterCache {
    inodes: HashMap<u64, Vec<u8>>,
    quota: HashMap<Vec<u8>, Vec<u8>>,
}

const WRITER_CACHE_MAX: usize = 200_000;

impl WriterCache {
    fn get(&self, cf: Cf, key: &[u8]) -> Option<&Vec<u8>> {
        match cf {
            Cf::Inode => self.inodes.get(&u64::from_be_bytes(key.try_into().ok()?)),
            Cf::Quota => self.quota.get(key),
            _ => None,
        }
    }

    fn set(&mut self, cf: Cf, key: &[u8], value: Option<&Vec<u8>>) {
        if self.inodes.len() + self.quota.len() > WRITER_CACHE_MAX {
            self.inodes.clear();
            self.quota.clear();
        }
        match (cf, value) {
            (Cf::Inode, v) => {
                let Ok(k) = <[u8; 8]>::try_from(key) else {
                    return;
                };
                let ino = u64::from_be_bytes(k);
                match v {
                    Some(v) => self.inodes.insert(ino, v.clone()),
                    None => self.inodes.remove(&ino),
                };
            }
            (Cf::Quota, Some(v)) => {
                self.quota.insert(key.to_vec(), v.clone());
            }
            (Cf::Quota, None) => {
                self.quota.remove(key);
            }
            _ => {}
        }
    }

    /// Forget everything (after a failed write, to be safe).
    pub fn clear(&mut self) {
        self.inodes.clear();
        self.quota.clear();
    }
}

pub(crate) struct Txn<'a> {
    db: &'a DB,
    cache: &'a Mutex<WriterCache>,
    reads: &'a ReadCache,
    batch: WriteBatch,
    /// Writes of this transaction, newest last. Transactions touch a few
    /// dozen keys at most, so a scan beats hashing (no key allocation).
    overlay: Vec<(Cf, Vec<u8>, Option<Vec<u8>>)>,
    /// A directory entry was removed or re-pointed (see `DirCache`).
    dirs_changed: bool,
}

impl<'a> Txn<'a> {
    pub fn new(db: &'a DB, cache: &'a Mutex<WriterCache>, reads: &'a ReadCache) -> Txn<'a> {
        Txn {
            db,
            cache,
            reads,
            batch: WriteBatch::default(),
            overlay: Vec::new(),
            dirs_changed: false,
        }
    }

    pub fn db_ref(&self) -> &'a DB {
        self.db
    }

    fn cache(&self) -> std::sync::MutexGuard<'a, WriterCache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Write the batch atomically; on success, teach the writer cache. The
    /// reader cache forgets every inode and directory entry the batch
    /// touches (see `ReadCache`); `extra` must not write those two column
    /// families.
    pub fn write(self, extra: impl FnOnce(&mut WriteBatch)) -> Result<(), MetaError> {
        let Txn {
            db,
            cache,
            reads,
            mut batch,
            overlay,
            ..
        } = self;
        extra(&mut batch);
        let touched = || {
            overlay.iter().filter_map(|(cf, k, _)| match cf {
                Cf::Inode => Some((Kind::Inode, k.as_slice())),
                Cf::Dentry => Some((Kind::Dentry, k.as_slice())),
                _ => None,
            })
        };
        let mut c = cache.lock().unwrap_or_else(|p| p.into_inner());
        reads.begin_write(touched());
        let res = db.write_opt(batch, &rocksdb::WriteOptions::default());
        reads.end_write(touched(), res.is_ok());
        match res {
            Ok(()) => {
                for (cf, k, v) in &overlay {
                    c.set(*cf, k, v.as_ref());
                }
                Ok(())
            }
            Err(e) => {
                c.clear();
                Err(e.into())
            }
        }
    }

    pub fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>, MetaError> {
        if let Some((_, _, v)) = self
            .overlay
            .iter()
            .rev()
            .find(|(c, k, _)| *c == cf && k.as_slice() == key)
        {
            return Ok(v.clone());
        }
        if matches!(cf, Cf::Inode | Cf::Quota) {
            let mut c = self.cache();
            if let Some(v) = c.get(cf, key) {
                return Ok(Some(v.clone()));
            }
            let h = self.db.cf_handle(cf.name()).expect("cf exists");
            let v = self.db.get_cf(h, key)?;
            if let Some(v) = &v {
                c.set(cf, key, Some(v));
            }
            return Ok(v);
        }
        let h = self.db.cf_handle(cf.name()).expect("cf exists");
        Ok(self.db.get_cf(h, key)?)
    }

    pub fn put(&mut self, cf: Cf, key: &[u8], value: Vec<u8>) {
        let h = self.db.cf_handle(cf.name()).expect("cf exists");
        self.batch.put_cf(h, key, &value);
        self.overlay.push((cf, key.to_vec(), Some(value)));
    }

    pub fn delete(&mut self, cf: Cf, key: &[u8]) {
        let h = self.db.cf_handle(cf.name()).expect("cf exists");
        self.batch.delete_cf(h, key);
        self.overlay.push((cf, key.to_vec(), None));
    }

    pub fn inode(&self, ino: u64) -> Result<Option<Inode>, MetaError> {
        match self.get(Cf::Inode, &ino_key(ino))? {
            Some(raw) => Ok(Some(decode_inode(ino, &raw)?)),
            None => Ok(None),
        }
    }

    pub fn must_inode(&self, ino: u64) -> Result<Inode, MetaError> {
        self.inode(ino)?
            .ok_or_else(|| crate::error::corrupt(format!("inode {ino}"), "missing"))
    }

    pub fn put_inode(&mut self, i: &Inode) {
        self.put(Cf::Inode, &ino_key(i.ino), encode_inode(i));
    }

    pub fn delete_inode(&mut self, ino: u64) {
        self.delete(Cf::Inode, &ino_key(ino));
    }

    pub fn put_dentry(&mut self, parent: u64, name: &[u8], kind: EntryKind, ino: u64) {
        self.put(
            Cf::Dentry,
            &dentry_key(parent, name),
            encode_dentry(kind, ino).to_vec(),
        );
    }

    /// Note that a directory entry is removed or re-pointed.
    pub fn note_dir_change(&mut self) {
        self.dirs_changed = true;
    }

    pub fn dirs_changed(&self) -> bool {
        self.dirs_changed
    }

    pub fn delete_dentry(&mut self, parent: u64, name: &[u8]) {
        self.delete(Cf::Dentry, &dentry_key(parent, name));
    }

    /// Names of all xattrs of `ino`, as committed (callers delete xattrs of
    /// inodes they remove; the overlay holds no xattr additions for them).
    /// What inode `ino`'s committed attributes take in the byte quota
    /// (`read::charged_xattr_bytes`).
    pub fn committed_xattr_bytes(&self, ino: u64) -> Result<u64, MetaError> {
        crate::read::charged_xattr_bytes(self.db, ino)
    }

    /// Remove inode `ino` and its attributes (not its directory entry):
    /// the bytes its attributes took in the byte quota.
    pub fn drop_inode(&mut self, ino: u64) -> Result<u64, MetaError> {
        let keys = self.committed_xattr_keys(ino)?;
        let attrs = if keys.is_empty() {
            0
        } else {
            self.committed_xattr_bytes(ino)?
        };
        for k in keys {
            self.delete(Cf::Xattr, &k);
        }
        self.delete_inode(ino);
        Ok(attrs)
    }

    pub fn committed_xattr_keys(&self, ino: u64) -> Result<Vec<Vec<u8>>, MetaError> {
        let mut out = Vec::new();
        for item in crate::read::prefix_iter(self.db, CF_XATTR, ino) {
            let (k, _) = item?;
            out.push(k.to_vec());
        }
        Ok(out)
    }
}

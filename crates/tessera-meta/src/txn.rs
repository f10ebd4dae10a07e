//! A write transaction: a RocksDB `WriteBatch` plus an overlay so that reads
//! inside the transaction see its own uncommitted writes. Only used with
//! the writer lock held, so no other writer can interleave.

use crate::error::MetaError;
use crate::keys::*;
use crate::records::*;
use rocksdb::{WriteBatch, DB};
use std::collections::HashMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Cf {
    Inode,
    Dentry,
    Xattr,
    Quota,
}

impl Cf {
    pub fn name(self) -> &'static str {
        match self {
            Cf::Inode => CF_INODE,
            Cf::Dentry => CF_DENTRY,
            Cf::Xattr => CF_XATTR,
            Cf::Quota => CF_QUOTA,
        }
    }
}

pub(crate) struct Txn<'a> {
    db: &'a DB,
    batch: WriteBatch,
    overlay: HashMap<(Cf, Vec<u8>), Option<Vec<u8>>>,
}

impl<'a> Txn<'a> {
    pub fn new(db: &'a DB) -> Txn<'a> {
        Txn {
            db,
            batch: WriteBatch::default(),
            overlay: HashMap::new(),
        }
    }

    pub fn db_ref(&self) -> &'a DB {
        self.db
    }

    pub fn into_batch(self) -> WriteBatch {
        self.batch
    }

    pub fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>, MetaError> {
        if let Some(v) = self.overlay.get(&(cf, key.to_vec())) {
            return Ok(v.clone());
        }
        let h = self.db.cf_handle(cf.name()).expect("cf exists");
        Ok(self.db.get_cf(h, key)?)
    }

    pub fn put(&mut self, cf: Cf, key: &[u8], value: Vec<u8>) {
        let h = self.db.cf_handle(cf.name()).expect("cf exists");
        self.batch.put_cf(h, key, &value);
        self.overlay.insert((cf, key.to_vec()), Some(value));
    }

    pub fn delete(&mut self, cf: Cf, key: &[u8]) {
        let h = self.db.cf_handle(cf.name()).expect("cf exists");
        self.batch.delete_cf(h, key);
        self.overlay.insert((cf, key.to_vec()), None);
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

    pub fn delete_dentry(&mut self, parent: u64, name: &[u8]) {
        self.delete(Cf::Dentry, &dentry_key(parent, name));
    }

    /// Names of all xattrs of `ino`, as committed (callers delete xattrs of
    /// inodes they remove; the overlay holds no xattr additions for them).
    pub fn committed_xattr_keys(&self, ino: u64) -> Result<Vec<Vec<u8>>, MetaError> {
        let h = self.db.cf_handle(CF_XATTR).expect("cf exists");
        let mut ro = rocksdb::ReadOptions::default();
        ro.set_iterate_upper_bound(prefix_end(ino));
        let it = self.db.iterator_cf_opt(
            h,
            ro,
            rocksdb::IteratorMode::From(&ino_key(ino), rocksdb::Direction::Forward),
        );
        let mut out = Vec::new();
        for item in it {
            let (k, _) = item?;
            out.push(k.to_vec());
        }
        Ok(out)
    }
}

//! Schema upgrades, run once when a store is opened.
//!
//! Version 2 charges `user.*` attributes (names and values) to their
//! owners' byte quotas (`xattr.rs`); a version-1 namespace holds attributes
//! no record counts. The upgrade charges every one of them and records
//! version 2 in the same atomic batch, so it happens exactly once.

use crate::error::MetaError;
use crate::keys::*;
use crate::quota::{node_of_dir, Deltas};
use crate::records::encode_u64;
use crate::store::{MetaStore, ROOT_INO};
use std::collections::BTreeMap;

impl MetaStore {
    /// Bring a store written with schema `from` to the current one.
    pub(crate) fn upgrade(&self, from: u64) -> Result<(), MetaError> {
        if from >= crate::SCHEMA_VERSION as u64 {
            return Ok(());
        }
        let st = self.lock();
        let mut txn = self.txn();
        let mut per_ino: BTreeMap<u64, u64> = BTreeMap::new();
        let h = self.db.cf_handle(CF_XATTR).expect("cf exists");
        for item in self.db.iterator_cf(h, rocksdb::IteratorMode::Start) {
            let (k, v) = item?;
            let (ino, name) =
                split_prefixed(&k).ok_or_else(|| crate::error::corrupt("xattr", "key"))?;
            if name.starts_with(b"user.") && ino != ROOT_INO {
                *per_ino.entry(ino).or_default() += (name.len() + v.len().saturating_sub(1)) as u64;
            }
        }
        let mut deltas = Deltas::default();
        for (ino, bytes) in &per_ino {
            // An attribute of a vanished inode is fsck's to report.
            if let Some(i) = txn.inode(*ino)? {
                let node = node_of_dir(&txn, i.parent)?;
                deltas.charge(node, i.uid, i.gid, *bytes as i128, 0);
            }
        }
        deltas.apply(&mut txn, &st, false)?;
        txn.write(|b| b.put(META_SCHEMA, encode_u64(crate::SCHEMA_VERSION as u64)))?;
        self.db.flush_wal(true)?;
        tracing::info!(
            from,
            to = crate::SCHEMA_VERSION,
            entries = per_ino.len(),
            "namespace schema upgraded: user attributes charged to byte quotas"
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::records::{encode_u64, encode_xattr};
    use crate::*;
    use tessera_types::{Identity, NsPath};

    fn open(dir: &std::path::Path) -> MetaStore {
        MetaStore::open(
            dir,
            MetaOptions {
                durability: Durability::Buffered,
                root_mode: 0o777,
                ..Default::default()
            },
        )
        .expect("open")
    }

    #[test]
    fn a_version_1_store_has_its_attributes_charged_once() {
        let d = tempfile::tempdir().expect("tmp");
        let alice = Identity::user(1000, 100, "alice", "test");
        let path = NsPath::parse("/f").expect("path");
        {
            let m = open(d.path());
            let r = m.begin_write(&path, &alice, 0o644, true, 10).expect("resv");
            let (f, _) = m
                .commit_write(
                    r.id,
                    CommitWrite {
                        size: 10,
                        ..Default::default()
                    },
                )
                .expect("commit");
            // What a version-1 server wrote: the attribute, no charge.
            let h = m.db.cf_handle(crate::keys::CF_XATTR).expect("cf");
            m.db.put_cf(
                h,
                crate::keys::xattr_key(f.ino, b"user.x"),
                encode_xattr(b"12345"),
            )
            .expect("put");
            m.db.put(crate::keys::META_SCHEMA, encode_u64(1))
                .expect("put");
            assert!(!m.check().expect("check").is_clean());
        }
        for _ in 0..2 {
            let m = open(d.path());
            assert!(m.check().expect("check").is_clean());
            let show = m
                .quota_show(&Identity::root("t"), &NsPath::root(), 1000, 100)
                .expect("show");
            let e = show
                .entries
                .iter()
                .find(|e| e.target == QuotaTarget::user(1000))
                .expect("alice");
            assert_eq!((e.used_bytes, e.used_inodes), (10 + 6 + 5, 1));
        }
    }
}

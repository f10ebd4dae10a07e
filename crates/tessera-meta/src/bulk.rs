//! Many empty files made in one directory, a batch per transaction: how
//! tests and benchmarks populate a large directory (a million entries in
//! seconds, where one create per transaction costs a commit and a sync
//! each). Root only; quota and the directory's entry count are kept as
//! by single creates.

use crate::error::MetaError;
use crate::quota::{self, Deltas};
use crate::read::{self, lookup};
use crate::records::{EntryKind, Inode};
use crate::store::{now_ns, MetaStore};
use crate::write::alloc_ino;
use tessera_types::{Identity, NsPath};

impl MetaStore {
    /// Create each of `names` as an empty file of mode `mode` owned by
    /// `uid:gid` in the directory `dir`, `batch` names per transaction
    /// (an existing name fails its batch; the batches before stay).
    /// Returns how many were made.
    pub fn create_many(
        &self,
        dir: &NsPath,
        (uid, gid, mode): (u32, u32, u32),
        names: impl IntoIterator<Item = Vec<u8>>,
        batch: usize,
    ) -> Result<u64, MetaError> {
        let mut names = names.into_iter().peekable();
        let mut made = 0u64;
        let root = Identity::root("bulk");
        while names.peek().is_some() {
            let seq = {
                let mut st = self.lock();
                let mut txn = self.txn();
                let mut d = read::resolve(&txn, dir, &root)?;
                if !d.is_dir() {
                    return Err(MetaError::NotADirectory(dir.display()));
                }
                let node = quota::node_of_dir(&txn, d.ino)?;
                let mut deltas = Deltas::default();
                let now = now_ns();
                // Names are looked for in the store (the transaction's own
                // writes are scanned one by one: quadratic in a batch) and
                // among the batch's.
                let stored = self.uncached();
                let mut seen = std::collections::HashSet::new();
                for name in names.by_ref().take(batch.max(1)) {
                    NsPath::validate_name(&name).map_err(|e| MetaError::Invalid(e.to_string()))?;
                    if lookup(&stored, d.ino, &name)?.is_some() || !seen.insert(name.clone()) {
                        return Err(MetaError::AlreadyExists(format!(
                            "{} in {}",
                            String::from_utf8_lossy(&name),
                            dir.display()
                        )));
                    }
                    let f = Inode {
                        ino: alloc_ino(&mut st),
                        kind: EntryKind::File,
                        parent: d.ino,
                        name,
                        uid,
                        gid,
                        mode,
                        ctime_ns: now,
                        mtime_ns: now,
                        ..Default::default()
                    };
                    txn.put_inode(&f);
                    txn.put_dentry(d.ino, &f.name, EntryKind::File, f.ino);
                    deltas.charge(node, uid, gid, 0, 1);
                    d.nchildren += 1;
                    made += 1;
                }
                d.mtime_ns = now;
                txn.put_inode(&d);
                deltas.apply(&mut txn, &st, true)?;
                self.commit(txn, &st)?
            };
            self.finish(seq)?;
        }
        Ok(made)
    }
}

//! Setting and removing quota nodes and their limits (`tessera quota
//! set|rm|rmnode`): a directory that becomes (or stops being) a node takes
//! its subtree's usage from (or gives it back to) the node above, counted
//! by `subtree_usage` (versions included).

use crate::error::MetaError;
use crate::keys::*;
use crate::quota::{describe, node_of_dir, Deltas, OwnerUsage, QuotaTarget};
use crate::read;
use crate::records::*;
use crate::store::{MetaStore, WriterState, ROOT_INO};
use crate::txn::{Cf, Txn};
use tessera_types::{Identity, NsPath};

/// Usage of everything below `dir` that is accounted to `dir`'s node (the
/// walk stops at nested quota nodes, counting the nested node's directory
/// itself), per (uid, gid): (bytes, inodes).
pub(crate) fn subtree_usage(
    store: &MetaStore,
    dir: u64,
    cap: u64,
) -> Result<OwnerUsage, MetaError> {
    let g = store.uncached();
    let mut out = OwnerUsage::new();
    let mut stack = vec![dir];
    let mut seen = 0u64;
    while let Some(d) = stack.pop() {
        let mut after: Option<Vec<u8>> = None;
        loop {
            let page = read::list_children(&g, d, after.as_deref(), 1024)?;
            let Some(last) = page.last() else { break };
            after = Some(last.name.clone());
            for child in page {
                seen += 1;
                if seen > cap {
                    return Err(MetaError::CrossDevice(format!(
                        "more than {cap} entries would have to be re-accounted"
                    )));
                }
                let e = out.entry((child.uid, child.gid)).or_default();
                e.0 += child.size + read::charged_xattr_bytes(&store.db, child.ino)?;
                e.1 += 1;
                if child.is_dir() && !child.quota_node {
                    stack.push(child.ino);
                } else if !child.is_dir() {
                    crate::versions::add_usage(&g, child.ino, &mut out)?;
                }
            }
        }
    }
    Ok(out)
}

impl MetaStore {
    /// Set limits for `target` at the directory `path`, making it a quota
    /// node if it is not one yet (its subtree's usage then moves from the
    /// enclosing node to it). `None` leaves a limit as it is.
    pub fn quota_set(
        &self,
        path: &NsPath,
        target: QuotaTarget,
        max_bytes: Option<u64>,
        max_inodes: Option<u64>,
    ) -> Result<(), MetaError> {
        let seq = {
            let st = self.lock();
            let mut txn = self.txn();
            let mut dir = read::resolve(&txn, path, &Identity::root("admin"))?;
            if !dir.is_dir() {
                return Err(MetaError::NotADirectory(path.display()));
            }
            if !dir.quota_node {
                self.make_node(&mut txn, &st, &mut dir)?;
            }
            let key = quota_key(dir.ino, target.code(), target.id);
            let mut rec = match txn.get(Cf::Quota, &key)? {
                Some(raw) => decode_quota(&raw)?,
                None => QuotaRec::default(),
            };
            if max_bytes.is_some() {
                rec.max_bytes = max_bytes;
            }
            if max_inodes.is_some() {
                rec.max_inodes = max_inodes;
            }
            txn.put(Cf::Quota, &key, encode_quota(&rec));
            self.commit(txn, &st)?
        };
        self.make_durable(seq)
    }

    fn make_node(
        &self,
        txn: &mut Txn<'_>,
        st: &WriterState,
        dir: &mut Inode,
    ) -> Result<(), MetaError> {
        let old = node_of_dir(txn, dir.parent)?;
        // Reservations are charged to `old`; moving usage under them would
        // make their settlement charge the wrong node.
        for r in st.reservations.values() {
            if r.node == old && read::is_ancestor(txn, dir.ino, r.parent)? {
                return Err(MetaError::Busy(
                    "writes in progress below this directory".into(),
                ));
            }
        }
        let usage = subtree_usage(self, dir.ino, self.opts.max_reaccount_entries)?;
        let mut d = Deltas::default();
        for ((uid, gid), (b, i)) in usage {
            d.charge(old, uid, gid, -(b as i128), -(i as i128));
            d.charge(dir.ino, uid, gid, b as i128, i as i128);
        }
        d.apply(txn, st, false)?;
        dir.quota_node = true;
        txn.put_inode(dir);
        Ok(())
    }

    /// Clear limits of `target` at a quota node.
    pub fn quota_rm(
        &self,
        path: &NsPath,
        target: QuotaTarget,
        bytes: bool,
        inodes: bool,
    ) -> Result<(), MetaError> {
        let seq = {
            let st = self.lock();
            let mut txn = self.txn();
            let dir = read::resolve(&txn, path, &Identity::root("admin"))?;
            if !dir.quota_node {
                return Err(MetaError::NotFound(format!(
                    "{} is not a quota node",
                    path.display()
                )));
            }
            let key = quota_key(dir.ino, target.code(), target.id);
            let Some(raw) = txn.get(Cf::Quota, &key)? else {
                return Err(MetaError::NotFound(format!(
                    "no quota for {} at {}",
                    describe(target),
                    path.display()
                )));
            };
            let mut rec = decode_quota(&raw)?;
            if bytes {
                rec.max_bytes = None;
            }
            if inodes {
                rec.max_inodes = None;
            }
            if rec == QuotaRec::default() {
                txn.delete(Cf::Quota, &key);
            } else {
                txn.put(Cf::Quota, &key, encode_quota(&rec));
            }
            self.commit(txn, &st)?
        };
        self.make_durable(seq)
    }

    /// Stop `path` being a quota node: its usage returns to the enclosing
    /// node and its limits are dropped.
    pub fn quota_rmnode(&self, path: &NsPath) -> Result<(), MetaError> {
        let seq = {
            let st = self.lock();
            let mut txn = self.txn();
            let mut dir = read::resolve(&txn, path, &Identity::root("admin"))?;
            if dir.ino == ROOT_INO {
                return Err(MetaError::Invalid("/ is always a quota node".into()));
            }
            if !dir.quota_node {
                return Err(MetaError::NotFound(format!(
                    "{} is not a quota node",
                    path.display()
                )));
            }
            if st.reservations.values().any(|r| r.node == dir.ino) {
                return Err(MetaError::Busy(
                    "writes in progress in this quota node".into(),
                ));
            }
            let parent_node = node_of_dir(&txn, dir.parent)?;
            for (target, _) in self.node_records(dir.ino)? {
                txn.delete(Cf::Quota, &quota_key(dir.ino, target.code(), target.id));
            }
            let mut d = Deltas::default();
            let usage = subtree_usage(self, dir.ino, self.opts.max_reaccount_entries)?;
            for ((uid, gid), (b, i)) in usage {
                d.charge(parent_node, uid, gid, b as i128, i as i128);
            }
            d.apply(&mut txn, &st, false)?;
            dir.quota_node = false;
            txn.put_inode(&dir);
            self.commit(txn, &st)?
        };
        self.make_durable(seq)
    }
}

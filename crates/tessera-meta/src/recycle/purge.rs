//! Purge: an entry leaves its bin for good, a bounded number of inodes per
//! transaction (a tree's deepest entries first), so that a crash at any
//! point leaves a consistent namespace and the next round goes on. The
//! entry is marked `purging` by its first piece and removed with its top.

use super::{account, drop_entry, load_entry, owner_or_root, put_entry, TIME_PREFIX};
use crate::error::MetaError;
use crate::read;
use crate::records::Inode;
use crate::store::MetaStore;
use crate::txn::Txn;
use tessera_types::Identity;

/// What one purge step removed.
#[derive(Debug, Clone, Default)]
pub struct PurgeStep {
    /// Files whose inodes are gone: the data layer removes their stripes.
    pub files: Vec<Inode>,
    pub bytes: u64,
    pub inodes: u64,
    /// The whole entry is gone.
    pub done: bool,
}

/// Append to `out` the entries under `d` deepest first, `d` last, up to
/// `budget` of them; whether `d` itself made it.
fn collect(
    txn: &Txn<'_>,
    d: &Inode,
    out: &mut Vec<Inode>,
    cost: &mut usize,
    budget: usize,
) -> Result<bool, MetaError> {
    if d.is_dir() {
        let mut after: Option<Vec<u8>> = None;
        loop {
            let page = read::list_children(txn, d.ino, after.as_deref(), 1024)?;
            let Some(last) = page.last() else { break };
            after = Some(last.name.clone());
            for c in page {
                if *cost >= budget || !collect(txn, &c, out, cost, budget)? {
                    return Ok(false);
                }
            }
        }
    }
    // A file costs its versions too (they go with it); the first entry of
    // a step always goes, so every step makes progress.
    let mine = if d.is_dir() {
        1
    } else {
        1 + crate::versions::version_list(txn.db_ref(), d.ino)?.len()
    };
    if !out.is_empty() && *cost + mine > budget {
        return Ok(false);
    }
    *cost += mine;
    out.push(d.clone());
    Ok(true)
}

/// Remove inode `victim` and its attributes (and its entry in its parent,
/// unless it is the bin entry's top, whose name may be reused by now);
/// the bytes it was charged.
fn forget(txn: &mut Txn<'_>, victim: &Inode, top: bool) -> Result<u64, MetaError> {
    if victim.is_dir() {
        txn.note_dir_change();
    }
    if !top {
        txn.delete_dentry(victim.parent, &victim.name);
        let mut p = txn.must_inode(victim.parent)?;
        p.nchildren = p.nchildren.saturating_sub(1);
        txn.put_inode(&p);
    }
    Ok(victim.size + txn.drop_inode(victim.ino)?)
}

impl MetaStore {
    /// Remove up to `budget` inodes of entry `id` (its owner or root).
    pub fn recycle_purge_step(
        &self,
        who: &Identity,
        id: u64,
        budget: usize,
    ) -> Result<PurgeStep, MetaError> {
        let (seq, out) = {
            let st = self.lock();
            let mut txn = self.txn();
            let mut entry = load_entry(&txn, id)?;
            owner_or_root(who, &entry)?;
            let top = read::must_inode(&txn, id)?;
            let mut victims = Vec::new();
            let done = collect(&txn, &top, &mut victims, &mut 0, budget.max(1))?;
            let mut step = PurgeStep {
                done,
                ..PurgeStep::default()
            };
            for v in &victims {
                step.bytes += forget(&mut txn, v, v.ino == id)?;
                step.inodes += 1;
                if v.is_dir() {
                    continue;
                }
                // A file's versions go with it (its record counted them).
                let mut none = crate::quota::Deltas::default();
                for old in crate::versions::drop_all(&mut txn, &mut none, 0, v.ino)? {
                    step.bytes += old.size + txn.committed_xattr_bytes(old.ino)?;
                    step.inodes += 1;
                    step.files.push(old);
                }
                step.files.push(v.clone());
            }
            let (b, i) = (step.bytes as i128, step.inodes as i128);
            if done {
                drop_entry(&mut txn, &entry);
                account(&mut txn, &entry.bin, -b, -i, -1)?;
            } else {
                entry.purging = true;
                entry.bytes = entry.bytes.saturating_sub(step.bytes);
                entry.inodes = entry.inodes.saturating_sub(step.inodes);
                put_entry(&mut txn, &entry);
                account(&mut txn, &entry.bin, -b, -i, 0)?;
            }
            (self.commit(txn, &st)?, step)
        };
        self.finish(seq)?;
        Ok(out)
    }

    /// Entries due for purge at `now_ns`, oldest first, up to `limit` of
    /// each bin: those past their bin's lifetime, then, in a bin past a
    /// cap (bytes or inodes), the oldest others until what stays fits.
    pub fn recycle_due(&self, now_ns: i64, limit: usize) -> Result<Vec<u64>, MetaError> {
        let mut due = Vec::new();
        for bin in self.recycle_bins()? {
            let start = [TIME_PREFIX, bin.name.as_bytes(), &[0]].concat();
            let (mut left, mut left_inodes) = (bin.used_bytes, bin.used_inodes);
            let mut taken = 0;
            let h = self.db.cf_handle(crate::keys::CF_META).expect("cf exists");
            let it = self.db.iterator_cf(
                h,
                rocksdb::IteratorMode::From(&start, rocksdb::Direction::Forward),
            );
            for item in it {
                let (k, _) = item?;
                let Some(rest) = k.strip_prefix(&start[..]) else {
                    break;
                };
                let (Ok(ns), Ok(id)) = (
                    <[u8; 8]>::try_from(&rest[..8.min(rest.len())]),
                    <[u8; 8]>::try_from(&rest[8.min(rest.len())..]),
                ) else {
                    return Err(crate::error::corrupt("recycle time key", "length"));
                };
                let (ns, id) = (u64::from_be_bytes(ns) as i64, u64::from_be_bytes(id));
                let expired = bin.lifetime_secs > 0
                    && ns.saturating_add(
                        i64::try_from(bin.lifetime_secs)
                            .unwrap_or(i64::MAX)
                            .saturating_mul(1_000_000_000),
                    ) <= now_ns;
                if !expired && !bin.over_cap(left, left_inodes) {
                    break;
                }
                let e = self.recycle_entry(&Identity::root("purge"), id)?;
                left = left.saturating_sub(e.bytes);
                left_inodes = left_inodes.saturating_sub(e.inodes);
                due.push(id);
                taken += 1;
                // Every bin gets its turn: one bin's backlog does not
                // starve another past its cap.
                if taken >= limit {
                    break;
                }
            }
        }
        Ok(due)
    }
}

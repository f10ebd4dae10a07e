//! The consistency check's part for recycle bins: every entry's tree is
//! walked (its inodes are reachable through the bin, not orphans), its
//! recount equals what the entry says, and each bin's account equals the
//! sum of its entries.

use super::{decode_entry, owner_key, time_key, ENTRY_PREFIX};
use crate::error::{corrupt, MetaError};
use crate::keys::CF_META;
use crate::read::{self, Get};
use crate::recount::CheckReport;
use crate::store::MetaStore;
use std::collections::{BTreeMap, HashSet};

impl MetaStore {
    /// Walk every bin entry; inodes found go into `seen`, problems into
    /// `rep`. Called by `check` under the writer lock.
    pub(crate) fn check_bins<G: Get>(
        &self,
        g: &G,
        seen: &mut HashSet<u64>,
        rep: &mut CheckReport,
    ) -> Result<(), MetaError> {
        let mut sums: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
        for (k, v) in self.meta_prefix(ENTRY_PREFIX, ENTRY_PREFIX)? {
            let id = u64::from_be_bytes(
                k[ENTRY_PREFIX.len()..]
                    .try_into()
                    .map_err(|_| corrupt("recycle entry key", "length"))?,
            );
            let e = decode_entry(id, &v)?;
            let h = self.db.cf_handle(CF_META).expect("cf exists");
            let by_time = self.db.get_cf(h, time_key(&e.bin, e.deleted_ns, id))?;
            let by_owner = self.db.get_cf(h, owner_key(e.uid, id))?;
            if by_time.is_none() || by_owner.is_none() {
                rep.problems
                    .push(format!("recycle entry {id} missing from an index"));
            }
            let (bytes, inodes) = self.walk_binned(g, id, seen, rep)?;
            if (bytes, inodes) != (e.bytes, e.inodes) {
                rep.problems.push(format!(
                    "recycle entry {id} says {} bytes/{} inodes, holds {bytes}/{inodes}",
                    e.bytes, e.inodes
                ));
            }
            let s = sums.entry(e.bin).or_default();
            s.0 += bytes;
            s.1 += inodes;
            s.2 += 1;
        }
        for b in self.recycle_bins()? {
            let s = sums.remove(&b.name).unwrap_or_default();
            if (b.used_bytes, b.used_inodes, b.entries) != s {
                rep.problems.push(format!(
                    "recycle bin {} says {} bytes/{} inodes/{} entries, holds {}/{}/{}",
                    b.name, b.used_bytes, b.used_inodes, b.entries, s.0, s.1, s.2
                ));
            }
        }
        for (name, _) in sums {
            rep.problems.push(format!(
                "recycle entries in bin {name}, which has no record"
            ));
        }
        Ok(())
    }

    /// (bytes, inodes) of the binned tree at `top`, checking its links.
    fn walk_binned<G: Get>(
        &self,
        g: &G,
        top: u64,
        seen: &mut HashSet<u64>,
        rep: &mut CheckReport,
    ) -> Result<(u64, u64), MetaError> {
        let Some(t) = read::inode(g, top)? else {
            rep.problems
                .push(format!("recycle entry {top}: its inode is missing"));
            return Ok((0, 0));
        };
        seen.insert(top);
        let mut bytes = t.size + read::charged_xattr_bytes(&self.db, top)?;
        let mut inodes = 1;
        if !t.is_dir() {
            let (b, i) = self.versions_seen(g, top, seen, &mut rep.problems)?;
            bytes += b;
            inodes += i;
        }
        let mut stack = if t.is_dir() { vec![t] } else { vec![] };
        while let Some(d) = stack.pop() {
            let mut count = 0;
            let mut after: Option<Vec<u8>> = None;
            loop {
                let page = read::list_children(g, d.ino, after.as_deref(), 1024)?;
                let Some(last) = page.last() else { break };
                after = Some(last.name.clone());
                for c in page {
                    count += 1;
                    if !seen.insert(c.ino) || c.parent != d.ino {
                        rep.problems.push(format!(
                            "inode {} in recycle entry {top} is linked twice or has parent {}",
                            c.ino, c.parent
                        ));
                        continue;
                    }
                    bytes += c.size + read::charged_xattr_bytes(&self.db, c.ino)?;
                    inodes += 1;
                    if c.is_dir() {
                        stack.push(c);
                    } else {
                        let (b, i) = self.versions_seen(g, c.ino, seen, &mut rep.problems)?;
                        bytes += b;
                        inodes += i;
                    }
                }
            }
            if d.nchildren != count {
                rep.problems.push(format!(
                    "directory {} in recycle entry {top} says {} entries, has {count}",
                    d.ino, d.nchildren
                ));
            }
        }
        Ok((bytes, inodes))
    }
}

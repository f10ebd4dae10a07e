//! Full consistency check: walk the whole tree from the root, verify every
//! link, and recount quota usage. Used by tests (after every random
//! operation sequence) and by `tessera ns check`.

use crate::error::MetaError;
use crate::keys::*;
use crate::quota::{describe, QuotaTarget};
use crate::read;
use crate::records::*;
use crate::store::{MetaStore, ROOT_INO};
use std::collections::{BTreeMap, HashSet};

/// Recounted usage of one quota record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QuotaUsage {
    pub bytes: u64,
    pub inodes: u64,
}

#[derive(Debug, Clone, Default)]
pub struct CheckReport {
    pub dirs: u64,
    pub files: u64,
    pub bytes: u64,
    /// Everything that is wrong, one line each; empty when consistent.
    pub problems: Vec<String>,
}

impl CheckReport {
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

impl MetaStore {
    /// Walk the tree and compare it with the stored counters. Holds the
    /// writer lock for the duration so the picture is consistent.
    // long-fn: one consistent pass under the writer lock; every part adds to the same counters.
    pub fn check(&self) -> Result<CheckReport, MetaError> {
        let _st = self.lock();
        let g = self.uncached();
        let mut rep = CheckReport::default();
        let mut expected: BTreeMap<(u64, QuotaTarget), QuotaUsage> = BTreeMap::new();
        let mut seen: HashSet<u64> = HashSet::new();
        seen.insert(ROOT_INO);
        let root = read::must_inode(&g, ROOT_INO)?;
        if !root.quota_node || root.parent != ROOT_INO {
            rep.problems
                .push("root is not its own parent quota node".into());
        }
        let mut stack = vec![(ROOT_INO, ROOT_INO)];
        while let Some((dir, node)) = stack.pop() {
            let dinode = read::must_inode(&g, dir)?;
            let mut count = 0u64;
            let mut after: Option<Vec<u8>> = None;
            loop {
                let page = match read::list_children(&g, dir, after.as_deref(), 1024) {
                    Ok(p) => p,
                    Err(e) => {
                        rep.problems.push(format!("listing {dir}: {e}"));
                        break;
                    }
                };
                let Some(last) = page.last() else { break };
                after = Some(last.name.clone());
                for child in page {
                    count += 1;
                    if !seen.insert(child.ino) {
                        rep.problems.push(format!(
                            "inode {} reachable twice (cycle or link)",
                            child.ino
                        ));
                        continue;
                    }
                    if child.parent != dir {
                        rep.problems.push(format!(
                            "inode {} listed in {dir} but its parent is {}",
                            child.ino, child.parent
                        ));
                    }
                    match read::lookup(&g, dir, &child.name)? {
                        Some((k, i)) if i == child.ino && k == child.kind => {}
                        other => rep.problems.push(format!(
                            "inode {} name {:?} does not match its entry ({other:?})",
                            child.ino,
                            String::from_utf8_lossy(&child.name)
                        )),
                    }
                    let charged = child.size + read::charged_xattr_bytes(&self.db, child.ino)?;
                    for t in QuotaTarget::for_owner(child.uid, child.gid) {
                        let e = expected.entry((node, t)).or_default();
                        e.bytes += charged;
                        e.inodes += 1;
                    }
                    if child.is_dir() {
                        rep.dirs += 1;
                        let n = if child.quota_node { child.ino } else { node };
                        stack.push((child.ino, n));
                    } else {
                        rep.files += 1;
                        rep.bytes += child.size;
                        // Versions count in the node of their file.
                        self.versions_walk(
                            &g,
                            child.ino,
                            &mut seen,
                            &mut rep.problems,
                            |v, charged| {
                                for t in QuotaTarget::for_owner(v.uid, v.gid) {
                                    let e = expected.entry((node, t)).or_default();
                                    e.bytes += charged;
                                    e.inodes += 1;
                                }
                            },
                        )?;
                    }
                }
            }
            if dinode.nchildren != count {
                rep.problems.push(format!(
                    "directory {dir} says {} entries, has {count}",
                    dinode.nchildren
                ));
            }
        }
        // Recycle bins hold trees that are reachable through them.
        self.check_bins(&g, &mut seen, &mut rep)?;
        self.check_version_owners(&seen, &mut rep.problems)?;
        // Orphans: inodes not reachable from the root or a bin.
        let hi = self.db.cf_handle(CF_INODE).expect("cf exists");
        let mut total = 0u64;
        for item in self.db.iterator_cf(hi, rocksdb::IteratorMode::Start) {
            let (k, _) = item?;
            total += 1;
            let ino = u64::from_be_bytes(
                k[..8]
                    .try_into()
                    .map_err(|_| crate::error::corrupt("inode key", "length"))?,
            );
            if !seen.contains(&ino) {
                rep.problems.push(format!("orphan inode {ino}"));
            }
        }
        if total != seen.len() as u64 {
            rep.problems
                .push(format!("{total} inodes stored, {} reachable", seen.len()));
        }
        // Stored usage must equal the recount, record by record.
        let hq = self.db.cf_handle(CF_QUOTA).expect("cf exists");
        let mut stored: BTreeMap<(u64, QuotaTarget), QuotaUsage> = BTreeMap::new();
        for item in self.db.iterator_cf(hq, rocksdb::IteratorMode::Start) {
            let (k, v) = item?;
            let (node, t) = crate::quota::parse_quota_key(&k)?;
            match read::inode(&g, node)? {
                Some(i) if i.quota_node => {}
                _ => rep
                    .problems
                    .push(format!("quota record at {node}, which is not a quota node")),
            }
            let r = decode_quota(&v)?;
            stored.insert(
                (node, t),
                QuotaUsage {
                    bytes: r.used_bytes,
                    inodes: r.used_inodes,
                },
            );
        }
        let keys: HashSet<_> = stored.keys().chain(expected.keys()).copied().collect();
        let mut keys: Vec<_> = keys.into_iter().collect();
        keys.sort();
        for k in keys {
            let s = stored.get(&k).copied().unwrap_or_default();
            let e = expected.get(&k).copied().unwrap_or_default();
            if s != e {
                rep.problems.push(format!(
                    "quota node {} {}: stored {} bytes/{} inodes, recount {} bytes/{} inodes",
                    k.0,
                    describe(k.1),
                    s.bytes,
                    s.inodes,
                    e.bytes,
                    e.inodes
                ));
            }
        }
        Ok(rep)
    }
}

//! Quotas, EOS style.
//!
//! A directory can be a *quota node*; `/` always is. Every file and
//! directory is accounted to the nearest quota node above it (an entry
//! inside node `/a` counts at `/a`; the directory `/a` itself counts at the
//! node above `/a`). A node keeps one record per user, per group and one for
//! the node's project (everything below it, whoever owns it), each with
//! usage (bytes, inodes) and optional limits. Usage changes in the same
//! `WriteBatch` as the namespace change; a change that would take a record
//! above a limit (counting open reservations) is refused and changes
//! nothing. All limits that are set must hold; an unset limit is unlimited.

use crate::error::MetaError;
use crate::keys::*;
use crate::read;
use crate::records::*;
use crate::store::{MetaStore, WriterState, ROOT_INO};
use crate::txn::{Cf, Txn};
use std::collections::{BTreeMap, HashMap};
use tessera_types::{Identity, NsPath};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuotaKind {
    User,
    Group,
    Project,
}

/// Whose record: a user, a group, or the node's project (id 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QuotaTarget {
    pub kind: QuotaKind,
    pub id: u32,
}

impl QuotaTarget {
    pub fn user(uid: u32) -> Self {
        QuotaTarget {
            kind: QuotaKind::User,
            id: uid,
        }
    }
    pub fn group(gid: u32) -> Self {
        QuotaTarget {
            kind: QuotaKind::Group,
            id: gid,
        }
    }
    pub fn project() -> Self {
        QuotaTarget {
            kind: QuotaKind::Project,
            id: 0,
        }
    }
    pub(crate) fn code(self) -> u8 {
        match self.kind {
            QuotaKind::User => b'u',
            QuotaKind::Group => b'g',
            QuotaKind::Project => b'p',
        }
    }
    pub(crate) fn from_code(code: u8, id: u32) -> Option<Self> {
        match code {
            b'u' => Some(Self::user(id)),
            b'g' => Some(Self::group(id)),
            b'p' => Some(Self::project()),
            _ => None,
        }
    }
    pub(crate) fn for_owner(uid: u32, gid: u32) -> [QuotaTarget; 3] {
        [Self::user(uid), Self::group(gid), Self::project()]
    }
}

/// One record of a quota node, with the open reservations added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaEntry {
    pub target: QuotaTarget,
    pub max_bytes: Option<u64>,
    pub max_inodes: Option<u64>,
    pub used_bytes: u64,
    pub used_inodes: u64,
    pub reserved_bytes: u64,
    pub reserved_inodes: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaNodeReport {
    pub node: u64,
    pub path: NsPath,
    pub entries: Vec<QuotaEntry>,
}

/// Space held for a write in progress: made at open for write, settled by
/// `commit_write` or released by `abort_write`. Reservations live in memory
/// only: a crash ends the writes that held them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reservation {
    pub id: u64,
    /// The inode number the file will get.
    pub ino: u64,
    pub parent: u64,
    pub name: Vec<u8>,
    pub node: u64,
    pub uid: u32,
    pub gid: u32,
    pub mode: u32,
    pub bytes: u64,
    pub inodes: u64,
    /// What the write may do with a file that exists at its commit.
    pub overwrite: crate::Overwrite,
    /// Who writes: the commit decides again, as them.
    pub who: std::sync::Arc<tessera_types::Identity>,
}

/// Usage changes collected by one transaction.
#[derive(Default)]
pub(crate) struct Deltas(HashMap<(u64, QuotaTarget), (i128, i128)>);

impl Deltas {
    pub fn charge(&mut self, node: u64, uid: u32, gid: u32, bytes: i128, inodes: i128) {
        for t in QuotaTarget::for_owner(uid, gid) {
            let e = self.0.entry((node, t)).or_default();
            e.0 += bytes;
            e.1 += inodes;
        }
    }

    /// Write the new usage into the transaction. With `check`, any record
    /// that grows past a limit (counting reservations) fails the whole
    /// transaction.
    pub fn apply(self, txn: &mut Txn<'_>, st: &WriterState, check: bool) -> Result<(), MetaError> {
        let mut items: Vec<_> = self.0.into_iter().collect();
        items.sort_by_key(|(k, _)| *k);
        for ((node, target), (db, di)) in items {
            if db == 0 && di == 0 {
                continue;
            }
            let key = quota_key(node, target.code(), target.id);
            let mut rec = match txn.get(Cf::Quota, &key)? {
                Some(raw) => decode_quota(&raw)?,
                None => QuotaRec::default(),
            };
            let (rb, ri) = st.reserved.get(&(node, target)).copied().unwrap_or((0, 0));
            let new_b = rec.used_bytes as i128 + db;
            let new_i = rec.used_inodes as i128 + di;
            if check {
                check_limit(
                    txn,
                    rec.max_bytes,
                    new_b + rb as i128,
                    db,
                    "bytes",
                    node,
                    target,
                )?;
                check_limit(
                    txn,
                    rec.max_inodes,
                    new_i + ri as i128,
                    di,
                    "inodes",
                    node,
                    target,
                )?;
            }
            if new_b < 0 || new_i < 0 {
                tracing::error!(node, ?target, new_b, new_i, "quota usage would go negative");
            }
            rec.used_bytes = new_b.max(0) as u64;
            rec.used_inodes = new_i.max(0) as u64;
            txn.put(Cf::Quota, &key, encode_quota(&rec));
        }
        Ok(())
    }
}

/// A limit about to be passed, named by the quota node's path.
fn check_limit(
    txn: &Txn<'_>,
    max: Option<u64>,
    total: i128,
    delta: i128,
    what: &str,
    node: u64,
    target: QuotaTarget,
) -> Result<(), MetaError> {
    if let Some(max) = max {
        if delta > 0 && total > max as i128 {
            let at =
                read::path_of(txn, node).map_or_else(|_| format!("node {node}"), |p| p.display());
            return Err(MetaError::QuotaExceeded(format!(
                "the {what} limit {max} of {} on the quota node {at} would be exceeded",
                describe(target)
            )));
        }
    }
    Ok(())
}

/// Node and target of a quota record key.
pub(crate) fn parse_quota_key(k: &[u8]) -> Result<(u64, QuotaTarget), MetaError> {
    let (node, code, id) =
        split_quota_key(k).ok_or_else(|| crate::error::corrupt("quota key", "length"))?;
    let t = QuotaTarget::from_code(code, id)
        .ok_or_else(|| crate::error::corrupt("quota key", "kind"))?;
    Ok((node, t))
}

pub(crate) fn describe(t: QuotaTarget) -> String {
    match t.kind {
        QuotaKind::User => format!("uid {}", t.id),
        QuotaKind::Group => format!("gid {}", t.id),
        QuotaKind::Project => "project".to_string(),
    }
}

/// The quota node governing entries of directory `dir`.
pub(crate) fn node_of_dir<G: read::Get>(g: &G, mut dir: u64) -> Result<u64, MetaError> {
    loop {
        let i = read::must_inode(g, dir)?;
        if i.quota_node || dir == ROOT_INO {
            return Ok(dir);
        }
        dir = i.parent;
    }
}

fn check_room(
    txn: &Txn<'_>,
    st: &WriterState,
    node: u64,
    uid: u32,
    gid: u32,
    bytes: u64,
    inodes: u64,
) -> Result<(), MetaError> {
    for t in QuotaTarget::for_owner(uid, gid) {
        let rec = match txn.get(Cf::Quota, &quota_key(node, t.code(), t.id))? {
            Some(raw) => decode_quota(&raw)?,
            None => QuotaRec::default(),
        };
        let (rb, ri) = st.reserved.get(&(node, t)).copied().unwrap_or((0, 0));
        let tb = rec.used_bytes as i128 + rb as i128 + bytes as i128;
        let ti = rec.used_inodes as i128 + ri as i128 + inodes as i128;
        check_limit(txn, rec.max_bytes, tb, bytes as i128, "bytes", node, t)?;
        check_limit(txn, rec.max_inodes, ti, inodes as i128, "inodes", node, t)?;
    }
    Ok(())
}

fn add_reserved(st: &mut WriterState, r: &Reservation, bytes: u64, inodes: u64) {
    for t in QuotaTarget::for_owner(r.uid, r.gid) {
        let e = st.reserved.entry((r.node, t)).or_default();
        e.0 += bytes;
        e.1 += inodes;
    }
}

/// Check that a reservation fits at its node and record it.
pub(crate) fn reserve(
    txn: &Txn<'_>,
    st: &mut WriterState,
    mut r: Reservation,
) -> Result<Reservation, MetaError> {
    check_room(txn, st, r.node, r.uid, r.gid, r.bytes, r.inodes)?;
    r.id = st.next_resv;
    st.next_resv += 1;
    add_reserved(st, &r, r.bytes, r.inodes);
    st.reservations.insert(r.id, r.clone());
    Ok(r)
}

/// Grow reservation `id` by `bytes` if it still fits.
pub(crate) fn grow(
    txn: &Txn<'_>,
    st: &mut WriterState,
    id: u64,
    bytes: u64,
) -> Result<(), MetaError> {
    let r = st
        .reservations
        .get(&id)
        .cloned()
        .ok_or_else(|| MetaError::NotFound(format!("no write in progress with id {id}")))?;
    check_room(txn, st, r.node, r.uid, r.gid, bytes, 0)?;
    add_reserved(st, &r, bytes, 0);
    if let Some(r) = st.reservations.get_mut(&id) {
        r.bytes += bytes;
    }
    Ok(())
}

pub(crate) fn release(st: &mut WriterState, id: u64) -> Option<Reservation> {
    let r = st.reservations.remove(&id)?;
    for t in QuotaTarget::for_owner(r.uid, r.gid) {
        if let Some(e) = st.reserved.get_mut(&(r.node, t)) {
            e.0 = e.0.saturating_sub(r.bytes);
            e.1 = e.1.saturating_sub(r.inodes);
            if *e == (0, 0) {
                st.reserved.remove(&(r.node, t));
            }
        }
    }
    Some(r)
}

/// (bytes, inodes) per (uid, gid).
pub(crate) type OwnerUsage = HashMap<(u32, u32), (u64, u64)>;

impl MetaStore {
    pub(crate) fn node_record_keys(
        &self,
        node: u64,
    ) -> Result<Vec<(Vec<u8>, QuotaRec)>, MetaError> {
        Ok(self
            .node_records(node)?
            .into_iter()
            .map(|(t, r)| (quota_key(node, t.code(), t.id).to_vec(), r))
            .collect())
    }

    pub(crate) fn node_records(
        &self,
        node: u64,
    ) -> Result<Vec<(QuotaTarget, QuotaRec)>, MetaError> {
        let mut out = Vec::new();
        for item in read::prefix_iter(&self.db, CF_QUOTA, node) {
            let (k, v) = item?;
            let (_, t) = parse_quota_key(&k)?;
            out.push((t, decode_quota(&v)?));
        }
        Ok(out)
    }

    /// Every quota node at or below `under` (all of them for `/`), with its
    /// records and the open reservations.
    pub fn quota_ls(&self, under: &NsPath) -> Result<Vec<QuotaNodeReport>, MetaError> {
        let h = self.db.cf_handle(CF_QUOTA).expect("cf exists");
        let mut by_node: BTreeMap<u64, Vec<(QuotaTarget, QuotaRec)>> = BTreeMap::new();
        for item in self.db.iterator_cf(h, rocksdb::IteratorMode::Start) {
            let (k, v) = item?;
            let (node, t) = parse_quota_key(&k)?;
            by_node
                .entry(node)
                .or_default()
                .push((t, decode_quota(&v)?));
        }
        let reserved = self.lock().reserved.clone();
        let g = self.reader();
        let mut out = Vec::new();
        for (node, recs) in by_node {
            let path = read::path_of(&g, node)?;
            if !path.starts_with(under) {
                continue;
            }
            out.push(report(node, path, recs, &reserved));
        }
        // A quota node with no records yet (e.g. `/` on a new namespace).
        if out.is_empty() {
            let dir = read::resolve(&g, under, &Identity::root("admin"))?;
            if dir.quota_node {
                out.push(report(dir.ino, under.clone(), Vec::new(), &reserved));
            }
        }
        Ok(out)
    }

    /// The quota node that governs new entries at `path` (a directory: the
    /// node for its entries; a file: the node of its directory), with the
    /// records that apply to `uid`/`gid` and the project.
    pub fn quota_show(
        &self,
        who: &Identity,
        path: &NsPath,
        uid: u32,
        gid: u32,
    ) -> Result<QuotaNodeReport, MetaError> {
        let g = self.reader();
        let i = read::resolve(&g, path, who)?;
        let dir = if i.is_dir() { i.ino } else { i.parent };
        let node = node_of_dir(&g, dir)?;
        let recs = self
            .node_records(node)?
            .into_iter()
            .filter(|(t, _)| QuotaTarget::for_owner(uid, gid).contains(t))
            .collect();
        let reserved = self.lock().reserved.clone();
        Ok(report(node, read::path_of(&g, node)?, recs, &reserved))
    }
}

fn report(
    node: u64,
    path: NsPath,
    recs: Vec<(QuotaTarget, QuotaRec)>,
    reserved: &HashMap<(u64, QuotaTarget), (u64, u64)>,
) -> QuotaNodeReport {
    let entries = recs
        .into_iter()
        .map(|(target, r)| {
            let (rb, ri) = reserved.get(&(node, target)).copied().unwrap_or((0, 0));
            QuotaEntry {
                target,
                max_bytes: r.max_bytes,
                max_inodes: r.max_inodes,
                used_bytes: r.used_bytes,
                used_inodes: r.used_inodes,
                reserved_bytes: rb,
                reserved_inodes: ri,
            }
        })
        .collect();
    QuotaNodeReport {
        node,
        path,
        entries,
    }
}

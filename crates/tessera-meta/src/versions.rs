//! File versions (EOS `sys.versioning`): in a directory whose
//! `sys.versioning` is N > 0, a file replaced by an overwrite (a write
//! committed over it, a copy-on-write update, a rename over it) is kept as
//! a version of the file that replaced it: its inode, attributes and
//! stripes stay, its quota stays charged, and only the newest N are kept
//! (the oldest go, their stripes with them). Versions are not in any
//! listing; they belong to the current file's inode (a rename takes them
//! along, a delete into a recycle bin too) and go when it is deleted for
//! good.
//!
//! Records (default column family): `version/<file ino u64 BE><version
//! ino u64 BE>` → v1 + the ns (i64 BE) the version stopped being current
//! (what orders them).

use crate::error::{corrupt, MetaError};
use crate::keys::{xattr_key, CF_META};
use crate::quota::{self, Deltas, OwnerUsage};
use crate::read::{self, lookup, must_inode, resolve_parent, Get};
use crate::records::{decode_xattr, EntryKind, Inode};
use crate::store::{now_ns, MetaStore, WriterState};
use crate::txn::{Cf, Txn};
use rocksdb::DB;
use tessera_types::{Identity, NsPath};

/// The attribute that keeps versions in a directory.
pub const VERSIONING_ATTR: &[u8] = b"sys.versioning";
const PREFIX: &[u8] = b"version/";
const VERSION_V1: u8 = 1;
/// More than this many versions of one file are never kept.
pub const MAX_VERSIONS: u32 = 1000;

fn key(cur: u64, v: u64) -> Vec<u8> {
    [PREFIX, &cur.to_be_bytes()[..], &v.to_be_bytes()[..]].concat()
}

fn value(replaced_ns: i64) -> Vec<u8> {
    let mut out = vec![VERSION_V1];
    out.extend_from_slice(&replaced_ns.to_be_bytes());
    out
}

fn replaced_ns(v: u64, raw: &[u8]) -> Result<i64, MetaError> {
    match raw {
        [VERSION_V1, rest @ ..] if rest.len() == 8 => {
            Ok(i64::from_be_bytes(rest.try_into().expect("8 bytes")))
        }
        [VERSION_V1, ..] | [] => Err(corrupt(format!("version {v}"), "length")),
        [n, ..] => Err(MetaError::Version {
            what: format!("version {v}"),
            version: *n,
            max: VERSION_V1,
        }),
    }
}

/// File `cur`'s versions, oldest first (by the time each was
/// replaced): (version inode, replaced ns).
pub(crate) fn version_list(db: &DB, cur: u64) -> Result<Vec<(u64, i64)>, MetaError> {
    let h = db.cf_handle(CF_META).expect("cf exists");
    let start = [PREFIX, &cur.to_be_bytes()[..]].concat();
    let it = db.iterator_cf(
        h,
        rocksdb::IteratorMode::From(&start, rocksdb::Direction::Forward),
    );
    let mut out = Vec::new();
    for item in it {
        let (k, v) = item?;
        let Some(rest) = k.strip_prefix(&start[..]) else {
            break;
        };
        let vino = u64::from_be_bytes(
            rest.try_into()
                .map_err(|_| corrupt("version key", "length"))?,
        );
        out.push((vino, replaced_ns(vino, &v)?));
    }
    // Oldest first: by when each stopped being current (a restored
    // version can be older by number than the ones it replaced).
    out.sort_by_key(|&(v, t)| (t, v));
    Ok(out)
}

/// How many versions directory `dir` keeps (`sys.versioning`; 0: none).
pub(crate) fn keep_of<G: Get>(g: &G, dir: u64) -> Result<u32, MetaError> {
    let Some(raw) = g.get_raw(Cf::Xattr, &xattr_key(dir, VERSIONING_ATTR))? else {
        return Ok(0);
    };
    let v = decode_xattr(&raw)?;
    Ok(std::str::from_utf8(&v)
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .unwrap_or(0)
        .min(MAX_VERSIONS))
}

/// Usage of file `cur`'s versions per owner, added to `usage`.
pub(crate) fn add_usage<G: Get>(g: &G, cur: u64, usage: &mut OwnerUsage) -> Result<(), MetaError> {
    for (v, _) in version_list(g.db(), cur)? {
        let i = must_inode(g, v)?;
        let e = usage.entry((i.uid, i.gid)).or_default();
        e.0 += i.size + read::charged_xattr_bytes(g.db(), v)?;
        e.1 += 1;
    }
    Ok(())
}

/// Remove version `v` (its inode and attributes), uncharged from `node`.
fn forget(txn: &mut Txn<'_>, deltas: &mut Deltas, node: u64, v: &Inode) -> Result<(), MetaError> {
    let charged = txn.drop_inode(v.ino)?;
    deltas.charge(node, v.uid, v.gid, -((v.size + charged) as i128), -1);
    Ok(())
}

/// Every version of file `cur` goes (it is deleted for good): their
/// inodes, for their stripes.
pub(crate) fn drop_all(
    txn: &mut Txn<'_>,
    deltas: &mut Deltas,
    node: u64,
    cur: u64,
) -> Result<Vec<Inode>, MetaError> {
    let mut out = Vec::new();
    for (v, _) in version_list(txn.db_ref(), cur)? {
        let i = must_inode(&*txn, v)?;
        forget(txn, deltas, node, &i)?;
        txn.delete(Cf::Meta, &key(cur, v));
        out.push(i);
    }
    Ok(out)
}

/// A file deleted for good from `dir` (quota node `node`) with its
/// versions: what went, for their stripes (`victim` last).
pub(crate) fn delete_file_charged(
    txn: &mut Txn<'_>,
    deltas: &mut Deltas,
    node: u64,
    dir: u64,
    victim: &Inode,
) -> Result<Vec<Inode>, MetaError> {
    crate::write::delete_charged(txn, deltas, node, dir, victim)?;
    if victim.is_dir() {
        return Ok(Vec::new());
    }
    let mut out = drop_all(txn, deltas, node, victim.ino)?;
    out.push(victim.clone());
    Ok(out)
}

/// File `victim`'s versions go for good (before it is unlinked from
/// `dir`), uncharged: what went, for their stripes.
pub(crate) fn drop_charged(
    txn: &mut Txn<'_>,
    st: &WriterState,
    dir: u64,
    victim: &Inode,
) -> Result<Vec<Inode>, MetaError> {
    if victim.is_dir() {
        return Ok(Vec::new());
    }
    let node = quota::node_of_dir(&*txn, dir)?;
    let mut deltas = Deltas::default();
    let out = drop_all(txn, &mut deltas, node, victim.ino)?;
    deltas.apply(txn, st, false)?;
    Ok(out)
}

/// `old`, replaced by file `new` in a directory that keeps `keep`
/// versions, becomes `new`'s newest version (with `old`'s own versions;
/// `new`'s stay); the oldest beyond `keep` go, uncharged from `node`:
/// returned for their stripes. `old` stays charged.
pub(crate) fn keep_replaced(
    txn: &mut Txn<'_>,
    deltas: &mut Deltas,
    node: u64,
    old: &Inode,
    new: u64,
    keep: u32,
) -> Result<Vec<Inode>, MetaError> {
    let now = now_ns();
    let mut all: Vec<(u64, i64)> = Vec::new();
    for (v, t) in version_list(txn.db_ref(), old.ino)? {
        txn.delete(Cf::Meta, &key(old.ino, v));
        all.push((v, t));
    }
    all.extend(version_list(txn.db_ref(), new)?);
    all.push((old.ino, now));
    all.sort_by_key(|&(v, t)| (t, v));
    let extra = all.len().saturating_sub(keep as usize);
    let mut dropped = Vec::new();
    for (v, _) in all.drain(..extra) {
        let i = must_inode(&*txn, v)?;
        forget(txn, deltas, node, &i)?;
        txn.delete(Cf::Meta, &key(new, v));
        dropped.push(i);
    }
    for (v, t) in all {
        txn.put(Cf::Meta, &key(new, v), value(t));
    }
    Ok(dropped)
}

/// Whether `who` may change file `cur`'s versions: root, or write
/// permission on the file.
fn may_change(who: &Identity, cur: &Inode, path: &NsPath) -> Result<(), MetaError> {
    if crate::may(who, cur, crate::write::W) {
        return Ok(());
    }
    Err(MetaError::PermissionDenied(format!(
        "{} may not change the versions of {} (it needs write permission on the file)",
        who.name,
        path.display()
    )))
}

/// The file at `path` whose versions `who` would change: its directory,
/// name and inode (write permission on it needed).
fn changeable<'p>(
    txn: &Txn<'_>,
    who: &Identity,
    path: &'p NsPath,
) -> Result<(Inode, &'p [u8], Inode), MetaError> {
    let (dir, name) = resolve_parent(txn, path, who)?;
    let Some((EntryKind::File, cino)) = lookup(txn, dir.ino, name)? else {
        return Err(MetaError::NotFound(path.display()));
    };
    let cur = must_inode(txn, cino)?;
    may_change(who, &cur, path)?;
    Ok((dir, name, cur))
}

impl MetaStore {
    /// Remove a file for good (no recycle bin), its versions with it;
    /// returns its inode (the data layer removes its stripes; its
    /// versions' are `remove_entry`'s to give).
    pub fn unlink(&self, path: &NsPath, who: &Identity) -> Result<Inode, MetaError> {
        let (seq, out) = {
            let st = self.lock();
            let mut txn = self.txn();
            let (dir, victim) = crate::write::removable(&txn, who, path, EntryKind::File)?;
            drop_charged(&mut txn, &st, dir.ino, &victim)?;
            crate::write::unlink_entry(&mut txn, &st, dir, &victim)?;
            (self.commit(txn, &st)?, victim)
        };
        self.finish(seq)?;
        Ok(out)
    }

    /// File `path`'s versions, oldest first (who may read the file).
    pub fn versions(&self, who: &Identity, path: &NsPath) -> Result<Vec<Inode>, MetaError> {
        let cur = self.resolve_read(who, path)?;
        if cur.is_dir() {
            return Err(MetaError::IsADirectory(path.display()));
        }
        if !crate::may(who, &cur, 4) {
            return Err(MetaError::PermissionDenied(format!(
                "{} may not read {} (nor its versions)",
                who.name,
                path.display()
            )));
        }
        let g = self.reader();
        version_list(&self.db, cur.ino)?
            .into_iter()
            .map(|(v, t)| {
                let mut i = must_inode(&g, v)?;
                // What a listing shows of a version: when it was replaced.
                i.ctime_ns = t;
                Ok(i)
            })
            .collect()
    }

    /// Make version `v` of `path` the current file; the current one
    /// becomes its newest version. Quota does not change.
    pub fn restore_version(
        &self,
        who: &Identity,
        path: &NsPath,
        v: u64,
    ) -> Result<Inode, MetaError> {
        let (seq, out) = {
            let st = self.lock();
            let mut txn = self.txn();
            let (dir, name, cur) = changeable(&txn, who, path)?;
            let cino = cur.ino;
            let list = version_list(&self.db, cino)?;
            if !list.iter().any(|(x, _)| *x == v) {
                return Err(MetaError::NotFound(format!(
                    "{} has no version {v}",
                    path.display()
                )));
            }
            let now = now_ns();
            for (x, t) in list {
                txn.delete(Cf::Meta, &key(cino, x));
                if x != v {
                    txn.put(Cf::Meta, &key(v, x), value(t));
                }
            }
            txn.put(Cf::Meta, &key(v, cino), value(now));
            let mut back = must_inode(&txn, v)?;
            back.parent = dir.ino;
            back.name = name.to_vec();
            back.ctime_ns = now;
            txn.put_inode(&back);
            txn.put_dentry(dir.ino, name, EntryKind::File, v);
            (self.commit(txn, &st)?, back)
        };
        self.finish(seq)?;
        Ok(out)
    }

    /// Keep only the newest `keep` versions of `path`: the others, for
    /// their stripes.
    pub fn purge_versions(
        &self,
        who: &Identity,
        path: &NsPath,
        keep: u32,
    ) -> Result<Vec<Inode>, MetaError> {
        let (seq, out) = {
            let st = self.lock();
            let mut txn = self.txn();
            let (dir, _, cur) = changeable(&txn, who, path)?;
            let cino = cur.ino;
            let list = version_list(&self.db, cino)?;
            let extra = list.len().saturating_sub(keep as usize);
            let node = quota::node_of_dir(&txn, dir.ino)?;
            let mut deltas = Deltas::default();
            let mut out = Vec::new();
            for (v, _) in &list[..extra] {
                let i = must_inode(&txn, *v)?;
                forget(&mut txn, &mut deltas, node, &i)?;
                txn.delete(Cf::Meta, &key(cino, *v));
                out.push(i);
            }
            deltas.apply(&mut txn, &st, false)?;
            (self.commit(txn, &st)?, out)
        };
        self.finish(seq)?;
        Ok(out)
    }
}

impl MetaStore {
    /// For the consistency check: file `cur`'s versions, each marked in
    /// `seen` (one reachable twice, or missing, is a problem), and `f`
    /// called with each and the bytes it is charged.
    pub(crate) fn versions_walk<G: Get>(
        &self,
        g: &G,
        cur: u64,
        seen: &mut std::collections::HashSet<u64>,
        problems: &mut Vec<String>,
        mut f: impl FnMut(&Inode, u64),
    ) -> Result<(), MetaError> {
        for (v, _) in version_list(&self.db, cur)? {
            let Some(i) = read::inode(g, v)? else {
                problems.push(format!("version {v} of file {cur}: its inode is missing"));
                continue;
            };
            if !seen.insert(v) || i.is_dir() {
                problems.push(format!(
                    "version {v} of file {cur} is reachable twice or a directory"
                ));
                continue;
            }
            f(&i, i.size + read::charged_xattr_bytes(&self.db, v)?);
        }
        Ok(())
    }

    /// (bytes, inodes) of file `cur`'s versions, for the check.
    pub(crate) fn versions_seen<G: Get>(
        &self,
        g: &G,
        cur: u64,
        seen: &mut std::collections::HashSet<u64>,
        problems: &mut Vec<String>,
    ) -> Result<(u64, u64), MetaError> {
        let (mut b, mut n) = (0, 0);
        self.versions_walk(g, cur, seen, problems, |_, charged| {
            b += charged;
            n += 1;
        })?;
        Ok((b, n))
    }

    /// For the check: version records whose file is not reachable.
    pub(crate) fn check_version_owners(
        &self,
        seen: &std::collections::HashSet<u64>,
        problems: &mut Vec<String>,
    ) -> Result<(), MetaError> {
        let h = self.db.cf_handle(CF_META).expect("cf exists");
        let it = self.db.iterator_cf(
            h,
            rocksdb::IteratorMode::From(PREFIX, rocksdb::Direction::Forward),
        );
        for item in it {
            let (k, _) = item?;
            let Some(rest) = k.strip_prefix(PREFIX) else {
                break;
            };
            let cur = u64::from_be_bytes(
                rest.get(..8)
                    .and_then(|b| b.try_into().ok())
                    .ok_or_else(|| corrupt("version key", "length"))?,
            );
            if !seen.contains(&cur) {
                problems.push(format!(
                    "versions kept for file {cur}, which is not reachable"
                ));
            }
        }
        Ok(())
    }
}

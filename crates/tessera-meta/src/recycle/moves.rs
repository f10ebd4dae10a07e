//! A delete that goes to a bin: the entry (a file, or a directory with
//! everything under it) leaves its directory in one transaction, its
//! quota with it, and is recorded in the bin.

use super::{account, bin_of, put_entry, RecycleEntry};
use crate::acl::Action;
use crate::error::MetaError;
use crate::quota::{self, Deltas, OwnerUsage};
use crate::read::{self, lookup, must_inode, resolve_parent};
use crate::records::{EntryKind, Inode};
use crate::store::{now_ns, MetaStore, WriterState};
use crate::txn::Txn;
use crate::write::{drop_node_records, need, unlink_entry, W, X};
use std::collections::HashSet;
use tessera_types::{Identity, NsPath};

/// Entries a tree may have to go into a bin as one entry.
pub const WHOLE_TREE_MAX: u64 = 200_000;

/// What a delete did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Removal {
    /// Removed for good (no bin covers it), with a file's versions: the
    /// data layer removes their stripes.
    Gone(Inode, Vec<Inode>),
    /// Moved into a bin; with whether the bin is now past its volume cap
    /// (the purge should run).
    Binned { entry: RecycleEntry, over_cap: bool },
    /// Nothing changed: a directory that cannot go as one piece (no bin
    /// covers it, or one does but the caller may not remove part of it,
    /// it holds a quota node or a write in progress, or it is too large).
    /// The caller removes what is under it entry by entry, then it.
    NotWhole(String),
}

/// Usage of the tree at `top` (itself included) per owner, if `who` may
/// remove every entry of it; otherwise why not.
fn whole_tree(
    store: &MetaStore,
    txn: &Txn<'_>,
    st: &WriterState,
    who: &Identity,
    top: &Inode,
) -> Result<Result<OwnerUsage, String>, MetaError> {
    let mut usage = OwnerUsage::new();
    let own = top.size + txn.committed_xattr_bytes(top.ino)?;
    usage.insert((top.uid, top.gid), (own, 1));
    if !top.is_dir() {
        crate::versions::add_usage(txn, top.ino, &mut usage)?;
        return Ok(Ok(usage));
    }
    // Walked under the writer lock: a tree larger than this goes entry
    // by entry instead.
    let cap = store.opts.max_reaccount_entries.min(WHOLE_TREE_MAX);
    let mut dirs: HashSet<u64> = HashSet::new();
    let mut stack = vec![top.clone()];
    let mut seen = 0u64;
    while let Some(d) = stack.pop() {
        if d.quota_node {
            return Ok(Err(format!("{} is a quota node", d.ino)));
        }
        if let Err(e) = need(
            txn,
            who,
            d.ino,
            &d,
            W | X,
            Action::Delete,
            "remove entries here",
        ) {
            return refusal(e);
        }
        dirs.insert(d.ino);
        let mut after: Option<Vec<u8>> = None;
        loop {
            let page = read::list_children(txn, d.ino, after.as_deref(), 1024)?;
            let Some(last) = page.last() else { break };
            after = Some(last.name.clone());
            for c in page {
                seen += 1;
                if seen > cap {
                    return Ok(Err(format!("more than {cap} entries")));
                }
                if let Err(e) = crate::perm::sticky_allows(who, &d, &c) {
                    return refusal(e);
                }
                let e = usage.entry((c.uid, c.gid)).or_default();
                e.0 += c.size + txn.committed_xattr_bytes(c.ino)?;
                e.1 += 1;
                if c.is_dir() {
                    stack.push(c);
                } else {
                    crate::versions::add_usage(txn, c.ino, &mut usage)?;
                }
            }
        }
    }
    if st.reservations.values().any(|r| dirs.contains(&r.parent)) {
        return Ok(Err("a write is in progress under it".into()));
    }
    Ok(Ok(usage))
}

fn refusal(e: MetaError) -> Result<Result<OwnerUsage, String>, MetaError> {
    match e {
        MetaError::PermissionDenied(m) | MetaError::NotPermitted(m) => Ok(Err(m)),
        e => Err(e),
    }
}

/// Move `victim` (in `dir`, deleted as `path`) into bin `bin` within
/// `txn`: its dentry goes, its inode and attributes stay, its usage moves
/// from the quota node to the bin.
pub(crate) fn move_into(
    store: &MetaStore,
    txn: &mut Txn<'_>,
    st: &WriterState,
    who: &Identity,
    (mut dir, victim): (Inode, Inode),
    path: &NsPath,
    bin: &str,
) -> Result<Removal, MetaError> {
    let usage = match whole_tree(store, txn, st, who, &victim)? {
        Ok(u) => u,
        Err(why) => return Ok(Removal::NotWhole(why)),
    };
    let node = quota::node_of_dir(&*txn, dir.ino)?;
    let mut deltas = Deltas::default();
    let (mut bytes, mut inodes) = (0u64, 0u64);
    for ((uid, gid), (b, i)) in usage {
        deltas.charge(node, uid, gid, -(b as i128), -(i as i128));
        bytes += b;
        inodes += i;
    }
    let now = now_ns();
    if victim.is_dir() {
        txn.note_dir_change();
    }
    txn.delete_dentry(dir.ino, &victim.name);
    dir.nchildren = dir.nchildren.saturating_sub(1);
    dir.mtime_ns = now;
    txn.put_inode(&dir);
    let mut top = victim;
    top.ctime_ns = now;
    txn.put_inode(&top);
    let entry = RecycleEntry {
        id: top.ino,
        bin: bin.to_string(),
        path: path.display(),
        kind: top.kind,
        uid: top.uid,
        gid: top.gid,
        deleted_by: who.name.clone(),
        deleted_ns: now,
        bytes,
        inodes,
        purging: false,
    };
    put_entry(txn, &entry);
    let b = account(txn, bin, bytes as i128, inodes as i128, 1)?;
    deltas.apply(txn, st, false)?;
    Ok(Removal::Binned {
        entry,
        over_cap: b.over_cap(b.used_bytes, b.used_inodes),
    })
}

impl MetaStore {
    /// Delete `path`: a file, an empty directory, or with `tree` a
    /// directory and everything under it. Into the recycle bin that covers
    /// it, as one entry in one transaction; for good when none does (a
    /// directory then only when empty: `NotWhole` otherwise). Permissions
    /// are a delete's: write and search on the directory (its ACL's delete
    /// right) and the sticky bit; a tree going to a bin needs them on
    /// every directory in it, else it is `NotWhole`.
    pub fn remove_entry(
        &self,
        path: &NsPath,
        who: &Identity,
        tree: bool,
    ) -> Result<Removal, MetaError> {
        self.remove_entry_as(path, who, tree, true)
    }

    /// [`MetaStore::remove_entry`]; without `whole`, a directory that is
    /// not empty is `NotWhole` at once (no walk: a caller that found its
    /// top not whole goes entry by entry below it).
    pub fn remove_entry_as(
        &self,
        path: &NsPath,
        who: &Identity,
        tree: bool,
        whole: bool,
    ) -> Result<Removal, MetaError> {
        let (seq, out) = {
            let st = self.lock();
            let mut txn = self.txn();
            if path.is_root() {
                return Err(MetaError::Busy("cannot remove /".into()));
            }
            let (dir, name) = resolve_parent(&txn, path, who)?;
            let Some((kind, ino)) = lookup(&txn, dir.ino, name)? else {
                return Err(MetaError::NotFound(path.display()));
            };
            let victim = must_inode(&txn, ino)?;
            let full = kind == EntryKind::Directory && victim.nchildren > 0;
            let what = "remove entries here";
            let may = need(&txn, who, dir.ino, &dir, W | X, Action::Delete, what)
                .and_then(|()| crate::perm::sticky_allows(who, &dir, &victim));
            match may {
                // What is under a directory may be removable when it is
                // not (rm -r goes as far as it can).
                Err(e) if full && tree => return Ok(Removal::NotWhole(e.to_string())),
                Err(e) => return Err(e),
                Ok(()) if full && !tree => return Err(MetaError::NotEmpty(path.display())),
                Ok(()) => {}
            }
            let bin = bin_of(&txn, dir.ino)?;
            let moved = match &bin {
                Some(_) if full && !whole => Removal::NotWhole("below a tree that was not".into()),
                Some(bin) => move_into(
                    self,
                    &mut txn,
                    &st,
                    who,
                    (dir.clone(), victim.clone()),
                    path,
                    bin,
                )?,
                None => Removal::NotWhole("no recycle bin covers it".into()),
            };
            let out = match moved {
                // An empty directory that cannot go to the bin (a quota
                // node) goes for good (its quota settings with it).
                Removal::NotWhole(_) if !full => {
                    drop_node_records(self, &mut txn, &st, &victim)?;
                    let versions = crate::versions::drop_charged(&mut txn, &st, dir.ino, &victim)?;
                    unlink_entry(&mut txn, &st, dir, &victim)?;
                    Removal::Gone(victim, versions)
                }
                out => out,
            };
            if let Removal::NotWhole(_) = out {
                return Ok(out);
            }
            (self.commit(txn, &st)?, out)
        };
        self.finish(seq)?;
        Ok(out)
    }
}

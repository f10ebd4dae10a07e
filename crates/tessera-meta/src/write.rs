//! Mutations. Each one takes the writer lock, builds one transaction
//! (namespace change + quota usage), commits it atomically, drops the lock
//! and only then waits for durability, so concurrent writers share fsyncs.

use crate::acl::Action;
use crate::error::MetaError;
use crate::keys::*;
use crate::quota::{self, Deltas};
use crate::read::{self, lookup, must_inode, resolve, resolve_parent};
use crate::records::*;
use crate::store::{now_ns, MetaStore, WriterState, ROOT_INO};
use crate::txn::{Cf, Txn};
use tessera_types::{Identity, NsPath};

pub(crate) const W: u32 = 2;
pub(crate) const X: u32 = 1;
/// How many inode numbers are handed out per persisted allocation step.
const INO_BLOCK: u64 = 1024;

#[derive(Debug, Clone, Copy, Default)]
pub struct RenameFlags {
    /// Fail with EEXIST instead of replacing an existing destination.
    pub no_replace: bool,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct SetAttr {
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub mode: Option<u32>,
    pub mtime_ns: Option<i64>,
}

/// POSIX mode-bit check (root passes). Token scopes and ACLs are evaluated
/// by the core service before it calls the store.
pub fn may(who: &Identity, i: &Inode, want: u32) -> bool {
    if who.is_root() {
        return true;
    }
    let bits = if who.uid == i.uid {
        (i.mode >> 6) & 7
    } else if who.in_group(i.gid) {
        (i.mode >> 3) & 7
    } else {
        i.mode & 7
    };
    bits & want == want
}

/// What directory `dir`'s ACL says about `action` (`None`: nothing).
pub(crate) fn acl_decision(
    txn: &Txn<'_>,
    who: &Identity,
    dir: u64,
    action: Action,
) -> Result<Option<bool>, MetaError> {
    Ok(crate::acl::of_dir(txn, dir)?.and_then(|l| l.decide(who, action)))
}

/// The entry of kind `want` that `path` names, to be removed by `who`:
/// its directory and inode. In the kernel's order: ENOENT when there is
/// none, EACCES without the right to remove entries in the directory,
/// EPERM for another user's entry in a sticky directory, then EISDIR or
/// ENOTDIR when it is of the other kind.
pub(crate) fn removable(
    txn: &Txn<'_>,
    who: &Identity,
    path: &NsPath,
    want: EntryKind,
) -> Result<(Inode, Inode), MetaError> {
    let (dir, name) = resolve_parent(txn, path, who)?;
    let Some((kind, ino)) = lookup(txn, dir.ino, name)? else {
        return Err(MetaError::NotFound(path.display()));
    };
    let what = "remove entries here";
    need(txn, who, dir.ino, &dir, W | X, Action::Delete, what)?;
    let victim = must_inode(txn, ino)?;
    crate::perm::sticky_allows(who, &dir, &victim)?;
    match (want, kind) {
        (EntryKind::File, EntryKind::Directory) => Err(MetaError::IsADirectory(path.display())),
        (EntryKind::Directory, EntryKind::File) => Err(MetaError::NotADirectory(path.display())),
        _ => Ok((dir, victim)),
    }
}

pub(crate) fn need(
    txn: &Txn<'_>,
    who: &Identity,
    dir: u64,
    i: &Inode,
    want: u32,
    action: Action,
    what: &str,
) -> Result<(), MetaError> {
    if who.is_root() {
        return Ok(());
    }
    match acl_decision(txn, who, dir, action)? {
        Some(true) => return Ok(()),
        Some(false) => {
            return Err(MetaError::PermissionDenied(format!(
                "the ACL of this directory does not let {} {what}",
                who.name
            )))
        }
        None => {}
    }
    if may(who, i, want) {
        Ok(())
    } else {
        Err(MetaError::PermissionDenied(format!(
            "{} may not {what} (uid {} gid {}, mode {:o})",
            who.name, i.uid, i.gid, i.mode
        )))
    }
}

pub(crate) fn alloc_ino(st: &mut WriterState) -> u64 {
    let ino = st.next_ino;
    st.next_ino += 1;
    if st.next_ino > st.ino_ceiling {
        st.ino_ceiling = st.next_ino + INO_BLOCK;
    }
    ino
}

/// Remove `victim`'s entry, inode and attributes; returns the bytes it
/// took in its owner's byte quota (its size and its user attributes),
/// for the caller to release.
fn delete_entry(txn: &mut Txn<'_>, parent: u64, victim: &Inode) -> Result<i128, MetaError> {
    if victim.is_dir() {
        txn.note_dir_change();
    }
    txn.delete_dentry(parent, &victim.name);
    let attrs = txn.drop_inode(victim.ino)?;
    Ok(victim.size as i128 + attrs as i128)
}

/// Drop a (childless) quota node's records when its directory goes away.
pub(crate) fn drop_node_records(
    store: &MetaStore,
    txn: &mut Txn<'_>,
    st: &WriterState,
    dir: &Inode,
) -> Result<(), MetaError> {
    if !dir.quota_node {
        return Ok(());
    }
    if st.reservations.values().any(|r| r.node == dir.ino) {
        return Err(MetaError::Busy(
            "writes in progress in this quota node".into(),
        ));
    }
    for (k, _) in store.node_record_keys(dir.ino)? {
        txn.delete(Cf::Quota, &k);
    }
    Ok(())
}

/// Removes `victim`'s entry from directory `dir`, its bytes and inode
/// taken off quota node `node`'s usage in `deltas` (a file's versions are
/// `versions::delete_file_charged`'s).
pub(crate) fn delete_charged(
    txn: &mut Txn<'_>,
    deltas: &mut Deltas,
    node: u64,
    dir: u64,
    victim: &Inode,
) -> Result<(), MetaError> {
    let freed = delete_entry(txn, dir, victim)?;
    deltas.charge(node, victim.uid, victim.gid, -freed, -1);
    Ok(())
}

/// Removes `victim`'s entry from `dir`, its quota charge with it (a
/// file's versions first: `versions::drop_charged`).
pub(crate) fn unlink_entry(
    txn: &mut Txn<'_>,
    st: &WriterState,
    mut dir: Inode,
    victim: &Inode,
) -> Result<(), MetaError> {
    let node = quota::node_of_dir(&*txn, dir.ino)?;
    let mut deltas = Deltas::default();
    delete_charged(txn, &mut deltas, node, dir.ino, victim)?;
    dir.nchildren = dir.nchildren.saturating_sub(1);
    dir.mtime_ns = now_ns();
    txn.put_inode(&dir);
    deltas.apply(txn, st, true)
}

impl MetaStore {
    pub(crate) fn finish(&self, seq: u64) -> Result<(), MetaError> {
        self.make_durable(seq)
    }

    /// Writes a changed inode (its ctime now) and commits; the sequence
    /// number to [`MetaStore::finish`] and the inode as written.
    fn commit_changed(
        &self,
        mut txn: Txn<'_>,
        st: &WriterState,
        mut i: Inode,
    ) -> Result<(u64, Inode), MetaError> {
        i.ctime_ns = now_ns();
        if i.is_dir() {
            // The directory cache keeps directories' owner, group and mode.
            txn.note_dir_change();
        }
        txn.put_inode(&i);
        Ok((self.commit(txn, st)?, i))
    }

    /// Create a directory; with `parents`, create missing ancestors and
    /// accept an existing directory (like `mkdir -p`).
    // long-fn: one transaction making each missing ancestor with its quota and inherited attributes.
    pub fn mkdir(
        &self,
        path: &NsPath,
        who: &Identity,
        mode: u32,
        parents: bool,
    ) -> Result<Inode, MetaError> {
        let (seq, out) = {
            let mut st = self.lock();
            let mut txn = self.txn();
            let comps: Vec<&[u8]> = path.components().collect();
            if comps.is_empty() {
                return if parents {
                    must_inode(&txn, ROOT_INO)
                } else {
                    Err(MetaError::AlreadyExists("/".into()))
                };
            }
            let mut cur = must_inode(&txn, ROOT_INO)?;
            let mut inherited: Option<Vec<(Vec<u8>, Vec<u8>)>> = None;
            let mut deltas = Deltas::default();
            let now = now_ns();
            let mut created = false;
            for (idx, name) in comps.iter().enumerate() {
                let last = idx + 1 == comps.len();
                // Names are looked up in `cur`: search permission on it
                // (directories made by this call are the caller's own).
                let perm = crate::dircache::Perm::of(&cur);
                if !created && !crate::perm::may_search(&txn, who, cur.ino, &perm)? {
                    let shown = read::path_of(&txn, cur.ino)?.display();
                    return Err(crate::perm::refused(who, &shown, &perm));
                }
                match lookup(&txn, cur.ino, name)? {
                    Some((EntryKind::Directory, ino)) => {
                        if last && !parents {
                            return Err(MetaError::AlreadyExists(path.display()));
                        }
                        cur = must_inode(&txn, ino)?;
                    }
                    Some((EntryKind::File, _)) => {
                        return Err(if last {
                            MetaError::AlreadyExists(path.display())
                        } else {
                            MetaError::NotADirectory(path.display())
                        });
                    }
                    None => {
                        if !last && !parents {
                            return Err(MetaError::NotFound(format!(
                                "parent of {} does not exist",
                                path.display()
                            )));
                        }
                        NsPath::validate_name(name)?;
                        need(
                            &txn,
                            who,
                            cur.ino,
                            &cur,
                            W | X,
                            Action::Write,
                            "create entries here",
                        )?;
                        let attrs = match &inherited {
                            Some(a) => a.clone(),
                            None => read::xattrs_of(&self.db, cur.ino)?
                                .into_iter()
                                // `sys.recycle` is not inherited: its nearest ancestor
                                // counts, so that turning a bin off turns it off below.
                                .filter(|(n, _)| n.starts_with(b"sys.") && n != b"sys.recycle")
                                .collect(),
                        };
                        let node = quota::node_of_dir(&txn, cur.ino)?;
                        deltas.charge(node, who.uid, who.gid, 0, 1);
                        let dir = Inode::new_dir(
                            alloc_ino(&mut st),
                            cur.ino,
                            name.to_vec(),
                            (who.uid, who.gid),
                            mode,
                            now,
                        );
                        cur.nchildren += 1;
                        cur.mtime_ns = now;
                        txn.put_inode(&cur);
                        txn.put_inode(&dir);
                        txn.put_dentry(cur.ino, name, EntryKind::Directory, dir.ino);
                        for (n, v) in &attrs {
                            txn.put(Cf::Xattr, &xattr_key(dir.ino, n), encode_xattr(v));
                        }
                        inherited = Some(attrs);
                        created = true;
                        cur = dir;
                    }
                }
            }
            if !created {
                return Ok(cur);
            }
            deltas.apply(&mut txn, &st, true)?;
            (self.commit(txn, &st)?, cur)
        };
        self.finish(seq)?;
        Ok(out)
    }

    /// Remove an empty directory.
    pub fn rmdir(&self, path: &NsPath, who: &Identity) -> Result<(), MetaError> {
        let seq = {
            let st = self.lock();
            let mut txn = self.txn();
            if path.is_root() {
                return Err(MetaError::Busy("cannot remove /".into()));
            }
            let (dir, victim) = removable(&txn, who, path, EntryKind::Directory)?;
            if victim.nchildren > 0 {
                return Err(MetaError::NotEmpty(path.display()));
            }
            drop_node_records(self, &mut txn, &st, &victim)?;
            unlink_entry(&mut txn, &st, dir, &victim)?;
            self.commit(txn, &st)?
        };
        self.finish(seq)
    }

    /// Change owner, group, mode or mtime. Only root changes the owner; the
    /// owner may change the group to one of its own groups, the mode and
    /// the mtime. A change of owner or group moves quota usage.
    pub fn setattr(&self, path: &NsPath, who: &Identity, a: SetAttr) -> Result<Inode, MetaError> {
        let (seq, out) = {
            let st = self.lock();
            let mut txn = self.txn();
            let mut i = resolve(&txn, path, who)?;
            let owner = who.is_root() || who.uid == i.uid;
            if a.uid.is_some_and(|u| u != i.uid) && !who.is_root() {
                return Err(MetaError::NotPermitted(
                    "only root may change the owner".into(),
                ));
            }
            if let Some(g) = a.gid {
                if g != i.gid && !(who.is_root() || (owner && who.in_group(g))) {
                    return Err(MetaError::NotPermitted(
                        "only root or the owner (to one of its groups) may change the group".into(),
                    ));
                }
            }
            // A mode change: the directory's ACL (`m`, `!m`) first.
            let acl_chmod = if a.mode.is_some() && !who.is_root() {
                crate::acl::of_dir(&txn, i.parent)?.and_then(|l| l.decide(who, Action::Chmod))
            } else {
                None
            };
            if acl_chmod == Some(false) {
                return Err(MetaError::PermissionDenied(
                    "the ACL of this directory does not allow changing modes".into(),
                ));
            }
            if (a.mode.is_some() && !owner && acl_chmod != Some(true))
                || (a.mtime_ns.is_some() && !owner)
            {
                return Err(MetaError::NotPermitted(
                    "only the owner may change mode or times".into(),
                ));
            }
            let (nu, ng) = (a.uid.unwrap_or(i.uid), a.gid.unwrap_or(i.gid));
            if (nu, ng) != (i.uid, i.gid) && i.ino != ROOT_INO {
                let node = quota::node_of_dir(&txn, i.parent)?;
                let mut d = Deltas::default();
                let b = i.size as i128 + txn.committed_xattr_bytes(i.ino)? as i128;
                d.charge(node, i.uid, i.gid, -b, -1);
                d.charge(node, nu, ng, b, 1);
                d.apply(&mut txn, &st, true)?;
            }
            i.uid = nu;
            i.gid = ng;
            if let Some(m) = a.mode {
                i.mode = m & 0o7777;
            }
            if let Some(t) = a.mtime_ns {
                i.mtime_ns = t;
            }
            self.commit_changed(txn, &st, i)?
        };
        self.finish(seq)?;
        Ok(out)
    }
}

impl MetaStore {
    /// Replace a file's layout record if it is still `expected` (repair and
    /// drain move stripes while the file may change under them).
    pub fn set_layout(
        &self,
        ino: u64,
        expected: &[u8],
        layout: Vec<u8>,
    ) -> Result<Inode, MetaError> {
        let (seq, out) = {
            let st = self.lock();
            let txn = self.txn();
            let mut i = read::inode(&txn, ino)?
                .ok_or_else(|| MetaError::NotFound(format!("inode {ino}")))?;
            if i.layout != expected {
                return Err(MetaError::Busy(format!(
                    "file {ino} changed during the operation"
                )));
            }
            i.layout = layout;
            self.commit_changed(txn, &st, i)?
        };
        self.finish(seq)?;
        Ok(out)
    }
}

//! Rename: one transaction, POSIX's rules checked in the kernel's order
//! (`do_renameat2` then `vfs_rename`): both parents resolved (search
//! permission on the way and in each), the source looked up (ENOENT), an
//! existing destination refused with `no_replace` (EEXIST), a directory
//! moved under itself (EINVAL) or onto one of its ancestors (ENOTEMPTY),
//! a rename onto itself done; then the right to remove the source from its
//! directory (write + search, the sticky bit), to create in (or remove the
//! destination from) the destination's directory, the kinds of the two
//! (ENOTDIR, EISDIR), write permission on a directory that moves to
//! another parent (its `..` changes), and a non-empty destination
//! directory (ENOTEMPTY).

use crate::acl::Action;
use crate::error::MetaError;
use crate::perm::sticky_allows;
use crate::quota::{self, Deltas};
use crate::read::{self, lookup, must_inode, resolve_parent};
use crate::records::*;
use crate::store::{now_ns, MetaStore};
use crate::write::{drop_node_records, need, RenameFlags, W, X};
use tessera_types::{Identity, NsPath};

impl MetaStore {
    /// Atomic rename with POSIX replacement rules. Returns the moved inode.
    pub fn rename(
        &self,
        src: &NsPath,
        dst: &NsPath,
        who: &Identity,
        flags: RenameFlags,
    ) -> Result<Inode, MetaError> {
        self.rename_dropping(src, dst, who, flags).map(|(i, _)| i)
    }

    /// [`MetaStore::rename`], with the files a replaced destination took
    /// away for good (it and its versions; none when the destination
    /// directory keeps versions and it became one): the data layer
    /// removes their stripes.
    // long-fn: POSIX rename's cases in one transaction, each check reading what the one before it resolved.
    pub fn rename_dropping(
        &self,
        src: &NsPath,
        dst: &NsPath,
        who: &Identity,
        flags: RenameFlags,
    ) -> Result<(Inode, Vec<Inode>), MetaError> {
        let (seq, out) = {
            let st = self.lock();
            let mut txn = self.txn();
            if src.is_root() || dst.is_root() {
                return Err(MetaError::Busy("cannot rename /".into()));
            }
            let (sdir, sname) = resolve_parent(&txn, src, who)?;
            let (ddir, dname) = resolve_parent(&txn, dst, who)?;
            let Some((skind, sino)) = lookup(&txn, sdir.ino, sname)? else {
                return Err(MetaError::NotFound(src.display()));
            };
            NsPath::validate_name(dname)?;
            let target = lookup(&txn, ddir.ino, dname)?;
            if flags.no_replace && target.is_some() && (sdir.ino, sname) != (ddir.ino, dname) {
                return Err(MetaError::AlreadyExists(dst.display()));
            }
            if skind == EntryKind::Directory && read::is_ancestor(&txn, sino, ddir.ino)? {
                return Err(MetaError::Invalid(format!(
                    "cannot move {} under itself",
                    src.display()
                )));
            }
            if let Some((EntryKind::Directory, dino)) = target {
                if dino != sino && read::is_ancestor(&txn, dino, sdir.ino)? {
                    return Err(MetaError::NotEmpty(dst.display()));
                }
            }
            let mut moving = must_inode(&txn, sino)?;
            if target.is_some_and(|(_, dino)| dino == sino) {
                return Ok((moving, Vec::new()));
            }
            let what = "remove entries here";
            need(&txn, who, sdir.ino, &sdir, W | X, Action::Delete, what)?;
            sticky_allows(who, &sdir, &moving)?;
            let victim = match target {
                None => {
                    let what = "create entries here";
                    need(&txn, who, ddir.ino, &ddir, W | X, Action::Write, what)?;
                    None
                }
                Some((dkind, dino)) => {
                    let what = "replace entries here";
                    need(&txn, who, ddir.ino, &ddir, W | X, Action::Delete, what)?;
                    let victim = must_inode(&txn, dino)?;
                    sticky_allows(who, &ddir, &victim)?;
                    match (skind, dkind) {
                        (EntryKind::File, EntryKind::Directory) => {
                            return Err(MetaError::IsADirectory(dst.display()))
                        }
                        (EntryKind::Directory, EntryKind::File) => {
                            return Err(MetaError::NotADirectory(dst.display()))
                        }
                        _ => {}
                    }
                    Some(victim)
                }
            };
            if skind == EntryKind::Directory && sdir.ino != ddir.ino && !crate::may(who, &moving, W)
            {
                return Err(MetaError::PermissionDenied(format!(
                    "{} may not move directory {} to another directory (it needs write permission on it)",
                    who.name,
                    src.display()
                )));
            }
            if let Some(v) = &victim {
                if v.is_dir() && v.nchildren > 0 {
                    return Err(MetaError::NotEmpty(dst.display()));
                }
            }
            let snode = quota::node_of_dir(&txn, sdir.ino)?;
            let dnode = quota::node_of_dir(&txn, ddir.ino)?;
            let mut deltas = Deltas::default();
            // Before the replaced file's versions are merged in: this
            // reads the moving file's versions as committed.
            if snode != dnode {
                let b = moving.size as i128 + txn.committed_xattr_bytes(moving.ino)? as i128;
                let i = 1i128;
                deltas.charge(snode, moving.uid, moving.gid, -b, -i);
                deltas.charge(dnode, moving.uid, moving.gid, b, i);
                let usage = if moving.is_dir() && !moving.quota_node {
                    crate::quotaset::subtree_usage(
                        self,
                        moving.ino,
                        self.opts.max_reaccount_entries,
                    )?
                } else {
                    // A file's versions move with it.
                    let mut u = quota::OwnerUsage::new();
                    if !moving.is_dir() {
                        crate::versions::add_usage(&txn, moving.ino, &mut u)?;
                    }
                    u
                };
                {
                    for ((uid, gid), (b, i)) in usage {
                        deltas.charge(snode, uid, gid, -(b as i128), -(i as i128));
                        deltas.charge(dnode, uid, gid, b as i128, i as i128);
                    }
                }
            }
            let mut ddir_children_delta: i64 = 1;
            let mut dropped = Vec::new();
            if let Some(victim) = victim {
                let keep = match victim.is_dir() || moving.is_dir() {
                    true => 0,
                    false => crate::versions::keep_of(&txn, ddir.ino)?,
                };
                if keep > 0 {
                    // The file it replaces becomes its newest version.
                    dropped = crate::versions::keep_replaced(
                        &mut txn,
                        &mut deltas,
                        dnode,
                        &victim,
                        moving.ino,
                        keep,
                    )?;
                } else {
                    drop_node_records(self, &mut txn, &st, &victim)?;
                    dropped = crate::versions::delete_file_charged(
                        &mut txn,
                        &mut deltas,
                        dnode,
                        ddir.ino,
                        &victim,
                    )?;
                }
                ddir_children_delta = 0;
            }
            let now = now_ns();
            if skind == EntryKind::Directory {
                txn.note_dir_change();
            }
            txn.delete_dentry(sdir.ino, sname);
            txn.put_dentry(ddir.ino, dname, skind, sino);
            moving.parent = ddir.ino;
            moving.name = dname.to_vec();
            moving.ctime_ns = now;
            txn.put_inode(&moving);
            // Re-read both directories through the overlay: they may be the
            // same inode.
            let mut s = txn.must_inode(sdir.ino)?;
            s.nchildren = s.nchildren.saturating_sub(1);
            s.mtime_ns = now;
            txn.put_inode(&s);
            let mut d = txn.must_inode(ddir.ino)?;
            d.nchildren = (d.nchildren as i64 + ddir_children_delta).max(0) as u64;
            d.mtime_ns = now;
            txn.put_inode(&d);
            deltas.apply(&mut txn, &st, true)?;
            (self.commit(txn, &st)?, (moving, dropped))
        };
        self.finish(seq)?;
        Ok(out)
    }
}

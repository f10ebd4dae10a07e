//! Writing files: open (reserve), grow, commit, abort. The permission
//! decision of a write is made twice with the same function, at the open
//! and again inside the commit's transaction, so that what was true when
//! the write began (the file did not exist; the ACL allowed it) cannot be
//! used to replace a file that appeared, or to write where rights were
//! withdrawn, meanwhile.

use crate::acl::Action;
use crate::error::MetaError;
use crate::keys::xattr_key;
use crate::quota::{self, Deltas, Reservation};
use crate::read::{self, lookup, must_inode, resolve_parent};
use crate::records::*;
use crate::store::{now_ns, MetaStore};
use crate::txn::{Cf, Txn};
use crate::write::{acl_decision, alloc_ino, need, W, X};
use std::sync::Arc;
use tessera_types::{Identity, NsPath};

/// What the data layer reports when a write completes.
#[derive(Debug, Clone, Default)]
pub struct CommitWrite {
    pub size: u64,
    pub checksum: Option<Checksum>,
    pub crc32c: Option<u32>,
    pub layout: Vec<u8>,
    pub mtime_ns: Option<i64>,
}

/// What a write may do with a file that exists under its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overwrite {
    /// Nothing: EEXIST (the client asked for a new file).
    No,
    /// Replace it (under the namespace's own rules: ACL, mode bits).
    Yes,
    /// The client asked to replace, but its token may only create:
    /// EACCES whenever a file is there, at the open or at the commit.
    NotPermitted,
    /// Replace exactly the file with this inode number (a conditional
    /// request matched it): another file there, or none, at the open or
    /// at the commit, is `Busy` (the condition no longer holds: no lost
    /// update).
    Only(u64),
}

impl From<bool> for Overwrite {
    fn from(b: bool) -> Overwrite {
        if b {
            Overwrite::Yes
        } else {
            Overwrite::No
        }
    }
}

/// The permission decision of writing `name` into directory `dir`:
/// `Some(old)` when the file there is replaced, `None` when it is new.
fn decide(
    txn: &Txn<'_>,
    who: &Identity,
    dir: &Inode,
    name: &[u8],
    overwrite: Overwrite,
) -> Result<Option<Inode>, MetaError> {
    let shown = || String::from_utf8_lossy(name).into_owned();
    // The right to `what` on `on` (the directory, or the file replaced).
    let may = |on: &Inode, bits: u32, action: Action, what: &str| {
        need(txn, who, dir.ino, on, bits, action, what)
    };
    match lookup(txn, dir.ino, name)? {
        // A new file asked for (O_CREAT|O_EXCL) finds the name taken.
        Some((EntryKind::Directory, _)) if overwrite == Overwrite::No => {
            Err(MetaError::AlreadyExists(shown()))
        }
        Some((EntryKind::Directory, _)) => Err(MetaError::IsADirectory(shown())),
        Some((EntryKind::File, ino)) => {
            match overwrite {
                Overwrite::Only(want) if want != ino => return Err(changed(&shown())),
                Overwrite::No => return Err(MetaError::AlreadyExists(shown())),
                Overwrite::NotPermitted => {
                    return Err(MetaError::PermissionDenied(format!(
                        "{} exists and the token of {} may create files here but not replace them",
                        shown(),
                        who.name
                    )))
                }
                Overwrite::Yes | Overwrite::Only(_) => {}
            }
            // Replacing: the ACL's update right, else the mode bits of
            // the directory and of the file.
            let old = must_inode(txn, ino)?;
            may(dir, W | X, Action::Update, "replace entries here")?;
            if acl_decision(txn, who, dir.ino, Action::Update)?.is_none() {
                may(&old, W, Action::Update, "overwrite this file")?;
            }
            Ok(Some(old))
        }
        None if matches!(overwrite, Overwrite::Only(_)) => Err(changed(&shown())),
        None => {
            may(dir, W | X, Action::Write, "create entries here")?;
            Ok(None)
        }
    }
}

/// The file a conditional write matched is not the one there now.
fn changed(name: &str) -> MetaError {
    MetaError::Busy(format!(
        "{name} changed since the request's condition was checked (no lost update)"
    ))
}

impl MetaStore {
    /// Whether `who` may open `path` for writing now (the checks of
    /// [`MetaStore::begin_write`], nothing reserved): what a metadata
    /// service decides before it signs a write capability.
    pub fn check_write(
        &self,
        path: &NsPath,
        who: &Identity,
        overwrite: impl Into<Overwrite>,
    ) -> Result<(), MetaError> {
        let txn = self.txn();
        let (dir, name) = resolve_parent(&txn, path, who)?;
        NsPath::validate_name(name)?;
        decide(&txn, who, &dir, name, overwrite.into()).map(|_| ())
    }

    /// Open a file for writing: check the namespace and permissions, and
    /// reserve quota (one inode unless replacing, plus `expected_bytes`).
    /// Nothing is visible until [`MetaStore::commit_write`], which decides
    /// again, as `who`, in its own transaction.
    pub fn begin_write(
        &self,
        path: &NsPath,
        who: &Identity,
        mode: u32,
        overwrite: impl Into<Overwrite>,
        expected_bytes: u64,
    ) -> Result<Reservation, MetaError> {
        let overwrite = overwrite.into();
        let (seq, r) = {
            let mut st = self.lock();
            let txn = self.txn();
            let (dir, name) = resolve_parent(&txn, path, who)?;
            NsPath::validate_name(name)?;
            let replacing = decide(&txn, who, &dir, name, overwrite)?.is_some();
            let node = quota::node_of_dir(&txn, dir.ino)?;
            let before = st.ino_ceiling;
            let ino = alloc_ino(&mut st);
            let r = quota::reserve(
                &txn,
                &mut st,
                Reservation {
                    id: 0,
                    ino,
                    parent: dir.ino,
                    name: name.to_vec(),
                    node,
                    uid: who.uid,
                    gid: who.gid,
                    mode: mode & 0o7777,
                    bytes: expected_bytes,
                    inodes: if replacing { 0 } else { 1 },
                    overwrite,
                    who: Arc::new(who.clone()),
                },
            )?;
            // Persist the inode allocation step so a crash never hands the
            // same number out twice (stripes are named after it).
            let seq = if st.ino_ceiling != before {
                Some(self.commit(self.txn(), &st)?)
            } else {
                None
            };
            (seq, r)
        };
        if let Some(seq) = seq {
            self.finish(seq)?;
        }
        Ok(r)
    }

    /// Give open reservation `id` a new inode number (its stripes are
    /// named after it): a write that rebuilds its data before the commit
    /// writes the new stripes under it while the old ones still exist.
    /// Quota stays reserved as it was.
    pub fn renumber_write(&self, id: u64) -> Result<u64, MetaError> {
        let seq = {
            let mut st = self.lock();
            if !st.reservations.contains_key(&id) {
                return Err(MetaError::NotFound(format!(
                    "no write in progress with id {id}"
                )));
            }
            let before = st.ino_ceiling;
            let ino = alloc_ino(&mut st);
            if let Some(r) = st.reservations.get_mut(&id) {
                r.ino = ino;
            }
            // As in begin_write: an allocation step is persisted first.
            let seq = if st.ino_ceiling != before {
                Some(self.commit(self.txn(), &st)?)
            } else {
                None
            };
            (seq, ino)
        };
        if let Some(s) = seq.0 {
            self.finish(s)?;
        }
        Ok(seq.1)
    }

    /// Grow an open reservation by `bytes` (a write went past its estimate).
    pub fn extend_write(&self, id: u64, bytes: u64) -> Result<(), MetaError> {
        let mut st = self.lock();
        let txn = self.txn();
        quota::grow(&txn, &mut st, id, bytes)
    }

    /// Make a written file visible: one atomic step that decides again
    /// whether the writer may create or replace what is there now, adds
    /// (or replaces) the entry, records size/checksum/layout and settles
    /// the reservation. Returns the new inode and the files that went for
    /// good (the one it replaced and its versions, or, in a directory that
    /// keeps versions, the oldest beyond the number kept) for the data
    /// layer to remove their stripes. A refusal releases the reservation
    /// and changes nothing.
    pub fn commit_write(&self, id: u64, c: CommitWrite) -> Result<(Inode, Vec<Inode>), MetaError> {
        self.commit_as(id, c, None)
    }

    /// Commit a new version of file `old` (a copy-on-write update): as
    /// [`MetaStore::commit_write`], but only while the name still holds
    /// inode `old` (else `Busy`: it was replaced or removed meanwhile, and
    /// the update is refused), and the new inode keeps the old one's
    /// owner, group, mode and extended attributes (ACLs included).
    pub fn commit_update(
        &self,
        id: u64,
        c: CommitWrite,
        old: u64,
    ) -> Result<(Inode, Vec<Inode>), MetaError> {
        self.commit_as(id, c, Some(old))
    }

    fn commit_as(
        &self,
        id: u64,
        c: CommitWrite,
        update_of: Option<u64>,
    ) -> Result<(Inode, Vec<Inode>), MetaError> {
        let (seq, out) = {
            let mut st = self.lock();
            let Some(r) = quota::release(&mut st, id) else {
                return Err(MetaError::NotFound(format!(
                    "no write in progress with id {id}"
                )));
            };
            let mut txn = self.txn();
            let mut dir = match read::inode(&txn, r.parent)? {
                Some(d) if d.is_dir() => d,
                _ => {
                    return Err(MetaError::NotFound(
                        "the directory was removed during the write".into(),
                    ))
                }
            };
            // Rights withdrawn above the directory meanwhile refuse it too.
            crate::perm::search_up(&txn, &r.who, dir.ino)?;
            let node = quota::node_of_dir(&txn, dir.ino)?;
            let mut deltas = Deltas::default();
            let now = now_ns();
            let replaced = decide(&txn, &r.who, &dir, &r.name, r.overwrite)?;
            let (mut uid, mut gid, mut mode) = (r.uid, r.gid, r.mode);
            // The user attributes an update carries over, charged anew.
            let mut attrs = 0i128;
            if let Some(want) = update_of {
                let Some(old) = replaced.as_ref().filter(|o| o.ino == want) else {
                    return Err(MetaError::Busy(
                        "the file was replaced or removed during the update".into(),
                    ));
                };
                (uid, gid, mode) = (old.uid, old.gid, old.mode);
                attrs = txn.committed_xattr_bytes(old.ino)? as i128;
                for k in txn.committed_xattr_keys(old.ino)? {
                    if let Some(v) = txn.get(Cf::Xattr, &k)? {
                        txn.put(Cf::Xattr, &xattr_key(r.ino, &k[8..]), v);
                    }
                }
            }
            let mut dropped = Vec::new();
            match replaced {
                Some(old) => {
                    let keep = crate::versions::keep_of(&txn, dir.ino)?;
                    if keep > 0 {
                        // Kept as the new file's newest version (still
                        // charged); the oldest beyond `keep` go.
                        dropped = crate::versions::keep_replaced(
                            &mut txn,
                            &mut deltas,
                            node,
                            &old,
                            r.ino,
                            keep,
                        )?;
                    } else {
                        dropped = crate::versions::delete_file_charged(
                            &mut txn,
                            &mut deltas,
                            node,
                            dir.ino,
                            &old,
                        )?;
                    }
                }
                None => dir.nchildren += 1,
            }
            deltas.charge(node, uid, gid, c.size as i128 + attrs, 1);
            let file = Inode {
                ino: r.ino,
                kind: EntryKind::File,
                parent: dir.ino,
                name: r.name.clone(),
                uid,
                gid,
                mode,
                ctime_ns: now,
                mtime_ns: c.mtime_ns.unwrap_or(now),
                size: c.size,
                checksum: c.checksum,
                crc32c: c.crc32c,
                layout: c.layout,
                quota_node: false,
                nchildren: 0,
            };
            dir.mtime_ns = now;
            txn.put_inode(&dir);
            txn.put_inode(&file);
            txn.put_dentry(dir.ino, &r.name, EntryKind::File, file.ino);
            deltas.apply(&mut txn, &st, true)?;
            (self.commit(txn, &st)?, (file, dropped))
        };
        self.finish(seq)?;
        Ok(out)
    }

    /// Give up a write: its reservation is released, nothing becomes visible.
    pub fn abort_write(&self, id: u64) -> Result<Reservation, MetaError> {
        let mut st = self.lock();
        quota::release(&mut st, id)
            .ok_or_else(|| MetaError::NotFound(format!("no write in progress with id {id}")))
    }

    /// Create an empty file; fails if the name exists.
    pub fn create(&self, path: &NsPath, who: &Identity, mode: u32) -> Result<Inode, MetaError> {
        let r = self.begin_write(path, who, mode, false, 0)?;
        Ok(self.commit_write(r.id, CommitWrite::default())?.0)
    }
}

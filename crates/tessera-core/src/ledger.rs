//! Where a write's quota reservation lives and its file is committed, and
//! the removal of a file's stripes once nothing names them.

use crate::fs::Filesystems;
use crate::CoreError;
use std::sync::Arc;
use tessera_backend::StripeName;
use tessera_data::Placement;
use tessera_meta::{CommitWrite, Inode, MetaStore};

/// Remove every stripe of a file (best effort: what fails is an orphan for fsck).
pub(crate) fn drop_stripes(fs: &Filesystems, p: &Placement, fid: u64) {
    for (i, id) in p.fsids.iter().enumerate() {
        if let Some(b) = fs.backend(*id) {
            if let Err(e) = b.remove(&StripeName::new(fid, i as u8), None) {
                tracing::warn!(fid, stripe = i, fsid = id, "stripe not removed: {e}");
            }
        }
    }
}

pub(crate) fn drop_stripes_of(fs: &Filesystems, inode: &Inode) {
    if inode.layout.is_empty() {
        return;
    }
    match Placement::decode(&inode.layout) {
        Ok(p) => drop_stripes(fs, &p, inode.ino),
        Err(e) => tracing::warn!(fid = inode.ino, "unreadable placement: {e}"),
    }
}

/// Where a write's quota reservation lives and where the finished file is
/// committed: the local namespace, or, on a data gateway, the metadata
/// service (over its internal API). Blocking.
pub trait Ledger: Send + Sync {
    /// Grow reservation `id` by `bytes` (refused over quota).
    fn extend(&self, id: u64, bytes: u64) -> Result<(), CoreError>;
    /// Make the file visible in one step; the stripes of a file it
    /// replaces are dropped by the ledger.
    fn commit(&self, id: u64, c: CommitWrite) -> Result<Inode, CoreError>;
    /// Give the reservation up.
    fn abort(&self, id: u64);
    /// Give reservation `id` a new file id (see
    /// `MetaStore::renumber_write`); not every ledger can.
    fn renumber(&self, id: u64) -> Result<u64, CoreError> {
        let _ = id;
        Err(CoreError::Remote {
            kind: tessera_types::ErrorKind::Unsupported,
            msg: "rewriting bytes already written is not supported through a data gateway".into(),
        })
    }
    /// Reads of file `fid` ran into damaged stripes: (stripe index,
    /// filesystem id, what went wrong), one entry per stripe. Kept for
    /// fsck and repair; never fails the read that found them.
    fn damaged(&self, fid: u64, stripes: Vec<(u8, u32, String)>);
}

/// The local namespace as a ledger.
pub(crate) struct LocalLedger {
    pub(crate) meta: Arc<MetaStore>,
    pub(crate) fs: Arc<Filesystems>,
}

impl Ledger for LocalLedger {
    fn extend(&self, id: u64, bytes: u64) -> Result<(), CoreError> {
        Ok(self.meta.extend_write(id, bytes)?)
    }

    fn commit(&self, id: u64, c: CommitWrite) -> Result<Inode, CoreError> {
        let (inode, dropped) = self.meta.commit_write(id, c)?;
        for old in &dropped {
            drop_stripes_of(&self.fs, old);
        }
        Ok(inode)
    }

    fn abort(&self, id: u64) {
        let _ = self.meta.abort_write(id);
    }

    fn renumber(&self, id: u64) -> Result<u64, CoreError> {
        Ok(self.meta.renumber_write(id)?)
    }

    fn damaged(&self, fid: u64, stripes: Vec<(u8, u32, String)>) {
        let now = crate::fsck::now_ns();
        for (stripe, fsid, what) in stripes {
            tracing::warn!(fid, stripe, fsid, "degraded read: {what}");
            if let Err(e) = self.meta.damage_note(fid, stripe, fsid, &what, now) {
                tracing::warn!(fid, stripe, "damage not recorded: {e}");
            }
        }
    }
}

//! Copy-on-write updates of an existing file: what ROOT's
//! `TFile::Open(…, "UPDATE")` does through XRootD (an open for update,
//! writes at any offset, rewrites, truncates that shrink or grow, reads of
//! what it wrote). Stripes are written once and never changed in place, so
//! an update builds a new version: its writes are kept as patches over the
//! old version (in memory, leased from the budget, at most
//! [`MAX_PATCH_BYTES`]), reads see the old bytes under the patches, and the
//! close streams old bytes and patches into new stripes, then commits them
//! in one namespace step that replaces the old version only if it is still
//! the one the update began from (else `Busy`), keeping its owner, mode and
//! extended attributes. Until then every reader sees the old version; an
//! update that fails or is never closed leaves nothing behind (its new
//! stripes are dropped, its reservation released). Quota counts both
//! versions while the update is open (the new one is reserved as it is
//! written at close, from the old one's size at open).
//!
//! The cost, for every layout: the close reads the whole old version and
//! writes the whole new one (plain: 1× the file read, 1× written; RAIN
//! k+m: 1× read, (k+m)/k × written; replica n: 1× read, n× written), once
//! per update session however little it changed.

use crate::ledger::{drop_stripes_of, Ledger};
use crate::{Budget, Core, CoreError, Inode, Lease, ReadSession, WriteSession};
use std::sync::Arc;
use tessera_meta::{CommitWrite, MetaStore};
use tessera_types::{ErrorKind, Identity, NsPath};

/// Changed bytes an update may hold before its close.
pub const MAX_PATCH_BYTES: usize = 256 << 20;
/// Bytes streamed into the new version per write at close.
const CHUNK: usize = 4 << 20;

/// A file open for update.
pub struct Update {
    old: Arc<ReadSession>,
    /// Old bytes below this show through (a shrink lowers it: growing the
    /// file again reads zeros there, as POSIX says).
    old_valid: u64,
    size: u64,
    /// Non-overlapping runs of new bytes by offset.
    patches: crate::patched::Patches,
    /// The budget's bytes the patches hold.
    memory: Lease,
    budget: Budget,
    ws: Option<WriteSession>,
    failed: Option<(ErrorKind, String)>,
}

/// Commits the new version over the old one (`MetaStore::commit_update`).
struct UpdateLedger {
    meta: Arc<MetaStore>,
    fs: Arc<crate::fs::Filesystems>,
    old: u64,
}

impl Ledger for UpdateLedger {
    fn extend(&self, id: u64, bytes: u64) -> Result<(), CoreError> {
        Ok(self.meta.extend_write(id, bytes)?)
    }

    fn commit(&self, id: u64, c: CommitWrite) -> Result<Inode, CoreError> {
        let (inode, dropped) = self.meta.commit_update(id, c, self.old)?;
        for old in &dropped {
            drop_stripes_of(&self.fs, old);
        }
        Ok(inode)
    }

    fn abort(&self, id: u64) {
        let _ = self.meta.abort_write(id);
    }

    fn damaged(&self, fid: u64, stripes: Vec<(u8, u32, String)>) {
        crate::ledger::LocalLedger {
            meta: Arc::clone(&self.meta),
            fs: Arc::clone(&self.fs),
        }
        .damaged(fid, stripes)
    }
}

impl Core {
    /// Open the file at `path` for update (blocking): `who` must be
    /// allowed to read it and to replace it. Patches lease `budget`.
    pub fn open_update(
        &self,
        who: &Identity,
        path: &NsPath,
        budget: Budget,
    ) -> Result<Update, CoreError> {
        let start = std::time::Instant::now();
        let old = self.open_read(who, path)?;
        let inode = old.inode().clone();
        let data = self.data();
        let ledger: Arc<dyn Ledger> = Arc::new(UpdateLedger {
            meta: Arc::clone(&self.meta),
            fs: Arc::clone(&self.fs),
            old: inode.ino,
        });
        let mut ws = self
            .plan_write(who, path, inode.mode, true, inode.size)
            .and_then(|plan| data.start_write(plan, ledger, path.clone(), inode.size))?;
        if let Some(l) = data.session_log(who, path, start) {
            ws.set_log(l);
        }
        Ok(Update {
            old: Arc::new(old),
            old_valid: inode.size,
            size: inode.size,
            patches: Default::default(),
            memory: Lease::default(),
            budget,
            ws: Some(ws),
            failed: None,
        })
    }
}

impl Update {
    /// The version being updated.
    pub fn inode(&self) -> &Inode {
        self.old.inode()
    }

    /// The file's size as the update has it now.
    pub fn size(&self) -> u64 {
        self.size
    }

    fn check(&self) -> Result<(), CoreError> {
        match &self.failed {
            Some((kind, msg)) => Err(CoreError::Remote {
                kind: *kind,
                msg: msg.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Fail the update with `e`: every later step answers it, and nothing
    /// of the update becomes visible (a front-end that could not take one
    /// of its writes says so this way).
    pub fn abort_with(&mut self, e: CoreError) {
        self.fail(e);
    }

    /// Fail the update with `e` (nothing of it will be visible).
    fn fail(&mut self, e: CoreError) -> CoreError {
        if self.failed.is_none() {
            self.failed = Some((e.kind(), e.client_message()));
        }
        self.ws = None;
        self.patches.clear();
        self.memory = Lease::default();
        e
    }

    /// Write `data` at `offset` (any offset: over old bytes, over earlier
    /// writes, beyond the end); `lease` is the budget's bytes the payload
    /// holds already.
    pub async fn write(
        &mut self,
        offset: u64,
        data: Vec<u8>,
        lease: Lease,
    ) -> Result<(), CoreError> {
        self.check()?;
        let n = data.len();
        if let Err(e) = crate::zerofill::check(self.size, offset, "a write this far past the end") {
            return Err(self.fail(e));
        }
        if self.patches.bytes() + n > MAX_PATCH_BYTES {
            let e = CoreError::NoMemory(format!(
                "an update holds at most {} MiB of changed bytes until it is closed",
                MAX_PATCH_BYTES >> 20
            ));
            return Err(self.fail(e));
        }
        let mut lease = lease;
        if n > lease.bytes() {
            match self.budget.lease(n - lease.bytes()).await {
                Some(more) => lease.merge(more),
                None => {
                    let e = CoreError::NoMemory(
                        "insufficient memory to hold this update now: it is aborted".into(),
                    );
                    return Err(self.fail(e));
                }
            }
        }
        self.memory.merge(lease);
        self.patches.put(offset, data);
        // Rewrites of the same bytes hold them once.
        let spare = self.memory.bytes().saturating_sub(self.patches.bytes());
        if spare >= 64 << 10 {
            drop(self.memory.split(spare));
        }
        self.size = self.size.max(offset + n as u64);
        Ok(())
    }

    /// Set the size (shrink or grow; grown bytes read as zeros).
    pub fn truncate(&mut self, size: u64) -> Result<(), CoreError> {
        self.check()?;
        if let Err(e) = crate::zerofill::check(self.size, size, "this truncate") {
            return Err(self.fail(e));
        }
        self.patches.cut(size, u64::MAX);
        self.old_valid = self.old_valid.min(size);
        self.size = size;
        Ok(())
    }

    /// A checkpoint: answers the update's failure, if any (its bytes are
    /// durable only as the new version, at close).
    pub fn sync(&self) -> Result<(), CoreError> {
        self.check()
    }

    /// Up to `len` bytes at `offset` as the update has them (short only at
    /// the end): old bytes, patches over them, zeros elsewhere. The
    /// returned future holds no borrow of the update (what the patches
    /// hold of the range is copied first).
    pub fn read(
        &self,
        offset: u64,
        len: usize,
    ) -> impl std::future::Future<Output = Result<Vec<u8>, CoreError>> + Send + 'static {
        let checked = self.check();
        let end = self.size.min(offset.saturating_add(len as u64));
        let (old, old_end) = (Arc::clone(&self.old), end.min(self.old_valid));
        let patched = self.patches.copies(offset, end);
        async move {
            checked?;
            let mut out = vec![0u8; end.saturating_sub(offset) as usize];
            if offset < old_end {
                let n = (old_end - offset) as usize;
                if let Some(d) = old.fetch(offset, n).await? {
                    d.copy_to(&mut out[..n.min(d.len())]);
                }
            }
            for (a, b) in patched {
                out[a..a + b.len()].copy_from_slice(&b);
            }
            Ok(out)
        }
    }

    /// `read` on a blocking thread (the close).
    fn read_blocking(&self, offset: u64, n: usize) -> Result<Vec<u8>, CoreError> {
        let mut out = vec![0u8; n];
        let old_end = (offset + n as u64).min(self.old_valid);
        if offset < old_end {
            let k = (old_end - offset) as usize;
            let got = self.old.read_at(offset, &mut out[..k])?;
            if got != k {
                return Err(CoreError::Invalid(format!(
                    "the old version ended early at {}",
                    offset + got as u64
                )));
            }
        }
        self.patches.overlay(offset, &mut out);
        Ok(out)
    }

    /// Build the new version and make it the file (see the module
    /// comment); its inode.
    pub async fn close(mut self) -> Result<Inode, CoreError> {
        self.check()?;
        let need = self.ws.as_ref().map_or(0, |ws| ws.memory_wanted(self.size));
        if need > 0 {
            match self.budget.lease(need).await {
                Some(l) => {
                    if let Some(ws) = self.ws.as_mut() {
                        ws.hold_memory(l);
                    }
                }
                None => {
                    let e = CoreError::NoMemory(
                        "insufficient memory to write the updated file now: the update is aborted"
                            .into(),
                    );
                    return Err(self.fail(e));
                }
            }
        }
        crate::blocking(move || {
            let mut pos = 0;
            while pos < self.size {
                let n = CHUNK.min((self.size - pos) as usize);
                let bytes = self.read_blocking(pos, n)?;
                self.ws.as_mut().expect("open").write(&bytes)?;
                pos += n as u64;
            }
            self.ws.take().expect("open").close()
        })
        .await?
    }
}

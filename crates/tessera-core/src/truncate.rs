//! Truncate: a file rewritten to a new size under the rules of any write.

use crate::{Budget, Core, CoreError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tessera_meta::Inode;
use tessera_types::{Identity, NsPath};

/// Sets its flag when dropped (the future that owned it went away).
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Bytes of the memory budget a truncate holds while it runs: its 8 MiB
/// copy buffer and a group of the rewritten file (RAIN 4+2: 6 MiB). It
/// bounds how many rewrites run at once across all connections.
pub const REWRITE_MEMORY: usize = 16 << 20;

impl Core {
    /// [`Core::truncate`] from async code, its memory leased from `budget`
    /// for as long as it runs. Permission is decided before any memory is
    /// taken (a client that may not rewrite the file holds nothing of the
    /// budget, even for a moment); memory not granted in time is
    /// `NoMemory`.
    pub async fn truncate_within(
        &self,
        who: &Identity,
        path: &NsPath,
        size: u64,
        budget: &Budget,
    ) -> Result<Inode, CoreError> {
        self.may_write(who, path, true).await?;
        let Some(lease) = budget.lease(REWRITE_MEMORY).await else {
            return Err(CoreError::NoMemory(
                "insufficient memory to rewrite the file now".into(),
            ));
        };
        // The rewrite stops (and is aborted) when its caller goes away: a
        // client that left, a connection ended by a drain.
        let stop = Arc::new(AtomicBool::new(false));
        let _stop_on_drop = StopOnDrop(Arc::clone(&stop));
        let (core, who, path) = (self.clone(), who.clone(), path.clone());
        crate::blocking(move || {
            let r = core.truncate_until(&who, &path, size, &stop);
            drop(lease);
            r
        })
        .await?
    }

    /// Set a file's size (blocking): shorter keeps the first `size` bytes,
    /// longer appends zeros. The file is rewritten under the same rules as
    /// any write (permissions, quota, layout) and replaced in one step.
    pub fn truncate(&self, who: &Identity, path: &NsPath, size: u64) -> Result<Inode, CoreError> {
        self.truncate_until(who, path, size, &AtomicBool::new(false))
    }

    /// [`Core::truncate`], given up (nothing changed) once `stop` is set.
    fn truncate_until(
        &self,
        who: &Identity,
        path: &NsPath,
        size: u64,
        stop: &AtomicBool,
    ) -> Result<Inode, CoreError> {
        crate::scopes::modify(who, path)?;
        let old = self.meta.stat(who, path)?;
        if old.is_dir() {
            return Err(tessera_meta::MetaError::IsADirectory(path.display()).into());
        }
        if old.size == size {
            return Ok(old);
        }
        crate::zerofill::check(old.size, size, "this truncate")?;
        // The kept bytes are read as part of the change: the token's modify
        // scope covers it, the mode bits still have to allow reading.
        let src = if size > 0 && old.size > 0 {
            if !tessera_meta::may(who, &old, 4) {
                return Err(tessera_meta::MetaError::PermissionDenied(format!(
                    "{} may not read {}",
                    who.name,
                    path.display()
                ))
                .into());
            }
            Some(self.data().open_inode(old.clone())?)
        } else {
            None
        };
        let mut w = self.open_write(who, path, old.mode, true, size)?;
        let chunk = 8u64 << 20;
        let mut pos = 0u64;
        let mut buf = vec![0u8; chunk as usize];
        while pos < size {
            if stop.load(Ordering::Relaxed) {
                return Err(CoreError::Task(
                    "the truncate was given up: its client went away".into(),
                ));
            }
            let n = chunk.min(size - pos) as usize;
            let got = match &src {
                Some(r) if pos < old.size => r.read_at(pos, &mut buf[..n])?,
                _ => 0,
            };
            buf[got..n].fill(0);
            w.write(&buf[..n])?;
            pos += n as u64;
        }
        w.close()
    }
}

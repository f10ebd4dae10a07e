//! Whole trees in one call: make a path's missing parents; remove a
//! directory and everything under it,
//! going on past what cannot be removed (WebDAV's DELETE of a collection,
//! RFC 4918 §9.6.1: what could be removed is gone, the rest is named).
//! Each entry goes in its own namespace transaction (its quota with it).

use crate::fs::Filesystems;
use crate::{Core, CoreError};
use std::sync::Arc;
use tessera_meta::{MetaError, MetaStore, Removal};
use tessera_types::{ErrorKind, Identity, NsPath};

/// What a (recursive) remove did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RemoveReport {
    pub files: u64,
    pub dirs: u64,
    /// Entries that went into a recycle bin (a whole tree is one).
    pub recycled: u64,
}

/// What a removal that goes on past failures did.
#[derive(Debug, Default)]
pub struct TreeRemoval {
    pub removed: RemoveReport,
    /// The entries that stayed and why (not their directories, which stay
    /// because they are not empty).
    pub failed: Vec<(NsPath, CoreError)>,
}

impl Core {
    /// Make the missing parents of `path` (`mkdir -p` of its directory,
    /// mode 0755), as a PUT and an XRootD open with `kXR_mkpath` do; a
    /// parent that appears meanwhile is no error.
    pub async fn make_parents(&self, who: &Identity, path: &NsPath) -> Result<(), CoreError> {
        let Some((parent, _)) = path.split_last() else {
            return Ok(());
        };
        match self.stat(who, parent.clone()).await {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() != ErrorKind::NotFound => return Err(e),
            Err(_) => {}
        }
        match self.mkdir(who, parent, 0o755, true).await {
            Err(e) if e.kind() != ErrorKind::AlreadyExists => Err(e),
            _ => Ok(()),
        }
    }

    /// Remove a file, an empty directory, or with `recursive` a whole tree
    /// (into the recycle bin that covers it, whole when it can; else depth
    /// first, stopping at the first error and leaving the rest).
    pub async fn remove(
        &self,
        who: &Identity,
        path: NsPath,
        recursive: bool,
    ) -> Result<crate::RemoveReport, CoreError> {
        let w = who.clone();
        let (fs, kick) = (Arc::clone(&self.fs), self.recycle_kick());
        let metrics = Arc::clone(&self.metrics);
        self.run("rm", who, path.display(), move |m| {
            crate::scopes::modify(&w, &path)?;
            let mut out = crate::TreeRemoval::default();
            let mut d = crate::tree::Deleter {
                m,
                fs: &fs,
                who: &w,
                out: &mut out,
                keep_going: false,
                whole: true,
                kick: &kick,
                metrics: &metrics,
            };
            d.delete(&path, recursive)?;
            Ok(out.removed)
        })
        .await
    }

    /// Remove `path`: a file, or a directory with everything under it
    /// (into the recycle bin that covers it, as one entry when it can go
    /// whole). Goes on past entries that cannot be removed (permissions,
    /// ACLs) and names them in `failed`; a directory left non-empty by
    /// them stays without being named. `Err` only when nothing could be
    /// tried (the path is missing, the token does not cover it).
    pub async fn remove_all(&self, who: &Identity, path: NsPath) -> Result<TreeRemoval, CoreError> {
        let w = who.clone();
        let (fs, kick) = (Arc::clone(&self.fs), self.recycle_kick());
        let metrics = Arc::clone(&self.metrics);
        let desc = path.display();
        self.run("rm", who, desc, move |m| {
            crate::scopes::modify(&w, &path)?;
            let mut out = TreeRemoval::default();
            let mut d = Deleter {
                m,
                fs: &fs,
                who: &w,
                out: &mut out,
                keep_going: true,
                whole: true,
                kick: &kick,
                metrics: &metrics,
            };
            match d.delete(&path, true) {
                Ok(_) => {}
                Err(e) if out.removed.files + out.removed.dirs == 0 => return Err(e),
                Err(e) => out.failed.push((path.clone(), e.into())),
            }
            Ok(out)
        })
        .await
    }
}

/// One removal's walk: what it removed and, going on past failures
/// (`keep_going`), what stayed.
pub(crate) struct Deleter<'a> {
    pub m: &'a MetaStore,
    pub fs: &'a Filesystems,
    pub who: &'a Identity,
    pub out: &'a mut TreeRemoval,
    pub keep_going: bool,
    /// Whether a tree may still go into a bin as one entry.
    pub whole: bool,
    /// Wakes the purge when a bin passed its volume cap.
    pub kick: &'a tokio::sync::Notify,
    pub metrics: &'a tessera_obs::Metrics,
}

impl Deleter<'_> {
    /// Delete `path` (with `tree`, everything under it): into its bin or
    /// for good, whole when it can, else what is under it first. Whether
    /// it went.
    pub(crate) fn delete(&mut self, path: &NsPath, tree: bool) -> Result<bool, MetaError> {
        match self.m.remove_entry_as(path, self.who, tree, self.whole)? {
            Removal::Gone(i, versions) => self.gone(&i, &versions),
            Removal::Binned { entry, over_cap } => self.binned(&entry, over_cap),
            Removal::NotWhole(_) => {
                // Below a tree that could not go whole, entry by entry:
                // no subtree is walked again under the writer lock.
                self.whole = false;
                if !self.sweep(path)? {
                    return Ok(false);
                }
                match self.m.remove_entry(path, self.who, false)? {
                    Removal::Gone(i, versions) => self.gone(&i, &versions),
                    Removal::Binned { entry, over_cap } => self.binned(&entry, over_cap),
                    Removal::NotWhole(why) => {
                        return Err(MetaError::NotEmpty(format!("{}: {why}", path.display())))
                    }
                }
            }
        }
        Ok(true)
    }

    fn gone(&mut self, i: &tessera_meta::Inode, versions: &[tessera_meta::Inode]) {
        for v in versions {
            crate::ledger::drop_stripes_of(self.fs, v);
        }
        if i.is_dir() {
            self.out.removed.dirs += 1;
        } else {
            crate::ledger::drop_stripes_of(self.fs, i);
            self.out.removed.files += 1;
        }
    }

    fn binned(&mut self, e: &tessera_meta::RecycleEntry, over_cap: bool) {
        if e.kind == tessera_meta::EntryKind::Directory {
            self.out.removed.dirs += 1;
        } else {
            self.out.removed.files += 1;
        }
        self.out.removed.recycled += 1;
        self.metrics.recycle.moved.inc();
        if over_cap {
            self.kick.notify_one();
        }
    }

    /// Remove what is under `dir`, depth first; whether all of it went.
    /// With `keep_going` what cannot be removed is named in `out.failed`
    /// and the walk goes on; without, the first failure ends it (the rest
    /// stays).
    fn sweep(&mut self, dir: &NsPath) -> Result<bool, MetaError> {
        let mut clean = true;
        let mut after: Option<Vec<u8>> = None;
        loop {
            let page = match self.m.list(self.who, dir, after.as_deref(), 512) {
                Ok(p) => p,
                Err(e) if !self.keep_going => return Err(e),
                Err(e) => {
                    self.out.failed.push((dir.clone(), e.into()));
                    return Ok(false);
                }
            };
            let Some(last) = page.last() else {
                return Ok(clean);
            };
            let next = last.name.clone();
            for child in page {
                let p = dir.join(&child.name)?;
                match self.delete(&p, true) {
                    Ok(true) => {}
                    Ok(false) => clean = false,
                    Err(e) if !self.keep_going => return Err(e),
                    Err(e) => {
                        clean = false;
                        self.out.failed.push((p, e.into()));
                    }
                }
            }
            after = Some(next);
        }
    }
}

//! Whole trees in one call: make a path's missing parents; remove a
//! directory and everything under it,
//! going on past what cannot be removed (WebDAV's DELETE of a collection,
//! RFC 4918 §9.6.1: what could be removed is gone, the rest is named).
//! Each entry goes in its own namespace transaction (its quota with it).

use crate::fs::Filesystems;
use crate::service::RemoveReport;
use crate::{Core, CoreError};
use std::sync::Arc;
use tessera_meta::{MetaError, MetaStore};
use tessera_types::{ErrorKind, Identity, NsPath};

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

    /// Remove `path`: a file, or a directory with everything under it.
    /// Goes on past entries that cannot be removed (permissions, ACLs) and
    /// names them in `failed`; a directory left non-empty by them stays
    /// without being named. `Err` only when nothing could be tried (the
    /// path is missing, the token does not cover it).
    pub async fn remove_all(&self, who: &Identity, path: NsPath) -> Result<TreeRemoval, CoreError> {
        let w = who.clone();
        let fs = Arc::clone(&self.fs);
        let desc = path.display();
        self.run("rm", who, desc, move |m| {
            crate::scopes::modify(&w, &path)?;
            let top = m.stat(&w, &path)?;
            let mut out = TreeRemoval::default();
            if !top.is_dir() {
                let gone = m.unlink(&path, &w)?;
                crate::ledger::drop_stripes_of(&fs, &gone);
                out.removed.files += 1;
                return Ok(out);
            }
            if sweep(m, &fs, &path, &w, &mut out, true)? {
                match m.rmdir(&path, &w) {
                    Ok(_) => out.removed.dirs += 1,
                    Err(e) if out.removed.files + out.removed.dirs == 0 => return Err(e),
                    Err(e) => out.failed.push((path.clone(), e.into())),
                }
            }
            Ok(out)
        })
        .await
    }
}

/// Remove what is under `dir`, depth first; whether all of it went. With
/// `keep_going` what cannot be removed is named in `out.failed` and the
/// walk goes on; without, the first failure ends it (the rest stays).
pub(crate) fn sweep(
    m: &MetaStore,
    fs: &Filesystems,
    dir: &NsPath,
    who: &Identity,
    out: &mut TreeRemoval,
    keep_going: bool,
) -> Result<bool, MetaError> {
    let mut clean = true;
    let mut after: Option<Vec<u8>> = None;
    loop {
        let page = match m.list(who, dir, after.as_deref(), 512) {
            Ok(p) => p,
            Err(e) if !keep_going => return Err(e),
            Err(e) => {
                out.failed.push((dir.clone(), e.into()));
                return Ok(false);
            }
        };
        let Some(last) = page.last() else {
            return Ok(clean);
        };
        let next = last.name.clone();
        for child in page {
            let p = dir.join(&child.name)?;
            let r = if child.is_dir() {
                if !sweep(m, fs, &p, who, out, keep_going)? {
                    clean = false;
                    continue;
                }
                m.rmdir(&p, who).map(|_| out.removed.dirs += 1)
            } else {
                m.unlink(&p, who).map(|gone| {
                    crate::ledger::drop_stripes_of(fs, &gone);
                    out.removed.files += 1;
                })
            };
            match r {
                Ok(()) => {}
                Err(e) if !keep_going => return Err(e),
                Err(e) => {
                    clean = false;
                    out.failed.push((p, e.into()));
                }
            }
        }
        after = Some(next);
    }
}

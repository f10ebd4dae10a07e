//! Planning a write: the namespace's decision and reservation, the
//! layout from the directory, the filesystems by placement; and opening
//! the write session over the plan. A conditional write (an HTTP PUT with
//! `If-Match`, `If-Unmodified-Since`, ...) replaces only the file its
//! condition was evaluated on, at the open and again at the commit, so a
//! file committed meanwhile is never overwritten (no lost update).

use crate::{Core, CoreError, WritePlan, WriteSession};
use tessera_data::{Layout, Placement};
use tessera_meta::{MetaStore, Overwrite};
use tessera_types::{Identity, NsPath};

/// The layout and space for new files in a directory, from its
/// `sys.forced.*` attributes (EOS names).
pub(crate) fn layout_of(meta: &MetaStore, dir: u64) -> Result<(Layout, String), CoreError> {
    crate::attrs::layout_from(&meta.xattr_list_of(dir)?)
}

/// What a conditional write found when its condition was evaluated: the
/// file there (its inode number), or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    File(u64),
    Nothing,
}

impl Core {
    /// Reserve and place a write (blocking): checks the namespace and
    /// permissions, reserves quota, picks the layout from the directory's
    /// attributes and the filesystems by placement. Nothing is visible
    /// until the write is committed through [`Core::ledger`].
    pub fn plan_write(
        &self,
        who: &Identity,
        path: &NsPath,
        mode: u32,
        overwrite: bool,
        size_hint: u64,
    ) -> Result<WritePlan, CoreError> {
        if path.split_last().is_none() {
            return Err(CoreError::Invalid("cannot write /".into()));
        }
        let overwrite = crate::scopes::write(who, path, overwrite)?;
        self.plan_with(who, path, mode, overwrite, size_hint)
    }

    fn plan_with(
        &self,
        who: &Identity,
        path: &NsPath,
        mode: u32,
        overwrite: Overwrite,
        size_hint: u64,
    ) -> Result<WritePlan, CoreError> {
        let resv = self
            .meta
            .begin_write(path, who, mode, overwrite, size_hint)?;
        let fail = |e: CoreError| {
            let _ = self.meta.abort_write(resv.id);
            e
        };
        let (layout, space) = layout_of(&self.meta, resv.parent).map_err(fail)?;
        let candidates = self.fs.candidates(&space);
        let fsids =
            tessera_data::place(&layout, &candidates, resv.ino).map_err(|e| fail(e.into()))?;
        Ok(WritePlan {
            resv_id: resv.id,
            fid: resv.ino,
            placement: Placement { layout, fsids },
        })
    }

    /// Open `path` for writing (blocking): [`Core::plan_write`], then the
    /// stripes are opened; nothing is visible until `close`.
    pub fn open_write(
        &self,
        who: &Identity,
        path: &NsPath,
        mode: u32,
        overwrite: bool,
        size_hint: u64,
    ) -> Result<WriteSession, CoreError> {
        self.open_planned(who, path, size_hint, || {
            self.plan_write(who, path, mode, overwrite, size_hint)
        })
    }

    /// [`Core::open_write`] for a write whose condition was evaluated on
    /// `found`: it replaces only that file (or creates only, when there
    /// was none); another file there at the open or at the commit refuses
    /// it (`Busy`).
    pub fn open_write_found(
        &self,
        who: &Identity,
        path: &NsPath,
        mode: u32,
        found: Found,
        size_hint: u64,
    ) -> Result<WriteSession, CoreError> {
        self.open_planned(who, path, size_hint, || {
            if path.split_last().is_none() {
                return Err(CoreError::Invalid("cannot write /".into()));
            }
            let overwrite = match (found, crate::scopes::write(who, path, true)?) {
                (_, Overwrite::NotPermitted) => Overwrite::NotPermitted,
                (Found::File(ino), _) => Overwrite::Only(ino),
                (Found::Nothing, _) => Overwrite::No,
            };
            self.plan_with(who, path, mode, overwrite, size_hint)
        })
    }

    /// The write session of what `plan` reserved, its open logged.
    fn open_planned(
        &self,
        who: &Identity,
        path: &NsPath,
        size_hint: u64,
        plan: impl FnOnce() -> Result<WritePlan, CoreError>,
    ) -> Result<WriteSession, CoreError> {
        let start = std::time::Instant::now();
        let data = self.data();
        let mut r =
            plan().and_then(|plan| data.start_write(plan, self.ledger(), path.clone(), size_hint));
        self.finish("open_write", who, &path.display(), start, &r);
        if let (Ok(ws), Some(l)) = (&mut r, data.session_log(who, path, start)) {
            ws.set_log(l);
        }
        r
    }
}

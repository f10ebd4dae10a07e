//! Which storage a filesystem is: registering the same storage twice is
//! refused (its root's device and inode, canonical path or CephFS
//! directory, or a marker that already names a registered filesystem),
//! and a root whose marker names another filesystem is not served as this
//! one (`check_identity`: another disk mounted at the path, a copy).

use crate::fs::Filesystems;
use crate::{Core, CoreError};
use tessera_backend::{Backend, Marker};
use tessera_meta::FsRecord;

/// Whether `b`'s root is filesystem `rec` by its marker: `Err` says why
/// not. Filesystems added before markers named theirs (no uuid) pass.
pub(crate) fn check_identity(rec: &FsRecord, b: &dyn Backend) -> Result<(), String> {
    if rec.uuid.is_empty() {
        return Ok(());
    }
    let text = b
        .read_marker()
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{} has no marker: not mounted?", b.describe()))?;
    match Marker::parse(&text) {
        Some(m) if m.fs == rec.id && m.uuid == rec.uuid => Ok(()),
        Some(m) => Err(format!(
            "the marker at {} names filesystem {} (uuid {}), not {} (uuid {}): other storage \
             is mounted there",
            b.describe(),
            m.fs,
            m.uuid,
            rec.id,
            rec.uuid
        )),
        None => Err(format!(
            "the marker at {} names no filesystem: not the storage registered as {}",
            b.describe(),
            rec.id
        )),
    }
}

impl Filesystems {
    /// The registered filesystem whose storage `b` already is, if any.
    fn registered_as(&self, locator: &str, b: &dyn Backend) -> Result<Option<FsRecord>, CoreError> {
        let root = b.root_id()?;
        let marker = b.read_marker()?.as_deref().and_then(Marker::parse);
        for (rec, other) in self.opened() {
            if rec.locator == locator {
                return Ok(Some(rec));
            }
            if marker.as_ref().is_some_and(|m| m.fs == rec.id) {
                return Ok(Some(rec));
            }
            if let Some(o) = other {
                if o.root_id().is_ok_and(|r| r.same_as(&root)) {
                    return Ok(Some(rec));
                }
            }
        }
        Ok(None)
    }
}

impl Core {
    /// How many files, and stripes, the namespace places on filesystem
    /// `id` (a walk of every file: an admin operation's check).
    pub(crate) fn stripes_on(&self, id: u32) -> Result<(u64, u64), CoreError> {
        let (mut files, mut stripes) = (0, 0);
        self.for_each_file(|f| {
            let n = tessera_data::Placement::decode(&f.layout)
                .map(|p| p.fsids.iter().filter(|&&x| x == id).count() as u64)
                .unwrap_or(0);
            if n > 0 {
                files += 1;
                stripes += n;
            }
        })?;
        Ok((files, stripes))
    }

    /// Register a filesystem. Its root must exist and be a mount point or
    /// carry a marker (`create`: a dev or test folder, or a directory in
    /// a mount, made if missing), and must not be storage that is
    /// registered already; its marker then names the new filesystem.
    pub async fn fs_add(
        &self,
        who: &tessera_types::Identity,
        rec: FsRecord,
        create: bool,
    ) -> Result<FsRecord, CoreError> {
        crate::fs::admin(who)?;
        let core = self.clone();
        let (rec, backend) = crate::blocking(move || core.fs_add_blocking(rec, create)).await??;
        self.fs.insert(rec.clone(), backend);
        // A new filesystem: the balancer may have work.
        self.balance_kick();
        Ok(rec)
    }

    fn fs_add_blocking(
        &self,
        mut rec: FsRecord,
        create: bool,
    ) -> Result<(FsRecord, std::sync::Arc<dyn Backend>), CoreError> {
        let backend = tessera_backend::prepare_locator(&rec.locator, create)?;
        if let Some(other) = self.fs.registered_as(&rec.locator, backend.as_ref())? {
            return Err(tessera_meta::MetaError::AlreadyExists(format!(
                "{} is already registered as filesystem {} ({}, {}): the same storage twice \
                 would have each one's stripes taken for the other's orphans",
                rec.locator, other.id, other.label, other.locator
            ))
            .into());
        }
        if let Some(text) = backend.read_marker()? {
            if !Marker::is_marker(&text) {
                return Err(CoreError::Invalid(format!(
                    "{} has a {} that is not Tessera's",
                    rec.locator,
                    tessera_backend::MARKER
                )));
            }
        }
        rec.uuid = tessera_backend::new_uuid();
        let rec = self.meta.fs_add(rec)?;
        let marker = Marker {
            fs: rec.id,
            uuid: rec.uuid.clone(),
        };
        // The marker names it, and the storage answers: else it was never
        // added (its id stays used).
        if let Err(e) = backend
            .write_marker(&marker.render())
            .and_then(|()| backend.capacity().map(|_| ()))
        {
            let _ = self.meta.fs_forget(rec.id);
            return Err(e.into());
        }
        Ok((rec, backend))
    }
}

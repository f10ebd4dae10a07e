//! Stripe storage backends.
//!
//! A *filesystem* (as in EOS) is one place stripes can go. A [`Backend`]
//! stores named stripe files on it: written under a temporary name, made
//! durable and renamed into place by [`StripeWrite::seal`]. The trait is
//! blocking (local and CephFS I/O are); callers run it off their async
//! runtime. Backends: [`FolderBackend`] (a directory: a CephFS mount, or a
//! local folder in dev mode).

mod bounded;
#[cfg(feature = "cephfs")]
mod cephfs;
#[cfg(feature = "cephfs")]
mod cluster;
mod dirsync;
mod folder;
mod folder_stripe;
#[cfg(feature = "cephfs")]
mod fusemount;
#[cfg(feature = "cephfs")]
pub mod leader;
#[cfg(feature = "cephfs")]
pub mod lease;
mod marker;
mod name;

pub use bounded::{deadline, Bounded, Deadline};
#[cfg(feature = "cephfs")]
pub use cephfs::CephFsBackend;
#[cfg(feature = "cephfs")]
pub use cluster::{CephCluster, ClusterStatus};
pub use folder::FolderBackend;
#[cfg(feature = "cephfs")]
pub use fusemount::{FuseMount, FuseSpec};
#[cfg(feature = "cephfs")]
pub use leader::{Leadership, Role};
#[cfg(feature = "cephfs")]
pub use lease::{RadosLease, Taken};
pub use marker::{new_uuid, random_u64, Marker, RootId, MARKER};
pub use name::StripeName;

use tessera_types::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error("stripe {0} not found")]
    NotFound(String),
    #[error("stripe {0} already exists")]
    Exists(String),
    #[error("backend unavailable: {0}")]
    Unavailable(String),
    /// A call did not finish within its deadline (see [`Bounded`]).
    #[error("backend unresponsive: {0}")]
    TimedOut(String),
    #[error("invalid locator: {0}")]
    BadLocator(String),
    #[error("I/O error on {what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

impl BackendError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            BackendError::NotFound(_) => ErrorKind::NotFound,
            BackendError::Exists(_) => ErrorKind::AlreadyExists,
            BackendError::Unavailable(_) | BackendError::TimedOut(_) => ErrorKind::Unavailable,
            BackendError::BadLocator(_) => ErrorKind::InvalidArgument,
            BackendError::Io { source, .. } => match source.raw_os_error() {
                Some(28) => ErrorKind::NoSpace,
                Some(122) => ErrorKind::QuotaExceeded,
                _ => ErrorKind::Io,
            },
        }
    }

    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> BackendError {
        let what = what.into();
        if source.kind() == std::io::ErrorKind::NotFound {
            return BackendError::NotFound(what);
        }
        if source.kind() == std::io::ErrorKind::AlreadyExists {
            return BackendError::Exists(what);
        }
        BackendError::Io { what, source }
    }
}

/// Where a filesystem is, parsed from its locator string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Locator {
    /// `folder:/path`: a CephFS mount or a local folder.
    Folder(String),
    /// `cephfs:<ceph.conf>:<file system name>:<directory>`: libcephfs, no mount.
    CephFs {
        conf: String,
        fs: String,
        dir: String,
    },
}

impl Locator {
    pub fn parse(locator: &str) -> Result<Locator, BackendError> {
        let bad = || {
            BackendError::BadLocator(format!(
                "{locator:?} (expected folder:/absolute/path or cephfs:/path/ceph.conf:fsname:/directory)"
            ))
        };
        match locator.split_once(':') {
            Some(("folder", path)) if path.starts_with('/') => Ok(Locator::Folder(path.into())),
            Some(("cephfs", rest)) => {
                let mut it = rest.splitn(3, ':');
                match (it.next(), it.next(), it.next()) {
                    (Some(conf), Some(fs), Some(dir))
                        if conf.starts_with('/') && !fs.is_empty() =>
                    {
                        Ok(Locator::CephFs {
                            conf: conf.into(),
                            fs: fs.into(),
                            dir: dir.into(),
                        })
                    }
                    _ => Err(bad()),
                }
            }
            _ => Err(bad()),
        }
    }
}

/// Open the backend a locator names (see [`Locator`]): a registered
/// filesystem, which may be down now (opening checks nothing).
pub fn open_locator(locator: &str) -> Result<std::sync::Arc<dyn Backend>, BackendError> {
    match Locator::parse(locator)? {
        Locator::Folder(path) => Ok(std::sync::Arc::new(FolderBackend::open(path))),
        #[cfg(feature = "cephfs")]
        Locator::CephFs { conf, fs, dir } => Ok(std::sync::Arc::new(CephFsBackend::connect(
            &conf, &fs, &dir, false,
        )?)),
        #[cfg(not(feature = "cephfs"))]
        Locator::CephFs { .. } => Err(BackendError::Unavailable(
            "this build has no CephFS client (feature cephfs)".into(),
        )),
    }
}

/// Make the directory a locator names a filesystem without an identity
/// (made if missing, a format-1 marker): for tests and tools, as
/// [`FolderBackend::new`]; a registered filesystem's marker names it.
pub fn format_locator(locator: &str) -> Result<std::sync::Arc<dyn Backend>, BackendError> {
    let b = prepare_locator(locator, true)?;
    if b.read_marker()?.is_none() {
        b.write_marker("tessera stripe folder, format 1\n")?;
    }
    Ok(b)
}

/// Open the backend of a filesystem about to be registered. Its root must
/// exist and be a mount point or carry a marker; with `create`, a missing
/// or plain directory is made one (dev and test folders, a directory
/// inside a mount). Nothing is written here but the directory: the caller
/// writes the marker once the filesystem has its id.
pub fn prepare_locator(
    locator: &str,
    create: bool,
) -> Result<std::sync::Arc<dyn Backend>, BackendError> {
    match Locator::parse(locator)? {
        Locator::Folder(path) => Ok(std::sync::Arc::new(FolderBackend::prepare(path, create)?)),
        #[cfg(feature = "cephfs")]
        Locator::CephFs { conf, fs, dir } => {
            let b = CephFsBackend::connect(&conf, &fs, &dir, false)?;
            b.prepare_root(create)?;
            Ok(std::sync::Arc::new(b))
        }
        #[cfg(not(feature = "cephfs"))]
        Locator::CephFs { .. } => Err(BackendError::Unavailable(
            "this build has no CephFS client (feature cephfs)".into(),
        )),
    }
}

/// Turn the files found in the fan-out directories of a filesystem
/// (`(file name, bytes, last modified)`) into the stripe listing, in
/// stripe order.
pub(crate) fn listing(
    files: impl IntoIterator<Item = (String, u64, Option<std::time::SystemTime>)>,
) -> Vec<ListedStripe> {
    let mut out: Vec<ListedStripe> = files
        .into_iter()
        .filter_map(|(f, bytes, modified)| {
            let (name, temp_of_write) = StripeName::parse(&f)?;
            Some(ListedStripe {
                name,
                temp_of_write,
                bytes,
                modified,
            })
        })
        .collect();
    out.sort_by_key(|s| (s.name, s.temp_of_write));
    out
}

/// Is `name` a fan-out directory (`StripeName::dir`: 12 hex digits)?
pub(crate) fn is_fanout_dir(name: &str) -> bool {
    name.len() == 12 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Space on a filesystem, from statfs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Capacity {
    pub total_bytes: u64,
    pub free_bytes: u64,
}

/// A stripe found by listing a backend (for fsck).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedStripe {
    pub name: StripeName,
    /// Set for a temporary (unsealed) stripe: the write id in its name.
    pub temp_of_write: Option<u64>,
    pub bytes: u64,
    /// When it was last written (`None`: the backend could not say).
    pub modified: Option<std::time::SystemTime>,
}

/// One place stripes can go.
pub trait Backend: Send + Sync {
    /// Create a new stripe under a temporary name for write `write_id`.
    fn create(
        &self,
        name: &StripeName,
        write_id: u64,
    ) -> Result<Box<dyn StripeWrite>, BackendError>;
    /// Create stripe `name` of a file id no stripe was ever written for
    /// (a new file: ids are never reused), for write `write_id`. Nothing
    /// by its final name can exist, so a backend may write it there at
    /// once and save the rename at the seal; a stripe of a write that
    /// never commits is then an orphan under its final name (fsck knows
    /// the writes in progress by file id). By default, as `create`.
    fn create_new(
        &self,
        name: &StripeName,
        write_id: u64,
    ) -> Result<Box<dyn StripeWrite>, BackendError> {
        self.create(name, write_id)
    }
    /// Open a sealed stripe for reading.
    fn open(&self, name: &StripeName) -> Result<Box<dyn StripeRead>, BackendError>;
    /// Open a sealed stripe only if that cannot wait for a disk or a
    /// network (a local file system with the whole path in the kernel's
    /// caches): `None` otherwise, or on any doubt; then `open` is the way.
    /// For callers on an async runtime's threads. By default never tries.
    fn open_cached(&self, name: &StripeName) -> Option<Box<dyn StripeRead>> {
        let _ = name;
        None
    }
    /// Remove a sealed stripe (or, with `write_id`, a temporary one).
    fn remove(&self, name: &StripeName, write_id: Option<u64>) -> Result<(), BackendError>;
    /// Every stripe and temporary stripe on the backend.
    fn list(&self) -> Result<Vec<ListedStripe>, BackendError>;
    fn capacity(&self) -> Result<Capacity, BackendError>;
    /// A short description for logs (`folder:/mnt/cephfs1/tessera`).
    fn describe(&self) -> String;
    /// The text of the root's marker (`None`: there is none).
    fn read_marker(&self) -> Result<Option<String>, BackendError>;
    /// Write the root's marker (whole, under a temporary name, renamed).
    fn write_marker(&self, text: &str) -> Result<(), BackendError>;
    /// What storage the root is (see [`RootId`]).
    fn root_id(&self) -> Result<RootId, BackendError>;
    /// Whether calls can hang on the network (CephFS, a FUSE or NFS
    /// mount): such a backend is used through [`Bounded`].
    fn remote(&self) -> bool {
        false
    }
}

/// A stripe being written.
pub trait StripeWrite: Send {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), BackendError>;
    /// Write `parts` one after another from `offset` (a backend that can
    /// does it in one call).
    fn write_parts_at(&mut self, mut offset: u64, parts: &[&[u8]]) -> Result<(), BackendError> {
        for p in parts {
            self.write_at(offset, p)?;
            offset += p.len() as u64;
        }
        Ok(())
    }
    /// The stripe will be sealed with `seal_buffered`: nothing needs to
    /// reach the disk before that.
    fn buffered(&mut self) {}
    /// Make the stripe durable and give it its final name.
    fn seal(self: Box<Self>) -> Result<(), BackendError>;
    /// Give the stripe its final name without waiting for the disk (the
    /// `buffered` durability: survives a process crash, not a power loss).
    fn seal_buffered(self: Box<Self>) -> Result<(), BackendError> {
        self.seal()
    }
    /// Remove the temporary stripe.
    fn abort(self: Box<Self>);
}

/// A sealed stripe.
pub trait StripeRead: Send + Sync {
    /// Read up to `buf.len()` bytes at `offset`; short only at the end.
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, BackendError>;
    /// Read as `read_at` does, only from memory (the page cache):
    /// `None` when any of it would have to come from storage, or on any
    /// doubt (then `read_at` is the way). By default never tries.
    fn read_cached(&self, offset: u64, buf: &mut [u8]) -> Option<usize> {
        let _ = (offset, buf);
        None
    }
    fn len(&self) -> Result<u64, BackendError>;
    fn is_empty(&self) -> Result<bool, BackendError> {
        Ok(self.len()? == 0)
    }
}

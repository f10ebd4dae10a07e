//! EOS's `sys.stall.unavailable=<seconds>` on a directory: when a file's
//! data cannot be read now (fewer of its stripes sit on filesystems that
//! can serve them than a read needs: filesystems off, or whose backend did
//! not open), clients opening it are told to come back after that many
//! seconds (XRootD `kXR_wait`, HTTP 503 with `Retry-After`) instead of
//! failing: a disk server or a Ceph cluster being restarted then delays
//! jobs rather than failing them. Without the attribute nothing changes.

use crate::{Core, CoreError, ReadSession};
use tessera_data::{LayoutKind, Placement};
use tessera_meta::Inode;
use tessera_types::{Identity, NsPath};

/// The attribute (EOS's name).
pub const STALL_ATTR: &str = "sys.stall.unavailable";
/// Longest wait handed out, whatever the attribute says.
const MAX_STALL_S: u32 = 3600;

/// A client told to come back after `secs`, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stall {
    pub secs: u32,
    pub why: String,
}

/// An open for reading: the file, or a stall.
#[allow(clippy::large_enum_variant)] // returned once per open, matched at once
pub enum ReadOpen {
    File(ReadSession),
    Stall(Stall),
}

impl Core {
    /// Open a file for reading (blocking), unless its data cannot be read
    /// now and its directory asks for stalls: then no session is opened
    /// and the client is to come back later.
    pub fn open_read_or_stall(&self, who: &Identity, path: &NsPath) -> Result<ReadOpen, CoreError> {
        let start = std::time::Instant::now();
        self.open_readable(who, path, start, self.readable_file(who, path))
    }

    /// `open_read_or_stall` from memory only, so that an async caller
    /// can do it without leaving its thread (opening a session reads no
    /// data): `None` when the namespace has to be read from storage.
    pub fn open_read_or_stall_nowait(
        &self,
        who: &Identity,
        path: &NsPath,
    ) -> Result<Option<ReadOpen>, CoreError> {
        let start = std::time::Instant::now();
        let inode = match self.readable_file_nowait(who, path) {
            Ok(None) => return Ok(None),
            Ok(Some(i)) => Ok(i),
            Err(e) => Err(e),
        };
        self.open_readable(who, path, start, inode).map(Some)
    }

    /// The open of a file found readable (or not) since `start`.
    fn open_readable(
        &self,
        who: &Identity,
        path: &NsPath,
        start: std::time::Instant,
        inode: Result<Inode, CoreError>,
    ) -> Result<ReadOpen, CoreError> {
        let inode = match inode {
            Ok(i) => i,
            Err(e) => {
                return self
                    .log_open_read(who, path, start, Err(e))
                    .map(ReadOpen::File)
            }
        };
        if let Some(s) = self.stall_unavailable(&inode, path) {
            self.finish(
                "open_read",
                who,
                &path.display(),
                start,
                &Ok::<(), CoreError>(()),
            );
            return Ok(ReadOpen::Stall(s));
        }
        let rs = self.data().open_inode(inode);
        self.log_open_read(who, path, start, rs).map(ReadOpen::File)
    }

    /// How long a client opening `inode` (at `path`) should wait and
    /// retry, when its data cannot be read now and its directory asks
    /// for stalls.
    pub fn stall_unavailable(&self, inode: &Inode, path: &NsPath) -> Option<Stall> {
        if inode.layout.is_empty() {
            return None; // no stripes: nothing to wait for
        }
        let p = Placement::decode(&inode.layout).ok()?;
        let needed = match p.layout.kind {
            LayoutKind::Rain => usize::from(p.layout.k),
            _ => 1,
        };
        let readable = p
            .fsids
            .iter()
            .filter(|id| self.fs.backend(**id).is_some())
            .count();
        if readable >= needed {
            return None;
        }
        let attrs = self.meta.xattr_list_of(inode.parent).ok()?;
        let (_, v) = attrs.iter().find(|(n, _)| n == STALL_ATTR.as_bytes())?;
        let secs: u32 = std::str::from_utf8(v).ok()?.trim().parse().ok()?;
        let secs = (secs > 0).then_some(secs.min(MAX_STALL_S))?;
        Some(Stall {
            secs,
            why: format!(
                "{} is unavailable now (filesystems down): retry in {secs} s",
                path.display()
            ),
        })
    }
}

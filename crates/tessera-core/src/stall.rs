//! EOS's `sys.stall.unavailable=<seconds>` on a directory: when a file's
//! data cannot be read now (fewer of its stripes sit on filesystems that
//! can serve them than a read needs: filesystems off, or whose backend did
//! not open), clients opening it are told to come back after that many
//! seconds (XRootD `kXR_wait`, HTTP 503 with `Retry-After`) instead of
//! failing: a disk server or a Ceph cluster being restarted then delays
//! jobs rather than failing them. Without the attribute nothing changes.

use crate::Core;
use tessera_data::{LayoutKind, Placement};
use tessera_meta::Inode;

/// The attribute (EOS's name).
pub const STALL_ATTR: &str = "sys.stall.unavailable";
/// Longest wait handed out, whatever the attribute says.
const MAX_STALL_S: u32 = 3600;

impl Core {
    /// Seconds a client opening `inode` should wait and retry, when its
    /// data cannot be read now and its directory asks for stalls.
    pub fn stall_unavailable(&self, inode: &Inode) -> Option<u32> {
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
        (secs > 0).then_some(secs.min(MAX_STALL_S))
    }
}

//! The stat string of `kXR_stat`, `kXR_open` (retstat) and `kXR_dirlist`
//! with `kXR_dstat`: `"<id> <size> <flags> <mtime> <ctime> <atime>
//! <mode> <owner> <group>"` (size before flags; permission bits in octal,
//! 4 digits, as the reference server prints them).

use crate::proto::sflags;
use tessera_core::Inode;
use tessera_types::Identity;

pub fn stat_string(i: &Inode, who: &Identity) -> String {
    let mut flags = 0;
    if i.is_dir() {
        flags |= sflags::IS_DIR | sflags::XSET;
    } else if i.mode & 0o111 != 0 {
        flags |= sflags::XSET;
    }
    if tessera_core::may(who, i, 4) {
        flags |= sflags::READABLE;
    }
    if tessera_core::may(who, i, 2) {
        flags |= sflags::WRITABLE;
    }
    let secs = |ns: i64| ns.div_euclid(1_000_000_000);
    let size = if i.is_dir() { 4096 } else { i.size };
    format!(
        "{} {} {} {} {} {} {:04o} {} {}",
        i.ino,
        size,
        flags,
        secs(i.mtime_ns),
        secs(i.ctime_ns),
        secs(i.mtime_ns),
        i.mode & 0o7777,
        i.uid,
        i.gid
    )
}

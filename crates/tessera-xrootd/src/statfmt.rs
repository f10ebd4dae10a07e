//! The stat string of `kXR_stat`, `kXR_open` (retstat) and `kXR_dirlist`
//! with `kXR_dstat`: `"<id> <size> <flags> <mtime> <ctime> <atime>
//! <mode> <owner> <group>"` (size before flags; permission bits in octal,
//! 4 digits, as the reference server prints them; owner and group by
//! name where the local password and group files have one).

use crate::names::Names;
use crate::proto::sflags;
use tessera_core::Inode;
use tessera_types::Identity;

pub fn stat_string(i: &Inode, who: &Identity, names: &Names) -> String {
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
    let (m, c) = (secs(i.mtime_ns), secs(i.ctime_ns));
    fields(i.ino, size, flags, [m, c, m], i.mode, (i.uid, i.gid), names)
}

/// The stat string from its fields (`times` are mtime, ctime, atime in
/// seconds). Built by hand: this runs for every stat, open and dstat
/// entry, and `format!` costs several times more than the numbers.
pub fn fields(
    id: u64,
    size: u64,
    flags: u32,
    times: [i64; 3],
    mode: u32,
    owner: (u32, u32),
    names: &Names,
) -> String {
    let mut s = String::with_capacity(96);
    let mut b = itoa::Buffer::new();
    for n in [id, size, u64::from(flags)] {
        s.push_str(b.format(n));
        s.push(' ');
    }
    for t in times {
        s.push_str(b.format(t));
        s.push(' ');
    }
    let mode = mode & 0o7777;
    for shift in [9, 6, 3, 0] {
        s.push(char::from(b'0' + ((mode >> shift) & 7) as u8));
    }
    s.push(' ');
    names.push_user(owner.0, &mut s);
    s.push(' ');
    names.push_group(owner.1, &mut s);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_in_the_reference_order_and_forms() {
        let who = Identity::root("xroot");
        let i = Inode {
            ino: 77,
            parent: 1,
            name: b"f".to_vec(),
            uid: 1000,
            gid: 1001,
            mode: 0o640,
            ctime_ns: 1_600_000_000_000_000_000,
            mtime_ns: 1_700_000_000_900_000_000,
            size: 12345,
            ..Default::default()
        };
        let flags = sflags::READABLE | sflags::WRITABLE;
        let names = Names::with(|u| (u == 1000).then(|| "alice".into()), |_| None);
        assert_eq!(
            stat_string(&i, &who, &names),
            format!("77 12345 {flags} 1700000000 1600000000 1700000000 0640 alice 1001")
        );
    }
}

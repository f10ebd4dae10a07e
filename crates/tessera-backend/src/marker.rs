//! The marker at a filesystem's root (`.tessera-fs`), and what a root is.
//!
//! A folder without a marker (a CephFS mount point whose mount went away)
//! is refused for writes, so stripes never land on the disk underneath a
//! missing mount. Since format 2 the marker also names the filesystem it
//! was registered as (its id and a random uuid): the same storage cannot
//! be registered twice, and a root whose marker names another filesystem
//! (another disk mounted at the path, a copy) is not served as this one.
//! The marker is written whole under a temporary name and renamed.

use std::path::PathBuf;

/// The marker's file name, at the root of every filesystem.
pub const MARKER: &str = ".tessera-fs";

/// Format-1 markers (before ids) hold only this line.
const FORMAT1: &str = "tessera stripe folder, format 1";
const FORMAT2: &str = "tessera stripe folder, format 2";

/// Which filesystem a marker says its root is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub fs: u32,
    pub uuid: String,
}

impl Marker {
    /// The marker's text.
    pub fn render(&self) -> String {
        format!("{FORMAT2}\nfs {}\nuuid {}\n", self.fs, self.uuid)
    }

    /// The identity in a marker's text: `None` for a format-1 marker
    /// (no identity) or text that is not a marker.
    pub fn parse(text: &str) -> Option<Marker> {
        let mut lines = text.lines();
        if lines.next()? != FORMAT2 {
            return None;
        }
        let (mut fs, mut uuid) = (None, None);
        for l in lines {
            match l.split_once(' ') {
                Some(("fs", v)) => fs = v.trim().parse().ok(),
                Some(("uuid", v)) => uuid = Some(v.trim().to_string()),
                _ => {}
            }
        }
        Some(Marker {
            fs: fs?,
            uuid: uuid.filter(|u| !u.is_empty())?,
        })
    }

    /// Whether `text` is a marker of any format.
    pub fn is_marker(text: &str) -> bool {
        let first = text.lines().next().unwrap_or("");
        first == FORMAT1 || first == FORMAT2
    }
}

/// A new random uuid for a marker (32 hex digits).
pub fn new_uuid() -> String {
    let a: u128 = rand_u128();
    format!("{a:032x}")
}

/// 64 random bits (unique names, not secrets).
pub fn random_u64() -> u64 {
    rand_u128() as u64
}

fn rand_u128() -> u128 {
    // The kernel's random bytes (no crate needed for 16 of them).
    let mut b = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = f.read_exact(&mut b);
    }
    u128::from_le_bytes(b)
}

/// What storage a filesystem's root is, to tell two registrations of the
/// same storage apart (besides its marker).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootId {
    /// A directory: its canonical path, and its device and inode numbers
    /// (the same directory reached by another path, a bind mount).
    Folder { path: PathBuf, dev: u64, ino: u64 },
    /// A directory in a CephFS file system reached with libcephfs: the
    /// cluster's fsid, the file system's name and the directory.
    Ceph {
        fsid: String,
        fs: String,
        dir: String,
    },
}

impl RootId {
    /// Whether two roots are the same storage.
    pub fn same_as(&self, other: &RootId) -> bool {
        match (self, other) {
            (
                RootId::Folder { path, dev, ino },
                RootId::Folder {
                    path: p2,
                    dev: d2,
                    ino: i2,
                },
            ) => path == p2 || (dev == d2 && ino == i2),
            (a @ RootId::Ceph { .. }, b @ RootId::Ceph { .. }) => a == b,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_round_trip_and_old_ones_have_no_identity() {
        let m = Marker {
            fs: 7,
            uuid: new_uuid(),
        };
        assert_eq!(m.uuid.len(), 32);
        assert_ne!(m.uuid, new_uuid());
        assert_eq!(Marker::parse(&m.render()), Some(m.clone()));
        assert!(Marker::is_marker(&m.render()));
        assert_eq!(Marker::parse("tessera stripe folder, format 1\n"), None);
        assert!(Marker::is_marker("tessera stripe folder, format 1\n"));
        assert!(!Marker::is_marker("something else"));
        assert_eq!(
            Marker::parse("tessera stripe folder, format 2\nfs x\n"),
            None
        );
        let a = RootId::Folder {
            path: "/a".into(),
            dev: 1,
            ino: 2,
        };
        let b = RootId::Folder {
            path: "/b".into(),
            dev: 1,
            ino: 2,
        };
        assert!(a.same_as(&b), "same directory, other path");
        let c = RootId::Folder {
            path: "/c".into(),
            dev: 1,
            ino: 3,
        };
        assert!(!a.same_as(&c));
    }
}

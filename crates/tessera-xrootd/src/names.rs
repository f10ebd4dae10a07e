//! Owner and group names for stat replies (`xrdfs ls -l`, `xrdfs stat`):
//! a uid or gid is shown by its name in the local password or group file,
//! as the reference server shows it, and as its number when it has none.
//! The files are read once and again at most once a minute when an id is
//! not found (a user added since).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::time::{Duration, Instant};

/// How often a missing id may make the file be read again.
const RELOAD_AFTER: Duration = Duration::from_secs(60);

pub struct Names {
    users: Table,
    groups: Table,
}

impl Names {
    /// Names from `/etc/passwd` and `/etc/group`.
    pub fn system() -> Names {
        Names::from_files("/etc/passwd", "/etc/group")
    }

    pub fn from_files(passwd: impl Into<PathBuf>, group: impl Into<PathBuf>) -> Names {
        Names {
            users: Table::new(passwd.into()),
            groups: Table::new(group.into()),
        }
    }

    /// Append the name of user `uid` (or the number) to `out`.
    pub fn push_user(&self, uid: u32, out: &mut String) {
        self.users.push(uid, out)
    }

    /// Append the name of group `gid` (or the number) to `out`.
    pub fn push_group(&self, gid: u32, out: &mut String) {
        self.groups.push(gid, out)
    }
}

impl Default for Names {
    fn default() -> Names {
        Names::system()
    }
}

/// Ids hash to themselves (scrambled): a lookup runs for every stat, and
/// SipHash cost more than the rest of it.
#[derive(Default)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8 | u64::from(*b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type IdMap = HashMap<u32, String, std::hash::BuildHasherDefault<IdHasher>>;

struct Table {
    path: PathBuf,
    /// Names by id, and when the file was last read (`None`: never).
    map: RwLock<(IdMap, Option<Instant>)>,
}

impl Table {
    fn new(path: PathBuf) -> Table {
        Table {
            path,
            map: RwLock::new((IdMap::default(), None)),
        }
    }

    fn push(&self, id: u32, out: &mut String) {
        {
            let m = self.map.read().unwrap_or_else(|p| p.into_inner());
            if let Some(name) = m.0.get(&id) {
                out.push_str(name);
                return;
            }
            let fresh = m.1.is_some_and(|t| t.elapsed() < RELOAD_AFTER);
            if fresh {
                out.push_str(itoa::Buffer::new().format(id));
                return;
            }
        }
        let mut m = self.map.write().unwrap_or_else(|p| p.into_inner());
        if m.1.is_none_or(|t| t.elapsed() >= RELOAD_AFTER) {
            *m = (read_ids(&self.path), Some(Instant::now()));
        }
        match m.0.get(&id) {
            Some(name) => out.push_str(name),
            None => out.push_str(itoa::Buffer::new().format(id)),
        }
    }
}

/// `name:x:id:...` lines: id to name (the first name of an id wins, as
/// `getpwuid` answers). An unreadable file gives no names.
fn read_ids(path: &Path) -> IdMap {
    let mut m = IdMap::default();
    let Ok(text) = std::fs::read_to_string(path) else {
        return m;
    };
    for line in text.lines() {
        let mut f = line.split(':');
        let (Some(name), Some(_), Some(id)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if name.is_empty() || name.starts_with('#') || name.chars().any(char::is_whitespace) {
            continue;
        }
        if let Ok(id) = id.parse::<u32>() {
            m.entry(id).or_insert_with(|| name.to_string());
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(n: &Names, uid: u32, gid: u32) -> String {
        let mut s = String::new();
        n.push_user(uid, &mut s);
        s.push(' ');
        n.push_group(gid, &mut s);
        s
    }

    #[test]
    fn names_numbers_and_reloads() {
        let d = tempfile::tempdir().expect("tmp");
        let (pw, gr) = (d.path().join("passwd"), d.path().join("group"));
        std::fs::write(
            &pw,
            "root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/sh\nalias:x:1000:1000::/:/bin/sh\nbroken line\n",
        )
        .expect("passwd");
        std::fs::write(&gr, "root:x:0:\natlas:x:2000:alice\n").expect("group");
        let n = Names::from_files(&pw, &gr);
        assert_eq!(show(&n, 0, 0), "root root");
        assert_eq!(show(&n, 1000, 2000), "alice atlas");
        assert_eq!(show(&n, 4242, 1000), "4242 1000");
        // A user added now is seen after the reload interval, not before
        // (the file is not read again on every unknown id).
        std::fs::write(&pw, "bob:x:4242:4242::/:/bin/sh\n").expect("passwd");
        assert_eq!(show(&n, 4242, 0), "4242 root");
        n.users.map.write().expect("lock").1 = None; // as if a minute had passed
        assert_eq!(show(&n, 4242, 0), "bob root");
        // Without the files every id is its number.
        let none = Names::from_files(d.path().join("nope"), d.path().join("nope2"));
        assert_eq!(show(&none, 0, 5), "0 5");
    }
}

//! Owner and group names for stat replies (`xrdfs ls -l`, `xrdfs stat`):
//! a uid or gid is shown by its name as the C library's name service
//! switch gives it (files, LDAP, SSSD: `tessera_auth::users`), as the
//! reference server shows it, and as its number when it has none. Answers
//! are kept: a name for ten minutes, an unknown id for one (a stat never
//! waits for a directory service twice in a row).

use std::collections::HashMap;
use std::sync::RwLock;
use std::time::{Duration, Instant};

/// How long a name found is kept.
const KEEP_NAME: Duration = Duration::from_secs(600);
/// How long an id without a name is kept as a number.
const KEEP_MISS: Duration = Duration::from_secs(60);

type Lookup = Box<dyn Fn(u32) -> Option<String> + Send + Sync>;

pub struct Names {
    users: Table,
    groups: Table,
}

impl Names {
    /// Names from the name service switch.
    pub fn system() -> Names {
        Names::with(
            tessera_auth::users::user_name,
            tessera_auth::users::group_name,
        )
    }

    /// Names from these lookups (tests).
    pub fn with(
        user: impl Fn(u32) -> Option<String> + Send + Sync + 'static,
        group: impl Fn(u32) -> Option<String> + Send + Sync + 'static,
    ) -> Names {
        Names {
            users: Table::new(Box::new(user)),
            groups: Table::new(Box::new(group)),
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

/// An id's name (`None`: it has none) and when it was looked up.
type IdMap = HashMap<u32, (Option<String>, Instant), std::hash::BuildHasherDefault<IdHasher>>;

struct Table {
    lookup: Lookup,
    map: RwLock<IdMap>,
}

impl Table {
    fn new(lookup: Lookup) -> Table {
        Table {
            lookup,
            map: RwLock::new(IdMap::default()),
        }
    }

    fn push(&self, id: u32, out: &mut String) {
        {
            let m = self.map.read().unwrap_or_else(|p| p.into_inner());
            if let Some((name, at)) = m.get(&id) {
                let keep = if name.is_some() { KEEP_NAME } else { KEEP_MISS };
                if at.elapsed() < keep {
                    return show(id, name.as_deref(), out);
                }
            }
        }
        // Looked up outside the lock: a slow directory service holds up
        // only the stats that need this id.
        let name = (self.lookup)(id);
        show(id, name.as_deref(), out);
        let mut m = self.map.write().unwrap_or_else(|p| p.into_inner());
        m.insert(id, (name, Instant::now()));
    }
}

fn show(id: u32, name: Option<&str>, out: &mut String) {
    match name {
        Some(n) => out.push_str(n),
        None => out.push_str(itoa::Buffer::new().format(id)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn show(n: &Names, uid: u32, gid: u32) -> String {
        let mut s = String::new();
        n.push_user(uid, &mut s);
        s.push(' ');
        n.push_group(gid, &mut s);
        s
    }

    #[test]
    fn names_numbers_and_what_is_kept() {
        let asked = Arc::new(AtomicUsize::new(0));
        let a2 = Arc::clone(&asked);
        let n = Names::with(
            move |uid| {
                a2.fetch_add(1, Ordering::Relaxed);
                (uid == 1000).then(|| "alice".to_string())
            },
            |gid| (gid == 2000).then(|| "atlas".to_string()),
        );
        assert_eq!(show(&n, 1000, 2000), "alice atlas");
        assert_eq!(show(&n, 4242, 1000), "4242 1000");
        for _ in 0..10 {
            assert_eq!(show(&n, 1000, 2000), "alice atlas");
            assert_eq!(show(&n, 4242, 2000), "4242 atlas");
        }
        assert_eq!(asked.load(Ordering::Relaxed), 2, "each id asked once");
        // A miss is asked again once it is old.
        n.users
            .map
            .write()
            .expect("lock")
            .get_mut(&4242)
            .expect("kept")
            .1 -= KEEP_MISS;
        show(&n, 4242, 0);
        assert_eq!(asked.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn the_system_names_root() {
        assert_eq!(show(&Names::system(), 0, 0), "root root");
    }
}

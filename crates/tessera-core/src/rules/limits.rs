//! Rate limits (EOS `access set limit`): a token bucket per rule and per
//! whom it counts (each user, each group, each application, or everyone
//! together), refilled at the rule's rate up to its burst. A request that
//! finds its bucket empty is told to wait until a token is there; the
//! front-ends write that as any other wait (`kXR_wait`, 503 with
//! `Retry-After`). Part of the rules (`rules.rs`): the rules' answer is decided
//! once, limits after bans, allow lists and redirects.

use super::Op;
use std::collections::HashMap;
use std::time::Instant;
use tessera_types::Identity;

/// Buckets kept at most; past it, full ones (idle long enough to refill)
/// are dropped first.
const MAX_BUCKETS: usize = 100_000;

/// A shaping rule, parsed: whom it counts, which direction, bytes per
/// second.
#[derive(Debug, Clone)]
pub(crate) struct Shape {
    pub id: u64,
    pub counted: Counted,
    /// `Some(true)`: writes, `Some(false)`: reads, `None`: both.
    pub writes: Option<bool>,
    pub rate: f64,
}

/// Whom a limit counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Counted {
    /// `all`: one bucket for every client.
    All,
    /// `user:*`: a bucket per user; `user:NAME`: that user's.
    EachUser,
    User(String),
    /// `group:*`: a bucket per group (a client counts in each of its
    /// groups); `group:NAME`: the members of that group together.
    EachGroup,
    Group(String),
    /// `app:*`: a bucket per application (XRootD's `xrd.appname`, the
    /// HTTP User-Agent's product); `app:NAME`: that one's.
    EachApp,
    App(String),
}

impl Counted {
    pub(crate) fn parse(s: &str) -> Option<Counted> {
        Some(match s.split_once(':') {
            None if s == "all" => Counted::All,
            Some(("user", "*")) => Counted::EachUser,
            Some(("user", n)) if !n.is_empty() => Counted::User(n.into()),
            Some(("group", "*")) => Counted::EachGroup,
            Some(("group", n)) if !n.is_empty() => Counted::Group(n.into()),
            Some(("app", "*")) => Counted::EachApp,
            Some(("app", n)) if !n.is_empty() => Counted::App(n.into()),
            _ => return None,
        })
    }

    /// The buckets of this limit a request of `who` from `app` counts in
    /// (none: the limit is not about it).
    pub(crate) fn keys(&self, who: &Identity, app: &str) -> Vec<String> {
        match self {
            Counted::All => vec![String::new()],
            Counted::EachUser => vec![who.name.clone()],
            Counted::User(u) if &who.name == u => vec![String::new()],
            Counted::EachGroup => who.group_names.clone(),
            Counted::Group(g) if who.group_names.contains(g) => vec![String::new()],
            Counted::EachApp => vec![app.to_string()],
            Counted::App(a) if a == app => vec![String::new()],
            _ => Vec::new(),
        }
    }
}

/// Which requests a limit counts: `open-read`, `open-write`, `stat`,
/// `list`, `delete`, `tpc`, or `all`.
pub(crate) fn class_covers(class: &str, op: Op) -> Option<bool> {
    Some(match class {
        "all" | "" => true,
        "open-read" => op == Op::OpenRead,
        "open-write" => op == Op::OpenWrite,
        "stat" => op == Op::Stat,
        "list" => op == Op::List,
        "delete" => op == Op::Delete,
        "tpc" => op == Op::Tpc,
        _ => return None,
    })
}

/// One bucket: its tokens when last seen.
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// Every limit's buckets.
#[derive(Default)]
pub(crate) struct Buckets {
    map: HashMap<(u64, String), Bucket>,
}

impl Buckets {
    /// Take a token from rule `id`'s bucket `key` (`rate` per second, up
    /// to `burst`): `None` when there was one, else the seconds until
    /// there is.
    pub(crate) fn take(
        &mut self,
        id: u64,
        key: &str,
        rate: f64,
        burst: f64,
        now: Instant,
    ) -> Option<u32> {
        if self.map.len() >= MAX_BUCKETS {
            self.prune(now);
        }
        let b = self.map.entry((id, key.to_string())).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let dt = now.saturating_duration_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + dt * rate).min(burst);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            return None;
        }
        let secs = ((1.0 - b.tokens) / rate).ceil();
        Some(secs.clamp(1.0, f64::from(u32::MAX)) as u32)
    }

    /// Drop the buckets idle for a minute (they would be full again at
    /// any rate of at least one per minute), then half of the rest if
    /// that was not enough.
    fn prune(&mut self, now: Instant) {
        self.map
            .retain(|_, b| now.saturating_duration_since(b.at).as_secs() < 60);
        if self.map.len() >= MAX_BUCKETS {
            let drop: Vec<_> = self.map.keys().take(MAX_BUCKETS / 2).cloned().collect();
            for k in drop {
                self.map.remove(&k);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_bucket_gives_its_burst_then_its_rate() {
        let mut b = Buckets::default();
        let t0 = Instant::now();
        for _ in 0..5 {
            assert_eq!(b.take(1, "alice", 2.0, 5.0, t0), None);
        }
        // Empty: one token comes in half a second: wait 1 s (whole seconds).
        assert_eq!(b.take(1, "alice", 2.0, 5.0, t0), Some(1));
        // Another user has a bucket of their own.
        assert_eq!(b.take(1, "bob", 2.0, 5.0, t0), None);
        // After a second, two tokens.
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!(b.take(1, "alice", 2.0, 5.0, t1), None);
        assert_eq!(b.take(1, "alice", 2.0, 5.0, t1), None);
        assert!(b.take(1, "alice", 2.0, 5.0, t1).is_some());
        // A slow rate says how long.
        assert_eq!(b.take(2, "", 0.1, 1.0, t0), None);
        assert_eq!(b.take(2, "", 0.1, 1.0, t0), Some(10));
    }

    #[test]
    fn subjects_and_classes() {
        let mut alice = Identity::user(1, 1, "alice", "xroot");
        alice.group_names = vec!["atlas".into(), "users".into()];
        let k = |s: &str, app: &str| Counted::parse(s).unwrap().keys(&alice, app);
        assert_eq!(k("all", "xrdcp"), vec![""]);
        assert_eq!(k("user:*", "xrdcp"), vec!["alice"]);
        assert_eq!(k("user:alice", "xrdcp"), vec![""]);
        assert!(k("user:bob", "xrdcp").is_empty());
        assert_eq!(k("group:*", "xrdcp"), vec!["atlas", "users"]);
        assert_eq!(k("group:atlas", "xrdcp"), vec![""]);
        assert_eq!(k("app:*", "xrdcp"), vec!["xrdcp"]);
        assert!(k("app:curl", "xrdcp").is_empty());
        for bad in ["users:x", "user:", "host:1.2.3.4", "nobody"] {
            assert!(Counted::parse(bad).is_none(), "{bad}");
        }
        assert_eq!(class_covers("open-read", Op::OpenRead), Some(true));
        assert_eq!(class_covers("open-read", Op::Stat), Some(false));
        assert_eq!(class_covers("all", Op::Change), Some(true));
        assert_eq!(class_covers("opens", Op::Stat), None);
    }
}

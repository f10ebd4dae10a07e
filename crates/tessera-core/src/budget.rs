//! One memory budget for the bytes requests hold while they are served:
//! XRootD write payloads and read replies, HTTP GET parts. Each front-end
//! bounds what one connection may hold; this bounds all connections
//! together, as XRootD's buffer manager does. A request that cannot get
//! its bytes within the budget's wait is refused (`kXR_NoMemory`, HTTP
//! 503) instead of the process growing until the kernel kills it.
//!
//! Within the budget, [`Share`]s bound what one holder may take (a
//! connection, an identity across all its connections), so that a few
//! clients cannot hold the whole budget: a lease from shares takes its
//! bytes from each of them and from the budget, and gives all back when
//! dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes are counted in units of this size (a lease rounds up).
const UNIT: u64 = 4 << 10;

/// Default budget: 2 GiB.
pub const DEFAULT_BUDGET_BYTES: u64 = 2 << 30;
/// The least a connection's share is (unless the budget is smaller): an
/// XRootD connection's out-of-order writes (256 MiB) and one write
/// (64 MiB) must fit, so that its own limits answer before the share does.
pub const MIN_SHARE: u64 = 320 << 20;

/// Default time a request waits for its bytes before it is refused.
pub const DEFAULT_BUDGET_WAIT: Duration = Duration::from_secs(5);

/// A shared byte budget (clone it: every clone is the same budget).
#[derive(Clone)]
pub struct Budget {
    sem: Arc<Semaphore>,
    units: u32,
    wait: Duration,
    /// Live identity shares by key (see [`Budget::identity_share`]).
    identities: Arc<Mutex<HashMap<String, Weak<Semaphore>>>>,
    /// Bytes one connection, and one identity, may hold at most.
    per_connection: u64,
    per_identity: u64,
    /// Shares every lease of this clone takes from too
    /// ([`Budget::for_identity`]).
    shares: Vec<Share>,
}

/// The part of a [`Budget`] one holder may take at most (clone it: every
/// clone is the same share).
#[derive(Clone)]
pub struct Share {
    sem: Arc<Semaphore>,
    /// Its size, units.
    units: u32,
}

/// Bytes taken from a [`Budget`] (and from the shares they were leased
/// under); they go back when this is dropped.
#[derive(Default)]
pub struct Lease {
    permit: Option<OwnedSemaphorePermit>,
    shares: Vec<OwnedSemaphorePermit>,
}

impl Budget {
    /// A budget of `bytes` (at least one unit); a lease waits at most
    /// `wait` for its bytes.
    pub fn new(bytes: u64, wait: Duration) -> Budget {
        let units = (bytes / UNIT).clamp(1, u64::from(u32::MAX >> 4)) as u32;
        Budget {
            sem: Arc::new(Semaphore::new(units as usize)),
            units,
            wait,
            identities: Arc::default(),
            per_connection: (u64::from(units) * UNIT / 8).max(MIN_SHARE),
            per_identity: (u64::from(units) * UNIT / 2).max(MIN_SHARE),
            shares: Vec::new(),
        }
    }

    /// The same budget, every lease of which also takes from the share of
    /// the identity with `key` (what a front-end serving that identity's
    /// upload leases from).
    pub fn for_identity(&self, key: &str) -> Budget {
        let mut b = self.clone();
        b.shares.push(self.identity_share_of(key));
        b
    }

    /// The same budget, every lease of which also takes from `share` (a
    /// connection's).
    pub fn with_share(&self, share: &Share) -> Budget {
        let mut b = self.clone();
        b.shares.push(share.clone());
        b
    }

    /// The same budget with other share sizes (bytes; by default an
    /// eighth of it per connection, half of it per identity, each at least
    /// [`MIN_SHARE`]; never more than the whole budget).
    pub fn with_shares(mut self, per_connection: u64, per_identity: u64) -> Budget {
        self.per_connection = per_connection.max(UNIT);
        self.per_identity = per_identity.max(UNIT);
        self
    }

    /// Its size, bytes.
    pub fn total(&self) -> u64 {
        u64::from(self.units) * UNIT
    }

    /// How long a lease waits for its bytes.
    pub fn wait(&self) -> Duration {
        self.wait
    }

    /// Bytes one connection may hold at most.
    pub fn per_connection(&self) -> u64 {
        self.per_connection
    }

    /// Bytes one identity may hold at most.
    pub fn per_identity(&self) -> u64 {
        self.per_identity
    }

    /// A new connection's share.
    pub fn connection_share(&self) -> Share {
        self.share(self.per_connection)
    }

    /// The share of the identity with `key` ([`tessera_types::Identity::limit_key`]).
    pub fn identity_share_of(&self, key: &str) -> Share {
        self.identity_share(key, self.per_identity)
    }

    /// A new share of at most `bytes` (one holder's: a connection's).
    pub fn share(&self, bytes: u64) -> Share {
        let units = (bytes / UNIT).clamp(1, u64::from(self.units)) as u32;
        Share {
            sem: Arc::new(Semaphore::new(units as usize)),
            units,
        }
    }

    /// The share of at most `bytes` that every holder called `key` (an
    /// identity) takes from, together, while any of them holds it.
    pub fn identity_share(&self, key: &str, bytes: u64) -> Share {
        let mut m = crate::lock(&self.identities);
        if let Some(sem) = m.get(key).and_then(Weak::upgrade) {
            let units = self.share(bytes).units;
            return Share { sem, units };
        }
        if m.len() >= 1024 {
            m.retain(|_, w| w.strong_count() > 0);
        }
        let share = self.share(bytes);
        m.insert(key.to_string(), Arc::downgrade(&share.sem));
        share
    }

    /// As [`Budget::lease`], the bytes taken from each of `shares` too
    /// (waiting for them as for the budget, within the same wait).
    pub async fn lease_shared(&self, bytes: usize, shares: &[&Share]) -> Option<Lease> {
        let n = self.units_for(bytes);
        let deadline = tokio::time::Instant::now() + self.wait;
        let mut lease = Lease::default();
        for s in shares {
            let want = n.min(s.units());
            let p = match Arc::clone(&s.sem).try_acquire_many_owned(want) {
                Ok(p) => p,
                Err(_) => {
                    tokio::time::timeout_at(deadline, Arc::clone(&s.sem).acquire_many_owned(want))
                        .await
                        .ok()?
                        .ok()?
                }
            };
            lease.shares.push(p);
        }
        let p = match Arc::clone(&self.sem).try_acquire_many_owned(n) {
            Ok(p) => p,
            Err(_) => {
                tokio::time::timeout_at(deadline, Arc::clone(&self.sem).acquire_many_owned(n))
                    .await
                    .ok()?
                    .ok()?
            }
        };
        lease.permit = Some(p);
        Some(lease)
    }

    fn units_for(&self, bytes: usize) -> u32 {
        // A request larger than the whole budget takes all of it.
        (bytes as u64)
            .div_ceil(UNIT)
            .clamp(1, u64::from(self.units)) as u32
    }

    /// Take `bytes` from the budget, waiting up to the budget's wait for
    /// others to give theirs back; `None`: not granted in time.
    pub async fn lease(&self, bytes: usize) -> Option<Lease> {
        if !self.shares.is_empty() {
            let shares: Vec<&Share> = self.shares.iter().collect();
            return self.lease_shared(bytes, &shares).await;
        }
        let n = self.units_for(bytes);
        let permit = match Arc::clone(&self.sem).try_acquire_many_owned(n) {
            Ok(p) => p,
            Err(_) => tokio::time::timeout(self.wait, Arc::clone(&self.sem).acquire_many_owned(n))
                .await
                .ok()?
                .ok()?,
        };
        Some(Lease {
            permit: Some(permit),
            shares: Vec::new(),
        })
    }

    /// `bytes` of the budget, taken first out of `held` (bytes the data
    /// being handed over already holds: they move with it), the rest
    /// leased as [`Budget::lease`] does. `None`: not granted in time.
    pub async fn lease_from(&self, bytes: usize, held: Option<&mut Lease>) -> Option<Lease> {
        let mut part = held.map(|h| h.split(bytes)).unwrap_or_default();
        let have = part.bytes();
        if have < bytes {
            part.merge(self.lease(bytes - have).await?);
        }
        Some(part)
    }

    /// Bytes of the budget in use now.
    pub fn in_use(&self) -> u64 {
        u64::from(self.units).saturating_sub(self.sem.available_permits() as u64) * UNIT
    }

    /// The budget's size in bytes.
    pub fn size(&self) -> u64 {
        u64::from(self.units) * UNIT
    }
}

impl Share {
    /// A lease larger than the share takes all of it rather than never.
    fn units(&self) -> u32 {
        self.units
    }

    /// Bytes of this share in use now.
    pub fn in_use(&self) -> u64 {
        u64::from(self.units).saturating_sub(self.sem.available_permits() as u64) * UNIT
    }
}

impl Lease {
    /// Bytes of the budget this lease holds (whole units).
    pub fn bytes(&self) -> usize {
        self.permit
            .as_ref()
            .map_or(0, |p| p.num_permits() * UNIT as usize)
    }

    /// Hold `other`'s bytes too.
    pub fn merge(&mut self, other: Lease) {
        match (self.permit.as_mut(), other.permit) {
            (Some(p), Some(o)) => p.merge(o),
            (None, o) => self.permit = o,
            (Some(_), None) => {}
        }
        for o in other.shares {
            match self
                .shares
                .iter_mut()
                .find(|s| Arc::ptr_eq(s.semaphore(), o.semaphore()))
            {
                Some(s) => s.merge(o),
                None => self.shares.push(o),
            }
        }
    }

    /// Take `bytes` (rounded up to whole units, at most all it holds) out
    /// of this lease into a new one.
    pub fn split(&mut self, bytes: usize) -> Lease {
        let units = (bytes as u64).div_ceil(UNIT) as usize;
        let Some(p) = self.permit.as_mut() else {
            return Lease::default();
        };
        if units >= p.num_permits() {
            return std::mem::take(self);
        }
        // The shares' bytes go with the part, as far as they reach.
        let mut shares = Vec::new();
        let mut i = 0;
        while i < self.shares.len() {
            if units >= self.shares[i].num_permits() {
                shares.push(self.shares.swap_remove(i));
            } else {
                shares.extend(self.shares[i].split(units));
                i += 1;
            }
        }
        Lease {
            permit: p.split(units),
            shares,
        }
    }
}

impl Default for Budget {
    fn default() -> Budget {
        Budget::new(DEFAULT_BUDGET_BYTES, DEFAULT_BUDGET_WAIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn leases_wait_for_bytes_given_back_and_time_out() {
        let b = Budget::new(4 * UNIT, Duration::from_millis(100));
        let a = b.lease(3 * UNIT as usize).await.expect("fits");
        assert_eq!(b.in_use(), 3 * UNIT);
        // One byte rounds up to a unit; the fourth unit is free.
        let one = b.lease(1).await.expect("one unit left");
        assert_eq!(b.in_use(), 4 * UNIT);
        assert_eq!((a.bytes(), one.bytes()), (3 * UNIT as usize, UNIT as usize));
        assert_eq!(Lease::default().bytes(), 0);
        // Nothing left: refused after the wait.
        let t = std::time::Instant::now();
        assert!(b.lease(1).await.is_none());
        assert!(t.elapsed() >= Duration::from_millis(90));
        // Given back while waiting: granted.
        let b2 = b.clone();
        let waiter = tokio::spawn(async move { b2.lease(2 * UNIT as usize).await.is_some() });
        tokio::time::sleep(Duration::from_millis(20)).await;
        drop(a);
        assert!(waiter.await.unwrap());
        drop(one);
        assert_eq!(b.in_use(), 0);
        // Larger than the whole budget: takes all of it rather than never.
        let all = b.lease(100 * UNIT as usize).await.expect("clamped");
        assert_eq!(b.in_use(), b.size());
        drop(all);
        assert_eq!(b.in_use(), 0);
    }

    #[tokio::test]
    async fn shares_bound_one_holder_within_the_budget() {
        let b = Budget::new(8 * UNIT, Duration::from_millis(100));
        let conn = b.share(2 * UNIT);
        let who = b.identity_share("alice", 3 * UNIT);
        let a = b
            .lease_shared(2 * UNIT as usize, &[&conn, &who])
            .await
            .expect("fits");
        assert_eq!(
            (conn.in_use(), who.in_use(), b.in_use()),
            (2 * UNIT, 2 * UNIT, 2 * UNIT)
        );
        // The connection's share is full: refused after the wait, while
        // the budget still has room for others.
        assert!(b.lease_shared(1, &[&conn, &who]).await.is_none());
        assert_eq!(conn.in_use(), 2 * UNIT, "a refusal gives back what it took");
        let conn2 = b.share(2 * UNIT);
        // The same identity on another connection: its share is shared.
        let same = b.identity_share("alice", 3 * UNIT);
        let c = b
            .lease_shared(UNIT as usize, &[&conn2, &same])
            .await
            .expect("fits");
        assert!(
            b.lease_shared(1, &[&conn2, &same]).await.is_none(),
            "alice is at 3"
        );
        assert_eq!(who.in_use(), 3 * UNIT);
        let bob = b.identity_share("bob", 3 * UNIT);
        let d = b
            .lease_shared(UNIT as usize, &[&b.share(UNIT), &bob])
            .await
            .expect("bob");
        // Parts and merges carry the shares' bytes with them.
        let mut a = a;
        let part = a.split(UNIT as usize);
        drop(part);
        assert_eq!((conn.in_use(), who.in_use()), (UNIT, 2 * UNIT));
        a.merge(c);
        drop(a);
        assert_eq!((conn.in_use(), conn2.in_use(), who.in_use()), (0, 0, 0));
        drop(d);
        assert_eq!(b.in_use(), 0);
        // Larger than a share: all of the share, not never.
        let big = b
            .lease_shared(5 * UNIT as usize, &[&b.share(UNIT)])
            .await
            .expect("clamped");
        assert_eq!(big.bytes(), 5 * UNIT as usize);
    }

    #[tokio::test]
    async fn a_lease_splits_into_parts_that_each_give_back_their_own() {
        let b = Budget::new(4 * UNIT, Duration::from_millis(100));
        let mut a = b.lease(3 * UNIT as usize).await.expect("fits");
        let part = a.split(UNIT as usize + 1);
        assert_eq!(
            (part.bytes(), a.bytes()),
            (2 * UNIT as usize, UNIT as usize)
        );
        assert_eq!(b.in_use(), 3 * UNIT);
        drop(part);
        assert_eq!(b.in_use(), UNIT);
        // More than it holds: all of it.
        let rest = a.split(100 * UNIT as usize);
        assert_eq!((rest.bytes(), a.bytes()), (UNIT as usize, 0));
        assert_eq!(Lease::default().split(UNIT as usize).bytes(), 0);
        drop(rest);
        assert_eq!(b.in_use(), 0);
        // From held bytes first, the rest leased; merged into one.
        let mut held = b.lease(2 * UNIT as usize).await.expect("fits");
        let got = b
            .lease_from(3 * UNIT as usize, Some(&mut held))
            .await
            .expect("fits");
        assert_eq!((got.bytes(), held.bytes()), (3 * UNIT as usize, 0));
        assert_eq!(b.in_use(), 3 * UNIT);
        drop(got);
        assert_eq!(b.in_use(), 0);
    }
}

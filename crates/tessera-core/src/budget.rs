//! One memory budget for the bytes requests hold while they are served:
//! XRootD write payloads and read replies, HTTP GET parts. Each front-end
//! bounds what one connection may hold; this bounds all connections
//! together, as XRootD's buffer manager does. A request that cannot get
//! its bytes within the budget's wait is refused (`kXR_NoMemory`, HTTP
//! 503) instead of the process growing until the kernel kills it.

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes are counted in units of this size (a lease rounds up).
const UNIT: u64 = 4 << 10;

/// Default budget: 2 GiB.
pub const DEFAULT_BUDGET_BYTES: u64 = 2 << 30;
/// Default time a request waits for its bytes before it is refused.
pub const DEFAULT_BUDGET_WAIT: Duration = Duration::from_secs(5);

/// A shared byte budget (clone it: every clone is the same budget).
#[derive(Clone)]
pub struct Budget {
    sem: Arc<Semaphore>,
    units: u32,
    wait: Duration,
}

/// Bytes taken from a [`Budget`]; they go back when this is dropped.
#[derive(Default)]
pub struct Lease {
    permit: Option<OwnedSemaphorePermit>,
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
        }
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
        let n = self.units_for(bytes);
        if let Ok(p) = Arc::clone(&self.sem).try_acquire_many_owned(n) {
            return Some(Lease { permit: Some(p) });
        }
        match tokio::time::timeout(self.wait, Arc::clone(&self.sem).acquire_many_owned(n)).await {
            Ok(Ok(p)) => Some(Lease { permit: Some(p) }),
            _ => None,
        }
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
        Lease {
            permit: p.split(units),
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

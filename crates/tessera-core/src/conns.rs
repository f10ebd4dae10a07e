//! How many client connections the process takes: all front-ends
//! together, and from one client address. A connection over either limit
//! is refused cleanly at once (the front-end says why in its protocol),
//! so that cheap connections can never take the descriptors the admin
//! API, the metrics endpoint, the namespace and open files need.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The limits (clone it: every clone is the same count).
#[derive(Clone)]
pub struct ConnLimits {
    inner: Arc<Inner>,
}

struct Inner {
    max_total: usize,
    max_per_address: usize,
    total: AtomicUsize,
    per_address: Mutex<HashMap<IpAddr, usize>>,
    refused: AtomicU64,
}

/// A connection counted against the limits until this is dropped.
pub struct ConnGuard {
    inner: Arc<Inner>,
    ip: IpAddr,
}

/// Why a connection was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The process holds `0` client connections, its limit.
    Total(usize),
    /// This client address holds `0`, its limit.
    PerAddress(usize),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Total(n) => write!(f, "the server has {n} client connections, its limit"),
            Refused::PerAddress(n) => {
                write!(f, "this address has {n} connections open, its limit")
            }
        }
    }
}

impl ConnLimits {
    pub fn new(max_total: usize, max_per_address: usize) -> ConnLimits {
        ConnLimits {
            inner: Arc::new(Inner {
                max_total: max_total.max(1),
                max_per_address: max_per_address.max(1),
                total: AtomicUsize::new(0),
                per_address: Mutex::new(HashMap::new()),
                refused: AtomicU64::new(0),
            }),
        }
    }

    /// No limit (tests, tools).
    pub fn unlimited() -> ConnLimits {
        ConnLimits::new(usize::MAX, usize::MAX)
    }

    /// Count a new connection from `ip`, or say why it is refused.
    pub fn admit(&self, ip: IpAddr) -> Result<ConnGuard, Refused> {
        let ip = ip.to_canonical();
        let i = &self.inner;
        let mut m = i.per_address.lock().unwrap_or_else(|p| p.into_inner());
        let refuse = |r: Refused| {
            i.refused.fetch_add(1, Ordering::Relaxed);
            Err(r)
        };
        let total = i.total.load(Ordering::Relaxed);
        if total >= i.max_total {
            return refuse(Refused::Total(total));
        }
        let here = m.get(&ip).copied().unwrap_or(0);
        if here >= i.max_per_address {
            return refuse(Refused::PerAddress(here));
        }
        m.insert(ip, here + 1);
        i.total.fetch_add(1, Ordering::Relaxed);
        Ok(ConnGuard {
            inner: Arc::clone(&self.inner),
            ip,
        })
    }

    /// Client connections held now.
    pub fn open(&self) -> usize {
        self.inner.total.load(Ordering::Relaxed)
    }

    /// At shutdown, after the listeners stopped accepting: wait until
    /// every admitted connection has ended, at most `limit`; the number
    /// still open then.
    pub async fn drained(&self, limit: std::time::Duration) -> usize {
        let end = tokio::time::Instant::now() + limit;
        while self.open() > 0 && tokio::time::Instant::now() < end {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        self.open()
    }

    /// Connections refused since start.
    pub fn refused(&self) -> u64 {
        self.inner.refused.load(Ordering::Relaxed)
    }

    pub fn max_total(&self) -> usize {
        self.inner.max_total
    }

    pub fn max_per_address(&self) -> usize {
        self.inner.max_per_address
    }
}

impl Default for ConnLimits {
    fn default() -> ConnLimits {
        ConnLimits::unlimited()
    }
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        let mut m = self
            .inner
            .per_address
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(n) = m.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.ip);
            }
        }
        self.inner.total.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The limits a process with `nofile` descriptors sets by default: a
/// reserve of a tenth of them (32 to 1,024) for everything that is not a
/// client connection, and half of the rest for connections (each may
/// hold open files too), at most 20,000; a quarter of that per address.
pub fn default_limits(nofile: u64) -> (usize, usize) {
    let reserve = (nofile / 10).clamp(32, 1024);
    let total = (nofile.saturating_sub(reserve) / 2).clamp(8, 20_000) as usize;
    (total, (total / 4).max(4))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_and_addresses() {
        let l = ConnLimits::new(3, 2);
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        let a1 = l.admit(a).unwrap();
        let _a2 = l.admit("::ffff:10.0.0.1".parse().unwrap()).unwrap();
        assert_eq!(l.admit(a).err(), Some(Refused::PerAddress(2)));
        let _b1 = l.admit(b).unwrap();
        assert_eq!(l.admit(b).err(), Some(Refused::Total(3)));
        assert_eq!((l.open(), l.refused()), (3, 2));
        drop(a1);
        assert!(l.admit(a).is_ok(), "a slot came back");
        assert_eq!(default_limits(400), (180, 45));
        assert_eq!(default_limits(1 << 20), (20_000, 5_000));
        assert_eq!(default_limits(64), (16, 4));
    }
}

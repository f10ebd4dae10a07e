//! How many client connections the process takes: all front-ends
//! together, from one client network, and anonymous ones. A connection
//! over a limit is refused cleanly at once (the front-end says why in its
//! protocol), so that cheap connections can never take the descriptors
//! the admin API, the metrics endpoint, the namespace and open files
//! need. "One client network" is an IPv4 address (`/32`) or an IPv6
//! `/64` (one host's share of a subnet; both prefix lengths configurable):
//! an IPv6 client has a whole `/64` of addresses to come from. A
//! connection the front-end finds anonymous (an XRootD login without a
//! credential, an HTTPS request without one) also takes one of the
//! anonymous places, which are fewer, so that anonymous clients cannot
//! keep authenticated ones out.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The limits (clone it: every clone is the same count).
#[derive(Clone)]
pub struct ConnLimits {
    inner: Arc<Inner>,
}

struct Inner {
    max_total: usize,
    max_per_address: usize,
    max_anonymous: usize,
    /// Prefix lengths a client network is counted by.
    v4_prefix: u8,
    v6_prefix: u8,
    total: AtomicUsize,
    anonymous: AtomicUsize,
    per_address: Mutex<HashMap<IpAddr, usize>>,
    refused: AtomicU64,
}

/// A connection counted against the limits until this is dropped.
pub struct ConnGuard {
    inner: Arc<Inner>,
    ip: IpAddr,
    anonymous: Arc<AtomicBool>,
}

/// What a front-end tells the limits of a connection it serves (clone
/// it: every clone is the same connection's).
#[derive(Clone)]
pub struct ConnMark {
    inner: Arc<Inner>,
    anonymous: Arc<AtomicBool>,
}

/// Why a connection was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The process holds `0` client connections, its limit.
    Total(usize),
    /// This client network holds `0`, its limit.
    PerAddress(usize),
    /// `0` anonymous connections are open, their limit.
    Anonymous(usize),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Total(n) => write!(f, "the server has {n} client connections, its limit"),
            Refused::PerAddress(n) => {
                write!(f, "this address has {n} connections open, its limit")
            }
            Refused::Anonymous(n) => write!(
                f,
                "the server has {n} connections without credentials, their limit: log in with a token"
            ),
        }
    }
}

/// `ip` reduced to the network it is counted in.
fn network(ip: IpAddr, v4: u8, v6: u8) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V4(a) => {
            let bits = u32::from(a)
                & u32::MAX
                    .checked_shl(32 - u32::from(v4.min(32)))
                    .unwrap_or(0);
            IpAddr::V4(bits.into())
        }
        IpAddr::V6(a) => {
            let bits = u128::from(a)
                & u128::MAX
                    .checked_shl(128 - u32::from(v6.min(128)))
                    .unwrap_or(0);
            IpAddr::V6(bits.into())
        }
    }
}

impl ConnMark {
    /// The connection turned out anonymous: it takes an anonymous place
    /// (once), or is refused (the front-end closes it).
    pub fn anonymous(&self) -> Result<(), Refused> {
        if self.anonymous.load(Ordering::Relaxed) {
            return Ok(());
        }
        let i = &self.inner;
        let n = i.anonymous.fetch_add(1, Ordering::Relaxed);
        if n >= i.max_anonymous {
            i.anonymous.fetch_sub(1, Ordering::Relaxed);
            i.refused.fetch_add(1, Ordering::Relaxed);
            return Err(Refused::Anonymous(n));
        }
        if self.anonymous.swap(true, Ordering::Relaxed) {
            i.anonymous.fetch_sub(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The connection presented credentials: its anonymous place, if it
    /// held one, goes back.
    pub fn authenticated(&self) {
        if self.anonymous.swap(false, Ordering::Relaxed) {
            self.inner.anonymous.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl ConnGuard {
    /// What the front-end serving this connection marks it with.
    pub fn mark(&self) -> ConnMark {
        ConnMark {
            inner: Arc::clone(&self.inner),
            anonymous: Arc::clone(&self.anonymous),
        }
    }
}

impl ConnLimits {
    /// `max_total` connections, `max_per_address` from one client network
    /// (IPv4 /32, IPv6 /64), half of `max_total` anonymous.
    pub fn new(max_total: usize, max_per_address: usize) -> ConnLimits {
        ConnLimits::with(max_total, max_per_address, max_total.div_ceil(2), (32, 64))
    }

    /// As [`ConnLimits::new`], with `max_anonymous` anonymous connections
    /// and the prefix lengths (IPv4, IPv6) a client network is counted by.
    pub fn with(
        max_total: usize,
        max_per_address: usize,
        max_anonymous: usize,
        (v4_prefix, v6_prefix): (u8, u8),
    ) -> ConnLimits {
        ConnLimits {
            inner: Arc::new(Inner {
                max_total: max_total.max(1),
                max_per_address: max_per_address.max(1),
                max_anonymous: max_anonymous.max(1),
                v4_prefix: v4_prefix.min(32),
                v6_prefix: v6_prefix.min(128),
                total: AtomicUsize::new(0),
                anonymous: AtomicUsize::new(0),
                per_address: Mutex::new(HashMap::new()),
                refused: AtomicU64::new(0),
            }),
        }
    }

    /// No limit (tests, tools).
    pub fn unlimited() -> ConnLimits {
        ConnLimits::with(usize::MAX, usize::MAX, usize::MAX, (32, 128))
    }

    /// Count a new connection from `ip`, or say why it is refused.
    pub fn admit(&self, ip: IpAddr) -> Result<ConnGuard, Refused> {
        let i = &self.inner;
        let ip = network(ip, i.v4_prefix, i.v6_prefix);
        let mut m = crate::lock(&i.per_address);
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
            anonymous: Arc::default(),
        })
    }

    /// Anonymous connections held now.
    pub fn anonymous(&self) -> usize {
        self.inner.anonymous.load(Ordering::Relaxed)
    }

    pub fn max_anonymous(&self) -> usize {
        self.inner.max_anonymous
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
        let mut m = crate::lock(&self.inner.per_address);
        if let Some(n) = m.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.ip);
            }
        }
        self.inner.total.fetch_sub(1, Ordering::Relaxed);
        if self.anonymous.swap(false, Ordering::Relaxed) {
            self.inner.anonymous.fetch_sub(1, Ordering::Relaxed);
        }
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
        // IPv6 by /64: another address of the same /64 is the same client.
        let l = ConnLimits::with(10, 2, 2, (32, 64));
        let x = |s: &str| s.parse::<IpAddr>().unwrap();
        let _c = l.admit(x("2001:db8:1:2::1")).unwrap();
        let _d = l.admit(x("2001:db8:1:2:ffff::9")).unwrap();
        assert_eq!(
            l.admit(x("2001:db8:1:2::abcd")).err(),
            Some(Refused::PerAddress(2))
        );
        assert!(l.admit(x("2001:db8:1:3::1")).is_ok(), "another /64");
        // Anonymous places: fewer; given back when the connection ends or
        // logs in.
        let g1 = l.admit(x("10.0.0.1")).unwrap();
        let g2 = l.admit(x("10.0.0.2")).unwrap();
        let g3 = l.admit(x("10.0.0.3")).unwrap();
        assert!(g1.mark().anonymous().is_ok() && g1.mark().anonymous().is_ok());
        assert!(g2.mark().anonymous().is_ok());
        assert_eq!(g3.mark().anonymous().err(), Some(Refused::Anonymous(2)));
        g2.mark().authenticated();
        assert!(g3.mark().anonymous().is_ok());
        drop(g1);
        assert_eq!(l.anonymous(), 1);
        assert_eq!(default_limits(1 << 20), (20_000, 5_000));
        assert_eq!(default_limits(64), (16, 4));
    }
}

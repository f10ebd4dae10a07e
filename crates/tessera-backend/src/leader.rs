//! Leadership of the metadata service over a [`RadosLease`] (issue 27,
//! begun): a thread takes the lease when it is free, fences the previous
//! holder (blocklist) and records a new epoch before it calls itself
//! active, then renews every third of the duration. The lease arithmetic
//! is conservative: a renewal (or the taking) sent at `t` makes this node
//! active until `t + duration − margin` only, so a node whose renewals are
//! late stops being active before the OSD lets another node take the lease
//! (which it can only at `t' + duration` for a later `t'`). A failed
//! renewal (lost, or fenced: EBLOCKLISTED) ends the activity at once, and
//! the node goes on as a standby with a fresh Ceph client (a fenced
//! client stays refused; a new one has a new address).

use crate::lease::{RadosLease, Taken};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What this node may do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// It holds the lease for `epoch` and may acknowledge changes.
    Active {
        epoch: u64,
    },
    Standby,
}

struct Inner {
    /// Until when this node is active, and for which epoch.
    active: Mutex<Option<(Instant, u64)>>,
    stop: AtomicBool,
    /// Test hook: every renewal waits this long more (a slow Ceph).
    delay_ms: AtomicU64,
    duration: Duration,
}

/// The leadership thread and what it found.
pub struct Leadership {
    inner: Arc<Inner>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Leadership {
    /// Run with the lease clients `connect` makes (one now, a fresh one
    /// after each loss); a fenced holder stays blocklisted for `fence`.
    pub fn start<F>(connect: F, fence: Duration) -> Result<Leadership, crate::BackendError>
    where
        F: Fn() -> Result<RadosLease, crate::BackendError> + Send + 'static,
    {
        let lease = connect()?;
        let inner = Arc::new(Inner {
            active: Mutex::new(None),
            stop: AtomicBool::new(false),
            delay_ms: AtomicU64::new(0),
            duration: lease.duration(),
        });
        let i = Arc::clone(&inner);
        let thread = std::thread::Builder::new()
            .name("tessera-lease".into())
            .spawn(move || run(lease, &connect, &i, fence))
            .expect("spawn the lease thread");
        Ok(Leadership {
            inner,
            thread: Some(thread),
        })
    }

    /// This node's role now (active only within its conservative lease).
    pub fn role(&self) -> Role {
        let a = self.inner.active.lock().unwrap_or_else(|p| p.into_inner());
        match *a {
            Some((until, epoch)) if Instant::now() < until => Role::Active { epoch },
            _ => Role::Standby,
        }
    }

    /// Test hook: make every renewal this much later.
    pub fn delay_renewals(&self, d: Duration) {
        self.inner
            .delay_ms
            .store(d.as_millis() as u64, Ordering::Relaxed);
    }

    /// Stop the thread (the lease runs out by itself).
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.inner.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        self.halt();
    }
}

/// The part of a lease this node does not count on (clock rate, the
/// renewal's own flight).
fn margin(d: Duration) -> Duration {
    (d / 10).max(Duration::from_millis(100))
}

fn run<F>(mut lease: RadosLease, connect: &F, i: &Inner, fence: Duration)
where
    F: Fn() -> Result<RadosLease, crate::BackendError>,
{
    let period = i.duration / 3;
    let set = |v: Option<(Instant, u64)>| {
        *i.active.lock().unwrap_or_else(|p| p.into_inner()) = v;
    };
    let mut epoch = None;
    while !i.stop.load(Ordering::Relaxed) {
        let sent = Instant::now();
        let valid = sent + i.duration - margin(i.duration);
        match epoch {
            None => {
                if let Some(e) = take(&lease, fence) {
                    epoch = Some(e);
                    set(Some((valid, e)));
                    tracing::info!(epoch = e, "metadata lease taken: active");
                }
            }
            Some(e) => match lease.renew() {
                Ok(()) => set(Some((valid, e))),
                Err(err) => {
                    set(None);
                    epoch = None;
                    tracing::warn!(epoch = e, "metadata lease lost ({err}): standby");
                    // Perhaps fenced: go on with a new client.
                    match connect() {
                        Ok(l) => lease = l,
                        Err(err) => tracing::warn!("a new Ceph client: {err}"),
                    }
                }
            },
        }
        std::thread::sleep(period + Duration::from_millis(i.delay_ms.load(Ordering::Relaxed)));
    }
    set(None);
    if epoch.is_some() {
        let _ = lease.release();
    }
}

/// Take the lease if it is free: fence the previous holder and record the
/// next epoch first; `None` when it is not free or a step failed.
fn take(lease: &RadosLease, fence: Duration) -> Option<u64> {
    let previous = match lease.acquire() {
        Ok(Taken::Yes { previous }) => previous,
        Ok(Taken::Busy) => return None,
        Err(e) => {
            tracing::warn!("taking the metadata lease: {e}");
            return None;
        }
    };
    let step = || -> Result<u64, crate::BackendError> {
        if let Some(p) = previous {
            lease.blocklist(&p, fence)?;
            tracing::info!(fenced = %p, "previous metadata lease holder blocklisted");
        }
        let e = lease.epoch()? + 1;
        lease.set_epoch(e)?;
        Ok(e)
    };
    match step() {
        Ok(e) => Some(e),
        Err(e) => {
            // Not active without the fence and the epoch: let it go.
            tracing::warn!("fencing or recording the epoch: {e}");
            let _ = lease.release();
            None
        }
    }
}

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
    /// May take the lease (the node is ready to serve), recording these
    /// addresses of its other Ceph clients too; `None` after a loss until
    /// the node says it is ready again.
    armed: Mutex<Option<Vec<String>>>,
    /// Where clients reach this node (recorded when it is active).
    advert: String,
    /// Armed again at once after a loss (a node with no other Ceph
    /// client to renew: `Leadership::start`).
    rearm: bool,
    /// The active node as last read from the lease object (a standby's
    /// view), or this node's own while active.
    seen: Mutex<Option<(u64, String)>>,
    stop: AtomicBool,
    /// Give the lease up at the next tick (the node cannot serve).
    resign: AtomicBool,
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
    /// Armed from the start, with nothing to say about itself.
    pub fn start<F>(connect: F, fence: Duration) -> Result<Leadership, crate::BackendError>
    where
        F: Fn() -> Result<RadosLease, crate::BackendError> + Send + 'static,
    {
        let l = Leadership::launch(connect, fence, String::new(), true)?;
        l.arm(Vec::new());
        Ok(l)
    }

    /// The same for a node that says `advert` about itself once active
    /// (where clients reach it), not armed: it takes the lease only after
    /// [`Leadership::arm`].
    pub fn start_with<F>(
        connect: F,
        fence: Duration,
        advert: String,
    ) -> Result<Leadership, crate::BackendError>
    where
        F: Fn() -> Result<RadosLease, crate::BackendError> + Send + 'static,
    {
        Leadership::launch(connect, fence, advert, false)
    }

    fn launch<F>(
        connect: F,
        fence: Duration,
        advert: String,
        rearm: bool,
    ) -> Result<Leadership, crate::BackendError>
    where
        F: Fn() -> Result<RadosLease, crate::BackendError> + Send + 'static,
    {
        let lease = connect()?;
        let inner = Arc::new(Inner {
            active: Mutex::new(None),
            armed: Mutex::new(None),
            advert,
            rearm,
            seen: Mutex::new(None),
            stop: AtomicBool::new(false),
            resign: AtomicBool::new(false),
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
        let a = lock(&self.inner.active);
        match *a {
            Some((until, epoch)) if Instant::now() < until => Role::Active { epoch },
            _ => Role::Standby,
        }
    }

    /// Ready to take the lease when it is free, recording `also` (the
    /// addresses of this node's other Ceph clients, e.g. its namespace
    /// mount) for the next holder to fence. A loss disarms it.
    pub fn arm(&self, also: Vec<String>) {
        *lock(&self.inner.armed) = Some(also);
    }

    /// Give the lease up (this node took it and cannot serve): it stops
    /// being active at once, releases the lease at the next tick and is
    /// disarmed until [`Leadership::arm`].
    pub fn resign(&self) {
        let mut a = lock(&self.inner.active);
        self.inner.resign.store(true, Ordering::Relaxed);
        *a = None;
    }

    /// The active node as last seen: its epoch and what it says about
    /// itself (this node's own while it is active).
    pub fn active(&self) -> Option<(u64, String)> {
        lock(&self.inner.seen).clone()
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

/// How often a standby tries to take the lease.
const STANDBY_POLL: Duration = Duration::from_millis(250);

/// The part of a lease this node does not count on (clock rate, the
/// renewal's own flight).
fn margin(d: Duration) -> Duration {
    (d / 10).max(Duration::from_millis(100))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn run<F>(mut lease: RadosLease, connect: &F, i: &Inner, fence: Duration)
where
    F: Fn() -> Result<RadosLease, crate::BackendError>,
{
    let period = i.duration / 3;
    // Under the lock a resignation takes too: once resigned, not active
    // again until the lease was given up.
    let set = |v: Option<(Instant, u64)>| {
        let mut a = lock(&i.active);
        *a = v.filter(|_| !i.resign.load(Ordering::Relaxed));
    };
    let mut epoch = None;
    while !i.stop.load(Ordering::Relaxed) {
        let sent = Instant::now();
        let valid = sent + i.duration - margin(i.duration);
        match epoch {
            None => {
                let armed = lock(&i.armed).clone();
                if let Some(e) = armed.and_then(|also| take(&lease, fence, &also, &i.advert)) {
                    epoch = Some(e);
                    set(Some((valid, e)));
                    *lock(&i.seen) = Some((e, i.advert.clone()));
                    tracing::info!(epoch = e, "metadata lease taken: active");
                } else if let Ok(a) = lease.active() {
                    *lock(&i.seen) = a;
                }
            }
            Some(e) if i.resign.swap(false, Ordering::Relaxed) => {
                set(None);
                *lock(&i.armed) = None;
                epoch = None;
                let _ = lease.release();
                tracing::warn!(epoch = e, "metadata lease given up: standby");
            }
            Some(e) => match lease.renew() {
                Ok(()) => set(Some((valid, e))),
                Err(err) => {
                    set(None);
                    *lock(&i.armed) = i.rearm.then(Vec::new);
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
        // A standby looks more often than an active node renews: a lease
        // run out is taken within a quarter second.
        let wait = match epoch {
            Some(_) => period + Duration::from_millis(i.delay_ms.load(Ordering::Relaxed)),
            None => period.min(STANDBY_POLL),
        };
        std::thread::sleep(wait);
    }
    set(None);
    if epoch.is_some() {
        let _ = lease.release();
    }
}

/// Take the lease if it is free: fence the previous holder (every client
/// it recorded) and record the next epoch and `advert` first; `None` when
/// it is not free or a step failed.
fn take(lease: &RadosLease, fence: Duration, also: &[String], advert: &str) -> Option<u64> {
    let previous = match lease.acquire_with(also) {
        Ok(Taken::Yes { previous }) => previous,
        Ok(Taken::Busy) => return None,
        Err(e) => {
            tracing::warn!("taking the metadata lease: {e}");
            return None;
        }
    };
    let step = || -> Result<u64, crate::BackendError> {
        for p in previous.iter().flat_map(|p| p.split_whitespace()) {
            lease.blocklist(p, fence)?;
            tracing::info!(fenced = %p, "previous metadata lease holder blocklisted");
        }
        let e = lease.epoch()? + 1;
        lease.set_epoch(e)?;
        lease.set_active(e, advert)?;
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

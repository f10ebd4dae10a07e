//! I/O shaping: read and write bandwidth per application, user or group
//! (access rules of action `shape`, EOS 5.4's traffic shaping), and the
//! bytes each application moves (`tessera_io_bytes_total{direction,app}`;
//! its `rate()` is the moving average). A session gets its [`Pace`] when
//! it opens; a read is paced before it is made (no buffer is held while
//! it waits), a write after its bytes went into the file (the front-end
//! reads nothing more from the client meanwhile: the client is slowed by
//! TCP, and the memory budget stays the bound). The buckets are bytes
//! with a debt: a chunk takes what it needs and waits until the balance
//! is back to zero, so any chunk size keeps the rate.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tessera_types::Identity;

/// Buckets past which idle ones are dropped (rules × the keys they
/// count).
const MAX_BUCKETS: usize = 10_000;
/// Application names the byte counters keep apart; the rest count as
/// `other` (a client names its application: it must not grow the series).
const MAX_APPS: usize = 32;
/// Uids (and gids) the byte counters keep apart.
const MAX_OWNERS: usize = 64;

/// Bytes per second with a tenth of a second's burst, and a debt.
struct ByteBucket {
    rate: f64,
    state: Mutex<(f64, Instant)>,
}

impl ByteBucket {
    fn new(rate: f64) -> ByteBucket {
        ByteBucket {
            rate,
            state: Mutex::new((rate / 10.0, Instant::now())),
        }
    }

    /// Take `n` bytes: how long to wait until the balance is not negative.
    fn take(&self, n: usize) -> Duration {
        self.take_at(n, self.rate)
    }

    /// [`ByteBucket::take`] at `rate` (the reservations' rest bucket
    /// changes its rate as reservations come and go).
    fn take_at(&self, n: usize, rate: f64) -> Duration {
        let mut s = crate::lock(&self.state);
        let now = Instant::now();
        let burst = rate / 10.0;
        s.0 = (s.0 + now.duration_since(s.1).as_secs_f64() * rate).min(burst);
        s.1 = now;
        s.0 -= n as f64;
        if s.0 >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-s.0 / rate)
        }
    }
}

/// How long after its last bytes a reservation's subject counts as
/// active.
const ACTIVE_FOR: Duration = Duration::from_secs(2);

/// The buckets and counters of every session.
#[derive(Default)]
pub(crate) struct Shaper {
    buckets: Mutex<HashMap<(u64, String), Arc<ByteBucket>>>,
    apps: Mutex<HashMap<String, ()>>,
    /// The uids and gids the byte counters keep apart (64 of each).
    owners: Mutex<HashMap<(bool, u32), ()>>,
    /// What the storage reads and writes at most, bytes per second
    /// (`[io]`; 0: not said, and reservations do nothing).
    capacity: [std::sync::atomic::AtomicU64; 2],
    /// When each reservation's subject last moved bytes.
    active: Mutex<HashMap<u64, Instant>>,
    /// What every session no active reservation covers shares, per
    /// direction (reads, writes): the capacity less the active
    /// reservations.
    rest: [Mutex<Option<Arc<ByteBucket>>>; 2],
}

impl Shaper {
    fn rest_bucket(&self, write: bool) -> Arc<ByteBucket> {
        let mut r = crate::lock(&self.rest[usize::from(write)]);
        Arc::clone(r.get_or_insert_with(|| Arc::new(ByteBucket::new(1.0))))
    }
}

/// A session no reservation covers, while reservations are in force.
#[derive(Clone)]
struct Rest {
    shaper: Arc<Shaper>,
    write: bool,
    /// The reservations of its direction: (rule, bytes per second).
    reserves: Vec<(u64, f64)>,
    bucket: Arc<ByteBucket>,
}

impl Rest {
    /// The rate the rest may have now (`None`: no reservation active or
    /// no capacity said).
    fn rate(&self) -> Option<f64> {
        let cap = self.shaper.capacity[usize::from(self.write)]
            .load(std::sync::atomic::Ordering::Relaxed);
        if cap == 0 {
            return None;
        }
        let active = crate::lock(&self.shaper.active);
        let reserved: f64 = self
            .reserves
            .iter()
            .filter(|(id, _)| active.get(id).is_some_and(|t| t.elapsed() < ACTIVE_FOR))
            .map(|(_, r)| r)
            .sum();
        (reserved > 0.0).then(|| (cap as f64 - reserved).max(cap as f64 / 100.0))
    }
}

/// What one session's bytes are paced and counted by.
#[derive(Clone, Default)]
pub struct Pace {
    buckets: Vec<Arc<ByteBucket>>,
    /// By application, uid and gid.
    counters: Vec<tessera_obs::IoCounter>,
    /// The reservations that cover this session (marked active by its
    /// bytes), and the shaper they are kept in.
    reserved: Vec<u64>,
    shaper: Option<Arc<Shaper>>,
    /// Not covered while reservations are in force: the rest's share.
    rest: Option<Rest>,
}

impl Pace {
    /// Count `n` bytes and wait as long as the buckets say: taken a
    /// slice at a time (a tenth of a second's worth of the slowest
    /// bucket, at least 64 KiB), so that no request leaves a debt larger
    /// than a slice behind, even one abandoned while it waits.
    pub async fn bytes(&self, n: usize) {
        for c in &self.counters {
            c.add(n as u64);
        }
        self.mark_active();
        let rest_rate = self.rest.as_ref().and_then(Rest::rate);
        let Some(slowest) = (self.buckets.iter().map(|b| b.rate))
            .chain(rest_rate)
            .reduce(f64::min)
        else {
            return;
        };
        let slice = ((slowest / 10.0) as usize).max(64 << 10);
        let mut left = n;
        while left > 0 {
            let take = left.min(slice);
            left -= take;
            // Active for as long as it moves bytes (a paced call lasts).
            self.mark_active();
            let mut wait = self.buckets.iter().map(|b| b.take(take)).max();
            if let Some(rest) = &self.rest {
                if let Some(rate) = rest.rate() {
                    wait = wait.max(Some(rest.bucket.take_at(take, rate)));
                }
            }
            if let Some(w) = wait.filter(|w| !w.is_zero()) {
                tokio::time::sleep(w).await;
            }
        }
    }

    /// The reservations covering this session are active now.
    fn mark_active(&self) {
        if let (Some(s), false) = (&self.shaper, self.reserved.is_empty()) {
            let now = Instant::now();
            let mut active = crate::lock(&s.active);
            for id in &self.reserved {
                active.insert(*id, now);
            }
        }
    }

    /// Whether any rule shapes it.
    pub fn shaped(&self) -> bool {
        !self.buckets.is_empty()
    }
}

impl crate::Core {
    /// The pace of a session of `who` from application `app` that reads
    /// (or with `write`, writes).
    pub fn pace(&self, who: &Identity, app: &str, write: bool) -> Pace {
        let (rules, _) = self.rules.current();
        let mut buckets = Vec::new();
        {
            let mut all = crate::lock(&self.shaper.buckets);
            for s in rules.shapes() {
                if s.writes.is_some_and(|w| w != write) {
                    continue;
                }
                for key in s.counted.keys(who, app) {
                    let k = (s.id, key);
                    if let Some(b) = all.get(&k) {
                        buckets.push(Arc::clone(b));
                    } else {
                        if all.len() >= MAX_BUCKETS {
                            // Buckets no session holds go (idle ones:
                            // each session holds its own): the map stays
                            // as large as the sessions open, never fails
                            // open.
                            all.retain(|_, b| Arc::strong_count(b) > 1);
                        }
                        let b = Arc::new(ByteBucket::new(s.rate));
                        all.insert(k, Arc::clone(&b));
                        buckets.push(b);
                    }
                }
            }
        }
        let label = {
            let mut apps = crate::lock(&self.shaper.apps);
            let name = if app.is_empty() { "-" } else { app };
            if apps.contains_key(name) || apps.len() < MAX_APPS {
                apps.insert(name.to_string(), ());
                name.to_string()
            } else {
                "other".to_string()
            }
        };
        let dir = if write { "write" } else { "read" };
        let mut counters = vec![self.metrics.rules.io_counter(dir, &label)];
        {
            let mut owners = crate::lock(&self.shaper.owners);
            for (gid, id) in [(false, who.uid), (true, who.gid)] {
                let kept = owners.contains_key(&(gid, id))
                    || owners.keys().filter(|k| k.0 == gid).count() < MAX_OWNERS;
                let shown = if kept {
                    owners.insert((gid, id), ());
                    id.to_string()
                } else {
                    "other".to_string()
                };
                let kind = if gid { "gid" } else { "uid" };
                counters.push(self.metrics.rules.io_owner_counter(dir, kind, &shown));
            }
        }
        // Reservations of this direction: this session is covered by
        // some (and marks them active), or shares the rest.
        let mine: Vec<&crate::rules::Shape> = rules
            .reserves()
            .iter()
            .filter(|s| s.writes.is_none_or(|w| w == write))
            .collect();
        let reserved: Vec<u64> = mine
            .iter()
            .filter(|s| !s.counted.keys(who, app).is_empty())
            .map(|s| s.id)
            .collect();
        let rest = (!mine.is_empty() && reserved.is_empty()).then(|| Rest {
            shaper: Arc::clone(&self.shaper),
            write,
            reserves: mine.iter().map(|s| (s.id, s.rate)).collect(),
            bucket: self.shaper.rest_bucket(write),
        });
        Pace {
            buckets,
            counters,
            shaper: (!reserved.is_empty()).then(|| Arc::clone(&self.shaper)),
            reserved,
            rest,
        }
    }

    /// What the storage reads and writes at most, bytes per second (0:
    /// not said): what reservations keep their share of.
    pub fn set_io_capacity(&self, read: u64, write: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        self.shaper.capacity[0].store(read, Relaxed);
        self.shaper.capacity[1].store(write, Relaxed);
    }
}

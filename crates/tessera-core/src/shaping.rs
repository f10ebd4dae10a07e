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
        let mut s = crate::lock(&self.state);
        let now = Instant::now();
        let burst = self.rate / 10.0;
        s.0 = (s.0 + now.duration_since(s.1).as_secs_f64() * self.rate).min(burst);
        s.1 = now;
        s.0 -= n as f64;
        if s.0 >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-s.0 / self.rate)
        }
    }
}

/// The buckets and counters of every session.
#[derive(Default)]
pub(crate) struct Shaper {
    buckets: Mutex<HashMap<(u64, String), Arc<ByteBucket>>>,
    apps: Mutex<HashMap<String, ()>>,
}

/// What one session's bytes are paced and counted by.
#[derive(Clone, Default)]
pub struct Pace {
    buckets: Vec<Arc<ByteBucket>>,
    counter: Option<tessera_obs::IoCounter>,
}

impl Pace {
    /// Count `n` bytes and wait as long as the buckets say: taken a
    /// slice at a time (a tenth of a second's worth of the slowest
    /// bucket, at least 64 KiB), so that no request leaves a debt larger
    /// than a slice behind, even one abandoned while it waits.
    pub async fn bytes(&self, n: usize) {
        if let Some(c) = &self.counter {
            c.add(n as u64);
        }
        let Some(slowest) = self.buckets.iter().map(|b| b.rate).reduce(f64::min) else {
            return;
        };
        let slice = ((slowest / 10.0) as usize).max(64 << 10);
        let mut left = n;
        while left > 0 {
            let take = left.min(slice);
            left -= take;
            let wait = self.buckets.iter().map(|b| b.take(take)).max();
            if let Some(w) = wait.filter(|w| !w.is_zero()) {
                tokio::time::sleep(w).await;
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
        let counter = self
            .metrics
            .rules
            .io_counter(if write { "write" } else { "read" }, &label);
        Pace {
            buckets,
            counter: Some(counter),
        }
    }
}

//! Each filesystem's health as this process sees it: an I/O error on a
//! filesystem (EROFS, EIO, ENOSPC, a probe that does not come back in
//! time) marks it degraded at once, and new stripes avoid it until a probe
//! (a small stripe written and removed, on its own thread and with a
//! deadline) succeeds again. Not stored: every process learns it from its
//! own I/O and probes.

use crate::fs::Filesystems;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use tessera_backend::{Backend, BackendError, StripeName};

/// How long a probe may take before its filesystem counts as unresponsive.
pub const PROBE_DEADLINE: Duration = Duration::from_secs(10);

/// The health state shown by `fs ls` and exported as a metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HealthState {
    Ok,
    /// An I/O error: no new stripes until a probe succeeds.
    Degraded,
    /// A probe did not finish within its deadline (a hung mount, a CephFS
    /// without an active MDS): no new stripes.
    Unresponsive,
}

impl HealthState {
    pub fn as_str(self) -> &'static str {
        match self {
            HealthState::Ok => "ok",
            HealthState::Degraded => "degraded",
            HealthState::Unresponsive => "unresponsive",
        }
    }
}

/// What is known of one filesystem's health.
#[derive(Debug, Clone)]
pub struct Health {
    pub state: HealthState,
    /// Why it is not ok, and since when.
    pub reason: Option<(SystemTime, String)>,
    /// How long the last probe that finished took.
    pub probe_latency: Option<Duration>,
    /// Space, as the last good probe found it.
    pub capacity: Option<tessera_backend::Capacity>,
}

impl Default for Health {
    fn default() -> Health {
        Health {
            state: HealthState::Ok,
            reason: None,
            probe_latency: None,
            capacity: None,
        }
    }
}

/// One filesystem's health cell.
#[derive(Default)]
pub(crate) struct HealthCell {
    health: Mutex<Health>,
    /// A probe is running (a hung one is not started again).
    probing: Arc<AtomicBool>,
}

impl HealthCell {
    pub(crate) fn get(&self) -> Health {
        crate::lock(&self.health).clone()
    }

    pub(crate) fn usable(&self) -> bool {
        self.get().state == HealthState::Ok
    }

    /// An error of a call to filesystem `id`: a storage failure degrades
    /// it (a deadline passed: unresponsive).
    pub(crate) fn note(&self, id: u32, e: &BackendError) {
        if !is_storage_failure(e) {
            return;
        }
        let state = failed_state(e);
        if self.set(state, Some(e.to_string())) {
            tracing::warn!(
                fs = id,
                "filesystem {}, no new stripes until a probe succeeds: {e}",
                state.as_str()
            );
        }
    }

    fn set(&self, state: HealthState, why: Option<String>) -> bool {
        let mut h = crate::lock(&self.health);
        let changed = h.state != state;
        h.state = state;
        if changed || why.is_none() {
            h.reason = why.map(|w| (SystemTime::now(), w));
        }
        changed
    }
}

/// Whether `e` says the storage itself is failing (as opposed to the
/// request: a stripe that does not exist or already does).
pub(crate) fn is_storage_failure(e: &BackendError) -> bool {
    matches!(
        e,
        BackendError::Io { .. } | BackendError::Unavailable(_) | BackendError::TimedOut(_)
    )
}

/// The state a storage failure puts a filesystem in: a passed deadline
/// makes it unresponsive, anything else degraded.
fn failed_state(e: &BackendError) -> HealthState {
    match e {
        BackendError::TimedOut(_) => HealthState::Unresponsive,
        _ => HealthState::Degraded,
    }
}

/// Write a small stripe of file id 0 (never a file's) and remove it; then
/// read the space.
fn probe(b: &dyn Backend) -> Result<tessera_backend::Capacity, BackendError> {
    let mut w = b.create(
        &StripeName::new(0, 0),
        (1 << 62) | (tessera_backend::random_u64() >> 2),
    )?;
    let r = w.write_at(0, &[0u8; 4096]);
    w.abort();
    r?;
    b.capacity()
}

impl Filesystems {
    /// An I/O error on filesystem `id`: new stripes avoid it from now on.
    pub(crate) fn note_failure(&self, id: u32, e: &BackendError) {
        if let Some(cell) = self.health_of(id) {
            cell.note(id, e);
        }
    }

    /// Probe every filesystem that is not off (at most one probe each at a
    /// time), each on a thread of its own; wait at most `deadline` for
    /// them. A failed probe degrades its filesystem, a late one makes it
    /// unresponsive, a good one makes it ok again.
    pub(crate) fn probe_all(&self, deadline: Duration) {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut waiting = Vec::new();
        for (id, b, cell) in self.probe_targets() {
            if cell.probing.swap(true, Ordering::AcqRel) {
                waiting.push((id, cell)); // the last one has not come back
                continue;
            }
            let tx = tx.clone();
            let flag = Arc::clone(&cell.probing);
            waiting.push((id, cell));
            let spawned = std::thread::Builder::new()
                .name(format!("probe-fs{id}"))
                .spawn(move || {
                    let t0 = Instant::now();
                    let r = probe(b.as_ref());
                    flag.store(false, Ordering::Release);
                    let _ = tx.send((id, t0.elapsed(), r));
                });
            if spawned.is_err() {
                if let Some((_, c)) = waiting.last() {
                    c.probing.store(false, Ordering::Release);
                }
            }
        }
        drop(tx);
        let end = Instant::now() + deadline;
        let mut answered = std::collections::HashSet::new();
        while let Some(left) = end.checked_duration_since(Instant::now()) {
            let Ok((id, took, r)) = rx.recv_timeout(left) else {
                break;
            };
            answered.insert(id);
            let Some((_, cell)) = waiting.iter().find(|(i, _)| *i == id) else {
                continue;
            };
            {
                let mut h = crate::lock(&cell.health);
                h.probe_latency = Some(took);
                if let Ok(c) = &r {
                    h.capacity = Some(*c);
                }
            }
            match r {
                Ok(_) => {
                    if cell.set(HealthState::Ok, None) {
                        tracing::info!(fs = id, "filesystem healthy again (probe took {took:?})");
                    }
                }
                Err(e) => {
                    // A bounded backend's own deadline may answer first.
                    let state = failed_state(&e);
                    if cell.set(state, Some(format!("probe: {e}"))) {
                        tracing::warn!(fs = id, "filesystem {}: probe: {e}", state.as_str());
                    }
                }
            }
        }
        for (id, cell) in waiting {
            if !answered.contains(&id) {
                let why = format!("a probe did not finish within {deadline:?}");
                if cell.set(HealthState::Unresponsive, Some(why.clone())) {
                    tracing::warn!(fs = id, "filesystem unresponsive: {why}");
                }
            }
        }
    }
}

impl Filesystems {
    /// Each filesystem's health in the metrics (`tessera_fs_*`).
    fn export(&self, m: &tessera_obs::Metrics) {
        for (rec, _) in self.opened() {
            let Some(cell) = self.health_of(rec.id) else {
                continue;
            };
            let h = cell.get();
            let l = tessera_obs::FsLabels {
                fs: rec.id.to_string(),
                label: rec.label.clone(),
            };
            m.data.fs_state.get_or_create(&l).set(match h.state {
                HealthState::Ok => 0,
                HealthState::Degraded => 1,
                HealthState::Unresponsive => 2,
            });
            if let Some(t) = h.probe_latency {
                m.data
                    .fs_probe_seconds
                    .get_or_create(&l)
                    .set(t.as_secs_f64());
            }
            if let Some(c) = h.capacity {
                m.data.fs_free_bytes.get_or_create(&l).set(c.free_bytes);
                m.data
                    .fs_capacity_bytes
                    .get_or_create(&l)
                    .set(c.total_bytes);
            }
        }
    }
}

impl crate::Core {
    /// The deadline of every call to a filesystem that can hang (CephFS,
    /// FUSE, NFS), from now on (`[data] io_timeout`; 10 s until set).
    pub fn set_io_timeout(&self, d: Duration) {
        self.fs.set_io_timeout(d);
    }

    /// Probe every filesystem (blocking, at most `deadline`; see
    /// `Filesystems::probe_all`) and export what was found. A server runs
    /// this every few seconds.
    pub fn probe_filesystems(&self, deadline: Duration) {
        self.fs.probe_all(deadline);
        self.fs.export(&self.metrics);
    }
}

impl crate::DataPath {
    /// As [`crate::Core::set_io_timeout`], for a gateway's filesystems.
    pub fn set_io_timeout(&self, d: Duration) {
        self.fs.set_io_timeout(d);
    }

    /// As [`crate::Core::probe_filesystems`], for a gateway's filesystems.
    pub fn probe_filesystems(&self, deadline: Duration) {
        self.fs.probe_all(deadline);
        if let Some((m, _)) = &self.obs {
            self.fs.export(m);
        }
    }
}

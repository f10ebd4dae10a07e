//! The filesystems Tessera writes stripes to: the registry (kept in the
//! namespace store) and the opened backends.

use crate::health::{Health, HealthCell};
use crate::{Core, CoreError};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use tessera_backend::{Backend, Capacity};
use tessera_meta::{FsConfigStatus, FsRecord, MetaStore};
use tessera_types::Identity;

struct Opened {
    rec: FsRecord,
    backend: Result<Arc<dyn Backend>, String>,
    /// Last capacity reading for placement (statfs on a CephFS mount is a
    /// round trip to the cluster: not once per file written).
    capacity: std::sync::Mutex<Option<(std::time::Instant, Option<Capacity>)>>,
    health: Arc<HealthCell>,
}

impl Opened {
    fn new(rec: FsRecord, backend: Result<Arc<dyn Backend>, String>) -> Opened {
        Opened {
            rec,
            backend,
            capacity: std::sync::Mutex::new(None),
            health: Arc::default(),
        }
    }

    /// Capacity for placement, read at most once per `CAPACITY_TTL`,
    /// with the root's marker checked to name this filesystem (`None`:
    /// not usable for new stripes now).
    fn placement_capacity(&self) -> Option<Capacity> {
        let b = self.backend.as_ref().ok()?;
        let mut c = crate::lock(&self.capacity);
        if let Some((at, cap)) = *c {
            if at.elapsed() < CAPACITY_TTL {
                return cap;
            }
        }
        let cap = match crate::fsident::check_identity(&self.rec, b.as_ref()) {
            Ok(()) => b.capacity().ok(),
            Err(why) => {
                tracing::warn!(fs = self.rec.id, "{why}");
                None
            }
        };
        *c = Some((std::time::Instant::now(), cap));
        cap
    }
}

/// How long a capacity reading is used for placement.
const CAPACITY_TTL: std::time::Duration = std::time::Duration::from_secs(2);

/// The Ceph cluster (conf path) and CephFS name behind a `cephfs:` locator.
fn ceph_of(locator: &str) -> Option<(String, String)> {
    match tessera_backend::Locator::parse(locator).ok()? {
        tessera_backend::Locator::CephFs { conf, fs, .. } => Some((conf, fs)),
        tessera_backend::Locator::Folder(_) => None,
    }
}

/// How long a cluster's status is trusted before asking its mon again.
const CLUSTER_TTL: std::time::Duration = std::time::Duration::from_secs(5);

#[derive(Default)]
struct ClusterWatch {
    conn: Option<Arc<tessera_backend::CephCluster>>,
    last: Option<(
        std::time::Instant,
        Result<tessera_backend::ClusterStatus, String>,
    )>,
}

/// Registered filesystems with their opened backends, and the Ceph
/// clusters behind them.
pub(crate) struct Filesystems {
    map: RwLock<HashMap<u32, Opened>>,
    clusters: std::sync::Mutex<HashMap<String, ClusterWatch>>,
    /// The deadline of every call to a remote backend (`[data]
    /// io_timeout`), shared with their `Bounded` wrappers.
    io_timeout: tessera_backend::Deadline,
}

/// The deadline of backend calls until a server sets its own.
pub const DEFAULT_IO_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Open `locator`; a backend whose calls can hang gets `deadline`.
fn open_bounded(
    locator: &str,
    deadline: &tessera_backend::Deadline,
) -> Result<Arc<dyn Backend>, String> {
    let b = tessera_backend::open_locator(locator).map_err(|e| e.to_string())?;
    Ok(bound(b, deadline))
}

/// `b` behind a deadline when its calls can hang.
pub(crate) fn bound(b: Arc<dyn Backend>, deadline: &tessera_backend::Deadline) -> Arc<dyn Backend> {
    if b.remote() {
        Arc::new(tessera_backend::Bounded::new(b, Arc::clone(deadline)))
    } else {
        b
    }
}

/// A filesystem as the admin sees it.
#[derive(Debug, Clone)]
pub struct FsView {
    pub rec: FsRecord,
    pub capacity: Option<Capacity>,
    /// Why the backend cannot be used, if it cannot.
    pub error: Option<String>,
    /// The Ceph cluster's health for a `cephfs:` filesystem.
    pub cluster: Option<String>,
    /// What this process's I/O and probes found.
    pub health: Health,
}

/// A placement pool, summed over its filesystems.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpaceView {
    pub name: String,
    pub filesystems: u64,
    pub writable: u64,
    pub domains: u64,
    pub total_bytes: u64,
    pub free_bytes: u64,
}

/// Changes to a filesystem's record (`None` keeps a field).
#[derive(Debug, Clone, Default)]
pub struct FsChange {
    pub label: Option<String>,
    pub domain: Option<String>,
    pub space: Option<String>,
    pub status: Option<FsConfigStatus>,
}

impl Filesystems {
    pub fn load(meta: &MetaStore) -> Result<Filesystems, CoreError> {
        Ok(Filesystems::from_records(meta.fs_list()?))
    }

    pub fn from_records(records: Vec<FsRecord>) -> Filesystems {
        let io_timeout = tessera_backend::deadline(DEFAULT_IO_TIMEOUT);
        let map = records
            .into_iter()
            .map(|rec| {
                let backend = open_bounded(&rec.locator, &io_timeout);
                (rec.id, Opened::new(rec, backend))
            })
            .collect();
        Filesystems {
            map: RwLock::new(map),
            clusters: std::sync::Mutex::new(HashMap::new()),
            io_timeout,
        }
    }

    /// The deadline of every call to a remote backend from now on.
    pub fn set_io_timeout(&self, d: std::time::Duration) {
        self.io_timeout.store(
            d.as_millis().max(1) as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// Take a new list: changed records are updated, new locators opened,
    /// filesystems no longer listed forgotten.
    pub fn replace_records(&self, records: Vec<FsRecord>) {
        let mut m = self.write();
        m.retain(|id, _| records.iter().any(|r| r.id == *id));
        for rec in records {
            match m.get_mut(&rec.id) {
                Some(o) if o.rec.locator == rec.locator => o.rec = rec,
                _ => {
                    let backend = open_bounded(&rec.locator, &self.io_timeout);
                    m.insert(rec.id, Opened::new(rec, backend));
                }
            }
        }
    }

    /// The status of the cluster with `conf` (cached for `CLUSTER_TTL`).
    fn cluster(&self, conf: &str) -> Result<tessera_backend::ClusterStatus, String> {
        let mut all = crate::lock(&self.clusters);
        let w = all.entry(conf.to_string()).or_default();
        if let Some((at, st)) = &w.last {
            if at.elapsed() < CLUSTER_TTL {
                return st.clone();
            }
        }
        if w.conn.is_none() {
            match tessera_backend::CephCluster::connect(conf) {
                Ok(c) => w.conn = Some(Arc::new(c)),
                Err(e) => {
                    let r = Err(e.to_string());
                    w.last = Some((std::time::Instant::now(), r.clone()));
                    return r;
                }
            }
        }
        let r = w
            .conn
            .as_ref()
            .map(|c| c.status().map_err(|e| e.to_string()))
            .unwrap_or_else(|| Err("not connected".into()));
        if r.is_err() {
            w.conn = None; // reconnect next time
        }
        w.last = Some((std::time::Instant::now(), r.clone()));
        r
    }

    /// `None` for filesystems not on a known Ceph cluster; otherwise the
    /// cluster's verdict for this file system and a one-line summary.
    fn cluster_verdict(&self, rec: &FsRecord) -> Option<(bool, String)> {
        let (conf, fs) = ceph_of(&rec.locator)?;
        Some(match self.cluster(&conf) {
            Ok(st) => {
                let ok = st.writable(&fs);
                let active = st.filesystems.iter().any(|(n, a)| *n == fs && *a);
                let mds = if active { "mds active" } else { "mds down" };
                let full = if st.full { " full" } else { "" };
                (ok, format!("{} {mds}{full}", st.health))
            }
            Err(e) => (false, format!("unreachable: {e}")),
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<u32, Opened>> {
        self.map.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<u32, Opened>> {
        self.map.write().unwrap_or_else(|p| p.into_inner())
    }

    /// How many filesystems are known.
    pub fn count(&self) -> usize {
        self.read().len()
    }

    /// The backend to read filesystem `id`'s stripes from: as `backend`,
    /// and not while it is unresponsive (a read rebuilds around it instead
    /// of waiting; a degraded one, e.g. read-only, still serves reads).
    pub fn backend_for_read(&self, id: u32) -> Option<Arc<dyn Backend>> {
        let responsive = self
            .health_of(id)
            .is_some_and(|h| h.get().state != crate::HealthState::Unresponsive);
        self.backend(id).filter(|_| responsive)
    }

    /// The backend of filesystem `id`, unless it is unknown, off or broken.
    pub fn backend(&self, id: u32) -> Option<Arc<dyn Backend>> {
        let m = self.read();
        let o = m.get(&id)?;
        if o.rec.status == FsConfigStatus::Off {
            return None;
        }
        o.backend.as_ref().ok().cloned()
    }

    /// Every registered filesystem with its backend (if it opened).
    pub(crate) fn opened(&self) -> Vec<(FsRecord, Option<Arc<dyn Backend>>)> {
        self.read()
            .values()
            .map(|o| (o.rec.clone(), o.backend.as_ref().ok().cloned()))
            .collect()
    }

    /// Add a filesystem just registered.
    pub(crate) fn insert(&self, rec: FsRecord, backend: Arc<dyn Backend>) {
        let b = bound(backend, &self.io_timeout);
        self.write().insert(rec.id, Opened::new(rec, Ok(b)));
    }

    pub fn record(&self, id: u32) -> Option<FsRecord> {
        self.read().get(&id).map(|o| o.rec.clone())
    }

    pub fn set_record(&self, rec: FsRecord) {
        if let Some(o) = self.write().get_mut(&rec.id) {
            o.rec = rec;
        }
    }

    pub(crate) fn health_of(&self, id: u32) -> Option<Arc<HealthCell>> {
        self.read().get(&id).map(|o| Arc::clone(&o.health))
    }

    /// The filesystems a health probe writes to: not off, opened.
    pub(crate) fn probe_targets(&self) -> Vec<(u32, Arc<dyn Backend>, Arc<HealthCell>)> {
        self.read()
            .values()
            .filter(|o| o.rec.status != FsConfigStatus::Off)
            .filter_map(|o| {
                let b = o.backend.as_ref().ok()?;
                Some((o.rec.id, Arc::clone(b), Arc::clone(&o.health)))
            })
            .collect()
    }

    /// Another filesystem for stripe `index` of `p`: writable and healthy,
    /// in the space of the one it had, in a failure domain none of the
    /// other stripes uses.
    pub(crate) fn replacement(
        &self,
        p: &tessera_data::Placement,
        index: usize,
        seed: u64,
    ) -> Option<u32> {
        let cur = p.fsids[index];
        let others: std::collections::HashSet<String> = p
            .fsids
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != index)
            .filter_map(|(_, id)| self.record(*id).map(|r| r.domain))
            .collect();
        let space = self
            .record(cur)
            .map(|r| r.space)
            .unwrap_or_else(|| crate::DEFAULT_SPACE.into());
        let cands: Vec<tessera_data::Candidate> = self
            .candidates(&space)
            .into_iter()
            .filter(|c| c.fsid != cur && !others.contains(&c.domain))
            .collect();
        let one = tessera_data::Layout::plain();
        tessera_data::place(&one, &cands, seed)
            .ok()?
            .first()
            .copied()
    }

    /// Writable filesystems of a space, with their free space.
    pub fn candidates(&self, space: &str) -> Vec<tessera_data::Candidate> {
        self.read()
            .values()
            .filter(|o| o.rec.space == space && o.rec.status == FsConfigStatus::Rw)
            .filter(|o| o.health.usable())
            // Ask the cluster first: a file system without an active MDS
            // would hang the capacity call.
            .filter(|o| self.cluster_verdict(&o.rec).is_none_or(|(ok, _)| ok))
            .filter_map(|o| {
                let cap = o.placement_capacity()?;
                Some(tessera_data::Candidate {
                    fsid: o.rec.id,
                    domain: o.rec.domain.clone(),
                    free_bytes: cap.free_bytes,
                })
            })
            .collect()
    }

    pub fn views(&self) -> Vec<FsView> {
        let mut v: Vec<FsView> = self
            .read()
            .values()
            .map(|o| {
                let verdict = self.cluster_verdict(&o.rec);
                let cluster = verdict.as_ref().map(|(_, s)| s.clone());
                let view = |capacity, error| FsView {
                    rec: o.rec.clone(),
                    capacity,
                    error,
                    cluster: cluster.clone(),
                    health: o.health.get(),
                };
                let h = o.health.get();
                if h.state == crate::HealthState::Unresponsive {
                    // No call that would wait for it: what the probes saw.
                    let why = h.reason.map(|(_, w)| w).unwrap_or_default();
                    return view(h.capacity, Some(format!("unresponsive: {why}")));
                }
                match (&o.backend, verdict) {
                    (Err(e), _) => view(None, Some(e.clone())),
                    // Skip the capacity call: without an MDS it would hang.
                    (Ok(_), Some((false, s))) => view(None, Some(format!("cluster: {s}"))),
                    (Ok(b), _) => match b.capacity() {
                        Ok(c) => match crate::fsident::check_identity(&o.rec, b.as_ref()) {
                            Ok(()) => view(Some(c), None),
                            Err(why) => view(Some(c), Some(why)),
                        },
                        Err(e) => {
                            o.health.note(o.rec.id, &e);
                            view(None, Some(e.to_string()))
                        }
                    },
                }
            })
            .collect();
        v.sort_by_key(|f| f.rec.id);
        v
    }
}

pub(crate) fn admin(who: &Identity) -> Result<(), CoreError> {
    if who.is_root() {
        Ok(())
    } else {
        Err(CoreError::Denied(
            "filesystem administration is for admins".into(),
        ))
    }
}

impl Core {
    pub fn fs_list(&self) -> Vec<FsView> {
        self.fs.views()
    }

    pub async fn fs_set(
        &self,
        who: &Identity,
        id: u32,
        c: FsChange,
    ) -> Result<FsRecord, CoreError> {
        admin(who)?;
        let mut rec = self
            .fs
            .read()
            .get(&id)
            .map(|o| o.rec.clone())
            .ok_or_else(|| CoreError::NotFound(format!("filesystem {id}")))?;
        if let Some(l) = c.label {
            rec.label = l;
        }
        if let Some(d) = c.domain {
            rec.domain = d;
        }
        if let Some(s) = c.space {
            rec.space = s;
        }
        if let Some(s) = c.status {
            rec.status = s;
        }
        let core = self.clone();
        let r2 = rec.clone();
        crate::blocking(move || core.meta.fs_update(&r2)).await??;
        if let Some(o) = self.fs.write().get_mut(&id) {
            o.rec = rec.clone();
        }
        Ok(rec)
    }

    /// Forget a filesystem that holds nothing: drained (`empty`) or `off`,
    /// and no file's placement names it (checked against the whole
    /// namespace). Its id is never handed out again.
    pub async fn fs_rm(&self, who: &Identity, id: u32) -> Result<FsRecord, CoreError> {
        admin(who)?;
        let core = self.clone();
        let rec = crate::blocking(move || {
            let rec = core
                .fs
                .record(id)
                .ok_or_else(|| CoreError::NotFound(format!("filesystem {id}")))?;
            if matches!(rec.status, FsConfigStatus::Empty | FsConfigStatus::Off) {
                let (files, stripes) = core.stripes_on(id)?;
                if stripes > 0 {
                    return Err(tessera_meta::MetaError::Busy(format!(
                        "filesystem {id} still holds {stripes} stripes of {files} files: \
                         drain it first (tessera fs drain {id})"
                    ))
                    .into());
                }
            }
            core.meta.fs_remove(id).map_err(CoreError::from)
        })
        .await??;
        self.fs.write().remove(&id);
        Ok(rec)
    }

    pub fn spaces(&self) -> Vec<SpaceView> {
        let mut by: HashMap<String, (SpaceView, std::collections::HashSet<String>)> =
            HashMap::new();
        for f in self.fs.views() {
            let (s, domains) = by.entry(f.rec.space.clone()).or_insert_with(|| {
                (
                    SpaceView {
                        name: f.rec.space.clone(),
                        ..Default::default()
                    },
                    Default::default(),
                )
            });
            s.filesystems += 1;
            let healthy = f.health.state == crate::HealthState::Ok;
            if f.rec.status == FsConfigStatus::Rw && f.error.is_none() && healthy {
                s.writable += 1;
                domains.insert(f.rec.domain.clone());
            }
            if let Some(c) = f.capacity {
                s.total_bytes += c.total_bytes;
                s.free_bytes += c.free_bytes;
            }
        }
        let mut v: Vec<SpaceView> = by
            .into_values()
            .map(|(mut s, d)| {
                s.domains = d.len() as u64;
                s
            })
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }
}

//! Federation in the spirit of Dynafed: other sites' storage (endpoints)
//! shown under views. A file of a view is looked for on every endpoint of
//! the view at once (HEAD, each with its deadline; what was found, or found
//! nowhere, is remembered for a while), and its replicas are ordered for
//! the client asking: healthy endpoints first, then those of the client's
//! own site (by its address: `[[federation.sites]]` subnets, or a GeoIP
//! database), then the nearest (GeoIP distance), then by the endpoints'
//! measured latency weighed by their load (clients sent there lately and
//! lookups in flight, against `load_capacity`). A front-end then
//! redirects to the first (and says so: `Federation::sent`), or lists
//! them all (Metalink). Every endpoint is probed
//! periodically; one that fails `probe_failures` probes in a row leaves
//! every choice until a probe succeeds again.
//!
//! Endpoints are https/WebDAV, XRootD or S3 (presigned URLs); the
//! front-ends redirect (HTTPS 302/307, XRootD `kXR_redirect` to a root
//! endpoint), format Metalink from `Federation::order`, and merge the
//! listings of `Federation::list`; endpoints change at run time
//! (`Federation::reconfigure`; see docs/federation.md).

mod client;
mod config;
mod endpoint;
mod error;
mod geo;
mod listing;
pub mod probe;
mod s3;
pub mod saved;
mod setup;
mod write;
mod xroot;

pub use client::{head, propfind, request, trust, Answer, Base, Head};
pub use config::{
    rename_keys, upgrade as upgrade_config, EndpointCfg, FedConfig, SiteCfg, ViewCfg,
};
pub use endpoint::{Health, Replica};
pub use error::FedError;
pub use listing::{DavParser, Listed, Listing, Merged};
pub use s3::{Child, S3Base, WRITE_GRANT};
pub use write::{WriteAsk, WriteRefused};
pub use xroot::{stat as xroot_stat, RootBase};

use endpoint::{Access, Endpoint};
use futures_util::future::join_all;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use tokio_rustls::rustls::ClientConfig;

struct View {
    path: String,
    endpoints: Vec<usize>,
    public: bool,
    write: Write,
}

/// Where writes into a view go.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Write {
    Refused,
    Closest,
    To(usize),
}

/// The federation as configured at one moment: a reconfiguration builds a
/// new one, and a request keeps the one it started with (its `InView`).
struct Topology {
    cfg: FedConfig,
    endpoints: Vec<Arc<Endpoint>>,
    sites: Vec<setup::Site>,
    geo: Option<geo::Geo>,
    views: Vec<View>,
    /// Counts reconfigurations: cache entries of an older one are not used.
    generation: u64,
}

impl Topology {
    fn build(cfg: FedConfig, old: &[Arc<Endpoint>], generation: u64) -> Result<Topology, String> {
        let sites = setup::sites_of(&cfg)?;
        let endpoints = setup::endpoints_of(&cfg, old)?;
        let views = setup::views_of(&cfg, &endpoints)?;
        let geo = cfg.geoip_db.as_deref().map(geo::Geo::open).transpose()?;
        Ok(Topology {
            cfg,
            endpoints,
            sites,
            geo,
            views,
            generation,
        })
    }

    /// The client's site: the one whose subnets hold its address, else
    /// (with a GeoIP database) the one nearest to where the database puts
    /// it, among sites with coordinates.
    fn site_of(&self, ip: IpAddr) -> Option<&str> {
        self.whereabouts(ip).0
    }

    /// The client's site (as `site_of`) and where the GeoIP database puts
    /// it: one database lookup for both.
    fn whereabouts(&self, ip: IpAddr) -> (Option<&str>, Option<(f64, f64)>) {
        let at = self.geo.as_ref().and_then(|g| g.locate(ip));
        let by_net = self
            .sites
            .iter()
            .find(|s| s.nets.iter().any(|n| n.contains(&ip)));
        if let Some(s) = by_net {
            return (Some(&s.name), at);
        }
        let near = at.and_then(|at| {
            let sites = self.sites.iter();
            let far = sites.filter_map(|s| Some((s, geo::km(at, s.at?))));
            far.min_by(|a, b| a.1.total_cmp(&b.1))
        });
        (near.map(|(s, _)| s.name.as_str()), at)
    }

    /// How far site `name` is from the client at `at`, in km (unknown: far).
    fn km_to(&self, name: &str, at: Option<(f64, f64)>) -> u64 {
        let site = self.sites.iter().find(|s| s.name == name);
        match (at, site.and_then(|s| s.at)) {
            (Some(a), Some(b)) => geo::km(a, b) as u64,
            _ => u64::MAX,
        }
    }
}

/// Which replicas a lookup is for: an HTTP client's (https and S3), an
/// XRootD client's (root), or every HTTP one (a Metalink lists them all).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    Http,
    Root,
    EveryHttp,
}

impl Want {
    fn takes(self, e: &Endpoint) -> bool {
        matches!(e.access, Access::Root(_)) == (self == Want::Root)
    }
}

/// A remembered answer: the endpoints that have the file and its size
/// there (empty: found nowhere), until when.
struct Cached {
    found: Vec<(usize, Option<u64>)>,
    until: Instant,
    /// Every endpoint answered (or was given up on).
    complete: bool,
}

/// (generation, view, rel).
type CacheKey = (u64, usize, String);

/// Endpoints that have a file, with its size there.
type Found = Vec<(usize, Option<u64>)>;

pub struct Federation {
    topo: RwLock<Arc<Topology>>,
    /// Held by a reconfiguration from start to end (one at a time).
    changing: Mutex<()>,
    tls: Option<Arc<ClientConfig>>,
    /// Reads a WebDAV endpoint's PROPFIND answer (the HTTPS front-end's
    /// XML reader, given at start: [`Federation::with_dav`]).
    dav: Option<DavParser>,
    /// Where a reconfiguration is kept ([`Federation::with_state_file`]).
    state_file: Option<std::path::PathBuf>,
    cache: Arc<Mutex<HashMap<CacheKey, Cached>>>,
    /// Lookups answered from the cache, and sent to the endpoints.
    cached: AtomicU64,
    asked: AtomicU64,
}

/// What the federation reports to metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct FedState {
    /// (name, site, health) of every endpoint.
    pub endpoints: Vec<(String, String, Health)>,
    pub lookups_cached: u64,
    pub lookups_asked: u64,
    pub cache_entries: usize,
}

/// An endpoint as `tessera fed endpoint ls` shows it: its configuration,
/// health, and the views it is in.
#[derive(Debug, Clone, PartialEq)]
pub struct EndpointState {
    pub cfg: EndpointCfg,
    pub health: Health,
    pub views: Vec<String>,
}

/// A path of a view: the path under it (from `/`, percent-encoded as sent
/// on to endpoints: [`encode_path`]), whether it is readable without a
/// token, and the federation as it was when the request came.
#[derive(Clone)]
pub struct InView {
    pub rel: String,
    pub public: bool,
    view: usize,
    topo: Arc<Topology>,
}

impl InView {
    /// The view's own path.
    pub fn path(&self) -> &str {
        &self.topo.views[self.view].path
    }
}

impl std::fmt::Debug for InView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InView({} + {})", self.path(), self.rel)
    }
}

impl Federation {
    /// Check `cfg` and build; `tls` is what TLS endpoints are trusted with.
    pub fn new(cfg: FedConfig, tls: Option<Arc<ClientConfig>>) -> Result<Federation, FedError> {
        Ok(Federation {
            topo: RwLock::new(Arc::new(Topology::build(cfg, &[], 0)?)),
            changing: Mutex::new(()),
            tls,
            dav: None,
            state_file: None,
            cache: Arc::new(Mutex::new(HashMap::new())),
            cached: Default::default(),
            asked: Default::default(),
        })
    }

    fn topo(&self) -> Arc<Topology> {
        Arc::clone(&self.topo.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// The configuration in force.
    pub fn config(&self) -> FedConfig {
        self.topo().cfg.clone()
    }

    /// Keep every reconfiguration in `path` (see `saved.rs`).
    pub fn with_state_file(mut self, path: std::path::PathBuf) -> Federation {
        self.state_file = Some(path);
        self
    }

    /// Change the configuration with `change` (checked as at start: an
    /// error leaves everything as it was), kept in the state file before
    /// it is used. Endpoints whose configuration did not change keep their
    /// health; remembered lookups are dropped. The new configuration is
    /// returned.
    pub fn reconfigure(
        &self,
        change: impl FnOnce(&mut FedConfig) -> Result<(), FedError>,
    ) -> Result<FedConfig, FedError> {
        let _one = self.changing.lock().unwrap_or_else(|p| p.into_inner());
        let old = self.topo();
        let mut cfg = old.cfg.clone();
        change(&mut cfg)?;
        let new = Topology::build(cfg.clone(), &old.endpoints, old.generation + 1)?;
        if let Some(p) = &self.state_file {
            saved::save(p, &cfg).map_err(FedError::Io)?;
        }
        *self.topo.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(new);
        self.cache.lock().unwrap_or_else(|p| p.into_inner()).clear();
        Ok(cfg)
    }

    /// Every endpoint, with its health and views.
    pub fn endpoints(&self) -> Vec<EndpointState> {
        let t = self.topo();
        t.endpoints
            .iter()
            .enumerate()
            .map(|(i, e)| EndpointState {
                cfg: e.cfg.clone(),
                health: e.health(),
                views: t
                    .views
                    .iter()
                    .filter(|v| v.endpoints.contains(&i))
                    .map(|v| v.path.clone())
                    .collect(),
            })
            .collect()
    }

    /// The view `path` (decoded, from `/`) is in, if any.
    pub fn view_of(&self, path: &str) -> Option<InView> {
        // Every request of both front-ends asks: no reference is taken
        // unless the path is in a view.
        let topo = {
            let t = self.topo.read().unwrap_or_else(|p| p.into_inner());
            let hit = t.views.iter().any(|v| path.starts_with(&v.path));
            hit.then(|| Arc::clone(&t))?
        };
        let (view, rest) = topo.views.iter().enumerate().find_map(|(i, v)| {
            let rest = path.strip_prefix(&v.path)?;
            (rest.is_empty() || rest.starts_with('/')).then_some((i, rest))
        })?;
        Some(InView {
            rel: encode_path(rest),
            public: topo.views[view].public,
            view,
            topo,
        })
    }

    /// Where the file of `at` is, for a client at `ip`: every endpoint of
    /// its view asked at once, each within the deadline, the answers used
    /// as they come: the lookup ends when an endpoint of the client's own
    /// site has it, or `settle` after the first endpoint that has it
    /// answered, or when all answered, counting only the endpoints the
    /// client can be sent to (`want`). Endpoints still asking then finish
    /// in the background and complete the remembered answer. A Metalink
    /// (`Want::EveryHttp`) waits for every endpoint.
    pub async fn find(&self, at: &InView, ip: IpAddr, want: Want) -> Vec<Replica> {
        let t = &at.topo;
        let rel = if at.rel.is_empty() { "/" } else { &at.rel };
        let key = (t.generation, at.view, rel.to_string());
        let replicas = |found: &[(usize, Option<u64>)]| {
            found
                .iter()
                .map(|&(i, size)| t.endpoints[i].replica(rel, size))
                .collect()
        };
        // An answer that ended early serves a client it has a usable
        // replica for; a Metalink waits for a complete one.
        let cached = self.cache_get(&key).filter(|(found, complete)| {
            *complete
                || (want != Want::EveryHttp
                    && found.iter().any(|(i, _)| want.takes(&t.endpoints[*i])))
        });
        if let Some((found, _)) = cached {
            self.cached.fetch_add(1, Relaxed);
            return replicas(&found);
        }
        self.asked.fetch_add(1, Relaxed);
        let deadline = t.cfg.timeout;
        let mut asks = tokio::task::JoinSet::new();
        // A disabled endpoint is not asked (its replicas are no choice).
        for &i in &t.views[at.view].endpoints {
            let e = Arc::clone(&t.endpoints[i]);
            if e.cfg.disabled {
                continue;
            }
            let (rel, tls) = (rel.to_string(), self.tls.clone());
            asks.spawn(async move { (i, e.lookup(&rel, tls.as_ref(), deadline).await) });
        }
        let site = t.site_of(ip);
        let mut found = Vec::new();
        let mut until: Option<tokio::time::Instant> = None;
        loop {
            let next = match until {
                Some(u) => match tokio::time::timeout_at(u, asks.join_next()).await {
                    Ok(n) => n,
                    Err(_) => break,
                },
                None => asks.join_next().await,
            };
            let Some(done) = next else { break };
            let Ok((i, r)) = done else { continue };
            let e = &t.endpoints[i];
            if let Some(size) = note_lookup(e, rel, r, t.cfg.probe_failures) {
                found.push((i, size));
                if want == Want::EveryHttp || !want.takes(e) {
                    continue;
                }
                if site == Some(e.site.as_str()) && e.health().up {
                    break;
                }
                let settle = t.cfg.settle;
                until.get_or_insert(tokio::time::Instant::now() + settle);
            }
        }
        let out = replicas(&found);
        self.cache_put(&t.cfg, key.clone(), found, asks.is_empty());
        if !asks.is_empty() {
            self.complete_later(asks, Arc::clone(t), key, rel.to_string());
        }
        out
    }

    /// Let the lookups still under way finish, adding what they find to
    /// the remembered answer of `key`.
    fn complete_later(
        &self,
        mut asks: tokio::task::JoinSet<(usize, Result<endpoint::Lookup, String>)>,
        t: Arc<Topology>,
        key: CacheKey,
        rel: String,
    ) {
        let cache = Arc::clone(&self.cache);
        tokio::spawn(async move {
            while let Some(done) = asks.join_next().await {
                let Ok((i, r)) = done else { continue };
                if let Some(size) = note_lookup(&t.endpoints[i], &rel, r, t.cfg.probe_failures) {
                    let mut c = cache.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(entry) = c.get_mut(&key) {
                        entry.found.push((i, size));
                    }
                }
            }
            let mut c = cache.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(entry) = c.get_mut(&key) {
                entry.complete = true;
            }
        });
    }

    /// A remembered answer still fresh: what was found, and whether every
    /// endpoint had answered.
    fn cache_get(&self, key: &CacheKey) -> Option<(Found, bool)> {
        let c = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        c.get(key)
            .filter(|c| c.until > Instant::now())
            .map(|c| (c.found.clone(), c.complete))
    }

    fn cache_put(
        &self,
        cfg: &FedConfig,
        key: CacheKey,
        found: Vec<(usize, Option<u64>)>,
        complete: bool,
    ) {
        let ttl = if found.is_empty() {
            cfg.negative_ttl
        } else {
            cfg.cache_ttl
        };
        let mut c = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if c.len() >= cfg.cache_entries {
            let now = Instant::now();
            c.retain(|_, v| v.until > now);
            if c.len() >= cfg.cache_entries {
                c.clear();
            }
        }
        let until = Instant::now() + ttl;
        c.insert(
            key,
            Cached {
                found,
                until,
                complete,
            },
        );
    }

    /// The site a client address is at.
    pub fn site_of(&self, ip: IpAddr) -> Option<String> {
        self.topo().site_of(ip).map(str::to_string)
    }

    /// `replicas` best first for a client at `ip` (see the module comment).
    pub fn order(&self, mut replicas: Vec<Replica>, ip: IpAddr) -> Vec<Replica> {
        let t = self.topo();
        let (site, at) = t.whereabouts(ip);
        let health = |name: &str| {
            t.endpoints
                .iter()
                .find(|e| e.name == name)
                .map(|e| e.health())
        };
        replicas.sort_by_key(|r| {
            let h = health(&r.endpoint);
            (
                !h.as_ref().is_some_and(|h| h.up),
                site != Some(r.site.as_str()),
                t.km_to(&r.site, at),
                h.map_or(u64::MAX, |h| Endpoint::cost(&h)),
            )
        });
        replicas
    }

    /// A client is being sent to `endpoint` (counted in its load).
    pub fn sent(&self, endpoint: &str) {
        if let Some(e) = self.topo().endpoints.iter().find(|e| e.name == endpoint) {
            e.sent();
        }
    }

    /// The state metrics show.
    pub fn state(&self) -> FedState {
        FedState {
            endpoints: self
                .topo()
                .endpoints
                .iter()
                .map(|e| (e.name.clone(), e.site.clone(), e.health()))
                .collect(),
            lookups_cached: self.cached.load(Relaxed),
            lookups_asked: self.asked.load(Relaxed),
            cache_entries: self.cache.lock().unwrap_or_else(|p| p.into_inner()).len(),
        }
    }

    /// An endpoint's health by name.
    pub fn health(&self, name: &str) -> Option<Health> {
        let t = self.topo();
        t.endpoints
            .iter()
            .find(|e| e.name == name)
            .map(|e| e.health())
    }

    /// Probe every endpoint once (a HEAD of its base), all at once.
    pub async fn probe_all(&self) {
        let t = self.topo();
        let deadline = t.cfg.timeout;
        let asks = t
            .endpoints
            .iter()
            .map(|e| async move { (e, e.lookup("", self.tls.as_ref(), deadline).await) });
        for (e, r) in join_all(asks).await {
            // Any answer is a live endpoint (a base may answer 403).
            if let Err(why) = &r {
                tracing::info!(endpoint = %e.name, "probe failed: {why}");
            }
            let r = r.as_ref().map(|(_, took)| *took).map_err(String::as_str);
            e.note(r, t.cfg.probe_failures);
        }
    }

    /// Probe every `probe_interval` until `stop` turns true.
    pub fn spawn_probes(self: &Arc<Self>, mut stop: tokio::sync::watch::Receiver<bool>) {
        let me = Arc::clone(self);
        tokio::spawn(async move {
            loop {
                me.probe_all().await;
                let every = me.topo().cfg.probe_interval.max(Duration::from_millis(100));
                tokio::select! {
                    _ = tokio::time::sleep(every) => {}
                    r = stop.changed() => if r.is_err() || *stop.borrow() { return },
                }
            }
        });
    }
}

/// Record a lookup's answer in the endpoint's health; `Some(size)` when
/// the endpoint has the file.
fn note_lookup(
    e: &Endpoint,
    rel: &str,
    r: Result<endpoint::Lookup, String>,
    failures: u32,
) -> Option<Option<u64>> {
    match r {
        Ok((there, took)) => {
            e.note(Ok(took), failures);
            there
        }
        Err(why) => {
            tracing::debug!(endpoint = %e.name, "stat of {rel}: {why}");
            None
        }
    }
}

/// A path from `/` as sent on to endpoints: each segment percent-encoded
/// (the form every `rel` of this crate takes).
pub fn encode_path(path: &str) -> String {
    path.split('/')
        .map(s3::encode)
        .collect::<Vec<_>>()
        .join("/")
}

/// A percent-encoded path or name, decoded.
pub fn decode(rel: &str) -> String {
    percent_encoding::percent_decode_str(rel)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests;

//! Federation in the spirit of Dynafed: other sites' storage (endpoints)
//! shown under views. A file of a view is looked for on every endpoint of
//! the view at once (HEAD, each with its deadline; what was found, or found
//! nowhere, is remembered for a while), and its replicas are ordered for
//! the client asking: healthy endpoints first, then those of the client's
//! own site (by its address: `[[federation.sites]]` subnets), then by the
//! endpoints' measured latency. A front-end then redirects to the first,
//! or lists them all (Metalink). Every endpoint is probed
//! periodically; one that fails `probe_failures` probes in a row leaves
//! every choice until a probe succeeds again.
//!
//! Endpoints are https/WebDAV, XRootD or S3 (presigned URLs); the
//! front-ends redirect (HTTPS 302/307, XRootD `kXR_redirect` to a root
//! endpoint), format Metalink from `Federation::order`, and merge the
//! listings of `Federation::list`. Not yet: GeoIP, endpoints changed at
//! run time (see docs/federation.md).

mod client;
mod config;
mod listing;
pub mod probe;
mod s3;
mod setup;
mod xroot;

pub use client::{head, propfind, request, trust, Answer, Base, Head};
pub use config::{EndpointCfg, FedConfig, SiteCfg, ViewCfg};
pub use listing::{DavParser, Listed, Listing, Merged};
pub use s3::{Child, S3Base};
pub use xroot::{stat as xroot_stat, RootBase};

use futures_util::future::join_all;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_rustls::rustls::ClientConfig;

/// A copy of a file on an endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct Replica {
    pub endpoint: String,
    pub site: String,
    pub url: String,
    pub size: Option<u64>,
    /// For an XRootD endpoint, where to redirect XRootD clients (the path
    /// is the view's: see `EndpointCfg::url`).
    pub root: Option<(String, u16)>,
    /// `url` is a grant for GET alone (presigned S3): a HEAD must not go
    /// there.
    pub get_only: bool,
}

/// How an endpoint is reached.
enum Access {
    Http(Base),
    Root(RootBase),
    S3(Box<S3Base>),
}

/// An endpoint's health as the probes see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Health {
    pub up: bool,
    /// Failed probes in a row.
    pub failures: u32,
    /// Moving average of request times (ms); 0 before the first.
    pub latency_ms: f64,
}

struct Endpoint {
    name: String,
    site: String,
    access: Access,
    health: Mutex<Health>,
}

/// A lookup's answer: `Some(size)` there, `None` not there; its time.
type Lookup = (Option<Option<u64>>, Duration);

impl Endpoint {
    /// Look `rel` up (`Err`: no usable answer).
    async fn lookup(
        &self,
        rel: &str,
        tls: Option<&Arc<ClientConfig>>,
        deadline: Duration,
    ) -> Result<Lookup, String> {
        match &self.access {
            Access::Http(b) => {
                let h = head(b, rel, tls, deadline).await?;
                Ok(((h.status == 200).then_some(h.size), h.elapsed))
            }
            Access::Root(b) => {
                let st = xroot::stat(b, rel, deadline).await?;
                Ok((st.found.then_some(st.size), st.elapsed))
            }
            Access::S3(b) => b.stat(rel, tls, deadline).await,
        }
    }

    fn replica(&self, rel: &str, size: Option<u64>) -> Replica {
        let (url, root, get_only) = match &self.access {
            Access::Http(b) => (b.url(rel), None, false),
            Access::Root(b) => (b.url(rel), Some((b.host.clone(), b.port)), false),
            // Signed anew each time: a grant outlives no cache entry.
            Access::S3(b) => (b.get_url(rel), None, true),
        };
        Replica {
            endpoint: self.name.clone(),
            site: self.site.clone(),
            url,
            size,
            root,
            get_only,
        }
    }
}

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

/// A remembered answer: the endpoints that have the file and its size
/// there (empty: found nowhere), until when.
struct Cached {
    found: Vec<(usize, Option<u64>)>,
    until: Instant,
}

pub struct Federation {
    cfg: FedConfig,
    endpoints: Vec<Endpoint>,
    sites: Vec<(String, Vec<ipnet::IpNet>)>,
    views: Vec<View>,
    tls: Option<Arc<ClientConfig>>,
    /// Reads a WebDAV endpoint's PROPFIND answer (the HTTPS front-end's
    /// XML reader, given at start: [`Federation::with_dav`]).
    dav: Option<DavParser>,
    cache: Mutex<HashMap<(usize, String), Cached>>,
    /// Lookups answered from the cache, and sent to the endpoints.
    cached: std::sync::atomic::AtomicU64,
    asked: std::sync::atomic::AtomicU64,
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

/// A path of a view: which view, the path under it (from `/`,
/// percent-encoded as sent on to endpoints: [`encode_path`]), and
/// whether it is readable without a token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InView {
    pub view: usize,
    pub rel: String,
    pub public: bool,
}

impl Federation {
    /// Check `cfg` and build; `tls` is what TLS endpoints are trusted with.
    pub fn new(cfg: FedConfig, tls: Option<Arc<ClientConfig>>) -> Result<Federation, String> {
        let sites = setup::sites_of(&cfg)?;
        let endpoints = setup::endpoints_of(&cfg)?;
        let views = setup::views_of(&cfg, &endpoints)?;
        Ok(Federation {
            cfg,
            endpoints,
            sites,
            views,
            tls,
            dav: None,
            cache: Mutex::new(HashMap::new()),
            cached: Default::default(),
            asked: Default::default(),
        })
    }

    fn timeout(&self) -> Duration {
        Duration::from_millis(self.cfg.timeout_ms)
    }

    /// The view `path` (decoded, from `/`) is in, if any.
    pub fn view_of(&self, path: &str) -> Option<InView> {
        self.views.iter().enumerate().find_map(|(i, v)| {
            let rest = path.strip_prefix(&v.path)?;
            (rest.is_empty() || rest.starts_with('/')).then(|| InView {
                view: i,
                rel: encode_path(rest),
                public: v.public,
            })
        })
    }

    /// The view's path.
    pub fn view_path(&self, view: usize) -> &str {
        &self.views[view].path
    }

    /// Where file `rel` of `view` is (`rel` percent-encoded as sent on):
    /// every endpoint asked at once, each within the deadline; remembered.
    pub async fn find(&self, view: usize, rel: &str) -> Vec<Replica> {
        use std::sync::atomic::Ordering::Relaxed;
        let key = (view, rel.to_string());
        let replicas = |found: &[(usize, Option<u64>)]| {
            found
                .iter()
                .map(|&(i, size)| self.endpoints[i].replica(rel, size))
                .collect()
        };
        if let Some(c) = self.cache_get(&key) {
            self.cached.fetch_add(1, Relaxed);
            return replicas(&c);
        }
        self.asked.fetch_add(1, Relaxed);
        let asks = self.views[view].endpoints.iter().map(|&i| {
            let e = &self.endpoints[i];
            async move { (i, e.lookup(rel, self.tls.as_ref(), self.timeout()).await) }
        });
        let mut found = Vec::new();
        for (i, r) in join_all(asks).await {
            let e = &self.endpoints[i];
            match r {
                Ok((there, took)) => {
                    self.note(i, Some(took));
                    if let Some(size) = there {
                        found.push((i, size));
                    }
                }
                Err(why) => tracing::debug!(endpoint = %e.name, "stat of {rel}: {why}"),
            }
        }
        let out = replicas(&found);
        self.cache_put(key, found);
        out
    }

    fn cache_get(&self, key: &(usize, String)) -> Option<Vec<(usize, Option<u64>)>> {
        let c = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        c.get(key)
            .filter(|c| c.until > Instant::now())
            .map(|c| c.found.clone())
    }

    fn cache_put(&self, key: (usize, String), found: Vec<(usize, Option<u64>)>) {
        let ttl = if found.is_empty() {
            self.cfg.negative_ttl_s
        } else {
            self.cfg.cache_ttl_s
        };
        let mut c = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if c.len() >= self.cfg.cache_entries {
            let now = Instant::now();
            c.retain(|_, v| v.until > now);
            if c.len() >= self.cfg.cache_entries {
                c.clear();
            }
        }
        let until = Instant::now() + Duration::from_secs(ttl);
        c.insert(key, Cached { found, until });
    }

    /// Where a client at `ip` writes file `rel` of `view` (the URL to
    /// redirect it to), by the view's write policy; `Err` says why not.
    pub fn write_url(&self, view: usize, rel: &str, ip: IpAddr) -> Result<String, String> {
        let v = &self.views[view];
        let up = |i: usize| {
            self.endpoints[i]
                .health
                .lock()
                .map(|h| h.up)
                .unwrap_or(false)
        };
        let to = match v.write {
            Write::Refused => return Err("writes into this view are not configured".into()),
            Write::To(i) if up(i) => i,
            Write::To(i) => return Err(format!("{} is down", self.endpoints[i].name)),
            Write::Closest => {
                let site = self.site_of(ip);
                let mut cands: Vec<usize> = v
                    .endpoints
                    .iter()
                    .copied()
                    .filter(|i| up(*i) && !matches!(self.endpoints[*i].access, Access::Root(_)))
                    .collect();
                cands.sort_by_key(|i| {
                    let e = &self.endpoints[*i];
                    let h = *e.health.lock().unwrap_or_else(|p| p.into_inner());
                    (
                        Some(e.site.as_str()) != site,
                        (h.latency_ms * 1000.0) as u64,
                    )
                });
                *cands.first().ok_or("no endpoint of the view is up")?
            }
        };
        match &self.endpoints[to].access {
            Access::Http(b) => Ok(b.url(rel)),
            Access::S3(b) => Ok(b.put_url(rel)),
            Access::Root(_) => Err("not an https or s3 endpoint".into()),
        }
    }

    /// The site a client address is at.
    pub fn site_of(&self, ip: IpAddr) -> Option<&str> {
        self.sites
            .iter()
            .find(|(_, nets)| nets.iter().any(|n| n.contains(&ip)))
            .map(|(name, _)| name.as_str())
    }

    /// `replicas` best first for a client at `ip` (see the module comment).
    pub fn order(&self, mut replicas: Vec<Replica>, ip: IpAddr) -> Vec<Replica> {
        let site = self.site_of(ip).map(str::to_string);
        let key = |r: &Replica| {
            let h = self.health(&r.endpoint);
            (
                !h.is_some_and(|h| h.up),
                site.as_deref() != Some(r.site.as_str()),
                (h.map_or(f64::MAX, |h| h.latency_ms) * 1000.0) as u64,
            )
        };
        replicas.sort_by_key(key);
        replicas
    }

    /// The state metrics show.
    pub fn state(&self) -> FedState {
        use std::sync::atomic::Ordering::Relaxed;
        FedState {
            endpoints: self
                .endpoints
                .iter()
                .map(|e| {
                    let h = *e.health.lock().unwrap_or_else(|p| p.into_inner());
                    (e.name.clone(), e.site.clone(), h)
                })
                .collect(),
            lookups_cached: self.cached.load(Relaxed),
            lookups_asked: self.asked.load(Relaxed),
            cache_entries: self.cache.lock().unwrap_or_else(|p| p.into_inner()).len(),
        }
    }

    /// An endpoint's health by name.
    pub fn health(&self, name: &str) -> Option<Health> {
        let e = self.endpoints.iter().find(|e| e.name == name)?;
        Some(*e.health.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Record a request to endpoint `i`: answered in `elapsed`, or not.
    fn note(&self, i: usize, elapsed: Option<Duration>) {
        let mut h = self.endpoints[i]
            .health
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        match elapsed {
            Some(t) => {
                let ms = t.as_secs_f64() * 1e3;
                h.latency_ms = if h.latency_ms == 0.0 {
                    ms
                } else {
                    0.8 * h.latency_ms + 0.2 * ms
                };
                h.failures = 0;
                h.up = true;
            }
            None => {
                h.failures += 1;
                if h.failures >= self.cfg.probe_failures {
                    h.up = false;
                }
            }
        }
    }

    /// Probe every endpoint once (a HEAD of its base), all at once.
    pub async fn probe_all(&self) {
        let asks = (0..self.endpoints.len()).map(|i| async move {
            let e = &self.endpoints[i];
            (i, e.lookup("", self.tls.as_ref(), self.timeout()).await)
        });
        for (i, r) in join_all(asks).await {
            // Any answer is a live endpoint (a base may answer 403).
            let ok = r.as_ref().ok().map(|(_, took)| *took);
            if let Err(why) = &r {
                tracing::info!(endpoint = %self.endpoints[i].name, "probe failed: {why}");
            }
            self.note(i, ok);
        }
    }

    /// Probe every `probe_interval_ms` until `stop` turns true.
    pub fn spawn_probes(self: &Arc<Self>, mut stop: tokio::sync::watch::Receiver<bool>) {
        let me = Arc::clone(self);
        tokio::spawn(async move {
            let every = Duration::from_millis(me.cfg.probe_interval_ms.max(100));
            loop {
                me.probe_all().await;
                tokio::select! {
                    _ = tokio::time::sleep(every) => {}
                    r = stop.changed() => if r.is_err() || *stop.borrow() { return },
                }
            }
        });
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

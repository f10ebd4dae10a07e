//! An endpoint: how it is reached, its health, what a lookup of a file
//! there finds, and the replica a client is sent to.

use crate::client::{head, Base};
use crate::s3::S3Base;
use crate::xroot::{self, RootBase};
use crate::EndpointCfg;
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
pub(crate) enum Access {
    Http(Base),
    Root(RootBase),
    S3(Box<S3Base>),
}

/// An endpoint's health as the probes see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Health {
    pub up: bool,
    /// Failed probes in a row.
    pub failures: u32,
    /// What the last failed request to it said (empty after a good one).
    pub reason: String,
    /// Moving average of request times (ms); 0 before the first.
    pub latency_ms: f64,
    /// What the federation asks of it now, as a share of
    /// `load_capacity`: clients sent there (each counts for less as time
    /// passes: half after `LOAD_HALF_LIFE`) and its lookups in flight.
    pub load: f64,
}

/// What probes and lookups found of an endpoint (its `Health` without the
/// load, which is worked out when asked).
#[derive(Debug, Clone, Default)]
pub(crate) struct Seen {
    pub(crate) up: bool,
    pub(crate) failures: u32,
    pub(crate) latency_ms: f64,
    pub(crate) reason: String,
}

/// How fast a client sent to an endpoint stops counting in its load.
pub const LOAD_HALF_LIFE: Duration = Duration::from_secs(10);

/// Clients sent to an endpoint (decaying) and lookups in flight there.
#[derive(Debug)]
pub(crate) struct Load {
    sent: f64,
    at: Instant,
    inflight: u32,
}

impl Default for Load {
    fn default() -> Load {
        Load {
            sent: 0.0,
            at: Instant::now(),
            inflight: 0,
        }
    }
}

impl Load {
    /// `sent` as of now.
    fn decay(&mut self) {
        let now = Instant::now();
        let halves = now.duration_since(self.at).as_secs_f64() / LOAD_HALF_LIFE.as_secs_f64();
        self.sent *= 0.5f64.powf(halves);
        self.at = now;
    }
}

/// A lookup in flight (counted in the load until dropped).
pub(crate) struct InFlight<'a>(&'a Mutex<Load>);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut l = self.0.lock().unwrap_or_else(|p| p.into_inner());
        l.inflight = l.inflight.saturating_sub(1);
    }
}

pub(crate) struct Endpoint {
    /// What it was built from (an endpoint whose configuration did not
    /// change keeps its health across a reconfiguration).
    pub(crate) cfg: EndpointCfg,
    pub(crate) name: String,
    pub(crate) site: String,
    pub(crate) access: Access,
    pub(crate) health: Mutex<Seen>,
    pub(crate) load: Mutex<Load>,
    /// Clients and lookups that make its load 1 (`load_capacity`).
    pub(crate) capacity: f64,
    /// At most this many lookups at once (`max_parallel`), if limited.
    pub(crate) slots: Option<tokio::sync::Semaphore>,
}

/// A lookup's answer: `Some(size)` there, `None` not there; its time.
pub(crate) type Lookup = (Option<Option<u64>>, Duration);

impl Endpoint {
    /// Look `rel` up within `deadline` (the endpoint's own `timeout`
    /// instead, if it has one; a wait for one of its `max_parallel` slots
    /// counts against it). `Err`: no usable answer.
    pub(crate) async fn lookup(
        &self,
        rel: &str,
        tls: Option<&Arc<ClientConfig>>,
        deadline: Duration,
    ) -> Result<Lookup, String> {
        let deadline = self.cfg.timeout.unwrap_or(deadline);
        let start = Instant::now();
        let _inflight = self.start_lookup();
        let _slot = match &self.slots {
            Some(s) => Some(
                tokio::time::timeout(deadline, s.acquire())
                    .await
                    .map_err(|_| {
                        format!("all {} slots busy for {deadline:?}", self.cfg.max_parallel)
                    })?
                    .map_err(|e| e.to_string())?,
            ),
            None => None,
        };
        let deadline = deadline.saturating_sub(start.elapsed());
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

    pub(crate) fn replica(&self, rel: &str, size: Option<u64>) -> Replica {
        let (url, root, get_only) = match &self.access {
            Access::Http(b) => (b.url(rel), None, false),
            Access::Root(b) => (
                b.url(rel),
                Some((tessera_httpc::url_host(&b.host).into_owned(), b.port)),
                false,
            ),
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

    /// Its health now; an endpoint an admin disabled is down.
    pub(crate) fn health(&self) -> Health {
        let h = self
            .health
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut l = self.load.lock().unwrap_or_else(|p| p.into_inner());
        l.decay();
        Health {
            up: h.up && !self.cfg.disabled,
            failures: h.failures,
            reason: if self.cfg.disabled {
                "disabled by an admin".into()
            } else {
                h.reason
            },
            latency_ms: h.latency_ms,
            load: (l.sent + f64::from(l.inflight)) / self.capacity,
        }
    }

    /// What choosing it costs a client, among endpoints as near: its
    /// latency (plus 1 ms, so that loopback-near ones still share) times
    /// one plus its load: one at full load looks twice as far away.
    pub(crate) fn cost(h: &Health) -> u64 {
        ((h.latency_ms + 1.0) * (1.0 + h.load) * 1000.0) as u64
    }

    /// A client was sent here.
    pub(crate) fn sent(&self) {
        let mut l = self.load.lock().unwrap_or_else(|p| p.into_inner());
        l.decay();
        l.sent += 1.0;
    }

    pub(crate) fn start_lookup(&self) -> InFlight<'_> {
        self.load.lock().unwrap_or_else(|p| p.into_inner()).inflight += 1;
        InFlight(&self.load)
    }

    /// Record a request to it: answered in `elapsed`, or not, and why
    /// (after `failures` in a row it is down).
    pub(crate) fn note(&self, elapsed: Result<Duration, &str>, failures: u32) {
        let mut h = self.health.lock().unwrap_or_else(|p| p.into_inner());
        match elapsed {
            Ok(t) => {
                let ms = t.as_secs_f64() * 1e3;
                h.latency_ms = if h.latency_ms == 0.0 {
                    ms
                } else {
                    0.8 * h.latency_ms + 0.2 * ms
                };
                h.failures = 0;
                h.up = true;
                h.reason.clear();
            }
            Err(why) => {
                h.reason = why.chars().take(300).collect();
                h.failures += 1;
                if h.failures >= failures {
                    h.up = false;
                }
            }
        }
    }

    /// Where a client writes `rel` here. A presigned S3 grant for a
    /// create-only write carries `If-None-Match: *` in its signature (the
    /// object store refuses it, every time it is used, once the key
    /// exists) and is given only while the key is absent.
    pub(crate) async fn write_url(
        &self,
        rel: &str,
        ask: crate::WriteAsk,
        tls: Option<&Arc<ClientConfig>>,
        deadline: Duration,
    ) -> Result<String, crate::WriteRefused> {
        use crate::WriteRefused as No;
        match &self.access {
            Access::Http(b) => Ok(b.url(rel)),
            Access::S3(b) => {
                if !ask.may_replace && !ask.if_none_match {
                    return Err(No::MustBeConditional);
                }
                if !ask.may_replace {
                    let (found, _) = self.lookup(rel, tls, deadline).await.map_err(No::Lookup)?;
                    if found.is_some() {
                        return Err(No::Exists);
                    }
                }
                Ok(b.put_url(rel, ask.if_none_match))
            }
            Access::Root(_) => Err(No::Unavailable("not an https or s3 endpoint".into())),
        }
    }
}

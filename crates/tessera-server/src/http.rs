//! The metrics and health listener: `/metrics`, `/healthz`, `/readyz`.

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use tessera_core::{Core, DataPath};
use tessera_obs::Metrics;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// What the listener reports on.
#[derive(Clone)]
pub enum Source {
    /// The metadata service (or every role in one process): the namespace
    /// gauges are refreshed per scrape; ready when the namespace answers.
    Core(Core),
    /// A data gateway: its own counters; ready once it knows filesystems
    /// (from the metadata service).
    Gateway {
        metrics: Arc<Metrics>,
        data: DataPath,
    },
    /// A standby metadata node: its HA gauges (the active node's epoch as
    /// it sees it); never ready (it has no namespace).
    Standby {
        metrics: Arc<Metrics>,
        active: tessera_core::ActiveNode,
    },
}

/// What the process holds for its clients, reported with the metrics:
/// the memory budget and the client connections.
#[derive(Clone)]
pub struct Load {
    pub buffers: tessera_core::Budget,
    pub conns: tessera_core::ConnLimits,
    /// The token validator, when issuers are configured.
    pub tokens: Option<Arc<tessera_auth::Validator>>,
    /// Federated views, when configured.
    pub federation: Option<Arc<tessera_fed::Federation>>,
}

pub async fn serve(
    listener: TcpListener,
    source: Source,
    load: Load,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let (stream, _) = tokio::select! {
            r = listener.accept() => match r {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!("metrics accept: {e}");
                    continue;
                }
            },
            _ = stop.changed() => return,
        };
        let (source, load) = (source.clone(), load.clone());
        tokio::spawn(async move {
            let svc =
                hyper::service::service_fn(move |req| handle(req, source.clone(), load.clone()));
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc);
            if let Err(e) = conn.await {
                tracing::debug!("metrics connection: {e}");
            }
        });
    }
}

async fn handle(
    req: Request<Incoming>,
    source: Source,
    load: Load,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    let m: &Metrics = match &source {
        Source::Core(core) => core.metrics(),
        Source::Gateway { metrics, .. } | Source::Standby { metrics, .. } => metrics,
    };
    m.buffers_in_use.set(load.buffers.in_use());
    m.buffers_limit.set(load.buffers.size());
    m.connections_open.set(load.conns.open() as u64);
    m.connections_limit.set(load.conns.max_total() as u64);
    m.connections_refused.set(load.conns.refused());
    if let Some(v) = &load.tokens {
        use std::sync::atomic::Ordering::Relaxed;
        m.token_key_fetches.set(v.fetches.load(Relaxed));
        m.token_signature_checks
            .set(v.signature_checks.load(Relaxed));
    }
    if let Some(f) = &load.federation {
        set_federation(&m.fed, &f.state());
    }
    let (status, ctype, body) = match (req.uri().path(), &source) {
        ("/metrics", Source::Core(core)) => match core.refresh_gauges().await {
            Ok(()) => (StatusCode::OK, OPENMETRICS, core.metrics().encode()),
            Err(e) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "text/plain",
                e.to_string(),
            ),
        },
        ("/metrics", Source::Gateway { metrics, .. }) => {
            (StatusCode::OK, OPENMETRICS, metrics.encode())
        }
        ("/metrics", Source::Standby { metrics, active }) => {
            metrics.ha.active.set(0);
            metrics.ha.epoch.set(active.get().map_or(0, |(e, _)| e));
            (StatusCode::OK, OPENMETRICS, metrics.encode())
        }
        ("/readyz", Source::Standby { active, .. }) => (
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            match active.get().and_then(|(_, a)| a.admin) {
                Some(a) => format!("standby metadata node; the active one: {a}\n"),
                None => "standby metadata node; no active one known\n".to_string(),
            },
        ),
        ("/healthz", _) => (StatusCode::OK, "text/plain", "ok\n".to_string()),
        ("/readyz", Source::Core(core)) => {
            match core.ns_stats(&tessera_types::Identity::root("http")).await {
                Ok(_) => (StatusCode::OK, "text/plain", "ready\n".to_string()),
                Err(e) => (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "text/plain",
                    format!("{e}\n"),
                ),
            }
        }
        ("/readyz", Source::Gateway { data, .. }) => match data.filesystems() {
            0 => (
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain",
                "no filesystems known yet\n".to_string(),
            ),
            _ => (StatusCode::OK, "text/plain", "ready\n".to_string()),
        },
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found\n".to_string(),
        ),
    };
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    if let Ok(v) = ctype.parse() {
        resp.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    Ok(resp)
}

/// The federation's state into its metrics.
fn set_federation(m: &tessera_obs::FedMetrics, st: &tessera_fed::FedState) {
    for (name, site, h) in &st.endpoints {
        let l = tessera_obs::EndpointLabels {
            endpoint: name.clone(),
            site: site.clone(),
        };
        m.endpoint_up.get_or_create(&l).set(u64::from(h.up));
        m.endpoint_latency.get_or_create(&l).set(h.latency_ms / 1e3);
        m.endpoint_load.get_or_create(&l).set(h.load);
    }
    m.lookups_cached.set(st.lookups_cached);
    m.lookups_asked.set(st.lookups_asked);
    m.cache_entries.set(st.cache_entries as u64);
}

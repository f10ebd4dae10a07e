//! Scale-out and standby answers in HTTP's words: what `tessera-route`
//! decides written as 307s (to a gateway with the capability in
//! `tessera.cap`, back to the metadata service, to the active node) and
//! 503 + `Retry-After`; on a gateway, GET, HEAD and PUT with a
//! capability. curl -L, davix and gfal2 follow the 307s.

use crate::body::Body;
use crate::error::HttpError;
use crate::ops::{self, blocking, get, put, set, status};
use crate::{path, Ctx, HttpsConfig};
use hyper::Response;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tessera_route::{Ask, Op, Opened, Proto, Route};

/// Query key carrying the capability (as on XRootD).
pub const CAP_KEY: &str = "tessera.cap";

/// Counters a test reads.
#[derive(Debug, Default)]
pub struct Stats {
    /// 307s sent to a gateway (metadata service) or back (gateway).
    pub redirects: AtomicU64,
    /// Requests a gateway served with a capability.
    pub served: AtomicU64,
}

/// The request target's query without our capability.
fn query_without_cap(q: Option<&str>) -> Vec<&str> {
    q.unwrap_or("")
        .split('&')
        .filter(|kv| !kv.is_empty() && !kv.starts_with("tessera.cap="))
        .collect()
}

fn cap_of(q: Option<&str>) -> Option<&str> {
    q?.split('&').find_map(|kv| kv.strip_prefix("tessera.cap="))
}

fn redirect(location: String) -> Response<Body> {
    let mut r = Response::new(Body::Empty);
    status(&mut r, 307);
    set(&mut r, "Location", &location);
    set(&mut r, "Content-Length", "0");
    r
}

/// On the metadata service: the 307 for a GET or PUT of a file (or a
/// stalled file's 503), or `None` to serve it here (HEAD, a directory, a
/// conditional PUT, no live gateway).
pub async fn mgm_redirect(
    ctx: &Ctx,
    req: &crate::Req,
) -> Result<Option<Response<Body>>, HttpError> {
    if !ctx.cfg.role.is_mgm() {
        return Ok(None);
    }
    let op = match req.method().as_str() {
        "GET" => Op::Read,
        // A conditional PUT is served here, where its condition is
        // evaluated and held until the commit (a gateway's write knows
        // nothing of it).
        "PUT" if crate::ops::precond::any(req.headers()) => return Ok(None),
        // As XrdHttp: a PUT makes the parents it needs (once a gateway
        // is there to take it).
        "PUT" => Op::Write {
            overwrite: true,
            mode: 0o644,
            parents: true,
        },
        _ => return Ok(None),
    };
    let p = path::decode(req.uri().path())?;
    let ask = Ask {
        who: &ctx.who,
        op,
        path: &p,
        peer: ctx.peer.ip(),
        tried: &[],
        proto: Proto::Https,
    };
    Ok(match ctx.cfg.role.route_open(&ctx.core, &ask).await? {
        Route::Gateway { addr, cap } => {
            let mut query = query_without_cap(req.uri().query());
            let signed = format!("{CAP_KEY}={cap}");
            query.push(&signed);
            ctx.cfg.stats.redirects.fetch_add(1, Ordering::Relaxed);
            Some(redirect(format!(
                "https://{addr}{}?{}",
                req.uri().path(),
                query.join("&")
            )))
        }
        Route::Wait { secs, why } => Some(get::retry_after(secs, &why)),
        Route::Here | Route::Node { .. } => None,
    })
}

/// On a gateway or a standby (no namespace here): a GET, HEAD or PUT
/// with a capability is served; everything else goes where the namespace
/// is, with our capability left out (the metadata service sends data
/// requests back with a new one).
pub async fn gateway(
    cfg: &Arc<HttpsConfig>,
    peer: std::net::SocketAddr,
    share: &tessera_core::Share,
    req: crate::Req,
) -> Response<Body> {
    let method = req.method().as_str().to_string();
    let with_cap = cap_of(req.uri().query()).is_some();
    let r = match method.as_str() {
        "GET" | "HEAD" | "PUT" if with_cap && cfg.role.is_gateway() => {
            gateway_data(cfg, peer.ip(), share, req).await
        }
        "OPTIONS" if cfg.role.is_gateway() => Ok(ops::options()),
        _ => Ok(elsewhere(cfg, &req)),
    };
    r.unwrap_or_else(|e| crate::error_response(&e))
}

/// A request this node does not serve: a 307 to the node that does, or
/// a 503 to come back.
fn elsewhere(cfg: &HttpsConfig, req: &crate::Req) -> Response<Body> {
    match cfg.role.route_other(Proto::Https) {
        Route::Node { addr } => {
            // A gateway sends the request back without its capability; a
            // standby sends it on as it is.
            let q = if !cfg.role.is_gateway() {
                req.uri()
                    .query()
                    .map(|q| format!("?{q}"))
                    .unwrap_or_default()
            } else {
                let query = query_without_cap(req.uri().query());
                if query.is_empty() {
                    String::new()
                } else {
                    format!("?{}", query.join("&"))
                }
            };
            cfg.stats.redirects.fetch_add(1, Ordering::Relaxed);
            redirect(format!("https://{addr}{}{q}", req.uri().path()))
        }
        Route::Wait { secs, why } => get::retry_after(secs, &why),
        Route::Here | Route::Gateway { .. } => {
            crate::error_response(&HttpError::new(500, "no namespace on this node"))
        }
    }
}

async fn gateway_data(
    cfg: &Arc<HttpsConfig>,
    peer: std::net::IpAddr,
    share: &tessera_core::Share,
    req: crate::Req,
) -> Result<Response<Body>, HttpError> {
    let Some(g) = cfg.role.gateway() else {
        return Err(HttpError::new(500, "not a gateway"));
    };
    // The capability first: without a good one nothing else is read.
    let cap = g.verify(cap_of(req.uri().query()))?;
    let p = path::decode(req.uri().path())?;
    let writing = req.method() == hyper::Method::PUT;
    let hint = if writing {
        put::size_hint(req.headers())
    } else {
        0
    };
    let r = match g.open(cap, &p, peer, writing, hint).await? {
        Opened::Read { rs, holder } => {
            let head = req.method() == hyper::Method::HEAD;
            // A small file's bytes are read in line when the kernel holds
            // them, else on the blocking pool.
            let (rs, whole) = match get::small_body_cached(&rs) {
                Some(whole) => (Arc::new(rs), whole),
                None => blocking(move || get::with_small_body(rs)).await?,
            };
            let budget = cfg
                .buffers
                .for_identity(&holder.limit_key())
                .with_share(share);
            match get::Leases::first_part(&budget, &rs, &whole, head).await {
                Ok(leases) => {
                    get::prime(get::respond(rs, whole, req.headers(), head, leases)).await
                }
                Err(busy) => busy,
            }
        }
        Opened::Write { ws, holder, .. } => {
            let budget = cfg
                .buffers
                .for_identity(&holder.limit_key())
                .with_share(share);
            // A gateway has no rules: it counts the bytes, the metadata
            // service shapes nothing here.
            let pace = tessera_core::Pace::default();
            let expect = crate::ops::putdigest::expected(req.headers())?;
            let body = req.into_body();
            let how = (expect, Default::default());
            let inode = put::receive(ws, body, cfg.body_timeout, &budget, pace, how).await?;
            put::created(&inode, true)
        }
    };
    cfg.stats.served.fetch_add(1, Ordering::Relaxed);
    Ok(r)
}

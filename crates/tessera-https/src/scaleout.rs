//! Scale-out over HTTPS. On the metadata service, GET and PUT of a file
//! are answered with a 307 to a live data gateway, carrying a capability
//! for exactly that file and access (`tessera.cap` in the query); curl -L,
//! davix and gfal2 follow it. On a gateway, GET, HEAD and PUT need such a
//! capability; every other request is sent back to the metadata service
//! with a 307.

use crate::body::Body;
use crate::error::HttpError;
use crate::ops::{self, blocking, get, put, set, status};
use crate::{path, Ctx, HttpsConfig};
use hyper::Response;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tessera_cluster::{Access, CapKey, Capability, ClusterClient, Registry, SiteMap};
use tessera_core::DataPath;
use tessera_types::ErrorKind;

/// Query key carrying the capability (as on XRootD).
pub const CAP_KEY: &str = "tessera.cap";

/// What this HTTPS listener is in a scale-out deployment.
#[derive(Default)]
pub enum Mode {
    /// Serves everything itself (`--role all`, or no gateway alive).
    #[default]
    Local,
    /// The metadata service: GET and PUT of files go to a gateway.
    Mgm {
        registry: Arc<Registry>,
        key: CapKey,
        /// Lifetime of the capabilities it signs, seconds.
        cap_ttl: u64,
        sites: SiteMap,
    },
    /// A data gateway: file data only, with a capability.
    Gateway {
        data: DataPath,
        client: ClusterClient,
        key: CapKey,
        /// The metadata service's HTTPS endpoint (`host:port`).
        mgm: tessera_core::MgmAddr,
        /// This gateway's name as registered (its XRootD address).
        advertise: String,
    },
    /// A standby metadata node (HA): every request goes to the active
    /// node (307, the same path and query), or is answered 503 with
    /// `Retry-After: 1` while none is known (a takeover).
    Standby { active: tessera_core::ActiveNode },
}

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

/// On the metadata service: the 307 for a GET or PUT of a file, or
/// `None` to serve it here (HEAD, a directory, no live gateway).
pub async fn mgm_redirect(
    ctx: &Ctx,
    req: &crate::Req,
) -> Result<Option<Response<Body>>, HttpError> {
    let Mode::Mgm {
        registry,
        key,
        cap_ttl,
        sites,
    } = &ctx.cfg.mode
    else {
        return Ok(None);
    };
    let writing = match req.method().as_str() {
        "GET" => false,
        // A conditional PUT is served here, where its condition is
        // evaluated and held until the commit (a gateway's write knows
        // nothing of it).
        "PUT" if crate::ops::precond::any(req.headers()) => return Ok(None),
        "PUT" => true,
        _ => return Ok(None),
    };
    let Some(gw) = registry.pick_https(sites.site_of(ctx.peer.ip())) else {
        return Ok(None);
    };
    let p = path::decode(req.uri().path())?;
    let client = ctx.peer.ip();
    let cap = if writing {
        put::make_parents(ctx, &p).await?;
        // The decision a single server makes at the open, before anything
        // is signed; the gateway's BeginWrite makes it again.
        ctx.core.may_write(&ctx.who, &p, true).await?;
        Capability::write(&p, &ctx.who, 0o644, true, client, *cap_ttl)
    } else {
        match ctx.core.readable(&ctx.who, &p).await {
            Ok(i) => match ctx.core.stall_unavailable(&i, &p) {
                Some(st) => return Ok(Some(crate::ops::get::stalled(&st))),
                None => Capability::read(&p, &ctx.who, &i, client, *cap_ttl),
            },
            // A directory is listed here.
            Err(e) if e.kind() == ErrorKind::IsADirectory => return Ok(None),
            Err(e) => return Err(e.into()),
        }
    };
    let mut query = query_without_cap(req.uri().query());
    let signed = format!("{CAP_KEY}={}", key.sign(&cap));
    query.push(&signed);
    ctx.cfg.stats.redirects.fetch_add(1, Ordering::Relaxed);
    Ok(Some(redirect(format!(
        "https://{gw}{}?{}",
        req.uri().path(),
        query.join("&")
    ))))
}

/// On a standby metadata node: to the active one.
fn to_active(
    cfg: &HttpsConfig,
    active: &tessera_core::ActiveNode,
    req: &crate::Req,
) -> Response<Body> {
    match active.get().and_then(|(_, a)| a.https) {
        Some(to) => {
            let q = req
                .uri()
                .query()
                .map(|q| format!("?{q}"))
                .unwrap_or_default();
            cfg.stats.redirects.fetch_add(1, Ordering::Relaxed);
            redirect(format!("https://{to}{}{q}", req.uri().path()))
        }
        None => get::retry_after(1, "no active metadata node yet (a takeover)"),
    }
}

/// On a gateway (or a standby metadata node): serve a request (there is
/// no namespace here).
pub async fn gateway(
    cfg: &Arc<HttpsConfig>,
    peer: std::net::SocketAddr,
    share: &tessera_core::Share,
    req: crate::Req,
) -> Response<Body> {
    let mgm = match &cfg.mode {
        Mode::Gateway { mgm, .. } => mgm.get(),
        Mode::Standby { active } => return to_active(cfg, active, &req),
        _ => return crate::error_response(&HttpError::new(500, "not a gateway")),
    };
    let method = req.method().as_str().to_string();
    let with_cap = cap_of(req.uri().query()).is_some();
    let r = match method.as_str() {
        "GET" | "HEAD" | "PUT" if with_cap => gateway_data(cfg, peer.ip(), share, req).await,
        "OPTIONS" => Ok(ops::options()),
        _ => {
            // Everything else is the metadata service's (which sends data
            // requests back here, or to another gateway, with a capability).
            let query = query_without_cap(req.uri().query());
            let q = if query.is_empty() {
                String::new()
            } else {
                format!("?{}", query.join("&"))
            };
            cfg.stats.redirects.fetch_add(1, Ordering::Relaxed);
            Ok(redirect(format!("https://{mgm}{}{q}", req.uri().path())))
        }
    };
    r.unwrap_or_else(|e| crate::error_response(&e))
}

async fn gateway_data(
    cfg: &Arc<HttpsConfig>,
    peer: std::net::IpAddr,
    share: &tessera_core::Share,
    req: crate::Req,
) -> Result<Response<Body>, HttpError> {
    let Mode::Gateway {
        data,
        client,
        key,
        advertise,
        ..
    } = &cfg.mode
    else {
        return Err(HttpError::new(500, "not a gateway"));
    };
    let denied = |m: String| HttpError::new(403, m);
    let text = cap_of(req.uri().query())
        .ok_or_else(|| denied("no capability".into()))?
        .to_string();
    let cap = key.verify(&text).map_err(|e| denied(e.to_string()))?;
    let p = path::decode(req.uri().path())?;
    cap.check_target(&p, peer)
        .map_err(|e| denied(e.to_string()))?;
    let holder = cap
        .holder()
        .ok_or_else(|| denied("malformed capability identity".into()))?;
    let writing = req.method() == hyper::Method::PUT;
    let log = data.session_log(&holder, &p, std::time::Instant::now());
    let r = match (&cap.access, writing) {
        (Access::Read, false) => {
            let head = req.method() == hyper::Method::HEAD;
            let inode = cap
                .file
                .as_ref()
                .and_then(|f| f.inode(p.name().map(<[u8]>::to_vec).unwrap_or_default()))
                .ok_or_else(|| denied("read capability without a file".into()))?;
            // Opening reads nothing; a small file's bytes are read in line
            // when the kernel holds them, else on the blocking pool.
            let mut rs = data.open_inode(inode)?;
            if let Some(l) = log {
                rs.set_log(l);
            }
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
        (Access::Write, true) => {
            let hint = put::size_hint(req.headers());
            let plan = client.begin_write(&text, hint, advertise).await?;
            let (data, ledger, p2) = (
                data.clone(),
                client.ledger(tokio::runtime::Handle::current()),
                p.clone(),
            );
            let mut ws = blocking(move || data.start_write(plan, ledger, p2, hint)).await?;
            if let Some(l) = log {
                ws.set_log(l);
            }
            let budget = cfg
                .buffers
                .for_identity(&holder.limit_key())
                .with_share(share);
            let inode = put::receive(ws, req.into_body(), cfg.body_timeout, &budget).await?;
            put::created(&inode, true)
        }
        _ => return Err(denied("the capability is for another access".into())),
    };
    cfg.stats.served.fetch_add(1, Ordering::Relaxed);
    Ok(r)
}

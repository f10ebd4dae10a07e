//! The HTTPS/WebDAV gateway: hyper over rustls, one module per method
//! under `ops/`. Every request becomes calls on the core service; failures
//! map to the status codes davix and gfal2 read (`error.rs`); the
//! connection stays usable after an error.

mod auth;
mod body;
mod date;
pub mod davlisting;
pub mod davxml;
pub mod error;
mod monitoring;
mod ops;
pub mod path;
pub mod ranges;
mod reqbody;
pub mod scaleout;
mod stall;
mod tpc;

pub use body::Body;
pub use error::HttpError;
pub use reqbody::ReqBody;

/// A request as the methods get it.
pub type Req = hyper::Request<ReqBody>;
pub use scaleout::Stats;

use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use std::time::Duration;
use tessera_core::Core;
use tessera_types::Identity;
use tokio::net::TcpListener;
use tokio::sync::watch;

pub struct HttpsConfig {
    /// TLS (https://); without it the listener speaks plain http://.
    pub tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    /// Who a request without credentials is: `nobody` by default,
    /// read-only in dev mode.
    pub anonymous: Identity,
    /// Who a request without credentials is when it comes from a loopback
    /// peer whose socket the kernel says is this identity's uid (the
    /// server's own user, `[https] anonymous = "owner"`); others are
    /// `anonymous`.
    pub owner: Option<Identity>,
    /// HTTP Basic credentials (over TLS only) checked against a site's
    /// password file, for desktop WebDAV clients.
    pub basic: Option<Arc<tessera_auth::passwd::Passwd>>,
    /// Largest request header block (hyper's limit), and the time a client
    /// has to send it.
    pub max_headers: usize,
    pub header_timeout: Duration,
    /// How long a request body may stall (no data at all) before the
    /// upload is abandoned with 408 and the connection closed.
    pub body_timeout: Duration,
    /// A client that takes under 1 MiB of a response in this long, while
    /// it is being sent, loses its connection (and the response's memory).
    pub send_timeout: Duration,
    /// CAs trusted when this server is the active side of a third-party
    /// copy (`None`: TLS sources and destinations are refused).
    pub tpc_tls: Option<Arc<tokio_rustls::rustls::ClientConfig>>,
    /// What this node is (all-in-one, metadata service, gateway,
    /// standby): where requests are served.
    pub role: Arc<tessera_route::Role>,
    pub stats: Arc<Stats>,
    /// Offer HTTP/2 (ALPN `h2`) to TLS clients that ask for it.
    pub http2: bool,
    /// Bearer tokens (`Authorization: Bearer`, `?authz=`) are validated
    /// with this; `None`: no issuer is configured and tokens are ignored.
    pub tokens: Option<Arc<tessera_auth::Validator>>,
    /// The development issuer served here: (issuer URL, JWKS document).
    pub dev_issuer: Option<(String, String)>,
    /// The process's memory budget: a GET holds each part it streams
    /// from it until the part is sent.
    pub buffers: tessera_core::Budget,
    /// Client connections this process takes (shared with XRootD).
    pub conns: tessera_core::ConnLimits,
    /// The remote endpoints third-party copies may reach.
    pub tpc_policy: tessera_core::RemotePolicy,
    /// At shutdown, how long requests in flight may go on (uploads and
    /// downloads finish); idle keep-alive connections close at once.
    pub drain: Duration,
    /// Federated views (`[federation]`), if any.
    pub federation: Option<Arc<tessera_fed::Federation>>,
    /// Grid certificates (`[x509]`): a client certificate (proxy chain)
    /// is an identity when the request carries no token or password.
    pub x509: Option<Arc<tessera_auth::x509::X509Auth>>,
    /// Macaroons issued (`POST` macaroon requests) and taken as bearer
    /// tokens, with the cluster's secret.
    pub macaroons: Option<Arc<tessera_auth::macaroon::Macaroons>>,
    /// The monitoring stream (`[monitoring]`), when it has collectors.
    pub monitor: Option<Arc<tessera_wlcg::monitor::Monitor>>,
    /// SciTags fireflies (`[scitags]`), when they go somewhere.
    pub fireflies: Option<Arc<tessera_wlcg::scitags::Fireflies>>,
    /// The Storage Resource Report served at `ops::srr::PATH` (`[srr]`).
    pub srr: Option<Arc<tessera_wlcg::srr::Reporter>>,
}

/// See [`HttpsConfig::body_timeout`].
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(60);

impl Default for HttpsConfig {
    fn default() -> HttpsConfig {
        HttpsConfig {
            tls: None,
            anonymous: Identity::user(65534, 65534, "nobody", "https"),
            owner: None,
            basic: None,
            max_headers: 64,
            header_timeout: Duration::from_secs(30),
            body_timeout: DEFAULT_BODY_TIMEOUT,
            send_timeout: DEFAULT_BODY_TIMEOUT,
            tpc_tls: None,
            role: Arc::default(),
            stats: Arc::default(),
            http2: false,
            tokens: None,
            dev_issuer: None,
            buffers: tessera_core::Budget::default(),
            conns: tessera_core::ConnLimits::unlimited(),
            tpc_policy: tessera_core::RemotePolicy::default(),
            drain: Duration::from_secs(30),
            federation: None,
            x509: None,
            macaroons: None,
            srr: None,
            monitor: None,
            fireflies: None,
        }
    }
}

/// What a request handler gets.
pub struct Ctx {
    pub core: Core,
    pub who: Identity,
    pub cfg: Arc<HttpsConfig>,
    /// The client's address (a gateway of its site is preferred).
    pub peer: std::net::SocketAddr,
    /// The address the client reached.
    pub local: std::net::SocketAddr,
    /// Whether the request presented credentials (a valid token): an
    /// anonymous one runs as `HttpsConfig::anonymous`.
    pub credentials: bool,
    /// The connection's share of the memory budget.
    pub share: tessera_core::Share,
    /// The connection in the monitoring stream, once it moved a file.
    pub mon: MonSlot,
}

/// A connection's users in the monitoring stream, one per identity it
/// transfers as (each made at its first transfer; its end recorded when
/// the connection and its last transfer let it go).
pub type MonSlot = Arc<tessera_wlcg::monitor::Users>;

impl Ctx {
    /// The memory budget this request's bytes (a response's parts, an
    /// upload's buffers) are taken from: under the connection's share and
    /// the identity's (all of an identity's connections, anonymous ones
    /// together, hold at most that much).
    pub fn reply_budget(&self) -> tessera_core::Budget {
        self.cfg
            .buffers
            .for_identity(&self.who.limit_key())
            .with_share(&self.share)
    }
}

/// Accept connections until `stop` turns true. A data gateway has no
/// core (`None`): it serves file data with capabilities only.
pub async fn serve(
    listener: TcpListener,
    core: Option<Core>,
    cfg: Arc<HttpsConfig>,
    stop: watch::Receiver<bool>,
) {
    // HTTP/2 for clients that offer it (ALPN) when enabled, HTTP/1.1
    // otherwise.
    let tls = cfg.tls.as_ref().map(|t| {
        let mut t = (**t).clone();
        t.alpn_protocols = if cfg.http2 {
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        } else {
            vec![b"http/1.1".to_vec()]
        };
        Arc::new(t)
    });
    let acceptor = tessera_core::Acceptor {
        listener,
        limits: cfg.conns.clone(),
        drain: cfg.drain,
        name: "https",
    };
    let serve = |sock: tokio::net::TcpStream, peer: std::net::SocketAddr, mark| {
        let _ = sock.set_nodelay(true);
        let (core, cfg, tls, stop) = (core.clone(), Arc::clone(&cfg), tls.clone(), stop.clone());
        async move {
            let mut conn = Conn {
                peer,
                local: sock.local_addr().unwrap_or(peer),
                owner: is_owner(&cfg, &sock, peer),
                share: cfg.buffers.connection_share(),
                mark,
                cert: None,
                mon: MonSlot::default(),
            };
            let sock = stall::StallGuard::new(sock, cfg.send_timeout);
            let r = match &tls {
                Some(tls) => {
                    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::clone(tls));
                    match tokio::time::timeout(cfg.header_timeout, acceptor.accept(sock)).await {
                        Ok(Ok(s)) => {
                            conn.cert = auth::ClientCert::of(&cfg, s.get_ref().1);
                            let h2 = s.get_ref().1.alpn_protocol() == Some(b"h2");
                            connection(TokioIo::new(s), core, cfg, conn, h2, stop).await
                        }
                        Ok(Err(e)) => Err(e.to_string()),
                        Err(_) => Err("TLS handshake timed out".into()),
                    }
                }
                None => connection(TokioIo::new(sock), core, cfg, conn, false, stop).await,
            };
            if let Err(e) = r {
                tracing::debug!(%peer, error = %e, "https connection ended");
            }
        }
    };
    let refuse_tls = tls.clone();
    let refuse_one = move |sock, why| refuse(sock, refuse_tls.clone(), why);
    acceptor.run(stop.clone(), serve, refuse_one).await
}

/// A connection over the limits: within a short time, the TLS handshake
/// and a `503 Service Unavailable` saying why (with `Retry-After`), then
/// it is closed.
async fn refuse(
    sock: tokio::net::TcpStream,
    tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    why: String,
) {
    use tokio::io::AsyncWriteExt;
    let body = format!("server busy: {why}; try again later\n");
    let reply = format!(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\nConnection: close\r\n\
         Content-Type: text/plain\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let quick = Duration::from_secs(2);
    let _ = tokio::time::timeout(quick, async {
        match tls {
            Some(tls) => {
                let mut s = tokio_rustls::TlsAcceptor::from(tls).accept(sock).await?;
                s.write_all(reply.as_bytes()).await?;
                s.shutdown().await
            }
            None => {
                let mut s = sock;
                s.write_all(reply.as_bytes()).await?;
                s.shutdown().await
            }
        }
    })
    .await;
}

/// What a connection's requests know of it.
#[derive(Clone)]
struct Conn {
    peer: std::net::SocketAddr,
    /// The address the client reached (a marked flow's end here).
    local: std::net::SocketAddr,
    /// The kernel says the loopback peer runs as the server's own user
    /// (`HttpsConfig::owner`).
    owner: bool,
    /// Its share of the memory budget (what its responses hold).
    share: tessera_core::Share,
    /// Its place in the connection limits (anonymous ones count apart).
    mark: tessera_core::ConnMark,
    /// The certificate chain the client sent in the handshake, if any.
    cert: Option<Arc<auth::ClientCert>>,
    /// Its user in the monitoring stream.
    mon: MonSlot,
}

/// Whether `sock`'s peer is the server's own user on loopback, when
/// `[https] anonymous = "owner"` asks (the kernel's socket table, once
/// per connection).
fn is_owner(cfg: &HttpsConfig, sock: &tokio::net::TcpStream, peer: std::net::SocketAddr) -> bool {
    let Some(owner) = &cfg.owner else {
        return false;
    };
    let Ok(local) = sock.local_addr() else {
        return false;
    };
    tessera_core::peer::loopback_uid(peer, local) == Some(owner.uid)
}

/// What serves one request on a connection.
fn service(
    core: Option<Core>,
    cfg: Arc<HttpsConfig>,
    conn: Conn,
    h2: bool,
) -> impl hyper::service::Service<
    Request<Incoming>,
    Response = Response<Body>,
    Error = std::convert::Infallible,
    Future = impl std::future::Future<Output = Result<Response<Body>, std::convert::Infallible>> + Send,
> + Clone {
    hyper::service::service_fn(move |req: Request<Incoming>| {
        let (core, cfg, conn) = (core.clone(), Arc::clone(&cfg), conn.clone());
        let req = req.map(|b| ReqBody::new(b, h2));
        async move {
            // HTTP/1.1 counts headers as it parses; HTTP/2 is checked here.
            if req.headers().len() > cfg.max_headers {
                return Ok(error_response(&HttpError::new(
                    431,
                    "too many request headers",
                )));
            }
            if let Some(e) = ops::put::partial(&req) {
                return Ok(error_response(&e));
            }
            if let Some(r) = auth::dev_issuer(&cfg, &req) {
                return Ok(r);
            }
            let peer = conn.peer;
            let r = match core {
                Some(core) => {
                    let (who, credentials) =
                        match auth::identity(&cfg, &req, conn.owner, conn.cert.as_deref()).await {
                            Ok(w) => w,
                            Err(r) => return Ok(r),
                        };
                    // A connection without credentials takes an anonymous
                    // place (fewer of them); at their limit it is closed.
                    if credentials || conn.owner {
                        conn.mark.authenticated();
                    } else if let Err(why) = conn.mark.anonymous() {
                        let mut r = error_response(&HttpError::new(
                            503,
                            format!("server busy: {why}; try again later"),
                        ));
                        r.headers_mut().insert(
                            hyper::header::CONNECTION,
                            hyper::header::HeaderValue::from_static("close"),
                        );
                        return Ok(r);
                    }
                    let ctx = Ctx {
                        core,
                        who,
                        cfg,
                        peer,
                        local: conn.local,
                        credentials,
                        share: conn.share,
                        mon: Arc::clone(&conn.mon),
                    };
                    handle(ctx, req).await
                }
                None => scaleout::gateway(&cfg, peer, &conn.share, req).await,
            };
            Ok::<_, std::convert::Infallible>(r)
        }
    })
}

/// Serves one connection until it ends; at `stop`, the requests in flight
/// finish, then it closes (an idle keep-alive one at once).
macro_rules! serve_until_stopped {
    ($conn:expr, $stop:expr) => {{
        let conn = $conn;
        tokio::pin!(conn);
        tokio::select! {
            r = conn.as_mut() => return r.map_err(|e| e.to_string()),
            _ = stopped($stop) => {}
        }
        conn.as_mut().graceful_shutdown();
        conn.await.map_err(|e| e.to_string())
    }};
}

/// A connection: HTTP/1.1, or HTTP/2 (ALPN `h2`, requests run
/// concurrently, each as over HTTP/1.1).
async fn connection<I>(
    io: I,
    core: Option<Core>,
    cfg: Arc<HttpsConfig>,
    conn: Conn,
    h2: bool,
    stop: watch::Receiver<bool>,
) -> Result<(), String>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let svc = service(core, Arc::clone(&cfg), conn, h2);
    if h2 {
        let mut b = hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new());
        b.timer(hyper_util::rt::TokioTimer::new())
            .max_header_list_size(64 << 10)
            .max_concurrent_streams(256);
        serve_until_stopped!(b.serve_connection(io, svc), stop)
    } else {
        let mut b = hyper::server::conn::http1::Builder::new();
        b.max_headers(cfg.max_headers)
            .header_read_timeout(cfg.header_timeout)
            .timer(hyper_util::rt::TokioTimer::new());
        serve_until_stopped!(b.serve_connection(io, svc), stop)
    }
}

/// Resolves once `stop` is true (never if its sender went away first).
async fn stopped(mut stop: watch::Receiver<bool>) {
    while !*stop.borrow_and_update() {
        if stop.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

async fn handle(ctx: Ctx, req: crate::Req) -> Response<Body> {
    let r = answer(&ctx, req).await;
    auth::challenge(&ctx, r)
}

async fn answer(ctx: &Ctx, req: crate::Req) -> Response<Body> {
    if ops::whoami::asks(&req) {
        return ops::whoami::answer(ctx);
    }
    if let Some(r) = ops::rules::turned_away(ctx, &req) {
        return r;
    }
    if ops::srr::asks(ctx, &req) {
        let head = req.method() == hyper::Method::HEAD;
        return ops::srr::answer(ctx, head)
            .await
            .unwrap_or_else(|e| error_response(&e));
    }
    match scaleout::mgm_redirect(ctx, &req).await {
        Ok(Some(r)) => return r,
        Ok(None) => {}
        Err(e) => return error_response(&e),
    }
    if ops::macaroon::asks(&req) {
        return ops::macaroon::issue(ctx, req)
            .await
            .unwrap_or_else(|e| error_response(&e));
    }
    if let Some(r) = ops::fed::serve(ctx, &req).await {
        return r.unwrap_or_else(|e| error_response(&e));
    }
    let method = req.method().as_str().to_string();
    let r = match method.as_str() {
        "GET" | "HEAD" => ops::get::get(ctx, req).await,
        "PUT" => ops::put::put(ctx, req).await,
        "DELETE" => ops::delete::delete(ctx, req).await,
        "MKCOL" => ops::mkcol::mkcol(ctx, req).await,
        "MOVE" => ops::moves::mv(ctx, req).await,
        "PROPFIND" => ops::propfind::propfind(ctx, req).await,
        "PROPPATCH" => ops::proppatch::proppatch(ctx, req).await,
        "COPY" => copy(ctx, req).await,
        "OPTIONS" => Ok(ops::options()),
        _ => Err(HttpError::new(
            405,
            format!("{method} is not supported here"),
        )),
    };
    r.unwrap_or_else(|e| error_response(&e))
}

/// COPY: third-party copy, pull (`Source`) or push (`Destination`), or a
/// copy inside the namespace (`Destination` on this server, no
/// third-party-copy headers).
async fn copy(ctx: &Ctx, req: crate::Req) -> Result<Response<Body>, HttpError> {
    let h = req.headers();
    if let Some(src) = ops::header(h, "source").map(str::to_string) {
        return tpc::pull::pull(ctx, req, &src).await;
    }
    if let Some(dst) = ops::header(h, "destination").map(str::to_string) {
        if let Some(p) = ops::copy::local_destination(h, req.uri(), &dst) {
            return ops::copy::copy(ctx, req, p).await;
        }
        return tpc::push::push(ctx, req, &dst).await;
    }
    Err(HttpError::new(
        400,
        "COPY needs a Source or a Destination header",
    ))
}

/// A failure as a short text body; the connection stays open.
pub fn error_response(e: &HttpError) -> Response<Body> {
    let mut r = Response::new(Body::text(format!("{}\n", e.msg)));
    *r.status_mut() = e.status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    if e.is_denial() {
        r.extensions_mut().insert(auth::Denial);
    }
    if e.status == hyper::StatusCode::SERVICE_UNAVAILABLE {
        // Short of something for now (memory, a filesystem): a client
        // that retries is told when (a caller may set its own).
        r.headers_mut().insert(
            hyper::header::RETRY_AFTER,
            hyper::header::HeaderValue::from_static("5"),
        );
    }
    r
}

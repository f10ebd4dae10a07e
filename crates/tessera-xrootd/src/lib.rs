//! The XRootD gateway: the XRootD protocol (5.x, `XProtocol.hh`) over
//! `root://` and `roots://` (in-band TLS), so that stock `xrdcp`, `xrdfs`
//! and the XRootD Python bindings work against Tessera. Every request
//! becomes a call on the core service; errors map to `kXR_*` numbers.

mod conn;
pub mod decode;
pub mod error;
pub mod gsi;
pub mod identity;
mod idle;
mod monitoring;
pub mod names;
mod ops;
/// The wire constants and request header: the shared codec.
pub use tessera_xrdproto as proto;
mod reply;
/// Requests decoded: the shared codec's decoder.
use tessera_xrdproto::request;
#[cfg(test)]
mod request_tests;
mod session;
mod statfmt;
mod token;

pub use conn::ConnError;
pub use error::XrdError;
pub use identity::UnixPolicy;

use std::sync::Arc;
use std::time::Duration;
use tessera_core::Core;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Largest `kXR_write` payload accepted by default (xrdcp sends 8 MiB).
pub const DEFAULT_MAX_WRITE: usize = 64 << 20;

/// Counters a test or a heartbeat reads.
#[derive(Default)]
pub struct Stats {
    /// Files open now.
    pub open_files: Arc<std::sync::atomic::AtomicU64>,
    /// Opens served since start.
    pub opens: std::sync::atomic::AtomicU64,
    /// Redirects sent since start.
    pub redirects: std::sync::atomic::AtomicU64,
    /// Requests being served now, all connections together.
    pub in_flight: std::sync::atomic::AtomicU64,
    /// Connections closed for being idle, since start.
    pub idle_closed: std::sync::atomic::AtomicU64,
    /// `kXR_pgread` and `kXR_pgwrite` requests served since start.
    pub pgreads: std::sync::atomic::AtomicU64,
    pub pgwrites: std::sync::atomic::AtomicU64,
    /// Page CRCs pgread sent as the stripes store them, and computed
    /// (request edges, a RAIN file's last group, format-1 files).
    pub page_crcs_stored: std::sync::atomic::AtomicU64,
    pub page_crcs_computed: std::sync::atomic::AtomicU64,
    /// Pages of pgwrites whose CRC did not match (the client resends them).
    pub page_crc_errors: std::sync::atomic::AtomicU64,
}

pub struct XrootdConfig {
    /// What this node is (scale-out, standby): where requests are served.
    pub role: Arc<tessera_route::Role>,
    pub stats: Arc<Stats>,
    /// Certificate and key for `roots://` (and TLS upgrades).
    pub tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    /// How `unix` credentials map to identities.
    pub unix: UnixPolicy,
    /// Answered to `query config sitename`.
    pub site: String,
    pub max_write: usize,
    /// Bearer tokens (`ztn`, `authz=`) are validated with this; `None`:
    /// no issuer is configured.
    pub tokens: Option<Arc<tessera_auth::Validator>>,
    /// Macaroons (issued over HTTPS) taken as tokens, like the JWTs.
    pub macaroons: Option<Arc<tessera_auth::macaroon::Macaroons>>,
    /// The `gsi` security protocol (X.509 proxies), when `[x509]` is on.
    pub gsi: Option<Arc<gsi::Gsi>>,
    /// How long a request that has begun to arrive may stall (no bytes)
    /// before the connection is closed. Between requests a client may be
    /// idle as long as it likes.
    pub request_stall: std::time::Duration,
    /// Owner and group names in stat replies.
    pub names: Arc<names::Names>,
    /// Requests served at once per connection; a connection that has this
    /// many is not read from until one finishes (its client waits in TCP),
    /// so a client that pipelines reads without taking the replies holds
    /// at most this many read parts in memory.
    pub max_in_flight: usize,
    /// The process's memory budget for write payloads and read replies,
    /// shared by all connections (and with the HTTPS gateway).
    pub buffers: tessera_core::Budget,
    /// How long a payload that has begun may bring no bytes before the
    /// connection is given up (its files fail, its leases go back).
    pub body_timeout: std::time::Duration,
    /// A logged-in connection with no file open and nothing in flight is
    /// closed after this long without a request (`xrd.timeout idle`).
    pub idle_timeout: std::time::Duration,
    /// The same for a connection with files open.
    pub idle_open_timeout: std::time::Duration,
    /// Client connections this process takes (shared with HTTPS).
    pub conns: tessera_core::ConnLimits,
    /// At shutdown, how long connections with open files may go on (their
    /// transfers finish); idle ones close at once.
    pub drain: Duration,
    /// Federated views (`[federation]`), if any.
    pub federation: Option<std::sync::Arc<tessera_fed::Federation>>,
    /// The monitoring stream (`[monitoring]`), when it has collectors.
    pub monitor: Option<Arc<tessera_wlcg::monitor::Monitor>>,
    /// SciTags fireflies (`[scitags]`), when they go somewhere.
    pub fireflies: Option<Arc<tessera_wlcg::scitags::Fireflies>>,
}

/// See [`XrootdConfig::body_timeout`].
pub const DEFAULT_BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
/// See [`XrootdConfig::idle_timeout`]: longer than XrdCl's own 300 s
/// time to live of an idle data-server connection.
pub const DEFAULT_IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);
/// See [`XrootdConfig::idle_open_timeout`].
pub const DEFAULT_IDLE_OPEN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);

/// See [`XrootdConfig::max_in_flight`]: xrdcp keeps up to 4 chunks of a
/// file in flight, 32 with `--parallel 8` over one connection.
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;

/// See [`XrootdConfig::request_stall`].
pub const DEFAULT_REQUEST_STALL: std::time::Duration = std::time::Duration::from_secs(60);

impl Default for XrootdConfig {
    fn default() -> XrootdConfig {
        XrootdConfig {
            role: Arc::default(),
            stats: Arc::default(),
            tls: None,
            unix: UnixPolicy::Anonymous,
            site: "tessera".into(),
            max_write: DEFAULT_MAX_WRITE,
            tokens: None,
            macaroons: None,
            gsi: None,
            request_stall: DEFAULT_REQUEST_STALL,
            names: Arc::default(),
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            buffers: tessera_core::Budget::default(),
            body_timeout: DEFAULT_BODY_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            idle_open_timeout: DEFAULT_IDLE_OPEN_TIMEOUT,
            conns: tessera_core::ConnLimits::unlimited(),
            drain: DEFAULT_DRAIN,
            federation: None,
            monitor: None,
            fireflies: None,
        }
    }
}

/// How long a shutdown waits for transfers by default (`[server] drain_s`).
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(30);

/// Accept connections until `stop` turns true; each connection runs as
/// its own task.
pub async fn serve(
    listener: TcpListener,
    core: Option<Core>,
    cfg: Arc<XrootdConfig>,
    stop: watch::Receiver<bool>,
) {
    let acceptor = tessera_core::Acceptor {
        listener,
        limits: cfg.conns.clone(),
        drain: cfg.drain,
        name: "xroot",
    };
    let serve = |sock, peer: std::net::SocketAddr, mark| {
        let (core, cfg, stop) = (core.clone(), Arc::clone(&cfg), stop.clone());
        async move {
            if let Err(e) = conn::serve_connection(sock, core, cfg, mark, stop).await {
                tracing::debug!(%peer, error = %e, "xroot connection ended");
            }
        }
    };
    acceptor
        .run(stop.clone(), serve, conn::refuse_connection)
        .await
}

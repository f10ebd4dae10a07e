//! The XRootD gateway: the XRootD protocol (5.x, `XProtocol.hh`) over
//! `root://` and `roots://` (in-band TLS), so that stock `xrdcp`, `xrdfs`
//! and the XRootD Python bindings work against Tessera. Every request
//! becomes a call on the core service; errors map to `kXR_*` numbers.

mod conn;
pub mod decode;
pub mod error;
pub mod identity;
mod ops;
pub mod proto;
mod reply;
mod session;
mod statfmt;

pub use conn::ConnError;
pub use error::XrdError;
pub use identity::UnixPolicy;

use std::sync::Arc;
use tessera_core::Core;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Largest `kXR_write` payload accepted by default (xrdcp sends 8 MiB).
pub const DEFAULT_MAX_WRITE: usize = 64 << 20;

pub struct XrootdConfig {
    /// Certificate and key for `roots://` (and TLS upgrades).
    pub tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    /// How `unix` credentials map to identities.
    pub unix: UnixPolicy,
    /// Answered to `query config sitename`.
    pub site: String,
    pub max_write: usize,
}

impl Default for XrootdConfig {
    fn default() -> XrootdConfig {
        XrootdConfig {
            tls: None,
            unix: UnixPolicy::Anonymous,
            site: "tessera".into(),
            max_write: DEFAULT_MAX_WRITE,
        }
    }
}

/// Accept connections until `stop` turns true; each connection runs as
/// its own task.
pub async fn serve(
    listener: TcpListener,
    core: Core,
    cfg: Arc<XrootdConfig>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = stop.changed() => {
                if *stop.borrow() {
                    return;
                }
            }
            r = listener.accept() => match r {
                Ok((sock, peer)) => {
                    let (core, cfg) = (core.clone(), Arc::clone(&cfg));
                    tokio::spawn(async move {
                        if let Err(e) = conn::serve_connection(sock, core, cfg).await {
                            tracing::debug!(%peer, error = %e, "xroot connection ended");
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "xroot accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            }
        }
    }
}

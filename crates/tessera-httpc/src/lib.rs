//! The one HTTP client of Tessera, used by token-issuer discovery
//! (`tessera-auth`), third-party copy (`tessera-https`) and the federation
//! (`tessera-fed`): URLs split by `http::Uri` ([`Url`]: no hand-written
//! authority parsing), TLS trusting the system bundle and configured CAs
//! ([`trust`]), a connection with a deadline to a host or to addresses a
//! policy admitted ([`stream`]), and hyper's HTTP/1.1 handshake with the
//! header case the reference server needs ([`handshake`], [`open`]).
//! Errors are text for the caller to wrap (each says what failed).

mod url;

pub use url::{url_host, Scheme, Url};

use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::ClientConfig;

/// The User-Agent of our requests.
pub const USER_AGENT: &str = concat!("tessera/", env!("CARGO_PKG_VERSION"));

/// A TLS client configuration trusting the system's CA bundle (when
/// present) and the PEM certificates in `extra`.
pub fn trust(extra: &[std::path::PathBuf]) -> Result<Arc<ClientConfig>, String> {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::CertificateDer;
    let mut roots = tokio_rustls::rustls::RootCertStore::empty();
    let system = std::path::Path::new("/etc/ssl/certs/ca-certificates.crt");
    let mut files: Vec<&std::path::Path> = extra.iter().map(|p| p.as_path()).collect();
    if system.exists() {
        files.push(system);
    }
    for f in files {
        let certs = CertificateDer::pem_file_iter(f)
            .map_err(|e| format!("reading {}: {e}", f.display()))?;
        for c in certs {
            let c = c.map_err(|e| format!("parsing {}: {e}", f.display()))?;
            // A bundle may hold certificates rustls rejects; skip those.
            let _ = roots.add(c);
        }
    }
    Ok(Arc::new(
        ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    ))
}

/// A connected byte stream, TLS or not.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// A stream to `url` within `deadline` (the TCP connection and the TLS
/// handshake each): to `addrs` when a policy admitted those, else to the
/// URL's host. TLS for `https` URLs, with `tls`'s trust.
pub async fn stream(
    url: &Url,
    addrs: &[SocketAddr],
    tls: Option<&Arc<ClientConfig>>,
    deadline: Duration,
) -> Result<Box<dyn Io>, String> {
    Ok(stream_addrs(url, addrs, tls, deadline).await?.0)
}

/// [`stream`], with the connection's local and remote addresses (a
/// marked flow's ends).
pub async fn stream_addrs(
    url: &Url,
    addrs: &[SocketAddr],
    tls: Option<&Arc<ClientConfig>>,
    deadline: Duration,
) -> Result<(Box<dyn Io>, SocketAddr, SocketAddr), String> {
    let connecting = async {
        if addrs.is_empty() {
            tokio::net::TcpStream::connect((url.host.as_str(), url.port)).await
        } else {
            tokio::net::TcpStream::connect(addrs).await
        }
    };
    let tcp = tokio::time::timeout(deadline, connecting)
        .await
        .map_err(|_| "connecting timed out".to_string())?
        .map_err(|e| format!("connecting: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let ends = (
        tcp.local_addr().map_err(|e| e.to_string())?,
        tcp.peer_addr().map_err(|e| e.to_string())?,
    );
    if !url.tls() {
        return Ok((Box::new(tcp), ends.0, ends.1));
    }
    let cfg = tls.ok_or("no CAs are trusted for TLS")?;
    let name = ServerName::try_from(url.host.clone()).map_err(|e| e.to_string())?;
    let s = tokio::time::timeout(
        deadline,
        tokio_rustls::TlsConnector::from(Arc::clone(cfg)).connect(name, tcp),
    )
    .await
    .map_err(|_| "TLS timed out".to_string())?
    .map_err(|e| format!("TLS: {e}"))?;
    Ok((Box::new(s), ends.0, ends.1))
}

/// HTTP/1.1 over `io` (the connection runs on its own task). Header names
/// go out in title case (`Content-Length`, `Depth`): the reference server
/// (XrdHttp 5.5) matches some case-sensitively.
pub async fn handshake<B, I>(io: I) -> Result<SendRequest<B>, String>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (tx, conn) = hyper::client::conn::http1::Builder::new()
        .title_case_headers(true)
        .handshake(TokioIo::new(io))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(tx)
}

/// A new connection to `url` ready for requests ([`stream`], then
/// [`handshake`]).
pub async fn open<B>(
    url: &Url,
    addrs: &[SocketAddr],
    tls: Option<&Arc<ClientConfig>>,
    deadline: Duration,
) -> Result<SendRequest<B>, String>
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    handshake(stream(url, addrs, tls, deadline).await?).await
}

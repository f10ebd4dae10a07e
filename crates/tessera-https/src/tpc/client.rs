//! The active side's HTTP client: one request to a remote endpoint over
//! TLS (trusting the configured CAs) or plain TCP, hyper's HTTP/1.1.

use super::tail::TailApart;
use crate::error::HttpError;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use std::time::Duration;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::ClientConfig;

/// A remote URL, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    pub tls: bool,
    pub host: String,
    pub port: u16,
    /// Path and query, as sent.
    pub target: String,
    /// The addresses `host` resolved to when the policy admitted it: the
    /// ones connected to (empty until [`Remote::admit`]).
    pub addrs: Vec<std::net::SocketAddr>,
}

/// What a client is told of any failure to reach a remote end (refused,
/// timed out, not TLS, not HTTP): the same words, so that copies cannot
/// probe which ports of which hosts are open, closed or TLS.
pub const UNREACHABLE: &str =
    "the remote endpoint could not be reached or gave no usable HTTP answer";

impl Remote {
    /// `https://`, `davs://`, `http://` or `dav://` URLs.
    pub fn parse(url: &str) -> Result<Remote, HttpError> {
        let bad = || HttpError::new(400, format!("not a usable URL: {url}"));
        let (scheme, rest) = url.split_once("://").ok_or_else(bad)?;
        let tls = match scheme.to_ascii_lowercase().as_str() {
            "https" | "davs" => true,
            "http" | "dav" => false,
            _ => return Err(bad()),
        };
        let (authority, target) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
                (h, p.parse::<u16>().map_err(|_| bad())?)
            }
            _ => (authority, if tls { 443 } else { 80 }),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() {
            return Err(bad());
        }
        Ok(Remote {
            tls,
            host: host.to_string(),
            port,
            target: target.to_string(),
            addrs: Vec::new(),
        })
    }

    /// Resolve the host and put every address through `policy` for `who`:
    /// a 403 (saying nothing of the addresses) when it refuses them.
    pub async fn admit(
        &mut self,
        policy: &tessera_core::RemotePolicy,
        who: &tessera_types::Identity,
    ) -> Result<(), HttpError> {
        let refused = || HttpError::new(403, "third-party copy with this endpoint is not allowed");
        let addrs: Vec<std::net::SocketAddr> = match tokio::time::timeout(
            Duration::from_secs(10),
            tokio::net::lookup_host((self.host.as_str(), self.port)),
        )
        .await
        {
            Ok(Ok(a)) => a.collect(),
            _ => Vec::new(),
        };
        let ips: Vec<std::net::IpAddr> = addrs.iter().map(|a| a.ip()).collect();
        if let Err(why) = policy.check(who, &self.host, &ips) {
            tracing::info!(user = %who.name, host = %self.host, %why, "third-party copy refused");
            return Err(refused());
        }
        self.addrs = addrs;
        Ok(())
    }
}

/// A connection to a remote end: requests go one after another over it
/// (keep-alive).
pub type Conn = hyper::client::conn::http1::SendRequest<crate::Body>;

/// Open a connection to `remote` (TLS trusting the configured CAs).
pub async fn connect(remote: &Remote, tls: Option<&Arc<ClientConfig>>) -> Result<Conn, String> {
    open(remote, tls, 0).await
}

/// Open a connection for one request with a `body`-byte body, whose last
/// byte goes out alone (see `tail`).
async fn open(remote: &Remote, tls: Option<&Arc<ClientConfig>>, body: u64) -> Result<Conn, String> {
    // Details go to the log; the client hears UNREACHABLE whatever it was.
    let hide = |what: String| {
        tracing::info!(host = %remote.host, port = remote.port, "third-party copy: {what}");
        UNREACHABLE.to_string()
    };
    if remote.addrs.is_empty() {
        return Err(hide("no admitted address".into()));
    }
    let tcp = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::net::TcpStream::connect(&remote.addrs[..]),
    )
    .await
    .map_err(|_| hide("connecting timed out".into()))?
    .map_err(|e| hide(format!("connecting: {e}")))?;
    let _ = tcp.set_nodelay(true);
    if remote.tls {
        let cfg = tls.ok_or("no CA configured for third-party copies over TLS")?;
        let name = ServerName::try_from(remote.host.clone()).map_err(|e| hide(e.to_string()))?;
        let s = tokio::time::timeout(
            Duration::from_secs(30),
            tokio_rustls::TlsConnector::from(Arc::clone(cfg)).connect(name, tcp),
        )
        .await
        .map_err(|_| hide("TLS timed out".into()))?
        .map_err(|e| hide(format!("TLS: {e}")))?;
        handshake(TokioIo::new(TailApart::new(s, body)))
            .await
            .map_err(hide)
    } else {
        handshake(TokioIo::new(TailApart::new(tcp, body)))
            .await
            .map_err(hide)
    }
}

/// Send `req` (its URI is the target) to `remote` on a new connection;
/// a body's length is taken from its `Content-Length`.
pub async fn send(
    remote: &Remote,
    tls: Option<&Arc<ClientConfig>>,
    req: Request<crate::Body>,
) -> Result<Response<Incoming>, String> {
    let body = req
        .headers()
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse().ok())
        .unwrap_or(0);
    let mut c = open(remote, tls, body).await?;
    c.send_request(req).await.map_err(|e| {
        tracing::info!(host = %remote.host, "third-party copy: {e}");
        UNREACHABLE.to_string()
    })
}

async fn handshake<I>(io: I) -> Result<Conn, String>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    // Header names go out as `Content-Length`, not `content-length`: the
    // reference server (XrdHttp 5.5) matches some names case-sensitively
    // and takes a lower-case Content-Length for an empty body.
    let (tx, conn) = hyper::client::conn::http1::Builder::new()
        .title_case_headers(true)
        .handshake(io)
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(tx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let r = Remote::parse("davs://host.example:1094/a/b?copy_mode=pull").expect("url");
        assert_eq!(
            r,
            Remote {
                tls: true,
                host: "host.example".into(),
                port: 1094,
                target: "/a/b?copy_mode=pull".into(),
                addrs: Vec::new(),
            }
        );
        assert_eq!(Remote::parse("https://h/x").expect("url").port, 443);
        assert_eq!(
            Remote::parse("http://[::1]:8080/x").expect("url").host,
            "::1"
        );
        assert!(Remote::parse("ftp://h/x").is_err());
        assert!(Remote::parse("https://h:notaport/x").is_err());
    }
}

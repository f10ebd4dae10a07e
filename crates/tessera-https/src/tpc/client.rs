//! The active side's HTTP client: one request to a remote endpoint over
//! TLS (trusting the configured CAs) or plain TCP, hyper's HTTP/1.1.

use super::tail::TailApart;
use crate::error::HttpError;
use hyper::body::Incoming;
use hyper::{Request, Response};
use std::sync::Arc;
use std::time::Duration;
use tokio_rustls::rustls::ClientConfig;

/// A remote URL, split, and where it may be reached.
#[derive(Debug, Clone)]
pub struct Remote {
    pub url: tessera_httpc::Url,
    /// The addresses the host resolved to when the policy admitted it: the
    /// ones connected to (empty until [`Remote::admit`]).
    pub addrs: Vec<std::net::SocketAddr>,
    /// How its connections are marked (SciTags), if they are.
    pub mark: Option<super::mark::Mark>,
}

/// What a client is told of any failure to reach a remote end (refused,
/// timed out, not TLS, not HTTP): the same words, so that copies cannot
/// probe which ports of which hosts are open, closed or TLS.
pub const UNREACHABLE: &str =
    "the remote endpoint could not be reached or gave no usable HTTP answer";

impl Remote {
    /// `https://`, `davs://`, `http://` or `dav://` URLs.
    pub fn parse(url: &str) -> Result<Remote, HttpError> {
        use tessera_httpc::{Scheme, Url};
        let url =
            Url::parse(url, &[Scheme::Https, Scheme::Http]).map_err(|e| HttpError::new(400, e))?;
        Ok(Remote {
            url,
            addrs: Vec::new(),
            mark: None,
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
            tokio::net::lookup_host((self.url.host.as_str(), self.url.port)),
        )
        .await
        {
            Ok(Ok(a)) => a.collect(),
            _ => Vec::new(),
        };
        let ips: Vec<std::net::IpAddr> = addrs.iter().map(|a| a.ip()).collect();
        if let Err(why) = policy.check(who, &self.url.host, &ips) {
            tracing::info!(user = %who.name, host = %self.url.host, %why, "third-party copy refused");
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
        tracing::info!(host = %remote.url.host, port = remote.url.port, "third-party copy: {what}");
        UNREACHABLE.to_string()
    };
    if remote.addrs.is_empty() {
        return Err(hide("no admitted address".into()));
    }
    if remote.url.tls() && tls.is_none() {
        return Err("no CA configured for third-party copies over TLS".into());
    }
    let (s, local, peer) =
        tessera_httpc::stream_addrs(&remote.url, &remote.addrs, tls, Duration::from_secs(30))
            .await
            .map_err(hide)?;
    let s: Box<dyn tessera_httpc::Io> = match &remote.mark {
        Some(m) => Box::new(super::mark::Marked::new(s, m, local, peer)),
        None => s,
    };
    tessera_httpc::handshake(TailApart::new(s, body))
        .await
        .map_err(hide)
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
        tracing::info!(host = %remote.url.host, "third-party copy: {e}");
        UNREACHABLE.to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let r = Remote::parse("davs://host.example:1094/a/b?copy_mode=pull").expect("url");
        assert_eq!(
            (
                r.url.tls(),
                r.url.host.as_str(),
                r.url.port,
                r.url.target.as_str()
            ),
            (true, "host.example", 1094, "/a/b?copy_mode=pull")
        );
        assert_eq!(Remote::parse("https://h/x").expect("url").url.port, 443);
        assert_eq!(
            Remote::parse("http://[::1]:8080/x").expect("url").url.host,
            "::1"
        );
        assert!(Remote::parse("ftp://h/x").is_err());
        assert!(Remote::parse("https://h:notaport/x").is_err());
    }
}

//! Requests to endpoints: hyper's HTTP/1.1 (TLS with the server's trusted
//! CAs), a deadline on the whole. HEAD and PROPFIND (the lookups) reuse an
//! endpoint's idle connections (a few kept per endpoint: a lookup then
//! costs one round trip, not three); other methods get a connection of
//! their own.

use http_body_util::Full;
use hyper::body::Bytes;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_rustls::rustls::ClientConfig;

pub use tessera_httpc::trust;

/// Idle connections to one endpoint, shared by the copies of its base
/// (equal whatever they hold: a pool is not part of an address).
pub struct Pool<T>(Arc<std::sync::Mutex<Vec<T>>>);

/// Idle connections kept per endpoint.
const IDLE: usize = 8;

impl<T> Pool<T> {
    pub(crate) fn take(&self) -> Option<T> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }

    pub(crate) fn put(&self, t: T) {
        let mut v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if v.len() < IDLE {
            v.push(t);
        }
    }
}

impl<T> Default for Pool<T> {
    fn default() -> Pool<T> {
        Pool(Arc::new(std::sync::Mutex::new(Vec::new())))
    }
}

impl<T> Clone for Pool<T> {
    fn clone(&self) -> Pool<T> {
        Pool(Arc::clone(&self.0))
    }
}

impl<T> std::fmt::Debug for Pool<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pool")
    }
}

impl<T> PartialEq for Pool<T> {
    fn eq(&self, _: &Pool<T>) -> bool {
        true
    }
}

impl<T> Eq for Pool<T> {}

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// An endpoint's base URL, split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Base {
    /// Scheme, host and port (its target is `/`: requests name their own).
    pub at: tessera_httpc::Url,
    /// The path prefix, without a trailing `/`.
    pub path: String,
    /// A bearer token sent on every request to it (never to clients).
    pub bearer: Option<String>,
    pub(crate) idle: Pool<Sender>,
}

impl Base {
    pub fn parse(url: &str) -> Result<Base, String> {
        use tessera_httpc::{Scheme, Url};
        let u = Url::parse(url, &[Scheme::Https, Scheme::Http])?;
        Ok(Base {
            path: u.path().trim_end_matches('/').to_string(),
            at: tessera_httpc::Url {
                target: "/".into(),
                ..u
            },
            bearer: None,
            idle: Pool::default(),
        })
    }

    /// `http://host:port` or `https://…` (an IPv6 host in brackets).
    pub fn origin(&self) -> String {
        let scheme = if self.at.tls() { "https" } else { "http" };
        format!("{scheme}://{}", self.at.authority())
    }

    /// The URL of `rel` (a path from `/`, already encoded) under the base.
    pub fn url(&self, rel: &str) -> String {
        format!("{}{}{rel}", self.origin(), self.path)
    }
}

/// What a HEAD found: the status, the size when it said, and how long it
/// took.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Head {
    pub status: u16,
    pub size: Option<u64>,
    pub elapsed: Duration,
}

/// HEAD `rel` under `base` within `deadline`.
pub async fn head(
    base: &Base,
    rel: &str,
    tls: Option<&Arc<ClientConfig>>,
    deadline: Duration,
) -> Result<Head, String> {
    let start = Instant::now();
    let a = request(base, "HEAD", rel, &[], Vec::new(), tls, deadline).await?;
    let size = a
        .headers
        .get(hyper::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    Ok(Head {
        status: a.status,
        size,
        elapsed: start.elapsed(),
    })
}

/// Largest answer body read from an endpoint (a listing): what one
/// endpoint's answer holds of memory, per request and endpoint (beyond
/// it the endpoint's answer is an error).
pub const MAX_BODY: usize = 16 << 20;

/// `PROPFIND` `rel` under `base` with `Depth: 1` (no body: all
/// properties) within `deadline`: the status and the body.
pub async fn propfind(
    base: &Base,
    rel: &str,
    tls: Option<&Arc<ClientConfig>>,
    deadline: Duration,
) -> Result<(u16, Vec<u8>), String> {
    let depth = [("Depth", "1")];
    let a = request(base, "PROPFIND", rel, &depth, Vec::new(), tls, deadline).await?;
    Ok((a.status, a.body))
}

/// A whole answer: status, headers, body.
pub struct Answer {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: Vec<u8>,
}

/// `method` for `rel` under `base` with `headers` and `body`, on a new
/// connection, within `deadline`: the whole answer (a body of at most
/// [`MAX_BODY`]).
pub async fn request(
    base: &Base,
    method: &str,
    rel: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
    tls: Option<&Arc<ClientConfig>>,
    deadline: Duration,
) -> Result<Answer, String> {
    use http_body_util::BodyExt;
    let work = async {
        let reuse = matches!(method, "HEAD" | "PROPFIND");
        let body = Bytes::from(body);
        let make = || build(base, method, rel, headers, body.clone());
        let mut sent = None;
        // An idle connection first (one the endpoint closed meanwhile
        // fails at once: then a new one).
        while let Some(mut tx) = reuse.then(|| base.idle.take()).flatten() {
            if tx.ready().await.is_err() {
                continue;
            }
            if let Ok(resp) = tx.send_request(make()?).await {
                sent = Some((resp, tx));
                break;
            }
        }
        let (resp, tx) = match sent {
            Some(s) => s,
            None => send_request(base, make()?, tls, deadline).await?,
        };
        let (parts, body) = resp.into_parts();
        let body = http_body_util::Limited::new(body, MAX_BODY)
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        if reuse && !tx.is_closed() {
            base.idle.put(tx);
        }
        Ok::<_, String>(Answer {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body: body.to_vec(),
        })
    };
    tokio::time::timeout(deadline, work)
        .await
        .map_err(|_| format!("no answer within {deadline:?}"))?
}

/// The request `method` `rel` under `base`.
fn build(
    base: &Base,
    method: &str,
    rel: &str,
    headers: &[(&str, &str)],
    body: Bytes,
) -> Result<hyper::Request<Full<Bytes>>, String> {
    let target = format!("{}{rel}", base.path);
    let mut b = hyper::Request::builder()
        .method(method)
        .uri(if target.is_empty() { "/" } else { &target })
        .header(hyper::header::HOST, base.at.authority())
        .header(hyper::header::USER_AGENT, tessera_httpc::USER_AGENT)
        .header(hyper::header::CONTENT_LENGTH, body.len());
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    if let Some(t) = &base.bearer {
        b = b.header(hyper::header::AUTHORIZATION, format!("Bearer {t}"));
    }
    b.body(Full::new(body)).map_err(|e| e.to_string())
}

/// Send `req` on a new connection to `base`: the answer, and the
/// connection for the next request.
async fn send_request(
    base: &Base,
    req: hyper::Request<Full<Bytes>>,
    tls: Option<&Arc<ClientConfig>>,
    deadline: Duration,
) -> Result<(hyper::Response<hyper::body::Incoming>, Sender), String> {
    let mut tx: Sender = tessera_httpc::open(&base.at, &[], tls, deadline).await?;
    let resp = tx.send_request(req).await.map_err(|e| e.to_string())?;
    Ok((resp, tx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bases() {
        let b = Base::parse("https://site-a.example:8443/data/").unwrap();
        assert_eq!(
            (b.at.tls(), b.at.port, b.path.as_str()),
            (true, 8443, "/data")
        );
        assert_eq!(b.url("/f"), "https://site-a.example:8443/data/f");
        assert_eq!(Base::parse("http://h").unwrap().url("/x"), "http://h:80/x");
        assert!(Base::parse("root://h//x").is_err());
        let v6 = Base::parse("https://[::1]:8443/d").unwrap();
        assert_eq!(
            (v6.at.host.as_str(), v6.url("/f")),
            ("::1", "https://[::1]:8443/d/f".into())
        );
        assert_eq!(v6.at.authority(), "[::1]:8443");
        assert!(
            Base::parse("https://user:pw@h/x").is_err(),
            "credentials in a URL"
        );
    }
}

//! Issuer discovery over HTTPS: `<iss>/.well-known/openid-configuration`
//! gives `jwks_uri`, which gives the keys. One small GET with a timeout,
//! certificates verified against the configured CAs; never on a request's
//! path while a cached key is valid.

use crate::AuthError;
use http_body_util::{BodyExt, Limited};
use hyper_util::rt::TokioIo;
use std::sync::Arc;
use std::time::Duration;
use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::rustls::ClientConfig;

/// Longest a fetch may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest discovery or JWKS document read.
const MAX_DOC: usize = 1 << 20;

/// `https://host[:port]/path` split; anything but https is refused.
fn split(url: &str) -> Result<(String, u16, String), AuthError> {
    let bad = || AuthError::Fetch(format!("not an https URL: {url}"));
    let rest = url.strip_prefix("https://").ok_or_else(bad)?;
    let (auth, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = match auth.rsplit_once(':') {
        Some((h, p)) if !h.is_empty() => (h, p.parse().map_err(|_| bad())?),
        _ => (auth, 443),
    };
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host.to_string(), port, path.to_string()))
}

/// GET `url` and parse it as JSON.
pub async fn get_json(url: &str, tls: &Arc<ClientConfig>) -> Result<serde_json::Value, AuthError> {
    tokio::time::timeout(FETCH_TIMEOUT, get_json_inner(url, tls))
        .await
        .map_err(|_| AuthError::Fetch(format!("{url}: timed out")))?
}

async fn get_json_inner(
    url: &str,
    tls: &Arc<ClientConfig>,
) -> Result<serde_json::Value, AuthError> {
    let fail = |e: String| AuthError::Fetch(format!("{url}: {e}"));
    let (host, port, path) = split(url)?;
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| fail(e.to_string()))?;
    let name = ServerName::try_from(host.clone()).map_err(|e| fail(e.to_string()))?;
    let stream = tokio_rustls::TlsConnector::from(Arc::clone(tls))
        .connect(name, tcp)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| fail(e.to_string()))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let req = hyper::Request::get(path.as_str())
        .header("Host", format!("{host}:{port}"))
        .header("Accept", "application/json")
        .header("User-Agent", concat!("tessera/", env!("CARGO_PKG_VERSION")))
        .body(http_body_util::Empty::<hyper::body::Bytes>::new())
        .map_err(|e| fail(e.to_string()))?;
    let resp = tx
        .send_request(req)
        .await
        .map_err(|e| fail(e.to_string()))?;
    if !resp.status().is_success() {
        return Err(fail(format!("answered {}", resp.status())));
    }
    let body = Limited::new(resp.into_body(), MAX_DOC)
        .collect()
        .await
        .map_err(|e| fail(e.to_string()))?
        .to_bytes();
    serde_json::from_slice(&body).map_err(|e| fail(format!("not JSON: {e}")))
}

/// The discovery document's URL for issuer `iss` (no doubled `/`).
pub fn discovery_url(iss: &str) -> String {
    format!(
        "{}/.well-known/openid-configuration",
        iss.trim_end_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            split("https://h:8443/a/b").unwrap(),
            ("h".into(), 8443, "/a/b".into())
        );
        assert_eq!(split("https://h").unwrap(), ("h".into(), 443, "/".into()));
        assert!(split("http://h/x").is_err());
        assert_eq!(
            discovery_url("https://iam.example/"),
            "https://iam.example/.well-known/openid-configuration"
        );
    }
}

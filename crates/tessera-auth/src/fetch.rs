//! Issuer discovery over HTTPS: `<iss>/.well-known/openid-configuration`
//! gives `jwks_uri`, which gives the keys. One small GET with a timeout,
//! certificates verified against the configured CAs; never on a request's
//! path while a cached key is valid.

use crate::AuthError;
use http_body_util::{BodyExt, Limited};
use std::sync::Arc;
use std::time::Duration;
use tokio_rustls::rustls::ClientConfig;

/// Longest a fetch may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest discovery or JWKS document read.
const MAX_DOC: usize = 1 << 20;

/// `url` split; anything but https is refused.
fn split(url: &str) -> Result<tessera_httpc::Url, AuthError> {
    tessera_httpc::Url::parse(url, &[tessera_httpc::Scheme::Https])
        .map_err(|_| AuthError::Fetch(format!("not an https URL: {url}")))
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
    let u = split(url)?;
    let mut tx = tessera_httpc::open(&u, &[], Some(tls), FETCH_TIMEOUT)
        .await
        .map_err(fail)?;
    let req = hyper::Request::get(u.target.as_str())
        .header("Host", u.authority())
        .header("Accept", "application/json")
        .header("User-Agent", tessera_httpc::USER_AGENT)
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
        let u = split("https://h:8443/a/b").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.target.as_str()),
            ("h", 8443, "/a/b")
        );
        let u = split("https://h").unwrap();
        assert_eq!((u.port, u.target.as_str()), (443, "/"));
        assert!(split("http://h/x").is_err());
        assert_eq!(
            discovery_url("https://iam.example/"),
            "https://iam.example/.well-known/openid-configuration"
        );
    }
}

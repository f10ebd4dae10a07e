//! Who a request is: a bearer token (`Authorization: Bearer <jwt>`, or
//! `?authz=` with or without the `Bearer ` prefix, as the reference server
//! maps it) validated against the configured issuers, else the anonymous
//! identity. An invalid token is a 401 with no side effect; a valid one
//! whose scopes do not cover the request is a 403 from the core service.
//! Also the development issuer's discovery document and JWKS.

use crate::body::Body;
use crate::ops::{set, status};
use crate::{HttpsConfig, Req};
use hyper::Response;
use tessera_types::Identity;

/// The token a request carries, if any.
fn token_of(req: &Req) -> Option<String> {
    if let Some(v) = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        let v = v.trim();
        if v.len() > 7 && v[..7].eq_ignore_ascii_case("bearer ") {
            return Some(v[7..].trim().to_string());
        }
    }
    let q = req.uri().query()?;
    let raw = q.split('&').find_map(|kv| kv.strip_prefix("authz="))?;
    tessera_auth::authz_token(raw)
}

/// The identity of a request and whether it presented credentials, or
/// the 401 to answer.
pub async fn identity(cfg: &HttpsConfig, req: &Req) -> Result<(Identity, bool), Response<Body>> {
    let (Some(v), Some(token)) = (&cfg.tokens, token_of(req)) else {
        return Ok((cfg.anonymous.clone(), false));
    };
    match v.validate(&token).await {
        Ok(val) => Ok((val.identity("https"), true)),
        Err(e) => {
            tracing::info!(error = %e, "bearer token refused");
            let mut r = crate::error_response(&crate::HttpError::new(401, e.to_string()));
            set(&mut r, "WWW-Authenticate", "Bearer error=\"invalid_token\"");
            Err(r)
        }
    }
}

/// The development issuer's documents, when this is one of them.
pub fn dev_issuer(cfg: &HttpsConfig, req: &Req) -> Option<Response<Body>> {
    let (iss, jwks) = cfg.dev_issuer.as_ref()?;
    if req.method() != hyper::Method::GET {
        return None;
    }
    let body = match req.uri().path() {
        tessera_auth::dev::DISCOVERY_PATH => {
            tessera_auth::dev::DevIssuer::discovery(iss).to_string()
        }
        tessera_auth::dev::JWKS_PATH => jwks.clone(),
        _ => return None,
    };
    let mut r = Response::new(Body::text(body.clone()));
    status(&mut r, 200);
    set(&mut r, "Content-Type", "application/json");
    set(&mut r, "Content-Length", &body.len().to_string());
    Some(r)
}

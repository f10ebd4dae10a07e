//! Who a request is: a bearer token (`Authorization: Bearer <jwt>`, or
//! `?authz=` with or without the `Bearer ` prefix, as the reference server
//! maps it) validated against the configured issuers; HTTP Basic
//! credentials checked against the site's password file (over TLS only:
//! desktop WebDAV clients); else, from a loopback peer the kernel says is
//! the server's own user, the owner (`[https] anonymous = "owner"`); else
//! the anonymous identity. Invalid credentials are a 401 with no side
//! effect; a valid identity refused by the core is a 403, and a request
//! without credentials that is refused is asked for them (401 with
//! `WWW-Authenticate`, [`challenge`]).
//! Also the development issuer's discovery document and JWKS.

use crate::body::Body;
use crate::ops::{set, status};
use crate::{Ctx, HttpsConfig, Req};
use base64::Engine;
use hyper::Response;
use tessera_types::Identity;

/// What the `Authorization` header (or `?authz=`) carries.
enum Presented {
    Bearer(String),
    Basic(String),
    None,
}

fn presented(req: &Req) -> Presented {
    if let Some(v) = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        let v = v.trim();
        if v.len() > 7 && v[..7].eq_ignore_ascii_case("bearer ") {
            return Presented::Bearer(v[7..].trim().to_string());
        }
        if v.len() > 6 && v[..6].eq_ignore_ascii_case("basic ") {
            return Presented::Basic(v[6..].trim().to_string());
        }
    }
    let token = req.uri().query().and_then(|q| {
        let raw = q.split('&').find_map(|kv| kv.strip_prefix("authz="))?;
        tessera_auth::authz_token(raw)
    });
    token.map_or(Presented::None, Presented::Bearer)
}

/// A 401 for refused credentials, with the challenges this server takes.
fn refused(cfg: &HttpsConfig, msg: String, error: Option<&str>) -> Response<Body> {
    let mut r = crate::error_response(&crate::HttpError::new(401, msg));
    add_challenges(cfg, &mut r, error);
    r
}

fn add_challenges(cfg: &HttpsConfig, r: &mut Response<Body>, error: Option<&str>) {
    if cfg.tokens.is_some() {
        let v = match error {
            Some(e) => format!("Bearer realm=\"tessera\", error=\"{e}\""),
            None => "Bearer realm=\"tessera\"".to_string(),
        };
        if let Ok(v) = hyper::header::HeaderValue::from_str(&v) {
            r.headers_mut().append(hyper::header::WWW_AUTHENTICATE, v);
        }
    }
    if cfg.basic.is_some() && cfg.tls.is_some() {
        r.headers_mut().append(
            hyper::header::WWW_AUTHENTICATE,
            hyper::header::HeaderValue::from_static("Basic realm=\"tessera\", charset=\"UTF-8\""),
        );
    }
}

/// The identity of a request and whether it presented credentials, or
/// the 401 to answer. `owner`: the connection is the server's own user
/// on loopback (as the kernel says).
pub async fn identity(
    cfg: &HttpsConfig,
    req: &Req,
    owner: bool,
    cert: Option<&ClientCert>,
) -> Result<(Identity, bool), Response<Body>> {
    match presented(req) {
        Presented::Bearer(token) => {
            if let Some(m) = cfg
                .macaroons
                .as_ref()
                .filter(|_| Macaroons::looks_like(&token))
            {
                return match m.verify(&token, "https") {
                    Ok(id) => Ok((id, true)),
                    Err(e) => {
                        tracing::info!(error = %e, "macaroon refused");
                        Err(refused(cfg, e.to_string(), Some("invalid_token")))
                    }
                };
            }
            let Some(v) = &cfg.tokens else {
                // No issuer configured: tokens are ignored.
                return Ok((fallback(cfg, owner), false));
            };
            match v.validate(&token).await {
                Ok(val) => Ok((val.identity("https"), true)),
                Err(e) => {
                    tracing::info!(error = %e, "bearer token refused");
                    Err(refused(cfg, e.to_string(), Some("invalid_token")))
                }
            }
        }
        Presented::Basic(b64) => basic(cfg, &b64).await.map(|id| (id, true)),
        Presented::None => match (cert, &cfg.x509) {
            (Some(c), Some(x)) => certificate(cfg, c, x, owner),
            _ => Ok((fallback(cfg, owner), false)),
        },
    }
}

/// The certificate chain a client sent in the TLS handshake, and what it
/// was found to be (decided once per connection, on its first request
/// without a token).
pub struct ClientCert {
    chain: Vec<Vec<u8>>,
    decided: std::sync::OnceLock<Result<Option<Identity>, X509Refusal>>,
}

impl ClientCert {
    /// The chain of a finished handshake, when certificates are taken.
    pub fn of(
        cfg: &HttpsConfig,
        tls: &tokio_rustls::rustls::ServerConnection,
    ) -> Option<std::sync::Arc<ClientCert>> {
        cfg.x509.as_ref()?;
        let chain: Vec<Vec<u8>> = tls
            .peer_certificates()?
            .iter()
            .map(|c| c.to_vec())
            .collect();
        (!chain.is_empty()).then(|| {
            std::sync::Arc::new(ClientCert {
                chain,
                decided: std::sync::OnceLock::new(),
            })
        })
    }
}

use tessera_auth::macaroon::Macaroons;
use tessera_auth::x509::{X509Auth, X509Refusal};

/// The identity of a client certificate: 401 when it does not verify,
/// 403 when this site maps it to nobody.
#[allow(clippy::result_large_err)] // the response goes straight back, as identity()'s does
fn certificate(
    cfg: &HttpsConfig,
    c: &ClientCert,
    x: &X509Auth,
    owner: bool,
) -> Result<(Identity, bool), Response<Body>> {
    match c.decided.get_or_init(|| x.identify(&c.chain, "https")) {
        Ok(Some(id)) => Ok((id.clone(), true)),
        Ok(None) => Ok((fallback(cfg, owner), false)),
        Err(X509Refusal::Invalid(m)) => Err(refused(
            cfg,
            format!("client certificate refused: {m}"),
            None,
        )),
        Err(X509Refusal::Unmapped(m)) => Err(crate::error_response(&crate::HttpError::new(
            403,
            m.clone(),
        ))),
    }
}

/// Who a request without credentials is.
fn fallback(cfg: &HttpsConfig, owner: bool) -> Identity {
    match (&cfg.owner, owner) {
        (Some(o), true) => o.clone(),
        _ => cfg.anonymous.clone(),
    }
}

/// HTTP Basic credentials: over TLS, against the password file.
async fn basic(cfg: &HttpsConfig, b64: &str) -> Result<Identity, Response<Body>> {
    let (Some(p), Some(_)) = (&cfg.basic, &cfg.tls) else {
        return Err(refused(
            cfg,
            "Basic credentials are not taken here (a password file over https is needed)".into(),
            None,
        ));
    };
    let bad = || refused(cfg, "wrong user name or password".into(), None);
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .map_err(|_| bad())?;
    let text = String::from_utf8(raw).map_err(|_| bad())?;
    let (user, pass) = text.split_once(':').ok_or_else(bad)?;
    match p.verify(user, pass).await {
        Ok(id) => Ok(id),
        Err(tessera_auth::passwd::Refused::Credentials) => {
            tracing::info!(user, "basic credentials refused");
            Err(bad())
        }
        Err(tessera_auth::passwd::Refused::File(e)) => {
            tracing::warn!("password file: {e}");
            Err(bad())
        }
    }
}

/// Marks a response that refuses the identity (set by
/// `error_response` for the core's permission refusals).
#[derive(Debug, Clone, Copy)]
pub struct Denial;

/// A refusal (403) of a request that presented no credentials becomes a
/// 401 asking for them (`WWW-Authenticate` with the schemes this server
/// takes), so a client can tell "log in" from "not allowed" and
/// Basic-only clients (neon: cadaver, davfs2, litmus) send theirs.
pub fn challenge(ctx: &Ctx, mut r: Response<Body>) -> Response<Body> {
    let can_log_in = ctx.cfg.tokens.is_some() || (ctx.cfg.basic.is_some() && ctx.cfg.tls.is_some());
    let denied = r.extensions().get::<Denial>().is_some();
    if ctx.credentials || !denied || !can_log_in {
        return r;
    }
    *r.status_mut() = hyper::StatusCode::UNAUTHORIZED;
    add_challenges(&ctx.cfg, &mut r, None);
    r
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

//! Bearer tokens over XRootD: the `ztn` security protocol (offered only
//! over TLS; the token becomes the session's identity) and the `authz=`
//! CGI on any path request (that request's identity, with or without the
//! `Bearer ` prefix, as the reference server takes it).

use crate::error::XrdError;
use crate::proto::err;
use crate::session::Session;
use std::sync::Arc;
use tessera_types::Identity;

/// Longest token accepted in a `ztn` credential (advertised as `maxtsz`).
pub const MAX_TOKEN: usize = 16 << 10;

/// The `ztn` credential: `"ztn\0"`, version 0, `'T'`, 2 reserved bytes,
/// u16 BE length (token + NUL), the token and its NUL.
pub fn parse_ztn(p: &[u8]) -> Result<String, XrdError> {
    let bad = |m: &str| XrdError::new(err::AUTH_FAILED, format!("ztn: {m}"));
    let body = p.strip_prefix(b"ztn\0").unwrap_or(p);
    if body.len() < 6 {
        return Err(bad("credential too short"));
    }
    if body[0] != 0 {
        return Err(bad("unknown version"));
    }
    if body[1] != b'T' {
        return Err(bad("only tokens are accepted (no issuer list)"));
    }
    let len = u16::from_be_bytes([body[4], body[5]]) as usize;
    if len < 2 || 6 + len > body.len() || len > MAX_TOKEN {
        return Err(bad("bad token length"));
    }
    let tok = &body[6..6 + len];
    if tok[len - 1] != 0 {
        return Err(bad("token not NUL-terminated"));
    }
    String::from_utf8(tok[..len - 1].to_vec()).map_err(|_| bad("token is not text"))
}

/// Validate a token into an identity (`kXR_NotAuthorized` when refused).
pub async fn identity_of(s: &Session, token: &str, code: i32) -> Result<Identity, XrdError> {
    use tessera_auth::macaroon::Macaroons;
    if let Some(m) = s
        .cfg
        .macaroons
        .as_ref()
        .filter(|_| Macaroons::looks_like(token))
    {
        return m
            .verify(token, "xroot")
            .map_err(|e| XrdError::new(code, e.to_string()));
    }
    let v = s
        .cfg
        .tokens
        .as_ref()
        .ok_or_else(|| XrdError::new(code, "tokens are not accepted here"))?;
    v.validate(token)
        .await
        .map(|v| v.identity("xroot"))
        .map_err(|e| XrdError::new(code, e.to_string()))
}

/// The identity a path request runs as when it carries `authz=`; `None`
/// for the session's own (also when no issuer is configured: the CGI is
/// then ignored, as by a server without a token plugin).
pub async fn request_identity(
    s: &Session,
    authz: Option<&str>,
) -> Result<Option<Arc<Identity>>, XrdError> {
    if s.cfg.tokens.is_none() && s.cfg.macaroons.is_none() {
        return Ok(None);
    }
    match authz.and_then(tessera_auth::authz_token) {
        None => Ok(None),
        Some(t) => Ok(Some(Arc::new(
            identity_of(s, &t, err::NOT_AUTHORIZED).await?,
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ztn_credentials() {
        let mut c = b"ztn\0\0T\0\0".to_vec();
        c.extend_from_slice(&4u16.to_be_bytes());
        c.extend_from_slice(b"abc\0\0\0"); // the client pads 2 bytes
        assert_eq!(parse_ztn(&c).unwrap(), "abc");
        let mut s = c.clone();
        s[5] = b'S';
        assert!(parse_ztn(&s).is_err());
        let mut l = c.clone();
        l[9] = 200;
        assert!(parse_ztn(&l).is_err());
        assert!(parse_ztn(b"ztn\0").is_err());
    }
}

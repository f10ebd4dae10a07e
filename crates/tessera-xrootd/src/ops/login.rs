//! `kXR_protocol` (after the first), `kXR_login` and `kXR_auth`.

use crate::error::XrdError;
use crate::identity;
use crate::proto::{err, pflags, PROTOCOL_VERSION};
use crate::session::Session;

/// A repeated `kXR_protocol` on an established connection: no TLS switch.
pub fn protocol(s: &Session) -> Result<Vec<u8>, XrdError> {
    let mut flags = if s.cfg.role.is_manager() {
        pflags::IS_MANAGER
    } else {
        pflags::IS_SERVER
    };
    if s.cfg.tls.is_some() {
        flags |= pflags::HAVE_TLS;
    }
    flags |= pflags::SUPPGRW;
    let mut b = PROTOCOL_VERSION.to_be_bytes().to_vec();
    b.extend_from_slice(&flags.to_be_bytes());
    Ok(b)
}

/// Reply: a 16-byte session id, then the security protocols we accept
/// (`unix`; tokens come with the authorization layer).
pub fn login(s: &Session, name: &str, pid: u32, app: String) -> Result<Vec<u8>, XrdError> {
    if !s.login() {
        return Err(XrdError::new(err::INVALID_REQUEST, "already logged in"));
    }
    // What the monitoring stream says of the client when it first opens
    // a file (by then its credentials are known).
    s.set_login_hint(name, pid);
    // The application the client names (`xrd.appname`), for rate limits.
    s.set_app(app);
    // The login user name is only a hint until `kXR_auth` proves more.
    tracing::debug!(user = %name, peer = %s.peer, tls = s.tls, "xroot login");
    let mut b: Vec<u8> = rand::random::<[u8; 16]>().to_vec();
    // Tokens (ztn) only over TLS, first, so that clients with a token use
    // it and the others fall through to unix.
    if s.tls && s.cfg.tokens.is_some() {
        b.extend_from_slice(format!("&P=ztn,0:{}:", crate::token::MAX_TOKEN).as_bytes());
    }
    // X.509 proxies (gsi) on any connection, before unix.
    if let Some(g) = &s.cfg.gsi {
        b.extend_from_slice(format!("&P={}", g.server.login_param()).as_bytes());
    }
    b.extend_from_slice(b"&P=unix");
    Ok(b)
}

pub async fn auth(s: &Session, credtype: &str, p: &[u8]) -> Result<Vec<u8>, XrdError> {
    match credtype {
        "unix" => {
            let (user, group) = identity::parse_unix(p)
                .ok_or_else(|| XrdError::new(err::AUTH_FAILED, "empty unix credentials"))?;
            let verified = match s.unix_policy() {
                identity::UnixPolicy::Trust | identity::UnixPolicy::Owner(_) => {
                    tessera_core::peer::loopback_uid(s.peer, s.local)
                }
                _ => None,
            };
            let who = identity::from_unix(s.unix_policy(), &user, group.as_deref(), verified);
            tracing::debug!(user = %user, uid = who.uid, "xroot unix auth");
            s.set_who(who);
            Ok(Vec::new())
        }
        "ztn" if s.tls => {
            let token = crate::token::parse_ztn(p)?;
            let who = crate::token::identity_of(s, &token, err::AUTH_FAILED).await?;
            tracing::debug!(user = %who.name, uid = who.uid, "xroot ztn auth");
            s.set_who(who);
            Ok(Vec::new())
        }
        other => Err(XrdError::new(
            err::AUTH_FAILED,
            format!("security protocol '{other}' is not offered here"),
        )),
    }
}

//! The `gsi` security protocol (X.509 proxies) over XRootD: the
//! handshake is `tessera-gsi`'s; the client's chain is verified and
//! mapped by the same `X509Auth` as HTTPS client certificates, so a
//! proxy is the same identity on both protocols. Offered in the login
//! reply after `ztn` (over TLS) and before `unix`.

use crate::error::XrdError;
use crate::proto::err;
use crate::session::Session;
use std::sync::Arc;
use tessera_auth::x509::{X509Auth, X509Refusal};
use tessera_gsi::{GsiServer, Outcome};

/// The most gsi handshakes one connection may begin.
pub const MAX_HANDSHAKES: u32 = 4;

/// A listener's gsi: the handshake's host credentials and the mapping.
pub struct Gsi {
    pub server: GsiServer,
    pub x509: Arc<X509Auth>,
}

/// Answer one `kXR_auth` of protocol gsi: `kXR_authmore`, `kXR_ok` or
/// the refusal. False when the connection is gone.
pub async fn answer(s: &Session, out: &crate::reply::Out, st: [u8; 2], cred: &[u8]) -> bool {
    match auth(s, cred).await {
        Ok(Some(more)) => {
            let body = vec![crate::reply::Piece::Bytes(more)];
            out.pieces(st, crate::proto::status::AUTHMORE, body).await
        }
        Ok(None) => out.ok(st, Vec::new()).await,
        Err(e) => out.error(st, &e).await,
    }
}

/// One `kXR_auth` of protocol gsi: `Some(body)` for `kXR_authmore`,
/// `None` when the client is authenticated (`kXR_ok`).
pub async fn auth(s: &Session, cred: &[u8]) -> Result<Option<Vec<u8>>, XrdError> {
    let Some(g) = s.cfg.gsi.clone() else {
        return Err(XrdError::new(
            err::AUTH_FAILED,
            "security protocol 'gsi' is not offered here",
        ));
    };
    // Each handshake costs the server two RSA signatures and a DH key:
    // a connection begins a few, as many clients as try again, no more.
    let begins = cred.get(4..8) == Some(&tessera_gsi::buffer::step::CERTREQ.to_be_bytes()[..]);
    let (mut pending, begun) = s.take_gsi(begins);
    if begun > MAX_HANDSHAKES {
        return Err(XrdError::new(
            err::AUTH_FAILED,
            format!(
                "Secgsi: ErrError: more than {MAX_HANDSHAKES} gsi handshakes on one connection"
            ),
        ));
    }
    let (cred, peer) = (cred.to_vec(), s.peer);
    // RSA signatures and DH take milliseconds: off the runtime's threads.
    let (pending, r) = tessera_core::blocking(move || {
        let r = match g.server.step(&mut pending, &cred) {
            Ok(Outcome::More(b)) => Ok(Step::More(b)),
            Ok(Outcome::Done { chain }) => mapped(g.x509.identify(&chain, "xroot"), peer),
            Err(e) => {
                tracing::info!(%peer, "gsi refused: {e}");
                Err(XrdError::new(err::AUTH_FAILED, e.to_string()))
            }
        };
        (pending, r)
    })
    .await
    .map_err(|e| XrdError::new(err::SERVER_ERROR, e.to_string()))?;
    s.put_gsi(pending);
    match r? {
        Step::More(more) => Ok(Some(more)),
        Step::Done(Some(who)) => {
            tracing::debug!(user = %who.name, uid = who.uid, "xroot gsi auth");
            s.set_who(who);
            Ok(None)
        }
        // A valid certificate the site serves as anonymous.
        Step::Done(None) => Ok(None),
    }
}

/// A handshake's next message, or its end with the identity it maps to.
enum Step {
    More(Vec<u8>),
    Done(Option<tessera_types::Identity>),
}

/// The mapping of a verified handshake's chain, refusals as `kXR_AuthFailed`.
fn mapped(
    r: Result<Option<tessera_types::Identity>, X509Refusal>,
    peer: std::net::SocketAddr,
) -> Result<Step, XrdError> {
    match r {
        Ok(who) => Ok(Step::Done(who)),
        Err(X509Refusal::Invalid(m)) => {
            tracing::info!(%peer, "gsi: certificate refused: {m}");
            Err(XrdError::new(
                err::AUTH_FAILED,
                format!("Secgsi: ErrParseBuffer: certificate chain verification failed: {m}"),
            ))
        }
        Err(X509Refusal::Unmapped(m)) => {
            tracing::info!(%peer, "gsi: {m}");
            Err(XrdError::new(err::AUTH_FAILED, format!("Secgsi: {m}")))
        }
    }
}

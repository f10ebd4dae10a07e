//! Federated views (`tessera-fed`) over XRootD: an open, stat or locate
//! of a path under a view is redirected (`kXR_redirect`) to the best XRootD
//! replica for the client (its site by address, the endpoints' health and
//! latency); XrdCl sends the same request, same path, there (an XRootD
//! endpoint serves the view under the view's own path). A token's scopes
//! are checked on the path first. An open for writing goes to the root
//! endpoint the view's write policy picks (writes need a token that may
//! create there).

use crate::error::XrdError;
use crate::proto::err;
use crate::reply::Out;
use crate::session::{Session, Target};
use tessera_types::Identity;

/// Answer `t` (`writing`: an open for writing) if it is under a view:
/// `None` when it is not.
pub async fn redirect(
    s: &Session,
    who: &Identity,
    out: &Out,
    st: [u8; 2],
    t: &Target,
    writing: bool,
) -> Option<bool> {
    let fed = s.cfg.federation.as_ref()?;
    let path = t.path.display();
    let at = fed.view_of(&path)?;
    Some(match answer(s, fed, who, &path, at, t, writing).await {
        Ok((host, port)) => out.redirect(st, &host, port, "").await,
        Err(e) => out.error(st, &e).await,
    })
}

async fn answer(
    s: &Session,
    fed: &tessera_fed::Federation,
    who: &Identity,
    path: &str,
    at: tessera_fed::InView,
    t: &Target,
    writing: bool,
) -> Result<(String, u16), XrdError> {
    if writing {
        if who.token.is_none() {
            return Err(XrdError::new(
                err::NOT_AUTHORIZED,
                "writes into a view need a token",
            ));
        }
        s.core()?.token_allows_create(who, &t.path)?;
        return fed.write_root(&at, s.peer.ip()).map_err(|why| {
            let code = match why {
                tessera_fed::WriteRefused::NotConfigured => err::UNSUPPORTED,
                _ => err::NO_SERVER,
            };
            XrdError::new(code, why.to_string())
        });
    }
    if !at.public && who.token.is_none() {
        return Err(XrdError::new(
            err::NOT_AUTHORIZED,
            "this view needs a token",
        ));
    }
    s.core()?.token_allows_read(who, &t.path)?;
    let found = fed.find(&at, s.peer.ip(), tessera_fed::Want::Root).await;
    let best = fed
        .order(found, s.peer.ip())
        .into_iter()
        .find(|r| r.root.is_some());
    if let Some(r) = &best {
        fed.sent(&r.endpoint);
    }
    best.and_then(|r| r.root).ok_or_else(|| {
        XrdError::new(
            err::NOT_FOUND,
            format!("{path} is on none of the view's XRootD endpoints"),
        )
    })
}

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
use crate::request::{Query, Request, Truncate};
use crate::session::{Session, Target};
use tessera_types::Identity;

/// A request naming a path under a view that views do not serve (rm,
/// mkdir, mv, chmod, a checksum query, a truncate): refused with the
/// reason, as HTTPS answers 405, not looked for in this namespace (where
/// it would be "no such file").
pub fn unsupported(s: &Session, r: &Request) -> Option<XrdError> {
    let fed = s.cfg.federation.as_ref()?;
    let targets: Vec<&Target> = match r {
        Request::Mkdir { target, .. } | Request::Chmod { target, .. } => vec![target],
        Request::Rm(t) | Request::Rmdir(t) => vec![t],
        Request::Mv { src, dst } => vec![src, dst],
        Request::Query(Query::Checksum(t)) | Request::Truncate(Truncate::Path(t, _)) => vec![t],
        _ => return None,
    };
    let viewed = targets
        .iter()
        .find_map(|t| fed.view_of(&t.path.display()))?;
    Some(XrdError::new(
        err::UNSUPPORTED,
        format!(
            "{} is not served on the federated view {} (open, stat, locate and dirlist are)",
            r.name(),
            viewed.path()
        ),
    ))
}

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
        if !who.verified() {
            return Err(XrdError::new(
                err::NOT_AUTHORIZED,
                "writes into a view need a token or a certificate",
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
    if !at.public && !who.verified() {
        return Err(XrdError::new(
            err::NOT_AUTHORIZED,
            "this view needs a token or a certificate",
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

/// `kXR_locate` of a path under a view: every XRootD replica of it, the
/// client's best first (`Sr<host>:<port>` each, as a data server that
/// serves reads), or `None` when the path is in no view.
pub async fn locate(s: &Session, who: &Identity, t: &Target) -> Option<Result<Vec<u8>, XrdError>> {
    let fed = s.cfg.federation.as_ref()?;
    let path = t.path.display();
    let at = fed.view_of(&path)?;
    Some(locate_all(s, fed, who, &path, at).await)
}

async fn locate_all(
    s: &Session,
    fed: &tessera_fed::Federation,
    who: &Identity,
    path: &str,
    at: tessera_fed::InView,
) -> Result<Vec<u8>, XrdError> {
    if !at.public && !who.verified() {
        return Err(XrdError::new(
            err::NOT_AUTHORIZED,
            "this view needs a token or a certificate",
        ));
    }
    s.core()?.token_allows_read(
        who,
        &tessera_types::NsPath::parse(path).map_err(|e| XrdError::invalid(e.to_string()))?,
    )?;
    let found = fed.find(&at, s.peer.ip(), tessera_fed::Want::Root).await;
    let all: Vec<String> = fed
        .order(found, s.peer.ip())
        .into_iter()
        .filter_map(|r| r.root)
        .map(|(host, port)| {
            let host = if host.contains(':') && !host.starts_with('[') {
                format!("[{host}]")
            } else {
                host
            };
            format!("Sr{host}:{port}")
        })
        .collect();
    if all.is_empty() {
        return Err(XrdError::new(
            err::NOT_FOUND,
            format!("{path} is on none of the view's XRootD endpoints"),
        ));
    }
    let mut b = all.join(" ").into_bytes();
    b.push(0);
    Ok(b)
}

//! Federated views over XRootD: `tessera-route` decides (its gates, the
//! best XRootD replica for the client, every replica, where a write goes);
//! this writes the answers: an open or stat is redirected
//! (`kXR_redirect`) and XrdCl sends the same request, same path, there (an
//! XRootD endpoint serves the view under the view's own path); `kXR_locate`
//! lists every replica.

use crate::error::XrdError;
use crate::proto::err;
use crate::reply::Out;
use crate::request::{Query, Request, Truncate};
use crate::session::{Session, Target};
use tessera_route::{Pick, ViewAsk};
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

/// The routing question for `t` if it is under a view (`None`: it is
/// not).
pub(crate) fn ask<'a>(
    s: &'a Session,
    who: &'a Identity,
    t: &'a Target,
) -> Option<Result<ViewAsk<'a>, XrdError>> {
    let fed = s.cfg.federation.as_ref()?;
    let at = ViewAsk::view_of(fed, &t.path)?;
    Some(s.core().map(|core| ViewAsk {
        fed,
        core,
        who,
        credentialed: who.verified(),
        path: &t.path,
        at,
        peer: s.peer.ip(),
    }))
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
    let v = ask(s, who, t)?;
    Some(match answer(v, writing).await {
        Ok((host, port)) => out.redirect(st, &host, port, "").await,
        Err(e) => out.error(st, &e).await,
    })
}

async fn answer(
    v: Result<ViewAsk<'_>, XrdError>,
    writing: bool,
) -> Result<(String, u16), XrdError> {
    let v = v?;
    if writing {
        return Ok(v.write_root()?);
    }
    let r = match v.pick(tessera_fed::Want::Root, false).await? {
        Pick::Redirect(r) | Pick::AnswerHere(r) => r,
    };
    r.root
        .ok_or_else(|| XrdError::new(err::NOT_FOUND, "no XRootD replica"))
}

/// `kXR_locate` of a path under a view: every XRootD replica of it, the
/// client's best first (`Sr<host>:<port>` each, as a data server that
/// serves reads), or `None` when the path is in no view.
pub async fn locate(s: &Session, who: &Identity, t: &Target) -> Option<Result<Vec<u8>, XrdError>> {
    let v = ask(s, who, t)?;
    Some(locate_all(v).await)
}

async fn locate_all(v: Result<ViewAsk<'_>, XrdError>) -> Result<Vec<u8>, XrdError> {
    let all: Vec<String> = v?
        .replicas(tessera_fed::Want::Root)
        .await?
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
    let mut b = all.join(" ").into_bytes();
    b.push(0);
    Ok(b)
}

//! The operator's access rules in HTTP's words: what `Core::admit`
//! decides before a request touches the namespace, written as 503 with
//! `Retry-After` (bans, allow lists, stalls) or a 307 to the rule's host
//! (its port, or the one the client used here).

use crate::{path, Ctx};
use hyper::Response;
use tessera_core::rules::{Admit, Op};

/// The application of a request: the User-Agent's product (`curl/8.1`
/// -> `curl`), at most 64 bytes (a limit per application keeps a bucket
/// per name: a client must not make them large).
pub fn app_of(h: &hyper::HeaderMap) -> &str {
    h.get(hyper::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .and_then(|ua| ua.split(['/', ' ']).next())
        .map_or("", |p| &p[..p.len().min(64)])
}

/// The answer to `req` if a rule turns it away.
pub fn turned_away(ctx: &Ctx, req: &crate::Req) -> Option<Response<crate::Body>> {
    let h = req.headers();
    let op = match req.method().as_str() {
        "GET" => Op::OpenRead,
        "HEAD" | "OPTIONS" => Op::Stat,
        "PROPFIND" => Op::List,
        "PUT" => Op::OpenWrite,
        "DELETE" => Op::Delete,
        // A COPY inside this namespace changes it; one to or from
        // another server is a third-party copy.
        "COPY" => {
            let dest = crate::ops::header(h, "destination");
            let local = dest.and_then(|d| crate::ops::copy::local_destination(h, req.uri(), d));
            if !h.contains_key("source") && local.is_some() {
                Op::Change
            } else {
                Op::Tpc
            }
        }
        _ => Op::Change,
    };
    let app = app_of(h);
    let p = path::decode(req.uri().path()).ok();
    match ctx.core.admit(&ctx.who, ctx.peer.ip(), op, p.as_ref(), app) {
        Admit::Go => None,
        Admit::Wait { secs, why, .. } => Some(super::get::retry_after(secs, &why)),
        Admit::Redirect { to, .. } => {
            let to = if to.contains(':') {
                to
            } else {
                let port = req
                    .headers()
                    .get(hyper::header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .and_then(|h| h.rsplit_once(':'))
                    .map_or("443", |(_, p)| p)
                    .to_string();
                format!("{to}:{port}")
            };
            let q = req
                .uri()
                .query()
                .map(|q| format!("?{q}"))
                .unwrap_or_default();
            let mut r = Response::new(crate::Body::Empty);
            *r.status_mut() = hyper::StatusCode::TEMPORARY_REDIRECT;
            let location = format!("https://{to}{}{q}", req.uri().path());
            if let Ok(v) = hyper::header::HeaderValue::from_str(&location) {
                r.headers_mut().insert(hyper::header::LOCATION, v);
            }
            Some(r)
        }
    }
}

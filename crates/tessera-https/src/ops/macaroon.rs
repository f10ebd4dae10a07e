//! `POST` with `Content-Type: application/macaroon-request` (gfal2 and FTS
//! ask for one before a third-party copy when they hold only a proxy):
//! a macaroon for the request's path, the activities and validity the
//! JSON body asks for, never wider than the requester's own rights.
//! Answers `{"macaroon": "...", "expires_in": N}` (XrdMacaroons' form;
//! dCache adds `uri`, which gfal2 does not read).

use super::status;
use crate::body::Body;
use crate::error::HttpError;
use crate::{path, Ctx};
use hyper::Response;

/// Whether `req` asks for a macaroon.
pub fn asks(req: &crate::Req) -> bool {
    req.method() == hyper::Method::POST
        && super::header(req.headers(), "content-type").is_some_and(|v| {
            v.split(';').next().is_some_and(|t| {
                t.trim()
                    .eq_ignore_ascii_case("application/macaroon-request")
            })
        })
}

pub async fn issue(ctx: &Ctx, req: crate::Req) -> Result<Response<Body>, HttpError> {
    let Some(m) = &ctx.cfg.macaroons else {
        return Err(HttpError::new(501, "macaroons are not issued here"));
    };
    let p = path::decode(req.uri().path())?;
    let body = super::propfind::small_body(req, "macaroon request").await?;
    match m.issue(&ctx.who, &p, &body) {
        Ok((mac, secs)) => {
            let json = format!("{{\"macaroon\": \"{mac}\", \"expires_in\": {secs}}}\n");
            tracing::info!(who = %ctx.who.name, path = %p.display(), secs, "macaroon issued");
            let mut r = Response::new(Body::text(json));
            status(&mut r, 200);
            r.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static("application/json"),
            );
            Ok(r)
        }
        // Asked without credentials: a 401 with the challenges.
        Err(e) if ctx.who.is_anonymous() => Err(HttpError {
            kind: Some(tessera_types::ErrorKind::PermissionDenied),
            ..HttpError::new(403, e.to_string())
        }),
        Err(e) => Err(HttpError::new(403, e.to_string())),
    }
}

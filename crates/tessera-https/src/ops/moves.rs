//! MOVE with `Destination` (a full URL or an absolute path) and
//! `Overwrite: T|F` (default T): 201 new, 204 replaced, 412 when
//! `Overwrite: F` meets an existing target, 502 when the destination is on
//! another server.

use super::{header, status};
use crate::body::Body;
use crate::error::HttpError;
use crate::path;
use crate::Ctx;
use hyper::Response;
use tessera_core::RenameFlags;
use tessera_types::ErrorKind;

/// The path part of a `Destination` header.
pub fn destination_path(d: &str) -> Result<tessera_types::NsPath, HttpError> {
    let rest = match d.split_once("://") {
        Some((_, r)) => r.find('/').map(|i| &r[i..]).unwrap_or("/"),
        None => d,
    };
    if !rest.starts_with('/') {
        return Err(HttpError::new(
            400,
            "Destination must be a URL or an absolute path",
        ));
    }
    path::decode(rest)
}

pub async fn mv(ctx: &Ctx, req: crate::Req) -> Result<Response<Body>, HttpError> {
    let src = path::decode(req.uri().path())?;
    let d = header(req.headers(), "destination")
        .ok_or_else(|| HttpError::new(400, "MOVE needs a Destination header"))?;
    let dst = destination_path(d)?;
    // RFC 4918: a MOVE to another server is that server's business.
    if !super::copy::names_this_server(req.headers(), req.uri(), d) {
        return Err(HttpError::new(502, "the Destination names another server"));
    }
    let overwrite = super::overwrite(req.headers());
    let existed = ctx.core.stat(&ctx.who, dst.clone()).await.is_ok();
    let flags = RenameFlags {
        no_replace: !overwrite,
    };
    match ctx.core.rename(&ctx.who, src, dst, flags).await {
        Ok(_) => {
            let mut r = Response::new(Body::Empty);
            status(&mut r, if existed { 204 } else { 201 });
            Ok(r)
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists && !overwrite => {
            Err(super::exists_refused())
        }
        Err(e) => Err(e.into()),
    }
}

//! MKCOL: 201; 405 when it exists (davix reads EEXIST); 409 when the
//! parent is missing (ENOENT); 415 with a request body.

use super::status;
use crate::body::Body;
use crate::error::HttpError;
use crate::path;
use crate::Ctx;
use hyper::Response;
use tessera_types::ErrorKind;

pub async fn mkcol(ctx: &Ctx, req: crate::Req) -> Result<Response<Body>, HttpError> {
    let p = path::decode(req.uri().path())?;
    // RFC 4918 §9.3: a MKCOL body the server does not understand is a 415
    // (none is defined; nothing is created).
    let has_body = super::header(req.headers(), "content-length").is_some_and(|v| v.trim() != "0")
        || req.headers().contains_key("transfer-encoding");
    if has_body {
        return Err(HttpError::new(
            415,
            "MKCOL with a request body is not supported",
        ));
    }
    match ctx.core.mkdir(&ctx.who, p.clone(), 0o755, false).await {
        Ok(_) => {
            let mut r = Response::new(Body::Empty);
            status(&mut r, 201);
            Ok(r)
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists => {
            Err(HttpError::new(405, format!("{} exists", p.display())))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Err(HttpError::new(
            409,
            format!("the parent of {} does not exist", p.display()),
        )),
        Err(e) => Err(e.into()),
    }
}

//! DELETE: a file, or a directory with everything under it (RFC 4918
//! §9.6.1, one core call). 204 when all of it went; when some members
//! could not be deleted (permissions, ACLs) the rest is gone and a 207
//! names those members; nothing deleted at all is the error's own status.
//! Conditional headers are checked against the target first.

use super::{precond, status};
use crate::body::Body;
use crate::error::HttpError;
use crate::path;
use crate::Ctx;
use hyper::Response;

pub async fn delete(ctx: &Ctx, req: crate::Req) -> Result<Response<Body>, HttpError> {
    let p = path::decode(req.uri().path())?;
    if p.is_root() {
        return Err(HttpError::new(403, "the root cannot be deleted"));
    }
    precond::check_path(ctx, req.headers(), &p).await?;
    let done = ctx.core.remove_all(&ctx.who, p).await?;
    if !done.failed.is_empty() {
        let failed: Vec<_> = done
            .failed
            .into_iter()
            .map(|(p, e)| (p, HttpError::from(e)))
            .collect();
        return Ok(super::multistatus::failures(&failed));
    }
    let mut r = Response::new(Body::Empty);
    status(&mut r, 204);
    Ok(r)
}

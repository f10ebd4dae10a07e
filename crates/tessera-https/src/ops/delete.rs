//! DELETE: a file, or an empty directory (409 when not empty).

use super::status;
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
    ctx.core.remove(&ctx.who, p, false).await?;
    let mut r = Response::new(Body::Empty);
    status(&mut r, 204);
    Ok(r)
}

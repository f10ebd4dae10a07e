//! MOVE with `Destination` (a full URL or an absolute path) and
//! `Overwrite: T|F` (default T): one rename in the namespace (files and
//! whole directories; no data copied). 201 new, 204 replaced (a file
//! replacing a file atomically; a directory on either side deletes the
//! destination first, RFC 4918 §9.9.3), 412 when `Overwrite: F` meets an
//! existing target, 409 without the destination's parent, 502 when the
//! destination is on another server.

use super::{header, precond, status};
use crate::body::Body;
use crate::error::HttpError;
use crate::path;
use crate::Ctx;
use hyper::Response;
use tessera_core::RenameFlags;
use tessera_types::{ErrorKind, NsPath};

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
    let h = req.headers();
    let d = header(h, "destination")
        .ok_or_else(|| HttpError::new(400, "MOVE needs a Destination header"))?;
    let dst = destination_path(d)?;
    // RFC 4918: a MOVE to another server is that server's business.
    if !super::copy::names_this_server(h, req.uri(), d) {
        return Err(HttpError::new(502, "the Destination names another server"));
    }
    if let Some(depth) = header(h, "depth").map(str::trim) {
        if !depth.eq_ignore_ascii_case("infinity") {
            return Err(HttpError::new(400, "MOVE takes Depth infinity only"));
        }
    }
    let me = source(ctx, h, &src, &dst).await?;
    let overwrite = super::overwrite(h);
    // A file replacing a file is one atomic rename; anything else with a
    // directory on either side clears the destination first.
    let existed = clear_destination(ctx, &dst, overwrite, me.is_dir()).await?;
    let flags = RenameFlags {
        no_replace: !overwrite,
    };
    match ctx.core.rename(&ctx.who, src, dst.clone(), flags).await {
        Ok(_) => {
            let mut r = Response::new(Body::Empty);
            status(&mut r, if existed { 204 } else { 201 });
            Ok(r)
        }
        Err(e) if e.kind() == ErrorKind::AlreadyExists && !overwrite => {
            Err(super::exists_refused())
        }
        Err(e) => Err(at_destination(e, &dst)),
    }
}

/// The source of a COPY or MOVE, once its conditions hold and the
/// destination is neither it nor inside it (403).
pub async fn source(
    ctx: &Ctx,
    h: &hyper::HeaderMap,
    src: &NsPath,
    dst: &NsPath,
) -> Result<tessera_core::Inode, HttpError> {
    precond::check_path(ctx, h, src).await?;
    let me = ctx.core.stat(&ctx.who, src.clone()).await?;
    if src == dst || (me.is_dir() && dst.starts_with(src)) {
        return Err(HttpError::new(
            403,
            "the destination is the source or inside it",
        ));
    }
    Ok(me)
}

/// Before a COPY or MOVE: whether `dst` exists, refused (412) when it
/// does and `overwrite` is false; when it is a directory, or the source
/// is one, it is deleted first (RFC 4918 §9.8.4, §9.9.3), 207-style
/// failures answered as the first failure's status.
pub async fn clear_destination(
    ctx: &Ctx,
    dst: &NsPath,
    overwrite: bool,
    src_is_dir: bool,
) -> Result<bool, HttpError> {
    let cur = match ctx.core.stat(&ctx.who, dst.clone()).await {
        Ok(i) => i,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    if !overwrite {
        return Err(super::exists_refused());
    }
    if cur.is_dir() || src_is_dir {
        let done = ctx.core.remove_all(&ctx.who, dst.clone()).await?;
        if let Some((_, e)) = done.failed.into_iter().next() {
            return Err(e.into());
        }
    }
    Ok(true)
}

/// A failure to make the destination: a missing parent is 409 (RFC 4918
/// §9.8.5, §9.9.4), the rest as usual.
pub fn at_destination(e: tessera_core::CoreError, dst: &NsPath) -> HttpError {
    if e.kind() == ErrorKind::NotFound {
        return HttpError::new(
            409,
            format!("no directory for {} (create it first)", dst.display()),
        );
    }
    e.into()
}

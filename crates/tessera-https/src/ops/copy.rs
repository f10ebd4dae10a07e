//! COPY inside the namespace (WebDAV, RFC 4918 §9.8): `COPY <file>` with a
//! `Destination` on this server (a path, or a URL naming the host the
//! request came to) and none of the third-party-copy headers. The bytes
//! are read and written through the data path like any upload, checked
//! against the source's checksums before the copy becomes visible.
//! A collection is copied with `Depth: infinity` (the default: everything
//! under it) or `0` (the collection and its properties only), going on
//! past members that fail (207 naming them). `Overwrite: T|F` (default T):
//! 201 new, 204 replaced (an existing destination is deleted first, as
//! RFC 4918 §9.8.4 says), 412 when `Overwrite: F` meets one; 409 without
//! the destination's parent (RFC 4918; a third-party copy creates it as
//! PUT does); dead properties go with the copy. The copy itself is the
//! core's (`Core::copy_file`, `Core::copy_tree`).

use super::moves::destination_path;
use super::{header, status};
use crate::body::Body;
use crate::error::HttpError;
use crate::path;
use crate::Ctx;
use hyper::header::HeaderMap;
use hyper::Response;
use tessera_types::NsPath;

/// The namespace path of `dest` when it names this server and the request
/// is not a third-party copy (those go to `tpc::push`).
pub fn local_destination(h: &HeaderMap, uri: &hyper::Uri, dest: &str) -> Option<NsPath> {
    let tpc = h.keys().any(|k| {
        let k = k.as_str();
        k == "credential" || k == "x-number-of-streams" || k.starts_with("transferheader")
    });
    if tpc || !names_this_server(h, uri, dest) {
        return None;
    }
    let dest = dest.split_once('?').map_or(dest, |(d, _)| d);
    destination_path(dest).ok()
}

/// Whether a `Destination` is a path, or an https (davs) URL naming the
/// host this request came to.
pub fn names_this_server(h: &HeaderMap, uri: &hyper::Uri, dest: &str) -> bool {
    if dest.starts_with('/') {
        return true;
    }
    let Some((scheme, rest)) = dest.split_once("://") else {
        return false;
    };
    let authority = rest.split('/').next().unwrap_or(rest);
    let ours = header(h, "host").or_else(|| uri.authority().map(|a| a.as_str()));
    matches!(scheme.to_ascii_lowercase().as_str(), "https" | "davs")
        && ours.is_some_and(|o| authority.eq_ignore_ascii_case(o))
}

pub async fn copy(ctx: &Ctx, req: crate::Req, dst: NsPath) -> Result<Response<Body>, HttpError> {
    let src = path::decode(req.uri().path())?;
    let h = req.headers();
    let deep = match header(h, "depth").map(str::trim) {
        None => true,
        Some("0") => false,
        Some(d) if d.eq_ignore_ascii_case("infinity") => true,
        Some(d) => {
            return Err(HttpError::new(
                400,
                format!("COPY takes Depth 0 or infinity, not {d:?}"),
            ))
        }
    };
    let me = super::moves::source(ctx, h, &src, &dst).await?;
    let overwrite = super::overwrite(h);
    let existed = super::moves::clear_destination(ctx, &dst, overwrite, me.is_dir()).await?;
    let failed = if me.is_dir() {
        let done = ctx
            .core
            .copy_tree(&ctx.who, src, dst.clone(), deep)
            .await
            .map_err(|e| super::moves::at_destination(e, &dst))?;
        done.failed
    } else {
        let (core, who, d2) = (ctx.core.clone(), ctx.who.clone(), dst.clone());
        tessera_core::blocking(move || core.copy_file(&who, &src, &d2, true))
            .await?
            .map_err(|e| super::moves::at_destination(e, &dst))?;
        Vec::new()
    };
    if !failed.is_empty() {
        let failed: Vec<_> = failed
            .into_iter()
            .map(|(p, e)| (p, HttpError::from(e)))
            .collect();
        return Ok(super::multistatus::failures(&failed));
    }
    let mut r = Response::new(Body::Empty);
    status(&mut r, if existed { 204 } else { 201 });
    Ok(r)
}

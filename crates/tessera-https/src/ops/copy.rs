//! COPY inside the namespace (WebDAV, RFC 4918 §9.8): `COPY <file>` with a
//! `Destination` on this server (a path, or a URL naming the host the
//! request came to) and none of the third-party-copy headers. The bytes
//! are read and written through the data path like any upload, checked
//! against the source's checksums before the copy becomes visible.
//! `Overwrite: T|F` (default T): 201 new, 204 replaced, 412 when
//! `Overwrite: F` meets an existing file; 409 without the destination's
//! directory; 501 for a directory (collection copies are not done).

use super::moves::destination_path;
use super::{header, status};
use crate::body::Body;
use crate::error::HttpError;
use crate::path;
use crate::Ctx;
use hyper::header::HeaderMap;
use hyper::Response;
use tessera_types::{ErrorKind, NsPath};

/// How much is read and written at a time.
const PART: usize = 8 << 20;

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
    if src == dst {
        return Err(HttpError::new(403, "source and destination are the same"));
    }
    let overwrite = super::overwrite(req.headers());
    let existed = match ctx.core.stat(&ctx.who, dst.clone()).await {
        Ok(i) if i.is_dir() => {
            return Err(HttpError::new(409, "the destination is a directory"));
        }
        Ok(_) if !overwrite => return Err(super::exists_refused()),
        Ok(_) => true,
        Err(_) => false,
    };
    let (core, who) = (ctx.core.clone(), ctx.who.clone());
    let done = tokio::task::spawn_blocking(move || -> Result<(), HttpError> {
        let rs = core.open_read(&who, &src).map_err(|e| match e.kind() {
            ErrorKind::IsADirectory => {
                HttpError::new(501, "COPY of a directory is not supported; copy its files")
            }
            _ => e.into(),
        })?;
        let inode = rs.inode().clone();
        let size = rs.size();
        let mut ws = core
            .open_write(&who, &dst, inode.mode & 0o777, overwrite, size)
            .map_err(|e| match e.kind() {
                // RFC 4918: the destination's collection must exist.
                ErrorKind::NotFound => HttpError::new(
                    409,
                    format!("no directory for {} (create it first)", dst.display()),
                ),
                ErrorKind::AlreadyExists if !overwrite => super::exists_refused(),
                _ => e.into(),
            })?;
        let mut off = 0u64;
        while off < size {
            let d = rs.read(off, PART.min((size - off) as usize))?;
            let Some(d) = d.filter(|d| !d.is_empty()) else {
                return Err(HttpError::new(
                    500,
                    format!("{} ended at {off} of {size} bytes", src.display()),
                ));
            };
            for s in d.slices() {
                ws.write(s)?;
            }
            off += d.len() as u64;
        }
        ws.close_expecting(super::stored(&inode))?;
        Ok(())
    })
    .await;
    done.map_err(|e| HttpError::new(500, e.to_string()))??;
    let mut r = Response::new(Body::Empty);
    status(&mut r, if existed { 204 } else { 201 });
    Ok(r)
}

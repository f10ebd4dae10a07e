//! PUT: the body streams into a write session (Content-Length or chunked;
//! `Expect: 100-continue` is answered when the body is first read). The
//! file becomes visible only when the whole body has arrived and every
//! stripe is sealed; an interrupted upload, an over-quota one or any error
//! leaves nothing. Parents are created, as the reference server does.

use super::{blocking, header, precond, set, status};
use crate::body::Body;
use crate::error::HttpError;
use crate::path;
use crate::Ctx;
use http_body_util::BodyExt;
use hyper::body::Bytes;
use hyper::Response;
use tessera_core::{Budget, Expect, Lease, Upload, WriteSession};

pub async fn put(ctx: &Ctx, req: crate::Req) -> Result<Response<Body>, HttpError> {
    let p = path::decode(req.uri().path())?;
    let hint = size_hint(req.headers());
    let h = req.headers();
    // The conditions first: a PUT answered 412 makes nothing, parents
    // included.
    let current = ctx.core.stat(&ctx.who, p.clone()).await.ok();
    if precond::evaluate(h, current.as_ref(), false) != precond::Outcome::Proceed {
        return Err(precond::failed());
    }
    if current.as_ref().is_some_and(|i| i.is_dir()) {
        return Err(HttpError::new(405, "PUT on a collection"));
    }
    // Announced digests are read before anything is made: a malformed
    // one is refused with nothing created.
    let expect = super::putdigest::expected(h)?;
    make_parents(ctx, &p).await?;
    // `If-None-Match: *` is a create-only upload: the namespace refuses a
    // file that appeared meanwhile when the upload commits. Any other
    // condition was evaluated on the file there now (or on none): the
    // upload replaces only that one, at the open and at the commit, so a
    // file committed meanwhile is never overwritten (no lost update).
    let create_only = header(h, "if-none-match").is_some_and(|v| v.trim() == "*");
    let found = (!create_only && precond::any(h)).then_some(match &current {
        Some(i) => tessera_core::Found::File(i.ino),
        None => tessera_core::Found::Nothing,
    });
    let (core, who, p2) = (ctx.core.clone(), ctx.who.clone(), p.clone());
    // Its "exists", or the file changed since, is the failed condition's
    // 412.
    let refused = move |e: HttpError| match (e.kind, e.status.as_u16()) {
        (_, 409) if create_only => precond::failed(),
        (Some(tessera_types::ErrorKind::Busy), _) if found.is_some() => precond::failed(),
        (Some(tessera_types::ErrorKind::AlreadyExists), _) if found.is_some() => precond::failed(),
        _ => e,
    };
    let ws = blocking(move || match found {
        Some(f) => core.open_write_found(&who, &p2, 0o644, f, hint),
        None => core.open_write(&who, &p2, 0o644, !create_only, hint),
    })
    .await
    .map_err(refused)?;
    let existed = current.is_some();
    // The upload's memory counts against its identity's share too.
    let budget = ctx.reply_budget();
    let pace = ctx
        .core
        .pace(&ctx.who, super::rules::app_of(req.headers()), true);
    let (app, tag) = (
        super::rules::app_of(req.headers()),
        crate::monitoring::tag_of(&req),
    );
    let watch = ctx.watch(app, tag, &p, (0, true));
    let body = req.into_body();
    let inode = receive(
        ws,
        body,
        ctx.cfg.body_timeout,
        &budget,
        pace,
        (expect, watch),
    )
    .await
    .map_err(refused)?;
    Ok(created(&inode, !existed))
}

/// A PUT with `Content-Range` is refused with 400 before anything else
/// (RFC 9110 §14.4): its body is likely part of a file, and storing it as
/// the whole file would destroy the rest.
pub fn partial<B>(req: &hyper::Request<B>) -> Option<HttpError> {
    (req.method() == hyper::Method::PUT && req.headers().contains_key("content-range")).then(|| {
        HttpError::new(
            400,
            "a PUT with Content-Range (a partial update) is not supported: send the whole file",
        )
    })
}

/// The upload's size from `Content-Length` (0 when chunked).
pub fn size_hint(h: &hyper::HeaderMap) -> u64 {
    header(h, "content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Create the parents of `p` that are missing, as the reference server
/// does for a PUT.
pub async fn make_parents(ctx: &Ctx, p: &tessera_types::NsPath) -> Result<(), HttpError> {
    Ok(ctx.core.make_parents(&ctx.who, p).await?)
}

/// Stream `body` into `ws` and close it: the file is visible only when
/// this returns Ok. Any early return drops the upload: the write is
/// aborted, nothing visible. A body that brings nothing for `idle` is
/// abandoned (408; a slow or stuck client cannot hold a write open). The
/// core's [`Upload`] leases the file's memory and decides what runs on the
/// blocking pool.
pub async fn receive(
    ws: WriteSession,
    mut body: crate::ReqBody,
    idle: std::time::Duration,
    budget: &Budget,
    pace: tessera_core::Pace,
    (expect, watch): (Expect, tessera_wlcg::watch::Watch),
) -> Result<tessera_core::Inode, HttpError> {
    let up: Upload<Bytes> = Upload::new(ws, budget.clone(), None);
    up.pace_with(pace);
    loop {
        let Ok(next) = tokio::time::timeout(idle, body.frame()).await else {
            return Err(HttpError::new(
                408,
                format!("no data for {} s: upload abandoned", idle.as_secs()),
            ));
        };
        let Some(frame) = next else { break };
        let frame = frame.map_err(|e| {
            watch.forced(); // the client went mid-upload
            HttpError::new(400, format!("upload interrupted: {e}"))
        })?;
        if let Ok(data) = frame.into_data() {
            watch.wrote(data.len() as u64);
            if let Err(e) = up.append(data, Lease::default()).await {
                linger(body, idle);
                return Err(e.into());
            }
        }
    }
    up.close(expect).await.map_err(super::putdigest::mismatch)
}

/// After a refusal mid-upload (over quota, no space): read and drop what
/// the client still sends, for a while, so that it reads the answer
/// instead of a connection reset while it writes (a chunked upload does
/// not know it should stop). At most `LINGER_BYTES`, and not past `idle`
/// without data or `LINGER` in all; then the body is dropped and the
/// connection closes.
fn linger(mut body: crate::ReqBody, idle: std::time::Duration) {
    const LINGER: std::time::Duration = std::time::Duration::from_secs(30);
    const LINGER_BYTES: u64 = 1 << 30;
    tokio::spawn(async move {
        let end = tokio::time::Instant::now() + LINGER;
        let mut n = 0u64;
        while n < LINGER_BYTES {
            let wait = end.min(tokio::time::Instant::now() + idle);
            match tokio::time::timeout_at(wait, body.frame()).await {
                Ok(Some(Ok(f))) => n += f.data_ref().map_or(0, |d| d.len() as u64),
                _ => break,
            }
        }
    });
}

/// 201 for a new file, 204 for a replaced one.
pub fn created(inode: &tessera_core::Inode, new: bool) -> Response<Body> {
    let mut r = Response::new(Body::Empty);
    status(&mut r, if new { 201 } else { 204 });
    set(&mut r, "ETag", &super::etag(inode));
    set(&mut r, "Content-Length", "0");
    r
}

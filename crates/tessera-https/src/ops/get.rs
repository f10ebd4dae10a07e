//! GET and HEAD: whole files, one range (206), several ranges
//! (`multipart/byteranges`), conditional requests, `Digest`. The body
//! streams a part at a time from a task; memory stays bounded.

use super::{digests, etag, header, secs, set, status};
use crate::body::Body;
use crate::date::http_date;
use crate::error::HttpError;
use crate::path;
use crate::ranges::{self, Ranges};
use crate::Ctx;
use hyper::body::Bytes;
use hyper::Response;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tessera_core::{Budget, Lease, ReadOpen, ReadSession, Stall};
use tokio::sync::mpsc;

/// Bytes read per storage request while streaming.
const PART: usize = 4 << 20;
/// Files up to this size are read whole at open and served from memory.
const SMALL: u64 = 1 << 20;
const BOUNDARY: &str = "tessera-byteranges-7d5f1a";

pub async fn get(ctx: &Ctx, req: crate::Req) -> Result<Response<Body>, HttpError> {
    let head = req.method() == hyper::Method::HEAD;
    let p = path::decode(req.uri().path())?;
    // The open, and a small file's bytes, in line when nothing has to
    // wait for storage (namespace records and data in memory); else one
    // trip to the blocking pool for what is left.
    let opened = match ctx.core.open_read_or_stall_nowait(&ctx.who, &p) {
        Ok(Some(ReadOpen::File(rs))) => match small_body_cached(&rs) {
            Some(whole) => Ok(Ok((Arc::new(rs), whole))),
            None => on_pool(move || with_small_body(rs).map(Ok)).await?,
        },
        Ok(Some(ReadOpen::Stall(st))) => Ok(Err(st)),
        Err(e) => Err(e),
        Ok(None) => {
            let (core, who, p2) = (ctx.core.clone(), ctx.who.clone(), p.clone());
            on_pool(move || match core.open_read_or_stall(&who, &p2)? {
                ReadOpen::File(rs) => with_small_body(rs).map(Ok),
                ReadOpen::Stall(st) => Ok(Err(st)),
            })
            .await?
        }
    };
    let (rs, whole) = match opened {
        Ok(Ok(o)) => {
            let app = super::rules::app_of(req.headers());
            o.0.pace_with(ctx.core.pace(&ctx.who, app, false));
            o
        }
        Ok(Err(st)) => return Ok(stalled(&st)),
        Err(e) if e.kind() == tessera_types::ErrorKind::IsADirectory => {
            let html = super::index::wants_html(req.headers());
            let slash = req.uri().path().ends_with('/');
            return super::index::listing(ctx, &p, head, (html, slash)).await;
        }
        Err(e) => return Err(e.into()),
    };
    let size = rs.size();
    let r = match Leases::first_part(&ctx.reply_budget(), &rs, &whole, head).await {
        Ok(leases) => prime(respond(rs, whole, req.headers(), head, leases)).await,
        Err(busy) => busy,
    };
    // Only an answer with the file's bytes is a transfer (not a 304, a
    // 412, a 416, a busy 503 or a HEAD).
    if head || !matches!(r.status().as_u16(), 200 | 206) {
        return Ok(r);
    }
    let (app, tag) = (
        super::rules::app_of(req.headers()),
        crate::monitoring::tag_of(&req),
    );
    let watch = ctx.watch(app, tag, &p, (size, false));
    Ok(crate::monitoring::counted(r, watch))
}

/// A read that failed while streaming: the status its error maps to.
#[derive(Debug)]
struct ReadFailure {
    status: u16,
    msg: String,
}

impl std::fmt::Display for ReadFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for ReadFailure {}

fn read_failure(e: tessera_core::CoreError) -> std::io::Error {
    let h = HttpError::from(e);
    std::io::Error::other(ReadFailure {
        status: h.status.as_u16(),
        msg: h.msg,
    })
}

/// Wait for a streamed body's first piece (the first part read, and the
/// piece's preamble) before the status line goes out: a file that cannot
/// be read (or reconstructed) gets an error status, not a 200 and a body
/// that breaks off at its first byte.
pub async fn prime(mut r: Response<Body>) -> Response<Body> {
    if !matches!(r.body(), Body::Stream(_)) {
        return r;
    }
    let Body::Stream(mut rx) = std::mem::replace(r.body_mut(), Body::Empty) else {
        return r;
    };
    match rx.recv().await {
        Some(Ok(b)) => *r.body_mut() = Body::Primed(Some(b), rx),
        None => *r.body_mut() = Body::Primed(None, rx),
        Some(Err(e)) => {
            let h = match e.get_ref().and_then(|i| i.downcast_ref::<ReadFailure>()) {
                Some(f) => HttpError::new(f.status, f.msg.clone()),
                None => HttpError::new(500, e.to_string()),
            };
            return crate::error_response(&h);
        }
    }
    r
}

/// Where a streamed body takes each part's bytes of the memory budget:
/// the first part may have taken its lease already.
pub struct Leases {
    budget: Budget,
    first: Option<Lease>,
}

impl Leases {
    pub fn new(budget: &Budget) -> Leases {
        Leases {
            budget: budget.clone(),
            first: None,
        }
    }

    /// For a GET that will stream `rs` (not `head`, no `whole` body read
    /// already): the first part's bytes before the answer. With none to be
    /// had, the answer is a 503 saying when to come back, rather than a
    /// body that breaks off.
    pub async fn first_part(
        budget: &Budget,
        rs: &ReadSession,
        whole: &Option<Bytes>,
        head: bool,
    ) -> Result<Leases, Response<Body>> {
        let mut leases = Leases::new(budget);
        if whole.is_none() && !head {
            match budget.lease(PART.min(rs.size() as usize)).await {
                Some(l) => leases.first = Some(l),
                None => return Err(retry_after(5, "insufficient memory to read the file now")),
            }
        }
        Ok(leases)
    }

    async fn next(&mut self, n: usize) -> Option<Lease> {
        match self.first.take() {
            Some(l) => Some(l),
            None => self.budget.lease(n).await,
        }
    }
}

/// `sys.stall.unavailable`: the file's data cannot be read now; 503 with
/// `Retry-After` (the HTTP form of XRootD's `kXR_wait`).
pub fn stalled(st: &Stall) -> Response<Body> {
    retry_after(st.secs, &st.why)
}

/// 503 with `Retry-After: secs` and `why` as its text.
pub(crate) fn retry_after(secs: u32, why: &str) -> Response<Body> {
    let mut r = crate::error_response(&HttpError::new(503, why.to_string()));
    set(&mut r, "Retry-After", &secs.to_string());
    r
}

/// `f` on the blocking pool (its own errors left to the caller).
async fn on_pool<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, HttpError> {
    Ok(tessera_core::blocking(f).await?)
}

/// What `with_small_body` would give as the body, when reading it needs
/// no wait for storage (no bytes to read, or a file under 512 KiB whose
/// stripes the kernel holds in memory); `None`: use `with_small_body`.
pub fn small_body_cached(rs: &ReadSession) -> Option<Option<Bytes>> {
    if rs.size() > SMALL {
        return Some(None);
    }
    if rs.size() == 0 {
        return Some(Some(Bytes::new()));
    }
    let d = rs.read_cached(0, rs.size() as usize)?;
    Some(Some(Bytes::from(d.to_vec())))
}

/// An open file, with its bytes when it is small enough to serve from
/// memory (blocking).
pub fn with_small_body(
    rs: ReadSession,
) -> Result<(Arc<ReadSession>, Option<Bytes>), tessera_core::CoreError> {
    let whole = if rs.size() <= SMALL {
        match rs.read(0, rs.size() as usize)? {
            Some(d) => Some(Bytes::from(d.to_vec())),
            None => Some(Bytes::new()),
        }
    } else {
        None
    };
    Ok((Arc::new(rs), whole))
}

/// The answer to a GET or HEAD of an open file (`whole`: its bytes, if
/// read already): conditional requests, ranges, `Digest`.
// long-fn: one answer: validators, conditions, ranges and digests in RFC 9110's order.
pub fn respond(
    rs: Arc<ReadSession>,
    whole: Option<Bytes>,
    h: &hyper::HeaderMap,
    head: bool,
    leases: Leases,
) -> Response<Body> {
    let i = rs.inode().clone();
    let size = i.size;
    let tag = etag(&i);
    let mtime = secs(i.mtime_ns);
    let outcome = super::precond::evaluate(h, Some(&i), true);
    let mut r = Response::new(Body::Empty);
    set(&mut r, "ETag", &tag);
    set(&mut r, "Last-Modified", &http_date(mtime));
    set(&mut r, "Accept-Ranges", "bytes");
    set(&mut r, "X-Content-Type-Options", "nosniff");
    digests(h, &i, &mut r);
    match outcome {
        super::precond::Outcome::Proceed => {}
        super::precond::Outcome::NotModified => {
            status(&mut r, 304);
            return r;
        }
        super::precond::Outcome::Failed => {
            let mut r = crate::error_response(&super::precond::failed());
            set(&mut r, "ETag", &tag);
            return r;
        }
    }
    let wanted = match header(h, "range") {
        None => Ranges::Whole,
        Some(v) => ranges::parse(v, size).unwrap_or(Ranges::Unsatisfiable),
    };
    match wanted {
        Ranges::Unsatisfiable => {
            status(&mut r, 416);
            set(&mut r, "Content-Range", &format!("bytes */{size}"));
            set(&mut r, "Content-Length", "0");
        }
        Ranges::Whole => {
            set(&mut r, "Content-Length", &size.to_string());
            set(&mut r, "Content-Type", super::mime::of(&i.name));
            if !head {
                *r.body_mut() = match &whole {
                    Some(b) => Body::bytes(b.clone()),
                    None => stream_file(rs, vec![(None, 0, size)], None, leases),
                };
            }
        }
        Ranges::Some(v) if v.len() == 1 => {
            let (f, l) = v[0];
            status(&mut r, 206);
            set(&mut r, "Content-Range", &format!("bytes {f}-{l}/{size}"));
            set(&mut r, "Content-Length", &(l - f + 1).to_string());
            set(&mut r, "Content-Type", super::mime::of(&i.name));
            if !head {
                *r.body_mut() = match &whole {
                    Some(b) => Body::bytes(b.slice(f as usize..=l as usize)),
                    None => stream_file(rs, vec![(None, f, l + 1)], None, leases),
                };
            }
        }
        Ranges::Some(v) => {
            status(&mut r, 206);
            set(
                &mut r,
                "Content-Type",
                &format!("multipart/byteranges; boundary={BOUNDARY}"),
            );
            let mut parts = Vec::with_capacity(v.len() + 1);
            let mut total = 0u64;
            for (f, l) in v {
                let lead = format!(
                    "\r\n--{BOUNDARY}\r\nContent-Type: application/octet-stream\r\nContent-Range: bytes {f}-{l}/{size}\r\n\r\n"
                );
                total += lead.len() as u64 + (l - f + 1);
                parts.push((Some(Bytes::from(lead)), f, l + 1));
            }
            let tail = format!("\r\n--{BOUNDARY}--\r\n");
            total += tail.len() as u64;
            parts.push((Some(Bytes::from(tail)), 0, 0));
            set(&mut r, "Content-Length", &total.to_string());
            if !head {
                *r.body_mut() = match &whole {
                    Some(b) => {
                        let mut all = Vec::with_capacity(total as usize);
                        for (pre, f, t) in &parts {
                            if let Some(pre) = pre {
                                all.extend_from_slice(pre);
                            }
                            all.extend_from_slice(&b[*f as usize..*t as usize]);
                        }
                        Body::bytes(all)
                    }
                    None => stream_file(rs, parts, None, leases),
                };
            }
        }
    }
    r
}

/// Stream `(preamble, from, to)` pieces of the file, a part at a time,
/// each holding its bytes of the memory budget until it is sent (a part the budget
/// cannot take in time ends the body early: the client sees a short read);
/// `sent`, when given, counts the file bytes handed on (TPC markers).
pub fn stream_file(
    rs: Arc<ReadSession>,
    pieces: Vec<(Option<Bytes>, u64, u64)>,
    sent: Option<Arc<AtomicU64>>,
    mut leases: Leases,
) -> Body {
    let (tx, rx) = mpsc::channel(2);
    tokio::spawn(async move {
        for (mut pre, mut pos, end) in pieces {
            // A piece's preamble goes out with its first part (the first
            // thing sent is then known to have read).
            if pos >= end {
                if let Some(b) = pre.take() {
                    if tx.send(Ok(b)).await.is_err() {
                        return;
                    }
                }
            }
            while pos < end {
                let n = PART.min((end - pos) as usize);
                let Some(lease) = leases.next(n).await else {
                    let e = std::io::Error::other("insufficient memory to read the file now");
                    let _ = tx.send(Err(e)).await;
                    return;
                };
                // The core copies a part memory holds right here, else
                // reads it on the blocking pool.
                let chunks = match rs.fetch(pos, n).await {
                    Ok(Some(d)) if d.len() == n => Ok(frames(d, lease)),
                    Ok(_) => Err(std::io::Error::other("file shorter than its size")),
                    Err(e) => Err(read_failure(e)),
                };
                // An error ends the body early: the client sees a short
                // read, never wrong bytes.
                match chunks {
                    Ok(frames) => {
                        if let Some(b) = pre.take() {
                            if tx.send(Ok(b)).await.is_err() {
                                return;
                            }
                        }
                        for f in frames {
                            if tx.send(Ok(f)).await.is_err() {
                                return;
                            }
                        }
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                }
                pos += n as u64;
                if let Some(c) = &sent {
                    c.fetch_add(n as u64, Ordering::Relaxed);
                }
            }
        }
    });
    Body::Stream(rx)
}

/// A read's bytes as body frames, without copying them: each frame is a
/// slice of a stripe buffer, which goes back to the read pool (and its
/// bytes to the memory budget) when the last frame over it is sent.
fn frames(d: tessera_core::ReadData, lease: Lease) -> Vec<Bytes> {
    struct Pooled {
        buf: Vec<u8>,
        pool: Arc<tessera_core::BufPool>,
        _lease: Arc<Lease>,
    }
    impl AsRef<[u8]> for Pooled {
        fn as_ref(&self) -> &[u8] {
            &self.buf
        }
    }
    impl Drop for Pooled {
        fn drop(&mut self) {
            self.pool.put([std::mem::take(&mut self.buf)]);
        }
    }
    let (bufs, parts, pool) = d.into_parts();
    let lease = Arc::new(lease);
    let owners: Vec<Bytes> = bufs
        .into_iter()
        .map(|buf| {
            Bytes::from_owner(Pooled {
                buf,
                pool: Arc::clone(&pool),
                _lease: Arc::clone(&lease),
            })
        })
        .collect();
    parts
        .into_iter()
        .map(|(b, s, e)| owners[b].slice(s..e))
        .collect()
}

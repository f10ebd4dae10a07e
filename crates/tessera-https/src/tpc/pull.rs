//! Pull: `COPY <local path>` with `Source: <URL>`. Early refusals are plain
//! statuses (400 bad request or Credential, 412 Overwrite F on an existing
//! file, the local open's own status; missing parents are made as for a
//! PUT); then `201` with a chunked
//! `text/plain` body: a performance marker every 5 s and one final line,
//! `success: Created` only after the file and its checksum are committed,
//! or `failure: <reason>` with nothing left behind. When the source
//! announces a `Digest` (adler32 or crc32c; the copy asks for one with
//! `TransferHeaderWant-Digest`), the data must match it, or the copy fails
//! and a file being replaced stays as it was.

use super::client::{self, Remote};
use super::streams;
use crate::body::Body;
use crate::error::HttpError;
use crate::ops::{blocking, header, put};
use crate::path;
use crate::Ctx;
use http_body_util::BodyExt;
use hyper::body::Bytes;
use hyper::{Request, Response};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tessera_core::{Expect, Lease, Upload, WriteSession};
use tokio::sync::mpsc;

const MARKER_EVERY: Duration = Duration::from_secs(5);
/// A transfer that moves no byte for this long fails (a remote end that
/// stopped answering never holds a copy open for ever).
pub const STALL: Duration = Duration::from_secs(120);
/// Most streams one pull opens (each holds up to 16 MiB).
pub const MAX_STREAMS: usize = 16;

pub async fn pull(ctx: &Ctx, req: crate::Req, source: &str) -> Result<Response<Body>, HttpError> {
    let h = req.headers();
    check_credential(h)?;
    // 0–100 accepted (as the reference); 0 and 1 mean one stream, more
    // are capped at MAX_STREAMS.
    let streams = match header(h, "x-number-of-streams") {
        None => 1,
        Some(n) => match n.trim().parse::<usize>() {
            Ok(n) if n <= 100 => n.clamp(1, MAX_STREAMS),
            _ => return Err(HttpError::new(400, format!("bad X-Number-Of-Streams: {n}"))),
        },
    };
    let mut remote = Remote::parse(source)?;
    super::authorize(ctx, &mut remote).await?;
    remote.mark = super::mark::of(ctx, h, true);
    let dst = path::decode(req.uri().path())?;
    let overwrite = crate::ops::overwrite(h);
    if !overwrite && ctx.core.stat(&ctx.who, dst.clone()).await.is_ok() {
        return Err(crate::ops::exists_refused());
    }
    let get = forwarded(Request::get(remote.url.target.as_str()), &remote, h);
    let get = get
        .body(Body::Empty)
        .map_err(|e| HttpError::new(400, e.to_string()))?;
    // As PUT does (and the reference server and FTS expect): missing
    // parents are made. A WebDAV COPY inside the namespace does not
    // (RFC 4918 §9.8.5: 409).
    put::make_parents(ctx, &dst).await?;
    let (core, who, d2) = (ctx.core.clone(), ctx.who.clone(), dst.clone());
    let ws = blocking(move || core.open_write(&who, &d2, 0o644, overwrite, 0)).await?;
    let (tx, rx) = mpsc::channel(4);
    let tls = ctx.cfg.tpc_tls.clone();
    let copy_headers = Arc::new(h.clone());
    let budget = ctx.reply_budget();
    tokio::spawn(async move {
        let how = How {
            remote: Arc::new(remote),
            tls,
            get,
            copy_headers,
            streams,
            budget,
        };
        let line = match transfer(how, ws, &tx).await {
            Ok(()) => "success: Created\n".to_string(),
            Err(e) => super::failure(&e),
        };
        let _ = tx.send(Ok(Bytes::from(line))).await;
    });
    Ok(super::progress(rx))
}

/// `none`: only TransferHeader credentials. `gridsite` asks this server
/// to take a delegated X.509 proxy and use it on the remote end; nothing
/// is delegated here (as the reference without a delegation service), so
/// it is refused with the way that works: a macaroon from the remote end,
/// passed as `TransferHeaderAuthorization` with `Credential: none` (what
/// gfal2 and FTS do when both ends issue macaroons). Anything else: 400.
pub fn check_credential(h: &hyper::HeaderMap) -> Result<(), HttpError> {
    match header(h, "credential").map(str::trim) {
        None => Ok(()),
        Some(c) if c.eq_ignore_ascii_case("none") => Ok(()),
        Some(c) if c.eq_ignore_ascii_case("gridsite") => Err(HttpError::new(
            400,
            "Credential: gridsite (X.509 proxy delegation) is not supported here; \
             ask the remote end for a macaroon (POST with Content-Type: \
             application/macaroon-request) and send it as TransferHeaderAuthorization \
             with Credential: none",
        )),
        Some(_) => Err(HttpError::new(
            400,
            "COPY requested an unsupported Credential type (none is taken)",
        )),
    }
}

/// The outgoing request with `Host`, our `User-Agent`, and every
/// `TransferHeader<Name>` of the COPY forwarded as `<Name>`.
pub fn forwarded(
    mut b: hyper::http::request::Builder,
    remote: &Remote,
    h: &hyper::HeaderMap,
) -> hyper::http::request::Builder {
    b = b
        .header("Host", remote.url.authority())
        .header("User-Agent", tessera_httpc::USER_AGENT);
    for (k, v) in h {
        if let Some(name) = k.as_str().strip_prefix("transferheader") {
            if !name.is_empty() {
                b = b.header(name, v.clone());
            }
        }
    }
    b
}

pub fn marker(bytes: u64) -> Bytes {
    let ts = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    Bytes::from(format!(
        "Perf Marker\nTimestamp: {ts}\nStripe Index: 0\nStripe Bytes Transferred: {bytes}\nTotal Stripe Count: 1\nEnd\n"
    ))
}

/// What a pull fetches, and how.
struct How {
    remote: Arc<Remote>,
    tls: Option<Arc<tokio_rustls::rustls::ClientConfig>>,
    /// The single-stream GET.
    get: Request<Body>,
    /// The COPY's headers (`TransferHeader*` forwarded on every request).
    copy_headers: Arc<hyper::HeaderMap>,
    streams: usize,
    /// The process's memory budget (the file's buffers are leased from it).
    budget: tessera_core::Budget,
}

/// Fetch the source into `ws` (several streams when asked for and the
/// source's size is known, else one), a marker every 5 s, then close it;
/// any error aborts the write (nothing visible).
async fn transfer(
    how: How,
    ws: WriteSession,
    tx: &mpsc::Sender<Result<Bytes, std::io::Error>>,
) -> Result<(), String> {
    let up: Upload<Bytes> = Upload::new(ws, how.budget.clone(), None);
    let moved = AtomicU64::new(0);
    let head = if how.streams > 1 {
        streams::source_size(&how.remote, how.tls.as_ref(), &how.copy_headers).await
    } else {
        None
    };
    let fetch = async {
        match head {
            Some((size, want)) if size > streams::PIECE => {
                streams::pull(
                    Arc::clone(&how.remote),
                    how.tls.clone(),
                    Arc::clone(&how.copy_headers),
                    size,
                    how.streams,
                    streams::Sink {
                        up: &up,
                        budget: &how.budget,
                        moved: &moved,
                    },
                )
                .await?;
                Ok(want)
            }
            _ => {
                let (remote, tls) = (&*how.remote, how.tls.as_ref());
                one_stream(remote, tls, how.get, &up, &moved).await
            }
        }
    };
    tokio::pin!(fetch);
    let mut tick = tokio::time::interval(MARKER_EVERY);
    tick.tick().await; // the first tick is immediate
    let mut last = (0u64, std::time::Instant::now());
    let want = loop {
        tokio::select! {
            r = &mut fetch => break r?,
            _ = tick.tick() => {
                let now = moved.load(Ordering::Relaxed);
                if now != last.0 {
                    last = (now, std::time::Instant::now());
                } else if last.1.elapsed() > STALL {
                    return Err(format!("no progress for {STALL:?}"));
                }
                if tx.send(Ok(marker(now))).await.is_err() {
                    return Err("the client went away".into());
                }
            }
        }
    };
    let _ = tx.send(Ok(marker(moved.load(Ordering::Relaxed)))).await;
    up.close(want)
        .await
        .map(drop)
        .map_err(|e| crate::HttpError::from(e).msg)
}

/// GET the whole source on one connection into `ws`; the digests the
/// source announced.
async fn one_stream(
    remote: &Remote,
    tls: Option<&Arc<tokio_rustls::rustls::ClientConfig>>,
    get: Request<Body>,
    up: &Upload<Bytes>,
    moved: &AtomicU64,
) -> Result<Expect, String> {
    let resp = client::send(remote, tls, get).await?;
    if !resp.status().is_success() {
        return Err(format!("source answered {}", resp.status()));
    }
    let want = announced_by(resp.headers());
    let mut body = resp.into_body();
    while let Some(f) = body.frame().await {
        let f = f.map_err(|e| format!("reading the source: {e}"))?;
        if let Ok(d) = f.into_data() {
            let n = d.len() as u64;
            up.append(d, Lease::default())
                .await
                .map_err(|e| crate::HttpError::from(e).msg)?;
            moved.fetch_add(n, Ordering::Relaxed);
        }
    }
    Ok(want)
}

/// The digests in a source's `Digest` headers.
pub fn announced_by(h: &hyper::HeaderMap) -> Expect {
    let mut e = Expect::default();
    for v in h.get_all("digest").iter().filter_map(|v| v.to_str().ok()) {
        let a = crate::ops::announced(v);
        e.adler32 = e.adler32.or(a.adler32);
        e.crc32c = e.crc32c.or(a.crc32c);
    }
    e
}

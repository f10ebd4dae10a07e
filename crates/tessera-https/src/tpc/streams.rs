//! Multi-stream pulls (`X-Number-Of-Streams: n`, n > 1): the source's size
//! comes from a HEAD; then n connections each GET 8 MiB ranges in turn,
//! and the pieces are written in file order. At most 2n pieces are held
//! (a piece is handed out only with a window slot, and the lowest one
//! not yet written always has one), so memory stays at 16n MiB, and each
//! piece takes its bytes from the process's memory budget before it is
//! fetched (not granted within the budget's wait: the pull fails).

use super::client::{self, Remote};
use crate::body::Body;
use http_body_util::BodyExt;
use hyper::body::Bytes;
use hyper::{HeaderMap, Request};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tessera_core::{Budget, Lease, Upload};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};
use tokio_rustls::rustls::ClientConfig;

/// A fetched piece (index, bytes, its window slot, the budget's bytes it
/// holds), or why a stream stopped.
type Piece = Result<(u64, Vec<u8>, OwnedSemaphorePermit, Lease), String>;

/// Bytes per range request.
pub const PIECE: u64 = 8 << 20;

/// The source's size (and the digests it announces) from a HEAD with the
/// forwarded headers; `None` when it does not say (the pull then uses one
/// stream).
pub async fn source_size(
    remote: &Remote,
    tls: Option<&Arc<ClientConfig>>,
    copy_headers: &HeaderMap,
) -> Option<(u64, tessera_core::Expect)> {
    let head = super::pull::forwarded(
        Request::head(remote.url.target.as_str()),
        remote,
        copy_headers,
    )
    .body(Body::Empty)
    .ok()?;
    let resp = client::send(remote, tls, head).await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let size = resp
        .headers()
        .get("content-length")?
        .to_str()
        .ok()?
        .parse()
        .ok()?;
    Some((size, super::pull::announced_by(resp.headers())))
}

/// Where a pull's bytes go.
pub struct Sink<'a> {
    /// The file being written (its memory leased by the core).
    pub up: &'a Upload<Bytes>,
    /// The process's memory budget (each piece is leased from it).
    pub budget: &'a Budget,
    /// Bytes written (for the markers).
    pub moved: &'a AtomicU64,
}

/// Pull `size` bytes with `n` streams into `to`. Any error ends every
/// stream; the caller drops the session (nothing visible).
pub async fn pull(
    remote: Arc<Remote>,
    tls: Option<Arc<ClientConfig>>,
    copy_headers: Arc<HeaderMap>,
    size: u64,
    n: usize,
    to: Sink<'_>,
) -> Result<(), String> {
    let pieces = size.div_ceil(PIECE);
    let shared = Arc::new(Shared {
        remote,
        tls,
        copy_headers,
        size,
        pieces,
        next: AtomicU64::new(0),
        window: Arc::new(Semaphore::new(2 * n)),
        budget: to.budget.clone(),
    });
    let (tx, mut rx) = mpsc::channel::<Piece>(2 * n);
    let mut streams = tokio::task::JoinSet::new();
    for _ in 0..n.min(pieces as usize) {
        let (shared, tx) = (Arc::clone(&shared), tx.clone());
        streams.spawn(async move {
            if let Err(e) = stream(&shared, &tx).await {
                let _ = tx.send(Err(e)).await;
            }
        });
    }
    drop(tx);
    let mut held: BTreeMap<u64, (Vec<u8>, OwnedSemaphorePermit, Lease)> = BTreeMap::new();
    let mut written = 0u64;
    while written < pieces {
        let Some(got) = rx.recv().await else {
            return Err("a source stream ended early".into());
        };
        let (i, data, permit, lease) = got?;
        held.insert(i, (data, permit, lease));
        while let Some((data, permit, lease)) = held.remove(&written) {
            let len = data.len() as u64;
            to.up
                .append(Bytes::from(data), lease)
                .await
                .map_err(|e| crate::HttpError::from(e).msg)?;
            drop(permit);
            to.moved.fetch_add(len, Ordering::Relaxed);
            written += 1;
        }
    }
    streams.shutdown().await;
    Ok(())
}

/// What the streams of one pull share.
struct Shared {
    remote: Arc<Remote>,
    tls: Option<Arc<ClientConfig>>,
    /// The COPY's headers (`TransferHeader*` forwarded on every request).
    copy_headers: Arc<HeaderMap>,
    size: u64,
    pieces: u64,
    /// The next piece to hand out.
    next: AtomicU64,
    /// Slots for the pieces fetched and not yet written.
    window: Arc<Semaphore>,
    budget: Budget,
}

/// One stream: take the next piece (with a window slot), GET its range
/// on this stream's connection, hand it to the writer.
async fn stream(sh: &Shared, tx: &mpsc::Sender<Piece>) -> Result<(), String> {
    let (remote, size, budget) = (&*sh.remote, sh.size, &sh.budget);
    let mut conn = client::connect(remote, sh.tls.as_ref()).await?;
    loop {
        let permit = Arc::clone(&sh.window)
            .acquire_owned()
            .await
            .map_err(|e| e.to_string())?;
        // Memory before a piece is taken, as the window slot: every piece
        // handed out holds its bytes, so the lowest one never waits on
        // memory that later ones hold.
        let Some(lease) = budget.lease(PIECE as usize).await else {
            return Err("insufficient memory to hold a piece of the source now".into());
        };
        let i = sh.next.fetch_add(1, Ordering::Relaxed);
        if i >= sh.pieces {
            return Ok(());
        }
        let (from, to) = (i * PIECE, ((i + 1) * PIECE).min(size) - 1);
        let get = super::pull::forwarded(
            Request::get(remote.url.target.as_str()),
            remote,
            &sh.copy_headers,
        )
        .header("Range", format!("bytes={from}-{to}"))
        .body(Body::Empty)
        .map_err(|e| e.to_string())?;
        conn.ready().await.map_err(|e| e.to_string())?;
        let resp = conn.send_request(get).await.map_err(|e| e.to_string())?;
        if resp.status() != hyper::StatusCode::PARTIAL_CONTENT {
            return Err(format!(
                "source answered {} to a range request (bytes {from}-{to})",
                resp.status()
            ));
        }
        let body: Bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| format!("reading the source: {e}"))?
            .to_bytes();
        if body.len() as u64 != to - from + 1 {
            return Err(format!(
                "source sent {} bytes for bytes {from}-{to}",
                body.len()
            ));
        }
        if tx
            .send(Ok((i, Vec::from(body), permit, lease)))
            .await
            .is_err()
        {
            return Ok(()); // the writer stopped
        }
    }
}

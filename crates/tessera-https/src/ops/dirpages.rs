//! A directory listing as a response body streamed a page at a time
//! (PROPFIND `Depth: 1`, a GET of a directory as text or HTML): the
//! first page is listed before the status goes out (a refusal is the
//! response's status), the rest by a task as the client reads. What a
//! listing holds is at most two pages in flight, each leased from the
//! client's share of the memory budget until it is written; a client
//! that reads nothing for the idle timeout ends its listing. No lock is
//! held between pages: each is one namespace read after the last name.

use crate::body::Body;
use crate::error::HttpError;
use hyper::body::Bytes;
use std::future::Future;
use std::time::Duration;
use tessera_core::{Budget, Lease};
use tokio::sync::mpsc;

/// The pages of one listing.
pub trait Pager: Send + Sync + 'static {
    /// The entries after `after` rendered, and the name the next page
    /// starts after when there may be more.
    fn page(
        &self,
        after: Option<Vec<u8>>,
    ) -> impl Future<Output = Result<(String, Option<Vec<u8>>), HttpError>> + Send;
}

/// A page's bytes with the budget they hold: given back when hyper drops
/// them (written, or the connection gone).
struct Leased {
    text: Vec<u8>,
    _lease: Lease,
}

impl AsRef<[u8]> for Leased {
    fn as_ref(&self) -> &[u8] {
        &self.text
    }
}

/// How a listing's body is bounded.
#[derive(Clone)]
pub struct Bounds {
    /// The client's share of the reply budget.
    pub budget: Budget,
    /// How long a page may wait for the client to take the last one.
    pub idle: Duration,
}

/// `head`, then every page `pager` gives, then `tail`: one body with all
/// of it when one page was all, else a streamed one (chunked).
pub async fn body<P: Pager>(
    pager: P,
    head: String,
    tail: String,
    bounds: Bounds,
) -> Result<Body, HttpError> {
    let (first, next) = pager.page(None).await?;
    let mut text = head;
    text.push_str(&first);
    let Some(after) = next else {
        text.push_str(&tail);
        return Ok(Body::text(text));
    };
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        let mut after = after;
        loop {
            let r = pager.page(Some(after)).await;
            let (chunk, next) = match r {
                Ok(p) => p,
                Err(e) => {
                    let _ = tx.send(Err(std::io::Error::other(e.msg))).await;
                    return;
                }
            };
            if !send(&tx, chunk, &bounds).await {
                return;
            }
            match next {
                Some(n) => after = n,
                None => break,
            }
        }
        send(&tx, tail, &bounds).await;
    });
    Ok(Body::Primed(Some(text.into()), rx))
}

/// Lease `chunk`'s bytes and hand it to the body; false when the listing
/// ends here (budget refused, client gone or idle too long).
async fn send(tx: &mpsc::Sender<Result<Bytes, std::io::Error>>, chunk: String, b: &Bounds) -> bool {
    let Some(lease) = b.budget.lease(chunk.len()).await else {
        let _ = tx.try_send(Err(std::io::Error::other(
            "memory budget exhausted: listing ended",
        )));
        return false;
    };
    let bytes = Bytes::from_owner(Leased {
        text: chunk.into_bytes(),
        _lease: lease,
    });
    matches!(
        tokio::time::timeout(b.idle, tx.send(Ok(bytes))).await,
        Ok(Ok(()))
    )
}

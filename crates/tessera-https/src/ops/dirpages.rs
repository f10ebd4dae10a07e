//! A directory listing as a response body streamed a page at a time
//! (PROPFIND `Depth: 1`, a GET of a directory as text or HTML): the
//! first page is listed before the status goes out (a refusal is the
//! response's status), the rest by a task as the client reads. What a
//! listing holds is at most two pages in flight, each leased from the
//! client's share of the memory budget until it is written (the first
//! too: refused, the answer is 503); a client that reads nothing for the
//! idle timeout ends its listing, and a listing that ends early ends with
//! an error (the connection is cut), never as if complete. No lock is
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
    if next.is_none() {
        text.push_str(&tail);
    }
    let Some(lease) = bounds.budget.lease(text.len()).await else {
        return Err(HttpError::new(503, "server busy: memory budget exhausted"));
    };
    let first = leased(text, lease);
    let Some(after) = next else {
        return Ok(Body::bytes(first));
    };
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        let mut after = after;
        loop {
            let r = pager.page(Some(after)).await;
            let (chunk, next) = match r {
                Ok(p) => p,
                Err(e) => return fail(&tx, e.msg).await,
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
    Ok(Body::Primed(Some(first), rx))
}

fn leased(text: String, lease: Lease) -> Bytes {
    Bytes::from_owner(Leased {
        text: text.into_bytes(),
        _lease: lease,
    })
}

/// End the listing with `why`: the body fails (the connection is cut),
/// whenever the client reads again (or goes).
async fn fail(tx: &mpsc::Sender<Result<Bytes, std::io::Error>>, why: String) {
    let _ = tx.send(Err(std::io::Error::other(why))).await;
}

/// Lease `chunk`'s bytes and hand it to the body; false when the listing
/// ends here (budget refused, client gone or idle too long: the body then
/// fails rather than end as if complete).
async fn send(tx: &mpsc::Sender<Result<Bytes, std::io::Error>>, chunk: String, b: &Bounds) -> bool {
    let Some(lease) = b.budget.lease(chunk.len()).await else {
        fail(tx, "memory budget exhausted: listing ended".into()).await;
        return false;
    };
    match tokio::time::timeout(b.idle, tx.send(Ok(leased(chunk, lease)))).await {
        Ok(Ok(())) => true,
        Ok(Err(_)) => false, // the client went
        Err(_) => {
            let why = format!(
                "the client read nothing for {} s: listing ended",
                b.idle.as_secs()
            );
            fail(tx, why).await;
            false
        }
    }
}

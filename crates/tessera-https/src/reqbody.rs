//! The request body the methods get. Over HTTP/2, a body a method did not
//! read to its end (a PUT refused with 507, 403 or 409, or redirected with
//! 307, before its bytes arrived) is drained in the background when it is
//! dropped, instead of resetting the stream: curl 7.88 drops the response
//! of a stream reset while it is still sending, so the client would never
//! see why its upload was refused. Draining is bounded in time.

use hyper::body::{Body, Bytes, Frame, Incoming, SizeHint};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

/// Longest a refused upload is drained.
const DRAIN_FOR: Duration = Duration::from_secs(120);

pub struct ReqBody {
    inner: Option<Incoming>,
    drain: bool,
    ended: bool,
}

impl ReqBody {
    /// `drain`: drain on drop (HTTP/2).
    pub fn new(inner: Incoming, drain: bool) -> ReqBody {
        ReqBody {
            inner: Some(inner),
            drain,
            ended: false,
        }
    }
}

impl Body for ReqBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let r = Pin::new(inner).poll_frame(cx);
        if matches!(r, Poll::Ready(None) | Poll::Ready(Some(Err(_)))) {
            self.ended = true;
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(|b| b.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map(|b| b.size_hint())
            .unwrap_or_else(|| SizeHint::with_exact(0))
    }
}

impl Drop for ReqBody {
    fn drop(&mut self) {
        if !self.drain || self.ended {
            return;
        }
        let Some(mut b) = self.inner.take() else {
            return;
        };
        if b.is_end_stream() {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                use http_body_util::BodyExt;
                let _ = tokio::time::timeout(DRAIN_FOR, async {
                    while let Some(Ok(_)) = b.frame().await {}
                })
                .await;
            });
        }
    }
}

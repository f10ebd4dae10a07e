//! Response bodies: nothing, one buffer, or a stream fed by a task that
//! reads the file a part at a time (bounded memory).

use hyper::body::{Bytes, Frame};
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

pub enum Body {
    Empty,
    Full(Option<Bytes>),
    Stream(mpsc::Receiver<Result<Bytes, std::io::Error>>),
    /// A stream whose first piece was taken already (to see that the file
    /// reads before the status line goes out).
    Primed(Option<Bytes>, mpsc::Receiver<Result<Bytes, std::io::Error>>),
    /// A body whose bytes are counted for the monitoring stream as they
    /// go; the transfer's end is recorded when it is dropped (all sent,
    /// or the client gone).
    Counted(Box<Body>, Box<Watched>),
}

/// A response's transfer as monitoring and flow marking follow it: a body
/// dropped before its end (the client went) is a forced close.
pub struct Watched {
    pub watch: tessera_wlcg::watch::Watch,
    pub ended: bool,
}

impl Drop for Watched {
    fn drop(&mut self) {
        if !self.ended {
            self.watch.forced();
        }
    }
}

impl Body {
    pub fn text(s: impl Into<String>) -> Body {
        Body::Full(Some(Bytes::from(s.into())))
    }

    pub fn bytes(b: impl Into<Bytes>) -> Body {
        Body::Full(Some(b.into()))
    }
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        match self.get_mut() {
            Body::Empty => Poll::Ready(None),
            Body::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Body::Stream(rx) => rx.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data))),
            Body::Primed(first, rx) => match first.take() {
                Some(b) => Poll::Ready(Some(Ok(Frame::data(b)))),
                None => rx.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data))),
            },
            Body::Counted(inner, m) => {
                let r = Pin::new(inner.as_mut()).poll_frame(cx);
                match &r {
                    Poll::Ready(Some(Ok(f))) => {
                        if let Some(d) = f.data_ref() {
                            m.watch.read(d.len() as u64);
                        }
                        // hyper does not poll a body past its end.
                        m.ended = inner.is_end_stream();
                    }
                    Poll::Ready(None) => m.ended = true,
                    _ => {}
                }
                r
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Body::Counted(inner, _) => inner.is_end_stream(),
            b => matches!(b, Body::Empty | Body::Full(None)),
        }
    }
}

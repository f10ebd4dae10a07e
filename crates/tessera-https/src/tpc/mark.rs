//! SciTags on third-party copies: a COPY with `TransferHeaderSciTag` (or
//! `SciTag`) marks every connection the copy opens (`http-tpc`); its
//! source is the end the data comes from (the remote for a pull, this
//! server for a push). The bytes are counted on the connection itself.
//! The remote end gets the tag too (`TransferHeaderSciTag` is forwarded
//! as `SciTag`, as every `TransferHeader*`).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tessera_wlcg::scitags::{self, Fireflies, Flow, Tag};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How a copy's connections are marked.
#[derive(Clone)]
pub struct Mark {
    pub ff: Arc<Fireflies>,
    pub tag: Tag,
    /// A pull: the data comes from the remote end.
    pub pull: bool,
}

impl std::fmt::Debug for Mark {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Mark({:?}, pull {})", self.tag, self.pull)
    }
}

/// The mark of a COPY with these headers, when fireflies go somewhere.
pub fn of(ctx: &crate::Ctx, h: &hyper::HeaderMap, pull: bool) -> Option<Mark> {
    let ff = ctx.cfg.fireflies.clone()?;
    let v = h
        .get("transferheaderscitag")
        .or_else(|| h.get("scitag"))?
        .to_str()
        .ok()?;
    Some(Mark {
        ff,
        tag: scitags::parse(v)?,
        pull,
    })
}

/// A connection of a marked copy: its flow started, the data bytes
/// counted as they pass, the end announced when the connection closes.
pub struct Marked {
    inner: Box<dyn tessera_httpc::Io>,
    flow: Flow,
    pull: bool,
}

impl Marked {
    pub fn new(
        inner: Box<dyn tessera_httpc::Io>,
        m: &Mark,
        local: std::net::SocketAddr,
        peer: std::net::SocketAddr,
    ) -> Marked {
        let (src, dst) = if m.pull { (peer, local) } else { (local, peer) };
        Marked {
            inner,
            flow: m.ff.start(m.tag, "http-tpc", src, dst),
            pull: m.pull,
        }
    }
}

impl AsyncRead for Marked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = (buf.filled().len() - before) as u64;
        match self.pull {
            true => self.flow.sent(n),
            false => self.flow.received(n),
        }
        r
    }
}

impl AsyncWrite for Marked {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = &r {
            match self.pull {
                true => self.flow.received(*n as u64),
                false => self.flow.sent(*n as u64),
            }
        }
        r
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

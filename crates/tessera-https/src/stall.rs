//! A connection whose client stops taking a response is given up: while
//! writes to the socket wait, the client must take at least
//! [`MIN_PROGRESS`] bytes every `limit`, else the next write fails
//! (`TimedOut`), hyper drops the connection and with it the response
//! body and every part of the memory budget it held. A flush that
//! completes (everything handed to the kernel) ends the watch, so an idle
//! keep-alive connection is never counted as stalled.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// Bytes a waiting client must take per window (as XRootD's replies).
pub const MIN_PROGRESS: usize = 1 << 20;

pub struct StallGuard<S> {
    inner: S,
    limit: Duration,
    /// Running while writes wait: the window's end and what was taken in
    /// it.
    window: Option<(Pin<Box<Sleep>>, usize)>,
}

impl<S> StallGuard<S> {
    pub fn new(inner: S, limit: Duration) -> StallGuard<S> {
        StallGuard {
            inner,
            limit,
            window: None,
        }
    }

    /// A write is waiting: start the window, or, at its end, open the
    /// next one if the client took enough, else fail.
    fn waiting(&mut self, cx: &mut Context<'_>) -> Poll<io::Error> {
        let limit = self.limit;
        let (sleep, taken) = self
            .window
            .get_or_insert_with(|| (Box::pin(tokio::time::sleep(limit)), 0));
        loop {
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            if *taken < MIN_PROGRESS {
                return Poll::Ready(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "the client took under {MIN_PROGRESS} bytes of a response in {limit:?}"
                    ),
                ));
            }
            *taken = 0;
            sleep.as_mut().reset(tokio::time::Instant::now() + limit);
        }
    }

    /// What a write of the inner stream said, counted (bytes taken) or
    /// turned into the stall's timer (pending).
    fn written(
        &mut self,
        r: Poll<io::Result<usize>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<usize>> {
        match r {
            Poll::Ready(Ok(n)) => {
                self.took(n);
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => self.waiting(cx).map(Err),
        }
    }

    fn took(&mut self, n: usize) {
        if let Some((_, taken)) = &mut self.window {
            *taken += n;
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for StallGuard<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for StallGuard<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.written(r, cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.written(r, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match Pin::new(&mut self.inner).poll_flush(cx) {
            Poll::Ready(r) => {
                self.window = None;
                Poll::Ready(r)
            }
            Poll::Pending => self.waiting(cx).map(Err),
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn a_reader_that_stops_fails_the_writer_and_an_idle_one_does_not() {
        // A pipe whose reader takes nothing: the writer fails after the
        // window, not before.
        let (a, _b) = tokio::io::duplex(64 << 10);
        let mut g = StallGuard::new(a, Duration::from_millis(200));
        let start = std::time::Instant::now();
        let big = vec![0u8; 4 << 20];
        let e = g.write_all(&big).await.expect_err("stalled");
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(start.elapsed() >= Duration::from_millis(190));
        // A reader that keeps taking: no failure however long it takes.
        let (a, mut b) = tokio::io::duplex(64 << 10);
        let reader = tokio::spawn(async move {
            let mut buf = vec![0u8; 8 << 20];
            let mut got = 0;
            while got < buf.len() {
                got += tokio::io::AsyncReadExt::read(&mut b, &mut buf[got..])
                    .await
                    .unwrap();
            }
            (got, b)
        });
        let mut g = StallGuard::new(a, Duration::from_millis(200));
        g.write_all(&vec![1u8; 8 << 20]).await.expect("taken");
        g.flush().await.unwrap();
        let (got, _b) = reader.await.unwrap();
        assert_eq!(got, 8 << 20);
        // Idle after a flush (a keep-alive connection): the next response
        // is no stall, the reader still there.
        tokio::time::sleep(Duration::from_millis(300)).await;
        g.write_all(&[7u8; 1000])
            .await
            .expect("an idle connection is no stall");
        g.flush().await.unwrap();
    }
}

//! The last byte of a pushed body goes out in a write (so a TLS record)
//! of its own.
//!
//! Why: XrdHttp (Debian's xrootd 5.5, the reference peer) reads a PUT body
//! into a 1 MiB ring buffer with `SSL_read`, at most up to the buffer's
//! end, and then waits for the socket to become readable again. When the
//! body's final TLS record straddles that end, the rest of the record is
//! already out of the socket, decrypted and held by OpenSSL: no readiness
//! event ever comes, and the upload hangs one record short of its end
//! (seen here as a 7 MiB + 1 B push stuck at exactly 7 MiB). A final record
//! of one byte cannot straddle anything: every earlier remainder is woken
//! by the bytes still in the socket behind it. curl and gfal2 escape the
//! bug by luck of alignment (16 KiB records from the start of the body).
//!
//! The wrapper watches the plaintext hyper writes: the request head ends at
//! the first CRLF CRLF, the body's length is known (`Content-Length`), and
//! a write that would carry the last byte together with others is cut
//! short just before it; the next write carries that byte alone.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

const END_OF_HEAD: &[u8; 4] = b"\r\n\r\n";

pub struct TailApart<S> {
    inner: S,
    /// The body's length (0: nothing to keep apart).
    body: u64,
    /// Bytes of CRLF CRLF matched at the end of what was written so far.
    matched: usize,
    /// The stream offset of the body's last byte, once the head has ended.
    last: Option<u64>,
    written: u64,
}

impl<S> TailApart<S> {
    /// `inner` carries one request whose body is `body` bytes long.
    pub fn new(inner: S, body: u64) -> TailApart<S> {
        TailApart {
            inner,
            body,
            matched: 0,
            last: None,
            written: 0,
        }
    }

    /// Where the head ends in `bytes` (the index after CRLF CRLF), or the
    /// bytes of it matched at their end.
    fn scan(&self, bytes: &[u8]) -> Result<usize, usize> {
        let mut k = self.matched;
        for (i, &b) in bytes.iter().enumerate() {
            k = if b == END_OF_HEAD[k] {
                k + 1
            } else {
                usize::from(b == b'\r')
            };
            if k == END_OF_HEAD.len() {
                return Ok(i + 1);
            }
        }
        Err(k)
    }

    /// The stream offset of the body's last byte, the head ending `end`
    /// bytes after what was written so far.
    fn last_byte(&self, end: usize) -> u64 {
        self.written + end as u64 + self.body - 1
    }

    /// How much of the next `len` bytes (the first of them `head`) may go
    /// in one write.
    fn cap(&self, head: &[u8], len: usize) -> usize {
        if self.body == 0 {
            return len;
        }
        let last = match self.last {
            Some(l) => l,
            None => match self.scan(head) {
                Ok(end) => self.last_byte(end),
                Err(_) => return len,
            },
        };
        match last.checked_sub(self.written) {
            Some(i) if i < len as u64 => (i as usize).max(1),
            _ => len,
        }
    }

    /// `bytes` were written.
    fn advance(&mut self, bytes: &[u8]) {
        if self.last.is_none() && self.body > 0 {
            match self.scan(bytes) {
                Ok(end) => self.last = Some(self.last_byte(end)),
                Err(k) => self.matched = k,
            }
        }
        self.written += bytes.len() as u64;
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for TailApart<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let cap = self.cap(buf, buf.len());
        let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &buf[..cap]))?;
        self.advance(&buf[..n]);
        Poll::Ready(Ok(n))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.body > 0 && self.last.is_none() {
            // Still in the head: one slice at a time, scanned.
            let first = bufs.iter().find(|b| !b.is_empty());
            return self.poll_write(cx, first.map_or(&[][..], |b| &b[..]));
        }
        let len: usize = bufs.iter().map(|b| b.len()).sum();
        let mut left = self.cap(&[], len);
        let cut: Vec<IoSlice<'_>>;
        let bufs = if left == len {
            bufs
        } else {
            cut = bufs
                .iter()
                .map(|b| {
                    let k = b.len().min(left);
                    left -= k;
                    IoSlice::new(&b[..k])
                })
                .filter(|b| !b.is_empty())
                .collect();
            &cut
        };
        let n = ready!(Pin::new(&mut self.inner).poll_write_vectored(cx, bufs))?;
        self.written += n as u64;
        Poll::Ready(Ok(n))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for TailApart<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// Records each write's bytes, taking at most `max` per write.
    struct Writes {
        calls: Vec<Vec<u8>>,
        max: usize,
        vectored: bool,
    }

    impl AsyncWrite for Writes {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let n = buf.len().min(self.max);
            self.calls.push(buf[..n].to_vec());
            Poll::Ready(Ok(n))
        }
        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<io::Result<usize>> {
            let mut all: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            all.truncate(self.max);
            let n = all.len();
            self.calls.push(all);
            Poll::Ready(Ok(n))
        }
        fn is_write_vectored(&self) -> bool {
            self.vectored
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    fn request(body: usize) -> Vec<u8> {
        let mut r =
            format!("PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length: {body}\r\n\r\n").into_bytes();
        r.extend((0..body).map(|i| (i % 251) as u8 | 1));
        r
    }

    /// Every split of the request into the writes hyper might make: the
    /// stream is unchanged and the final byte is always written alone.
    #[tokio::test]
    async fn the_last_byte_is_written_alone() {
        for body in [1usize, 2, 5, 4096, 70_001] {
            let req = request(body);
            let head = req.len() - body;
            for (piece, max, vectored) in [
                (req.len(), usize::MAX, false),
                (7, usize::MAX, false),
                (4096, 1000, false),
                (head + 3, usize::MAX, true),
                (req.len(), 65_536, true),
            ] {
                let inner = Writes {
                    calls: Vec::new(),
                    max,
                    vectored,
                };
                let mut w = TailApart::new(inner, body as u64);
                for chunk in req.chunks(piece) {
                    if vectored {
                        // Two slices per call, as hyper's queue hands them.
                        let (a, b) = chunk.split_at(chunk.len() / 2);
                        let mut done = 0;
                        while done < chunk.len() {
                            let (x, y) = if done < a.len() {
                                (&a[done..], b)
                            } else {
                                (&b[done - a.len()..], &[][..])
                            };
                            done += w
                                .write_vectored(&[IoSlice::new(x), IoSlice::new(y)])
                                .await
                                .expect("write");
                        }
                    } else {
                        w.write_all(chunk).await.expect("write");
                    }
                }
                let calls = &w.inner.calls;
                let all: Vec<u8> = calls.iter().flatten().copied().collect();
                assert_eq!(all, req, "body {body}, pieces {piece}");
                let last = calls.iter().rfind(|c| !c.is_empty()).expect("a write");
                assert_eq!(last, &req[req.len() - 1..], "body {body}, pieces {piece}");
            }
        }
    }

    #[tokio::test]
    async fn without_a_body_nothing_is_cut() {
        let req = request(0);
        let inner = Writes {
            calls: Vec::new(),
            max: usize::MAX,
            vectored: false,
        };
        let mut w = TailApart::new(inner, 0);
        w.write_all(&req).await.expect("write");
        assert_eq!(w.inner.calls, vec![req]);
    }
}

//! Replies: requests of one connection run concurrently and answer in any
//! order, each reply carrying its request's stream id. Whoever has a reply
//! writes it to the socket's write half under a fair lock (no hand-off to a
//! writer task, so a reply costs no thread wake-up).

use crate::error::XrdError;
use crate::proto::{response_header, status};
use std::io::IoSlice;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tessera_core::ReadData;
use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{Mutex, Notify};

type Sink = BufWriter<Pin<Box<dyn AsyncWrite + Send>>>;

/// A piece of a reply body.
pub enum Piece {
    Bytes(Vec<u8>),
    /// File bytes still in the stripe buffers (no copy).
    Data(ReadData),
    /// File bytes as pgread sends them: each page's CRC-32C (big-endian,
    /// as sent) before the page; the first page is `first` bytes (a read
    /// may start inside a page), the last what is left.
    Paged {
        data: ReadData,
        crcs: Vec<[u8; 4]>,
        first: usize,
    },
}

impl Piece {
    pub fn len(&self) -> usize {
        match self {
            Piece::Bytes(b) => b.len(),
            Piece::Data(d) => d.len(),
            Piece::Paged { data, crcs, .. } => data.len() + 4 * crcs.len(),
        }
    }
}

pub struct Reply {
    pub stream: [u8; 2],
    pub status: u16,
    pub body: Vec<Piece>,
    /// The length the header announces when it is not the body's: a
    /// `kXR_status` frame counts its status body and info, not the data
    /// after them.
    pub counted: Option<usize>,
}

/// Where request handlers send their replies: the connection's write half.
#[derive(Clone)]
pub struct Out {
    sink: Arc<Mutex<Sink>>,
    dead: Arc<AtomicBool>,
    /// Told when the connection is given up (the reader stops too).
    gone: Arc<Notify>,
    /// A reply that makes no progress (1 MiB) for this long (a client
    /// that stops reading) gives the connection up: what its requests
    /// hold is freed.
    stall: Duration,
    /// Why the token this client offered at login was refused: said with
    /// every refusal (`kXR_NotAuthorized`) of what the session then does
    /// without it, so the client learns the cause, not only "anonymous".
    refused_login: Arc<std::sync::Mutex<Option<String>>>,
    /// Set when the connection's reader has stopped (the client closed,
    /// an idle limit, the drain): long requests still running give up.
    ended: Arc<(AtomicBool, Notify)>,
}

impl Out {
    pub fn new<W: AsyncWrite + Send + 'static>(w: W, stall: Duration) -> Out {
        let w: Pin<Box<dyn AsyncWrite + Send>> = Box::pin(w);
        Out {
            sink: Arc::new(Mutex::new(BufWriter::with_capacity(64 << 10, w))),
            dead: Arc::new(AtomicBool::new(false)),
            gone: Arc::new(Notify::new()),
            stall,
            refused_login: Arc::default(),
            ended: Arc::default(),
        }
    }

    /// The connection's reader has stopped.
    pub fn end(&self) {
        if !self.ended.0.swap(true, Ordering::Relaxed) {
            self.ended.1.notify_waiters();
        }
    }

    /// Resolves once the connection's reader has stopped or the
    /// connection was given up.
    pub async fn ended(&self) {
        let n = self.ended.1.notified();
        if self.ended.0.load(Ordering::Relaxed) {
            return;
        }
        tokio::select! {
            _ = n => {}
            _ = self.gone() => {}
        }
    }

    /// Remember (`Some`) or forget why a login's token was refused.
    pub fn note_refused_login(&self, why: Option<String>) {
        *tessera_core::lock(&self.refused_login) = why;
    }

    /// Write a reply; false when the connection is gone.
    pub async fn send(&self, r: Reply) -> bool {
        if self.dead.load(Ordering::Relaxed) {
            return false;
        }
        let mut w = self.sink.lock().await;
        let ok = !self.dead.load(Ordering::Relaxed)
            && write_one(&mut w, &r, self.stall).await.is_ok()
            && within(self.stall, w.flush()).await.is_ok();
        drop(w);
        drop(r); // buffers back to the pool
        if !ok {
            self.give_up();
        }
        ok
    }

    /// Give the connection up now (after a refusal that closes it).
    pub fn close_now(&self) {
        self.give_up();
    }

    fn give_up(&self) {
        if !self.dead.swap(true, Ordering::Relaxed) {
            self.gone.notify_waiters();
        }
    }

    /// Resolves once the connection has been given up (a reply failed or
    /// stalled).
    pub async fn gone(&self) {
        let n = self.gone.notified();
        if self.dead.load(Ordering::Relaxed) {
            return;
        }
        n.await
    }

    /// Flush and close the write half (the connection ends).
    pub async fn shutdown(&self) {
        let mut w = self.sink.lock().await;
        let _ = w.flush().await;
        let _ = w.shutdown().await;
    }

    pub async fn ok(&self, stream: [u8; 2], body: Vec<u8>) -> bool {
        self.send(Reply {
            stream,
            status: status::OK,
            body: vec![Piece::Bytes(body)],
            counted: None,
        })
        .await
    }

    pub async fn pieces(&self, stream: [u8; 2], status: u16, body: Vec<Piece>) -> bool {
        self.send(Reply {
            stream,
            status,
            body,
            counted: None,
        })
        .await
    }

    pub async fn error(&self, stream: [u8; 2], e: &XrdError) -> bool {
        let note = (e.code == crate::proto::err::NOT_AUTHORIZED)
            .then(|| tessera_core::lock(&self.refused_login).clone())
            .flatten();
        match note {
            Some(why) => {
                let e = XrdError::new(e.code, format!("{} ({why})", e.msg));
                self.send(error_reply(stream, &e)).await
            }
            None => self.send(error_reply(stream, e)).await,
        }
    }

    /// `kXR_redirect` to `host:port`, with `cgi` for the request resent there.
    pub async fn redirect(&self, stream: [u8; 2], host: &str, port: u16, cgi: &str) -> bool {
        let mut b = (port as i32).to_be_bytes().to_vec();
        b.extend_from_slice(host.as_bytes());
        if !cgi.is_empty() {
            b.push(b'?');
            b.extend_from_slice(cgi.as_bytes());
        }
        self.pieces(stream, status::REDIRECT, vec![Piece::Bytes(b)])
            .await
    }

    /// `kXR_wait`: the client sends the request again after `secs`.
    pub async fn wait(&self, stream: [u8; 2], secs: u32, why: &str) -> bool {
        let mut b = (secs as i32).to_be_bytes().to_vec();
        b.extend_from_slice(why.as_bytes());
        self.pieces(stream, status::WAIT, vec![Piece::Bytes(b)])
            .await
    }

    /// `Ok(body)` or the error.
    pub async fn result(&self, stream: [u8; 2], r: Result<Vec<u8>, XrdError>) -> bool {
        match r {
            Ok(b) => self.ok(stream, b).await,
            Err(e) => self.error(stream, &e).await,
        }
    }

    /// [`Out::result`] from a blocking-pool thread, by the thread that did
    /// the work (no hand-back to a runtime thread before the client hears).
    pub fn result_from_pool(&self, stream: [u8; 2], r: Result<Vec<u8>, XrdError>) -> bool {
        tokio::runtime::Handle::current().block_on(self.result(stream, r))
    }

    /// `send` from a blocking-pool thread.
    pub fn send_from_pool(&self, r: Reply) -> bool {
        tokio::runtime::Handle::current().block_on(self.send(r))
    }
}

pub fn error_reply(stream: [u8; 2], e: &XrdError) -> Reply {
    let mut b = Vec::with_capacity(5 + e.msg.len());
    b.extend_from_slice(&e.code.to_be_bytes());
    b.extend_from_slice(e.msg.as_bytes());
    b.push(0);
    Reply {
        stream,
        status: status::ERROR,
        body: vec![Piece::Bytes(b)],
        counted: None,
    }
}

/// A reply's bytes must move at least this much per `stall`.
const PROGRESS: usize = 1 << 20;

/// The reply (header and body) as vectored writes: one system call for a
/// reply that fits the socket, where a header written on its own went out
/// as a segment of its own (two sends, two wake-ups of the client).
async fn write_one(w: &mut Sink, r: &Reply, stall: Duration) -> std::io::Result<()> {
    let len = r
        .counted
        .unwrap_or_else(|| r.body.iter().map(Piece::len).sum());
    let head = response_header(r.stream, r.status, len);
    let mut iov: Vec<IoSlice<'_>> = vec![IoSlice::new(&head)];
    for p in &r.body {
        match p {
            Piece::Bytes(b) => iov.push(IoSlice::new(b)),
            Piece::Data(d) => iov.extend(d.slices().map(IoSlice::new)),
            Piece::Paged { data, crcs, first } => paged(&mut iov, data, crcs, *first),
        }
    }
    write_all_vectored(w, &mut iov, stall).await
}

/// `data` in pages, each after its CRC (see [`Piece::Paged`]), straight
/// from the stripe buffers (a page at a time through the connection's
/// buffer cost a copy and two calls per 4 KiB).
fn paged<'a>(iov: &mut Vec<IoSlice<'a>>, data: &'a ReadData, heads: &'a [[u8; 4]], first: usize) {
    let mut slices = data.slices();
    let mut cur: &[u8] = &[];
    for (i, h) in heads.iter().enumerate() {
        iov.push(IoSlice::new(h));
        let mut want = if i == 0 { first } else { crate::proto::PAGE };
        while want > 0 {
            if cur.is_empty() {
                match slices.next() {
                    Some(s) => cur = s,
                    None => break,
                }
            }
            let n = want.min(cur.len());
            iov.push(IoSlice::new(&cur[..n]));
            cur = &cur[n..];
            want -= n;
        }
    }
}

/// Every byte of `iov`, at most IOV_MAX slices a call; each [`PROGRESS`]
/// bytes must go within `stall` of the last.
async fn write_all_vectored(
    w: &mut Sink,
    iov: &mut [IoSlice<'_>],
    stall: Duration,
) -> std::io::Result<()> {
    let mut bufs = iov;
    let mut deadline: Option<tokio::time::Instant> = None;
    let mut moved = 0usize;
    while !bufs.is_empty() {
        let end = bufs.len().min(1024);
        let limit = match deadline {
            Some(d) => d.saturating_duration_since(tokio::time::Instant::now()),
            None => stall,
        };
        let n = in_time(limit, w.write_vectored(&bufs[..end]))
            .await
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("the client took no reply bytes for {stall:?}"),
                )
            })??;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut bufs, n);
        moved += n;
        if !bufs.is_empty() && (moved >= PROGRESS || deadline.is_none()) {
            // The next PROGRESS bytes are due `stall` from now.
            moved %= PROGRESS;
            deadline = Some(tokio::time::Instant::now() + stall);
        }
    }
    Ok(())
}

/// `f`, failed if it makes no progress for `stall`.
async fn within<F>(stall: Duration, f: F) -> std::io::Result<()>
where
    F: std::future::Future<Output = std::io::Result<()>>,
{
    in_time(stall, f).await.unwrap_or_else(|| {
        Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("the client took no reply bytes for {stall:?}"),
        ))
    })
}

/// `f`'s output, or `None` if it is not done within `limit`. Most reads
/// and writes finish on their first poll (bytes in the buffer, room in
/// the socket): those start no timer (which costs a clock read and the
/// runtime handle's lookup).
pub(crate) async fn in_time<F: std::future::Future>(limit: Duration, f: F) -> Option<F::Output> {
    tokio::pin!(f);
    let first = std::future::poll_fn(|cx| std::task::Poll::Ready(f.as_mut().poll(cx))).await;
    if let std::task::Poll::Ready(r) = first {
        return Some(r);
    }
    tokio::time::timeout(limit, f).await.ok()
}

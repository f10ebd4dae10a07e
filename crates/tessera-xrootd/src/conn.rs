//! One connection: handshake, `kXR_protocol` (and the in-band switch to
//! TLS), then requests read one after another and served concurrently;
//! replies go out through one writer task in whatever order they finish.

use crate::decode;
use crate::error::XrdError;
use crate::ops;
use crate::proto::{self, err, pflags, req, Header, HANDSHAKE_LEN, HEADER_LEN};
use crate::reply::{error_reply, in_time, Out};
use crate::session::Session;
use crate::XrootdConfig;
use std::sync::Arc;
use std::time::Duration;
use tessera_core::{Budget, Core, Lease};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// A client must complete the handshake within this.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum ConnError {
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    #[error("protocol: {0}")]
    Protocol(String),
    #[error("handshake timed out")]
    Timeout,
}

pub async fn serve_connection(
    mut sock: TcpStream,
    core: Option<Core>,
    cfg: Arc<XrootdConfig>,
) -> Result<(), ConnError> {
    let local = sock.local_addr()?;
    let peer = sock.peer_addr()?;
    let _ = sock.set_nodelay(true);
    let mut hs = [0u8; HANDSHAKE_LEN];
    tokio::time::timeout(HANDSHAKE_TIMEOUT, sock.read_exact(&mut hs))
        .await
        .map_err(|_| ConnError::Timeout)??;
    if hs[..12] != [0u8; 12]
        || hs[12..16] != 4i32.to_be_bytes()
        || hs[16..20] != 2012i32.to_be_bytes()
    {
        return Err(ConnError::Protocol("not an XRootD handshake".into()));
    }
    let mut reply = [0u8; 16];
    reply[4..8].copy_from_slice(&8i32.to_be_bytes());
    reply[8..12].copy_from_slice(&proto::PROTOCOL_VERSION.to_be_bytes());
    reply[12..16].copy_from_slice(&1i32.to_be_bytes()); // kXR_DataServer
    sock.write_all(&reply).await?;

    // kXR_protocol comes first (XrdCl sends it with the handshake); it
    // decides whether the socket switches to TLS.
    let (h, payload) = tokio::time::timeout(
        HANDSHAKE_TIMEOUT,
        read_request(&mut sock, None, HANDSHAKE_TIMEOUT),
    )
    .await
    .map_err(|_| ConnError::Timeout)??;
    if h.code != req::PROTOCOL {
        return run(sock, core, cfg, local, peer, false, Some((h, payload))).await;
    }
    let want_tls = h.u8_at(8) & pflags::WANT_TLS != 0;
    let mut flags = pflags::IS_SERVER;
    if cfg.tls.is_some() {
        flags |= pflags::HAVE_TLS;
    }
    let goto_tls = want_tls && cfg.tls.is_some();
    if goto_tls {
        flags |= pflags::GOTO_TLS;
    }
    let mut body = Vec::with_capacity(8);
    body.extend_from_slice(&proto::PROTOCOL_VERSION.to_be_bytes());
    body.extend_from_slice(&flags.to_be_bytes());
    sock.write_all(&proto::response_header(h.stream, proto::status::OK, 8))
        .await?;
    sock.write_all(&body).await?;
    match (&cfg.tls, goto_tls) {
        (Some(tls), true) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(Arc::clone(tls));
            let stream = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(sock))
                .await
                .map_err(|_| ConnError::Timeout)??;
            run(stream, core, cfg, local, peer, true, None).await
        }
        _ => run(sock, core, cfg, local, peer, false, None).await,
    }
}

/// A request's payload, and what it holds of the memory budget (writes of
/// [`LEASED_FROM`] bytes or more); `refused`: the budget could not take
/// the write in time, its bytes were read and dropped.
pub(crate) struct Payload {
    pub bytes: Vec<u8>,
    pub lease: Lease,
    pub refused: bool,
}

/// Payloads at least this long take their bytes from the memory budget
/// (shorter ones are bounded per connection by `max_in_flight`).
const LEASED_FROM: usize = 64 << 10;

/// Read one request: header, then its payload (bounded: writes up to the
/// configured maximum, everything else up to 1 MiB; with a `budget`, a
/// long payload first takes its bytes from it). Waiting for its first
/// byte has no limit (a client may keep an idle connection); once it has
/// begun, the rest of the header must come within `stall`, and every read
/// of the payload must bring bytes within `stall`, or the connection is
/// given up (a client that stops mid-request holds nothing for long).
async fn read_request<R: AsyncRead + Unpin>(
    r: &mut R,
    limits: Option<(usize, &Budget)>,
    stall: Duration,
) -> Result<(Header, Payload), ConnError> {
    let mut hb = [0u8; HEADER_LEN];
    if r.read(&mut hb[..1]).await? == 0 {
        return Err(ConnError::Io(std::io::ErrorKind::UnexpectedEof.into()));
    }
    let stalled = || stalled(stall);
    in_time(stall, r.read_exact(&mut hb[1..]))
        .await
        .ok_or_else(stalled)??;
    let h = Header::parse(&hb);
    let n = decode::check_len(&h, limits.map_or(decode::MAX_PAYLOAD, |l| l.0))
        .map_err(ConnError::Protocol)?;
    let mut lease = Lease::default();
    if let Some((_, budget)) = limits.filter(|_| n >= LEASED_FROM && h.code == req::WRITE) {
        match budget.lease(n).await {
            Some(l) => lease = l,
            None => {
                drain(r, n, stall).await?;
                return Ok((
                    h,
                    Payload {
                        bytes: Vec::new(),
                        lease,
                        refused: true,
                    },
                ));
            }
        }
    }
    let mut payload = Vec::with_capacity(n);
    while payload.len() < n {
        let want = (n - payload.len()) as u64;
        match in_time(stall, (&mut *r).take(want).read_buf(&mut payload)).await {
            None => return Err(stalled()),
            Some(Ok(0)) => return Err(ConnError::Io(std::io::ErrorKind::UnexpectedEof.into())),
            Some(r) => {
                r?;
            }
        }
    }
    Ok((
        h,
        Payload {
            bytes: payload,
            lease,
            refused: false,
        },
    ))
}

/// A request that brought no bytes for `stall`.
fn stalled(stall: Duration) -> ConnError {
    ConnError::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("request stalled for {stall:?}"),
    ))
}

/// Read and drop `n` payload bytes (a request refused before its payload
/// was taken), each read bringing bytes within `stall`.
async fn drain<R: AsyncRead + Unpin>(
    r: &mut R,
    n: usize,
    stall: Duration,
) -> Result<(), ConnError> {
    let mut scratch = vec![0u8; n.min(64 << 10)];
    let mut left = n;
    while left > 0 {
        let k = left.min(scratch.len());
        match tokio::time::timeout(stall, r.read(&mut scratch[..k])).await {
            Err(_) => return Err(stalled(stall)),
            Ok(Ok(0)) => return Err(ConnError::Io(std::io::ErrorKind::UnexpectedEof.into())),
            Ok(r) => left -= r?,
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn run<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    stream: S,
    core: Option<Core>,
    cfg: Arc<XrootdConfig>,
    local: std::net::SocketAddr,
    peer: std::net::SocketAddr,
    tls: bool,
    first: Option<(Header, Payload)>,
) -> Result<(), ConnError> {
    let (max_write, stall) = (cfg.max_write, cfg.request_stall);
    let budget = cfg.buffers.clone();
    let (rd, wr) = tokio::io::split(stream);
    let out = Out::new(wr, stall);
    let sess = Arc::new(Session::new(core, cfg, local, peer, tls));
    let mut rd = BufReader::with_capacity(64 << 10, rd);
    let mut next = first;
    let slots = Arc::new(tokio::sync::Semaphore::new(sess.cfg.max_in_flight.max(1)));
    // One waiter for the whole connection (registering one per request
    // cost more than the stat it served).
    let gone = out.gone();
    tokio::pin!(gone);
    let result = loop {
        // A slot before the next request is read: at the limit, the
        // client waits (TCP) until one of its requests finishes.
        let permit = tokio::select! {
            biased;
            p = Arc::clone(&slots).acquire_owned() => p,
            _ = &mut gone => break Ok(()),
        };
        let Ok(permit) = permit else {
            break Ok(());
        };
        let (h, payload) = match next.take() {
            Some(r) => r,
            None => match tokio::select! {
                biased;
                r = read_request(&mut rd, Some((max_write, &budget)), stall) => r,
                // A reply stalled or failed: stop reading as well.
                _ = &mut gone => break Ok(()),
            } {
                Ok(r) => r,
                Err(ConnError::Io(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                    break Ok(())
                }
                Err(ConnError::Protocol(m)) => {
                    // Say why before closing (the stream id is unknown).
                    let _ = out
                        .send(error_reply(
                            [0, 0],
                            &XrdError::new(err::INVALID_REQUEST, m.clone()),
                        ))
                        .await;
                    break Err(ConnError::Protocol(m));
                }
                Err(e) => break Err(e),
            },
        };
        if payload.refused {
            // The file fails as a whole (a hole in it must never be
            // committed as zeros).
            let msg = format!(
                "insufficient memory to take a write of {} bytes now (errno 12)",
                h.dlen
            );
            let e = XrdError::new(err::NO_MEMORY, msg);
            if !ops::write::refuse(&sess, &out, &h, e).await {
                break Ok(());
            }
            continue;
        }
        let slot = ops::Slot::new(permit, sess.cfg.max_in_flight.max(1), &sess.cfg.stats);
        if !ops::dispatch(&sess, &out, h, payload.bytes, payload.lease, slot).await {
            break Ok(());
        }
    };
    sess.close_all();
    if result.is_err() {
        out.shutdown().await;
    }
    // Requests still running write their replies; the socket closes when
    // the last of them drops its `Out`.
    result
}

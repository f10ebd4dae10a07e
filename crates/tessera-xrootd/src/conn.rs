//! One connection: handshake, `kXR_protocol` (and the in-band switch to
//! TLS), then requests read one after another and served concurrently;
//! replies go out through one writer task in whatever order they finish.

use crate::decode;
use crate::error::XrdError;
use crate::idle;
use crate::ops;
use crate::proto::{self, err, pflags, req, Header, HANDSHAKE_LEN, HEADER_LEN};
use crate::reply::{error_reply, in_time, Out};
use crate::session::Session;
use crate::XrootdConfig;
use std::sync::Arc;
use std::time::Duration;
use tessera_core::{Budget, Core, Lease, Share};
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
    mark: tessera_core::ConnMark,
    stop: tokio::sync::watch::Receiver<bool>,
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
    // The metadata service of a scale-out setup redirects: it says so
    // (kXR_LBalServer, kXR_isManager) so that clients come back to it when
    // a gateway fails; everything else is a data server.
    let manager = cfg.role.is_manager();
    let server_type: i32 = if manager { 0 } else { 1 };
    reply[12..16].copy_from_slice(&server_type.to_be_bytes());
    sock.write_all(&reply).await?;

    // kXR_protocol comes first (XrdCl sends it with the handshake); it
    // decides whether the socket switches to TLS.
    let (h, payload) = tokio::time::timeout(HANDSHAKE_TIMEOUT, read_first(&mut sock))
        .await
        .map_err(|_| ConnError::Timeout)??;
    if h.code != req::PROTOCOL {
        return run(
            sock,
            core,
            cfg,
            mark,
            (local, peer),
            false,
            Some((h, payload)),
            stop,
        )
        .await;
    }
    let want_tls = crate::request::Protocol::decode(&h).want_tls;
    // Not kXR_isServer as well: XrdCl would then name the metadata
    // service, not the failed gateway, in `tried=`.
    let mut flags = if manager {
        pflags::IS_MANAGER
    } else {
        pflags::IS_SERVER
    };
    if cfg.tls.is_some() {
        flags |= pflags::HAVE_TLS;
    }
    flags |= pflags::SUPPGRW;
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
            run(stream, core, cfg, mark, (local, peer), true, None, stop).await
        }
        _ => run(sock, core, cfg, mark, (local, peer), false, None, stop).await,
    }
}

/// A connection over the limits: the handshake and its first request are
/// answered (within a short time) with `kXR_Overloaded` saying why, which
/// XrdCl reports (and may retry later), then it is closed.
pub async fn refuse_connection(mut sock: TcpStream, why: String) {
    let quick = Duration::from_secs(2);
    let _ = tokio::time::timeout(quick, async {
        let mut hs = [0u8; HANDSHAKE_LEN];
        sock.read_exact(&mut hs).await?;
        let mut reply = [0u8; 16];
        reply[4..8].copy_from_slice(&8i32.to_be_bytes());
        reply[8..12].copy_from_slice(&proto::PROTOCOL_VERSION.to_be_bytes());
        reply[12..16].copy_from_slice(&1i32.to_be_bytes());
        sock.write_all(&reply).await?;
        let mut hb = [0u8; HEADER_LEN];
        sock.read_exact(&mut hb).await?;
        let h = Header::parse(&hb);
        let mut body = err::OVERLOADED.to_be_bytes().to_vec();
        body.extend_from_slice(format!("server busy: {why}; try again later").as_bytes());
        body.push(0);
        sock.write_all(&proto::response_header(
            h.stream,
            proto::status::ERROR,
            body.len(),
        ))
        .await?;
        sock.write_all(&body).await?;
        sock.shutdown().await
    })
    .await;
}

/// A request's payload, and what it holds of the memory budget (payloads
/// of [`LEASED_FROM`] bytes or more); `refused`: the payload was read and
/// dropped, and the request is answered with this error.
pub(crate) struct Payload {
    pub bytes: Vec<u8>,
    pub lease: Lease,
    pub refused: Option<XrdError>,
}

/// Payloads at least this long take their bytes from the memory budget
/// as they arrive (shorter ones are bounded per connection by
/// `max_in_flight`).
const LEASED_FROM: usize = 64 << 10;

/// The longest payload a request may carry before its connection has
/// logged in (a login's, a credential's): nothing is leased for a client
/// that has not shown who it is.
pub const PRELOGIN_MAX: usize = 64 << 10;

/// What bounds the requests of a connection that has begun its session.
pub(crate) struct Limits<'a> {
    pub max_write: usize,
    pub budget: &'a Budget,
    pub sess: &'a Session,
    /// Longest wait for more of a payload once it has begun.
    pub body_timeout: Duration,
}

/// Read one request: header, then its payload. Waiting for its first
/// byte has no limit here (the caller bounds idle time); once it has
/// begun, the rest of the header must come within `stall`. Without
/// `limits` (before the session exists) and before login, a payload is at
/// most [`PRELOGIN_MAX`]. A write's payload is taken only for a file this
/// connection has open for writing (else it is read and dropped, refused);
/// a long payload takes its bytes from the memory budget as they arrive,
/// under the connection's share (and a write's under its writer's
/// identity's), never as announced; every read of it must bring bytes
/// within the body timeout, or the connection is given up (dropping what
/// it held, and failing its files).
async fn read_request<R: AsyncRead + Unpin>(
    r: &mut R,
    limits: Option<Limits<'_>>,
    stall: Duration,
) -> Result<(Header, Payload), ConnError> {
    let mut hb = [0u8; HEADER_LEN];
    if r.read(&mut hb[..1]).await? == 0 {
        return Err(ConnError::Io(std::io::ErrorKind::UnexpectedEof.into()));
    }
    in_time(stall, r.read_exact(&mut hb[1..]))
        .await
        .ok_or_else(|| stalled(stall))??;
    let h = Header::parse(&hb);
    let plain = |bytes| Payload {
        bytes,
        lease: Lease::default(),
        refused: None,
    };
    let Some(l) = limits.filter(|l| l.sess.logged_in()) else {
        let n = decode::check_len(&h, PRELOGIN_MAX).map_err(ConnError::Protocol)?;
        if n > PRELOGIN_MAX {
            return Err(ConnError::Protocol(format!(
                "a request before login carries at most {PRELOGIN_MAX} bytes"
            )));
        }
        return Ok((h, plain(read_small(r, n, stall).await?)));
    };
    let n = decode::check_len(&h, l.max_write).map_err(ConnError::Protocol)?;
    let mut shares = vec![l.sess.share.clone()];
    if matches!(h.code, req::WRITE | req::PGWRITE) {
        match l.sess.write_share(h.fhandle()) {
            Some(s) => shares.push(s),
            None => {
                drain(r, n, l.body_timeout).await?;
                let e = XrdError::new(
                    err::FILE_NOT_OPEN,
                    "no file is open for writing with this handle",
                );
                return Ok((
                    h,
                    Payload {
                        refused: Some(e),
                        ..plain(Vec::new())
                    },
                ));
            }
        }
    }
    if n < LEASED_FROM {
        return Ok((h, plain(read_small(r, n, l.body_timeout).await?)));
    }
    let shares: Vec<&Share> = shares.iter().collect();
    // The capacity is only address space until bytes land in it; what
    // they take of the budget is leased ahead of them a step at a time
    // (256 KiB, then as much again as has arrived), so a payload holds at
    // most twice what it has brought, and bytes go from the socket into
    // it directly (no copy through the connection's buffer, no regrowth).
    let mut payload: Vec<u8> = Vec::with_capacity(n);
    let mut lease = Lease::default();
    while payload.len() < n {
        let ahead = n.min((payload.len() * 2).max(LEASE_STEP));
        if ahead > lease.bytes() {
            match l.budget.lease_shared(ahead - lease.bytes(), &shares).await {
                Some(more) => lease.merge(more),
                None => {
                    drop(lease);
                    drain(r, n - payload.len(), l.body_timeout).await?;
                    let msg = format!(
                        "insufficient memory to take a write of {} bytes now (errno 12)",
                        h.dlen
                    );
                    let e = XrdError::new(err::NO_MEMORY, msg);
                    return Ok((
                        h,
                        Payload {
                            refused: Some(e),
                            ..plain(Vec::new())
                        },
                    ));
                }
            }
        }
        let room = (ahead - payload.len()) as u64;
        match in_time(l.body_timeout, (&mut *r).take(room).read_buf(&mut payload)).await {
            None => return Err(stalled(l.body_timeout)),
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
            refused: None,
        },
    ))
}

/// The first lease of a long payload; later ones double what is held.
const LEASE_STEP: usize = 256 << 10;

/// Read a payload of `n` bytes (short: bounded by the caller) whole.
async fn read_small<R: AsyncRead + Unpin>(
    r: &mut R,
    n: usize,
    stall: Duration,
) -> Result<Vec<u8>, ConnError> {
    let mut payload = vec![0u8; n];
    let mut got = 0;
    while got < n {
        match in_time(stall, r.read(&mut payload[got..])).await {
            None => return Err(stalled(stall)),
            Some(Ok(0)) => return Err(ConnError::Io(std::io::ErrorKind::UnexpectedEof.into())),
            Some(r) => got += r?,
        }
    }
    Ok(payload)
}

/// The request that comes with the handshake (`kXR_protocol`, or another
/// one before any session): short payloads only.
async fn read_first<R: AsyncRead + Unpin>(r: &mut R) -> Result<(Header, Payload), ConnError> {
    let mut hb = [0u8; HEADER_LEN];
    r.read_exact(&mut hb).await?;
    let h = Header::parse(&hb);
    let n = decode::check_len(&h, PRELOGIN_MAX).map_err(ConnError::Protocol)?;
    if n > PRELOGIN_MAX {
        return Err(ConnError::Protocol(format!(
            "a request before login carries at most {PRELOGIN_MAX} bytes"
        )));
    }
    let bytes = read_small(r, n, HANDSHAKE_TIMEOUT).await?;
    Ok((
        h,
        Payload {
            bytes,
            lease: Lease::default(),
            refused: None,
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
// long-fn: the connection loop: reading, leasing, dispatching, idle limits and the drain are one state machine.
async fn run<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    stream: S,
    core: Option<Core>,
    cfg: Arc<XrootdConfig>,
    mark: tessera_core::ConnMark,
    (local, peer): (std::net::SocketAddr, std::net::SocketAddr),
    tls: bool,
    first: Option<(Header, Payload)>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<(), ConnError> {
    let (max_write, stall, body_timeout) = (cfg.max_write, cfg.request_stall, cfg.body_timeout);
    let budget = cfg.buffers.clone();
    let (rd, wr) = tokio::io::split(stream);
    let out = Out::new(wr, stall);
    let sess = Arc::new(Session::new(core, cfg, local, peer, tls, mark));
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
        if next.is_none() {
            // Shutting down: a connection with no open file and nothing in
            // flight closes now; one with open files goes on until they
            // are closed (its transfers finish) or the drain time is over.
            let quiet = || {
                sess.open_files() == 0
                    && slots.available_permits() + 1 >= sess.cfg.max_in_flight.max(1)
            };
            if *stop.borrow() && quiet() {
                break Ok(());
            }
            // Between requests: idle limits (a client that logged in and
            // went quiet gives its descriptor back).
            let idle = tokio::select! {
                biased;
                r = idle::next_request(&mut rd, &sess, &slots) => r,
                _ = &mut gone => break Ok(()),
                _ = stop.changed(), if !*stop.borrow() => continue,
            };
            match idle {
                Ok(()) => {}
                Err(idle::Idle::Closed) => break Ok(()),
                Err(idle::Idle::TimedOut(d)) => {
                    tracing::debug!(%peer, ?d, "xroot connection idle: closed");
                    sess.cfg
                        .stats
                        .idle_closed
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    break Ok(());
                }
            }
        }
        let (h, payload) = match next.take() {
            Some(r) => r,
            None => match tokio::select! {
                biased;
                r = read_request(&mut rd, Some(Limits { max_write, budget: &budget, sess: &sess, body_timeout }), stall) => r,
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
        if let Some(e) = payload.refused {
            // The file fails as a whole (a hole in it must never be
            // committed as zeros).
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
    out.end();
    if result.is_err() {
        out.shutdown().await;
    }
    // Requests still running write their replies; the socket closes when
    // the last of them drops its `Out`.
    result
}

//! One module per request (or per small family of requests); `dispatch`
//! routes a request to it. Requests that touch an open file being written
//! are queued to that file's task in arrival order; namespace lookups, and
//! a short read that is its connection's only request, are served in line;
//! everything else runs as its own task, so many requests are in flight
//! per connection.

pub mod cluster;
pub mod dirlist;
pub mod locate;
pub mod login;
pub mod mkdir;
pub mod mv;
pub mod open;
pub mod query;
pub mod read;
pub mod readv;
pub mod rm;
pub mod stat;
pub mod truncate;
pub mod write;

use crate::error::XrdError;
use crate::proto::{err, req, Header};
use crate::reply::Out;
use crate::session::Session;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tessera_types::Identity;

/// One of a connection's request slots (see `XrootdConfig::max_in_flight`),
/// held while its request is served; counted in `Stats::in_flight`.
pub struct Slot {
    permit: tokio::sync::OwnedSemaphorePermit,
    /// The connection's number of slots.
    slots: usize,
    stats: Arc<crate::Stats>,
}

impl Slot {
    /// A slot of a connection with `slots` of them.
    pub fn new(
        permit: tokio::sync::OwnedSemaphorePermit,
        slots: usize,
        stats: &Arc<crate::Stats>,
    ) -> Slot {
        stats.in_flight.fetch_add(1, Ordering::Relaxed);
        Slot {
            permit,
            slots,
            stats: Arc::clone(stats),
        }
    }

    /// Whether no other request of its connection is being served.
    fn alone(&self) -> bool {
        self.permit.semaphore().available_permits() + 1 >= self.slots
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.stats.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Route one request, holding `slot` until it is answered. Returns false
/// when the connection must close.
pub async fn dispatch(
    s: &Arc<Session>,
    out: &Out,
    h: Header,
    p: Vec<u8>,
    lease: tessera_core::Lease,
    slot: Slot,
) -> bool {
    let st = h.stream;
    // Before login only the session requests are allowed.
    if !s.logged_in() && !matches!(h.code, req::PROTOCOL | req::LOGIN | req::PING) {
        return out
            .error(st, &XrdError::new(err::INVALID_REQUEST, "login first"))
            .await;
    }
    // A session does not outlive the token it logged in with: every
    // request is refused with the auth error, and the connection closed,
    // so that the client logs in again with a fresh token.
    if let Some(e) = s.token_expired() {
        let _ = out.error(st, &e).await;
        return false;
    }
    if matches!(s.cfg.mode, crate::Mode::Gateway { .. })
        && !matches!(
            h.code,
            req::PROTOCOL
                | req::LOGIN
                | req::AUTH
                | req::PING
                | req::ENDSESS
                | req::SET
                | req::OPEN
                | req::READ
                | req::READV
                | req::WRITE
                | req::SYNC
                | req::CLOSE
        )
        && !(matches!(h.code, req::TRUNCATE | req::STAT) && (p.is_empty() || p == b"\0"))
    {
        return cluster::to_mgm(s, out, &h).await;
    }
    match h.code {
        req::PROTOCOL => out.result(st, login::protocol(s, &h)).await,
        req::LOGIN => out.result(st, login::login(s, &h, &p)).await,
        req::AUTH => out.result(st, login::auth(s, &h, &p).await).await,
        req::PING | req::ENDSESS | req::SET | req::PREPARE => out.ok(st, Vec::new()).await,
        req::WRITE | req::SYNC | req::CLOSE => write::queue(s, out, &h, p, lease).await,
        req::TRUNCATE if p.is_empty() => write::queue(s, out, &h, p, lease).await,
        req::FATTR
        | req::BIND
        | req::PGREAD
        | req::PGWRITE
        | req::WRITEV
        | req::SIGVER
        | req::GPFILE
        | req::CHKPOINT => {
            out.error(
                st,
                &XrdError::new(
                    err::UNSUPPORTED,
                    format!("request {} is not supported", h.code),
                ),
            )
            .await
        }
        // Namespace lookups answer from the store's caches in microseconds:
        // served in line, they skip a task hand-off.
        req::STAT | req::LOCATE if !p.is_empty() => {
            serve(s, out, h, p).await;
            true
        }
        // A short read that is the connection's only request (a client
        // reading one piece at a time, as the Python bindings and ROOT
        // without its cache do) is served in line too: from memory it is
        // done in microseconds, and nothing else of this client waits
        // behind it. Several in flight (xrdcp), each runs as its own task.
        req::READ if read::is_short(&h) && slot.alone() => {
            serve(s, out, h, p).await;
            true
        }
        _ => {
            let (s, out) = (Arc::clone(s), out.clone());
            tokio::spawn(async move {
                serve(&s, &out, h, p).await;
                drop(slot);
            });
            true
        }
    }
}

/// Requests that run as their own task; one carrying `authz=` runs as
/// its token's identity (refused with `kXR_NotAuthorized` if invalid).
async fn serve(s: &Arc<Session>, out: &Out, h: Header, p: Vec<u8>) {
    match crate::token::request_identity(s, &p).await {
        Ok(None) => serve_as(s, &s.who(), out, h, p).await,
        Ok(Some(who)) => serve_as(s, &who, out, h, p).await,
        Err(e) => {
            out.error(h.stream, &e).await;
        }
    }
}

/// One request, served as `who` (the session's identity, or the token of
/// its own `authz=`), passed to every handler that decides anything.
async fn serve_as(s: &Arc<Session>, who: &Arc<Identity>, out: &Out, h: Header, p: Vec<u8>) {
    let st = h.stream;
    let r = match h.code {
        req::STAT => return stat::stat(s, who, out, &h, &p).await,
        req::STATX => stat::statx(s, who, &p).await,
        req::OPEN => match open::open(s, who, out, &h, &p).await {
            Ok(open::Opened::Sent) => return,
            Ok(open::Opened::Reply(b)) => Ok(b),
            Err(e) => Err(e),
        },
        req::READ => return read::read(s, out, &h).await,
        req::READV => return readv::readv(s, out, st, &p).await,
        req::DIRLIST => return dirlist::dirlist(s, who, out, &h, &p).await,
        req::MKDIR => mkdir::mkdir(s, who, &h, &p).await,
        req::RM => rm::rm(s, who, &p).await,
        req::RMDIR => rm::rmdir(s, who, &p).await,
        req::MV => mv::mv(s, who, &h, &p).await,
        req::CHMOD => mkdir::chmod(s, who, &h, &p).await,
        req::QUERY => query::query(s, who, &h, &p).await,
        req::LOCATE => locate::locate(s, who, &p).await,
        req::TRUNCATE => truncate::by_path(s, who, &h, &p).await,
        code => Err(XrdError::new(
            err::INVALID_REQUEST,
            format!("unknown request code {code}"),
        )),
    };
    out.result(st, r).await;
}

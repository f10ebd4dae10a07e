//! One module per request (or per small family of requests); `dispatch`
//! routes a request to it. Requests that touch an open file being written
//! are queued to that file's task in arrival order; namespace lookups, and
//! a short read that is its connection's only request, are served in line;
//! everything else runs as its own task, so many requests are in flight
//! per connection.

pub mod cluster;
pub mod dirlist;
pub mod fed;
mod fedlist;
pub mod locate;
pub mod login;
pub mod mkdir;
pub mod mv;
pub mod open;
pub mod pgread;
pub mod pgwrite;
pub mod query;
pub mod read;
pub mod readv;
pub mod rm;
mod rules;
pub mod stat;
pub mod truncate;
pub mod update;
pub mod write;

use crate::error::XrdError;
use crate::proto::{err, req, Header};
use crate::reply::Out;
use crate::request::{self, Request};
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
/// when the connection must close. The request is decoded here, once
/// (`request::decode`); handlers get its typed parts.
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
    let r = match request::decode(&h, p) {
        Ok(r) => r,
        Err(e) => return out.error(st, &XrdError::from(e)).await,
    };
    let role = &s.cfg.role;
    if (role.is_gateway() && !on_gateway(&r)) || (role.is_standby() && !on_standby(&r)) {
        return cluster::elsewhere(s, out, &h).await;
    }
    // A connection that only pings is idle (its idle limit runs on).
    if !matches!(r, Request::Noop) {
        s.worked();
    }
    match r {
        Request::Protocol => out.result(st, login::protocol(s)).await,
        Request::Login { pid, user, app } => out.result(st, login::login(s, &user, pid, app)).await,
        Request::Auth { credtype, cred } if credtype == "gsi" => {
            crate::gsi::answer(s, out, st, &cred).await
        }
        Request::Auth { credtype, cred } => {
            let r = login::auth(s, &credtype, &cred).await;
            match &r {
                Err(e) if credtype == "ztn" => out.note_refused_login(Some(format!(
                    "the token offered at login was refused: {}",
                    e.msg
                ))),
                Ok(_) if credtype == "ztn" => out.note_refused_login(None),
                _ => {}
            }
            out.result(st, r).await
        }
        Request::Noop => out.ok(st, Vec::new()).await,
        Request::Write { fh, offset, data } => {
            write::queue(s, out, st, fh, write::OnHandle::Write(offset, data), lease).await
        }
        Request::PgWrite {
            fh,
            offset,
            retry,
            payload,
        } => {
            s.cfg.stats.pgwrites.fetch_add(1, Ordering::Relaxed);
            let op = write::OnHandle::PgWrite(offset, payload, retry);
            write::queue(s, out, st, fh, op, lease).await
        }
        Request::Sync(fh) => write::queue(s, out, st, fh, write::OnHandle::Sync, lease).await,
        Request::Close(fh) => write::queue(s, out, st, fh, write::OnHandle::Close, lease).await,
        Request::Truncate(request::Truncate::Handle(fh, size)) => {
            write::queue(s, out, st, fh, write::OnHandle::Truncate(size), lease).await
        }
        Request::Unsupported(code) => out.error(st, &unknown(code)).await,
        // Namespace lookups answer from the store's caches in microseconds:
        // served in line, they skip a task hand-off.
        r @ (Request::Stat(_) | Request::Locate(_)) => {
            serve(s, out, st, r).await;
            true
        }
        // A short read that is the connection's only request (a client
        // reading one piece at a time, as the Python bindings and ROOT
        // without its cache do) is served in line too: from memory it is
        // done in microseconds, and nothing else of this client waits
        // behind it. Several in flight (xrdcp), each runs as its own task.
        Request::Read(rd) if read::is_short(&rd) && slot.alone() => {
            serve(s, out, st, Request::Read(rd)).await;
            true
        }
        r => {
            let (s, out) = (Arc::clone(s), out.clone());
            tokio::spawn(async move {
                serve(&s, &out, st, r).await;
                drop(slot);
            });
            true
        }
    }
}

/// Whether a data gateway serves `r` itself (the rest goes to the
/// metadata service).
fn on_gateway(r: &Request) -> bool {
    matches!(
        r,
        Request::Protocol
            | Request::Login { .. }
            | Request::Auth { .. }
            | Request::Noop
            | Request::Open(_)
            | Request::Read(_)
            | Request::Readv(_)
            | Request::PgRead { .. }
            | Request::Write { .. }
            | Request::PgWrite { .. }
            | Request::Sync(_)
            | Request::Close(_)
            | Request::Truncate(request::Truncate::Handle(..))
            | Request::Stat(request::Stat::Handle(_))
    )
}

/// Requests a standby metadata node answers itself: the session's.
fn on_standby(r: &Request) -> bool {
    matches!(
        r,
        Request::Protocol | Request::Login { .. } | Request::Auth { .. } | Request::Noop
    )
}

/// The answer to a request code we do not serve: unsupported when the
/// protocol defines it, invalid otherwise.
fn unknown(code: u16) -> XrdError {
    match code {
        req::FATTR | req::BIND | req::WRITEV | req::SIGVER | req::GPFILE | req::CHKPOINT => {
            request::unsupported(code).into()
        }
        code => XrdError::new(err::INVALID_REQUEST, format!("unknown request code {code}")),
    }
}

/// Requests that run as their own task; one carrying `authz=` runs as
/// its token's identity (refused with `kXR_NotAuthorized` if invalid).
async fn serve(s: &Arc<Session>, out: &Out, st: [u8; 2], r: Request) {
    match crate::token::request_identity(s, r.authz()).await {
        Ok(None) => serve_as(s, &s.who(), out, st, r).await,
        Ok(Some(who)) => serve_as(s, &who, out, st, r).await,
        Err(e) => {
            out.error(st, &e).await;
        }
    }
}

/// One request, served as `who` (the session's identity, or the token of
/// its own `authz=`), passed to every handler that decides anything.
async fn serve_as(s: &Arc<Session>, who: &Arc<Identity>, out: &Out, st: [u8; 2], r: Request) {
    // A request without credentials makes its connection take one of the
    // anonymous places (once); at their limit it is refused and the
    // connection closed.
    if who.is_anonymous() {
        if let Err(e) = s.count_anonymous() {
            out.error(st, &e).await;
            out.close_now();
            return;
        }
    }
    // The operator's access rules (bans, allow lists, redirects, stalls).
    if rules::turned_away(s, who, out, st, &r).await {
        return;
    }
    // A path under a federated view goes to one of its endpoints.
    let viewed = match &r {
        Request::Open(o) => Some((&o.target, o.writes())),
        Request::Stat(request::Stat::Path(t)) => Some((t, false)),
        _ => None,
    };
    if let Some((t, writing)) = viewed {
        if fed::redirect(s, who, out, st, t, writing).await.is_some() {
            return;
        }
    }
    if let Request::Dirlist { target, with_stat } = &r {
        if fedlist::dirlist(s, who, out, st, target, *with_stat)
            .await
            .is_some()
        {
            return;
        }
    }
    // Every replica of a path under a view.
    if let Request::Locate(Some(t)) = &r {
        if let Some(answer) = fed::locate(s, who, t).await {
            out.result(st, answer).await;
            return;
        }
    }
    if let Some(e) = fed::unsupported(s, &r) {
        out.error(st, &e).await;
        return;
    }
    let r = match r {
        Request::Stat(what) => return stat::stat(s, who, out, st, what).await,
        Request::Statx(targets) => stat::statx(s, who, targets).await,
        Request::Open(o) => match open::open(s, who, out, st, o).await {
            Ok(open::Opened::Sent) => return,
            Ok(open::Opened::Reply(b)) => Ok(b),
            Err(e) => Err(e),
        },
        Request::Read(rd) => return read::read(s, out, st, rd).await,
        Request::PgRead { read: rd, retry } => {
            if retry {
                // The client found a page bad: it is read (and verified
                // against the stored checksums) again.
                tracing::info!(offset = rd.offset, len = rd.len, "pgread retry");
            }
            return pgread::pgread(s, out, st, rd).await;
        }
        Request::Readv(list) => return readv::readv(s, out, st, list).await,
        Request::Dirlist { target, with_stat } => {
            return dirlist::dirlist(s, who, out, st, target, with_stat).await
        }
        Request::Mkdir {
            target,
            parents,
            mode,
        } => mkdir::mkdir(s, who, target, parents, mode).await,
        Request::Rm(t) => rm::rm(s, who, t).await,
        Request::Rmdir(t) => rm::rmdir(s, who, t).await,
        Request::Mv { src, dst } => mv::mv(s, who, src, dst).await,
        Request::Chmod { target, mode } => mkdir::chmod(s, who, target, mode).await,
        Request::Query(q) => query::query(s, who, q).await,
        Request::Locate(t) => locate::locate(s, who, t).await,
        Request::Truncate(request::Truncate::Path(t, size)) => {
            truncate::by_path(s, who, out, t, size).await
        }
        other => Err(XrdError::new(
            err::INVALID_REQUEST,
            format!("request not served here: {}", other.name()),
        )),
    };
    out.result(st, r).await;
}

//! How long a connection may wait between requests: a client that has
//! not logged in has the handshake's 30 s; one that has, and has no file
//! open and nothing in flight, `idle_timeout` (as xrootd's `xrd.timeout
//! idle`; an anonymous one at most a minute); one with files open,
//! `idle_open_timeout`; while requests of it are being served, no limit.
//! Pings are no work: a connection that only pings is idle.

use crate::session::Session;
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt};
use tokio::sync::Semaphore;

/// Before login, the next request must come within this.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(30);
/// An anonymous session with nothing open or in flight may wait this long
/// between requests (pings do not count) at most.
pub const ANONYMOUS_IDLE: Duration = Duration::from_secs(60);

pub enum Idle {
    /// The client closed the connection (or it failed).
    Closed,
    /// Nothing came for this long.
    TimedOut(Duration),
}

/// Wait until the next request's first byte is there; `slots` are the
/// connection's request slots (one is held for the next request).
pub async fn next_request<R: AsyncBufRead + Unpin>(
    rd: &mut R,
    sess: &Session,
    slots: &Semaphore,
) -> Result<(), Idle> {
    loop {
        let busy = slots.available_permits() + 1 < sess.cfg.max_in_flight.max(1);
        let limit = if !sess.logged_in() {
            LOGIN_TIMEOUT
        } else if busy || sess.open_files() > 0 {
            sess.cfg.idle_open_timeout
        } else if sess.who().is_anonymous() {
            ANONYMOUS_IDLE.min(sess.cfg.idle_timeout)
        } else {
            sess.cfg.idle_timeout
        };
        // Pings are not work: the limit runs from the last request that
        // was (a client that only pings is idle).
        let left = limit.saturating_sub(sess.since_work());
        if left.is_zero() && !busy {
            return Err(Idle::TimedOut(limit));
        }
        match tokio::time::timeout(left.max(Duration::from_millis(1)), rd.fill_buf()).await {
            Ok(Ok([])) | Ok(Err(_)) => return Err(Idle::Closed),
            Ok(Ok(_)) => return Ok(()),
            // Still serving a request (a long read): not idle.
            Err(_) if slots.available_permits() + 1 < sess.cfg.max_in_flight.max(1) => {
                sess.worked();
                continue;
            }
            Err(_) => return Err(Idle::TimedOut(limit)),
        }
    }
}

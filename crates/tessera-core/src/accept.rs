//! The accept loop the XRootD and HTTPS listeners share: each connection
//! the limits admit is served on a task of its own (its place in the
//! limits held until it ends); one over the limits is handed to the
//! front-end to refuse in its protocol. When the server stops: the
//! listener closes at once, the connections in flight get the drain time
//! to finish, and what is left then is cut.

use crate::{ConnLimits, ConnMark};
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// How a front-end takes connections.
pub struct Acceptor {
    pub listener: TcpListener,
    pub limits: ConnLimits,
    /// How long connections in flight may go on after the stop.
    pub drain: Duration,
    /// For the log: "xroot", "https".
    pub name: &'static str,
}

impl Acceptor {
    /// Accept until `stop` turns true; `serve` serves an admitted
    /// connection, `refuse` answers one over the limits (with why).
    pub async fn run<S, SF, R, RF>(self, mut stop: watch::Receiver<bool>, serve: S, refuse: R)
    where
        S: Fn(TcpStream, SocketAddr, ConnMark) -> SF,
        SF: Future<Output = ()> + Send + 'static,
        R: Fn(TcpStream, String) -> RF,
        RF: Future<Output = ()> + Send + 'static,
    {
        let Acceptor {
            listener,
            limits,
            drain,
            name,
        } = self;
        // The connections, so that what is left after the drain is cut.
        let mut live = tokio::task::JoinSet::new();
        loop {
            while live.try_join_next().is_some() {}
            let (sock, peer) = tokio::select! {
                r = listener.accept() => match r {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::warn!(error = %e, "{name} accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                _ = stop.changed() => {
                    if !*stop.borrow() {
                        continue;
                    }
                    // Stop accepting; let what is in flight finish.
                    drop(listener);
                    let left = limits.drained(drain).await;
                    if left > 0 {
                        tracing::warn!(left, "{name}: drain time over, closing what is left");
                    }
                    live.shutdown().await;
                    return;
                }
            };
            match limits.admit(peer.ip()) {
                Ok(guard) => {
                    let conn = serve(sock, peer, guard.mark());
                    live.spawn(async move {
                        conn.await;
                        drop(guard);
                    });
                }
                Err(why) => {
                    tracing::debug!(%peer, %why, "{name} connection refused");
                    tokio::spawn(refuse(sock, why.to_string()));
                }
            }
        }
    }
}

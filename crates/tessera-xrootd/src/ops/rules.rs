//! The operator's access rules in XRootD's words: what
//! `Core::admit` decides before a request touches the namespace, written
//! as `kXR_wait` (bans, allow lists, stalls: XrdCl waits and sends the
//! request again) or `kXR_redirect` to the rule's host (its port, or
//! the one the client used here). Requests on an open handle are not
//! asked: a file already open finishes.

use crate::ops::cluster::host_port;
use crate::reply::Out;
use crate::request::{self, Query, Request};
use crate::session::Session;
use tessera_core::rules::{Admit, Op};
use tessera_types::{Identity, NsPath};

/// What the rules see of `r`: its class, and the path.
fn scope(r: &Request) -> Option<(Op, Option<&NsPath>)> {
    Some(match r {
        Request::Open(o) if o.writes() => (Op::OpenWrite, Some(&o.target.path)),
        Request::Open(o) => (Op::OpenRead, Some(&o.target.path)),
        Request::Stat(request::Stat::Path(t))
        | Request::Query(Query::Checksum(t))
        | Request::Locate(Some(t)) => (Op::Stat, Some(&t.path)),
        Request::Dirlist { target: t, .. } => (Op::List, Some(&t.path)),
        Request::Statx(ts) => (Op::Stat, ts.iter().flatten().map(|t| &t.path).next()),
        // The rest of kXR_query (config, stats, space) as a stat: a
        // banned client is told to wait for those too.
        Request::Stat(request::Stat::Vfs) | Request::Locate(None) | Request::Query(_) => {
            (Op::Stat, None)
        }
        Request::Rm(t) | Request::Rmdir(t) => (Op::Delete, Some(&t.path)),
        Request::Truncate(request::Truncate::Path(t, _))
        | Request::Mkdir { target: t, .. }
        | Request::Chmod { target: t, .. }
        | Request::Mv { src: t, .. } => (Op::Change, Some(&t.path)),
        _ => return None,
    })
}

/// Answer `r` with a wait or a redirect if a rule says so (true: the
/// answer was sent).
pub async fn turned_away(s: &Session, who: &Identity, out: &Out, st: [u8; 2], r: &Request) -> bool {
    let (Some((op, path)), Ok(core)) = (scope(r), s.core()) else {
        return false;
    };
    match core.admit(who, s.peer.ip(), op, path, s.app()) {
        Admit::Go => false,
        Admit::Wait { secs, why, .. } => {
            out.wait(st, secs, &why).await;
            true
        }
        Admit::Redirect { to, .. } => {
            // A host without a port: the port the client used here.
            let (host, port) = match to.contains(':') {
                true => host_port(&to),
                false => (to, s.local.port()),
            };
            out.redirect(st, &host, port, "").await;
            true
        }
    }
}

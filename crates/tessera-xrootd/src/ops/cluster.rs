//! Scale-out and standby answers in XRootD's words: what
//! `tessera-route` decides (a gateway with a capability, the metadata
//! service, the active node, a wait) written as `kXR_redirect` and
//! `kXR_wait`; on a gateway, an open with a capability.

use crate::error::XrdError;
use crate::ops::write;
use crate::proto::{open as o, Header};
use crate::reply::Out;
use crate::request::Open;
use crate::session::{Handle, OpenRead, Session, Target};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tessera_route::{Ask, Op, Opened, Proto, Route};
use tessera_types::Identity;

/// CGI key carrying the capability.
pub const CAP_KEY: &str = "tessera.cap";

/// Split `host:port` (`[v6]:port` too; the port defaults to 1094).
pub fn host_port(a: &str) -> (String, u16) {
    match a.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => (
            h.trim_start_matches('[').trim_end_matches(']').to_string(),
            p.parse().unwrap_or(1094),
        ),
        _ => (a.to_string(), 1094),
    }
}

/// A request this node does not serve (a gateway's or a standby's): to
/// the node that does, or a wait.
pub async fn elsewhere(s: &Session, out: &Out, h: &Header) -> bool {
    match s.cfg.role.route_other(Proto::Xroot) {
        Route::Node { addr } => {
            let (host, port) = host_port(&addr);
            s.cfg.stats.redirects.fetch_add(1, Ordering::Relaxed);
            out.redirect(h.stream, &host, port, "").await
        }
        Route::Wait { secs, why } => out.wait(h.stream, secs, &why).await,
        Route::Here | Route::Gateway { .. } => true,
    }
}

/// On the metadata service: answer an open with a redirect to a gateway
/// (or a stalled file's wait): true when that reply was sent, false to
/// serve it here.
pub async fn mgm_open(
    s: &Session,
    who: &Arc<Identity>,
    out: &Out,
    st: [u8; 2],
    req: &Open,
    writing: bool,
) -> Result<bool, XrdError> {
    if !s.cfg.role.is_mgm() {
        return Ok(false);
    }
    let t = &req.target;
    // A client back from a failed redirect names where it failed
    // (`tried=host,...`, XrdCl): not there again.
    let tried_cgi = t.cgi("tried").unwrap_or_default();
    let tried_cgi = tried_cgi.replace("%2C", ",").replace("%2c", ",");
    let tried: Vec<&str> = tried_cgi.split(',').map(str::trim).collect();
    let op = if writing {
        Op::Write {
            overwrite: req.options & o::DELETE != 0,
            mode: req.file_mode(),
            // Made before, when kXR_mkpath asks (`open.rs`).
            parents: false,
        }
    } else {
        Op::Read
    };
    let ask = Ask {
        who,
        op,
        path: &t.path,
        peer: s.peer.ip(),
        tried: &tried,
        proto: Proto::Xroot,
    };
    match s.cfg.role.route_open(s.core()?, &ask).await? {
        Route::Gateway { addr, cap } => {
            let (host, port) = host_port(&addr);
            let mut cgi = format!("{CAP_KEY}={cap}");
            if let Some(a) = t.cgi("oss.asize") {
                cgi.push_str(&format!("&oss.asize={a}"));
            }
            s.cfg.stats.redirects.fetch_add(1, Ordering::Relaxed);
            Ok(out.redirect(st, &host, port, &cgi).await)
        }
        Route::Wait { secs, why } => {
            out.wait(st, secs, &why).await;
            Ok(true)
        }
        Route::Here | Route::Node { .. } => Ok(false),
    }
}

/// On a gateway: open with a capability.
pub async fn gateway_open(
    s: &Arc<Session>,
    out: &Out,
    t: &Target,
    writing: bool,
) -> Result<([u8; 4], String), XrdError> {
    let Some(g) = s.cfg.role.gateway() else {
        return Err(XrdError::new(
            crate::proto::err::SERVER_ERROR,
            "not a gateway",
        ));
    };
    let hint: u64 = t.cgi("oss.asize").and_then(|v| v.parse().ok()).unwrap_or(0);
    let cap = g.verify(t.cgi(CAP_KEY))?;
    match g.open(cap, &t.path, s.peer.ip(), writing, hint).await? {
        Opened::Write { ws, holder, mode } => {
            let tag = s.flow_tag(t);
            write::register(s, out, ws, (mode, tag), &holder)
        }
        Opened::Read { rs, holder } => {
            let stat = crate::statfmt::stat_string(rs.inode(), &holder, &s.cfg.names);
            let watch = s.watch(&holder, t, rs.size(), false);
            let fh = s.add(Handle::Read(Arc::new(OpenRead {
                watch,
                rs: Arc::new(rs),
                path: t.path.clone(),
                share: s.cfg.buffers.identity_share_of(&holder.limit_key()),
            })))?;
            Ok((fh, stat))
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn host_port_splits_names_and_v6() {
        use super::host_port;
        assert_eq!(host_port("gw.example:1095"), ("gw.example".into(), 1095));
        assert_eq!(host_port("gw.example"), ("gw.example".into(), 1094));
        assert_eq!(host_port("[::1]:8443"), ("::1".into(), 8443));
    }
}

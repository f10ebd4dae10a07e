//! Scale-out opens. On the metadata service, `kXR_open` is answered with a
//! `kXR_redirect` to a live data gateway carrying a capability for exactly
//! that file and mode; on a gateway, `kXR_open` needs such a capability,
//! and every other path request is redirected back to the metadata service.

use crate::error::XrdError;
use crate::ops::write;
use crate::proto::{err, open as o, Header};
use crate::reply::Out;
use crate::request::Open;
use crate::session::{Handle, OpenRead, Session, Target};
use crate::Mode;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tessera_cluster::{Access, Capability};
use tessera_types::Identity;

/// CGI key carrying the capability.
pub const CAP_KEY: &str = "tessera.cap";

/// Split `host:port` (the port defaults to 1094).
pub fn host_port(a: &str) -> (String, u16) {
    match a.rsplit_once(':') {
        Some((h, p)) if p.parse::<u16>().is_ok() => (
            h.trim_start_matches('[').trim_end_matches(']').to_string(),
            p.parse().unwrap_or(1094),
        ),
        _ => (a.to_string(), 1094),
    }
}

/// A gateway sends path requests other than `open` to the metadata service.
pub async fn to_mgm(s: &Session, out: &Out, h: &Header) -> bool {
    let Mode::Gateway { mgm, .. } = &s.cfg.mode else {
        return true;
    };
    let (host, port) = host_port(&mgm.get());
    s.cfg.stats.redirects.fetch_add(1, Ordering::Relaxed);
    out.redirect(h.stream, &host, port, "").await
}

/// On a standby metadata node: send the request to the active one, or
/// have the client ask again in a second while none is known.
pub async fn to_active(s: &Session, out: &Out, h: &Header) -> bool {
    let Mode::Standby { active } = &s.cfg.mode else {
        return true;
    };
    match active.get().and_then(|(_, a)| a.xrootd) {
        Some(to) => {
            let (host, port) = host_port(&to);
            s.cfg.stats.redirects.fetch_add(1, Ordering::Relaxed);
            out.redirect(h.stream, &host, port, "").await
        }
        None => {
            out.wait(h.stream, 1, "no active metadata node yet (a takeover)")
                .await
        }
    }
}

/// On the metadata service: answer an open with a redirect (or, for a
/// file that cannot be read now, `sys.stall.unavailable`'s wait): true
/// when that reply was sent, false to serve it here (no live gateway).
pub async fn mgm_open(
    s: &Session,
    who: &Arc<Identity>,
    out: &Out,
    st: [u8; 2],
    o: &Open,
    writing: bool,
) -> Result<bool, XrdError> {
    let (opts, t, mode) = (o.options, &o.target, o.file_mode());
    let Mode::Mgm {
        registry,
        key,
        cap_ttl,
        sites,
    } = &s.cfg.mode
    else {
        return Ok(false);
    };
    // A client back from a failed redirect names where it failed
    // (`tried=host,...`, XrdCl): not there again.
    let tried_cgi = t.cgi("tried").unwrap_or_default();
    let tried_cgi = tried_cgi.replace("%2C", ",").replace("%2c", ",");
    let tried: Vec<&str> = tried_cgi.split(',').map(str::trim).collect();
    let Some(gw) = registry.pick(sites.site_of(s.peer.ip()), &tried) else {
        return Ok(false);
    };
    let who = Arc::clone(who);
    let core = s.core()?;
    let client = s.peer.ip();
    let cap = if writing {
        // The decision a single server makes at the open (scopes, then
        // ACLs and mode bits with the token's groups), made before
        // anything is signed; the gateway's BeginWrite makes it again.
        let overwrite = opts & o::DELETE != 0;
        core.may_write(&who, &t.path, overwrite).await?;
        Capability::write(&t.path, &who, mode, overwrite, client, *cap_ttl)
    } else {
        // Check here what the gateway cannot: existence and permission.
        let i = core.readable(&who, &t.path).await?;
        if let Some(stall) = core.stall_unavailable(&i, &t.path) {
            out.wait(st, stall.secs, &stall.why).await;
            return Ok(true);
        }
        Capability::read(&t.path, &who, &i, client, *cap_ttl)
    };
    let (host, port) = host_port(&gw);
    let mut cgi = format!("{CAP_KEY}={}", key.sign(&cap));
    if let Some(a) = t.cgi("oss.asize") {
        cgi.push_str(&format!("&oss.asize={a}"));
    }
    s.cfg.stats.redirects.fetch_add(1, Ordering::Relaxed);
    Ok(out.redirect(st, &host, port, &cgi).await)
}

/// On a gateway: open with a capability.
pub async fn gateway_open(
    s: &Arc<Session>,
    out: &Out,
    t: &Target,
    writing: bool,
) -> Result<([u8; 4], String), XrdError> {
    let Mode::Gateway {
        data,
        client,
        key,
        advertise,
        ..
    } = &s.cfg.mode
    else {
        return Err(XrdError::new(err::SERVER_ERROR, "not a gateway"));
    };
    let denied = |m: String| XrdError::new(err::NOT_AUTHORIZED, m);
    let text = t.cgi(CAP_KEY).ok_or_else(|| {
        denied("this is a data gateway: open files through the metadata service".into())
    })?;
    let cap = key.verify(text).map_err(|e| denied(e.to_string()))?;
    cap.check_target(&t.path, s.peer.ip())
        .map_err(|e| denied(e.to_string()))?;
    // The file is served as exactly the identity the capability names,
    // whatever this connection logged in as.
    let holder = cap
        .holder()
        .ok_or_else(|| denied("malformed capability identity".into()))?;
    let opened = std::time::Instant::now();
    let log = data.session_log(&holder, &t.path, opened);
    match (&cap.access, writing) {
        (Access::Write, true) => {
            let hint: u64 = t.cgi("oss.asize").and_then(|v| v.parse().ok()).unwrap_or(0);
            let plan = client.begin_write(text, hint, advertise).await?;
            let (data, ledger, path) = (
                data.clone(),
                client.ledger(tokio::runtime::Handle::current()),
                t.path.clone(),
            );
            let mut ws =
                tokio::task::spawn_blocking(move || data.start_write(plan, ledger, path, hint))
                    .await
                    .map_err(|e| XrdError::new(err::SERVER_ERROR, e.to_string()))??;
            if let Some(l) = log {
                ws.set_log(l);
            }
            write::register(s, out, ws, cap.mode, &holder)
        }
        (Access::Read, false) => {
            let f = cap
                .file
                .ok_or_else(|| denied("read capability without a file".into()))?;
            let inode = f
                .inode(t.path.name().map(<[u8]>::to_vec).unwrap_or_default())
                .ok_or_else(|| denied("bad file facts in capability".into()))?;
            let stat = crate::statfmt::stat_string(&inode, &holder, &s.cfg.names);
            // Opening reads nothing (the stripes open at the first read).
            let mut rs = data.open_inode(inode)?;
            if let Some(l) = log {
                rs.set_log(l);
            }
            let fh = s.add(Handle::Read(Arc::new(OpenRead {
                rs: Arc::new(rs),
                path: t.path.clone(),
                share: s.cfg.buffers.identity_share_of(&holder.limit_key()),
            })))?;
            Ok((fh, stat))
        }
        _ => Err(denied("the capability is for another access mode".into())),
    }
}

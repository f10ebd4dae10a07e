//! `kXR_open`: read, create/replace for writing, or update an existing
//! file (copy-on-write, `update.rs`); the reply carries the handle and, as
//! XrdCl always asks, the stat.

use crate::error::XrdError;
use crate::ops::cluster;
use crate::ops::write;
use crate::proto::{err, open as o};
use crate::reply::Out;
use crate::request::Open;
use crate::session::{Handle, OpenRead, Session, Target};
use crate::statfmt::stat_string;
use std::sync::Arc;
use tessera_core::ReadOpen;
use tessera_types::Identity;

pub async fn open(
    s: &Arc<Session>,
    who: &Arc<Identity>,
    out: &Out,
    st: [u8; 2],
    req: Open,
) -> Result<Opened, XrdError> {
    let (opts, mode) = (req.options, req.file_mode());
    let t = &req.target;
    let who = Arc::clone(who);
    let writing = opts & (o::NEW | o::DELETE | o::UPDATE | o::APPEND | o::WRITE_ONLY) != 0;
    if s.cfg.role.is_gateway() {
        let (fh, stat) = cluster::gateway_open(s, out, t, writing).await?;
        return Ok(Opened::Reply(reply(fh, opts, &stat)));
    }
    // As the reference server: new files get their parents when kXR_mkpath
    // or kXR_async asks (xrdcp always sends async). Made before a redirect
    // (a gateway makes none); else only when the open finds none.
    let mkpath = writing && opts & (o::NEW | o::DELETE) != 0 && opts & (o::MKPATH | o::ASYNC) != 0;
    if mkpath && s.cfg.role.is_mgm() {
        make_parents(s, &who, t).await?;
    }
    if writing && opts & (o::NEW | o::DELETE) == 0 {
        // Update (or append) of an existing file: a copy-on-write update
        // (`update.rs`), served where the namespace and the data both are.
        if s.cfg.role.is_mgm() {
            return Err(XrdError::new(
                err::UNSUPPORTED,
                "updates in place are not served by a scale-out metadata service yet: open with kXR_delete to replace (errno 95)",
            ));
        }
        let (fh, stat) = crate::ops::update::open(s, &who, t).await?;
        return Ok(Opened::Reply(reply(fh, opts, &stat)));
    }
    if cluster::mgm_open(s, &who, out, st, &req, writing).await? {
        return Ok(Opened::Sent);
    }
    let (fh, stat) = if writing {
        let replace = opts & o::DELETE != 0;
        let new = NewFile {
            mode,
            opts,
            replace,
            hint: t.cgi("oss.asize").and_then(|v| v.parse().ok()).unwrap_or(0),
        };
        match open_new(s, out, st, &who, t, new).await? {
            Err(e) if mkpath && e.kind() == tessera_types::ErrorKind::NotFound => {
                make_parents(s, &who, t).await?;
                open_new(s, out, st, &who, t, new).await??;
            }
            r => r?,
        }
        return Ok(Opened::Sent);
    } else {
        // In line when the namespace records are in memory (opening reads
        // no data); else on the blocking pool.
        let core = s.core()?;
        let opened = match core.open_read_or_stall_nowait(&who, &t.path)? {
            Some(o) => o,
            None => {
                let (core, path, w2) = (core.clone(), t.path.clone(), who.clone());
                tessera_core::blocking(move || core.open_read_or_stall(&w2, &path)).await??
            }
        };
        let rs = match opened {
            ReadOpen::File(rs) => rs,
            ReadOpen::Stall(stall) => {
                out.wait(st, stall.secs, &stall.why).await;
                return Ok(Opened::Sent);
            }
        };
        let stat = stat_string(rs.inode(), &who, &s.cfg.names);
        rs.pace_with(core.pace(&who, s.app(), false));
        let watch = s.watch(&who, t, rs.size(), false);
        let fh = s.add(Handle::Read(Arc::new(OpenRead {
            watch,
            rs: Arc::new(rs),
            path: t.path.clone(),
            share: s.cfg.buffers.identity_share_of(&who.limit_key()),
        })))?;
        (fh, stat)
    };
    Ok(Opened::Reply(reply(fh, opts, &stat)))
}

/// How an open was answered.
pub enum Opened {
    /// The reply body (handle and stat).
    Reply(Vec<u8>),
    /// A redirect or a wait was sent; nothing more to say.
    Sent,
}

fn reply(fh: [u8; 4], opts: u16, stat: &str) -> Vec<u8> {
    let mut b = fh.to_vec();
    if opts & o::RETSTAT != 0 {
        b.extend_from_slice(&0i32.to_be_bytes()); // cpsize
        b.extend_from_slice(&[0u8; 4]); // cptype
        b.extend_from_slice(stat.as_bytes());
        b.push(0);
    }
    b
}

/// How a file is opened for writing.
#[derive(Clone, Copy)]
struct NewFile {
    mode: u32,
    opts: u16,
    replace: bool,
    /// The size the client announced (`oss.asize`), 0 if none.
    hint: u64,
}

/// Open `t` for writing on the blocking pool; the thread that opened the
/// file registers it and answers. The open's own refusal is given back
/// (inner result) unanswered, so that a missing parent can be made first.
async fn open_new(
    s: &Arc<Session>,
    out: &Out,
    st: [u8; 2],
    who: &Arc<Identity>,
    t: &Target,
    new: NewFile,
) -> Result<Result<(), tessera_core::CoreError>, XrdError> {
    let (core, path, who) = (s.core()?.clone(), t.path.clone(), Arc::clone(who));
    let (s2, out2, stream) = (Arc::clone(s), out.clone(), st);
    let tag = s.flow_tag(t);
    let NewFile {
        mode,
        opts,
        replace,
        hint,
    } = new;
    tessera_core::blocking(move || {
        let ws = match core.open_write(&who, &path, mode, replace, hint) {
            Ok(ws) => ws,
            Err(e) => return Ok(Err(e)),
        };
        let (fh, stat) = write::register(&s2, &out2, ws, (mode, tag), &who)?;
        out2.result_from_pool(stream, Ok(reply(fh, opts, &stat)));
        Ok(Ok(()))
    })
    .await?
}

/// Make the parents of `t` (`mkdir -p`) unless its parent exists.
async fn make_parents(s: &Session, who: &Identity, t: &Target) -> Result<(), XrdError> {
    Ok(s.core()?.make_parents(who, &t.path).await?)
}

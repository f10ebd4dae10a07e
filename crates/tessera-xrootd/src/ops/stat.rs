//! `kXR_stat` (by path or open handle) and `kXR_statx`.

use crate::error::XrdError;
use crate::proto::{err, sflags};
use crate::reply::Out;
use crate::request::{Fh, Stat};
use crate::session::{Handle, Session, Target};
use crate::statfmt::stat_string;
use std::sync::Arc;
use tessera_core::{Inode, Unlogged};
use tessera_types::Identity;

/// Answer `kXR_stat`. A path's access-log record and metrics are made
/// after the reply is sent (the client does not wait for them).
pub async fn stat(s: &Session, who: &Arc<Identity>, out: &Out, st: [u8; 2], what: Stat) {
    let who = Arc::clone(who);
    let (r, logged_when_dropped) = match what {
        Stat::Vfs => (vfs(s), None),
        Stat::Handle(fh) => (by_handle(s, fh, &who), None),
        Stat::Path(t) => by_path(s, &who, t).await,
    };
    out.result(st, r).await;
    drop(logged_when_dropped);
}

async fn by_path<'a>(
    s: &'a Session,
    who: &'a Identity,
    t: Target,
) -> (Result<Vec<u8>, XrdError>, Option<Unlogged<'a>>) {
    let core = match s.core() {
        Ok(c) => c,
        Err(e) => return (Err(e), None),
    };
    let (r, done) = core.stat_log_later(who, t.path).await;
    let r = r.map(|i| reply(&i, s, who)).map_err(XrdError::from);
    (r, Some(done))
}

fn by_handle(s: &Session, fh: Fh, who: &Identity) -> Result<Vec<u8>, XrdError> {
    match s.get(fh)? {
        Handle::Read(r) => Ok(reply(r.rs.inode(), s, who)),
        Handle::Update(u) => Ok(reply(&crate::ops::update::stat_inode(&u), s, who)),
        Handle::Write(w) => Err(XrdError::new(
            err::UNSUPPORTED,
            format!("{} is being written; stat it after close", w.path.display()),
        )),
    }
}

/// The stat string, NUL-terminated.
fn reply(inode: &Inode, s: &Session, who: &Identity) -> Vec<u8> {
    let mut b = stat_string(inode, who, &s.cfg.names).into_bytes();
    b.push(0);
    b
}

/// `kXR_stat` with `kXR_vfs` (`xrdfs statvfs`): "nrw frw urw nstg fstg
/// ustg": nodes with writable space, its free megabytes and percent used,
/// and the same for staging space (none). The namespace is one node to the
/// client, whatever the path: the space of every registered filesystem.
fn vfs(s: &Session) -> Result<Vec<u8>, XrdError> {
    let (total, free) = super::query::space_totals(s)?;
    let used_pct = (u128::from(total.saturating_sub(free)) * 100)
        .checked_div(u128::from(total))
        .unwrap_or(0);
    let nodes = u8::from(free > 0);
    let mut b = format!("{nodes} {} {used_pct} 0 0 0", free >> 20).into_bytes();
    b.push(0);
    Ok(b)
}

/// One flag byte per newline-separated path (`kXR_other` when missing).
pub async fn statx(
    s: &Session,
    who: &Arc<Identity>,
    targets: Vec<Option<Target>>,
) -> Result<Vec<u8>, XrdError> {
    let who = Arc::clone(who);
    let mut out = Vec::new();
    for t in targets {
        let flag = match t {
            Some(t) => match s.core()?.stat(&who, t.path).await {
                Ok(i) if i.is_dir() => sflags::IS_DIR,
                Ok(_) => 0,
                Err(_) => sflags::OTHER,
            },
            None => sflags::OTHER,
        };
        out.push(flag as u8);
    }
    Ok(out)
}

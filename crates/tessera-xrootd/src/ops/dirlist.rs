//! `kXR_dirlist`: names, or with `kXR_dstat` the lead-in `".\n0 0 0 0\n"`
//! then `name\nstat\n` pairs; split into `kXR_oksofar` parts on entry
//! boundaries, the last `\n` of the whole listing replaced by NUL.

use crate::error::XrdError;
use crate::proto::{err, status};
use crate::reply::{Out, Piece};
use crate::session::{Session, Target};
use crate::statfmt::stat_string;
use std::sync::Arc;
use tessera_types::Identity;

const PAGE: usize = 4096;
const PART: usize = 64 << 10;

pub async fn dirlist(
    s: &Session,
    who: &Arc<Identity>,
    out: &Out,
    st: [u8; 2],
    t: Target,
    dstat: bool,
) {
    if let Err(e) = list(s, who, out, st, t, dstat).await {
        out.error(st, &e).await;
    }
}

async fn list(
    s: &Session,
    who: &Arc<Identity>,
    out: &Out,
    st: [u8; 2],
    t: Target,
    dstat: bool,
) -> Result<(), XrdError> {
    let who = Arc::clone(who);
    let dir = s.core()?.stat(&who, t.path.clone()).await?;
    if !dir.is_dir() {
        return Err(XrdError::new(
            err::NOT_FILE,
            format!("{} is not a directory", t.path.display()),
        ));
    }
    let mut buf: Vec<u8> = Vec::new();
    if dstat {
        buf.extend_from_slice(b".\n0 0 0 0\n");
    }
    let mut any = false;
    let mut after: Option<Vec<u8>> = None;
    loop {
        let page = s
            .core()?
            .list(&who, t.path.clone(), after.clone(), PAGE)
            .await?;
        let Some(last) = page.last() else { break };
        after = Some(last.name.clone());
        for e in &page {
            any = true;
            buf.extend_from_slice(&e.name);
            buf.push(b'\n');
            if dstat {
                buf.extend_from_slice(stat_string(e, &who, &s.cfg.names).as_bytes());
                buf.push(b'\n');
            }
            if buf.len() >= PART
                && !out
                    .pieces(
                        st,
                        status::OKSOFAR,
                        vec![Piece::Bytes(std::mem::take(&mut buf))],
                    )
                    .await
            {
                return Ok(());
            }
        }
        if page.len() < PAGE {
            break;
        }
    }
    if !any {
        out.ok(st, Vec::new()).await;
        return Ok(());
    }
    match buf.last_mut() {
        Some(b) => *b = 0,
        None => buf.push(0),
    }
    out.ok(st, buf).await;
    Ok(())
}

//! `kXR_dirlist` of a directory under a federated view: the listing every
//! endpoint of the view gives (WebDAV, S3, XRootD), merged by `tessera-fed`,
//! in the reply format of `dirlist.rs` (with `kXR_dstat`: the lead-in, then
//! `name\nid size flags mtime\n` pairs, ids and times 0 as the endpoints'
//! are not known, directories `kXR_isDir`).

use crate::error::XrdError;
use crate::proto::{err, status};
use crate::reply::{Out, Piece};
use crate::session::{Session, Target};
use tessera_types::Identity;

const PART: usize = 64 << 10;
/// `kXR_isDir | kXR_readable` and `kXR_readable` (stat flags).
const DIR_FLAGS: u32 = 2 | 16;
const FILE_FLAGS: u32 = 16;

/// List `t` if it is under a view (`None`: it is not).
pub async fn dirlist(
    s: &Session,
    who: &Identity,
    out: &Out,
    st: [u8; 2],
    t: &Target,
    dstat: bool,
) -> Option<bool> {
    let v = super::fed::ask(s, who, t)?;
    Some(match listing(v, t, dstat).await {
        Ok(parts) => {
            let n = parts.len();
            for (i, p) in parts.into_iter().enumerate() {
                let code = if i + 1 < n { status::OKSOFAR } else { 0 };
                if !out.pieces(st, code, vec![Piece::Bytes(p)]).await {
                    return Some(false);
                }
            }
            true
        }
        Err(e) => out.error(st, &e).await,
    })
}

async fn listing(
    v: Result<tessera_route::ViewAsk<'_>, XrdError>,
    t: &Target,
    dstat: bool,
) -> Result<Vec<Vec<u8>>, XrdError> {
    let v = v?;
    let m = v.listing(&v.at.rel).await?;
    if !m.dir {
        return Err(XrdError::new(
            err::NOT_FILE,
            format!("{} is not a directory", t.path.display()),
        ));
    }
    let mut parts = Vec::new();
    let mut buf: Vec<u8> = Vec::new();
    if dstat {
        buf.extend_from_slice(b".\n0 0 0 0\n");
    }
    for (name, (dir, size)) in &m.children {
        buf.extend_from_slice(tessera_fed::decode(name).as_bytes());
        buf.push(b'\n');
        if dstat {
            let flags = if *dir { DIR_FLAGS } else { FILE_FLAGS };
            let size = size.unwrap_or(if *dir { 4096 } else { 0 });
            buf.extend_from_slice(format!("0 {size} {flags} 0\n").as_bytes());
        }
        if buf.len() >= PART {
            parts.push(std::mem::take(&mut buf));
        }
    }
    if m.children.is_empty() {
        // An empty directory: an empty answer, as `dirlist.rs` gives.
        parts.push(Vec::new());
        return Ok(parts);
    }
    if buf.is_empty() {
        buf = parts.pop().unwrap_or_default();
    }
    match buf.last_mut() {
        Some(b) => *b = 0,
        None => buf.push(0),
    }
    parts.push(buf);
    Ok(parts)
}

//! `kXR_stat` (by path or open handle) and `kXR_statx`.

use crate::error::XrdError;
use crate::proto::{err, sflags, Header};
use crate::session::{Handle, Session, Target};
use crate::statfmt::stat_string;

pub async fn stat(s: &Session, h: &Header, p: &[u8]) -> Result<Vec<u8>, XrdError> {
    let who = s.who();
    if h.u8_at(4) & 1 != 0 {
        return vfs(s);
    }
    let inode = if p.is_empty() || p == b"\0" {
        match s.get(h.at(16, 4).try_into().expect("4 bytes"))? {
            Handle::Read(r) => r.rs.inode().clone(),
            Handle::Write(w) => {
                return Err(XrdError::new(
                    err::UNSUPPORTED,
                    format!("{} is being written; stat it after close", w.path.display()),
                ))
            }
        }
    } else {
        let t = Target::parse(p)?;
        s.core()?.stat(&who, t.path).await?
    };
    let mut b = stat_string(&inode, &who, &s.cfg.names).into_bytes();
    b.push(0);
    Ok(b)
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
pub async fn statx(s: &Session, p: &[u8]) -> Result<Vec<u8>, XrdError> {
    let who = s.who();
    let mut out = Vec::new();
    for line in p
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty() && *l != b"\0")
    {
        let flag = match Target::parse(line) {
            Ok(t) => match s.core()?.stat(&who, t.path).await {
                Ok(i) if i.is_dir() => sflags::IS_DIR,
                Ok(_) => 0,
                Err(_) => sflags::OTHER,
            },
            Err(_) => sflags::OTHER,
        };
        out.push(flag as u8);
    }
    Ok(out)
}

//! `kXR_mv`: `src` + one space + `dst`, `arg1len` giving the length of
//! `src` (0: split at the first space).

use crate::error::XrdError;
use crate::proto::Header;
use crate::session::{Session, Target};
use tessera_core::RenameFlags;

pub async fn mv(s: &Session, h: &Header, p: &[u8]) -> Result<Vec<u8>, XrdError> {
    let n = h.u16_at(18) as usize;
    let split = if n > 0 && n < p.len() && p[n] == b' ' {
        n
    } else {
        p.iter()
            .position(|b| *b == b' ')
            .ok_or_else(|| XrdError::invalid("mv needs a source and a destination"))?
    };
    let src = Target::parse(&p[..split])?;
    let dst = Target::parse(&p[split + 1..])?;
    s.core
        .rename(&s.who(), src.path, dst.path, RenameFlags::default())
        .await?;
    Ok(Vec::new())
}

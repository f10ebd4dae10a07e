//! `kXR_mv`: `src` + one space + `dst`, `arg1len` giving the length of
//! `src` (0: split at the first space).

use crate::error::XrdError;
use crate::session::{Session, Target};
use tessera_core::RenameFlags;
use tessera_types::Identity;

/// Split the `kXR_mv` payload into source and destination.
pub fn split(arg1len: usize, p: &[u8]) -> Result<(Target, Target), XrdError> {
    let at = if arg1len > 0 && arg1len < p.len() && p[arg1len] == b' ' {
        arg1len
    } else {
        p.iter()
            .position(|b| *b == b' ')
            .ok_or_else(|| XrdError::invalid("mv needs a source and a destination"))?
    };
    Ok((Target::parse(&p[..at])?, Target::parse(&p[at + 1..])?))
}

pub async fn mv(
    s: &Session,
    who: &Identity,
    src: Target,
    dst: Target,
) -> Result<Vec<u8>, XrdError> {
    s.core()?
        .rename(who, src.path, dst.path, RenameFlags::default())
        .await?;
    Ok(Vec::new())
}

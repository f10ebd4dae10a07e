//! `kXR_mv`: `src` + one space + `dst`, `arg1len` giving the length of
//! `src` (0: split at the first space).

use crate::error::XrdError;
use crate::session::{Session, Target};
use tessera_core::RenameFlags;
use tessera_types::Identity;

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

//! `kXR_mkdir` (with `kXR_mkdirpath` for parents) and `kXR_chmod`.

use crate::error::XrdError;
use crate::session::{Session, Target};
use tessera_core::SetAttr;
use tessera_types::Identity;

pub async fn mkdir(
    s: &Session,
    who: &Identity,
    t: Target,
    parents: bool,
    mode: u32,
) -> Result<Vec<u8>, XrdError> {
    let mode = match mode {
        0 => 0o755,
        m => m,
    };
    s.core()?.mkdir(who, t.path, mode, parents).await?;
    Ok(Vec::new())
}

pub async fn chmod(s: &Session, who: &Identity, t: Target, mode: u32) -> Result<Vec<u8>, XrdError> {
    let a = SetAttr {
        mode: Some(mode),
        ..SetAttr::default()
    };
    s.core()?.setattr(who, t.path, a).await?;
    Ok(Vec::new())
}

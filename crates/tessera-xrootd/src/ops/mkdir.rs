//! `kXR_mkdir` (with `kXR_mkdirpath` for parents) and `kXR_chmod`.

use crate::error::XrdError;
use crate::proto::Header;
use crate::session::{Session, Target};
use tessera_core::SetAttr;
use tessera_types::Identity;

pub async fn mkdir(s: &Session, who: &Identity, h: &Header, p: &[u8]) -> Result<Vec<u8>, XrdError> {
    let t = Target::parse(p)?;
    let parents = h.u8_at(4) & 1 != 0;
    let mode = match u32::from(h.u16_at(18)) & 0o7777 {
        0 => 0o755,
        m => m,
    };
    s.core()?.mkdir(who, t.path, mode, parents).await?;
    Ok(Vec::new())
}

pub async fn chmod(s: &Session, who: &Identity, h: &Header, p: &[u8]) -> Result<Vec<u8>, XrdError> {
    let t = Target::parse(p)?;
    let mode = u32::from(h.u16_at(18)) & 0o7777;
    let a = SetAttr {
        mode: Some(mode),
        ..SetAttr::default()
    };
    s.core()?.setattr(who, t.path, a).await?;
    Ok(Vec::new())
}

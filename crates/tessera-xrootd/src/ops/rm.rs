//! `kXR_rm` (files only) and `kXR_rmdir` (empty directories only).

use crate::error::XrdError;
use crate::proto::err;
use crate::session::{Session, Target};
use std::sync::Arc;
use tessera_types::Identity;

pub async fn rm(s: &Session, who: &Arc<Identity>, t: Target) -> Result<Vec<u8>, XrdError> {
    let who = Arc::clone(who);
    let i = s.core()?.stat(&who, t.path.clone()).await?;
    if i.is_dir() {
        return Err(XrdError::is_directory(&t.path));
    }
    s.core()?.remove(&who, t.path, false).await?;
    Ok(Vec::new())
}

pub async fn rmdir(s: &Session, who: &Arc<Identity>, t: Target) -> Result<Vec<u8>, XrdError> {
    let who = Arc::clone(who);
    let i = s.core()?.stat(&who, t.path.clone()).await?;
    if !i.is_dir() {
        return Err(XrdError::new(
            err::NOT_FILE,
            format!("{} is not a directory (errno 20)", t.path.display()),
        ));
    }
    s.core()?.remove(&who, t.path, false).await?;
    Ok(Vec::new())
}

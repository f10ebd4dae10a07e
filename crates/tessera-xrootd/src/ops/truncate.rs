//! `kXR_truncate` by path (by handle it goes to the file's write task).

use crate::error::XrdError;
use crate::session::{Session, Target};
use std::sync::Arc;
use tessera_types::Identity;

pub async fn by_path(
    s: &Session,
    who: &Arc<Identity>,
    t: Target,
    size: u64,
) -> Result<Vec<u8>, XrdError> {
    let core = s.core()?;
    core.truncate_within(who, &t.path, size, &s.cfg.buffers)
        .await?;
    Ok(Vec::new())
}

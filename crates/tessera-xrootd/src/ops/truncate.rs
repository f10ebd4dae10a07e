//! `kXR_truncate` by path (by handle it goes to the file's write task).

use crate::error::XrdError;
use crate::proto::err;
use crate::session::{Session, Target};
use std::sync::Arc;
use tessera_types::Identity;

/// Bytes of the memory budget a truncate by path holds while it runs: its
/// 8 MiB copy buffer and a group of the rewritten file (RAIN 4+2: 6 MiB).
/// It bounds how many rewrites run at once across all connections.
pub const REWRITE_MEMORY: usize = 16 << 20;

pub async fn by_path(
    s: &Session,
    who: &Arc<Identity>,
    t: Target,
    size: u64,
) -> Result<Vec<u8>, XrdError> {
    // Decided before any memory is taken: a client that may not rewrite
    // the file holds nothing of the budget, even for a moment.
    let (core, who) = (s.core()?.clone(), Arc::clone(who));
    core.may_write(&who, &t.path, true).await?;
    let Some(lease) = s.cfg.buffers.lease(REWRITE_MEMORY).await else {
        return Err(XrdError::new(
            err::NO_MEMORY,
            "insufficient memory to rewrite the file now (errno 12)",
        ));
    };
    tokio::task::spawn_blocking(move || {
        let r = core.truncate(&who, &t.path, size);
        drop(lease);
        r
    })
    .await
    .map_err(|e| XrdError::new(err::SERVER_ERROR, e.to_string()))??;
    Ok(Vec::new())
}

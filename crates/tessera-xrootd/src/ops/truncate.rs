//! `kXR_truncate` by path (by handle it goes to the file's write task).

use crate::error::XrdError;
use crate::reply::Out;
use crate::session::{Session, Target};
use std::sync::Arc;
use tessera_types::Identity;

/// The rewrite is given up (nothing changed) when the connection ends
/// before it is done: a client that left, a drain.
pub async fn by_path(
    s: &Session,
    who: &Arc<Identity>,
    out: &Out,
    t: Target,
    size: u64,
) -> Result<Vec<u8>, XrdError> {
    let core = s.core()?;
    let budget = s.cfg.buffers.for_identity(&who.limit_key());
    tokio::select! {
        r = core.truncate_within(who, &t.path, size, &budget) => r?,
        _ = out.ended() => {
            return Err(XrdError::new(crate::proto::err::SERVER_ERROR, "the connection ended"))
        }
    };
    Ok(Vec::new())
}

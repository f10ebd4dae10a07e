//! `kXR_truncate` by path (by handle it goes to the file's write task).

use crate::error::XrdError;
use crate::proto::{err, Header};
use crate::session::{Session, Target};

pub async fn by_path(s: &Session, h: &Header, p: &[u8]) -> Result<Vec<u8>, XrdError> {
    let t = Target::parse(p)?;
    let size = h.i64_at(8);
    if size < 0 {
        return Err(XrdError::invalid("negative size"));
    }
    let (core, who) = (s.core()?.clone(), s.who());
    tokio::task::spawn_blocking(move || core.truncate(&who, &t.path, size as u64))
        .await
        .map_err(|e| XrdError::new(err::SERVER_ERROR, e.to_string()))??;
    Ok(Vec::new())
}

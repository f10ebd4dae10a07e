//! Zeros a request makes the server write: a truncate that grows a file,
//! a write that starts past a file's end (the gap reads as zeros) are
//! written out as zero bytes (stripes have no holes), so the cost of a
//! 40-byte request is bounded here: at most [`MAX_ZERO_FILL`] bytes past
//! what the file holds, per request, besides the quota every written
//! byte is charged to. The reference server makes a sparse file instead;
//! a client that needs more zeros writes them.

use crate::CoreError;
use tessera_types::ErrorKind;

/// Zero bytes one request may add past a file's data (1 GiB).
pub const MAX_ZERO_FILL: u64 = 1 << 30;

/// Refuse growing a file whose data ends at `end` to `to` with zeros
/// when that is more than [`MAX_ZERO_FILL`]; `what` names the request.
pub fn check(end: u64, to: u64, what: &str) -> Result<(), CoreError> {
    if to <= end || to - end <= MAX_ZERO_FILL {
        return Ok(());
    }
    Err(CoreError::Remote {
        kind: ErrorKind::Unsupported,
        msg: format!(
            "{what} would write {} MiB of zeros (the file's data ends at {end}): \
             sparse files are not supported, and a request may add at most {} MiB of zeros",
            (to - end) >> 20,
            MAX_ZERO_FILL >> 20
        ),
    })
}

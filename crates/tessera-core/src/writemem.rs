//! The memory a file being written holds, one policy for every front-end:
//! before bytes are appended, what the session's buffers will hold beyond
//! what they have is leased from the process's budget (the bytes a payload
//! already holds are handed over first: they move into the group buffer,
//! so a file never waits on its own queued payloads). Not granted within
//! the budget's wait: the file is aborted (nothing of it becomes visible,
//! its reservation goes back) and the request is told to come back later
//! (`kXR_NoMemory`, HTTP 503 with `Retry-After`).

use crate::{Budget, CoreError, Lease, WriteSession};
use std::sync::Mutex;

/// Lease what appending `len` bytes makes the session in `state` hold
/// (`session` finds it there; `None`: it already failed). On refusal the
/// session is dropped (aborted) and the error says so.
pub async fn lease_for_append<T>(
    state: &Mutex<T>,
    session: impl Fn(&mut T) -> &mut Option<WriteSession>,
    len: u64,
    budget: &Budget,
    held: Option<&mut Lease>,
) -> Result<(), CoreError> {
    let lock = || state.lock().unwrap_or_else(|p| p.into_inner());
    let need = match session(&mut lock()).as_ref() {
        Some(s) => s.memory_wanted(len),
        None => return Err(CoreError::Invalid("write after failure".into())),
    };
    if need == 0 {
        return Ok(());
    }
    let lease = budget.lease_from(need, held).await;
    let mut g = lock();
    let slot = session(&mut g);
    match (lease, slot.as_mut()) {
        (Some(l), Some(s)) => {
            s.hold_memory(l);
            Ok(())
        }
        (None, Some(_)) => {
            *slot = None; // abort now: release the reservation
            Err(CoreError::NoMemory(
                "insufficient memory to take more of this file now: the write is aborted, send it again later".into(),
            ))
        }
        (_, None) => Err(CoreError::Invalid("write after failure".into())),
    }
}

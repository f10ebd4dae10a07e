//! Group commit for directory fsyncs: a stripe made durable by a rename
//! (or created under its final name) needs its directory synced, and many
//! stripes land in the same fan-out directory at once. One fsync started
//! after a rename or create covers it, so writers that changed the
//! directory while another's fsync was running share the next one instead
//! of each paying for their own; a stripe created at open is usually
//! covered by another writer's fsync by the time it is sealed.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

#[derive(Default)]
struct DirState {
    /// Renames registered (a ticket each).
    requested: u64,
    /// Every ticket up to this is durable.
    synced: u64,
    running: bool,
    /// The last fsync failed: its waiters see the error.
    failed: Option<(u64, String)>,
}

type Slot = Arc<(Mutex<DirState>, Condvar)>;

#[derive(Default)]
pub(crate) struct DirSyncer {
    dirs: Mutex<HashMap<PathBuf, Slot>>,
}

/// A change to a directory (a rename into it, a file created in it) that
/// a later [`DirSyncer::wait`] makes durable.
pub(crate) struct Ticket {
    dir: PathBuf,
    slot: Slot,
    n: u64,
}

impl DirSyncer {
    /// Make every rename into `dir` done before this call durable.
    pub(crate) fn sync(&self, dir: &Path) -> std::io::Result<()> {
        self.wait(self.ticket(dir))
    }

    /// How many directories have tickets (tests).
    #[cfg(test)]
    pub(crate) fn dirs_tracked(&self) -> usize {
        self.dirs.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Register a change to `dir` made before this call.
    pub(crate) fn ticket(&self, dir: &Path) -> Ticket {
        let slot = {
            let mut m = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
            if m.len() > 4096 {
                // Forget idle directories now and then.
                m.retain(|_, s| Arc::strong_count(s) > 1);
            }
            Arc::clone(m.entry(dir.to_path_buf()).or_default())
        };
        let n = {
            let mut st = slot.0.lock().unwrap_or_else(|p| p.into_inner());
            st.requested += 1;
            st.requested
        };
        Ticket {
            dir: dir.to_path_buf(),
            slot,
            n,
        }
    }

    /// Return once an fsync of the ticket's directory that started after
    /// the ticket was taken has completed: at once if another writer's
    /// already did, else leading one (or waiting for the one running).
    pub(crate) fn wait(&self, t: Ticket) -> std::io::Result<()> {
        let (lock, cv) = &*t.slot;
        let ticket = t.n;
        let mut st = lock.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if st.synced >= ticket {
                return Ok(());
            }
            if let Some((upto, e)) = &st.failed {
                if *upto >= ticket {
                    return Err(std::io::Error::other(e.clone()));
                }
            }
            if !st.running {
                // Lead: one fsync covers every ticket issued so far.
                st.running = true;
                let upto = st.requested;
                drop(st);
                let r = File::open(&t.dir).and_then(|d| d.sync_all());
                st = lock.lock().unwrap_or_else(|p| p.into_inner());
                st.running = false;
                match &r {
                    Ok(()) => st.synced = st.synced.max(upto),
                    Err(e) => st.failed = Some((upto, e.to_string())),
                }
                cv.notify_all();
                if ticket <= upto {
                    return r;
                }
                continue;
            }
            st = cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn concurrent_syncs_all_return() {
        let d = tempfile::tempdir().expect("tmp");
        let s = Arc::new(DirSyncer::default());
        let hs: Vec<_> = (0..16)
            .map(|_| {
                let (s, p) = (Arc::clone(&s), d.path().to_path_buf());
                std::thread::spawn(move || s.sync(&p))
            })
            .collect();
        for h in hs {
            h.join().expect("thread").expect("sync");
        }
        assert!(s.sync(&d.path().join("missing")).is_err());
    }

    #[test]
    fn a_ticket_covered_by_a_later_fsync_does_not_wait_for_another() {
        let d = tempfile::tempdir().expect("tmp");
        let s = DirSyncer::default();
        let early = s.ticket(d.path());
        // Another writer's sync, started after the early ticket, covers it.
        s.sync(d.path()).expect("sync");
        let slot = Arc::clone(&early.slot);
        let synced = slot.0.lock().expect("lock").synced;
        assert!(synced >= early.n);
        s.wait(early).expect("covered");
        assert_eq!(slot.0.lock().expect("lock").synced, synced, "no new fsync");
    }
}

//! Group commit for directory fsyncs: a stripe made durable by a rename
//! needs its directory synced, and many stripes land in the same fan-out
//! directory at once. One fsync started after a rename covers it, so
//! writers that renamed while another's fsync was running share the next
//! one instead of each paying for their own.

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

impl DirSyncer {
    /// Make every rename into `dir` done before this call durable.
    pub(crate) fn sync(&self, dir: &Path) -> std::io::Result<()> {
        let slot = {
            let mut m = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
            if m.len() > 4096 {
                // Forget idle directories now and then.
                m.retain(|_, s| Arc::strong_count(s) > 1);
            }
            Arc::clone(m.entry(dir.to_path_buf()).or_default())
        };
        let (lock, cv) = &*slot;
        let mut st = lock.lock().unwrap_or_else(|p| p.into_inner());
        st.requested += 1;
        let ticket = st.requested;
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
                let r = File::open(dir).and_then(|d| d.sync_all());
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
}

//! Every call to a filesystem that can hang (CephFS natively or through a
//! FUSE mount, NFS) gets a deadline: the call runs on a thread of its own
//! and the caller waits at most the deadline, then gets
//! [`BackendError::TimedOut`] (the thread is left to finish or hang; its
//! result is dropped). A stopped MDS then fails the operation in bounded
//! time instead of holding a write, its quota reservation and a client
//! for minutes. Stripe data reads and writes go straight through: reads
//! are hedged by the reader (a slow stripe is rebuilt from the others) and
//! data writes to an open file do not wait for the MDS; what does (create,
//! open, seal, remove, listing, statfs, the marker) is bounded.

use crate::{Backend, BackendError, Capacity, ListedStripe, RootId, StripeName};
use crate::{StripeRead, StripeWrite};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// The deadline, in milliseconds, shared by every bounded backend of a
/// process (the `[data] io_timeout_s` setting; changed at run time).
pub type Deadline = Arc<AtomicU64>;

/// A new deadline of `d`.
pub fn deadline(d: Duration) -> Deadline {
    Arc::new(AtomicU64::new(d.as_millis() as u64))
}

/// Run `f` on a thread of its own; wait at most `deadline`.
fn bounded<T: Send + 'static>(
    deadline: &Deadline,
    what: impl FnOnce() -> String,
    f: impl FnOnce() -> Result<T, BackendError> + Send + 'static,
) -> Result<T, BackendError> {
    let d = Duration::from_millis(deadline.load(Ordering::Relaxed).max(1));
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("tessera-io".into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .map_err(|e| BackendError::Unavailable(format!("cannot start an I/O thread: {e}")))?;
    match rx.recv_timeout(d) {
        Ok(r) => r,
        Err(_) => Err(BackendError::TimedOut(format!(
            "{} did not finish within {d:?}",
            what()
        ))),
    }
}

/// A backend whose calls that can hang are bounded by a deadline.
pub struct Bounded {
    inner: Arc<dyn Backend>,
    deadline: Deadline,
}

impl Bounded {
    pub fn new(inner: Arc<dyn Backend>, deadline: Deadline) -> Bounded {
        Bounded { inner, deadline }
    }

    fn call<T: Send + 'static>(
        &self,
        what: &'static str,
        f: impl FnOnce(&dyn Backend) -> Result<T, BackendError> + Send + 'static,
    ) -> Result<T, BackendError> {
        let b = Arc::clone(&self.inner);
        let desc = || format!("{what} on {}", self.inner.describe());
        bounded(&self.deadline, desc, move || f(b.as_ref()))
    }

    fn wrap(&self, w: Box<dyn StripeWrite>) -> Box<dyn StripeWrite> {
        Box::new(BoundedWrite {
            inner: w,
            deadline: Arc::clone(&self.deadline),
            desc: self.inner.describe(),
        })
    }
}

impl Backend for Bounded {
    fn create(
        &self,
        name: &StripeName,
        write_id: u64,
    ) -> Result<Box<dyn StripeWrite>, BackendError> {
        let n = *name;
        let w = self.call("create", move |b| b.create(&n, write_id))?;
        Ok(self.wrap(w))
    }

    fn create_new(
        &self,
        name: &StripeName,
        write_id: u64,
    ) -> Result<Box<dyn StripeWrite>, BackendError> {
        let n = *name;
        let w = self.call("create", move |b| b.create_new(&n, write_id))?;
        Ok(self.wrap(w))
    }

    fn open(&self, name: &StripeName) -> Result<Box<dyn StripeRead>, BackendError> {
        let n = *name;
        self.call("open", move |b| b.open(&n))
    }

    fn open_cached(&self, name: &StripeName) -> Option<Box<dyn StripeRead>> {
        self.inner.open_cached(name)
    }

    fn remove(&self, name: &StripeName, temp_of_write: Option<u64>) -> Result<(), BackendError> {
        let n = *name;
        self.call("remove", move |b| b.remove(&n, temp_of_write))
    }

    fn list(&self) -> Result<Vec<ListedStripe>, BackendError> {
        self.call("listing", |b| b.list())
    }

    fn capacity(&self) -> Result<Capacity, BackendError> {
        self.call("statfs", |b| b.capacity())
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn read_marker(&self) -> Result<Option<String>, BackendError> {
        self.call("reading the marker", |b| b.read_marker())
    }

    fn write_marker(&self, text: &str) -> Result<(), BackendError> {
        let t = text.to_string();
        self.call("writing the marker", move |b| b.write_marker(&t))
    }

    fn root_id(&self) -> Result<RootId, BackendError> {
        self.call("stat of the root", |b| b.root_id())
    }

    fn remote(&self) -> bool {
        true
    }
}

/// A stripe being written on a bounded backend: its data goes straight
/// through, its seal and abort (fsync, rename, unlink) are bounded.
struct BoundedWrite {
    inner: Box<dyn StripeWrite>,
    deadline: Deadline,
    desc: String,
}

impl StripeWrite for BoundedWrite {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), BackendError> {
        self.inner.write_at(offset, data)
    }

    fn write_parts_at(&mut self, offset: u64, parts: &[&[u8]]) -> Result<(), BackendError> {
        self.inner.write_parts_at(offset, parts)
    }

    fn buffered(&mut self) {
        self.inner.buffered()
    }

    fn seal(self: Box<Self>) -> Result<(), BackendError> {
        let (w, desc) = (self.inner, self.desc);
        bounded(
            &self.deadline,
            || format!("seal on {desc}"),
            move || w.seal(),
        )
    }

    fn seal_buffered(self: Box<Self>) -> Result<(), BackendError> {
        let (w, desc) = (self.inner, self.desc);
        bounded(
            &self.deadline,
            || format!("seal on {desc}"),
            move || w.seal_buffered(),
        )
    }

    fn abort(self: Box<Self>) {
        let (w, desc) = (self.inner, self.desc);
        let _ = bounded(
            &self.deadline,
            || format!("abort on {desc}"),
            move || {
                w.abort();
                Ok(())
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A backend whose every call sleeps: a hung mount.
    struct Hung;

    impl Backend for Hung {
        fn create(&self, _: &StripeName, _: u64) -> Result<Box<dyn StripeWrite>, BackendError> {
            std::thread::sleep(Duration::from_secs(5));
            Err(BackendError::Unavailable("late".into()))
        }
        fn open(&self, _: &StripeName) -> Result<Box<dyn StripeRead>, BackendError> {
            std::thread::sleep(Duration::from_secs(5));
            Err(BackendError::Unavailable("late".into()))
        }
        fn remove(&self, _: &StripeName, _: Option<u64>) -> Result<(), BackendError> {
            Ok(())
        }
        fn list(&self) -> Result<Vec<ListedStripe>, BackendError> {
            std::thread::sleep(Duration::from_secs(5));
            Ok(Vec::new())
        }
        fn capacity(&self) -> Result<Capacity, BackendError> {
            Ok(Capacity::default())
        }
        fn describe(&self) -> String {
            "hung".into()
        }
        fn read_marker(&self) -> Result<Option<String>, BackendError> {
            Ok(None)
        }
        fn write_marker(&self, _: &str) -> Result<(), BackendError> {
            Ok(())
        }
        fn root_id(&self) -> Result<RootId, BackendError> {
            Err(BackendError::Unavailable("none".into()))
        }
    }

    #[test]
    fn a_hung_call_ends_at_the_deadline() {
        let b = Bounded::new(Arc::new(Hung), deadline(Duration::from_millis(200)));
        let t0 = std::time::Instant::now();
        let e = b.list().expect_err("timed out");
        assert!(matches!(e, BackendError::TimedOut(_)), "{e}");
        assert!(e.to_string().contains("listing on hung"), "{e}");
        assert!(b.open(&StripeName::new(1, 0)).is_err());
        assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
        // Quick calls are answered as they are.
        assert_eq!(b.capacity().expect("statfs"), Capacity::default());
    }
}

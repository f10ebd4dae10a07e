//! Every call to a filesystem that can hang (CephFS natively or through a
//! FUSE mount, NFS) gets a deadline: the call runs on a thread of its own
//! and the caller waits at most the deadline, then gets
//! [`BackendError::TimedOut`] (the thread is left to finish or hang; its
//! result is dropped). A stopped MDS then fails the operation in bounded
//! time instead of holding a write, its quota reservation and a client
//! for minutes. Everything is bounded (create, open, data writes, seal,
//! remove, listing, statfs, the marker) except stripe data reads: those
//! are hedged by the reader (a slow stripe is rebuilt from the others).

use crate::{Backend, BackendError, Capacity, ListedStripe, RootId, StripeName};
use crate::{StripeRead, StripeWrite};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// The deadline, in milliseconds, shared by every bounded backend of a
/// process (the `[data] io_timeout` setting; changed at run time).
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

    fn wrap(&self, w: Box<dyn StripeWrite>) -> Result<Box<dyn StripeWrite>, BackendError> {
        let desc = self.inner.describe();
        Ok(Box::new(BoundedWrite::start(
            w,
            Arc::clone(&self.deadline),
            desc,
        )?))
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
        self.wrap(w)
    }

    fn create_new(
        &self,
        name: &StripeName,
        write_id: u64,
    ) -> Result<Box<dyn StripeWrite>, BackendError> {
        let n = *name;
        let w = self.call("create", move |b| b.create_new(&n, write_id))?;
        self.wrap(w)
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

/// What the writer's own thread is asked to do, in order.
enum Job {
    Write(u64, Vec<u8>),
    Buffered,
    Seal { buffered: bool },
    Abort,
}

/// A stripe being written on a bounded backend. The stripe is owned by a
/// thread of its own that does every call in order; the caller waits for
/// each data write and for the seal at most the deadline. A write that
/// misses it fails (and every later call on this stripe fails at once),
/// so a stalled MDS or OSD fails the file as a whole in bounded time and
/// the write path releases its reservation; the stuck thread finishes
/// (and then removes the temporary stripe) if the storage ever answers.
/// The data are copied once into a buffer the thread hands back.
struct BoundedWrite {
    jobs: mpsc::Sender<Job>,
    done: mpsc::Receiver<(Result<(), BackendError>, Vec<u8>)>,
    spare: Vec<u8>,
    deadline: Deadline,
    desc: String,
    stuck: Option<String>,
}

impl BoundedWrite {
    fn start(
        mut inner: Box<dyn StripeWrite>,
        deadline: Deadline,
        desc: String,
    ) -> Result<BoundedWrite, BackendError> {
        let (jobs, rx) = mpsc::channel::<Job>();
        let (tx, done) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("tessera-stripe".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    let r = match job {
                        Job::Write(offset, data) => {
                            let r = inner.write_at(offset, &data);
                            (r, data)
                        }
                        Job::Buffered => {
                            inner.buffered();
                            continue;
                        }
                        Job::Seal { buffered } => {
                            let r = if buffered {
                                inner.seal_buffered()
                            } else {
                                inner.seal()
                            };
                            let _ = tx.send((r, Vec::new()));
                            return;
                        }
                        Job::Abort => return inner.abort(),
                    };
                    if tx.send(r).is_err() {
                        // The caller gave up on this stripe: remove it.
                        return inner.abort();
                    }
                }
                // Dropped without a seal or an abort: as the inner writer
                // would be.
            })
            .map_err(|e| BackendError::Unavailable(format!("cannot start a stripe thread: {e}")))?;
        Ok(BoundedWrite {
            jobs,
            done,
            spare: Vec::new(),
            deadline,
            desc,
            stuck: None,
        })
    }

    fn failed(&self) -> Result<(), BackendError> {
        match &self.stuck {
            Some(what) => Err(BackendError::TimedOut(what.clone())),
            None => Ok(()),
        }
    }

    /// Hand `job` to the stripe's thread and wait at most the deadline.
    fn run(&mut self, what: &str, job: Job) -> Result<(), BackendError> {
        self.failed()?;
        let d = Duration::from_millis(self.deadline.load(Ordering::Relaxed).max(1));
        if self.jobs.send(job).is_err() {
            return Err(BackendError::Unavailable(format!(
                "the stripe thread of {} ended",
                self.desc
            )));
        }
        match self.done.recv_timeout(d) {
            Ok((r, buf)) => {
                self.spare = buf;
                r
            }
            Err(_) => {
                let what = format!("{what} on {} did not finish within {d:?}", self.desc);
                self.stuck = Some(what.clone());
                Err(BackendError::TimedOut(what))
            }
        }
    }

    fn write_all(&mut self, offset: u64, parts: &[&[u8]]) -> Result<(), BackendError> {
        self.failed()?;
        let mut buf = std::mem::take(&mut self.spare);
        buf.clear();
        for p in parts {
            buf.extend_from_slice(p);
        }
        self.run("a stripe write", Job::Write(offset, buf))
    }
}

impl StripeWrite for BoundedWrite {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), BackendError> {
        self.write_all(offset, &[data])
    }

    fn write_parts_at(&mut self, offset: u64, parts: &[&[u8]]) -> Result<(), BackendError> {
        self.write_all(offset, parts)
    }

    fn buffered(&mut self) {
        let _ = self.jobs.send(Job::Buffered);
    }

    fn seal(mut self: Box<Self>) -> Result<(), BackendError> {
        self.run("seal", Job::Seal { buffered: false })
    }

    fn seal_buffered(mut self: Box<Self>) -> Result<(), BackendError> {
        self.run("seal", Job::Seal { buffered: true })
    }

    fn abort(self: Box<Self>) {
        // Queued behind whatever the thread is doing; never waited for.
        let _ = self.jobs.send(Job::Abort);
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

    /// A stripe whose data writes hang after the first `ok` ones; what it
    /// did is recorded in `log`.
    struct Stalling {
        ok: usize,
        log: Arc<std::sync::Mutex<Vec<String>>>,
    }

    impl StripeWrite for Stalling {
        fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<(), BackendError> {
            if self.ok == 0 {
                std::thread::sleep(Duration::from_secs(1));
            }
            self.ok = self.ok.saturating_sub(1);
            let mut log = self.log.lock().expect("log");
            log.push(format!("write {offset} {}", data.len()));
            Ok(())
        }
        fn seal(self: Box<Self>) -> Result<(), BackendError> {
            self.log.lock().expect("log").push("seal".into());
            Ok(())
        }
        fn abort(self: Box<Self>) {
            self.log.lock().expect("log").push("abort".into());
        }
    }

    fn stalling(
        ok: usize,
        d: Duration,
    ) -> (Box<dyn StripeWrite>, Arc<std::sync::Mutex<Vec<String>>>) {
        let log = Arc::new(std::sync::Mutex::new(Vec::new()));
        let w = Stalling {
            ok,
            log: Arc::clone(&log),
        };
        let b = BoundedWrite::start(Box::new(w), deadline(d), "stalling".into()).expect("thread");
        (Box::new(b), log)
    }

    #[test]
    fn a_stripe_written_in_time_is_written_in_order() {
        let (mut w, log) = stalling(usize::MAX, Duration::from_secs(5));
        w.write_at(0, b"abc").expect("write");
        w.write_parts_at(3, &[b"de", b"fgh"]).expect("write");
        w.buffered();
        w.seal_buffered().expect("seal");
        let log = log.lock().expect("log").clone();
        assert_eq!(log, ["write 0 3", "write 3 5", "seal"]);
    }

    #[test]
    fn a_stalled_data_write_ends_at_the_deadline_and_the_stripe_goes() {
        let (mut w, log) = stalling(1, Duration::from_millis(100));
        w.write_at(0, b"abc").expect("first write");
        let t0 = std::time::Instant::now();
        let e = w.write_at(3, b"def").expect_err("stalled");
        assert!(matches!(e, BackendError::TimedOut(_)), "{e}");
        assert!(e.to_string().contains("stripe write on stalling"), "{e}");
        assert!(
            t0.elapsed() < Duration::from_millis(900),
            "{:?}",
            t0.elapsed()
        );
        // Every later call fails at once; the abort does not wait.
        let t1 = std::time::Instant::now();
        assert!(matches!(
            w.write_at(6, b"g"),
            Err(BackendError::TimedOut(_))
        ));
        w.abort();
        assert!(
            t1.elapsed() < Duration::from_millis(50),
            "{:?}",
            t1.elapsed()
        );
        // When the storage answers, the thread removes the stripe.
        let t2 = std::time::Instant::now();
        while !log.lock().expect("log").iter().any(|l| l == "abort") {
            assert!(t2.elapsed() < Duration::from_secs(5), "never aborted");
            std::thread::sleep(Duration::from_millis(20));
        }
        let log = log.lock().expect("log").clone();
        assert_eq!(log, ["write 0 3", "write 3 3", "abort"]);
    }

    #[test]
    fn a_stripe_dropped_after_a_stall_is_removed_too() {
        let (mut w, log) = stalling(0, Duration::from_millis(50));
        assert!(w.write_at(0, b"x").is_err());
        drop(w);
        let t0 = std::time::Instant::now();
        while !log.lock().expect("log").iter().any(|l| l == "abort") {
            assert!(t0.elapsed() < Duration::from_secs(5), "never aborted");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

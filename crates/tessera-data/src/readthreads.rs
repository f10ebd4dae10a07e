//! The threads that stripe reads run on when a reader asks several stripes
//! at once (RAIN and replica reads, hedged against a slow stripe, and the
//! degraded reads that rebuild a group): one pool shared by every reader
//! of the process. Threads start as jobs need them, up to a cap, and stop
//! after a while idle; so many concurrent short reads reuse threads
//! instead of starting one each (a thread start costs tens of µs and a
//! stack), and a stalled filesystem can hold at most `max` threads, not
//! one per request that touched it. When every thread is busy a job waits
//! its turn; the reader's slow threshold runs from the submission, so a
//! job that waits too long counts as a slow stripe (the group is rebuilt
//! from the others, or the read fails: bounded, never stuck).
//!
//! Hand-written rather than a crate: tokio's blocking pool would share its
//! limit with the requests waiting on these reads (a cycle at saturation),
//! rayon's pools are for CPU work and of fixed size, and the `threadpool`
//! crate is unmaintained; what is needed here is 80 lines of std.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

type Job = Box<dyn FnOnce() + Send>;

/// How many stripe-read threads a process runs at most by default.
pub const DEFAULT_READ_THREADS: usize = 256;
/// How long an idle thread waits for work before it stops.
const IDLE: Duration = Duration::from_secs(30);

/// A pool of threads for stripe reads (clone to share).
#[derive(Clone)]
pub struct ReadThreads {
    inner: Arc<Inner>,
}

struct Inner {
    state: Mutex<State>,
    work: Condvar,
    max: usize,
    idle: Duration,
}

#[derive(Default)]
struct State {
    jobs: VecDeque<Job>,
    /// Threads running.
    threads: usize,
    /// Threads waiting for a job.
    waiting: usize,
}

impl ReadThreads {
    /// A pool of at most `max` threads (at least one), none started yet.
    pub fn new(max: usize) -> ReadThreads {
        ReadThreads::with_idle(max, IDLE)
    }

    fn with_idle(max: usize, idle: Duration) -> ReadThreads {
        ReadThreads {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                work: Condvar::new(),
                max: max.max(1),
                idle,
            }),
        }
    }

    /// Run `job` on a pool thread: an idle one, a new one below the cap,
    /// else the first to come free. Err only when no thread runs and none
    /// can be started.
    pub fn run(&self, job: impl FnOnce() + Send + 'static) -> Result<(), String> {
        let mut s = lock(&self.inner.state);
        s.jobs.push_back(Box::new(job));
        // Waiting threads already woken still count as waiting, but each
        // job in the queue takes one: start a thread when jobs outnumber
        // them.
        if s.jobs.len() > s.waiting && s.threads < self.inner.max {
            let inner = Arc::clone(&self.inner);
            let started = std::thread::Builder::new()
                .name("tessera-read".into())
                .spawn(move || work(&inner));
            match started {
                Ok(_) => s.threads += 1,
                Err(e) if s.threads == 0 => {
                    s.jobs.pop_back();
                    return Err(format!("cannot start a reader thread: {e}"));
                }
                Err(_) => {} // the running threads will take it
            }
        }
        drop(s);
        self.inner.work.notify_one();
        Ok(())
    }

    /// Threads running now (busy or idle).
    pub fn threads(&self) -> usize {
        lock(&self.inner.state).threads
    }
}

impl Default for ReadThreads {
    fn default() -> Self {
        ReadThreads::new(DEFAULT_READ_THREADS)
    }
}

fn lock(m: &Mutex<State>) -> std::sync::MutexGuard<'_, State> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A pool thread: jobs until none comes for `idle`.
fn work(inner: &Inner) {
    let mut s = lock(&inner.state);
    loop {
        if let Some(job) = s.jobs.pop_front() {
            drop(s);
            // A job that panics takes only itself down, not the thread's
            // count (its reader sees its answer missing: a failed stripe).
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            s = lock(&inner.state);
            continue;
        }
        s.waiting += 1;
        let (next, timeout) = inner
            .work
            .wait_timeout(s, inner.idle)
            .unwrap_or_else(|p| p.into_inner());
        s = next;
        s.waiting -= 1;
        if timeout.timed_out() && s.jobs.is_empty() {
            s.threads -= 1;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;

    #[test]
    fn threads_are_reused_and_capped_and_stop_when_idle() {
        let (tx, rx) = mpsc::channel();
        // One at a time: the threads are reused (a job may come while the
        // thread that answered the last is not yet waiting again, so a few
        // may start; never one per job).
        let seq = ReadThreads::with_idle(64, Duration::from_secs(5));
        for i in 0..50 {
            let tx = tx.clone();
            seq.run(move || tx.send(i).expect("send")).expect("run");
            rx.recv().expect("done");
            // Until the thread that ran it waits again (on a loaded
            // machine it may not have got there before the next job).
            let t0 = std::time::Instant::now();
            while lock(&seq.inner.state).waiting == 0 && t0.elapsed() < Duration::from_secs(1) {
                std::thread::yield_now();
            }
        }
        assert!(seq.threads() < 10, "{} threads for 50 jobs", seq.threads());
        let pool = ReadThreads::with_idle(4, Duration::from_millis(200));
        // Many at once, each blocking a while: never more than the cap,
        // and every job runs.
        let ran = Arc::new(AtomicUsize::new(0));
        for _ in 0..40 {
            let (tx, ran) = (tx.clone(), Arc::clone(&ran));
            pool.run(move || {
                std::thread::sleep(Duration::from_millis(5));
                ran.fetch_add(1, Ordering::Relaxed);
                tx.send(0).expect("send");
            })
            .expect("run");
            assert!(pool.threads() <= 4);
        }
        for _ in 0..40 {
            rx.recv_timeout(Duration::from_secs(10)).expect("done");
        }
        assert_eq!(ran.load(Ordering::Relaxed), 40);
        assert_eq!(pool.threads(), 4);
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while pool.threads() > 0 && std::time::Instant::now() < until {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert_eq!(pool.threads(), 0, "idle threads stopped");
        // And start again when work comes.
        let tx2 = tx.clone();
        pool.run(move || tx2.send(1).expect("send")).expect("run");
        rx.recv_timeout(Duration::from_secs(10)).expect("done");
    }

    #[test]
    fn a_panicking_job_does_not_take_its_thread_down() {
        let pool = ReadThreads::with_idle(1, Duration::from_secs(5));
        pool.run(|| panic!("boom")).expect("run");
        let (tx, rx) = mpsc::channel();
        pool.run(move || tx.send(7).expect("send")).expect("run");
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).expect("ran"), 7);
        assert_eq!(pool.threads(), 1);
    }
}

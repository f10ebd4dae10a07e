//! A file being uploaded, driven the same way by every front-end: the
//! XRootD handle's writes, an HTTPS PUT's body, a TPC pull's streams.
//!
//! The policy lives here, once:
//! - **memory**: before bytes are appended, what the session's buffers will
//!   hold beyond what they have is leased from the budget (the bytes a
//!   payload already holds are handed over first: they move into the group
//!   buffer, so a file never waits on its own queued payloads). Not granted
//!   within the budget's wait, the file is aborted and the step fails with
//!   `NoMemory` (`kXR_NoMemory`, HTTP 503 with `Retry-After`);
//! - **where work runs**: a step that only copies into memory (an append
//!   the group buffer takes, a sync, a failed file's answer) runs in line
//!   on the caller's task; anything that may touch a stripe or the
//!   namespace runs on the blocking pool, and the caller's `finish` runs on
//!   the thread that did the work (a front-end answers from there, without
//!   a hand-back to a runtime thread);
//! - **order**: writes extend the file. One at the end is applied; one
//!   further on is held (within [`Holds`]) until the gap is filled, and a
//!   gap still open at close or truncate reads as zeros. Where writes may
//!   come out of order (`Holds`: XRootD), a write over bytes already
//!   streamed and a shrinking truncate are kept as changes (at most
//!   [`MAX_CHANGED`] bytes) and the file is built again with them at close
//!   (`patched.rs`); elsewhere (a PUT's body) they are refused
//!   (`Unsupported`);
//! - **failure**: the first failure aborts the file (reservation released,
//!   stripes dropped, nothing visible); every later step meets the same
//!   error.

use crate::pool::lock;
use crate::{Budget, CoreError, Expect, Inode, Lease, WriteSession};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tessera_types::ErrorKind;

/// One thing done to an upload.
pub enum Step<D> {
    /// Bytes at `at` (`None`: at the current end), with the budget's bytes
    /// the payload holds.
    Write {
        at: Option<u64>,
        data: D,
        lease: Lease,
    },
    /// A checkpoint: answers the file's failure, if any.
    Sync,
    /// Extend the file to this size with zeros.
    Truncate(u64),
    /// Seal and make the file visible; a digest in the `Expect` that the
    /// data does not match aborts it instead.
    Close(Expect),
    /// The front-end could not take a request for this file (its payload
    /// did not fit in memory): the file fails with this error.
    Fail(CoreError),
}

/// What a step gave: the visible file after a close.
pub type Done = Result<Option<Inode>, CoreError>;

/// Where a step ran (and its `finish` runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ran {
    /// On the caller's task (only memory was touched).
    InLine,
    /// On a blocking-pool thread (may block on the runtime there).
    OnPool,
}

/// Limits on writes held out of order (for front-ends that allow them).
pub struct Holds {
    /// Bytes held per file.
    pub per_file: usize,
    /// Bytes held by all files sharing `shared`.
    pub per_group: usize,
    /// The count shared by a group of uploads (an XRootD connection's).
    pub shared: Arc<AtomicUsize>,
}

/// A file being written. Dropping it without a close aborts the file.
pub struct Upload<D> {
    state: Arc<Mutex<State<D>>>,
    budget: Budget,
    /// I/O shaping and the bytes counted per application (`shaping.rs`).
    pace: std::sync::OnceLock<crate::Pace>,
}

/// Bytes written over streamed ones an upload may hold until its close.
pub const MAX_CHANGED: usize = 64 << 20;

/// Changes after streaming (see `patched.rs`).
#[derive(Default)]
struct Changed {
    patches: crate::patched::Patches,
    /// The budget's bytes for the patches (kept as large as they are).
    lease: Lease,
    /// After a shrink: streamed bytes from here on are gone (and every
    /// later write is a change).
    valid: Option<u64>,
    /// The size the changes give (after a shrink: the file's size).
    size: u64,
}

impl Changed {
    /// Keep `data` at `offset` with its `lease` (bytes the patches no
    /// longer need, where writes overlap, go back).
    fn put(&mut self, offset: u64, data: &[u8], lease: Lease) -> Result<(), CoreError> {
        let end = offset + data.len() as u64;
        self.patches.put(offset, data.to_vec());
        self.lease.merge(lease);
        let spare = self.lease.bytes().saturating_sub(self.patches.bytes());
        if spare >= 64 << 10 {
            drop(self.lease.split(spare));
        }
        if self.patches.bytes() > MAX_CHANGED {
            return Err(CoreError::Remote {
                kind: ErrorKind::Unsupported,
                msg: format!(
                    "more than {} MiB rewritten before the close",
                    MAX_CHANGED >> 20
                ),
            });
        }
        self.size = self.size.max(end);
        Ok(())
    }

    /// The file ends at `size` (whatever was written past it is gone).
    fn cut_at(&mut self, size: u64) {
        self.patches.cut(size, u64::MAX);
        self.size = self.size.min(size);
    }
}

struct State<D> {
    ws: Option<WriteSession>,
    /// Bytes changed after streaming, if any.
    changed: Option<Changed>,
    held: BTreeMap<u64, (D, Lease)>,
    held_bytes: usize,
    holds: Option<Holds>,
    /// The first failure, answered to every later step.
    failed: Option<(ErrorKind, String)>,
}

impl<D: AsRef<[u8]> + Send + 'static> Upload<D> {
    /// An upload into `ws` whose buffers are leased from `budget`; writes
    /// must come in order unless `holds` says how many may wait.
    pub fn new(ws: WriteSession, budget: Budget, holds: Option<Holds>) -> Self {
        Upload {
            state: Arc::new(Mutex::new(State {
                ws: Some(ws),
                changed: None,
                held: BTreeMap::new(),
                held_bytes: 0,
                holds,
                failed: None,
            })),
            budget,
            pace: std::sync::OnceLock::new(),
        }
    }

    /// Pace and count this upload's writes (set once, when it opens:
    /// [`crate::Core::pace`]).
    pub fn pace_with(&self, p: crate::Pace) {
        let _ = self.pace.set(p);
    }

    /// Apply `step`; `finish` is given its result on the thread that did
    /// the work, told which that was, and its answer returned (`Err` only
    /// when the pool's task itself died).
    pub async fn apply<R: Send + 'static>(
        &self,
        step: Step<D>,
        finish: impl FnOnce(Done, Ran) -> R + Send + 'static,
    ) -> Result<R, CoreError> {
        let n = match &step {
            Step::Write { data, .. } => data.as_ref().len(),
            _ => 0,
        };
        let r = self.apply_now(step, finish).await;
        // Paced after the bytes went in: the caller reads nothing more
        // from its client meanwhile, holding no buffer.
        if let (Some(p), true) = (self.pace.get(), n > 0) {
            p.bytes(n).await;
        }
        r
    }

    async fn apply_now<R: Send + 'static>(
        &self,
        step: Step<D>,
        finish: impl FnOnce(Done, Ran) -> R + Send + 'static,
    ) -> Result<R, CoreError> {
        let step = match self.take_memory(step).await {
            Ok(step) => step,
            Err(e) => return Ok(finish(Err(e), Ran::InLine)),
        };
        let step = match lock(&self.state).in_line(step) {
            Ok(done) => return Ok(finish(done, Ran::InLine)),
            Err(step) => step,
        };
        let state = Arc::clone(&self.state);
        crate::blocking(move || {
            let done = lock(&state).run(step);
            finish(done, Ran::OnPool)
        })
        .await
    }

    /// Apply `step` and give its result.
    pub async fn step(&self, step: Step<D>) -> Done {
        self.apply(step, |d, _| d).await?
    }

    /// Append `data` at the end (`held`: the budget's bytes it holds).
    pub async fn append(&self, data: D, lease: Lease) -> Result<(), CoreError> {
        let at = None;
        self.step(Step::Write { at, data, lease }).await.map(drop)
    }

    /// Seal the file and make it visible (see [`Step::Close`]).
    pub async fn close(&self, want: Expect) -> Result<Inode, CoreError> {
        self.step(Step::Close(want))
            .await?
            .ok_or_else(|| CoreError::Invalid("closed twice".into()))
    }

    /// Lease what applying `step` makes the file's buffers hold; refused
    /// in time, the file is aborted and the step fails with `NoMemory`. A
    /// write that will be held (out of order) or kept as a change holds
    /// its whole length of the budget itself, small payloads (which the
    /// front-end leased nothing for) included.
    async fn take_memory(&self, mut step: Step<D>) -> Result<Step<D>, CoreError> {
        let kept = lock(&self.state).kept_len(&step);
        if kept > 0 {
            if let Step::Write { lease, .. } = &mut step {
                match self.budget.lease_from(kept, Some(lease)).await {
                    Some(l) => *lease = l,
                    None => {
                        let e = CoreError::NoMemory(
                            "insufficient memory to hold this write now: the file is aborted, send it again later".into(),
                        );
                        lock(&self.state).fail(&e);
                        return Err(e);
                    }
                }
            }
            return Ok(step);
        }
        let need = lock(&self.state).memory_wanted(&step);
        if need == 0 {
            return Ok(step);
        }
        // A write's own payload lease is handed to the file first.
        let held = match &mut step {
            Step::Write { lease, .. } => Some(lease),
            _ => None,
        };
        let lease = self.budget.lease_from(need, held).await;
        let mut s = lock(&self.state);
        match (lease, s.ws.as_mut()) {
            (Some(l), Some(ws)) => {
                ws.hold_memory(l);
                Ok(step)
            }
            (None, Some(_)) => {
                let e = CoreError::NoMemory(
                    "insufficient memory to take more of this file now: the write is aborted, send it again later".into(),
                );
                s.fail(&e);
                Err(e)
            }
            // Failed meanwhile: the step meets that failure.
            (_, None) => Ok(step),
        }
    }
}

impl<D> Drop for State<D> {
    fn drop(&mut self) {
        self.release_held();
    }
}

impl<D> State<D> {
    fn release_held(&mut self) {
        if let Some(h) = &self.holds {
            h.shared.fetch_sub(self.held_bytes, Ordering::Relaxed);
        }
        self.held_bytes = 0;
        self.held.clear();
    }
}

impl<D: AsRef<[u8]>> State<D> {
    fn failure(&self) -> Option<CoreError> {
        self.failed.as_ref().map(|(kind, msg)| CoreError::Remote {
            kind: *kind,
            msg: msg.clone(),
        })
    }

    /// Abort the file with `e` (dropping the session releases its
    /// reservation and stripes); later steps answer `e`.
    fn fail(&mut self, e: &CoreError) {
        if self.failed.is_none() {
            self.failed = Some((e.kind(), e.client_message()));
        }
        self.ws = None;
        self.release_held();
    }

    /// The length of a write `step` that will be kept rather than
    /// streamed: held out of order, or a change over streamed bytes (0
    /// for anything else).
    fn kept_len(&self, step: &Step<D>) -> usize {
        let (
            Step::Write {
                at: Some(at), data, ..
            },
            Some(ws),
            None,
            Some(_),
        ) = (step, self.ws.as_ref(), &self.failed, &self.holds)
        else {
            return 0;
        };
        let end = ws.written();
        let shrunk = self.changed.as_ref().is_some_and(|c| c.valid.is_some());
        if *at != end || shrunk {
            data.as_ref().len()
        } else {
            0
        }
    }

    /// How many more budget bytes the session needs before `step` (what
    /// it appends: a write at the end with the held writes it makes
    /// contiguous, a truncate's zeros, the gaps a close fills).
    fn memory_wanted(&self, step: &Step<D>) -> usize {
        let Some(ws) = self.ws.as_ref().filter(|_| self.failed.is_none()) else {
            return 0;
        };
        let end = ws.written();
        let held_end = self
            .held
            .iter()
            .next_back()
            .map_or(0, |(off, (d, _))| off + d.as_ref().len() as u64);
        let upto = match step {
            Step::Write { at, data, .. } if at.is_none_or(|a| a == end) => {
                end + data.as_ref().len() as u64
            }
            Step::Truncate(size) => *size,
            Step::Close(_) => end,
            _ => return 0,
        };
        ws.memory_wanted(upto.max(held_end).saturating_sub(end))
    }

    /// Do `step` right here if it only touches memory; else hand it back
    /// for the blocking pool.
    fn in_line(&mut self, step: Step<D>) -> Result<Done, Step<D>> {
        let buffered = |s: &Self, at: Option<u64>, len: usize| {
            s.failed.is_none()
                && s.held.is_empty()
                && s.ws.as_ref().is_some_and(|ws| {
                    at.is_none_or(|a| a == ws.written()) && ws.write_is_buffered(len)
                })
        };
        match step {
            Step::Write { at, data, lease } if buffered(self, at, data.as_ref().len()) => {
                Ok(self.run(Step::Write { at, data, lease }))
            }
            Step::Sync => Ok(self.run(Step::Sync)),
            step => Err(step),
        }
    }

    /// Do `step` (may block: stripe writes, the namespace commit).
    fn run(&mut self, step: Step<D>) -> Done {
        let close = matches!(step, Step::Close(_));
        if let Some(e) = self.failure() {
            if close {
                self.ws = None;
            }
            return Err(e);
        }
        let r = match step {
            Step::Write { at, data, lease } => self.write(at, data, lease).map(|()| None),
            Step::Sync => Ok(None),
            Step::Truncate(size) => self.truncate(size).map(|()| None),
            Step::Close(want) => self.close(want).map(Some),
            Step::Fail(e) => Err(e),
        };
        if let Err(e) = &r {
            self.fail(e);
        }
        r
    }

    fn session(&mut self) -> Result<&mut WriteSession, CoreError> {
        self.ws
            .as_mut()
            .ok_or_else(|| CoreError::Invalid("the file is closed".into()))
    }

    fn write(&mut self, at: Option<u64>, data: D, lease: Lease) -> Result<(), CoreError> {
        let end = self.session()?.written();
        let offset = at.unwrap_or(end);
        let shrunk = self.changed.as_ref().is_some_and(|c| c.valid.is_some());
        if offset < end || shrunk {
            if self.holds.is_none() {
                return Err(CoreError::Remote {
                    kind: ErrorKind::Unsupported,
                    msg: format!(
                        "rewriting bytes already written (offset {offset} < {end}) is not supported"
                    ),
                });
            }
            let bytes = data.as_ref();
            let c = self.changed.get_or_insert_with(Changed::default);
            // A write across the end: the part before it is a change, the
            // rest goes on streaming.
            let k = (end.saturating_sub(offset) as usize).min(bytes.len());
            if shrunk || k == bytes.len() {
                return c.put(offset, bytes, lease);
            }
            let mut lease = lease;
            let part = lease.split(k);
            c.put(offset, &bytes[..k], part)?;
            self.session()?.write(&bytes[k..])?;
            drop((data, lease));
            return self.drain(false);
        }
        if offset > end {
            return self.hold(offset, end, data, lease);
        }
        self.session()?.write(data.as_ref())?;
        drop((data, lease));
        self.drain(false)
    }

    /// Keep a write beyond the end until the gap before it is filled.
    fn hold(&mut self, offset: u64, end: u64, data: D, lease: Lease) -> Result<(), CoreError> {
        let n = data.as_ref().len();
        let too_far = || CoreError::Remote {
            kind: ErrorKind::Unsupported,
            msg: format!("writes too far out of order (offset {offset}, file at {end})"),
        };
        let Some(h) = &self.holds else {
            return Err(too_far());
        };
        // The gap reads as zeros, written at the close.
        crate::zerofill::check(end, offset, "a write this far past the end")?;
        let group = h.shared.fetch_add(n, Ordering::Relaxed) + n;
        if self.held_bytes + n > h.per_file
            || group > h.per_group
            || self.held.contains_key(&offset)
        {
            h.shared.fetch_sub(n, Ordering::Relaxed);
            return Err(too_far());
        }
        self.held_bytes += n;
        self.held.insert(offset, (data, lease));
        Ok(())
    }

    /// Apply held writes that now continue the file; with `fill`, zeros
    /// close any gap (at close and truncate).
    fn drain(&mut self, fill: bool) -> Result<(), CoreError> {
        while let Some((&off, _)) = self.held.iter().next() {
            let end = self.session()?.written();
            if off < end {
                return Err(CoreError::Remote {
                    kind: ErrorKind::Unsupported,
                    msg: format!("overlapping writes at offset {off}"),
                });
            }
            if off > end {
                if !fill {
                    break;
                }
                zeros(self.session()?, off - end)?;
            }
            let (data, _lease) = self.held.remove(&off).expect("present");
            let n = data.as_ref().len();
            self.held_bytes -= n;
            if let Some(h) = &self.holds {
                h.shared.fetch_sub(n, Ordering::Relaxed);
            }
            self.session()?.write(data.as_ref())?;
        }
        Ok(())
    }

    fn truncate(&mut self, size: u64) -> Result<(), CoreError> {
        self.drain(true)?;
        let end = self.session()?.written();
        let shrunk = self.changed.as_ref().is_some_and(|c| c.valid.is_some());
        if size < end || shrunk {
            if self.holds.is_none() {
                return Err(CoreError::Remote {
                    kind: ErrorKind::Unsupported,
                    msg: format!(
                        "shrinking a file being written ({end} -> {size} bytes) is not supported"
                    ),
                });
            }
            let c = self.changed.get_or_insert_with(Changed::default);
            c.cut_at(size);
            c.valid = Some(c.valid.unwrap_or(end).min(size));
            c.size = size;
            return Ok(());
        }
        if let Some(c) = self.changed.as_mut() {
            c.cut_at(size);
        }
        crate::zerofill::check(end, size, "this truncate")?;
        zeros(self.session()?, size - end)
    }

    fn close(&mut self, want: Expect) -> Result<Inode, CoreError> {
        self.drain(true)?;
        let ws = self
            .ws
            .take()
            .ok_or_else(|| CoreError::Invalid("closed twice".into()))?;
        let Some(c) = self.changed.take() else {
            return ws.close_expecting(want);
        };
        let streamed = ws.written();
        let (valid, size) = match c.valid {
            Some(v) => (v, c.size),
            None => (streamed, c.size.max(streamed)),
        };
        let patches = &c.patches;
        let changes = crate::patched::Changes {
            valid,
            size,
            patches,
        };
        ws.close_changed(changes, want)
    }
}

fn zeros(ws: &mut WriteSession, mut n: u64) -> Result<(), CoreError> {
    let z = vec![0u8; n.min(1 << 20) as usize];
    while n > 0 {
        let k = n.min(z.len() as u64) as usize;
        ws.write(&z[..k])?;
        n -= k as u64;
    }
    Ok(())
}

//! Reads: any range, only the blocks needed, each block's CRC-32C checked;
//! a missing, unreadable or corrupt block is rebuilt from the other
//! stripes (degraded read) and the event recorded. Corrupt data is never
//! returned.

use crate::layout::{Geometry, LayoutKind, Placement};
use crate::readdata::{BufPool, ReadData};
use crate::readthreads::ReadThreads;
use crate::stripes::{Stripes, BAD_BLOCK};
use crate::DataError;
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tessera_backend::Backend;
use tessera_ec::Codec;

/// Something that went wrong with one stripe during a read (for fsck).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadEvent {
    pub stripe: usize,
    pub group: u64,
    pub what: String,
}

/// A stripe that has not answered within this is treated as missing and
/// its blocks are rebuilt from parity (the read goes on without it).
pub const DEFAULT_SLOW: Duration = Duration::from_secs(2);

/// Idle read buffers a reader keeps when it has no shared pool.
pub const DEFAULT_POOL_BYTES: usize = 32 << 20;

/// How a [`ReadEvent`] begins when a stripe was given up for slowness
/// (a hedged read: its group was rebuilt from the others).
pub const SLOW_PREFIX: &str = "no answer within";

/// How a [`ReadEvent`] begins when a stripe was not asked again because
/// it already failed earlier in the same read.
pub const SKIPPED_PREFIX: &str = "skipped:";

/// What one request of a span read brought back: stripe `stripe`'s
/// blocks of groups `first..=last`, verified.
struct Span {
    stripe: usize,
    first: u64,
    last: u64,
    buf: Vec<u8>,
}

/// The stripes of one file read as one range at a time; [`crate::FileReader`]
/// adds read-ahead on top.
pub(crate) struct Striped {
    placement: Placement,
    geo: Geometry,
    pub(crate) s: Arc<Stripes>,
    codec: Option<Codec>,
    events: Mutex<Vec<ReadEvent>>,
    slow: Duration,
    /// Stripes that failed or were slow: later groups go around them.
    avoid: Mutex<Vec<bool>>,
    /// Stripes that were only slow (not broken): the last resort when
    /// nothing else can serve a group is to wait for them.
    slowset: Mutex<Vec<bool>>,
    /// Where stripe reads asked in parallel run.
    threads: ReadThreads,
}

impl Striped {
    /// `backends[i]` serves stripe i (`None`: its filesystem is unknown or off).
    pub fn new(
        placement: Placement,
        fid: u64,
        size: u64,
        backends: Vec<Option<Arc<dyn Backend>>>,
    ) -> Result<Striped, DataError> {
        let l = placement.layout;
        if backends.len() != l.stripes() {
            return Err(DataError::Layout("one backend per stripe expected".into()));
        }
        let codec = match l.kind {
            LayoutKind::Rain => Some(Codec::new(l.k as usize, l.m as usize)?),
            _ => None,
        };
        let geo = l.geometry(size);
        Ok(Striped {
            s: Arc::new(Stripes {
                geo,
                fid,
                opened: (0..backends.len()).map(|_| OnceLock::new()).collect(),
                backends,
                pool: BufPool::new(DEFAULT_POOL_BYTES),
                tables: Default::default(),
            }),
            geo,
            placement,
            codec,
            events: Mutex::new(Vec::new()),
            slow: DEFAULT_SLOW,
            avoid: Mutex::new(vec![false; l.stripes()]),
            slowset: Mutex::new(vec![false; l.stripes()]),
            threads: ReadThreads::default(),
        })
    }

    /// Take read buffers from `pool` (shared with other readers) instead
    /// of this reader's own.
    pub fn set_pool(&mut self, pool: Arc<BufPool>) {
        if let Some(s) = Arc::get_mut(&mut self.s) {
            s.pool = pool;
        }
    }

    /// Run parallel stripe reads on `threads` (shared with other readers)
    /// instead of this reader's own.
    pub fn set_threads(&mut self, threads: ReadThreads) {
        self.threads = threads;
    }

    /// Treat a stripe as missing when it takes longer than `slow`.
    pub fn set_slow_threshold(&mut self, slow: Duration) {
        self.slow = slow;
    }

    /// Run `f(i)` for each `i` on the read threads; what has not answered
    /// within the slow threshold is reported as slow (it finishes in the
    /// background and its answer is dropped).
    pub(crate) fn hedged<T, F>(&self, which: &[usize], f: F) -> Vec<(usize, Result<T, String>)>
    where
        T: Send + 'static,
        F: Fn(&Stripes, usize) -> Result<T, String> + Send + Sync + Clone + 'static,
    {
        // A plain file has nowhere else to read from: waiting is all a
        // slow stripe allows, so one request runs right here (no thread).
        if which.len() == 1 && self.placement.layout.kind == LayoutKind::Plain {
            return vec![(which[0], f(&self.s, which[0]))];
        }
        let (tx, rx) = mpsc::channel();
        for &i in which {
            let (s, tx2, f) = (Arc::clone(&self.s), tx.clone(), f.clone());
            if let Err(e) = self.threads.run(move || {
                let _ = tx2.send((i, f(&s, i)));
            }) {
                let _ = tx.send((i, Err(e)));
            }
        }
        drop(tx);
        let deadline = Instant::now() + self.slow;
        let mut out = Vec::with_capacity(which.len());
        while out.len() < which.len() {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(r) => out.push(r),
                Err(_) => break,
            }
        }
        for &i in which {
            if !out.iter().any(|(j, _)| *j == i) {
                out.push((i, Err(format!("{SLOW_PREFIX} {:?}", self.slow))));
            }
        }
        out
    }

    pub fn size(&self) -> u64 {
        self.geo.size
    }

    pub(crate) fn placement(&self) -> &Placement {
        &self.placement
    }

    pub(crate) fn geometry(&self) -> &Geometry {
        &self.geo
    }

    /// Whether stripe `i` failed or was slow earlier in this reader.
    pub(crate) fn avoided(&self, i: usize) -> bool {
        self.avoid.lock().unwrap_or_else(|p| p.into_inner())[i]
    }

    pub(crate) fn pool(&self) -> &Arc<BufPool> {
        &self.s.pool
    }

    /// The file bytes of the block that holds file byte `pos` (< size).
    pub(crate) fn block_of(&self, pos: u64) -> (u64, u64) {
        let gb = self.placement.layout.group_bytes();
        let g = pos / gb;
        let start = self.geo.group_start(g);
        let bl = self.geo.block_len(g) as u64;
        let from = start + (pos - start) / bl * bl;
        (from, (from + bl).min(start + gb).min(self.geo.size))
    }

    /// What went wrong so far (degraded reads).
    pub fn events(&self) -> Vec<ReadEvent> {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn event(&self, stripe: usize, group: u64, what: String) {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(ReadEvent {
                stripe,
                group,
                what,
            });
    }

    fn slow_stripes(&self) -> Vec<usize> {
        let slow = self.slowset.lock().unwrap_or_else(|p| p.into_inner());
        (0..slow.len()).filter(|i| slow[*i]).collect()
    }

    /// Fetch the given stripes' blocks of group `g` in parallel (hedged);
    /// stripes that already failed in this reader are not asked again.
    fn fetch(&self, g: u64, which: &[usize]) -> Vec<(usize, Result<Vec<u8>, String>)> {
        let avoid = self.avoid.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let ask: Vec<usize> = which.iter().copied().filter(|i| !avoid[*i]).collect();
        let mut out = self.hedged(&ask, move |s, i| s.block(i, g));
        {
            let mut a = self.avoid.lock().unwrap_or_else(|p| p.into_inner());
            let mut slow = self.slowset.lock().unwrap_or_else(|p| p.into_inner());
            for (i, r) in &out {
                if let Err(e) = r {
                    if e.starts_with(BAD_BLOCK) {
                        continue;
                    }
                    a[*i] = true;
                    if e.starts_with(SLOW_PREFIX) {
                        slow[*i] = true;
                    }
                }
            }
        }
        out.extend(which.iter().filter(|i| avoid[**i]).map(|i| {
            (
                *i,
                Err(format!("{SKIPPED_PREFIX} failed earlier in this read")),
            )
        }));
        out
    }

    /// The data blocks `first..=last` of group `g`, rebuilt if needed.
    // long-fn: the degraded-read decision for one group (which blocks, which stripes to avoid, when to hedge) is one algorithm.
    fn data_blocks(&self, g: u64, first: usize, last: usize) -> Result<Vec<Vec<u8>>, DataError> {
        let l = self.placement.layout;
        let n = l.stripes();
        match l.kind {
            LayoutKind::Plain | LayoutKind::Replica => {
                for i in 0..n {
                    for (i, r) in self.fetch(g, &[i]) {
                        match r {
                            Ok(b) => return Ok(vec![b]),
                            Err(e) => self.event(i, g, e),
                        }
                    }
                }
                // Nothing else can serve it: wait for a slow copy, then ask
                // the copies that failed on an earlier group again (a bad
                // block there says nothing of this one; with a single copy,
                // one bad block would otherwise fail the rest of the file).
                let slow = self.slow_stripes();
                let retry = slow
                    .iter()
                    .copied()
                    .chain((0..n).filter(|i| !slow.contains(i)));
                for i in retry {
                    if let Ok(b) = self.s.block(i, g) {
                        return Ok(vec![b]);
                    }
                }
                Err(DataError::Unrecoverable {
                    group: g,
                    have: 0,
                    need: 1,
                })
            }
            LayoutKind::Rain => {
                let want: Vec<usize> = (first..=last).collect();
                let mut got: Vec<Option<Vec<u8>>> = vec![None; n];
                let mut tried = vec![false; n];
                for (i, r) in self.fetch(g, &want) {
                    tried[i] = true;
                    match r {
                        Ok(b) => got[i] = Some(b),
                        Err(e) => self.event(i, g, e),
                    }
                }
                if want.iter().all(|i| got[*i].is_some()) {
                    return Ok(want
                        .iter()
                        .map(|i| got[*i].take().expect("present"))
                        .collect());
                }
                // Degraded: gather k good blocks, data stripes first.
                let k = l.k as usize;
                loop {
                    let have = got.iter().filter(|b| b.is_some()).count();
                    if have >= k {
                        break;
                    }
                    let next: Vec<usize> = (0..n).filter(|i| !tried[*i]).take(k - have).collect();
                    if next.is_empty() {
                        // Nothing else can serve it: wait for slow stripes.
                        for i in self.slow_stripes() {
                            if got[i].is_none() {
                                if let Ok(b) = self.s.block(i, g) {
                                    got[i] = Some(b);
                                }
                            }
                            if got.iter().filter(|b| b.is_some()).count() >= k {
                                break;
                            }
                        }
                        if got.iter().filter(|b| b.is_some()).count() >= k {
                            break;
                        }
                        return Err(DataError::Unrecoverable {
                            group: g,
                            have,
                            need: k,
                        });
                    }
                    for (i, r) in self.fetch(g, &next) {
                        tried[i] = true;
                        match r {
                            Ok(b) => got[i] = Some(b),
                            Err(e) => self.event(i, g, e),
                        }
                    }
                }
                let len = self.geo.block_len(g);
                let present: Vec<bool> = got.iter().map(Option::is_some).collect();
                let mut shards: Vec<Vec<u8>> = got
                    .into_iter()
                    .map(|b| b.unwrap_or_else(|| vec![0u8; len]))
                    .collect();
                let mut refs: Vec<&mut [u8]> =
                    shards.iter_mut().map(|s| s.as_mut_slice()).collect();
                self.codec
                    .as_ref()
                    .expect("RAIN has a codec")
                    .reconstruct(&mut refs, &present)?;
                Ok(shards.drain(first..=last).collect())
            }
        }
    }

    /// Stripes `j0..=j1`' blocks of groups `g0..=g1` with one read per
    /// stripe (blocks of consecutive groups are contiguous in a stripe
    /// file; a single stripe's range is read as two halves so that both
    /// cores copy and verify), each verified on its own thread; `None` if
    /// anything is missing, slow or corrupt (the caller then goes group by
    /// group and rebuilds what is needed).
    fn span(&self, g0: u64, g1: u64, j0: usize, j1: usize) -> Option<Vec<Span>> {
        if self.avoid.lock().unwrap_or_else(|p| p.into_inner())[j0..=j1]
            .iter()
            .any(|a| *a)
        {
            return None;
        }
        let tasks: Vec<(usize, u64, u64)> = if j0 == j1 && g1 > g0 {
            let mid = g0 + (g1 - g0) / 2;
            vec![(j0, g0, mid), (j0, mid + 1, g1)]
        } else {
            (j0..=j1).map(|j| (j, g0, g1)).collect()
        };
        let t2 = Arc::new(tasks.clone());
        let which: Vec<usize> = (0..tasks.len()).collect();
        let mut got = self.hedged(&which, move |s, t| {
            let (j, ga, gb) = t2[t];
            let from = s.geo.block_offset(ga);
            let to = s.geo.block_offset(gb) + s.geo.block_span(gb) as u64;
            let want = (to - from) as usize;
            let st = s.stripe(j)?;
            let mut buf = s.pool.take(want);
            match st.read_at(from, &mut buf) {
                Ok(r) if r == want => {}
                Ok(r) => return Err(format!("short read: {r} of {want}")),
                Err(e) => return Err(e.to_string()),
            }
            if !s.verified(&buf, from, ga, gb) {
                return Err("block checksum mismatch".into());
            }
            Ok(buf)
        });
        got.sort_by_key(|(t, _)| *t);
        got.into_iter()
            .map(|(t, r)| {
                let (stripe, first, last) = tasks[t];
                r.ok().map(|buf| Span {
                    stripe,
                    first,
                    last,
                    buf,
                })
            })
            .collect()
    }

    /// `span` from memory only, on the caller's thread: `None` when a
    /// stripe would have to wait for storage, or anything is missing or
    /// corrupt (the ordinary read then deals with it and records it).
    fn span_cached(&self, g0: u64, g1: u64, j0: usize, j1: usize) -> Option<Vec<Span>> {
        let from = self.geo.block_offset(g0);
        let to = self.geo.block_offset(g1) + self.geo.block_span(g1) as u64;
        let want = (to - from) as usize;
        let mut spans = Vec::with_capacity(j1 - j0 + 1);
        for j in j0..=j1 {
            let st = self.s.stripe_cached(j)?;
            let mut buf = self.s.pool.take(want);
            if st.read_cached(from, &mut buf)? != want || !self.s.verified(&buf, from, g0, g1) {
                return None;
            }
            spans.push(Span {
                stripe: j,
                first: g0,
                last: g1,
                buf,
            });
        }
        Some(spans)
    }

    /// Read up to `len` bytes at `offset`, left in the stripe buffers
    /// (see [`ReadData`]); short only at end of file. Whatever the range
    /// covers of a group is read with one request per stripe, a range over
    /// several groups too (up to 64 MiB at a time); damage falls back to
    /// group-by-group degraded reads.
    pub fn read(&self, offset: u64, len: usize) -> Result<ReadData, DataError> {
        answered(self.read_from(offset, len, false))
    }

    /// `read` from memory only, on the caller's thread (see
    /// `Backend::open_cached`, `StripeRead::read_cached`): `None` when any
    /// of it would wait for storage or needs more than the stripes hold
    /// (a degraded read).
    pub fn read_cached(&self, offset: u64, len: usize) -> Option<ReadData> {
        self.read_from(offset, len, true).ok().flatten()
    }

    /// `read`, or with `cached` `read_cached` (only that one answers `None`).
    fn read_from(
        &self,
        offset: u64,
        len: usize,
        cached: bool,
    ) -> Result<Option<ReadData>, DataError> {
        let mut out = ReadData::new(Arc::clone(&self.s.pool));
        let size = self.geo.size;
        if offset >= size || len == 0 {
            return Ok(Some(out));
        }
        let end = size.min(offset + len as u64);
        let l = self.placement.layout;
        let gb = l.group_bytes();
        let k = if l.kind == LayoutKind::Rain {
            l.k as usize
        } else {
            1
        };
        let batch = (64u64 << 20).div_ceil(gb).max(1);
        let mut pos = offset;
        while pos < end {
            let g0 = pos / gb;
            let g1 = ((end - 1) / gb).min(g0 + batch - 1);
            let bl = self.geo.block_len(g0) as u64;
            let (j0, j1) = if g1 > g0 {
                (0, k - 1)
            } else {
                let start = self.geo.group_start(g0);
                let gend = end.min(start + gb).min(size);
                (
                    ((pos - start) / bl) as usize,
                    ((gend - 1 - start) / bl) as usize,
                )
            };
            let spans = if cached {
                self.span_cached(g0, g1, j0, j1)
            } else {
                self.span(g0, g1, j0, j1)
            };
            if let Some(spans) = spans {
                let ids: Vec<(usize, usize, u64, u64, u64)> = spans
                    .into_iter()
                    .map(|sp| {
                        let from = self.geo.block_offset(sp.first);
                        (sp.stripe, out.adopt(sp.buf), sp.first, sp.last, from)
                    })
                    .collect();
                for g in g0..=g1 {
                    let start = self.geo.group_start(g);
                    let len = self.geo.block_len(g) as u64;
                    for j in j0..=j1 {
                        let Some(&(_, id, _, _, from)) =
                            ids.iter().find(|t| t.0 == j && t.2 <= g && g <= t.3)
                        else {
                            continue;
                        };
                        let off = self.geo.block_offset(g) - from;
                        let bstart = start + j as u64 * len;
                        let lo = pos.max(bstart);
                        let hi = end.min(bstart + len).min(size);
                        if lo >= hi {
                            continue;
                        }
                        let src = (off + lo - bstart) as usize;
                        out.push(id, src, src + (hi - lo) as usize);
                        if l.page != 0 {
                            // The block's page checksums follow it.
                            let t = (off + len) as usize;
                            let n = l.sums_len(len as usize);
                            out.push_sums(crate::pagesums::BlockSums {
                                start: bstart,
                                len: len as usize,
                                page: l.page as usize,
                                table: Arc::from(&out.buf(id)[t..t + n]),
                            });
                        }
                        pos = hi;
                    }
                }
                continue;
            }
            if cached {
                return Ok(None);
            }
            // Group by group to the end of this batch: a span that failed
            // (a bad block in it) is not read whole again for each group.
            while pos < end && pos / gb <= g1 {
                pos = self.read_group(pos / gb, pos, end, &mut out)?;
            }
        }
        Ok(Some(out))
    }

    /// Append the part of group `g` in `[pos, end)` to `out`, rebuilding
    /// blocks if needed.
    fn read_group(
        &self,
        g: u64,
        mut pos: u64,
        end: u64,
        out: &mut ReadData,
    ) -> Result<u64, DataError> {
        let size = self.geo.size;
        let start = self.geo.group_start(g);
        let len = self.geo.block_len(g) as u64;
        let group_end = end
            .min(start + self.placement.layout.group_bytes())
            .min(size);
        let first = ((pos - start) / len) as usize;
        let last = ((group_end - 1 - start) / len) as usize;
        let blocks = self.data_blocks(g, first, last)?;
        for (bi, block) in blocks.into_iter().enumerate() {
            let bstart = start + (first + bi) as u64 * len;
            let from = pos.max(bstart);
            let to = group_end.min(bstart + len);
            if from >= to {
                continue;
            }
            let id = out.adopt(block);
            out.push(id, (from - bstart) as usize, (to - bstart) as usize);
            pos = to;
        }
        Ok(pos)
    }
}

/// The answer of a read allowed to wait for storage (which always gives
/// one) out of the form the memory-only reads share.
pub(crate) fn answered(r: Result<Option<ReadData>, DataError>) -> Result<ReadData, DataError> {
    r?.ok_or_else(|| DataError::Layout("a read from storage gave no answer".into()))
}

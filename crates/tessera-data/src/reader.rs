//! Reads: any range, only the blocks needed, each block's CRC-32C checked;
//! a missing, unreadable or corrupt block is rebuilt from the other
//! stripes (degraded read) and the event recorded. Corrupt data is never
//! returned.

use crate::layout::{Geometry, LayoutKind, Placement};
use crate::DataError;
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tessera_backend::{Backend, StripeName, StripeRead};
use tessera_ec::Codec;

/// Something that went wrong with one stripe during a read (for fsck).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadEvent {
    pub stripe: usize,
    pub group: u64,
    pub what: String,
}

type OpenResult = Result<Box<dyn StripeRead>, String>;

impl Stripes {
    fn stripe(&self, i: usize) -> Result<&dyn StripeRead, String> {
        let r = self.opened[i].get_or_init(|| match &self.backends[i] {
            None => Err("filesystem unavailable".to_string()),
            Some(b) => b
                .open(&StripeName::new(self.fid, i as u8))
                .map_err(|e| e.to_string()),
        });
        match r {
            Ok(s) => Ok(s.as_ref()),
            Err(e) => Err(e.clone()),
        }
    }

    /// Block `g` of stripe `i`, verified.
    fn block(&self, i: usize, g: u64) -> Result<Vec<u8>, String> {
        let len = self.geo.block_len(g);
        let s = self.stripe(i)?;
        let mut buf = vec![0u8; len + 4];
        let n = s
            .read_at(self.geo.block_offset(g), &mut buf)
            .map_err(|e| e.to_string())?;
        if n != len + 4 {
            return Err(format!("short block: {n} of {} bytes", len + 4));
        }
        let crc = u32::from_le_bytes(buf[len..].try_into().expect("4 bytes"));
        buf.truncate(len);
        if crc32c::crc32c(&buf) != crc {
            return Err("block checksum mismatch".into());
        }
        Ok(buf)
    }
}

/// A stripe that has not answered within this is treated as missing and
/// its blocks are rebuilt from parity (the read goes on without it).
pub const DEFAULT_SLOW: Duration = Duration::from_secs(2);

const SLOW_PREFIX: &str = "no answer within";

/// The stripes of one file, shared with the reader threads (which may
/// outlive a read when a stripe is slow).
struct Stripes {
    geo: Geometry,
    fid: u64,
    backends: Vec<Option<Arc<dyn Backend>>>,
    opened: Vec<OnceLock<OpenResult>>,
}

pub struct FileReader {
    placement: Placement,
    geo: Geometry,
    s: Arc<Stripes>,
    codec: Option<Codec>,
    events: Mutex<Vec<ReadEvent>>,
    slow: Duration,
    /// Stripes that failed or were slow: later groups go around them.
    avoid: Mutex<Vec<bool>>,
    /// Stripes that were only slow (not broken): the last resort when
    /// nothing else can serve a group is to wait for them.
    slowset: Mutex<Vec<bool>>,
}

impl FileReader {
    /// `backends[i]` serves stripe i (`None`: its filesystem is unknown or off).
    pub fn new(
        placement: Placement,
        fid: u64,
        size: u64,
        backends: Vec<Option<Arc<dyn Backend>>>,
    ) -> Result<FileReader, DataError> {
        let l = placement.layout;
        if backends.len() != l.stripes() {
            return Err(DataError::Layout("one backend per stripe expected".into()));
        }
        let codec = match l.kind {
            LayoutKind::Rain => Some(Codec::new(l.k as usize, l.m as usize)?),
            _ => None,
        };
        let geo = l.geometry(size);
        Ok(FileReader {
            s: Arc::new(Stripes {
                geo,
                fid,
                opened: (0..backends.len()).map(|_| OnceLock::new()).collect(),
                backends,
            }),
            geo,
            placement,
            codec,
            events: Mutex::new(Vec::new()),
            slow: DEFAULT_SLOW,
            avoid: Mutex::new(vec![false; l.stripes()]),
            slowset: Mutex::new(vec![false; l.stripes()]),
        })
    }

    /// Treat a stripe as missing when it takes longer than `slow`.
    pub fn with_slow_threshold(mut self, slow: Duration) -> FileReader {
        self.slow = slow;
        self
    }

    /// Run `f(i)` for each `i` on its own thread; what has not answered
    /// within the slow threshold is reported as slow (its thread finishes
    /// in the background and its answer is dropped).
    fn hedged<T, F>(&self, which: &[usize], f: F) -> Vec<(usize, Result<T, String>)>
    where
        T: Send + 'static,
        F: Fn(&Stripes, usize) -> Result<T, String> + Send + Sync + Clone + 'static,
    {
        let (tx, rx) = mpsc::channel();
        for &i in which {
            let (s, tx2, f) = (Arc::clone(&self.s), tx.clone(), f.clone());
            let spawned = std::thread::Builder::new()
                .name("tessera-read".into())
                .spawn(move || {
                    let _ = tx2.send((i, f(&s, i)));
                });
            if let Err(e) = spawned {
                let _ = tx.send((i, Err(format!("cannot start a reader thread: {e}"))));
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
                    a[*i] = true;
                    if e.starts_with(SLOW_PREFIX) {
                        slow[*i] = true;
                    }
                }
            }
        }
        out.extend(
            which
                .iter()
                .filter(|i| avoid[**i])
                .map(|i| (*i, Err("skipped: failed earlier in this read".to_string()))),
        );
        out
    }

    /// The data blocks `first..=last` of group `g`, rebuilt if needed.
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
                // Nothing else can serve it: wait for a slow copy.
                for i in self.slow_stripes() {
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

    /// Data stripes' blocks of groups `g0..=g1` with one read per stripe
    /// (blocks of consecutive groups are contiguous in a stripe file), all
    /// verified; `None` if anything is missing or corrupt (the caller then
    /// goes group by group and rebuilds what is needed).
    fn span(&self, g0: u64, g1: u64) -> Option<Vec<Vec<u8>>> {
        let l = self.placement.layout;
        let n = if l.kind == LayoutKind::Rain {
            l.k as usize
        } else {
            1
        };
        let from = self.geo.block_offset(g0);
        let to = self.geo.block_offset(g1) + self.geo.block_len(g1) as u64 + 4;
        let want = (to - from) as usize;
        if self.avoid.lock().unwrap_or_else(|p| p.into_inner())[..n]
            .iter()
            .any(|a| *a)
        {
            return None;
        }
        let which: Vec<usize> = (0..n).collect();
        let mut got = self.hedged(&which, move |s, j| {
            let st = s.stripe(j)?;
            let mut buf = vec![0u8; want];
            match st.read_at(from, &mut buf) {
                Ok(r) if r == want => Ok(buf),
                Ok(r) => Err(format!("short read: {r} of {want}")),
                Err(e) => Err(e.to_string()),
            }
        });
        got.sort_by_key(|(j, _)| *j);
        let spans: Vec<Option<Vec<u8>>> = got.into_iter().map(|(_, r)| r.ok()).collect();
        let spans: Vec<Vec<u8>> = spans.into_iter().collect::<Option<_>>()?;
        for g in g0..=g1 {
            let off = (self.geo.block_offset(g) - from) as usize;
            let len = self.geo.block_len(g);
            for sp in &spans {
                if crc32c::crc32c(&sp[off..off + len]).to_le_bytes() != sp[off + len..off + len + 4]
                {
                    return None;
                }
            }
        }
        Some(spans)
    }

    /// Read up to `buf.len()` bytes at `offset`; short only at end of file.
    /// A range over several groups is read with one request per stripe
    /// (up to 64 MiB at a time); damage falls back to group-by-group
    /// degraded reads.
    pub fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, DataError> {
        let size = self.geo.size;
        if offset >= size {
            return Ok(0);
        }
        let end = size.min(offset + buf.len() as u64);
        let gb = self.placement.layout.group_bytes();
        let batch = (64u64 << 20).div_ceil(gb).max(1);
        let mut pos = offset;
        while pos < end {
            let g0 = pos / gb;
            let g1 = ((end - 1) / gb).min(g0 + batch - 1);
            if g1 > g0 {
                if let Some(spans) = self.span(g0, g1) {
                    let from = self.geo.block_offset(g0);
                    for g in g0..=g1 {
                        let start = self.geo.group_start(g);
                        let len = self.geo.block_len(g) as u64;
                        let off = self.geo.block_offset(g) - from;
                        for (j, sp) in spans.iter().enumerate() {
                            let bstart = start + j as u64 * len;
                            let lo = pos.max(bstart);
                            let hi = end.min(bstart + len).min(size);
                            if lo >= hi {
                                continue;
                            }
                            let src = (off + lo - bstart) as usize;
                            let dst = (lo - offset) as usize;
                            buf[dst..dst + (hi - lo) as usize]
                                .copy_from_slice(&sp[src..src + (hi - lo) as usize]);
                            pos = hi;
                        }
                    }
                    continue;
                }
            }
            pos = self.read_group(g0, pos, end, offset, buf)?;
        }
        Ok((end - offset) as usize)
    }

    /// Copy the part of group `g` in `[pos, end)` into `buf` (which starts
    /// at file offset `offset`), rebuilding blocks if needed.
    fn read_group(
        &self,
        g: u64,
        mut pos: u64,
        end: u64,
        offset: u64,
        buf: &mut [u8],
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
        for (bi, block) in blocks.iter().enumerate() {
            let bstart = start + (first + bi) as u64 * len;
            let from = pos.max(bstart);
            let to = group_end.min(bstart + len);
            if from >= to {
                continue;
            }
            let dst = (from - offset) as usize;
            buf[dst..dst + (to - from) as usize]
                .copy_from_slice(&block[(from - bstart) as usize..(to - bstart) as usize]);
            pos = to;
        }
        Ok(pos)
    }
}

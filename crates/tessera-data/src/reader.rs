//! Reads: any range, only the blocks needed, each block's CRC-32C checked;
//! a missing, unreadable or corrupt block is rebuilt from the other
//! stripes (degraded read) and the event recorded. Corrupt data is never
//! returned.

use crate::layout::{Geometry, LayoutKind, Placement};
use crate::DataError;
use std::sync::{Arc, Mutex, OnceLock};
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

pub struct FileReader {
    placement: Placement,
    geo: Geometry,
    fid: u64,
    backends: Vec<Option<Arc<dyn Backend>>>,
    opened: Vec<OnceLock<OpenResult>>,
    codec: Option<Codec>,
    events: Mutex<Vec<ReadEvent>>,
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
        Ok(FileReader {
            geo: l.geometry(size),
            opened: (0..backends.len()).map(|_| OnceLock::new()).collect(),
            placement,
            fid,
            backends,
            codec,
            events: Mutex::new(Vec::new()),
        })
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

    /// Fetch the given stripes' blocks of group `g` in parallel.
    fn fetch(&self, g: u64, which: &[usize]) -> Vec<(usize, Result<Vec<u8>, String>)> {
        if which.len() == 1 {
            return vec![(which[0], self.block(which[0], g))];
        }
        std::thread::scope(|s| {
            let hs: Vec<_> = which
                .iter()
                .map(|&i| (i, s.spawn(move || self.block(i, g))))
                .collect();
            hs.into_iter()
                .map(|(i, h)| {
                    (
                        i,
                        h.join()
                            .unwrap_or_else(|_| Err("reader thread panicked".into())),
                    )
                })
                .collect()
        })
    }

    /// The data blocks `first..=last` of group `g`, rebuilt if needed.
    fn data_blocks(&self, g: u64, first: usize, last: usize) -> Result<Vec<Vec<u8>>, DataError> {
        let l = self.placement.layout;
        let n = l.stripes();
        match l.kind {
            LayoutKind::Plain | LayoutKind::Replica => {
                for i in 0..n {
                    match self.block(i, g) {
                        Ok(b) => return Ok(vec![b]),
                        Err(e) => self.event(i, g, e),
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
        let read = |j: usize| -> Option<Vec<u8>> {
            let s = self.stripe(j).ok()?;
            let mut buf = vec![0u8; want];
            (s.read_at(from, &mut buf).ok()? == want).then_some(buf)
        };
        let spans: Vec<Option<Vec<u8>>> = if n == 1 {
            vec![read(0)]
        } else {
            std::thread::scope(|sc| {
                let hs: Vec<_> = (0..n).map(|j| sc.spawn(move || read(j))).collect();
                hs.into_iter().map(|h| h.join().ok().flatten()).collect()
            })
        };
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

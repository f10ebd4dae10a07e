//! Streaming writes: bounded memory (one group of k data blocks and m
//! parity blocks), the k+m block writes of a group in parallel, CRC-32C per
//! block, adler32 of the whole file on the fly.

use crate::crcjoin::Joiner;
use crate::format::{StripeHeader, HEADER_LEN};
use crate::layout::{Layout, LayoutKind, Placement};
use crate::DataError;
use std::sync::Arc;
use tessera_backend::{Backend, StripeName, StripeWrite};
use tessera_ec::Codec;

/// Blocks at least this long have their CRCs combined into the file's
/// CRC-32C rather than the data being read a second time.
const COMBINE_FROM: usize = 64 << 10;

/// A completed write, ready to be committed to the namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenFile {
    pub size: u64,
    /// adler32 of the file, as XRootD and EOS report it.
    pub adler32: u32,
    /// CRC-32C (Castagnoli) of the file (HTTP `Digest: crc32c`).
    pub crc32c: u32,
    pub placement: Placement,
}

pub struct FileWriter {
    layout: Layout,
    fid: u64,
    fsids: Vec<u32>,
    codec: Option<Codec>,
    /// One per stripe; `None` for stripes this writer does not write
    /// (a repair rebuilds only some).
    stripes: Vec<Option<Box<dyn StripeWrite>>>,
    /// The group being filled (up to k·B bytes).
    buf: Vec<u8>,
    parity: Vec<Vec<u8>>,
    group: u64,
    size: u64,
    adler: simd_adler32::Adler32,
    crc: u32,
    /// Joins block CRCs into `crc` (for the block length last used).
    joiner: Option<Joiner>,
    /// Seal with fsync (default) or leave the data to the page cache.
    durable: bool,
}

impl FileWriter {
    /// Start writing new file `fid` (an id no stripe was ever written
    /// for) with `layout` onto `targets` (one backend per stripe, in
    /// stripe order), for write `write_id`.
    pub fn create(
        layout: Layout,
        fid: u64,
        write_id: u64,
        targets: &[(u32, Arc<dyn Backend>)],
    ) -> Result<FileWriter, DataError> {
        let all: Vec<Option<(u32, Arc<dyn Backend>)>> = targets
            .iter()
            .map(|(id, b)| Some((*id, Arc::clone(b))))
            .collect();
        Self::create_with(layout, fid, write_id, &all, true)
    }

    /// Like `create`, writing only the stripes given (repair: they may
    /// exist and are replaced at the seal): the others are encoded but
    /// not stored.
    pub fn create_partial(
        layout: Layout,
        fid: u64,
        write_id: u64,
        targets: &[Option<(u32, Arc<dyn Backend>)>],
    ) -> Result<FileWriter, DataError> {
        Self::create_with(layout, fid, write_id, targets, false)
    }

    fn create_with(
        layout: Layout,
        fid: u64,
        write_id: u64,
        targets: &[Option<(u32, Arc<dyn Backend>)>],
        new_file: bool,
    ) -> Result<FileWriter, DataError> {
        if targets.len() != layout.stripes() {
            return Err(DataError::Layout(format!(
                "{} needs {} filesystems, got {}",
                layout.name(),
                layout.stripes(),
                targets.len()
            )));
        }
        let codec = match layout.kind {
            LayoutKind::Rain => Some(Codec::new(layout.k as usize, layout.m as usize)?),
            _ => None,
        };
        // The header goes out with the first group (`flush_group`).
        let create = |i: usize, b: &Arc<dyn Backend>| {
            let name = StripeName::new(fid, i as u8);
            if new_file {
                b.create_new(&name, write_id)
            } else {
                b.create(&name, write_id)
            }
        };
        // On a backend that answers over the network (a CephFS create is
        // a round trip to the MDS, several ms) the stripes are created at
        // once, as they are written and sealed; local ones in turn (no
        // thread to start for a create that takes microseconds).
        let remote = targets.iter().flatten().filter(|(_, b)| b.remote()).count();
        let created: Vec<Option<Result<Box<dyn StripeWrite>, _>>> = if remote == 0 {
            let mut out = Vec::with_capacity(targets.len());
            for (i, t) in targets.iter().enumerate() {
                let r = t.as_ref().map(|(_, b)| create(i, b));
                let failed = matches!(r, Some(Err(_)));
                out.push(r);
                if failed {
                    break;
                }
            }
            out
        } else {
            std::thread::scope(|s| {
                let hs: Vec<_> = targets
                    .iter()
                    .enumerate()
                    .map(|(i, t)| t.as_ref().map(|(_, b)| s.spawn(move || create(i, b))))
                    .collect();
                hs.into_iter()
                    .map(|h| h.map(|h| h.join().expect("stripe create thread")))
                    .collect()
            })
        };
        let mut stripes: Vec<Option<Box<dyn StripeWrite>>> = Vec::with_capacity(targets.len());
        let mut first_err = None;
        for (i, r) in created.into_iter().enumerate() {
            match r {
                Some(Ok(w)) => stripes.push(Some(w)),
                None => stripes.push(None),
                Some(Err(e)) => {
                    first_err.get_or_insert(DataError::Backend {
                        index: i,
                        source: e,
                    });
                }
            }
        }
        if let Some(e) = first_err {
            for w in stripes.into_iter().flatten() {
                w.abort();
            }
            return Err(e);
        }
        Ok(FileWriter {
            layout,
            fid,
            fsids: targets
                .iter()
                .map(|t| t.as_ref().map_or(0, |(id, _)| *id))
                .collect(),
            codec,
            stripes,
            // Both grow as data arrives: a small file never touches (or
            // zeroes) a whole group's worth of memory.
            buf: Vec::new(),
            parity: vec![
                Vec::new();
                layout.m as usize * usize::from(layout.kind == LayoutKind::Rain)
            ],
            group: 0,
            size: 0,
            adler: simd_adler32::Adler32::new(),
            crc: 0,
            joiner: None,
            durable: true,
        })
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Seal without fsync (`buffered` durability: the stripes survive a
    /// process crash, not a power loss).
    pub fn buffered(mut self) -> FileWriter {
        self.durable = false;
        for w in self.stripes.iter_mut().flatten() {
            w.buffered();
        }
        self
    }

    /// Whether appending `len` bytes only copies them into the group being
    /// filled (no stripe I/O).
    pub fn buffers(&self, len: usize) -> bool {
        self.buf.len() + len < self.layout.group_bytes() as usize
    }

    /// Bytes waiting in the group being filled.
    pub fn pending(&self) -> usize {
        self.buf.len()
    }

    /// The most memory this writer's buffers ever hold: a full group (and
    /// the few bytes its last block may be padded by) plus the parity
    /// blocks. While [`FileWriter::pending`] is at most `n` bytes, the
    /// group buffer holds at most `n.next_power_of_two()` (it grows in
    /// powers of two up to the group).
    pub fn memory_ceiling(&self) -> usize {
        self.group_cap() + self.parity.len() * self.layout.block_size as usize
    }

    /// Capacity of the group buffer when full: the group, and room for
    /// the last group's padding to whole blocks (never a reallocation).
    fn group_cap(&self) -> usize {
        self.layout.group_bytes() as usize + self.layout.k as usize
    }

    /// Append data. On error the writer must be aborted.
    pub fn write(&mut self, mut data: &[u8]) -> Result<(), DataError> {
        self.adler.write(data);
        self.size += data.len() as u64;
        let cap = self.layout.group_bytes() as usize;
        while !data.is_empty() {
            let take = (cap - self.buf.len()).min(data.len());
            let want = self.buf.len() + take;
            if want > self.buf.capacity() {
                // Powers of two up to the group: what is held stays within
                // what `memory_ceiling` promises the caller's budget.
                let to = want.next_power_of_two().min(self.group_cap());
                self.buf.reserve_exact(to - self.buf.len());
            }
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            if self.buf.len() == cap {
                self.flush_group(self.layout.block_size as usize, false)?;
            }
        }
        Ok(())
    }

    /// Stripe `i`'s header: sealed with the file's size and `blocks`, or
    /// (while being written) empty.
    fn header(&self, i: usize, sealed: bool, blocks: u64) -> [u8; HEADER_LEN] {
        StripeHeader {
            layout: self.layout,
            index: i as u8,
            sealed,
            fid: self.fid,
            size: if sealed { self.size } else { 0 },
            blocks: if sealed { blocks } else { 0 },
        }
        .encode()
    }

    /// Encode the buffered group with block length `len` and write it,
    /// with the stripes' headers if it is the first (the sealed ones if it
    /// is the `last` too: a small file takes one write per stripe).
    // long-fn: the write path of one group (encode, checksum, write per stripe, first and last group headers) in the order the bytes go out.
    fn flush_group(&mut self, len: usize, last: bool) -> Result<(), DataError> {
        let k = self.layout.k as usize;
        let data_len = self.buf.len();
        self.buf
            .reserve_exact((k * len).saturating_sub(self.buf.len()));
        self.buf.resize(k * len, 0);
        if let Some(codec) = &self.codec {
            let data: Vec<&[u8]> = self.buf.chunks(len).collect();
            for p in &mut self.parity {
                if p.len() < len {
                    p.resize(len, 0);
                }
            }
            let mut par: Vec<&mut [u8]> = self.parity.iter_mut().map(|p| &mut p[..len]).collect();
            codec.encode(&data, &mut par)?;
        }
        let geo = self.layout.geometry(u64::MAX);
        let off = geo.block_offset(self.group);
        // The headers go out with the first group.
        let headers: Vec<[u8; HEADER_LEN]> = if self.group > 0 {
            Vec::new()
        } else {
            debug_assert_eq!(off, HEADER_LEN as u64);
            (0..self.stripes.len())
                .map(|i| self.header(i, last, self.group + 1))
                .collect()
        };
        let headers = &headers;
        let buf = &self.buf;
        let parity = &self.parity;
        let kind = self.layout.kind;
        let block = |i: usize| -> &[u8] {
            match kind {
                LayoutKind::Rain if i >= k => &parity[i - k][..len],
                LayoutKind::Rain => &buf[i * len..(i + 1) * len],
                // plain and replica: every stripe holds the data
                _ => &buf[..len],
            }
        };
        // Each distinct block's checksums once (plain and replica stripes
        // all hold the same block): one CRC-32C per page (format 2) or per
        // block (format 1). The whole file's CRC-32C follows from the data
        // blocks' (joined) when they are whole and large, the padding of a
        // last RAIN group aside.
        let distinct = match kind {
            LayoutKind::Rain => k + self.parity.len(),
            _ => 1,
        };
        let layout = self.layout;
        let crcs: Vec<Vec<u32>> = (0..distinct)
            .map(|i| crate::sums::crcs(&layout, block(i)))
            .collect();
        // Joining needs x^(8 len) once per block length (a few µs): small
        // blocks are simply read again.
        if data_len == k * len && len >= COMBINE_FROM {
            let j = match self.joiner {
                Some(j) if j.piece_len() == len as u64 => j,
                _ => Joiner::new(len as u64),
            };
            self.joiner = Some(j);
            for c in &crcs[..k] {
                self.crc = j.join(self.crc, crate::sums::block_crc(c));
            }
        } else {
            self.crc = tessera_ec::crc32c_append(self.crc, &buf[..data_len]);
        }
        let sums: Vec<Vec<u8>> = crcs.iter().map(|c| crate::sums::encode(c)).collect();
        let sums_of = |i: usize| sums[i.min(distinct - 1)].as_slice();
        type Written = Vec<(usize, Result<(), tessera_backend::BackendError>)>;
        let write_one =
            |i: usize, w: &mut Box<dyn StripeWrite>, b: &[u8], sums: &[u8]| match headers.get(i) {
                Some(h) => w.write_parts_at(0, &[h, b, sums]),
                None => w.write_parts_at(off, &[b, sums]),
            };
        let live = self.stripes.iter().filter(|w| w.is_some()).count();
        let results: Written = if live <= 1 {
            // One stripe (plain): no thread to start.
            let mut out = Vec::new();
            for (i, w) in self.stripes.iter_mut().enumerate() {
                if let Some(w) = w {
                    out.push((i, write_one(i, w, block(i), sums_of(i))));
                }
            }
            out
        } else {
            std::thread::scope(|s| {
                let handles: Vec<_> = self
                    .stripes
                    .iter_mut()
                    .enumerate()
                    .filter_map(|(i, w)| w.as_mut().map(|w| (i, w)))
                    .map(|(i, w)| {
                        let (b, c) = (block(i), sums_of(i));
                        let h = s.spawn(move || write_one(i, w, b, c));
                        (i, h)
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|(i, h)| (i, h.join().expect("stripe writer thread")))
                    .collect()
            })
        };
        each_ok(results)?;
        self.group += 1;
        self.buf.clear();
        Ok(())
    }

    /// Write the last group, seal every stripe (header with the final size,
    /// fsync, rename into place). On error, call nothing more: the stripes
    /// not yet sealed were removed; sealed ones are orphans for fsck.
    pub fn finish(mut self) -> Result<WrittenFile, DataError> {
        // A file of one group: its sealed headers go with that group.
        let sealed_with_data = self.group == 0 && !self.buf.is_empty();
        if !self.buf.is_empty() {
            let len = self.buf.len().div_ceil(self.layout.k as usize);
            if let Err(e) = self.flush_group(len, true) {
                self.abort();
                return Err(e);
            }
        }
        let headers: Vec<[u8; HEADER_LEN]> = if sealed_with_data {
            Vec::new()
        } else {
            (0..self.stripes.len())
                .map(|i| self.header(i, true, self.group))
                .collect()
        };
        for ((i, w), h) in self.stripes.iter_mut().enumerate().zip(&headers) {
            let Some(w) = w else { continue };
            if let Err(e) = w.write_at(0, h) {
                let err = DataError::Backend {
                    index: i,
                    source: e,
                };
                self.abort();
                return Err(err);
            }
        }
        type Sealed = Vec<(usize, Result<(), tessera_backend::BackendError>)>;
        let stripes = std::mem::take(&mut self.stripes);
        let durable = self.durable;
        let seal = move |w: Box<dyn StripeWrite>| {
            if durable {
                w.seal()
            } else {
                w.seal_buffered()
            }
        };
        let results: Sealed = if stripes.iter().filter(|w| w.is_some()).count() <= 1 {
            stripes
                .into_iter()
                .enumerate()
                .filter_map(|(i, w)| w.map(|w| (i, seal(w))))
                .collect()
        } else {
            std::thread::scope(|s| {
                let hs: Vec<_> = stripes
                    .into_iter()
                    .enumerate()
                    .filter_map(|(i, w)| w.map(|w| (i, s.spawn(move || seal(w)))))
                    .collect();
                hs.into_iter()
                    .map(|(i, h)| (i, h.join().expect("seal thread")))
                    .collect()
            })
        };
        each_ok(results)?;
        Ok(WrittenFile {
            size: self.size,
            adler32: self.adler.finish(),
            crc32c: self.crc,
            placement: Placement {
                layout: self.layout,
                fsids: self.fsids,
            },
        })
    }

    /// Give up: remove every temporary stripe.
    pub fn abort(mut self) {
        for w in std::mem::take(&mut self.stripes).into_iter().flatten() {
            w.abort();
        }
    }
}

/// The first stripe's failure, if any (with its index).
fn each_ok(
    results: Vec<(usize, Result<(), tessera_backend::BackendError>)>,
) -> Result<(), DataError> {
    for (index, r) in results {
        r.map_err(|source| DataError::Backend { index, source })?;
    }
    Ok(())
}

//! Short reads from the pages they touch (stripe format 2). A read reads,
//! in each data block it touches, the pages it covers and their CRCs, and
//! verifies only those: a 1 KiB element of a vector read costs a 4 KiB
//! page (two, across a page boundary), not its whole 1 MiB block. The
//! checksums follow the block in the stripe: the first page read of a
//! block reads its whole table too (1 KiB per 1 MiB block; in the same
//! request when it is near the pages) and the reader keeps the tables of
//! its last blocks ([`TABLES_KEPT`]), so later reads in that block read
//! their pages alone. Anything unexpected (a missing, slow or
//! corrupt stripe, a format-1 file) answers `None`
//! and the caller reads whole blocks, which rebuilds from parity what is
//! damaged and records it.

use crate::layout::LayoutKind;
use crate::readdata::ReadData;
use crate::striped::Striped;
use crate::stripes::Stripes;
use std::sync::Arc;

/// Pages and checksums at most this far apart are read with one request.
const ONE_READ_GAP: u64 = 8 << 10;
/// Checksum tables of blocks a reader keeps (most recent first).
pub(crate) const TABLES_KEPT: usize = 32;

/// The checksum tables of a reader's last blocks read by pages: (stripe,
/// block, table). The tables were read with pages that matched them, and
/// a reader's file never changes, so they stay right.
#[derive(Default)]
pub(crate) struct Tables(std::sync::Mutex<std::collections::VecDeque<Table>>);

/// A block's checksum table: (stripe, block, table).
type Table = (usize, u64, Arc<[u8]>);

impl Tables {
    fn get(&self, stripe: usize, block: u64) -> Option<Arc<[u8]>> {
        let t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        t.iter()
            .find(|(s, b, _)| *s == stripe && *b == block)
            .map(|(_, _, t)| Arc::clone(t))
    }

    fn keep(&self, stripe: usize, block: u64, table: Arc<[u8]>) {
        let mut t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        t.push_front((stripe, block, table));
        t.truncate(TABLES_KEPT);
    }
}

/// Where a page read's bytes are in a stripe file.
#[derive(Clone, Copy)]
struct Pages {
    stripe: usize,
    /// The block (group) and the first page read in it.
    block: u64,
    /// The block's first file byte and length.
    bstart: u64,
    block_len: usize,
    first_page: usize,
    /// The pages' bytes.
    data_at: u64,
    data_len: usize,
    /// The block's checksum table.
    table_at: u64,
    table_len: usize,
    /// The requested bytes within the pages.
    skip: usize,
    len: usize,
}

impl Striped {
    /// `len` bytes at `offset` from the pages they touch, verified page by
    /// page, block by block (a range across blocks reads each block's
    /// pages), when the file has page checksums; `None` otherwise or on any
    /// trouble (see the module comment). With `cached`, from memory only,
    /// on the caller's thread.
    pub(crate) fn read_pages(&self, offset: u64, len: usize, cached: bool) -> Option<ReadData> {
        let mut out = ReadData::new(Arc::clone(self.pool()));
        let end = self.geometry().size.min(offset.saturating_add(len as u64));
        let mut pos = offset;
        while pos < end {
            let at = self.pages_of(pos, (end - pos) as usize)?;
            let (buf, table) = self.pages(at, cached)?;
            let id = out.adopt(buf);
            out.push(id, at.skip, at.skip + at.len);
            out.push_sums(crate::pagesums::BlockSums {
                start: at.bstart,
                len: at.block_len,
                page: self.placement().layout.page as usize,
                table,
            });
            pos += at.len as u64;
        }
        (pos > offset).then_some(out)
    }

    /// The verified pages `at` names, and their block's checksums.
    fn pages(&self, at: Pages, cached: bool) -> Option<(Vec<u8>, Arc<[u8]>)> {
        if cached {
            let st = self.s.stripe_cached(at.stripe)?;
            return read_pages_with(&self.s, at, |from, buf| st.read_cached(from, buf));
        }
        // Through the hedge: a stripe slower than the threshold gives way
        // to the whole-block path, which reads around it.
        let mut got = self.hedged(&[at.stripe], move |s, _| {
            let st = s.stripe(at.stripe)?;
            read_pages_with(s, at, |from, buf| st.read_at(from, buf).ok())
                .ok_or_else(|| "page read failed".to_string())
        });
        got.pop()?.1.ok()
    }

    /// Where the pages of `[offset, offset + len)` are, up to the end of
    /// the data block `offset` is in, if page-readable.
    fn pages_of(&self, offset: u64, len: usize) -> Option<Pages> {
        let layout = self.placement().layout;
        let page = layout.page as u64;
        let geo = self.geometry();
        if page == 0 || len == 0 || offset >= geo.size {
            return None;
        }
        let end = geo.size.min(offset + len as u64);
        let g = offset / layout.group_bytes();
        let start = geo.group_start(g);
        let bl = geo.block_len(g) as u64;
        let j = ((offset - start) / bl) as usize;
        let bstart = start + j as u64 * bl;
        let end = end.min(bstart + bl);
        let stripe = match layout.kind {
            LayoutKind::Rain => j,
            // Any copy holds it: the first not known to be failing.
            LayoutKind::Plain | LayoutKind::Replica => {
                (0..layout.stripes()).find(|i| !self.avoided(*i))?
            }
        };
        if self.avoided(stripe) {
            return None;
        }
        let (p0, p1) = ((offset - bstart) / page, (end - 1 - bstart) / page);
        let block_at = geo.block_offset(g);
        Some(Pages {
            stripe,
            block: g,
            bstart,
            block_len: bl as usize,
            first_page: p0 as usize,
            data_at: block_at + p0 * page,
            data_len: (((p1 + 1) * page).min(bl) - p0 * page) as usize,
            table_at: block_at + bl,
            table_len: geo.sums_len(g),
            skip: (offset - bstart - p0 * page) as usize,
            len: (end - offset) as usize,
        })
    }
}

/// Read the pages `at` names with `read` (a whole read or `None`) and
/// verify them against their block's checksum table (kept, or read with
/// them and then kept): the pages' buffer, and the table.
fn read_pages_with(
    s: &Stripes,
    at: Pages,
    read: impl Fn(u64, &mut [u8]) -> Option<usize>,
) -> Option<(Vec<u8>, Arc<[u8]>)> {
    let page = s.geo.layout.page as usize;
    let sums = |t: &[u8]| -> Option<std::ops::Range<usize>> {
        let from = 4 * at.first_page;
        let to = from + 4 * at.data_len.div_ceil(page);
        (to <= t.len()).then_some(from..to)
    };
    if let Some(table) = s.tables.get(at.stripe, at.block) {
        let mut buf = s.pool.take(at.data_len);
        if read(at.data_at, &mut buf)? != at.data_len {
            return None;
        }
        let ok = crate::sums::pages_match(page, &buf, &table[sums(&table)?]);
        return ok.then_some((buf, table));
    }
    let gap = at.table_at - (at.data_at + at.data_len as u64);
    let (buf, table): (Vec<u8>, Arc<[u8]>) = if gap <= ONE_READ_GAP {
        let n = (at.table_at + at.table_len as u64 - at.data_at) as usize;
        let mut buf = s.pool.take(n);
        if read(at.data_at, &mut buf)? != n {
            return None;
        }
        let table: Arc<[u8]> = Arc::from(&buf[n - at.table_len..]);
        buf.truncate(at.data_len);
        (buf, table)
    } else {
        let mut table = vec![0u8; at.table_len];
        let mut buf = s.pool.take(at.data_len);
        if read(at.table_at, &mut table)? != at.table_len
            || read(at.data_at, &mut buf)? != at.data_len
        {
            return None;
        }
        (buf, Arc::from(table))
    };
    if !crate::sums::pages_match(page, &buf, &table[sums(&table)?]) {
        return None;
    }
    s.tables.keep(at.stripe, at.block, Arc::clone(&table));
    Some((buf, table))
}

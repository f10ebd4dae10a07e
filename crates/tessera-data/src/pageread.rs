//! Short reads from the pages they touch (stripe format 2). A read reads,
//! in each data block it touches, the pages it covers and their CRCs, and
//! verifies only those: a 1 KiB element of a vector read costs a 4 KiB
//! page (two, across a page boundary), not its whole 1 MiB block. The
//! checksums follow the block in the stripe; when they are near the pages
//! one read takes both, else two. Anything unexpected (a missing, slow or
//! corrupt stripe, a format-1 file) answers `None`
//! and the caller reads whole blocks, which rebuilds from parity what is
//! damaged and records it.

use crate::layout::LayoutKind;
use crate::readdata::ReadData;
use crate::striped::Striped;
use crate::stripes::Stripes;
use std::sync::Arc;

/// Pages and checksums at most this far apart are read with one request.
const ONE_READ_GAP: u64 = 64 << 10;

/// Where a page read's bytes are in a stripe file.
#[derive(Clone, Copy)]
struct Pages {
    stripe: usize,
    /// The pages' bytes.
    data_at: u64,
    data_len: usize,
    /// Their checksums.
    sums_at: u64,
    sums_len: usize,
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
            let buf = self.pages(at, cached)?;
            let id = out.adopt(buf);
            out.push(id, at.skip, at.skip + at.len);
            pos += at.len as u64;
        }
        (pos > offset).then_some(out)
    }

    /// The verified pages `at` names.
    fn pages(&self, at: Pages, cached: bool) -> Option<Vec<u8>> {
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
            data_at: block_at + p0 * page,
            data_len: (((p1 + 1) * page).min(bl) - p0 * page) as usize,
            sums_at: block_at + bl + 4 * p0,
            sums_len: 4 * (p1 - p0 + 1) as usize,
            skip: (offset - bstart - p0 * page) as usize,
            len: (end - offset) as usize,
        })
    }
}

/// Read the pages `at` names with `read` (a whole read or `None`), and
/// verify them: the pages' buffer.
fn read_pages_with(
    s: &Stripes,
    at: Pages,
    read: impl Fn(u64, &mut [u8]) -> Option<usize>,
) -> Option<Vec<u8>> {
    let page = s.geo.layout.page as usize;
    let gap = at.sums_at - (at.data_at + at.data_len as u64);
    if gap <= ONE_READ_GAP {
        let n = (at.sums_at + at.sums_len as u64 - at.data_at) as usize;
        let mut buf = s.pool.take(n);
        if read(at.data_at, &mut buf)? != n {
            return None;
        }
        let sums = &buf[n - at.sums_len..];
        if !crate::sums::pages_match(page, &buf[..at.data_len], sums) {
            return None;
        }
        buf.truncate(at.data_len);
        return Some(buf);
    }
    let mut buf = s.pool.take(at.data_len);
    let mut sums = [0u8; 1024];
    let sums = sums.get_mut(..at.sums_len)?;
    if read(at.sums_at, sums)? != at.sums_len || read(at.data_at, &mut buf)? != at.data_len {
        return None;
    }
    crate::sums::pages_match(page, &buf, sums).then_some(buf)
}

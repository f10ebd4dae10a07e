//! Page checksums of a read, for XRootD's `kXR_pgread` (a CRC-32C per
//! 4 KiB page of the *file*, the first and last pages short when the read
//! does not start or end on a page boundary). Format-2 stripes store
//! exactly these for every whole page of a block whose pages line up with
//! the file's (every block of a plain or replica file, every block of a
//! RAIN file but those of its last, short group), and a read that had a
//! block's table in hand (it read it with the block, or with the block's
//! pages) hands it on with the bytes ([`BlockSums`]): those pages' CRCs are
//! the stored ones, with no second pass over the data. The rest (the short
//! pages at the edges of a request, a RAIN file's last group, format-1
//! files, blocks rebuilt from parity) are computed from the bytes, which
//! the read verified against the stored checksums already.

use crate::crcjoin::Joiner;
use crate::readdata::ReadData;
use std::sync::Arc;

/// The stored checksums of one block: file bytes `start..start + len`,
/// pages of `page` bytes from `start`; `table` is what the stripe stores
/// after the block (one little-endian CRC-32C per page, then the whole
/// block's).
#[derive(Debug, Clone)]
pub(crate) struct BlockSums {
    pub start: u64,
    pub len: usize,
    pub page: usize,
    pub table: Arc<[u8]>,
}

impl BlockSums {
    /// Whether the page CRCs join to the block's CRC. A long read
    /// verifies the block's bytes against the block CRC alone; this ties
    /// the page CRCs to those bytes too (a damaged table is not sent to a
    /// client as if it were right: its pages are computed instead), at
    /// one 32-step product per page instead of a pass over the data.
    fn consistent(&self) -> bool {
        let pages = self.len.div_ceil(self.page);
        if self.page == 0 || self.table.len() != 4 * pages + 4 {
            return false;
        }
        let crc = |i: usize| {
            u32::from_le_bytes(self.table[4 * i..4 * i + 4].try_into().expect("4 bytes"))
        };
        let full = Joiner::new(self.page as u64);
        let mut acc = 0;
        for i in 0..pages {
            let n = self.page.min(self.len - i * self.page);
            acc = if n == self.page {
                full.join(acc, crc(i))
            } else {
                Joiner::new(n as u64).join(acc, crc(i))
            };
        }
        acc == crc(pages)
    }

    /// The stored CRC of file bytes `a..b`, when they are exactly one of
    /// this block's pages.
    fn of(&self, page: usize, a: u64, b: u64) -> Option<u32> {
        if self.page != page || a < self.start {
            return None;
        }
        let rel = (a - self.start) as usize;
        if rel >= self.len || !rel.is_multiple_of(page) {
            return None;
        }
        let i = rel / page;
        let end = self.start + (rel + page).min(self.len) as u64;
        let c = self.table.get(4 * i..4 * i + 4)?;
        (b == end).then(|| u32::from_le_bytes(c.try_into().expect("4 bytes")))
    }
}

/// Where a walk over a read's slices is.
struct Cursor<'a> {
    slices: Vec<&'a [u8]>,
    i: usize,
    at: usize,
}

impl Cursor<'_> {
    /// Skip `n` bytes.
    fn skip(&mut self, mut n: usize) {
        while n > 0 && self.i < self.slices.len() {
            let take = n.min(self.slices[self.i].len() - self.at);
            self.advance(take);
            n -= take;
        }
    }

    /// The CRC-32C of the next `n` bytes.
    fn crc(&mut self, mut n: usize) -> u32 {
        let mut crc = 0;
        while n > 0 && self.i < self.slices.len() {
            let s = self.slices[self.i];
            let take = n.min(s.len() - self.at);
            crc = tessera_ec::crc32c_append(crc, &s[self.at..self.at + take]);
            self.advance(take);
            n -= take;
        }
        crc
    }

    fn advance(&mut self, n: usize) {
        self.at += n;
        if self.at == self.slices[self.i].len() {
            self.i += 1;
            self.at = 0;
        }
    }
}

impl ReadData {
    /// The CRC-32C of each file page these bytes (file bytes from
    /// `offset`) touch, pages of `page` bytes aligned to file offsets (the
    /// first and last may be short), and how many of them were the stored
    /// ones (the rest were computed; see the module comment).
    pub fn page_crcs(&self, offset: u64, page: usize) -> (Vec<u32>, usize) {
        let end = offset + self.len() as u64;
        let mut out = Vec::with_capacity(self.len().div_ceil(page) + 1);
        let mut cur = Cursor {
            slices: self.slices().filter(|s| !s.is_empty()).collect(),
            i: 0,
            at: 0,
        };
        let (mut a, mut stored, mut si) = (offset, 0, 0);
        let sums = self.sums();
        // Whether block `si`'s table is consistent (checked when first used).
        let mut ok: Option<bool> = None;
        while a < end {
            let b = end.min((a / page as u64 + 1) * page as u64);
            let n = (b - a) as usize;
            while si < sums.len() && sums[si].start + sums[si].len as u64 <= a {
                si += 1;
                ok = None;
            }
            let found = sums.get(si).and_then(|s| {
                let c = s.of(page, a, b)?;
                ok.get_or_insert_with(|| s.consistent()).then_some(c)
            });
            match found {
                Some(c) => {
                    cur.skip(n);
                    stored += 1;
                    out.push(c);
                }
                None => out.push(cur.crc(n)),
            }
            a = b;
        }
        (out, stored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::readdata::BufPool;

    fn sums_of(start: u64, block: &[u8], page: usize) -> BlockSums {
        let mut t: Vec<u8> = block
            .chunks(page)
            .flat_map(|p| tessera_ec::crc32c(p).to_le_bytes())
            .collect();
        t.extend_from_slice(&tessera_ec::crc32c(block).to_le_bytes());
        BlockSums {
            start,
            len: block.len(),
            page,
            table: Arc::from(t),
        }
    }

    #[test]
    fn stored_where_pages_line_up_computed_elsewhere() {
        let file: Vec<u8> = (0..40_000u32).map(|i| (i * 13 + 1) as u8).collect();
        let want = |a: usize, b: usize| -> Vec<u32> {
            let mut v = Vec::new();
            let mut x = a;
            while x < b {
                let y = b.min((x / 4096 + 1) * 4096);
                v.push(tessera_ec::crc32c(&file[x..y]));
                x = y;
            }
            v
        };
        // Two blocks: 16 KiB from 0 (aligned), then 10,000 bytes from
        // 16 KiB + 100 (a RAIN last group: not aligned).
        let mut d = ReadData::new(BufPool::new(0));
        let id = d.adopt(file.clone());
        d.push(id, 1000, 16384);
        d.push_sums(sums_of(0, &file[..16384], 4096));
        d.push(id, 16384, 30_000);
        d.push_sums(sums_of(16484, &file[16484..26484], 4096));
        let (crcs, stored) = d.page_crcs(1000, 4096);
        assert_eq!(crcs, want(1000, 30_000));
        // Pages 1..4 of the first block are whole and stored; the first
        // is short; nothing of the second block lines up.
        assert_eq!(stored, 3);
        // The stored ones are used, not recomputed: a table that is
        // consistent but does not match the bytes shows through.
        let other: Vec<u8> = file[..8192].iter().map(|b| b ^ 0x55).collect();
        let mut d2 = ReadData::new(BufPool::new(0));
        let id = d2.adopt(file.clone());
        d2.push(id, 0, 8192);
        d2.push_sums(sums_of(0, &other, 4096));
        let (crcs, stored) = d2.page_crcs(0, 4096);
        assert_eq!((stored, crcs[1]), (2, tessera_ec::crc32c(&other[4096..])));
        // A damaged table (a page CRC that does not join to the block's)
        // is not used: its block's pages are computed.
        let mut bad = sums_of(0, &file[..8192], 4096);
        let mut t = bad.table.to_vec();
        t[4] ^= 1;
        bad.table = Arc::from(t);
        let mut d3 = ReadData::new(BufPool::new(0));
        let id = d3.adopt(file.clone());
        d3.push(id, 0, 8192);
        d3.push_sums(bad);
        assert_eq!(d3.page_crcs(0, 4096), (want(0, 8192), 0));
        // Across slices without sums: computed over both.
        let mut d4 = ReadData::new(BufPool::new(0));
        let a = d4.adopt(file[..5000].to_vec());
        let b = d4.adopt(file[5000..9000].to_vec());
        d4.push(a, 0, 5000);
        d4.push(b, 0, 4000);
        assert_eq!(d4.page_crcs(0, 4096), (want(0, 9000), 0));
    }
}

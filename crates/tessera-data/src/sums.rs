//! The checksums stored after each block of a stripe, both formats
//! (`docs/stripe-format.md`): format 1, one CRC-32C of the whole block;
//! format 2, one CRC-32C per page (4 KiB; the last page of a short block
//! covers what there is), so that a read of a few KiB verifies only the
//! pages it touches, then the CRC-32C of the whole block, so that a long
//! read verifies a block in one pass (a CRC over 4 KiB pieces streaming
//! from memory runs at about two thirds of the speed of one over the
//! block: `bench-short`, 8 MiB reads). All little-endian.

use crate::crcjoin::Joiner;
use crate::layout::Layout;

/// The CRCs stored after `block`: format 1, the block's; format 2, each
/// page's and then the block's (joined from the pages': no second pass).
pub(crate) fn crcs(layout: &Layout, block: &[u8]) -> Vec<u32> {
    match layout.page {
        0 => vec![tessera_ec::crc32c(block)],
        p => {
            let p = p as usize;
            let mut out: Vec<u32> = block.chunks(p).map(tessera_ec::crc32c).collect();
            let whole = if block.len().is_multiple_of(p) {
                let j = Joiner::new(p as u64);
                out.iter().fold(0, |acc, c| j.join(acc, *c))
            } else {
                tessera_ec::crc32c(block)
            };
            out.push(whole);
            out
        }
    }
}

/// The CRC-32C of the whole block among `crcs` (the last).
pub(crate) fn block_crc(crcs: &[u32]) -> u32 {
    *crcs.last().expect("a block has a CRC")
}

/// The stored form of `crcs`.
pub(crate) fn encode(crcs: &[u32]) -> Vec<u8> {
    crcs.iter().flat_map(|c| c.to_le_bytes()).collect()
}

/// Whether `block` matches `sums`, the checksums stored after it: the
/// whole block's CRC (both formats keep it last; one pass).
pub(crate) fn verify(layout: &Layout, block: &[u8], sums: &[u8]) -> bool {
    sums.len() == layout.sums_len(block.len())
        && tessera_ec::crc32c(block).to_le_bytes() == sums[sums.len() - 4..]
}

/// `verify`, and each page's CRC too (format 2): what a deep check does,
/// so that a damaged page CRC is found before a short read meets it.
pub(crate) fn verify_all(layout: &Layout, block: &[u8], sums: &[u8]) -> bool {
    verify(layout, block, sums)
        && match layout.page {
            0 => true,
            p => pages_match(p as usize, block, &sums[..sums.len() - 4]),
        }
}

/// Whether `data`, whole pages of a block from a page boundary (the last
/// may be short: the end of the block), matches `sums`, the stored
/// checksums of those pages.
pub(crate) fn pages_match(page: usize, data: &[u8], sums: &[u8]) -> bool {
    sums.len() == 4 * data.len().div_ceil(page)
        && data
            .chunks(page)
            .zip(sums.chunks_exact(4))
            .all(|(d, s)| tessera_ec::crc32c(d).to_le_bytes() == s[..4])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_finds_a_flipped_byte() {
        let block: Vec<u8> = (0..10_000u32).map(|i| (i * 7 + 3) as u8).collect();
        for page in [0, 4096] {
            let mut l = Layout::plain();
            l.page = page;
            let sums = encode(&crcs(&l, &block));
            assert_eq!(sums.len(), l.sums_len(block.len()));
            assert!(verify(&l, &block, &sums) && verify_all(&l, &block, &sums));
            let mut bad = block.clone();
            bad[9_999] ^= 1;
            assert!(!verify(&l, &bad, &sums) && !verify_all(&l, &bad, &sums));
        }
        // The block CRC joined from whole pages is the block's CRC.
        let whole: Vec<u8> = (0..8192u32).map(|i| (i * 31) as u8).collect();
        let c = crcs(&Layout::plain(), &whole);
        assert_eq!(c.len(), 3);
        assert_eq!(block_crc(&c), tessera_ec::crc32c(&whole));
        // Pages 1 and 2 alone, the second short (the block's end).
        let sums = encode(&crcs(&Layout::plain(), &block));
        assert!(pages_match(4096, &block[4096..], &sums[4..12]));
        assert!(!pages_match(4096, &block[4096..], &sums[..8]));
    }
}

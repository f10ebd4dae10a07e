//! The checksums stored after each block of a stripe, both formats
//! (`docs/stripe-format.md`): format 1, one CRC-32C of the whole block;
//! format 2, one CRC-32C per page (4 KiB; the last page of a short block
//! covers what there is), so that a read of a few KiB verifies only the
//! pages it touches. All little-endian.

use crate::layout::Layout;

/// The CRC-32C of each checksum unit of `block` (one for format 1).
pub(crate) fn crcs(layout: &Layout, block: &[u8]) -> Vec<u32> {
    match layout.page {
        0 => vec![tessera_ec::crc32c(block)],
        p => block.chunks(p as usize).map(tessera_ec::crc32c).collect(),
    }
}

/// The stored form of `crcs`.
pub(crate) fn encode(crcs: &[u32]) -> Vec<u8> {
    crcs.iter().flat_map(|c| c.to_le_bytes()).collect()
}

/// Whether `block` matches `sums`, the checksums stored after it.
pub(crate) fn verify(layout: &Layout, block: &[u8], sums: &[u8]) -> bool {
    match layout.page {
        0 => sums.len() == 4 && tessera_ec::crc32c(block).to_le_bytes() == sums[..4],
        p => pages_match(p as usize, block, sums),
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
            assert!(verify(&l, &block, &sums));
            let mut bad = block.clone();
            bad[9_999] ^= 1;
            assert!(!verify(&l, &bad, &sums));
        }
        // Pages 1 and 2 alone, the second short (the block's end).
        let sums = encode(&crcs(&Layout::plain(), &block));
        assert!(pages_match(4096, &block[4096..], &sums[4..]));
        assert!(!pages_match(4096, &block[4096..], &sums[..8]));
    }
}

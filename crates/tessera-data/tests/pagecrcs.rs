//! Page checksums for XRootD's pgread come from the stripes where the
//! stored pages are the file's pages, whatever path the read took (long
//! reads, page reads, kept blocks), and are always the CRC-32C of the
//! bytes returned; a damaged checksum table is never handed on.

mod common;
use common::{plain, rain42, TestFile};
use tessera_data::*;

const PAGE: usize = 4096;

/// The CRC-32C of each file page of `bytes[a..b]`.
fn want(bytes: &[u8], a: usize, b: usize) -> Vec<u32> {
    let mut v = Vec::new();
    let mut x = a;
    while x < b {
        let y = b.min((x / PAGE + 1) * PAGE);
        v.push(tessera_ec::crc32c(&bytes[x..y]));
        x = y;
    }
    v
}

#[test]
fn page_crcs_are_right_and_mostly_stored() {
    let bs = 64u64 << 10;
    let (plain, rain) = (plain(bs), rain42(bs));
    for layout in [plain, rain] {
        // A short last group (RAIN: blocks that do not line up with pages).
        let f = TestFile::write(layout, 20 * bs as usize + 12_345, 7, 9);
        let len = f.bytes.len();
        let r = f.reader();
        // Long reads, aligned and not, up to the end of the file.
        for (off, n) in [(0, 1 << 20), (1000, 700_000), (len - 50_000, 1 << 20)] {
            let d = r.read(off as u64, n).expect("read");
            let end = len.min(off + n);
            let (crcs, stored) = d.page_crcs(off as u64, PAGE);
            assert_eq!(crcs, want(&f.bytes, off, end), "{} {off}", layout.name());
            if off == 0 {
                // Every page of the first 1 MiB lines up with a stored one.
                assert_eq!(stored, crcs.len(), "{}", layout.name());
            }
        }
        // Short reads: page reads, then reads from the kept blocks.
        let r = f.reader();
        for off in [5 * PAGE + 10, 300_000, 301_000, 302_000, len - 3000] {
            let d = r.read(off as u64, 3 * PAGE).expect("read");
            let end = len.min(off + 3 * PAGE);
            let (crcs, _) = d.page_crcs(off as u64, PAGE);
            assert_eq!(crcs, want(&f.bytes, off, end), "{} {off}", layout.name());
        }
        let d = r.read(8 * PAGE as u64, 2 * PAGE).expect("read");
        let (crcs, stored) = d.page_crcs(8 * PAGE as u64, PAGE);
        assert_eq!((crcs, stored), (want(&f.bytes, 8 * PAGE, 10 * PAGE), 2));
    }
}

#[test]
fn a_damaged_page_checksum_is_not_handed_on() {
    let bs = 64u64 << 10;
    let f = TestFile::write(plain(bs), 4 * bs as usize, 3, 4);
    // Page 2's stored CRC in block 0 (the table follows the block).
    let p = f.stripe_path(0);
    let mut all = std::fs::read(&p).expect("stripe");
    all[HEADER_LEN + bs as usize + 8] ^= 0x01;
    std::fs::write(&p, all).expect("write");
    let r = f.reader();
    // A long read verifies the block by its whole CRC: the bytes are
    // right, and the page CRCs given are the bytes', computed.
    let d = r.read(0, 2 * bs as usize).expect("read");
    let (crcs, stored) = d.page_crcs(0, PAGE);
    assert_eq!(crcs, want(&f.bytes, 0, 2 * bs as usize));
    assert_eq!(stored, (bs as usize) / PAGE, "block 1's are stored");
}

//! Short reads keep the verified blocks they read, and the reads that
//! follow inside them are answered from those: the right bytes for every
//! layout and range, a block read once per run of short reads rather than
//! once per read, and damage still found when a block is first read.

mod common;
use common::{plain, rain42, TestFile};

use std::sync::atomic::Ordering;
use tessera_data::*;

fn file(layout: Layout, len: usize) -> TestFile {
    TestFile::write(layout, len, 11, 3)
}

/// Flip a byte of block `g` of stripe `i` (blocks of `block` bytes, each
/// followed by a CRC per 4 KiB page).
fn flip(f: &TestFile, i: usize, g: u64, block: u64) {
    let p = f.stripe_path(i);
    let mut all = std::fs::read(&p).expect("stripe");
    all[HEADER_LEN + (g * (block + block / 4096 * 4 + 4)) as usize + 100] ^= 0x01;
    std::fs::write(&p, all).expect("write");
}

fn kept_hits(r: &FileReader) -> u64 {
    r.read_ahead_stats().kept_hits.load(Ordering::Relaxed)
}

#[test]
fn short_reads_are_exact_and_read_each_block_once() {
    let bs = 64u64 << 10;
    for layout in [plain(bs), rain42(bs)] {
        // Ends in a short last group.
        let f = file(layout, 20 * bs as usize + 12_345);
        let r = f.reader();
        // Sequential 4 KiB reads: one in 16 reads its block.
        let mut off = 0usize;
        let mut reads = 0u64;
        while off < f.bytes.len() {
            let d = r.read(off as u64, 4096).expect("read");
            let end = f.bytes.len().min(off + 4096);
            assert!(
                d.to_vec() == f.bytes[off..end],
                "{} at {off}",
                layout.name()
            );
            off = end;
            reads += 1;
        }
        // Every read but the first of each block (the short last group
        // has more, smaller blocks).
        assert!(
            kept_hits(&r) >= reads - reads / 10,
            "{}: {} of {reads} reads from kept blocks",
            layout.name(),
            kept_hits(&r)
        );
        // Short reads anywhere, across block and group edges, and past
        // the end.
        let mut x = 7u64;
        for _ in 0..500 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let off = (x >> 20) as usize % (f.bytes.len() + 100);
            let len = 1 + (x >> 44) as usize % 200_000;
            let d = r.read(off as u64, len).expect("read");
            let want: &[u8] = if off >= f.bytes.len() {
                &[]
            } else {
                &f.bytes[off..f.bytes.len().min(off + len)]
            };
            assert!(d.to_vec() == want, "{} {off}+{len}", layout.name());
        }
    }
}

#[test]
fn damage_is_still_found_when_a_block_is_first_read() {
    let bs = 64u64 << 10;
    // Plain: nothing to rebuild from, so the damaged block is an error,
    // never wrong bytes; the blocks around it read on.
    let f = file(plain(bs), 8 * bs as usize);
    flip(&f, 0, 3, bs);
    let r = f.reader();
    assert!(r.read(2 * bs, 4096).expect("block 2").to_vec() == f.bytes[2 * bs as usize..][..4096]);
    assert!(r.read(3 * bs + 10, 4096).is_err(), "a damaged page");
    assert!(r.read(3 * bs + 50, 10).is_err(), "still damaged");
    // Format 2 checks each 4 KiB page: the good pages of that block read.
    let good = r.read(3 * bs + 5000, 10).expect("another page of block 3");
    assert!(good.to_vec() == f.bytes[3 * bs as usize + 5000..][..10]);
    assert!(r.read(4 * bs, 100).expect("block 4").to_vec() == f.bytes[4 * bs as usize..][..100]);
    // RAIN: rebuilt from parity, the right bytes.
    let f = file(rain42(bs), 16 * bs as usize);
    flip(&f, 1, 2, bs);
    let r = f.reader();
    // Group 2, block 1 of the file: bytes from (2 * 4 + 1) * bs.
    let at = 9 * bs as usize;
    for k in 0..20 {
        let o = at + k * 3000;
        assert!(r.read(o as u64, 3000).expect("degraded").to_vec() == f.bytes[o..o + 3000]);
    }
    assert!(!r.events().is_empty(), "the damage was recorded");
}

/// Short reads from memory only (what an async caller does on its own
/// thread): the right bytes when the kernel holds the stripes, and `None`,
/// never wrong bytes and nothing recorded, when a stripe would have to be
/// read from the disk or a block does not match its checksum; the ordinary
/// read then serves it.
#[test]
fn reads_from_memory_are_exact_or_step_aside() {
    let bs = 64u64 << 10;
    for layout in [plain(bs), rain42(bs)] {
        let f = file(layout, 20 * bs as usize + 12_345);
        let r = f.reader();
        let size = f.bytes.len() as u64;
        for (o, n) in [
            (0, 1),
            (0, 4096),
            (bs - 10, 20),
            (5 * bs + 7, 300_000),
            (size - 100, 4096),
        ] {
            let d = r.read_cached(o, n).expect("in the page cache");
            let end = size.min(o + n as u64) as usize;
            assert!(d.to_vec() == f.bytes[o as usize..end], "{o}+{n}");
        }
        assert!(r.read_cached(0, 1 << 20).is_none(), "only short reads");
        assert!(r.read_cached(size, 10).is_none(), "past the end");
        // Asked for more than is left: what is left.
        let d = r
            .read_cached(size - 1000, 8 << 20)
            .expect("the last 1000 bytes");
        assert!(d.to_vec() == f.bytes[size as usize - 1000..]);
        // Out of the page cache (the stripes were synced: clean pages).
        for i in 0..layout.stripes() {
            common::evict(&f.stripe_path(i));
        }
        // A non-blocking read that misses starts the kernel's read-ahead;
        // on a busy machine that I/O can finish before the same call looks
        // again, and the bytes come back: then they are the right ones.
        let r = f.reader();
        if let Some(d) = r.read_cached(3 * bs, 4096) {
            assert!(
                d.to_vec() == f.bytes[3 * bs as usize..][..4096],
                "only right bytes"
            );
        }
        assert!(r.read(3 * bs, 4096).expect("read").to_vec() == f.bytes[3 * bs as usize..][..4096]);
    }
    // A damaged block: not served from memory, not recorded there; the
    // ordinary read rebuilds it and records the damage.
    let f = file(rain42(bs), 16 * bs as usize);
    flip(&f, 1, 2, bs);
    let r = f.reader();
    let at = 9 * bs;
    assert!(r.read_cached(at, 3000).is_none());
    assert!(r.events().is_empty());
    assert!(r.read(at, 3000).expect("degraded").to_vec() == f.bytes[at as usize..][..3000]);
    assert!(!r.events().is_empty(), "the damage was recorded");
}

/// Format 2: short reads that do not follow each other (vector-read
/// elements, baskets) are served from the pages they touch, exactly, for
/// every layout; a read that follows the previous one reads whole blocks
/// and keeps them (sequential readers).
#[test]
fn scattered_short_reads_are_served_from_their_pages() {
    let bs = 1u64 << 20;
    let layouts = [
        Layout::plain(),
        Layout::replica(2).expect("replica"),
        rain42(bs),
    ];
    for layout in layouts {
        let f = file(layout, 9 * bs as usize + 777);
        let r = f.reader();
        let mut x = 11u64;
        let mut reads = 0;
        for _ in 0..300 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let off = (x >> 20) as usize % f.bytes.len();
            let len = 1 + (x >> 50) as usize % 9000;
            let d = r.read(off as u64, len).expect("read");
            let end = f.bytes.len().min(off + len);
            assert!(
                d.to_vec() == f.bytes[off..end],
                "{} {off}+{len}",
                layout.name()
            );
            reads += 1;
        }
        let pages = r.read_ahead_stats().page_reads.load(Ordering::Relaxed);
        // All but those that cross a block edge (whole blocks, kept: the
        // reads that land in those later are answered from memory).
        let served = pages + kept_hits(&r);
        assert!(pages > reads / 2, "{}: {pages} of {reads}", layout.name());
        assert!(
            served >= reads - reads / 20,
            "{}: {served} of {reads}",
            layout.name()
        );
        let before = kept_hits(&r);
        for i in 0..16u64 {
            let d = r.read(5 * bs + i * 4096, 4096).expect("sequential");
            assert!(d.to_vec() == f.bytes[(5 * bs + i * 4096) as usize..][..4096]);
        }
        assert!(
            kept_hits(&r) - before >= 14,
            "sequential reads keep their block"
        );
    }
}

/// A sequential reader whose blocks are not in memory reads as a gateway
/// does: from memory first, then from storage. The memory-only try that
/// steps aside must not hide that the read continues the last one: the
/// read from storage then reads and keeps the whole block, and the reads
/// after it are answered from it.
#[test]
fn a_memory_miss_keeps_a_sequential_read_sequential() {
    let bs = 64u64 << 10;
    let f = file(plain(bs), 4 * bs as usize);
    let r = f.reader();
    let evict = || common::evict(&f.stripe_path(0));
    let mut reads = 0u64;
    for off in (0..4 * bs).step_by(4096) {
        evict();
        let d = match r.read_cached(off, 4096) {
            Some(d) => d,
            None => r.read(off, 4096).expect("read"),
        };
        assert!(d.to_vec() == f.bytes[off as usize..][..4096]);
        reads += 1;
    }
    assert!(kept_hits(&r) >= reads / 2, "{} of {reads}", kept_hits(&r));
}

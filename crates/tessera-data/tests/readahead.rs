//! Read-ahead: a sequential reader gets each next range from the
//! background read, a random reader causes none, readers with several
//! requests in flight get the right bytes, and damage met by a range read
//! ahead is read around like any other.

mod common;
use common::TestFile;

use std::sync::atomic::Ordering;
use tessera_data::*;

/// A RAIN 4+2 file with 64 KiB blocks (256 KiB per group).
fn rain_file(len: usize) -> TestFile {
    let layout = Layout::rain(4, 2)
        .expect("layout")
        .with_block_size(64 << 10)
        .expect("block size");
    TestFile::write(layout, len, 5, 1)
}

const CHUNK: usize = 1 << 20;

#[test]
fn a_sequential_reader_is_served_from_the_read_ahead() {
    let f = rain_file(12 * CHUNK + 12345);
    let r = f.reader();
    let mut got = Vec::new();
    let mut off = 0u64;
    loop {
        let d = r.read(off, CHUNK).expect("read");
        if d.is_empty() {
            break;
        }
        let mut buf = vec![0u8; d.len()];
        d.copy_to(&mut buf);
        got.extend_from_slice(&buf);
        off += buf.len() as u64;
    }
    assert!(got == f.bytes, "bytes differ");
    let s = r.read_ahead_stats();
    let (issued, hits) = (
        s.issued.load(Ordering::Relaxed),
        s.hits.load(Ordering::Relaxed),
    );
    // 13 requests: every one after the first was read ahead.
    assert_eq!(hits, 12, "issued {issued}");
    assert_eq!(issued, 12);
}

#[test]
fn random_and_small_reads_are_not_read_ahead() {
    let f = rain_file(8 * CHUNK);
    let r = f.reader();
    for (i, off) in [5u64, 3, 7, 1, 6].iter().enumerate() {
        let off = off * CHUNK as u64 + i as u64;
        let mut buf = vec![0u8; CHUNK];
        let n = r.read_at(off, &mut buf).expect("read");
        assert!(buf[..n] == f.bytes[off as usize..off as usize + n]);
    }
    // Small sequential requests: the kernel's read-ahead is enough.
    let mut off = 0u64;
    for _ in 0..16 {
        let mut buf = vec![0u8; 4096];
        let n = r.read_at(off, &mut buf).expect("read");
        assert!(buf[..n] == f.bytes[off as usize..off as usize + n]);
        off += n as u64;
    }
    assert_eq!(r.read_ahead_stats().issued.load(Ordering::Relaxed), 0);
    // And with read-ahead off, a sequential reader gets none.
    let r = f.reader().with_read_ahead(false);
    for c in 0..4u64 {
        r.read(c * CHUNK as u64, CHUNK).expect("read");
    }
    assert_eq!(r.read_ahead_stats().issued.load(Ordering::Relaxed), 0);
}

#[test]
fn several_requests_in_flight_read_the_right_bytes() {
    let f = rain_file(16 * CHUNK + 777);
    let r = f.reader();
    let chunks = f.bytes.len().div_ceil(CHUNK);
    // Four readers taking chunks in turn, as xrdcp keeps four in flight.
    std::thread::scope(|s| {
        for w in 0..4 {
            let (r, f) = (&r, &f);
            s.spawn(move || {
                let mut c = w;
                while c < chunks {
                    let off = c * CHUNK;
                    let mut buf = vec![0u8; CHUNK];
                    let n = r.read_at(off as u64, &mut buf).expect("read");
                    assert!(buf[..n] == f.bytes[off..off + n], "chunk {c}");
                    c += 4;
                }
            });
        }
    });
    let s = r.read_ahead_stats();
    assert!(s.hits.load(Ordering::Relaxed) <= s.issued.load(Ordering::Relaxed));
}

#[test]
fn damage_met_by_read_ahead_is_read_around_and_reported() {
    let f = rain_file(6 * CHUNK);
    // Corrupt a block of stripe 2 in the last megabyte's groups.
    let p = f.stripe_path(2);
    let mut raw = std::fs::read(&p).expect("stripe");
    let at = raw.len() - 70_000;
    raw[at] ^= 0x20;
    std::fs::write(&p, raw).expect("corrupt");
    let r = f.reader();
    let mut got = Vec::new();
    for c in 0..6u64 {
        let d = r.read(c * CHUNK as u64, CHUNK).expect("read");
        let mut buf = vec![0u8; d.len()];
        d.copy_to(&mut buf);
        got.extend_from_slice(&buf);
    }
    assert!(got == f.bytes, "bytes differ");
    assert!(r.read_ahead_stats().hits.load(Ordering::Relaxed) >= 4);
    assert!(r.events().iter().any(|e| e.stripe == 2), "{:?}", r.events());
}

//! Stripe format version 1 stays readable: stripes written by the code of
//! that version (commit 75c0e10) are kept under `tests/fixtures/stripe-v1/`
//! with the placement record the namespace held for them, and read here
//! with today's reader: whole, in short pieces, checked deep, and rebuilt
//! around a damaged block.
//!
//! The fixtures were made by the ignored `write_fixtures` below, run at
//! that commit:
//!   TESSERA_WRITE_FIXTURES=1 cargo test -p tessera-data --test format_v1 -- --ignored

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use tessera_backend::{Backend, FolderBackend, StripeName};
use tessera_data::*;

/// (name, layout, bytes, seed, file id)
fn cases() -> Vec<(&'static str, Layout, usize, u64, u64)> {
    let bs = 4096;
    vec![
        (
            "plain",
            Layout::plain().with_block_size(bs).unwrap(),
            10_000,
            1,
            101,
        ),
        (
            "rain42",
            Layout::rain(4, 2).unwrap().with_block_size(bs).unwrap(),
            3 * 4 * 4096 + 777,
            2,
            102,
        ),
        (
            "replica2",
            Layout::replica(2).unwrap().with_block_size(bs).unwrap(),
            5000,
            3,
            103,
        ),
        (
            "plain64k",
            Layout::plain().with_block_size(64 << 10).unwrap(),
            200_000,
            4,
            104,
        ),
    ]
}

fn fixtures() -> PathBuf {
    // Read when the test runs (cargo sets it): a binary cached from a
    // checkout at another path must not look there.
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo");
    Path::new(&root).join("tests/fixtures/stripe-v1")
}

/// The folders of a fixture, opened as they are (nothing written).
fn backends(dir: &Path, n: usize) -> Vec<Arc<dyn Backend>> {
    (0..n)
        .map(|i| {
            let b: Arc<dyn Backend> = Arc::new(FolderBackend::open(dir.join(format!("fs{i}"))));
            b
        })
        .collect()
}

#[test]
#[ignore = "writes the v1 fixtures: run only at a commit that writes version 1"]
fn write_fixtures() {
    if std::env::var_os("TESSERA_WRITE_FIXTURES").is_none() {
        return;
    }
    for (name, layout, len, seed, fid) in cases() {
        let dir = fixtures().join(name);
        let _ = std::fs::remove_dir_all(&dir);
        let targets: Vec<(u32, Arc<dyn Backend>)> = (0..layout.stripes())
            .map(|i| {
                let b: Arc<dyn Backend> =
                    Arc::new(FolderBackend::new(dir.join(format!("fs{i}"))).expect("backend"));
                (i as u32 + 1, b)
            })
            .collect();
        let mut w = FileWriter::create(layout, fid, 1, &targets).expect("create");
        w.write(&common::data(len, seed)).expect("write");
        let done = w.finish().expect("finish");
        std::fs::write(dir.join("placement.bin"), done.placement.encode()).expect("placement");
    }
}

/// A reader over the fixture `name`, its placement as stored.
fn open(name: &str, size: usize, fid: u64) -> (FileReader, Placement, PathBuf) {
    let dir = fixtures().join(name);
    let raw = std::fs::read(dir.join("placement.bin")).expect("placement record");
    let p = Placement::decode(&raw).expect("a version 1 placement decodes");
    let b = backends(&dir, p.layout.stripes());
    let r = FileReader::new(
        p.clone(),
        fid,
        size as u64,
        b.into_iter().map(Some).collect(),
    )
    .expect("reader");
    (r, p, dir)
}

#[test]
fn version_1_stripes_read_whole_and_in_short_pieces() {
    for (name, layout, len, seed, fid) in cases() {
        let want = common::data(len, seed);
        let (r, p, _) = open(name, len, fid);
        assert_eq!(p.layout.kind, layout.kind, "{name}");
        assert_eq!(p.layout.block_size, layout.block_size, "{name}");
        let mut all = vec![0u8; len];
        assert_eq!(r.read_at(0, &mut all).expect("read"), len, "{name}");
        assert!(all == want, "{name}: whole file");
        for (off, n) in [
            (0usize, 1usize),
            (4095, 2),
            (4096, 4096),
            (len - 10, 10),
            (777, 5000),
        ] {
            let n = n.min(len - off);
            let d = r.read(off as u64, n).expect("short").to_vec();
            assert!(d == want[off..off + n], "{name}: {n} at {off}");
        }
    }
}

#[test]
fn version_1_stripes_pass_the_deep_check() {
    for (name, _, len, _, fid) in cases() {
        let (_, p, dir) = open(name, len, fid);
        for (i, b) in backends(&dir, p.layout.stripes()).iter().enumerate() {
            let st = check_stripe(Some(b), &p, fid, len as u64, i, true);
            assert_eq!(st, StripeState::Ok, "{name} stripe {i}");
        }
    }
}

#[test]
fn a_damaged_version_1_block_is_found_and_rebuilt() {
    let (name, _, len, seed, fid) = cases().remove(1);
    let tmp = tempfile::tempdir().expect("tmp");
    let copy = tmp.path().join(name);
    copy_dir(&fixtures().join(name), &copy);
    // Flip a byte in block 1 of stripe 0 (version 1: a block and its CRC).
    let n = StripeName::new(fid, 0);
    let stripe = copy.join("fs0").join(n.dir()).join(n.file());
    let mut raw = std::fs::read(&stripe).expect("stripe");
    raw[HEADER_LEN + (4096 + 4) + 10] ^= 1;
    std::fs::write(&stripe, raw).expect("write");
    let p = Placement::decode(&std::fs::read(copy.join("placement.bin")).unwrap()).unwrap();
    let b = backends(&copy, 6);
    assert_eq!(
        check_stripe(Some(&b[0]), &p, fid, len as u64, 0, true),
        StripeState::CorruptBlocks(vec![1])
    );
    let r = FileReader::new(p, fid, len as u64, b.into_iter().map(Some).collect()).unwrap();
    let mut all = vec![0u8; len];
    assert_eq!(r.read_at(0, &mut all).expect("degraded read"), len);
    assert!(all == common::data(len, seed), "rebuilt from parity");
    assert!(!r.events().is_empty(), "the bad block was reported");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read dir").flatten() {
        let t = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), &t).expect("copy");
        }
    }
}

//! A stripe's header goes out with its first group of blocks: a stripe
//! being written holds nothing until then, and a file of one group is
//! written with its sealed header at once. Whatever the number of groups,
//! the sealed stripe's header has the file's size and block count.

mod common;
use common::{data, plain, rain42, TestFile};

use std::sync::Arc;
use tessera_backend::{Backend, FolderBackend, StripeName};
use tessera_data::*;

fn header_of(f: &TestFile, i: usize) -> StripeHeader {
    let raw = std::fs::read(f.stripe_path(i)).expect("stripe");
    StripeHeader::decode(&raw[..HEADER_LEN]).expect("header")
}

#[test]
fn sealed_headers_carry_size_and_blocks_for_one_and_many_groups() {
    let bs = 64u64 << 10;
    let (plain, rain) = (plain(bs), rain42(bs));
    for (layout, group) in [(plain, bs), (rain, 4 * bs)] {
        // empty, one short group, exactly one group, several groups (the
        // last short), exactly two groups
        for len in [0, 4096, group, 2 * group + 5, 2 * group] {
            let f = TestFile::write(layout, len as usize, 5, 9);
            let blocks = len.div_ceil(group);
            for i in 0..layout.stripes() {
                let h = header_of(&f, i);
                assert!(h.sealed, "{} len {len} stripe {i}", layout.name());
                assert_eq!((h.size, h.blocks), (len, blocks), "len {len} stripe {i}");
                assert_eq!((h.fid, h.index), (9, i as u8));
            }
            let mut back = vec![0u8; len as usize];
            let n = f.reader().read_at(0, &mut back).expect("read");
            assert_eq!(n, len as usize);
            assert!(back == f.bytes, "{} len {len}: bytes differ", layout.name());
        }
    }
}

#[test]
fn a_stripe_being_written_is_empty_until_its_first_group() {
    let dir = tempfile::tempdir().expect("tmp");
    let b: Arc<dyn Backend> = Arc::new(FolderBackend::new(dir.path().join("fs0")).expect("fs"));
    let layout = Layout::plain().with_block_size(64 << 10).expect("bs");
    let mut w = FileWriter::create(layout, 7, 42, &[(1, Arc::clone(&b))]).expect("create");
    let n = StripeName::new(7, 0);
    // A new file's stripe is written under its final name.
    let stripe = dir.path().join("fs0").join(n.dir()).join(n.file());
    assert!(!dir
        .path()
        .join("fs0")
        .join(n.dir())
        .join(n.temp_file(42))
        .exists());
    let len = || std::fs::metadata(&stripe).expect("stripe").len();
    w.write(&data(1000, 1)).expect("write");
    assert_eq!(len(), 0, "nothing written before the first group is full");
    // The group fills: header, block and its page CRCs go out together.
    w.write(&data(64 << 10, 2)).expect("write");
    assert_eq!(len(), (HEADER_LEN + (64 << 10) + 16 * 4 + 4) as u64);
    let raw = std::fs::read(&stripe).expect("stripe");
    let h = StripeHeader::decode(&raw[..HEADER_LEN]).expect("header");
    assert!(!h.sealed);
    let done = w.finish().expect("finish");
    assert_eq!(done.size, 1000 + (64 << 10));
    let raw = std::fs::read(&stripe).expect("stripe");
    let h = StripeHeader::decode(&raw[..HEADER_LEN]).expect("header");
    assert!(h.sealed && h.size == done.size && h.blocks == 2);
}

#[test]
fn an_aborted_new_file_leaves_no_stripe() {
    let dir = tempfile::tempdir().expect("tmp");
    let b: Arc<dyn Backend> = Arc::new(FolderBackend::new(dir.path().join("fs0")).expect("fs"));
    let mut w = FileWriter::create(Layout::plain(), 8, 43, &[(1, Arc::clone(&b))]).expect("w");
    w.write(&data(5000, 3)).expect("write");
    w.abort();
    assert!(b.list().expect("list").is_empty(), "nothing left");
}

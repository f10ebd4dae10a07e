//! Write through the public API into real folders, then read back whole
//! and in random ranges, with up to m stripes missing, truncated or
//! corrupted. More than m lost is a clear error, never wrong bytes.

mod common;
use common::data;

use proptest::prelude::*;
use std::sync::Arc;
use tessera_backend::{Backend, FolderBackend, StripeName};
use tessera_data::*;

fn backends(dir: &std::path::Path, n: usize) -> Vec<(u32, Arc<dyn Backend>)> {
    (0..n)
        .map(|i| {
            let b: Arc<dyn Backend> =
                Arc::new(FolderBackend::new(dir.join(format!("fs{i}"))).expect("backend"));
            (i as u32 + 1, b)
        })
        .collect()
}

/// A RAIN layout with 4 KiB blocks (small files span many groups).
fn rain4k(k: u8, m: u8) -> Layout {
    Layout::rain(k, m)
        .expect("valid layout")
        .with_block_size(4096)
        .expect("valid block size")
}

fn write(
    layout: Layout,
    fid: u64,
    t: &[(u32, Arc<dyn Backend>)],
    bytes: &[u8],
    chunk: usize,
) -> WrittenFile {
    let mut w = FileWriter::create(layout, fid, 1, t).expect("create");
    for c in bytes.chunks(chunk.max(1)) {
        w.write(c).expect("write");
    }
    w.finish().expect("finish")
}

fn stripe_path(dir: &std::path::Path, i: usize, fid: u64) -> std::path::PathBuf {
    let n = tessera_backend::StripeName::new(fid, i as u8);
    dir.join(format!("fs{i}")).join(n.dir()).join(n.file())
}

fn reader(w: &WrittenFile, fid: u64, t: &[(u32, Arc<dyn Backend>)]) -> FileReader {
    FileReader::new(
        w.placement.clone(),
        fid,
        w.size,
        t.iter().map(|(_, b)| Some(b.clone())).collect(),
    )
    .expect("reader")
}

fn read_all(r: &FileReader) -> Result<Vec<u8>, DataError> {
    let mut out = vec![0u8; r.size() as usize];
    let n = r.read_at(0, &mut out)?;
    out.truncate(n);
    Ok(out)
}

fn arb_layout() -> impl Strategy<Value = Layout> {
    prop_oneof![
        Just(Layout::plain()),
        (2u8..=3).prop_map(|n| Layout::replica(n).expect("ok")),
        (1u8..=16, 1u8..=4).prop_map(|(k, m)| Layout::rain(k, m).expect("ok")),
    ]
    .prop_map(|l| l.with_block_size(4096).expect("ok"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    fn round_trip_with_up_to_m_faults(
        layout in arb_layout(),
        size_pick in prop_oneof![Just(0usize), Just(1usize), Just(4095usize), Just(4097usize), 0usize..200_000],
        chunk in 1usize..20_000,
        seed in any::<u64>(),
        faults in proptest::collection::vec((any::<u8>(), 0u8..3), 0..4),
        ranges in proptest::collection::vec((any::<u32>(), 0usize..20_000), 1..6),
    ) {
        let dir = tempfile::tempdir().expect("tmp");
        let t = backends(dir.path(), layout.stripes());
        let bytes = data(size_pick, seed);
        let w = write(layout, 7, &t, &bytes, chunk);
        prop_assert_eq!(w.size, bytes.len() as u64);
        prop_assert_eq!(w.adler32, simd_adler32::adler32(&bytes.as_slice()));
        prop_assert_eq!(w.crc32c, crc32c::crc32c(&bytes));
        let r = reader(&w, 7, &t);
        prop_assert_eq!(read_all(&r).expect("clean read"), bytes.clone());

        // Damage up to m stripes: remove, truncate, or flip a bit.
        let m = layout.m as usize;
        let mut damaged = std::collections::BTreeSet::new();
        for (pick, how) in faults.iter().take(m) {
            let i = *pick as usize % layout.stripes();
            if !damaged.insert(i) { continue; }
            let p = stripe_path(dir.path(), i, 7);
            match how {
                0 => std::fs::remove_file(&p).expect("rm"),
                1 => {
                    let len = std::fs::metadata(&p).expect("meta").len();
                    let f = std::fs::OpenOptions::new().write(true).open(&p).expect("open");
                    f.set_len(len / 2).expect("truncate");
                }
                _ => {
                    let mut all = std::fs::read(&p).expect("read");
                    if all.len() > HEADER_LEN {
                        let at = HEADER_LEN + (seed as usize % (all.len() - HEADER_LEN));
                        all[at] ^= 0x10;
                    }
                    std::fs::write(&p, all).expect("write");
                }
            }
        }
        let r = reader(&w, 7, &t);
        prop_assert_eq!(read_all(&r).expect("degraded read"), bytes.clone());
        for (off, len) in ranges {
            let off = if bytes.is_empty() { 0 } else { off as usize % (bytes.len() + 10) };
            let mut buf = vec![0u8; len];
            let n = r.read_at(off as u64, &mut buf).expect("range read");
            let want: &[u8] = if off >= bytes.len() { &[] } else { &bytes[off..bytes.len().min(off + len)] };
            prop_assert_eq!(&buf[..n], want);
            // The same range without the copy (what gateways send).
            let d = r.read(off as u64, len).expect("range read, zero-copy");
            prop_assert_eq!(d.slices().map(<[u8]>::len).sum::<usize>(), d.len());
            prop_assert_eq!(d.to_vec(), want.to_vec());
        }
    }
}

#[test]
fn more_than_m_lost_is_an_error_not_wrong_data() {
    let dir = tempfile::tempdir().expect("tmp");
    let layout = rain4k(4, 2);
    let t = backends(dir.path(), 6);
    let bytes = data(100_000, 3);
    let w = write(layout, 9, &t, &bytes, 777);
    for i in [0usize, 2, 5] {
        std::fs::remove_file(stripe_path(dir.path(), i, 9)).expect("rm");
    }
    let r = reader(&w, 9, &t);
    let err = read_all(&r).expect_err("3 of 6 lost");
    assert!(
        matches!(err, DataError::Unrecoverable { need: 4, .. }),
        "{err}"
    );
    assert!(!r.events().is_empty());
}

#[test]
fn aborted_and_unsealed_writes_leave_no_stripe() {
    let dir = tempfile::tempdir().expect("tmp");
    let layout = rain4k(2, 1);
    let t = backends(dir.path(), 3);
    let mut w = FileWriter::create(layout, 11, 5, &t).expect("create");
    w.write(&data(50_000, 1)).expect("write");
    for (i, (_, b)) in t.iter().enumerate() {
        let l = b.list().expect("list");
        assert_eq!(l.len(), 1);
        // A new file's stripe is written under its final name (unsealed).
        assert_eq!(
            (l[0].name, l[0].temp_of_write),
            (StripeName::new(11, i as u8), None)
        );
    }
    w.abort();
    for (_, b) in &t {
        assert!(b.list().expect("list").is_empty());
    }
    // A repair's stripes (which replace existing ones) go under temporary
    // names until sealed.
    let slots: Vec<_> = t.iter().map(|(id, b)| Some((*id, Arc::clone(b)))).collect();
    let mut r = FileWriter::create_partial(layout, 12, 6, &slots).expect("create");
    r.write(&data(50_000, 1)).expect("write");
    for (_, b) in &t {
        assert_eq!(b.list().expect("list")[0].temp_of_write, Some(6));
    }
    r.abort();
    for (_, b) in &t {
        assert!(b.list().expect("list").is_empty());
    }
}

#[test]
fn stripe_headers_describe_the_file() {
    let dir = tempfile::tempdir().expect("tmp");
    let layout = rain4k(4, 2);
    let t = backends(dir.path(), 6);
    let w = write(layout, 12, &t, &data(4096 * 4 * 3 + 5, 2), 1000);
    for i in 0..6 {
        let raw = std::fs::read(stripe_path(dir.path(), i, 12)).expect("read");
        let h = StripeHeader::decode(&raw[..HEADER_LEN]).expect("header");
        assert_eq!(
            (h.index as usize, h.fid, h.size, h.blocks, h.sealed),
            (i, 12, w.size, 4, true)
        );
        // 3 full blocks + one of ceil(5/4) = 2 bytes, each with its CRC
        assert_eq!(raw.len(), HEADER_LEN + 3 * (4096 + 8) + 2 + 8);
    }
}

/// A real folder backend whose reads hang for a while (a stuck disk or
/// an unresponsive CephFS instance).
struct Hanging {
    inner: FolderBackend,
    delay: std::time::Duration,
}

struct HangingRead {
    inner: Box<dyn tessera_backend::StripeRead>,
    delay: std::time::Duration,
}

impl tessera_backend::StripeRead for HangingRead {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize, tessera_backend::BackendError> {
        std::thread::sleep(self.delay);
        self.inner.read_at(offset, buf)
    }
    fn len(&self) -> Result<u64, tessera_backend::BackendError> {
        self.inner.len()
    }
}

impl Backend for Hanging {
    fn create(
        &self,
        n: &tessera_backend::StripeName,
        w: u64,
    ) -> Result<Box<dyn tessera_backend::StripeWrite>, tessera_backend::BackendError> {
        self.inner.create(n, w)
    }
    fn open(
        &self,
        n: &tessera_backend::StripeName,
    ) -> Result<Box<dyn tessera_backend::StripeRead>, tessera_backend::BackendError> {
        Ok(Box::new(HangingRead {
            inner: self.inner.open(n)?,
            delay: self.delay,
        }))
    }
    fn remove(
        &self,
        n: &tessera_backend::StripeName,
        w: Option<u64>,
    ) -> Result<(), tessera_backend::BackendError> {
        self.inner.remove(n, w)
    }
    fn list(&self) -> Result<Vec<tessera_backend::ListedStripe>, tessera_backend::BackendError> {
        self.inner.list()
    }
    fn capacity(&self) -> Result<tessera_backend::Capacity, tessera_backend::BackendError> {
        self.inner.capacity()
    }
    fn describe(&self) -> String {
        "hanging".into()
    }
    fn read_marker(&self) -> Result<Option<String>, tessera_backend::BackendError> {
        self.inner.read_marker()
    }
    fn write_marker(&self, text: &str) -> Result<(), tessera_backend::BackendError> {
        self.inner.write_marker(text)
    }
    fn root_id(&self) -> Result<tessera_backend::RootId, tessera_backend::BackendError> {
        self.inner.root_id()
    }
}

/// The folder backend `dir/fs<i>` with reads that take `delay`.
fn hanging(dir: &std::path::Path, i: usize, delay: std::time::Duration) -> Arc<dyn Backend> {
    Arc::new(Hanging {
        inner: FolderBackend::new(dir.join(format!("fs{i}"))).expect("backend"),
        delay,
    })
}

#[test]
fn a_hanging_stripe_is_read_around() {
    let dir = tempfile::tempdir().expect("tmp");
    let layout = rain4k(4, 2);
    let t = backends(dir.path(), 6);
    let bytes = data(4096 * 4 * 5 + 77, 9);
    let w = write(layout, 21, &t, &bytes, 5000);
    // Stripe 1's filesystem now takes 5 s per read.
    let mut slow = t.clone();
    slow[1].1 = hanging(dir.path(), 1, std::time::Duration::from_secs(5));
    {
        let r = FileReader::new(
            w.placement.clone(),
            21,
            w.size,
            slow.iter().map(|(_, b)| Some(b.clone())).collect(),
        )
        .expect("reader")
        .with_slow_threshold(std::time::Duration::from_millis(300));
        let t0 = std::time::Instant::now();
        // one range inside a group (hedged block reads) and the whole file
        // (one request per stripe, then group by group)
        let mut small = vec![0u8; 100];
        assert_eq!(r.read_at(4096 + 10, &mut small).expect("read"), 100);
        assert_eq!(&small[..], &bytes[4096 + 10..4096 + 110]);
        assert_eq!(read_all(&r).expect("read around the slow stripe"), bytes);
        let took = t0.elapsed();
        assert!(
            took < std::time::Duration::from_secs(4),
            "waited for the slow stripe: {took:?}"
        );
        assert!(
            r.events()
                .iter()
                .any(|e| e.stripe == 1 && e.what.contains("no answer")),
            "{:?}",
            r.events()
        );
    }
}

#[test]
fn when_only_slow_stripes_are_left_the_read_waits_for_them() {
    let dir = tempfile::tempdir().expect("tmp");
    let slow = |i: usize, t: &mut Vec<(u32, Arc<dyn Backend>)>| {
        t[i].1 = hanging(dir.path(), i, std::time::Duration::from_millis(700));
    };
    // plain: its only stripe is slow
    let t = backends(dir.path(), 1);
    let bytes = data(10_000, 4);
    let w = write(
        Layout::plain().with_block_size(4096).expect("ok"),
        31,
        &t,
        &bytes,
        3000,
    );
    let mut st = t.clone();
    slow(0, &mut st);
    let r = reader(&w, 31, &st).with_slow_threshold(std::time::Duration::from_millis(100));
    assert_eq!(read_all(&r).expect("waits for the slow copy"), bytes);
    // 2+1: two of three stripes slow, only one fast
    let dir2 = tempfile::tempdir().expect("tmp");
    let t = backends(dir2.path(), 3);
    let layout = rain4k(2, 1);
    let w = write(layout, 32, &t, &bytes, 3000);
    let mut st = t.clone();
    for i in [0usize, 2] {
        st[i].1 = hanging(dir2.path(), i, std::time::Duration::from_millis(700));
    }
    let r = reader(&w, 32, &st).with_slow_threshold(std::time::Duration::from_millis(100));
    assert_eq!(read_all(&r).expect("waits for enough slow stripes"), bytes);
}

#[test]
fn buffered_writes_seal_and_read_back() {
    let dir = tempfile::tempdir().expect("tmp");
    let layout = rain4k(4, 2);
    let t = backends(dir.path(), 6);
    let bytes = data(50_000, 5);
    let mut w = FileWriter::create(layout, 21, 1, &t)
        .expect("create")
        .buffered();
    w.write(&bytes).expect("write");
    let done = w.finish().expect("finish");
    for i in 0..6 {
        assert!(
            stripe_path(dir.path(), i, 21).exists(),
            "stripe {i} in place"
        );
    }
    assert_eq!(read_all(&reader(&done, 21, &t)).expect("read"), bytes);
}

/// Blocks of 64 KiB and more: the file's CRC-32C is joined from the block
/// CRCs (full groups) and read again only for a padded last group.
#[test]
fn checksums_of_files_with_large_blocks() {
    let mib = 1 << 20;
    for (layout, size) in [
        (Layout::plain(), 3 * mib + 12_345),
        (Layout::plain(), 2 * mib),
        (Layout::replica(2).expect("ok"), mib + 1),
        (Layout::rain(4, 2).expect("ok"), 9 * mib + 7),
        (Layout::rain(4, 2).expect("ok"), 8 * mib),
        (
            Layout::rain(2, 1)
                .expect("ok")
                .with_block_size(64 << 10)
                .expect("ok"),
            (64 << 10) * 5,
        ),
    ] {
        let dir = tempfile::tempdir().expect("tmp");
        let t = backends(dir.path(), layout.stripes());
        let bytes = data(size, size as u64);
        let w = write(layout, 21, &t, &bytes, 300_001);
        assert_eq!(w.crc32c, crc32c::crc32c(&bytes), "{layout:?} {size}");
        assert_eq!(w.adler32, simd_adler32::adler32(&bytes.as_slice()));
        assert_eq!(read_all(&reader(&w, 21, &t)).expect("read"), bytes);
    }
}
